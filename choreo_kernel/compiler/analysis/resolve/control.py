"""Synchronization, control and debugging statements: barriers and fences, named barriers, `yield`,
`assert`, `print`, event predicates of `while`, and the hints on kernels and loops.

A kernel's attributes (`[[launch_bounds]]`, `[[maxnreg]]`) are checked here as far as the statement
shows them; what needs the block's thread count is checked with the launch model (attributes.py).
"""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.resolve.base import ResolverBase
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import (
    FLOAT_TYPES,
    INT_TYPES,
    Bounded,
    BoundedTuple,
    Dim,
    Event,
    EventSlot,
    ITuple,
    Scalar,
    Shape,
    Unknown,
    Value,
)
from choreo_kernel.compiler.printer import expression
from choreo_kernel.compiler.semantics.levels import Level
from choreo_kernel.compiler.semantics.printing import SIGNED, Piece, kind_of

BARRIER_LEVELS = ("thread", "group", "group-4", "block", "device")
FENCE_LEVELS = ("thread", "group", "group-4", "block", "device")
NAMED_BARRIERS = 16  # bar.sync ids 0..15 of a CTA
MAX_REGISTERS = 255  # per thread on sm_90a
MIN_REGISTERS = 24  # ptxas gives a thread no fewer
UNKNOWN_AT_COMPILE_TIME = "<run-time value>"


class ControlRules(ResolverBase):
    """Barriers, fences, `yield`, `assert`, `print`, `while (event)` and the hints of kernels and loops."""

    # ------------------------------------------------------------------ barriers and fences

    def _stmt_Barrier(self, stmt: ast.Barrier, context: Context) -> None:
        if stmt.level not in BARRIER_LEVELS:
            self.error(
                f"'sync.barrier : {stmt.level}' is not supported: the levels are thread and group (a warp), "
                "group-4 (a warpgroup), block, and device (the grid, in a block<cooperative> kernel)",
                stmt.level_span,
            )
            return
        if not context.in_parallel:
            self.error(
                f"'sync.barrier : {stmt.level}' is outside every parallel: a barrier makes the threads of a "
                "kernel meet",
                stmt.span,
            )
            return
        if stmt.level == "device" and not context.cooperative:
            self.error(
                "sync.barrier : device requires an enclosing 'parallel : block<cooperative>' scope: the blocks "
                "of a grid can only meet when the launch is cooperative (all of them resident at once)",
                stmt.span,
            )

    def _stmt_Fence(self, stmt: ast.Fence, context: Context) -> None:
        if stmt.level not in FENCE_LEVELS:
            self.error(
                f"'sync.fence : {stmt.level}' is not supported: a fence is at thread, group, group-4, block "
                "or device scope",
                stmt.span,
            )
        elif stmt.storage not in (None, "shared", "global"):
            self.error(
                f"'sync.fence : {stmt.level}<{stmt.storage}>': a fence orders shared or global memory",
                stmt.span,
            )
        elif not context.in_parallel:
            self.error(
                "'sync.fence' is outside every parallel: it orders the memory accesses of threads", stmt.span
            )

    def _stmt_NamedBarrier(self, stmt: ast.NamedBarrier, context: Context) -> None:
        what = "__bar_sync" if stmt.waits else "__bar_arrive"
        if not context.in_parallel:
            self.error(
                f"'{what}' is outside every parallel: a named barrier makes threads of a block meet",
                stmt.span,
            )
        barrier = self._known_int(stmt.barrier, f"the barrier of '{what}'")
        if barrier is not None and not 0 <= barrier < NAMED_BARRIERS:
            self.error(
                f"'{what}' names barrier {barrier}; a block has the named barriers 0 to {NAMED_BARRIERS - 1}",
                stmt.barrier.span,
            )
        count = self._known_int(stmt.count, f"the thread count of '{what}'")
        if count is not None and (count <= 0 or count % 32):
            self.error(
                f"'{what}' counts {count} threads; a named barrier counts whole warps: a positive multiple of 32",
                stmt.count.span,
            )

    def _known_int(self, expr: ast.Expr, what: str) -> int | None:
        value = self._int_expr(expr, what)
        const = value.const if isinstance(value, Scalar) else None
        return const if isinstance(const, int) else None

    # ------------------------------------------------------------------ control and debugging

    def _stmt_Yield(self, stmt: ast.Yield, context: Context) -> None:
        if not context.in_parallel:
            self.error(
                "unable to yield outside every parallel block: 'yield' makes a thread leave its kernel",
                stmt.span,
            )

    def _stmt_Assert(self, stmt: ast.Assert, context: Context) -> None:
        value = self._expr(stmt.condition)
        self.info.value_of[id(stmt.condition)] = value
        if isinstance(value, Scalar) and value.type in FLOAT_TYPES:
            self.error(
                f"the condition of 'assert' is {value.type}; it must be a bool or an integer",
                stmt.condition.span,
            )
        elif not isinstance(value, (Scalar, Bounded, Unknown)):
            self.error(
                f"the condition of 'assert' must be a bool or an integer, got {value.describe()}",
                stmt.condition.span,
            )
        elif isinstance(value, Scalar) and isinstance(value.const, int) and not value.const:
            self.error(
                f"assertion failed, the program would abort: {stmt.message} "
                f"('{expression(stmt.condition)}' is false for the sizes known at compile time)",
                stmt.span,
            )

    def _stmt_Print(self, stmt: ast.Print, context: Context) -> None:
        known: list[str] = []  # what the compiler knows, for print!
        pieces: list[Piece] = []  # the format of print, for the backends
        for arg in stmt.args:
            if isinstance(arg, ast.StringLiteral):
                known.append(arg.value)
                pieces.append(Piece(arg.value))
                continue
            value = self._expr(arg)
            if not isinstance(value, (Scalar, Bounded, Shape, ITuple, BoundedTuple, Unknown)):
                self.error(
                    f"'{expression(arg)}' is {value.describe()}; print takes strings, scalars, shapes and ituples "
                    "(print one element with .at(...))",
                    arg.span,
                )
            known.append(_known_text(value))
            pieces.append(_piece(value))
        if stmt.compile_time:
            self.info.printed.append((stmt.span, "".join(known) + ("\n" if stmt.newline else "")))
        self.info.print_formats[id(stmt)] = tuple(pieces)

    # ------------------------------------------------------------------ while (event)

    def _event_condition(self, condition: ast.Expr) -> bool:
        """Whether `condition` is an event predicate (`while (full)`, `while (a && b[0])`), which holds
        while the named generations are pending; mixing events with other values is an error."""
        names = (node for node in ast.walk_expr(condition) if isinstance(node, ast.Name))
        if not any(isinstance(getattr(self.scope.lookup(n.id), "value", None), Event) for n in names):
            return False
        self._event_predicate(condition)
        return True

    def _event_predicate(self, expr: ast.Expr) -> Value:
        if isinstance(expr, ast.Paren):
            return self._event_predicate(expr.inner)
        if isinstance(expr, ast.Unary) and expr.op == "!":
            return self._event_predicate(expr.operand)
        if isinstance(expr, ast.Binary) and expr.op in ("&&", "||"):
            left = self._event_predicate(expr.left)
            self._event_predicate(expr.right)  # each operand that is no event is reported where it is
            return left
        value = self._expr(expr)
        if not isinstance(value, (Event, EventSlot, Unknown)):
            self.error(
                f"requires an event predication expression: '{expression(expr)}' is {value.describe()}, "
                "where a condition on events takes events, '!', '&&' and '||'",
                expr.span,
            )
        return value

    # ------------------------------------------------------------------ hints of kernels and loops

    def _kernel_attributes(self, stmt: ast.Parallel, context: Context, levels: tuple[Level, ...]) -> None:
        """`[[launch_bounds(T[, B])]]` and `[[maxnreg(N)]]` before a kernel; `block<cooperative>`."""
        for clause, level in zip(stmt.clauses, levels):
            if clause.cooperative and level != Level.BLOCK:
                self.sink.warning(
                    f"'cooperative' annotation is only valid on block-level parallel-by; ignoring it on this "
                    f"{level} level",
                    clause.level_span or clause.span,
                )
        names = [attribute.name for attribute in stmt.attributes]
        if "launch_bounds" in names and "maxnreg" in names:
            self.sink.warning(
                "[[launch_bounds]] is not applied: CUDA takes one of __launch_bounds__ and __maxnreg__ per kernel, "
                "and [[maxnreg]] sets this kernel's registers",
                stmt.attributes[names.index("launch_bounds")].span,
            )
        for position, attribute in enumerate(stmt.attributes):
            word = f"[[{attribute.name}]]"
            if attribute.name in names[:position]:
                self.error(f"{word} is given twice for this kernel", attribute.span)
                continue
            if attribute.name not in ("launch_bounds", "maxnreg"):
                self.error(
                    f"unknown attribute {word}; a kernel takes [[launch_bounds(threads[, blocks])]] and "
                    "[[maxnreg(registers)]]",
                    attribute.span,
                )
                continue
            if context.level_kinds not in ((), (Level.CLUSTER,)) or not levels or levels[0] != Level.BLOCK:
                where = f"a {levels[0]} level" if levels else "this parallel"
                self.error(
                    f"{word} is only valid on block-level parallel-by: it sets the kernel's limits, and this is "
                    f"{where}",
                    attribute.span,
                )
            arity = (1, 2) if attribute.name == "launch_bounds" else (1,)
            if len(attribute.args) not in arity:
                self.error(f"{word} takes {' or '.join(map(str, arity))} argument(s)", attribute.span)
                continue
            for position, arg in enumerate(attribute.args):
                if attribute.name == "launch_bounds" and position == 0 and _is_placeholder(arg):
                    continue  # `_`: the kernel's own thread count
                self._attribute_integer(word, arg, positive=attribute.name == "maxnreg")

    def _attribute_integer(self, word: str, arg: ast.Expr, positive: bool) -> None:
        value = self._expr(arg)
        if isinstance(value, Scalar) and value.type not in INT_TYPES:
            self.error(f"{word} argument must be an integer but got '{value.type}'", arg.span)
            return
        const = value.const if isinstance(value, Scalar) else None
        if not isinstance(const, int):
            self.error(
                f"{word} argument must be a compile-time integer constant (use a #define); "
                f"'{expression(arg)}' is known only at run time",
                arg.span,
            )
        elif positive and const <= 0:
            self.error(f"{word} argument must be a positive integer, got {const}", arg.span)
        elif const < 0:
            self.error(f"{word} argument must be a non-negative integer, got {const}", arg.span)
        elif word == "[[maxnreg]]" and const > MAX_REGISTERS:
            self.error(
                f"[[maxnreg({const})]]: a thread has at most {MAX_REGISTERS} registers on sm_90a", arg.span
            )
        elif word == "[[maxnreg]]" and const < MIN_REGISTERS:
            self.sink.warning(
                f"[[maxnreg({const})]] acts as [[maxnreg({MIN_REGISTERS})]]: ptxas gives a thread at least "
                f"{MIN_REGISTERS} registers",
                arg.span,
            )

    def _loop_hint(self, stmt: ast.Foreach | ast.ForeachRange, extent: Dim | None) -> None:
        """`foreach ... : unroll(N)` (N a positive constant, at most the extent of the loop it unrolls, the
        outermost one) or `: unroll` (all of it); `: vectorize(...)` is a hint this compiler leaves."""
        hint = stmt.hint
        if hint is None:
            return
        if hint.name == "vectorize":
            self.sink.warning(
                "'vectorize' is a hint this compiler does not apply; the loop runs as written", hint.span
            )
            for arg in hint.args:
                self._expr(arg)
            return
        if hint.name != "unroll" or len(hint.args) > 1:
            self.error(
                f"unknown loop hint '{expression_of(hint)}'; a foreach takes ': unroll' or ': unroll(N)'",
                hint.span,
            )
            return
        if not hint.args:
            return
        value = self._expr(hint.args[0])
        const = value.const if isinstance(value, Scalar) and value.type in INT_TYPES else None
        if not isinstance(const, int) or const <= 0:
            self.error(
                f"unroll factor must be a positive integer known at compile time, got '{expression(hint.args[0])}'",
                hint.args[0].span,
            )
        elif isinstance(extent, int) and const > extent:
            self.error(f"unroll factor ({const}) exceeds the loop extent ({extent})", hint.args[0].span)


def _is_placeholder(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.Name) and expr.id == "_"


def expression_of(attribute: ast.Attribute) -> str:
    return (
        f"{attribute.name}({', '.join(expression(a) for a in attribute.args)})"
        if attribute.args
        else attribute.name
    )


def _piece(value: Value) -> Piece:
    """How one argument of `print` prints, by its type."""
    if isinstance(value, Shape):
        return Piece(brackets="[]", count=len(value.dims))
    if isinstance(value, ITuple):
        return Piece(brackets="{}", count=len(value.items))
    if isinstance(value, BoundedTuple):  # the current values of its elements
        return Piece(brackets="{}", count=len(value.bounds))
    return Piece(kind=kind_of(value.type) if isinstance(value, Scalar) else SIGNED)


def _known_text(value: Value) -> str:
    """What `print!` shows of a value: what the compiler knows of it."""
    if isinstance(value, Scalar) and value.const is not None:
        if value.type == "bool":
            return "true" if value.const else "false"
        return str(value.const)
    if isinstance(value, Shape):
        return "[" + ", ".join(str(d) for d in value.dims) + "]"
    if isinstance(value, ITuple):
        return "{" + ", ".join(str(d) for d in value.items) + "}"
    return UNKNOWN_AT_COMPILE_TIME
