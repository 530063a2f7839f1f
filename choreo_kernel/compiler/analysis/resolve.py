"""Names, types, shapes, levels and storage: the first analysis pass over a function.

It walks the function once, in source order, with a scope chain and the
`Context` of each statement (parallel levels, async path, loops).  It gives
every name its `Symbol`, every expression its `Value` (the type and shape of
data, the bound of bounded integers), and reports what is wrong with them.
The futures/events rules, which need the whole function, are asyncflow.py's.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis import levels, mma
from choreo_kernel.compiler.analysis.scope import Context, Level, Scope
from choreo_kernel.compiler.analysis.values import (
    ELEMENT_BYTES,
    FLOAT_TYPES,
    INT_TYPES,
    UNKNOWN,
    Accumulator,
    Bounded,
    BufferArray,
    Builtin,
    Data,
    Dim,
    Event,
    EventSlot,
    Fragment,
    Future,
    FutureInfo,
    ITuple,
    Scalar,
    Shape,
    Storage,
    Symbol,
    Tiling,
    Unknown,
    Value,
    Window,
    fold,
    product,
    shape_text,
)
from choreo_kernel.compiler.diagnostics import DiagnosticSink, Note, Span
from choreo_kernel.compiler.source_text import expression, expressions

MATH_BUILTINS = ("__exp", "__log", "__sqrt", "__rsqrt", "__max", "__min", "__abs", "__tanh")
FUTURE_BUILTINS = ("swap", "rotate")
BUILTINS = ("cdiv", *MATH_BUILTINS, *FUTURE_BUILTINS)
SWIZZLES = (32, 64, 128)
STORAGE_WORDS = ("shared", "local", "global")


@dataclass
class FunctionInfo:
    """What the resolver learned about one function, for the passes after it."""

    function: ast.Function
    symbol_of: dict[int, Symbol] = field(default_factory=dict)  # id(ast.Name) -> Symbol
    value_of: dict[int, Value] = field(default_factory=dict)  # id(ast.Expr) -> Value (wait/trigger operands)
    futures: dict[int, Symbol] = field(default_factory=dict)  # id(OperationStmt) -> its future's Symbol
    operations: dict[int, FutureInfo] = field(default_factory=dict)  # id(OperationStmt) -> what it made
    context_of: dict[int, Context] = field(default_factory=dict)  # id(Stmt) -> Context
    levels_of: dict[int, tuple[str, ...]] = field(default_factory=dict)  # id(Parallel) -> filled levels
    events: list[Symbol] = field(default_factory=list)
    returns: Value | None = None

    def future_named(self, expr: ast.Expr) -> Symbol | None:
        """The future variable that `expr` names (`wait f`, `after f`, `swap(f, g)`), if it names one."""
        symbol = self.symbol_of.get(id(expr)) if isinstance(expr, ast.Name) else None
        return symbol if symbol is not None and isinstance(symbol.value, Future) else None

    def event_named(self, expr: ast.Expr) -> Symbol | None:
        """The event that a wait or trigger operand names: `E`, a slot `E[i]`, a generation `E.at(order)`."""
        root = expr.value if isinstance(expr, ast.Method) and expr.name == "at" else expr
        while isinstance(root, ast.Index):
            root = root.value
        symbol = self.symbol_of.get(id(root)) if isinstance(root, ast.Name) else None
        return symbol if symbol is not None and isinstance(symbol.value, Event) else None


class Resolver:
    def __init__(
        self, sink: DiagnosticSink, target: str, function_names: frozenset[str] = frozenset()
    ) -> None:
        self.sink = sink
        self.target = target
        self.function_names = function_names

    # ------------------------------------------------------------ reporting

    def error(self, message: str, span: Span, *notes: Note) -> None:
        self.sink.error(message, span, *notes)

    def hopper_rule(self, message: str, span: Span, *notes: Note) -> None:
        self.sink.target_rule(self.target, message, span, *notes)

    # ------------------------------------------------------------- functions

    def function(self, function: ast.Function) -> FunctionInfo:
        self.info = FunctionInfo(function)
        self.scope = Scope()
        self.swizzle_of: dict[str, tuple[int, Span]] = {}  # shared buffer -> swizzle a TMA wrote it with
        self.return_type = function.return_type
        self.saw_return = False
        for param in function.params:
            self._param(param)
        self._statements(function.body.body, Context())
        if function.return_type.name not in ("void", "auto") and not self.saw_return:
            self.error(
                f"function '{function.name}' returns {_type_ref_text(function.return_type)} "
                "but has no 'return' statement",
                function.name_span,
            )
        return self.info

    def _param(self, param: ast.Param) -> None:
        ref = param.type
        if ref.shape is None:
            value: Value = Scalar(ref.name)
        else:
            dims = []
            for dim in ref.shape:
                if isinstance(dim, ast.Name) and self.scope.lookup(dim.id) is None:
                    self._declare(Symbol(dim.id, Scalar("s32", dim.id), dim.span, origin="dim"), dim.span)
                dims.append(self._dim(dim) if not isinstance(dim, ast.AnyDim) else "?")
            storage = "global"
            value = Data(ref.name, tuple(dims), storage, param.name)
        self._declare(
            Symbol(param.name, value, param.name_span, origin="param", declaration=param), param.name_span
        )

    # -------------------------------------------------------------- scopes

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

    # ----------------------------------------------------------- statements

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

    def _statement(self, stmt: ast.Stmt, context: Context) -> None:
        self.info.context_of[id(stmt)] = context
        handler = getattr(self, f"_stmt_{type(stmt).__name__}")
        handler(stmt, context)

    def _stmt_Block(self, stmt: ast.Block, context: Context) -> None:
        self._body(stmt, context)

    def _stmt_Empty(self, stmt: ast.Empty, context: Context) -> None:
        pass

    def _stmt_Unsupported(self, stmt: ast.Unsupported, context: Context) -> None:
        if stmt.what == "call":
            self.error(
                "'call' of device functions is not supported: choreo-kernel compiles whole "
                "__co__ functions; write the computation in Choreo",
                stmt.span,
            )
        elif stmt.what == "print":
            self.sink.warning("print statements are ignored by this compiler", stmt.span)
        else:
            self.sink.warning(f"this {stmt.what} is ignored by this compiler", stmt.span)
        if stmt.inner is not None:
            self._statement(stmt.inner, context)

    def _stmt_BufferDecl(self, stmt: ast.BufferDecl, context: Context) -> None:
        storage = stmt.storage or (
            "global" if not context.in_parallel else "local" if context.below_block else "shared"
        )
        self._check_storage(storage, stmt.name, stmt.span, context, "buffer")
        dims = self._shape_dims(stmt.shape)
        data = Data(stmt.elem_type, dims, storage, stmt.name)
        value: Value = data
        if stmt.array_dims:
            value = BufferArray(
                data, tuple(self._positive_count(d, "buffer array size") for d in stmt.array_dims)
            )
        for item in stmt.init or ():
            self._expr(item)
        self._declare(
            Symbol(stmt.name, value, stmt.name_span, declaration=stmt, origin="buffer"), stmt.name_span
        )

    def _check_storage(self, storage: str, name: str, span: Span, context: Context, what: str) -> None:
        if storage == "shared" and not context.in_block:
            self.error(
                f"shared {what} '{name}' is declared at host level; shared storage exists once per block: "
                "declare it inside a 'block' level parallel",
                span,
            )
        elif storage == "local" and not context.below_block:
            where = "at block level" if context.in_parallel else "at host level"
            self.error(
                f"local {what} '{name}' is declared {where}; local storage belongs to one thread: "
                "declare it inside a thread-level scope",
                span,
            )
        elif storage == "global" and context.in_parallel and what == "buffer":
            self.error(
                f"global buffer '{name}' is declared inside a parallel; global buffers are declared at host level",
                span,
            )

    def _shape_dims(self, shape: Sequence[ast.Expr]) -> tuple[Dim, ...]:
        dims: list[Dim] = []
        for item in shape:
            value = self._expr(item)
            if isinstance(value, Shape):
                dims.extend(value.dims)
            elif isinstance(value, ITuple):
                dims.extend(value.items)
            else:
                dims.append(self._dim_of(item, value))
        return tuple(dims)

    def _stmt_ScalarDecl(self, stmt: ast.ScalarDecl, context: Context) -> None:
        if stmt.storage == "shared" and not context.in_block:
            self._check_storage("shared", stmt.name, stmt.span, context, "scalar")
        value: Value = Scalar(stmt.type_name) if stmt.type_name else UNKNOWN
        depends: frozenset[str] = frozenset()
        if stmt.init is not None:
            init = self._expr(stmt.init)
            depends = self._names_in(stmt.init)
            if stmt.type_name is None:
                value = init
            else:
                self._check_assignable(stmt.type_name, init, stmt.init.span)
                const = init.const if isinstance(init, Scalar) and not stmt.mutable else None
                value = Scalar(stmt.type_name, const)
        symbol = Symbol(
            stmt.name, value, stmt.name_span, stmt.mutable, stmt, origin="scalar", depends_on=depends
        )
        self._declare(symbol, stmt.name_span)

    def _stmt_EventDecl(self, stmt: ast.EventDecl, context: Context) -> None:
        storage = stmt.storage or "shared"
        if storage != "shared":
            self.hopper_rule(
                f"event '{stmt.name}' is {storage}; on CUDA events are 'shared' (one per block): "
                f"declare 'shared event {stmt.name};' inside the block",
                stmt.name_span,
            )
        elif not context.in_block:
            self.error(
                f"event '{stmt.name}' is declared outside every parallel; shared events exist once per "
                "block: declare it inside a 'block' level parallel",
                stmt.span,
            )
        dims = tuple(self._positive_count(d, "event array size") for d in stmt.dims)
        event = Event(dims, stmt.ready, storage)
        self._declare(
            Symbol(stmt.name, event, stmt.name_span, declaration=stmt, origin="event"), stmt.name_span
        )

    def _stmt_ShapeDecl(self, stmt: ast.ShapeDecl, context: Context) -> None:
        value = self._expr(stmt.value)
        if isinstance(value, ITuple):
            value = Shape(value.items)
        if not isinstance(value, (Shape, Unknown)):
            self.error(
                f"'{stmt.name} : ...' needs a shape such as [128, 64], got {value.describe()}",
                stmt.value.span,
            )
            value = UNKNOWN
        if isinstance(value, Shape) and stmt.rank is not None and stmt.rank != len(value.dims):
            self.error(
                f"mdspan<{stmt.rank}> '{stmt.name}' is given a shape of rank {len(value.dims)}",
                stmt.value.span,
            )
        self._declare(
            Symbol(stmt.name, value, stmt.name_span, declaration=stmt, origin="shape"), stmt.name_span
        )

    def _stmt_TupleDecl(self, stmt: ast.TupleDecl, context: Context) -> None:
        value = self._expr(stmt.value)
        if isinstance(value, Shape):
            value = ITuple(value.dims)
        if isinstance(value, ITuple) and stmt.size is not None and stmt.size != len(value.items):
            self.error(
                f"ituple<{stmt.size}> '{stmt.name}' is given {len(value.items)} items", stmt.value.span
            )
        self._declare(
            Symbol(stmt.name, value, stmt.name_span, declaration=stmt, origin="tuple"), stmt.name_span
        )

    # ---- parallel, loops, control flow

    def _stmt_Parallel(self, stmt: ast.Parallel, context: Context) -> None:
        filled = levels.fill_levels(stmt, context, self.sink)
        self.info.levels_of[id(stmt)] = filled
        entered = list(context.levels)
        names: list[tuple[ast.Name, Value, ast.Parallel]] = []
        for clause, level in zip(stmt.clauses, filled):
            counts = self._parallel_counts(clause, level)
            entered.append(Level(level, product(counts), clause))
            variables = clause.variables.names if clause.variables else ()
            if clause.variables is not None and len(variables) != len(counts):
                self.error(
                    f"{len(variables)} parallel variable(s) but {len(counts)} count(s)", clause.variables.span
                )
            for variable, count in zip(variables, counts):
                names.append((variable, Bounded(count), stmt))
        if stmt.is_async and context.in_parallel:
            self.error(
                "'parallel.async' is only allowed on the outermost parallel; an inner level cannot be "
                "launched asynchronously",
                stmt.span,
            )
        levels.check_sibling_threads(stmt, filled, self.sink)
        inner = context.enter(levels=tuple(entered))

        def declare() -> None:
            seen: set[str] = set()
            for variable, value, node in names:
                if variable.id in seen:
                    self.error(f"parallel variable '{variable.id}' is used twice", variable.span)
                seen.add(variable.id)
                self._declare(
                    Symbol(variable.id, value, variable.span, declaration=node, origin="parallel"),
                    variable.span,
                )

        self._body(stmt.body, inner, declare)

    def _parallel_counts(self, clause: ast.ParallelClause, level: str) -> tuple[Dim, ...]:
        items = clause.count.items if isinstance(clause.count, ast.ListLiteral) else (clause.count,)
        counts: list[Dim] = []
        for item in items:
            value = self._expr(item)
            if isinstance(value, Shape):
                counts.extend(value.dims)
                continue
            if isinstance(value, Scalar) and value.type in FLOAT_TYPES:
                self.error(f"the count of a '{level}' level must be an integer, got {value.type}", item.span)
            dim = self._dim_of(item, value)
            if isinstance(dim, int) and dim <= 0:
                self.error(f"the count of a '{level}' level must be positive, got {dim}", item.span)
            counts.append(dim)
        return tuple(counts)

    def _stmt_Foreach(self, stmt: ast.Foreach, context: Context) -> None:
        extent = self._expr(stmt.extent)
        if isinstance(stmt.extent, ast.ListLiteral):
            bounds = self._shape_dims(stmt.extent.items)
        elif isinstance(extent, (Shape, ITuple)):
            bounds = extent.dims if isinstance(extent, Shape) else extent.items
        else:
            bounds = (self._dim_of(stmt.extent, extent),)
        variables = stmt.variables.names
        if len(variables) != len(bounds):
            self.error(f"{len(variables)} loop variable(s) but {len(bounds)} extent(s)", stmt.variables.span)
        inner = context.enter(loops=(*context.loops, stmt))

        def declare() -> None:
            for variable, bound in zip(variables, bounds):
                self._declare(
                    Symbol(variable.id, Bounded(bound), variable.span, declaration=stmt, origin="foreach"),
                    variable.span,
                )

        self._body(stmt.body, inner, declare)

    def _stmt_ForeachRange(self, stmt: ast.ForeachRange, context: Context) -> None:
        rebound: list[tuple[ast.Name, Symbol]] = []
        for item in stmt.items:
            symbol = self._lookup(item.name)
            if symbol is not None and symbol.origin != "with":
                self.error(
                    f"'foreach {item.name.id}' iterates a 'with' variable, but '{item.name.id}' is a "
                    f"{symbol.value.describe()}",
                    item.name.span,
                )
            for part in (item.start, item.stop, item.step):
                if part is not None:
                    self._int_expr(part, "a range bound")
            if isinstance(item.step, ast.IntLiteral) and item.step.value == 0:
                self.error("the step of a range cannot be 0", item.step.span)
            if symbol is not None:
                rebound.append((item.name, symbol))
        inner = context.enter(loops=(*context.loops, stmt))

        def declare() -> None:
            for name, symbol in rebound:
                self.scope.symbols[name.id] = Symbol(
                    name.id, symbol.value, name.span, declaration=stmt, origin="foreach"
                )

        self._body(stmt.body, inner, declare)

    def _stmt_With(self, stmt: ast.With, context: Context) -> None:
        declared: list[Symbol] = []
        for binding in stmt.bindings:
            extent = self._expr(binding.extent)
            if isinstance(binding.extent, ast.ListLiteral):
                bounds = self._shape_dims(binding.extent.items)
            elif isinstance(extent, Shape):
                bounds = extent.dims
            else:
                bounds = (self._dim_of(binding.extent, extent),)
            names = binding.variables.names
            if len(names) != len(bounds):
                self.error(f"{len(names)} variable(s) but {len(bounds)} extent(s)", binding.variables.span)
            for name, bound in zip(names, bounds):
                declared.append(Symbol(name.id, Bounded(bound), name.span, declaration=stmt, origin="with"))
            if binding.variables.group is not None:
                group = binding.variables.group
                declared.append(
                    Symbol(group.id, ITuple(tuple(bounds)), group.span, declaration=stmt, origin="with")
                )
        if stmt.where is not None:
            self.sink.warning("the 'where' clause is ignored by this compiler", stmt.span)

        def declare() -> None:
            for symbol in declared:
                self._declare(symbol, symbol.span)

        self._body(stmt.body, context, declare)

    def _stmt_If(self, stmt: ast.If, context: Context) -> None:
        self._condition(stmt.condition)
        self._body(stmt.then, context)
        if stmt.otherwise is not None:
            self._body(stmt.otherwise, context)

    def _stmt_While(self, stmt: ast.While, context: Context) -> None:
        self._condition(stmt.condition)
        self._body(stmt.body, context.enter(loops=(*context.loops, stmt)))

    def _stmt_InThreads(self, stmt: ast.InThreads, context: Context) -> None:
        self._condition(stmt.condition)
        if not context.in_parallel:
            self.error("'inthreads' must be inside a parallel: its predicate selects threads", stmt.span)
        elif not any(symbol.origin == "parallel" for symbol in self._symbols_in(stmt.condition)):
            self.error(
                "the predicate of 'inthreads' must depend on parallel variables (it selects threads)",
                stmt.condition.span,
            )
        if stmt.is_async and context.in_inthreads:
            self.error("a nested 'inthreads' cannot be '.async'", stmt.span)
        inner = context.enter(
            in_inthreads=True,
            path=stmt if stmt.is_async else context.path,
            predicates=(*context.predicates, stmt.condition),
        )
        self._body(stmt.body, inner)

    def _condition(self, expr: ast.Expr) -> None:
        value = self._expr(expr)
        if not isinstance(value, (Scalar, Bounded, Unknown)):
            self.error(f"a condition must be a scalar, got {value.describe()}", expr.span)

    def _stmt_Return(self, stmt: ast.Return, context: Context) -> None:
        self.saw_return = True
        if context.in_parallel:
            self.error(
                "'return' inside a parallel region; return the result after the parallel, at host level",
                stmt.span,
            )
        if stmt.value is None:
            if self.return_type.name not in ("void", "auto"):
                self.error("this function must return a value", stmt.span)
            return
        value = self._expr(stmt.value)
        if self.return_type.name == "void":
            self.error("a 'void' function cannot return a value", stmt.value.span)
            return
        self.info.returns = value
        if isinstance(value, Future) and not value.is_data:
            return
        if self.return_type.name != "auto" and self.return_type.shape is not None:
            if isinstance(value, Data):
                if value.elem != self.return_type.name:
                    self.error(
                        f"returns {value.elem} data but the function is declared to return "
                        f"{_type_ref_text(self.return_type)}",
                        stmt.value.span,
                    )
                declared = tuple(
                    self._dim(d) for d in self.return_type.shape if not isinstance(d, ast.AnyDim)
                )
                if _known_mismatch(declared, value.dims):
                    self.error(
                        f"returns shape {shape_text(value.dims)} but the function is declared to return "
                        f"{shape_text(declared)}",
                        stmt.value.span,
                    )
            elif not isinstance(value, Unknown):
                self.error(
                    f"a function returning spanned data cannot return {value.describe()}", stmt.value.span
                )

    def _stmt_Break(self, stmt: ast.Break, context: Context) -> None:
        if not context.loops:
            self.error("'break' outside a loop", stmt.span)

    _stmt_Continue = _stmt_Break

    def _stmt_Sync(self, stmt: ast.Sync, context: Context) -> None:
        if stmt.kind != "shared":
            self.error(f"'sync.{stmt.kind}' is not supported; 'sync.shared' is the block barrier", stmt.span)
        elif not context.in_block:
            self.error(
                "'sync.shared' is a barrier of the threads of a block; it must be inside a block", stmt.span
            )

    # ---- assignments

    def _stmt_Assign(self, stmt: ast.Assign, context: Context) -> None:
        value = self._expr(stmt.value)
        target = stmt.target
        if isinstance(target, ast.Name):
            symbol = self.scope.lookup(target.id)
            if symbol is None:
                if stmt.op != "=":
                    self._lookup(target)
                    return
                depends = self._names_in(stmt.value)
                if isinstance(value, Scalar) and value.type in INT_TYPES:
                    value = Scalar(value.type, value.const)
                self._declare(
                    Symbol(
                        target.id, value, target.span, declaration=stmt, origin="local", depends_on=depends
                    ),
                    target.span,
                )
                return
            self.info.symbol_of[id(target)] = symbol
            if not symbol.mutable:
                self.error(
                    f"'{target.id}' is immutable and cannot be re-assigned; only 'mutable' values can be "
                    f"(declare it as 'mutable int {target.id} = ...')",
                    target.span,
                    Note(f"'{target.id}' is declared here", symbol.span),
                )
            return
        target_value = self._expr(target)
        if isinstance(target_value, Scalar):
            self._check_assignable(target_value.type, value, stmt.value.span)
        elif isinstance(target_value, Data):
            self.error(
                f"assignment needs one element, but this selects {shape_text(target_value.dims)} elements "
                "(index every dimension with .at)",
                target.span,
            )
        elif not isinstance(target_value, Unknown):
            self.error(f"cannot assign to {target_value.describe()}", target.span)

    def _check_assignable(self, type_name: str, value: Value, span: Span) -> None:
        if isinstance(value, (Data, Shape, Future, Event, Accumulator, BufferArray, Tiling)):
            self.error(f"cannot store {value.describe()} into a {type_name} value", span)

    def _stmt_ExprStmt(self, stmt: ast.ExprStmt, context: Context) -> None:
        expr = stmt.expr
        if isinstance(expr, ast.IncDec):
            self._incdec(expr)
            return
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.callee, ast.Name)
            and expr.callee.id in FUTURE_BUILTINS
        ):
            for arg in expr.args:
                value = self._expr(arg)
                if not isinstance(value, (Future, Unknown)):
                    self.error(f"'{expr.callee.id}' rotates futures; this is {value.describe()}", arg.span)
            if expr.callee.id == "swap" and len(expr.args) != 2:
                self.error("'swap' takes two futures", expr.span)
            if expr.callee.id == "rotate" and len(expr.args) < 2:
                self.error("'rotate' takes two or more futures", expr.span)
            return
        self._expr(expr)
        self.sink.warning("this expression statement has no effect", stmt.span)

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

    # ---- waits and triggers

    def _stmt_Wait(self, stmt: ast.Wait, context: Context) -> None:
        for target in stmt.targets:
            value = self._expr(target)
            if not isinstance(value, (Future, Event, EventSlot, Unknown)):
                self.error(
                    f"'wait' takes futures and events; '{expression(target)}' is {value.describe()}",
                    target.span,
                )

    def _stmt_Trigger(self, stmt: ast.Trigger, context: Context) -> None:
        for target in stmt.targets:
            value = self._expr(target)
            if not isinstance(value, (Event, EventSlot, Unknown)):
                self.error(
                    f"'trigger' takes events; '{expression(target)}' is {value.describe()}", target.span
                )
        for item in stmt.after:
            value = self._expr(item)
            if not isinstance(value, (Future, Unknown)):
                self.error(
                    f"'trigger ... after' binds futures; '{expression(item)}' is {value.describe()}",
                    item.span,
                )

    # ---- operations

    def _stmt_OperationStmt(self, stmt: ast.OperationStmt, context: Context) -> None:
        operation = stmt.operation
        handler = {"dma": self._dma, "tma": self._tma, "mma": self._mma}[operation.family]
        info = handler(stmt, context)
        if isinstance(info, FutureInfo):
            self.info.operations[id(stmt)] = info
        if stmt.result is None or info is None:
            return
        if isinstance(info, (Accumulator, Fragment)):
            self._bind_result(stmt.result, info, stmt)
            return
        future = Future(is_data=info.kind != "mma")
        existing = self.scope.lookup(stmt.result.id)
        if existing is not None and isinstance(existing.value, Future):
            self.info.symbol_of[id(stmt.result)] = existing
            existing.future = info
            self.info.futures[id(stmt)] = existing
            return
        symbol = self._bind_result(stmt.result, future, stmt)
        symbol.future = info
        self.info.futures[id(stmt)] = symbol

    def _bind_result(self, name: ast.Name, value: Value, stmt: ast.OperationStmt) -> Symbol:
        existing = self.scope.lookup(name.id)
        if existing is not None and existing.mutable:
            self.info.symbol_of[id(name)] = existing
            return existing
        symbol = Symbol(name.id, value, name.span, declaration=stmt, origin="operation")
        declared = self._declare(symbol, name.span)
        self.info.symbol_of[id(name)] = declared
        return declared

    def _unknown_operation(self, operation: ast.Operation, known: str) -> None:
        self.error(f"unknown operation '{operation.text}'; {known}", operation.op_span)

    def _after(self, operation: ast.Operation) -> None:
        for item in operation.after:
            value = self._expr(item)
            if not isinstance(value, (Future, Unknown)):
                self.error(
                    f"'after' orders a copy after a future; '{expression(item)}' is {value.describe()}",
                    item.span,
                )
            self.info.value_of[id(item)] = value

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

    def _copy_operands(self, operation: ast.Operation) -> tuple[Value, Value] | None:
        if len(operation.args) != 1 or operation.destination is None:
            self.error(f"'{operation.text}' copies one source to one destination: SRC => DST", operation.span)
            for arg in operation.args:
                self._expr(arg)
            return None
        source = self._expr(operation.args[0])
        destination_expr = operation.destination
        if (
            isinstance(destination_expr, ast.Name)
            and destination_expr.id in STORAGE_WORDS
            and self.scope.lookup(destination_expr.id) is None
        ):
            destination: Value = Storage(destination_expr.id)
        else:
            destination = self._expr(destination_expr)
        if isinstance(source, Future) and source.is_data:
            source = self._future_data(operation.args[0]) or UNKNOWN
        if isinstance(source, Tiling):
            source = source.tile()
        if isinstance(destination, Tiling):
            destination = destination.tile()
        if not isinstance(source, (Data, Unknown)):
            self.error(
                f"the source of a copy must be spanned data, got {source.describe()}", operation.args[0].span
            )
            return None
        if isinstance(destination, Storage):
            if isinstance(source, Data):
                destination = Data(source.elem, source.dims, destination.storage, "")
            else:
                return None
        if not isinstance(destination, (Data, Unknown)):
            self.error(
                f"the destination of a copy must be spanned data or 'shared'/'local', got {destination.describe()}",
                destination_expr.span,
            )
            return None
        if isinstance(source, Data) and isinstance(destination, Data):
            if source.elem != destination.elem:
                self.error(
                    f"element types differ across '=>': the source is {source.elem}, "
                    f"the destination is {destination.elem}",
                    operation.span,
                )
            elif _known_count_mismatch(source.dims, destination.dims):
                self.error(
                    f"shapes differ across '=>': the source is {shape_text(source.dims)}, "
                    f"the destination is {shape_text(destination.dims)}",
                    operation.span,
                )
        return source, destination

    def _dma(self, stmt: ast.OperationStmt, context: Context) -> FutureInfo | None:
        operation = stmt.operation
        words = [q for q in operation.qualifiers if q != "async"]
        if words == ["any"]:
            return FutureInfo(operation, stmt, "placeholder", False)
        if words != ["copy"] and words != ["copy", "swiz"]:
            self._unknown_operation(operation, "expected dma.copy, dma.copy.async or dma.any")
            return None
        self._swizzle(operation)
        self._after(operation)
        operands = self._copy_operands(operation)
        destination = operands[1] if operands else None
        if operands and operation.is_async:
            source, dest = operands
            if isinstance(dest, Data) and dest.storage == "local":
                self.hopper_rule(
                    "an async copy cannot write 'local' storage on CUDA; use a synchronous copy",
                    operation.span,
                )
            if (
                isinstance(source, Data)
                and isinstance(dest, Data)
                and source.storage == dest.storage == "global"
            ):
                self.hopper_rule(
                    "an async copy from global to global memory is not possible on CUDA", operation.span
                )
        return FutureInfo(
            operation, stmt, "dma", operation.is_async, destination if isinstance(destination, Data) else None
        )

    def _tma(self, stmt: ast.OperationStmt, context: Context) -> FutureInfo | None:
        operation = stmt.operation
        words = operation.words
        if words == ["any"]:
            return FutureInfo(operation, stmt, "placeholder", False)
        if words not in (["load"], ["copy"]):
            self._unknown_operation(operation, "expected tma.load, tma.copy (with .async and .swiz<N>)")
            return None
        for word, argument in operation.template_args.items():
            if word == "async":
                self.error(
                    f"binding an event inside the operation ('.async<{argument}>') is not part of the language; "
                    f"name the future and write 'trigger {argument} after f;'",
                    operation.op_span,
                )
        swizzle = self._swizzle(operation)
        self._after(operation)
        operands = self._copy_operands(operation)
        kind = "tma-load"
        destination: Data | None = None
        if operands is not None:
            source, dest = operands
            destination = dest if isinstance(dest, Data) else None
            if isinstance(source, Data) and isinstance(dest, Data):
                if source.storage == "shared" and dest.storage == "global":
                    kind = "tma-store"
                elif not (source.storage == "global" and dest.storage == "shared"):
                    self.hopper_rule(
                        f"'{operation.text}' moves global data to shared memory or shared to global; this copies "
                        f"{source.storage} to {dest.storage}",
                        operation.span,
                    )
                if swizzle is not None and dest.storage == "shared":
                    self.swizzle_of[dest.root] = (swizzle, operation.op_span)
                if words == ["load"] and kind == "tma-store":
                    self.error(
                        "'tma.load' copies global to shared; use 'tma.copy' to store shared data",
                        operation.span,
                    )
        return FutureInfo(operation, stmt, kind, operation.is_async, destination)

    def _mma(self, stmt: ast.OperationStmt, context: Context) -> FutureInfo | Accumulator | Fragment | None:
        operation = stmt.operation
        words = [q for q in operation.qualifiers if q not in ("async",)]
        args = operation.args
        if words and words[0] == "fill":
            return self._mma_fill(stmt, words, context)
        if words and words[0] == "load":
            self._swizzle(operation)
            if len(args) != 1:
                self.error("'mma.load' takes one operand tile", operation.span)
                return None
            value = self._expr(args[0])
            if isinstance(value, Tiling):
                value = value.tile()
            if not isinstance(value, (Data, Unknown)):
                self.error(f"'mma.load' loads spanned data, got {value.describe()}", args[0].span)
                return None
            return Fragment(value) if isinstance(value, Data) else None
        if words and words[0] == "store":
            self._mma_store(stmt, context)
            return None
        if len(words) >= 2 and words[0] in ("row", "col") and words[1] in ("row", "col") and len(words) == 2:
            return mma.check_exec(self, stmt, words[0], words[1], context)
        if words and words[0] in ("commit", "wait"):
            self.error(
                f"'{operation.text}' is not part of the language: the compiler derives WGMMA commit groups "
                "and wait depths from the futures you wait (the docs' futures page: choreo docs futures)",
                operation.op_span,
            )
            return None
        self._unknown_operation(
            operation,
            "expected mma.fill, mma.load, mma.row.row, mma.row.col, mma.col.row, mma.col.col or mma.store",
        )
        return None

    def _mma_fill(self, stmt: ast.OperationStmt, words: list[str], context: Context) -> Accumulator | None:
        operation = stmt.operation
        elem = words[1] if len(words) > 1 else "f32"
        if elem not in ("f32", "f16", "s32"):
            self.error(f"an accumulator is f32 or f16, not '{elem}'", operation.op_span)
            elem = "f32"
        if stmt.result is not None:
            if len(operation.args) != 1:
                self.error("'acc = mma.fill.f32 VALUE;' takes one value", operation.span)
            for arg in operation.args:
                self._expr(arg)
            return Accumulator(elem)
        if len(operation.args) != 2:
            self.error("'mma.fill ACC, VALUE;' takes an accumulator and a value", operation.span)
            return None
        accumulator = self._expr(operation.args[0])
        self._expr(operation.args[1])
        if not isinstance(accumulator, (Accumulator, Unknown)):
            self.error(
                f"'mma.fill' re-initializes an accumulator; this is {accumulator.describe()}",
                operation.args[0].span,
            )
        return None

    def _mma_store(self, stmt: ast.OperationStmt, context: Context) -> None:
        operation = stmt.operation
        if len(operation.args) != 2:
            self.error("'mma.store ACC, DST;' takes an accumulator and a destination", operation.span)
            return
        accumulator = self._expr(operation.args[0])
        destination = self._expr(operation.args[1])
        if isinstance(destination, Tiling):
            destination = destination.tile()
        if not isinstance(accumulator, (Accumulator, Unknown)):
            self.error(
                f"'mma.store' stores an accumulator; this is {accumulator.describe()}", operation.args[0].span
            )
            return
        if not isinstance(destination, (Data, Unknown)):
            self.error(
                f"'mma.store' writes spanned data; this is {destination.describe()}", operation.args[1].span
            )
            return
        symbol = self._symbol_of_name(operation.args[0])
        if isinstance(destination, Data):
            if destination.storage == "local":
                self.error("'mma.store' writes shared or global memory, not local", operation.args[1].span)
            shape = symbol.accumulator_shape if symbol is not None else None
            if shape is not None and _known_mismatch(shape, destination.dims):
                self.error(
                    f"'mma.store' of a {shape_text(shape)} accumulator into {shape_text(destination.dims)} data",
                    operation.span,
                )

    def _symbol_of_name(self, expr: ast.Expr) -> Symbol | None:
        return self.info.symbol_of.get(id(expr)) if isinstance(expr, ast.Name) else None

    # ---------------------------------------------------------- expressions

    def _expr(self, expr: ast.Expr) -> Value:
        handler = getattr(self, f"_expr_{type(expr).__name__}")
        value: Value = handler(expr)
        return value

    def _int_expr(self, expr: ast.Expr, what: str) -> Value:
        value = self._expr(expr)
        if isinstance(value, Scalar) and value.type not in INT_TYPES and value.type != "bool":
            self.error(f"{what} must be an integer, got {value.type}", expr.span)
        elif not isinstance(value, (Scalar, Bounded, Unknown)):
            self.error(f"{what} must be an integer, got {value.describe()}", expr.span)
        return value

    def _expr_Name(self, expr: ast.Name) -> Value:
        if expr.id == "_":
            return UNKNOWN
        symbol = self._lookup(expr)
        if symbol is None:
            return Builtin(expr.id) if expr.id in BUILTINS else UNKNOWN
        return symbol.value

    def _expr_IntLiteral(self, expr: ast.IntLiteral) -> Value:
        return Scalar("u32" if expr.unsigned else "s32", expr.value)

    def _expr_FloatLiteral(self, expr: ast.FloatLiteral) -> Value:
        return Scalar("f32" if expr.single else "f64")

    def _expr_BoolLiteral(self, expr: ast.BoolLiteral) -> Value:
        return Scalar("bool", int(expr.value))

    def _expr_StringLiteral(self, expr: ast.StringLiteral) -> Value:
        self.error("strings are only allowed in print statements", expr.span)
        return UNKNOWN

    def _expr_Paren(self, expr: ast.Paren) -> Value:
        return self._expr(expr.inner)

    def _expr_AnyDim(self, expr: ast.AnyDim) -> Value:
        self.error("'?' (any size) is only allowed in parameter shapes", expr.span)
        return UNKNOWN

    def _expr_TypeSize(self, expr: ast.TypeSize) -> Value:
        return Scalar("s32", ELEMENT_BYTES.get(expr.type_name, 4))

    def _expr_Cast(self, expr: ast.Cast) -> Value:
        value = self._expr(expr.operand)
        if not isinstance(value, (Scalar, Bounded, Unknown)):
            self.error(f"only scalars can be cast, got {value.describe()}", expr.operand.span)
        return Scalar(expr.type_name)

    def _expr_TupleLiteral(self, expr: ast.TupleLiteral) -> Value:
        return ITuple(tuple(self._dim_of(item, self._expr(item)) for item in expr.items))

    def _expr_ListLiteral(self, expr: ast.ListLiteral) -> Value:
        return Shape(self._shape_dims(expr.items))

    def _expr_ElementCount(self, expr: ast.ElementCount) -> Value:
        value = self._expr(expr.operand)
        if isinstance(value, Shape):
            return Scalar("s32", product(value.dims))
        if isinstance(value, Data):
            return Scalar("s32", product(value.dims))
        if not isinstance(value, Unknown):
            self.error(f"'|x|' is the element count of a shape; this is {value.describe()}", expr.span)
        return Scalar("s32")

    def _expr_Ternary(self, expr: ast.Ternary) -> Value:
        self._condition(expr.condition)
        then = self._expr(expr.then)
        otherwise = self._expr(expr.otherwise)
        if isinstance(then, Scalar) and isinstance(otherwise, Scalar):
            return Scalar(_promote(then.type, otherwise.type) or then.type)
        return then if not isinstance(then, Unknown) else otherwise

    def _expr_Unary(self, expr: ast.Unary) -> Value:
        value = self._expr(expr.operand)
        if expr.op == "#":
            if isinstance(value, Bounded):
                return Scalar("s32", value.bound)
            if not isinstance(value, Unknown):
                self.error(f"'#' gives the bound of a bounded value; this is {value.describe()}", expr.span)
            return Scalar("s32")
        if expr.op == "&":
            self.error("taking an address ('&') is not supported", expr.span)
            return UNKNOWN
        if isinstance(value, Shape) and expr.op in "+-":
            return Shape(tuple(fold("*", -1, d) if expr.op == "-" else d for d in value.dims))
        if isinstance(value, Bounded):
            return Scalar("s32")
        if isinstance(value, Scalar):
            if expr.op == "!":
                return Scalar("bool")
            if expr.op == "~" and value.type in FLOAT_TYPES:
                self.error(f"'~' needs an integer operand, got {value.type}", expr.span)
            const = fold("*", -1, value.const) if expr.op == "-" and value.const is not None else None
            return Scalar(value.type, const if expr.op != "~" else None)
        if not isinstance(value, Unknown):
            self.error(f"'{expr.op}' cannot apply to {value.describe()}", expr.span)
        return UNKNOWN

    def _expr_IncDec(self, expr: ast.IncDec) -> Value:
        return self._incdec(expr)

    def _expr_Binary(self, expr: ast.Binary) -> Value:
        left = self._expr(expr.left)
        right = self._expr(expr.right)
        op = expr.op
        if op == "#":
            if isinstance(left, Bounded) and isinstance(right, Bounded):
                return Bounded(fold("*", left.bound, right.bound))
            for side, value in ((expr.left, left), (expr.right, right)):
                if not isinstance(value, (Bounded, Unknown)):
                    self.error(f"'#' composes two bounded values; this is {value.describe()}", side.span)
            return UNKNOWN
        if isinstance(left, (Shape, ITuple)) or isinstance(right, (Shape, ITuple)):
            return self._shape_arithmetic(expr, left, right)
        if isinstance(left, Unknown) or isinstance(right, Unknown):
            return UNKNOWN
        for side, value in ((expr.left, left), (expr.right, right)):
            if not isinstance(value, (Scalar, Bounded)):
                self.error(f"'{op}' cannot apply to {value.describe()}", side.span)
                return UNKNOWN
        left_type = left.type if isinstance(left, Scalar) else "s32"
        right_type = right.type if isinstance(right, Scalar) else "s32"
        if {left_type, right_type} == {"f16", "bf16"}:
            self.error(
                f"f16 and bf16 are mixed in one expression ({left_type} {op} {right_type}); cast one side first",
                expr.span,
            )
            return UNKNOWN
        if op in ("%", "<<", ">>", "&", "|", "^") and (left_type in FLOAT_TYPES or right_type in FLOAT_TYPES):
            self.error(f"'{op}' needs integer operands, got {left_type} and {right_type}", expr.span)
            return UNKNOWN
        if op in ("==", "!=", "<", ">", "<=", ">=", "&&", "||"):
            return Scalar("bool")
        if isinstance(left, Bounded) and isinstance(right, Scalar) and right_type in INT_TYPES:
            return left
        if isinstance(right, Bounded) and isinstance(left, Scalar) and left_type in INT_TYPES and op in "+*":
            return right
        result = _promote(left_type, right_type) or left_type
        const = None
        left_const = left.const if isinstance(left, Scalar) else None
        right_const = right.const if isinstance(right, Scalar) else None
        if left_const is not None and right_const is not None and op in "+-*/%" and result in INT_TYPES:
            const = fold(op, left_const, right_const)
            if op in "/%" and right_const == 0:
                self.error("division by zero", expr.span)
        return Scalar(result, const)

    def _shape_arithmetic(self, expr: ast.Binary, left: Value, right: Value) -> Value:
        def items(value: Value) -> tuple[Dim, ...] | None:
            if isinstance(value, Shape):
                return value.dims
            if isinstance(value, ITuple):
                return value.items
            return None

        left_items, right_items = items(left), items(right)
        if expr.op not in ("+", "-", "*", "/", "%"):
            self.error(f"'{expr.op}' does not apply to shapes", expr.span)
            return UNKNOWN
        if left_items is not None and right_items is not None:
            if len(left_items) != len(right_items):
                self.error(
                    f"'{expr.op}' on shapes of ranks {len(left_items)} and {len(right_items)}", expr.span
                )
                return UNKNOWN
            dims = tuple(fold(expr.op, a, b) for a, b in zip(left_items, right_items))
        elif left_items is not None:
            scalar = self._dim_of(expr.right, right)
            dims = tuple(fold(expr.op, a, scalar) for a in left_items)
        else:
            assert right_items is not None
            scalar = self._dim_of(expr.left, left)
            dims = tuple(fold(expr.op, scalar, b) for b in right_items)
        return Shape(dims) if isinstance(left, Shape) or isinstance(right, Shape) else ITuple(dims)

    def _expr_Call(self, expr: ast.Call) -> Value:
        callee = expr.callee
        if isinstance(callee, ast.Name) and self.scope.lookup(callee.id) is None and callee.id in BUILTINS:
            return self._builtin_call(callee.id, expr)
        target = self._expr(callee)
        if isinstance(target, (Shape, ITuple)):
            return self._dimension_of(target, expr.args, expr.span)
        if isinstance(target, Bounded):
            # j(k): the value k of a with-variable's range; j(-1) is #j - 1 (12.8).
            if len(expr.args) != 1:
                self.error("a range value takes one index: j(k)", expr.span)
            for arg in expr.args:
                self._int_expr(arg, "a range index")
            return Scalar("s32")
        if isinstance(callee, ast.Name) and self.scope.lookup(callee.id) is None:
            for arg in expr.args:
                self._expr(arg)
            return UNKNOWN
        if not isinstance(target, Unknown):
            self.error(f"{target.describe()} cannot be called", callee.span)
        return UNKNOWN

    def _builtin_call(self, name: str, expr: ast.Call) -> Value:
        args = [self._expr(arg) for arg in expr.args]
        if name in FUTURE_BUILTINS:
            self.error(f"'{name}(...)' is a statement, not a value", expr.span)
            return UNKNOWN
        arity = 2 if name in ("cdiv", "__max", "__min") else 1
        if len(args) != arity:
            self.error(f"'{name}' takes {arity} argument(s), got {len(args)}", expr.span)
            return UNKNOWN
        if name == "cdiv":
            dims = [self._dim_of(arg, value) for arg, value in zip(expr.args, args)]
            a, b = dims
            if isinstance(a, int) and isinstance(b, int) and b != 0:
                return Scalar("s32", -(-a // b))
            return Scalar("s32", fold("/", fold("-", fold("+", a, b), 1), b))
        types = [v.type if isinstance(v, Scalar) else "s32" for v in args if isinstance(v, (Scalar, Bounded))]
        if len(types) != len(args):
            return UNKNOWN
        if name in ("__max", "__min", "__abs"):
            return Scalar(_promote(*types) or types[0]) if len(types) == 2 else Scalar(types[0])
        result = types[0] if types[0] in FLOAT_TYPES else "f32"
        return Scalar(result)

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

    def _expr_Index(self, expr: ast.Index) -> Value:
        base = self._expr(expr.value)
        if isinstance(base, BufferArray):
            if len(expr.indices) != len(base.counts):
                self.error(
                    f"buffer array '{expression(expr.value)}' has {len(base.counts)} dimension(s), indexed with "
                    f"{len(expr.indices)}",
                    expr.span,
                )
            for index, count in zip(expr.indices, base.counts):
                self._check_index(index, count, f"the slots of '{expression(expr.value)}'")
            return base.element
        if isinstance(base, Event):
            for index, count in zip(expr.indices, base.dims):
                self._check_index(index, count, f"the slots of event '{expression(expr.value)}'")
            if not base.dims:
                self.error(f"'{expression(expr.value)}' is a single event, not an event array", expr.span)
            root = expr.value
            while isinstance(root, ast.Index):
                root = root.value
            slot = EventSlot(expression(root), "index")
            self.info.value_of[id(expr)] = slot
            return slot
        if isinstance(base, Shape):
            return self._derive_shape(base, expr)
        if isinstance(base, Data):
            # x[i][j]: element access, written the C way.
            return self._at(base, expr.indices, expr, expression(expr.value))
        if not isinstance(base, Unknown):
            self.error(f"{base.describe()} cannot be indexed with [...]", expr.span)
        return UNKNOWN

    def _derive_shape(self, base: Shape, expr: ast.Index) -> Value:
        dims: list[Dim] = []
        for item in expr.indices:
            dims.append(self._derive_dim(base, item))
        return Shape(tuple(dims))

    def _derive_dim(self, base: Shape, item: ast.Expr) -> Dim:
        """In `s[(0) / 2, (1)]`, `(i)` names dimension i of `s`."""
        if isinstance(item, ast.Paren) and isinstance(item.inner, ast.IntLiteral):
            index = item.inner.value
            if 0 <= index < len(base.dims):
                return base.dims[index]
            self.error(f"dimension ({index}) is out of range for a rank-{len(base.dims)} shape", item.span)
            return "?"
        if isinstance(item, ast.Binary):
            return fold(item.op, self._derive_dim(base, item.left), self._derive_dim(base, item.right))
        return self._dim_of(item, self._expr(item))

    def _check_index(self, index: ast.Expr, extent: Dim, what: str) -> None:
        value = self._int_expr(index, "an index")
        const = value.const if isinstance(value, Scalar) else None
        if isinstance(const, int) and isinstance(extent, int) and not 0 <= const < extent:
            self.error(f"index {const} is out of range for {what} (extent {extent})", index.span)

    def _expr_Member(self, expr: ast.Member) -> Value:
        base = self._expr(expr.value)
        return self._member(base, expr.name, expr, None)

    def _expr_Method(self, expr: ast.Method) -> Value:
        base = self._expr(expr.value)
        return self._member(base, expr.name, expr, expr.args)

    def _member(
        self, base: Value, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        if isinstance(base, Unknown):
            for arg in args or ():
                self._expr(arg)
            return UNKNOWN
        if isinstance(base, Future):
            return self._future_member(base, name, expr, args)
        if isinstance(base, Event):
            return self._event_member(base, name, expr, args)
        if isinstance(base, Tiling):
            return self._tiling_member(base, name, expr, args)
        if isinstance(base, Window):
            if name == "from" and args is not None:
                self._rank_check(base.base, args, expr, "from")
                for arg in args:
                    self._int_expr(arg, "an offset")
                return Data(base.base.elem, base.extents, base.base.storage, base.base.root)
            self.error(f"'.view(...)' is followed by '.from(...)', not '.{name}'", expr.name_span)
            return UNKNOWN
        if isinstance(base, Data):
            return self._data_member(base, name, expr, args)
        if isinstance(base, Fragment) and name == "span":
            return Shape(base.data.dims)
        if isinstance(base, Shape) and name == "span":
            return base
        self.error(f"{base.describe()} has no member '.{name}'", expr.name_span)
        return UNKNOWN

    def _future_member(
        self, base: Future, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        symbol = self._symbol_of_name(expr.value)
        if not base.is_data:
            accumulator = symbol.future.accumulator if symbol and symbol.future else None
            use = (
                f"use the accumulator '{accumulator}' instead"
                if accumulator
                else "use its accumulator instead"
            )
            self.error(
                f"'{expression(expr.value)}.{name}': '{expression(expr.value)}' is an MMA operation future, and operation "
                f"futures own no buffer and have no .data or .span; {use}",
                expr.span,
            )
            for arg in args or ():
                self._expr(arg)
            return UNKNOWN
        data = self._future_data(expr.value)
        if data is None:
            return UNKNOWN
        if name == "data":
            return data if args is None else self._data_member(data, "at", expr, args)
        if name == "span":
            return Shape(data.dims) if args is None else self._dimension_of(Shape(data.dims), args, expr.span)
        # f.at(i): a shorthand for f.data.at(i)
        return self._data_member(data, name, expr, args)

    def _future_data(self, expr: ast.Expr) -> Data | None:
        symbol = self._symbol_of_name(expr)
        if symbol is None or symbol.future is None:
            return None
        return symbol.future.destination

    def _event_member(
        self, base: Event, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        if name != "at" or args is None:
            self.error(
                f"an event has no member '.{name}'; events are used with wait and trigger", expr.name_span
            )
            return UNKNOWN
        for arg in args:
            self._int_expr(arg, "a ring order")
        slot = EventSlot(expression(expr.value), "at")
        self.info.value_of[id(expr)] = slot
        return slot

    def _tiling_member(
        self, base: Tiling, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        if name == "step" and args is not None:
            self._rank_check(base.base, args, expr, "step")
            steps = tuple(self._dim_of(arg, self._int_expr(arg, "a step")) for arg in args)
            return Tiling(base.base, base.extents, steps, base.origin_method)
        if name == "at" and args is not None:
            self._rank_check(base.base, args, expr, "at")
            for arg, extent, step, dim in zip(args, base.extents, base.steps, base.base.dims):
                tiles = fold("+", fold("/", fold("-", dim, extent), step), 1)
                self._check_index(arg, tiles, f"the tiles of '{base.base.root}'")
            return base.tile()
        return self._data_member(base.tile(), name, expr, args)

    def _rank_check(self, data: Data, args: Sequence[ast.Expr], expr: ast.Expr, method: str) -> bool:
        if len(args) != len(data.dims):
            self.error(
                f"'.{method}' takes {len(data.dims)} index(es) for {len(data.dims)}-dimensional data "
                f"{data.describe()}, got {len(args)}",
                expr.span,
            )
            for arg in args:
                self._expr(arg)
            return False
        return True

    def _data_member(
        self, data: Data, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        if name == "span":
            if args is None:
                return Shape(data.dims)
            return self._dimension_of(Shape(data.dims), args, expr.span)
        if args is None:
            self.error(f"spanned data has no member '.{name}'", expr.name_span)
            return UNKNOWN
        if name == "chunkat":
            return self._chunkat(data, expr, args)
        if name in ("subspan", "chunk"):
            if not self._rank_check(data, args, expr, name):
                return UNKNOWN
            sizes = tuple(self._dim_of(arg, self._int_expr(arg, "a tile extent")) for arg in args)
            if name == "chunk":
                sizes = tuple(fold("/", dim, count) for dim, count in zip(data.dims, sizes))
            for arg, size, dim in zip(args, sizes, data.dims):
                if isinstance(size, int) and isinstance(dim, int) and not 0 < size <= dim:
                    self.error(f"tile extent {size} does not fit dimension of extent {dim}", arg.span)
            return Tiling(data, sizes, sizes, name)
        if name == "at":
            return self._at(data, args, expr, expression(expr.value))
        if name == "view":
            if not self._rank_check(data, args, expr, name):
                return UNKNOWN
            return Window(
                data, tuple(self._dim_of(arg, self._int_expr(arg, "a window extent")) for arg in args)
            )
        if name == "span_as":
            return self._span_as(data, expr, args)
        self.error(
            f"spanned data has no method '.{name}' (views are chunkat, subspan, step, at, view, from, span_as)",
            expr.name_span,
        )
        return UNKNOWN

    def _chunkat(self, data: Data, expr: ast.Expr, args: Sequence[ast.Expr]) -> Value:
        if not self._rank_check(data, args, expr, "chunkat"):
            return UNKNOWN
        dims: list[Dim] = []
        for arg, dim in zip(args, data.dims):
            if isinstance(arg, ast.Name) and arg.id == "_":
                dims.append(dim)
                continue
            value = self._expr(arg)
            if isinstance(value, Bounded):
                dims.append(fold("/", dim, value.bound))
            elif isinstance(value, Unknown):
                dims.append("?")
            else:
                self.error(
                    "a chunkat index must be a bounded value (a parallel, foreach or with variable, or a '#' "
                    f"composition of them); this is {value.describe()}",
                    arg.span,
                )
                dims.append("?")
        return Data(data.elem, tuple(dims), data.storage, data.root)

    def _at(self, data: Data, args: Sequence[ast.Expr], expr: ast.Expr, name: str) -> Value:
        if len(args) > len(data.dims):
            self.error(
                f"'.at' takes at most {len(data.dims)} index(es) for {len(data.dims)}-dimensional data "
                f"{data.describe()}, got {len(args)}",
                expr.span,
            )
            for arg in args:
                self._expr(arg)
            return UNKNOWN
        for position, (arg, dim) in enumerate(zip(args, data.dims)):
            self._check_index(arg, dim, f"dimension {position} of '{name}'")
        rest = data.dims[len(args) :]
        if not rest:
            return Scalar(data.elem)
        return Data(data.elem, rest, data.storage, data.root)

    def _span_as(self, data: Data, expr: ast.Expr, args: Sequence[ast.Expr]) -> Value:
        dims = self._shape_dims(args)
        if _known_count_mismatch(dims, data.dims):
            self.error(
                f"span_as({shape_text(dims)}) has {product(dims)} elements, but the data has "
                f"{product(data.dims)} ({shape_text(data.dims)})",
                expr.span,
            )
            return UNKNOWN
        return Data(data.elem, dims, data.storage, data.root)

    # ------------------------------------------------------------- helpers

    def _dim(self, expr: ast.Expr) -> Dim:
        return self._dim_of(expr, self._expr(expr))

    def _dim_of(self, expr: ast.Expr, value: Value) -> Dim:
        """The compile-time integer (or symbolic text) an expression stands for, as a dimension."""
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

    def _names_in(self, expr: ast.Expr) -> frozenset[str]:
        return frozenset(node.id for node in ast.walk_expr(expr) if isinstance(node, ast.Name))

    def _symbols_in(self, expr: ast.Expr) -> list[Symbol]:
        return [
            self.info.symbol_of[id(node)]
            for node in ast.walk_expr(expr)
            if isinstance(node, ast.Name) and id(node) in self.info.symbol_of
        ]


def _promote(a: str, b: str) -> str | None:
    """C-like promotion of two element types (f16/bf16 arithmetic happens in f32)."""
    order = (
        "f64",
        "f32",
        "tf32",
        "bf16",
        "f16",
        "f8_e4m3",
        "f8_e5m2",
        "u64",
        "s64",
        "u32",
        "s32",
        "u16",
        "s16",
        "u8",
        "s8",
        "bool",
    )
    if a not in order or b not in order:
        return None
    best = min(order.index(a), order.index(b))
    result = order[best]
    if result in ("bf16", "f16", "tf32", "f8_e4m3", "f8_e5m2") and a != b:
        return "f32"
    if result in ("u16", "s16", "u8", "s8", "bool"):
        return "s32"
    return result


def _known_mismatch(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> bool:
    if len(a) != len(b):
        return True
    return any(isinstance(x, int) and isinstance(y, int) and x != y for x, y in zip(a, b))


def _known_count_mismatch(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> bool:
    """Two shapes hold different element counts (when both counts are known)."""
    count_a, count_b = product(a), product(b)
    if isinstance(count_a, int) and isinstance(count_b, int):
        return count_a != count_b
    return False


def _type_ref_text(ref: ast.TypeRef) -> str:
    if ref.shape is None:
        return ref.name
    return f"{ref.name} [{expressions(ref.shape)}]"
