"""The resolver's base: reporting, scopes, dispatch and shared helpers."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.builtins import BUILTINS
from choreo_kernel.compiler.analysis.index_ranges import Condition, defining_value, exits_early, index_range
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.scope import Context, Scope
from choreo_kernel.compiler.analysis.values import (
    INT_TYPES,
    Accumulator,
    AccumulatorArray,
    Bounded,
    BoundedTuple,
    BufferArray,
    Data,
    Dim,
    Event,
    Future,
    ITuple,
    Scalar,
    Shape,
    Symbol,
    Tiling,
    Unknown,
    Value,
)
from choreo_kernel.compiler.diagnostics import DiagnosticSink, Note, Span
from choreo_kernel.compiler.printer import expression, expressions
from choreo_kernel.compiler.semantics.levels import Level, Storage

SWIZZLES = (32, 64, 128)


class ResolverBase:
    """Reporting, scopes and the helpers that every part of the resolver uses.

    The resolver is one pass split by job: statements (statements.py), copies (copies.py), matrix
    operations (mma.py), expressions (expressions.py; device calls and atomics in device.py) and views
    of data (views.py), composed in resolve/__init__.py. Statements and expressions dispatch on their
    node's class by name (`_stmt_Parallel`, `_expr_Binary`), so a kind with no case fails
    tests/test_passes.py.
    """

    info: FunctionInfo
    scope: Scope
    swizzle_of: dict[str, tuple[int, Span]]  # shared buffer -> swizzle a copy wrote it with
    return_type: ast.TypeRef
    saw_return: bool
    written: frozenset[str]  # the names the function writes (ast.written_names)
    kernel: ast.Parallel  # the outermost parallel being resolved
    kernel_levels: dict[int, Level | None]  # id(clause) -> its level, for the kernel being resolved
    badly_nested: set[int]  # id(kernel) of kernels whose levels do not nest

    def __init__(
        self, sink: DiagnosticSink, target: str, function_names: frozenset[str] = frozenset()
    ) -> None:
        self.sink = sink
        self.target = target
        self.function_names = function_names
        self.conditions: list[Condition] = []  # around the statement or expression being resolved

    def error(self, message: str, span: Span, *notes: Note) -> None:
        self.sink.error(message, span, *notes)

    def error_with_note(self, problem: tuple[str, Note] | None, span: Span) -> None:
        """Report a rule's problem (its message and a note), if it found one."""
        if problem is not None:
            self.error(problem[0], span, problem[1])

    def hopper_rule(self, message: str, span: Span, *notes: Note) -> None:
        self.sink.target_rule(self.target, message, span, *notes)

    def _declare(self, symbol: Symbol, span: Span) -> Symbol:
        existing = self.scope.symbols.get(symbol.name)
        if existing is not None and not (existing.origin == "dim" and symbol.origin == "dim"):
            self.error(
                f"'{symbol.name}' is declared twice in this scope",
                span,
                Note(f"'{symbol.name}' was first declared here", existing.span),
            )
            return existing
        self.scope.symbols[symbol.name] = symbol
        if isinstance(symbol.value, Event):
            self.info.events.append(symbol)
        return symbol

    def _in_scope(self, run: Callable[[], None]) -> None:
        self.scope = Scope(self.scope)
        try:
            run()
        finally:
            assert self.scope.parent is not None
            self.scope = self.scope.parent

    def _lookup(self, name: ast.Name) -> Symbol | None:
        symbol = self.scope.lookup(name.id)
        if symbol is None:
            if name.id in BUILTINS:
                return None
            if name.id in ("launch_bounds", "maxnreg"):
                self.error(
                    f"syntax error: '{name.id}' is an attribute of a kernel, not a function: write "
                    f"[[{name.id}(...)]] on the line before the kernel's block-level parallel",
                    name.span,
                )
                return None
            if name.id in self.function_names:
                self.error(
                    f"'{name.id}' is a __co__ function, and a __co__ function cannot call another one: "
                    "write the computation here, or call both from Python",
                    name.span,
                )
                return None
            suggestion = difflib.get_close_matches(name.id, self.scope.all_names(), n=1)
            hint = f"; did you mean '{suggestion[0]}'?" if suggestion else ""
            self.error(f"'{name.id}' is not declared{hint}", name.span)
            return None
        self.info.symbol_of[id(name)] = symbol
        return symbol

    def _statements(self, statements: Sequence[ast.Stmt], context: Context) -> None:
        for statement in statements:
            self._statement(statement, context)

    def _body(self, body: ast.Stmt, context: Context, declare: Callable[[], None] | None = None) -> None:
        def run() -> None:
            if declare is not None:
                declare()
            if isinstance(body, ast.Block):
                self._statements(body.body, context)
            else:
                self._statement(body, context)

        self._in_scope(run)

    @contextmanager
    def _guarded(self, condition: Condition) -> Iterator[None]:
        """Resolve under `condition` (an if's, a loop's), which says which values reach an index."""
        self.conditions.append(condition)
        try:
            yield
        finally:
            self.conditions.pop()

    @contextmanager
    def _loop_body(self, loop: ast.Stmt) -> Iterator[None]:
        """Resolve a loop's body; one that can leave an iteration early (break, continue) is a condition
        no index can see through: not every value of the variables reaches what follows the exit."""
        if exits_early(loop):
            with self._guarded(None):
                yield
        else:
            yield

    def _statement(self, stmt: ast.Stmt, context: Context) -> None:
        self.info.context_of[id(stmt)] = context
        handler = getattr(self, f"_stmt_{type(stmt).__name__}")
        handler(stmt, context)

    def _expr(self, expr: ast.Expr) -> Value:
        handler = getattr(self, f"_expr_{type(expr).__name__}")
        value: Value = handler(expr)
        return value

    def _symbol_of_name(self, expr: ast.Expr) -> Symbol | None:
        """The symbol a name denotes; of `mc[0][i]`, an element of an accumulator array, the array's (its
        accumulators share one shape and owner)."""
        root = expr
        while isinstance(root, ast.Index):
            root = root.value
        symbol = self.info.symbol_of.get(id(root)) if isinstance(root, ast.Name) else None
        if root is not expr and (symbol is None or not isinstance(symbol.value, AccumulatorArray)):
            return None
        return symbol

    def _int_expr(self, expr: ast.Expr, what: str) -> Value:
        value = self._expr(expr)
        if isinstance(value, Scalar) and value.type not in INT_TYPES and value.type != "bool":
            self.error(f"{what} must be an integer, got {value.type}", expr.span)
        elif not isinstance(value, (Scalar, Bounded, Unknown)):
            self.error(f"{what} must be an integer, got {value.describe()}", expr.span)
        return value

    def _condition(self, expr: ast.Expr) -> None:
        value = self._expr(expr)
        if not isinstance(value, (Scalar, Bounded, Unknown)):
            self.error(f"a condition must be a scalar, got {value.describe()}", expr.span)

    def _register_member(
        self, base: Value, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        raise NotImplementedError  # `.span` / `.at` of an accumulator or a fragment: resolve/fragments.py

    def _converted(self, value: Value, expr: ast.Cast) -> Value:
        raise NotImplementedError  # `__to<T>(fragment)`: resolve/fragments.py

    def _shape_value(self, expr: ast.Expr) -> Value:
        raise NotImplementedError  # a shape declaration's value, derived from data: resolve/views.py

    def _shape_dims(self, shape: Sequence[ast.Expr]) -> tuple[Dim, ...]:
        dims: list[Dim] = []
        for item in shape:
            value = self._expr(item)
            if isinstance(value, Shape):
                dims.extend(value.dims)
            elif isinstance(value, ITuple):
                dims.extend(value.items)
            elif isinstance(
                value, BoundedTuple
            ):  # its elements' values, as a bounded integer stands for its value
                dims.extend(f"{expression(item)}({position})" for position in range(len(value.bounds)))
            else:
                dims.append(self._dim_of(item, value))
        return tuple(dims)

    def _check_assignable(self, type_name: str, value: Value, span: Span) -> None:
        if isinstance(value, (Data, Shape, Future, Event, Accumulator, BufferArray, Tiling)):
            self.error(f"cannot store {value.describe()} into a {type_name} value", span)

    def _check_storage(self, storage: Storage, name: str, span: Span, context: Context, what: str) -> None:
        if storage == Storage.SHARED and not context.in_block:
            self.error(
                f"shared {what} '{name}' is declared at host level; shared storage exists once per block: "
                "declare it inside a 'block' level parallel",
                span,
            )
        elif storage == Storage.LOCAL and not context.in_block:
            self.error(
                f"local {what} '{name}' is declared at host level; local storage belongs to one thread: "
                "declare it inside a parallel (each thread of the block then has its own copy)",
                span,
            )
        elif storage == Storage.GLOBAL and context.in_parallel and what == "buffer":
            self.error(
                f"global buffer '{name}' is declared inside a parallel; global buffers are declared at host level",
                span,
            )

    def _incdec(self, expr: ast.IncDec) -> Value:
        value = self._expr(expr.operand)
        if isinstance(expr.operand, ast.Name):
            symbol = self.scope.lookup(expr.operand.id)
            if symbol is not None and not symbol.mutable:
                self.error(
                    f"'{expr.operand.id}' is immutable and cannot be changed with '{expr.op}'; only 'mutable' "
                    "values can be re-assigned",
                    expr.operand.span,
                )
        elif not isinstance(value, (Scalar, Unknown)):
            self.error(f"'{expr.op}' needs a mutable scalar, got {value.describe()}", expr.operand.span)
        return value if isinstance(value, Scalar) else Scalar("s32")

    def _dimension_of(self, value: Shape | ITuple, args: Sequence[ast.Expr], span: Span) -> Value:
        """`s(i)`, `x.span(i)`: dimension i of a shape (or item i of a tuple)."""
        items = value.dims if isinstance(value, Shape) else value.items
        if len(args) != 1:
            self.error("a dimension is selected with one index: s(i)", span)
            return Scalar("s32")
        index_value = self._expr(args[0])
        index = index_value.const if isinstance(index_value, Scalar) else None
        if isinstance(index, int):
            if not -len(items) <= index < len(items):
                self.error(f"dimension {index} is out of range for a rank-{len(items)} shape", args[0].span)
                return Scalar("s32")
            return Scalar("s32", items[index])
        return Scalar("s32")

    def _check_index(self, index: ast.Expr, extent: Dim, what: str) -> None:
        value = self._int_expr(index, "an index")
        const = value.const if isinstance(value, Scalar) else None
        if not isinstance(extent, int):
            return
        if isinstance(const, int):
            if not 0 <= const < extent:
                self.error(f"index {const} is out of range for {what} (extent {extent})", index.span)
            return
        reach = index_range(index, self.conditions, self._symbol_of_name)
        if reach is not None and (reach.low < 0 or reach.high >= extent):
            worst = reach.low if reach.low < 0 else reach.high
            ranges = ", ".join(f"'{name}' from {low} to {high}" for name, low, high in reach.variables)
            symbol = self._symbol_of_name(index)
            definition = defining_value(symbol) if symbol is not None else None
            shown = f"'{expression(index)}'" + (
                f" (= {expression(definition)})" if definition is not None else ""
            )
            self.error(
                f"index {shown} is out of bounds of {what}: it reaches {worst} for {ranges} here, where the "
                f"valid range is [0, {extent})",
                index.span,
            )

    def _future_data(self, expr: ast.Expr) -> Data | None:
        symbol = self._symbol_of_name(expr)
        if symbol is None or symbol.future is None:
            return None
        return symbol.future.destination

    def _swizzle(self, operation: ast.Operation) -> int | None:
        if "swiz" not in operation.qualifiers:
            return None
        text = operation.template_args.get("swiz")
        try:
            swizzle = int(text or "", 0)
        except ValueError:
            swizzle = -1
        if swizzle not in SWIZZLES:
            self.error(
                f"'.swiz<{text}>' is not a swizzle: the swizzle must be 32, 64 or 128 (bytes)",
                operation.op_span,
            )
            return None
        return swizzle

    def _unknown_operation(self, operation: ast.Operation, known: str) -> None:
        self.error(f"unknown operation '{operation.text}'; {known}", operation.op_span)

    def _dim(self, expr: ast.Expr) -> Dim:
        return self._dim_of(expr, self._expr(expr))

    def _dim_of(self, expr: ast.Expr, value: Value) -> Dim:
        """The compile-time integer (or symbolic text) an expression stands for, as a dimension."""
        if isinstance(value, Scalar) and value.type not in INT_TYPES:
            self.error(
                f"a dimension must be an integer, got {value.type}: unexpected data type '{value.type}' in a shape",
                expr.span,
            )
            return "?"
        if isinstance(value, Scalar) and value.const is not None:
            return value.const
        if isinstance(value, Bounded):
            return expression(expr)
        if isinstance(value, Scalar) and value.type in INT_TYPES:
            return expression(expr)
        if not isinstance(value, Unknown):
            self.error(f"a dimension must be an integer, got {value.describe()}", expr.span)
        return "?"

    def _positive_count(self, expr: ast.Expr, what: str) -> Dim:
        dim = self._dim(expr)
        if isinstance(dim, int) and dim <= 0:
            self.error(f"the {what} must be positive, got {dim}", expr.span)
        return dim

    def _symbols_in(self, expr: ast.Expr) -> list[Symbol]:
        return [
            self.info.symbol_of[id(node)]
            for node in ast.walk_expr(expr)
            if isinstance(node, ast.Name) and id(node) in self.info.symbol_of
        ]

    def _check_host_scalar_change(self, symbol: Symbol, target: ast.Name, context: Context) -> None:
        """A kernel cannot change a host-level scalar: it is passed to the kernel by value."""
        declaration = symbol.declaration
        declared_at = self.info.context_of.get(id(declaration)) if isinstance(declaration, ast.Stmt) else None
        if context.in_parallel and declared_at is not None and not declared_at.in_parallel:
            self.error(
                f"'{target.id}' is a host-level scalar, which a kernel receives by value and cannot change; "
                f"change it outside the parallel, or declare a mutable inside the parallel",
                target.span,
                Note(f"'{target.id}' is declared here, at host level", symbol.span),
            )


def type_ref_text(ref: ast.TypeRef) -> str:
    if ref.shape is None:
        return ref.name
    return f"{ref.name} [{expressions(ref.shape)}]"
