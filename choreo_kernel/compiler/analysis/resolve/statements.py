"""Statements: declarations, storage, parallel levels, loops, control flow, waits and triggers."""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis import levels
from choreo_kernel.compiler.analysis.builtins import FUTURE_BUILTINS, is_device_effect
from choreo_kernel.compiler.analysis.resolve.base import type_ref_text
from choreo_kernel.compiler.analysis.resolve.control import ControlRules
from choreo_kernel.compiler.analysis.resolve.fragments import FragmentRules
from choreo_kernel.compiler.analysis.resolve.parameters import ParameterRules
from choreo_kernel.compiler.analysis.resolve.tuples import TupleRules
from choreo_kernel.compiler.analysis.scope import Context, LevelScope
from choreo_kernel.compiler.analysis.values import (
    ELEMENT_BYTES,
    FLOAT_TYPES,
    INT_TYPES,
    UNKNOWN,
    Bounded,
    BoundedTuple,
    BufferArray,
    Data,
    Dim,
    Event,
    EventSlot,
    Future,
    ITuple,
    Scalar,
    Shape,
    Symbol,
    Unknown,
    Value,
    known_mismatch,
    product,
    shape_text,
)
from choreo_kernel.compiler.diagnostics import ERROR, Note
from choreo_kernel.compiler.printer import expression
from choreo_kernel.compiler.semantics.evaluate import constant
from choreo_kernel.compiler.semantics.levels import Level, Storage


class StatementRules(ControlRules, FragmentRules, TupleRules, ParameterRules):
    """Statements: declarations, storage, parallel levels, loops, control flow, waits and triggers."""

    def _stmt_Block(self, stmt: ast.Block, context: Context) -> None:
        self._body(stmt, context)

    def _stmt_Empty(self, stmt: ast.Empty, context: Context) -> None:
        pass

    def _stmt_Unsupported(self, stmt: ast.Unsupported, context: Context) -> None:
        self.sink.warning(f"this {stmt.what} is ignored by this compiler", stmt.span)
        if stmt.inner is not None:
            self._statement(stmt.inner, context)
        for attribute in stmt.attributes:
            if attribute.name == "schedule" and isinstance(stmt.inner, ast.OperationStmt):
                self._check_mma_schedule(attribute, stmt.inner)

    def _check_mma_schedule(self, attribute: ast.Attribute, stmt: ast.OperationStmt) -> None:
        """`[[schedule(k_tiles(i, ...))]] mma...` orders the MMA's K tiles (of 32 bytes each): the order
        names each tile once. This compiler issues them in order, but a malformed order is a mistake."""
        operation = stmt.operation
        for item in attribute.args:
            if not (
                isinstance(item, ast.Call)
                and isinstance(item.callee, ast.Name)
                and item.callee.id == "k_tiles"
            ):
                continue
            order = [constant(arg) for arg in item.args]
            operand = self._symbol_of_name(operation.args[1]) if len(operation.args) == 3 else None
            data = operand.value if operand is not None else None
            tiles = len(order)
            if isinstance(data, Data) and len(data.dims) == 2 and operation.family == "mma":
                k = data.dims[1] if operation.words[:1] == ["row"] else data.dims[0]
                if isinstance(k, int):
                    tiles = k * ELEMENT_BYTES.get(data.elem, 2) // 32
            indices = [index for index in order if isinstance(index, int)]
            if len(indices) != len(order) or sorted(indices) != list(range(tiles)):
                written = ", ".join(expression(arg) for arg in item.args)
                self.error(
                    f"the MMA k_tiles schedule must be a permutation of [0, {tiles}) (each K tile of "
                    f"'{operation.text}' once), got k_tiles({written})",
                    item.span,
                )

    def _stmt_BufferDecl(self, stmt: ast.BufferDecl, context: Context) -> None:
        if stmt.storage == "frag":
            self._fragment_decl(stmt, context)
            return
        storage = Storage.named(stmt.storage or "") or (
            Storage.GLOBAL
            if not context.in_parallel
            else Storage.LOCAL
            if context.below_block
            else Storage.SHARED
        )
        self.info.storage_of[id(stmt)] = storage
        self._check_storage(storage, stmt.name, stmt.span, context, "buffer")
        dims = self._shape_dims(stmt.shape)
        data = Data(stmt.elem_type, dims, storage, stmt.name)
        value: Value = data
        if stmt.array_dims:
            value = BufferArray(
                data, tuple(self._positive_count(d, "buffer array size") for d in stmt.array_dims)
            )
        if storage in (Storage.SHARED, Storage.LOCAL):
            self._check_fixed_extents(stmt, storage)
        for item in stmt.init or ():
            fill = self._expr(item)
            if not isinstance(fill, (Scalar, Bounded, Unknown)):
                self.error(
                    f"'{stmt.name}' is declared as a buffer but its initializer '{expression(item)}' is "
                    f"{fill.describe()}, not a scalar: '{{v}}' fills every element with one value (copy data "
                    f"in with 'dma.copy {expression(item)} => {stmt.name};')",
                    item.span,
                )
        self._declare(
            Symbol(stmt.name, value, stmt.name_span, declaration=stmt, origin="buffer"), stmt.name_span
        )

    def _check_fixed_extents(self, stmt: ast.BufferDecl, storage: Storage) -> None:
        """A shared or local buffer is allocated once for its block or thread: its extents cannot follow a
        parallel, foreach or with variable, which takes another value in each instance and iteration."""
        owner = "block" if storage == Storage.SHARED else "thread"
        for what, items in (("dimension", stmt.shape), ("array size", stmt.array_dims)):
            for item in items:
                varying = next(
                    (
                        symbol
                        for symbol in self._symbols_in(item)
                        if isinstance(symbol.value, Bounded | BoundedTuple)
                    ),
                    None,
                )
                if varying is not None:
                    self.error(
                        f"the {what} '{expression(item)}' of {storage} buffer '{stmt.name}' must be an integer "
                        f"fixed before the {owner} runs, but it is a bounded value ('{varying.name}' is "
                        f"{varying.value.describe()}), which changes between instances and iterations: a {storage} "
                        f"buffer is allocated once per {owner} (write a number, a #define"
                        + (", or a value the arguments give)" if storage == Storage.LOCAL else ")"),
                        item.span,
                    )

    def _stmt_ScalarDecl(self, stmt: ast.ScalarDecl, context: Context) -> None:
        if stmt.storage == Storage.SHARED and not context.in_block:
            self._check_storage(Storage.SHARED, stmt.name, stmt.span, context, "scalar")
        value: Value = Scalar(stmt.type_name) if stmt.type_name else UNKNOWN
        mutable = self._is_mutable(stmt)
        if stmt.init is not None:
            init = self._expr(stmt.init)
            if stmt.type_name is None:
                value = init
            else:
                self._check_assignable(stmt.type_name, init, stmt.init.span)
                const = init.const if isinstance(init, Scalar) and not mutable else None
                value = Scalar(stmt.type_name, const)
        symbol = Symbol(stmt.name, value, stmt.name_span, mutable, stmt, origin="scalar")
        self._declare(symbol, stmt.name_span)

    def _is_mutable(self, stmt: ast.ScalarDecl) -> bool:
        """A scalar declared with an element type name (`s32 x = 555;`) may change, as in Croqtile: it is
        mutable where the function writes it or it holds a device call's result. Otherwise it keeps
        its known value, like `int x = 555;`, so it may still size a shape."""
        if stmt.mutable:
            return True
        return stmt.element_typed and (stmt.name in self.written or isinstance(stmt.init, ast.DeviceCall))

    def _stmt_EventDecl(self, stmt: ast.EventDecl, context: Context) -> None:
        storage = Storage.named(stmt.storage or "") or Storage.SHARED
        if storage != Storage.SHARED:
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
        value = self._shape_value(stmt.value)
        if isinstance(value, ITuple):
            self.error(
                f"'{stmt.name}' is declared as an mdspan (with ':') but initialized as an ituple "
                f"{value.describe().removeprefix('ituple ')}: give it a shape ([...]), or declare an ituple with '='",
                stmt.value.span,
            )
            value = UNKNOWN
        elif not isinstance(value, (Shape, Unknown)):
            self.error(
                f"'{stmt.name} : ...' needs a shape such as [128, 64], got {value.describe()}",
                stmt.value.span,
            )
            value = UNKNOWN
        if isinstance(value, Shape):
            self._check_extents(value.dims, stmt.value, "an extent")
        if isinstance(value, Shape) and stmt.rank is not None and stmt.rank != len(value.dims):
            self.error(
                f"'{stmt.name}' is declared as mdspan<{stmt.rank}> but initialized with a shape of rank "
                f"{len(value.dims)}",
                stmt.value.span,
            )
        self._check_immutable_parts(stmt.name, stmt.value)
        self._declare(
            Symbol(stmt.name, value, stmt.name_span, declaration=stmt, origin="shape"), stmt.name_span
        )

    def _stmt_TupleDecl(self, stmt: ast.TupleDecl, context: Context) -> None:
        value = self._expr(stmt.value)
        if isinstance(stmt.value, ast.ListLiteral):
            self.error(
                f"must use '{{' and '}}' to initialize an ituple: '{stmt.name}' is given a shape "
                f"{expression(stmt.value)} (write {{{expression(stmt.value)[1:-1]}}})",
                stmt.value.span,
            )
        elif isinstance(value, Shape):
            value = ITuple(value.dims)
        elif not isinstance(value, ITuple | Unknown):
            self.error(
                f"'{stmt.name}' is declared as an ituple but initialized as {value.describe()}; an ituple is "
                "a list of integers in braces, {1, 2}",
                stmt.value.span,
            )
            value = UNKNOWN
        if isinstance(value, ITuple) and stmt.size is not None and stmt.size != len(value.items):
            self.error(
                f"'{stmt.name}' is declared as ituple<{stmt.size}> but initialized with {len(value.items)} "
                f"items, an ituple<{len(value.items)}>",
                stmt.value.span,
            )
        self._check_immutable_parts(stmt.name, stmt.value)
        self._declare(
            Symbol(stmt.name, value, stmt.name_span, declaration=stmt, origin="tuple"), stmt.name_span
        )

    def _stmt_Parallel(self, stmt: ast.Parallel, context: Context) -> None:
        if not context.in_parallel:
            self.kernel = stmt
            self.kernel_levels = levels.infer_levels(stmt, self.sink)
        self._check_stream_binding(stmt, context)
        filled, nests = levels.fill_levels(stmt, context, self.kernel_levels, self.sink)
        self.info.levels_of[id(stmt)] = filled
        self._kernel_attributes(stmt, context, filled)
        if not nests:
            self.badly_nested.add(id(self.kernel))
        entered = list(context.levels)
        names: list[tuple[ast.Name, Value, ast.Parallel]] = []
        for clause, level in zip(stmt.clauses, filled):
            counts = self._parallel_counts(clause, level)
            self.info.counts_of[id(clause)] = counts
            entered.append(LevelScope(level, product(counts), clause))
            variables = clause.variables.names if clause.variables else ()
            if clause.variables is not None and len(variables) != len(counts):
                named = ", ".join(f"'{variable.id}'" for variable in variables)
                self.error(
                    f"{len(variables)} parallel variable(s) ({named}) but {len(counts)} count(s): each parallel "
                    "variable is assigned one bound, so name one per count ('{i, j} by [4, 8]')",
                    clause.variables.span,
                )
            for variable, count in zip(variables, counts):
                names.append((variable, Bounded(count), stmt))
            group = clause.variables.group if clause.variables else None
            if group is not None:  # `q = {q0, q1} by [2, 2]`: q is the bounded ituple of both
                elements = tuple(variable.id for variable in variables)
                names.append((group, BoundedTuple(counts[: len(variables)], elements), stmt))
        if stmt.is_async and context.level_kinds not in ((), (Level.CLUSTER,)):
            self.error(
                "'parallel.async' is only allowed on the outermost parallel; an inner level cannot be "
                "launched asynchronously",
                stmt.span,
            )
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
        bounds = self._extent_bounds(stmt.extent)
        symbols = self._bound_variables(stmt.variables, bounds, stmt, "foreach")
        self._loop_hint(stmt, bounds[0] if bounds else None)
        inner = context.enter(loops=(*context.loops, stmt))

        def declare() -> None:
            for symbol in symbols:
                self._declare(symbol, symbol.span)

        with self._loop_body(stmt):
            self._body(stmt.body, inner, declare)

    def _stmt_ForeachRange(self, stmt: ast.ForeachRange, context: Context) -> None:
        rebound: list[Symbol] = []
        for item in stmt.items:
            if item.name.id == "_":
                self.error(
                    "_ is not allowed as an iteration variable: it keeps a whole dimension in chunkat",
                    item.name.span,
                )
                continue
            symbol = self._lookup(item.name)
            if symbol is not None and symbol.origin != "with":
                self.error(
                    f"'foreach {item.name.id}' iterates a 'with' variable, but '{item.name.id}' is a "
                    f"{symbol.value.describe()}",
                    item.name.span,
                )
            if symbol is not None and isinstance(symbol.value, BoundedTuple) and item.sliced:
                self.error(
                    f"'{item.name.id}' is a bounded ituple; a range ({item.name.id}(start:stop:step)) applies to "
                    "one bounded integer: slice its elements instead",
                    item.span,
                )
            for part in (item.start, item.stop, item.step):
                if part is not None:
                    self._int_expr(part, "a range bound")
            if isinstance(item.step, ast.IntLiteral) and item.step.value == 0:
                self.error("the step of a range cannot be 0", item.step.span)
            if symbol is not None:
                rebound.extend(self._rebound_elements(symbol, item.name, stmt))
        self._loop_hint(stmt, _range_extent(stmt.items[0], rebound[0] if rebound else None))
        inner = context.enter(loops=(*context.loops, stmt))

        def declare() -> None:
            for symbol in rebound:
                self.scope.symbols[symbol.name] = symbol

        with self._loop_body(stmt):
            self._body(stmt.body, inner, declare)

    def _stmt_With(self, stmt: ast.With, context: Context) -> None:
        declared: list[Symbol] = []
        for binding in stmt.bindings:
            bounds = self._extent_bounds(binding.extent)
            declared.extend(self._bound_variables(binding.variables, bounds, stmt, "with"))
        if stmt.where is not None:
            bound = {symbol.name for symbol in declared}
            for pair in stmt.where:
                for name in pair:
                    if name.id not in bound:
                        self.error(
                            f"'{name.id}' is not defined inside the with statement: 'where' relates the "
                            "variables this with declares",
                            name.span,
                        )
            self.sink.warning("the 'where' clause is ignored by this compiler", stmt.span)

        def declare() -> None:
            for symbol in declared:
                self._declare(symbol, symbol.span)

        self._body(stmt.body, context, declare)

    def _stmt_If(self, stmt: ast.If, context: Context) -> None:
        self._condition(stmt.condition)
        with self._guarded((stmt.condition, True)):
            self._body(stmt.then, context)
        if stmt.otherwise is not None:
            with self._guarded((stmt.condition, False)):
                self._body(stmt.otherwise, context)

    def _stmt_While(self, stmt: ast.While, context: Context) -> None:
        if not self._event_condition(stmt.condition):
            self._condition(stmt.condition)
        with self._guarded((stmt.condition, True)), self._loop_body(stmt):
            self._body(stmt.body, context.enter(loops=(*context.loops, stmt)))

    def _stmt_InThreads(self, stmt: ast.InThreads, context: Context) -> None:
        predicate = self._expr(stmt.condition)
        if isinstance(predicate, Bounded) or (isinstance(predicate, Scalar) and predicate.type != "bool"):
            self.error(
                f"'inthreads' requires a predicate expression, got {predicate.describe()}: write a comparison "
                "of parallel variables, such as 'inthreads (t < 4)'",
                stmt.condition.span,
            )
        elif not isinstance(predicate, (Scalar, Bounded, Unknown)):
            self.error(f"a condition must be a scalar, got {predicate.describe()}", stmt.condition.span)
        if not context.in_parallel:
            self.error(
                "'inthreads' cannot be declared in the global scope (outside every parallel): its predicate "
                "selects threads, so it must be inside a parallel",
                stmt.span,
            )
        elif not any(symbol.origin == "parallel" for symbol in self._symbols_in(stmt.condition)):
            self.error(
                "the predicate of 'inthreads' must be divergent: it must depend on parallel variables (it "
                "selects threads; a predicate the same for every thread is an 'if')",
                stmt.condition.span,
            )
        if stmt.is_async and context.in_inthreads:
            self.error("a nested 'inthreads' cannot be '.async'", stmt.span)
        inner = context.enter(
            in_inthreads=True,
            path=stmt if stmt.is_async else context.path,
            predicates=(*context.predicates, stmt.condition),
        )
        with self._guarded((stmt.condition, True)):
            self._body(stmt.body, inner)

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
        kind = self._unreturnable(stmt.value, value)
        if kind is not None:
            self.error(
                f"returning '{expression(stmt.value)}', {kind}, is not supported: a __co__ function returns "
                "spanned data or a scalar value",
                stmt.value.span,
            )
            return
        if isinstance(value, Future) and not value.is_data:
            return
        if self.return_type.name != "auto" and self.return_type.shape is not None:
            if isinstance(value, Data):
                if value.elem != self.return_type.name:
                    self.error(
                        f"returns {value.elem} data but the function is declared to return "
                        f"{type_ref_text(self.return_type)}",
                        stmt.value.span,
                    )
                declared = tuple(
                    "?" if isinstance(d, ast.AnyDim) else self._dim(d) for d in self.return_type.shape
                )
                if known_mismatch(declared, value.dims):
                    self.error(
                        f"returns shape {shape_text(value.dims)} but the function is declared to return "
                        f"{shape_text(declared)}",
                        stmt.value.span,
                    )
            elif not isinstance(value, Unknown):
                self.error(
                    f"a function returning spanned data cannot return {value.describe()}", stmt.value.span
                )

    def _unreturnable(self, expr: ast.Expr, value: Value) -> str | None:
        """What `return expr` would hand the host that it cannot hold: compile-time tuples and
        bounded (loop or parallel) variables, and a placeholder future, which stands for no data."""
        if isinstance(value, ITuple):
            return "an ituple"
        if isinstance(value, BoundedTuple | Bounded):
            return f"a bounded variable ({value.describe()})"
        symbol = self._symbol_of_name(expr) if isinstance(value, Future) else None
        if symbol is not None and symbol.future is not None and symbol.future.kind == "placeholder":
            return "the placeholder future of a 'dma.any'"
        return None

    def _stmt_Break(self, stmt: ast.Break, context: Context) -> None:
        if not context.loops:
            self.error("'break' outside a loop", stmt.span)

    _stmt_Continue = _stmt_Break

    def _stmt_Sync(self, stmt: ast.Sync, context: Context) -> None:
        if stmt.kind == "global":  # the host waits for every parallel launched before it
            if context.in_parallel:
                self.error(
                    "'sync.global' waits on the host for every parallel launched before it; it stands at host "
                    "level (outside every parallel): inside a block, 'sync.shared' is the block barrier",
                    stmt.span,
                )
        elif stmt.kind != "shared":
            self.error(f"'sync.{stmt.kind}' is not supported; 'sync.shared' is the block barrier", stmt.span)
        elif not context.in_block:
            self.error(
                "'sync.shared' is a barrier of the threads of a block; it must be inside a block", stmt.span
            )

    def _stmt_Assign(self, stmt: ast.Assign, context: Context) -> None:
        value = self._expr(stmt.value)
        target = stmt.target
        if not self.apply_assigns(stmt):
            return
        if isinstance(target, ast.Name):
            symbol = self.scope.lookup(target.id)
            if symbol is None:
                if stmt.op != "=":
                    self._lookup(target)
                    return
                if isinstance(value, Scalar) and value.type in INT_TYPES:
                    value = Scalar(value.type, value.const)
                placeholder = self._symbol_of_name(stmt.value) if isinstance(value, Future) else None
                if (
                    placeholder is not None
                    and placeholder.future is not None
                    and placeholder.future.kind == "placeholder"
                ):
                    self.error(
                        f"'{target.id}' cannot be initialized with the placeholder '{placeholder.name}': a "
                        "placeholder ('dma.any') holds no data until a copy is named by it; name the copy's "
                        f"future directly ('{target.id} = dma.copy.async ...;')",
                        stmt.value.span,
                    )
                if isinstance(value, ITuple | Shape):
                    self._check_immutable_parts(target.id, stmt.value)
                self._declare(
                    Symbol(target.id, value, target.span, declaration=stmt, origin="local"),
                    target.span,
                )
                return
            self.info.symbol_of[id(target)] = symbol
            if self.register_update(stmt, symbol, value, context):
                return
            if not symbol.mutable:
                self.error(
                    _not_reassigned(target.id, symbol.value),
                    target.span,
                    Note(f"'{target.id}' is declared here", symbol.span),
                )
            else:
                self._check_host_scalar_change(symbol, target, context)
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

    def _stmt_ExprStmt(self, stmt: ast.ExprStmt, context: Context) -> None:
        expr = stmt.expr
        if isinstance(expr, ast.IncDec):
            self._incdec(expr)
            symbol = self._symbol_of_name(expr.operand)
            if symbol is not None and symbol.mutable and isinstance(expr.operand, ast.Name):
                self._check_host_scalar_change(symbol, expr.operand, context)
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
                self.error("'swap' takes exactly two futures", expr.span)
            if expr.callee.id == "rotate" and len(expr.args) < 2:
                self.error("'rotate' takes two or more futures", expr.span)
            self._check_rotation_scopes(expr)
            self._check_rotation_kinds(expr)
            return
        reported = len(self.sink.diagnostics)
        self._expr(expr)
        wrong = any(d.severity == ERROR for d in self.sink.diagnostics[reported:])
        if not is_device_effect(expr) and not wrong:  # a wrong expression is one error, not a warning too
            self.sink.warning("this expression statement has no effect", stmt.span)

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


def _range_extent(item: ast.RangeItem, symbol: Symbol | None) -> Dim | None:
    """How many iterations `foreach j(start:stop:step)` makes, where its bound and slice are constants;
    for `foreach index` over a bounded ituple, its outermost loop's (the one an unroll hint unrolls)."""
    value = symbol.value if symbol is not None else None
    bound = value.bound if isinstance(value, Bounded) else None
    if isinstance(value, BoundedTuple) and value.bounds:
        bound = value.bounds[0]
    parts = [constant(part) if part is not None else None for part in (item.start, item.stop, item.step)]
    if not isinstance(bound, int) or any(
        p is None and e is not None for p, e in zip(parts, (item.start, item.stop, item.step))
    ):
        return None
    if parts[2] == 0:
        return None
    return len(range(bound)[slice(*parts)])


def _not_reassigned(name: str, value: Value) -> str:
    """Why `name = ...` is rejected, with the advice that fits what `name` is."""
    if isinstance(value, Scalar):
        return (
            f"'{name}' is immutable and cannot be re-assigned; only 'mutable' values can be "
            f"(declare it as 'mutable {value.type} {name} = ...')"
        )
    if isinstance(value, Data | BufferArray):
        return (
            f"'{name}' is a buffer, which is not re-assigned: copy into it ('dma.copy SRC => {name};') "
            f"or assign its elements ('{name}.at(i) = ...')"
        )
    if isinstance(value, Future):
        return (
            f"'{name}' is a future, which is not re-assigned: give the new copy another name, or rotate "
            "futures with swap(...)"
        )
    if isinstance(value, Event):
        return f"'{name}' is an event, which is not re-assigned: signal it with 'trigger {name};'"
    return f"'{name}' is {value.describe()}, which cannot be re-assigned: give the new value another name"
