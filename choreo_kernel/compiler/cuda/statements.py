"""The statements of one kernel (an outermost `parallel`) as the body of a CUDA kernel.

Every thread of the block runs the whole body. What runs once per block or per warpgroup
(language.md 4.1, 12.2) is arranged here: scalars are computed redundantly by all threads
of the instance (same value everywhere), stores to shared or global memory are made by one
leader thread, copies are shared among the instance's threads, and the barriers those need
follow them. An inner `parallel` that the whole block enters ends with a block barrier
where more block-level work follows, since the threads re-join there.
"""

from __future__ import annotations

from dataclasses import replace

from choreo_kernel.compiler import ast, printer
from choreo_kernel.compiler.analysis.builtins import is_device_effect
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Bounded, Future, Scalar, Symbol, Transfer
from choreo_kernel.compiler.cuda import cexpr, copies, elements
from choreo_kernel.compiler.cuda.bound_variables import BoundVariables
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.control import ControlStatements
from choreo_kernel.compiler.cuda.device_statements import DeviceStatements
from choreo_kernel.compiler.cuda.fragments import Fragments
from choreo_kernel.compiler.cuda.plan import WaitSite
from choreo_kernel.compiler.cuda.roles import plan_roles
from choreo_kernel.compiler.cuda.threads import GRID_AXES, THREAD_GROUP, Group
from choreo_kernel.compiler.cuda.tma import Tma
from choreo_kernel.compiler.cuda.views import (
    BufferSlots,
    FutureValue,
    IndexTuple,
    Lowered,
    LoweringError,
    Operand,
    ShapeValue,
    View,
    buffer,
    element_count,
)
from choreo_kernel.compiler.cuda.warp_mma import WarpMma
from choreo_kernel.compiler.cuda.wgmma import Mma
from choreo_kernel.compiler.cuda.writer import Names
from choreo_kernel.compiler.semantics.levels import Level, Storage


class KernelEmitter(ControlStatements, BoundVariables):
    """Writes the body of one kernel; its parameters and the arena are known once it is done."""

    def __init__(
        self,
        info: FunctionInfo,
        kernel: ast.Parallel,
        bindings: dict[Symbol, Lowered],
        names: Names,
        wait_sites: list[WaitSite],
    ) -> None:
        super().__init__(info, kernel, bindings, names, wait_sites)
        self.cp_async_groups = names.fresh("cp_async_groups")
        self.future_groups: dict[Symbol, Group] = {}
        self.roles = plan_roles(info, kernel, self.threads)
        self.tma = Tma(self)
        self.mma = Mma(self)
        self.warp_mma = WarpMma(self)
        self.fragments = Fragments(self)
        self.device = DeviceStatements(self)

    # ------------------------------------------------------------------ the kernel

    def emit(self) -> str:
        out = self.out
        kernel = self.kernel
        out.source(kernel)
        grid = self.threads.grid()
        blocks = [
            Operand(cexpr.name(f"blockIdx.{axis}"), "s32", self.expressions.integer(count))
            for axis, (_, count) in zip(GRID_AXES, grid)
        ]
        for (symbol, _), block in zip(grid, blocks):
            if symbol is not None:
                self._bind_variable(symbol, block.expr, block.bound or cexpr.ONE)
        self._bind_groups(kernel.clauses[: len(self.threads.block_clauses)], blocks)
        self._cluster_variables()
        self._thread_variables(kernel)
        if _has_async_copy(kernel):
            out.line(f"int {self.cp_async_groups} = 0;  // cp.async batches this thread has committed")
        self.tma.prepare(kernel)
        self.device.note_writes(kernel)
        self._body(kernel.body, tail=True)
        text = out.text()
        self.check_control(text)
        return text

    def _cluster_variables(self) -> None:
        """`parallel {c} by [2] : cluster`: `c` is the block's place in its cluster, `blockIdx.x % 2` (clusters
        tile the grid, so this is %cluster_ctaid.x)."""
        cluster = self.threads.launch.cluster
        if cluster is None:
            return
        clause = cluster.parallel.clauses[0]
        names = clause.variables.names if clause.variables is not None else ()
        symbols = [self.info.declared(cluster.parallel, name.id) for name in names]
        if any(symbol is not None for symbol in symbols):
            self.out.source(cluster.parallel, "this block's place in its cluster")
        values = []
        for axis, (symbol, dim) in enumerate(zip(symbols, cluster.dims)):
            value = cexpr.binary("%", cexpr.name(f"blockIdx.{GRID_AXES[axis]}"), cexpr.const(dim))
            if symbol is not None:
                self._bind_variable(symbol, value, cexpr.const(dim))
            values.append(Operand(value, "s32", cexpr.const(dim)))
        self._bind_groups((clause,), values)

    def _bind_variable(self, symbol: Symbol, value: CExpr, bound: CExpr) -> None:
        name = self.names.local(symbol.name)
        self.out.line(f"const int {name} = {value.text};")
        self.bindings[symbol] = Operand(cexpr.name(name), "s32", bound)

    def _thread_variables(self, stmt: ast.Parallel) -> None:
        for clause in stmt.clauses:
            values = []
            for variable in self.threads.variables(clause):
                if variable.symbol is not None:
                    self._bind_variable(variable.symbol, variable.value, variable.extent)
                values.append(Operand(variable.value, "s32", variable.extent))
            if values:
                self._bind_groups((clause,), values)

    def _bind_groups(self, clauses: tuple[ast.ParallelClause, ...], values: list[Operand]) -> None:
        """`q = {q0, q1} by [2, 2]`: `q` is the bounded ituple of its variables' values."""
        position = 0
        for clause in clauses:
            count = len(self.info.counts_of[id(clause)])
            variables = clause.variables
            if variables is not None and variables.group is not None:
                owner, _ = self.info.launches.structure.owner[id(clause)]
                self.bind_group(owner, variables, values[position : position + count])
            position += count

    # ------------------------------------------------------------------ statement lists

    def _body(self, stmt: ast.Stmt, tail: bool) -> None:
        statements = stmt.body if isinstance(stmt, ast.Block) else (stmt,)
        for index, item in enumerate(statements):
            self._statement(item, tail and index == len(statements) - 1)

    def _scoped(self, head: str, stmt: ast.Stmt, tail: bool) -> None:
        with self.out.block(head):
            self._body(stmt, tail)

    def _statement(self, stmt: ast.Stmt, tail: bool) -> None:
        handler = getattr(self, f"_{type(stmt).__name__}")  # one per statement kind (tests/test_passes.py)
        try:
            handler(stmt, tail)
        except LoweringError as error:
            if error.node is None:
                error.node = stmt
            raise

    # ------------------------------------------------------------------ control flow

    def _Block(self, stmt: ast.Block, tail: bool) -> None:
        self._scoped("", stmt, tail)

    def _Empty(self, stmt: ast.Empty, tail: bool) -> None:
        pass

    def _Asm(self, stmt: ast.Asm, tail: bool) -> None:
        self.device.asm(stmt)

    def _Unsupported(self, stmt: ast.Unsupported, tail: bool) -> None:
        self.out.source(stmt, "ignored by this compiler")
        if stmt.inner is not None:
            self._statement(stmt.inner, tail)

    def _Parallel(self, stmt: ast.Parallel, tail: bool) -> None:
        self.out.source(stmt)
        with self.out.block(""):
            self._thread_variables(stmt)
            self._body(stmt.body, tail)
        context = self.info.context_of[id(stmt)]
        if not tail and not context.below_block and not context.predicates:
            self.out.line(f"__syncthreads();  // the threads of line {stmt.span.line} re-join the block")
        elif not tail and context.below_block:
            # they re-join their warpgroup or warp, whose next statement may read what they wrote
            group = self._group(stmt)
            barrier = group.barrier()
            if barrier is not None:
                self.out.line(f"// the threads of line {stmt.span.line} re-join their {group.level}")
                self.out.line(barrier)

    def _If(self, stmt: ast.If, tail: bool) -> None:
        self.out.source(stmt)
        condition = self.expressions.integer(stmt.condition)
        self._scoped(f"if ({condition.text})", stmt.then, tail)
        if stmt.otherwise is not None:
            self._scoped("else", stmt.otherwise, tail)

    def _While(self, stmt: ast.While, tail: bool) -> None:
        if self.is_event_loop(stmt):
            with self.out.block(""):
                self._scoped(self.event_loop_head(stmt), stmt.body, False)
            return
        self.out.source(stmt)
        self._scoped(f"while ({self.expressions.integer(stmt.condition).text})", stmt.body, False)

    def _InThreads(self, stmt: ast.InThreads, tail: bool) -> None:
        note = (
            "an independent path: it talks to the others through events"
            if stmt.is_async
            else ("the selected threads re-join after it")
        )
        self.out.source(stmt, note)
        with self.out.block(f"if ({self.expressions.integer(stmt.condition).text})"):
            role = self.roles.get(id(stmt))
            if role is not None:
                why = (
                    "few registers for issuing copies"
                    if role.kind == "producer"
                    else "registers for accumulators"
                )
                self.out.line(f"{role.call}  // {role.kind}: {why}")
            if id(stmt) in self.elected_paths and not self.in_elected_path:
                self._elected_path(stmt, tail)
            else:
                self._body(stmt.body, tail)

    def _elected_path(self, stmt: ast.InThreads, tail: bool) -> None:
        """A path that only issues bound TMA loads and waits on events runs on one thread per instance."""
        context = self.info.context_of[id(stmt)]
        condition = self.threads.elected(context.enter(predicates=(*context.predicates, stmt.condition)))
        if condition is None:
            self._body(stmt.body, tail)
            return
        self.in_elected_path = True
        with self.out.block(f"if ({condition.text})"):
            self.out.line(
                "// only copies and event waits here: one elected thread runs them for its instance"
            )
            self._body(stmt.body, tail)
        self.in_elected_path = False

    def _Foreach(self, stmt: ast.Foreach, tail: bool) -> None:
        self.out.source(stmt)
        heads = self.loop_heads(stmt, stmt.variables, self.expressions.counts(stmt.extent))
        self.unroll_pragma(stmt)
        self._nested_loops(heads, stmt.body)

    def _nested_loops(self, heads: list[str], body: ast.Stmt) -> None:
        if not heads:
            self._body(body, False)
            return
        with self.out.block(heads[0]):
            self._nested_loops(heads[1:], body)

    def _Apply(self, stmt: ast.Apply, tail: bool) -> None:
        self.fragments.apply(
            stmt,
            lambda indices: self.bind_elements(stmt, stmt.variables, indices),
            lambda: self._body(stmt.body, False),
        )

    def _FragmentOp(self, stmt: ast.FragmentOp, tail: bool) -> None:
        self.fragments.operation(stmt)

    def _ForeachRange(self, stmt: ast.ForeachRange, tail: bool) -> None:
        self.out.source(stmt)
        heads = []
        for item in stmt.items:
            outer = self.bindings.get(self.expressions.symbol(item.name))
            if isinstance(outer, IndexTuple) and not item.sliced:
                heads.extend(self.tuple_loop_heads(stmt, item, outer))
                continue
            if not isinstance(outer, Operand) or outer.bound is None:
                raise LoweringError(f"'{item.name.id}' is not a with-variable", item)
            name = self.names.local(item.name.id, in_next_block=True)
            self._bind_name(stmt, item.name.id, Operand(cexpr.name(name), "s32", outer.bound))
            heads.append(self._range_head(item, name, outer.bound))
        self.unroll_pragma(stmt)
        self._nested_loops(heads, stmt.body)

    def _range_head(self, item: ast.RangeItem, name: str, bound: CExpr) -> str:
        """`foreach j(start:stop:step)` iterates `range(#j)[start:stop:step]` (Python slice rules, 12.8)."""
        step = self.expressions.constant(item.step, "a range step") if item.step is not None else 1
        descending = step < 0

        def edge(expr: ast.Expr | None, default: CExpr) -> CExpr:
            if expr is None:
                return default
            value = self.expressions.integer(expr)
            if value.value is not None and bound.value is not None:
                index = value.value + bound.value if value.value < 0 else value.value
                low, high = (-1, bound.value - 1) if descending else (0, bound.value)
                return cexpr.const(min(max(index, low), high))
            if value.value is not None and value.value >= 0 and not descending:
                return cexpr.call("choreo::min", value, bound)
            flag = cexpr.raw("true" if descending else "false")
            return cexpr.call("choreo::slice_bound", value, bound, flag)

        last = cexpr.binary("-", bound, cexpr.ONE)
        start = edge(item.start, last if descending else cexpr.ZERO)
        stop = edge(item.stop, cexpr.const(-1) if descending else bound)
        test = ">" if descending else "<"
        advance = f"++{name}" if step == 1 else (f"{name} += {step}" if step > 0 else f"{name} -= {-step}")
        return f"for (int {name} = {start.text}; {name} {test} {stop.text}; {advance})"

    def _With(self, stmt: ast.With, tail: bool) -> None:
        self.out.source(stmt, "outside a foreach over it, a with-variable is 0")
        with self.out.block(""):
            for binding in stmt.bindings:
                counts = self.expressions.counts(binding.extent)
                names = self.element_names(binding.variables, len(counts))
                for name in names:
                    self.out.line(f"const int {name} = 0;")
                elements = [Operand(cexpr.name(name), "s32", count) for name, count in zip(names, counts)]
                self.bind_elements(stmt, binding.variables, elements)
            self._body(stmt.body, tail)

    def _Return(self, stmt: ast.Return, tail: bool) -> None:
        raise LoweringError(
            "'return' inside a parallel; return the result after the parallel, at host level", stmt
        )

    def _Break(self, stmt: ast.Break, tail: bool) -> None:
        self.out.line("break;")

    def _Continue(self, stmt: ast.Continue, tail: bool) -> None:
        self.out.line("continue;")

    def _Sync(self, stmt: ast.Sync, tail: bool) -> None:
        self.out.source(stmt)
        self.out.line("__syncthreads();")

    # ------------------------------------------------------------------ declarations

    def _AccumulatorArrayDecl(self, stmt: ast.AccumulatorArrayDecl, tail: bool) -> None:
        self.out.source(stmt)
        self.warp_mma.declare_array(stmt)

    def _BufferDecl(self, stmt: ast.BufferDecl, tail: bool) -> None:
        if stmt.storage == "frag":
            self._bind(stmt, self.fragments.declare(stmt))
            return
        storage = self.info.storage_of[id(stmt)]
        dims = self.expressions.dims(stmt.shape)
        counts = tuple(self.expressions.integer(d) for d in stmt.array_dims)
        name = self.names.local(stmt.name)
        total = element_count((*counts, *dims))
        self.out.source(stmt)
        swizzle = 0
        if storage == Storage.SHARED:
            symbol = self.expressions.declared_by(stmt)
            swizzle = self.swizzles.get(symbol, 0) if symbol is not None else 0
            self.out.line(self.shared_buffer(name, stmt.elem_type, (*counts, *dims), swizzle, stmt))
        elif storage == Storage.LOCAL:
            self.out.line(self.local_buffer(name, stmt.elem_type, total, stmt))
        else:
            raise LoweringError(f"{storage} buffers cannot be declared inside a parallel", stmt)
        view = buffer(stmt.elem_type, cexpr.name(name), dims, storage, stmt.name, swizzle)
        self._bind(stmt, BufferSlots(view, counts) if counts else view)
        if stmt.init is not None:
            self._fill(stmt, name, total, view)

    def _fill(self, stmt: ast.BufferDecl, name: str, total: CExpr, view: View) -> None:
        storage = view.storage
        assert stmt.init is not None
        if len(stmt.init) != 1:
            raise LoweringError("the CUDA backend fills a buffer with one value: '{v}'", stmt)
        value = self.expressions.operand(stmt.init[0])
        fill = elements.convert(value.expr, value.type, stmt.elem_type)
        element = elements.c_type(stmt.elem_type)
        group = self._group(stmt) if storage == Storage.SHARED else THREAD_GROUP
        self.out.line(
            f"choreo::fill<{element}>({name}, {total.text}, {fill.text}, {group.rank.text}, {group.threads.text});"
        )
        self._fence_for_tensor_cores(view)
        barrier = group.barrier()
        if barrier is not None:
            self.out.line(barrier)

    def _ScalarDecl(self, stmt: ast.ScalarDecl, tail: bool) -> None:
        if stmt.storage is not None:
            raise LoweringError(
                f"{stmt.storage} scalars have no CUDA lowering; use a one-element buffer", stmt
            )
        self.out.source(stmt)
        value = self.expressions.operand(stmt.init) if stmt.init is not None else None
        symbol = self.expressions.declared_by(stmt)
        self._declare_scalar(stmt, stmt.name, value, symbol.mutable if symbol is not None else stmt.mutable)

    def _declare_scalar(self, stmt: ast.Stmt, source_name: str, value: Operand | None, mutable: bool) -> None:
        symbol = self.expressions.declared_by(stmt)
        declared = symbol.value if symbol is not None else None
        element = (
            declared.type if isinstance(declared, Scalar) else value.type if value is not None else "s32"
        )
        if isinstance(declared, Bounded):
            element = "s32"
        name = self.names.local(source_name)
        qualifier = "" if mutable else "const "
        c_type = elements.c_type(element)
        if value is None:
            self.out.line(f"{c_type} {name}{{}};")
        else:
            init = elements.convert(value.expr, value.type, element)
            self.out.line(f"{qualifier}{c_type} {name} = {init.text};")
        known = declared.const if isinstance(declared, Scalar) and not mutable else None
        constant = known if isinstance(known, int) else None
        bound = value.bound if value is not None else None
        self._bind(stmt, Operand(cexpr.name(name, constant), element, bound))

    def _EventDecl(self, stmt: ast.EventDecl, tail: bool) -> None:
        self.out.source(stmt)
        if self._divergent(stmt):  # its initialization ends with a block barrier
            raise LoweringError(
                f"event '{stmt.name}' is declared inside 'inthreads', where only some threads run; the block "
                "initializes its events together: declare it before the 'inthreads'",
                stmt,
            )
        slots = 1
        for dim in stmt.dims:
            slots *= self.expressions.constant(dim, "the size of an event array")
        offset = self.arena.allocate(stmt.name, 8 * slots, 8)
        name = self.names.local(stmt.name)
        pointer = cexpr.raw(f"{self.shared_memory} + {offset}")
        self.events.declare(stmt, name, pointer, self.names.fresh(f"{stmt.name}_phase"), self.out)

    def _ShapeDecl(self, stmt: ast.ShapeDecl, tail: bool) -> None:
        self._bind(stmt, ShapeValue(self.expressions.dims((stmt.value,))))

    def _TupleDecl(self, stmt: ast.TupleDecl, tail: bool) -> None:
        self._bind(stmt, ShapeValue(self.expressions.dims((stmt.value,))))

    def _bind(self, stmt: ast.Stmt, value: Lowered) -> None:
        symbol = self.expressions.declared_by(stmt)
        if symbol is not None:
            self.bindings[symbol] = value

    def _bind_name(self, declaration: ast.Stmt, name: str, value: Lowered) -> None:
        symbol = self.expressions.declared(declaration, name)
        if symbol is not None:
            self.bindings[symbol] = value

    # ------------------------------------------------------------------ assignments

    def _Assign(self, stmt: ast.Assign, tail: bool) -> None:
        target = stmt.target
        if id(stmt) in self.info.register_updates:
            self.fragments.update(stmt)
            return
        if isinstance(target, ast.Name):
            if id(target) not in self.info.symbol_of:  # `x = expr;` declares x
                self._declare_alias(stmt)
                return
            self.out.source(stmt)
            current = self.expressions.operand(target)
            self.out.line(self._store(current, stmt.op, self.expressions.operand(stmt.value)) + ";")
            return
        self.out.source(stmt)
        lvalue = self.expressions.operand(target)
        if lvalue.storage is None:
            raise LoweringError("this assignment needs one element (index every dimension with .at)", target)
        self.note_written(target)
        store = self._store(lvalue, stmt.op, self.expressions.operand(stmt.value)) + ";"
        if lvalue.swizzled:  # the tensor cores or the copy engine read this buffer (the async proxy)
            store = f"{{ {store} choreo::fence_proxy_async_shared(); }}"
        group = self._group(stmt)
        if lvalue.storage == Storage.LOCAL or group.level == Level.THREAD or self.fragments.visit is not None:
            self.out.line(store)  # inside an apply, each thread writes the elements it owns
            return
        self.out.line(f"if ({group.leader.text}) {store}  // once per {group.level} instance")
        barrier = group.barrier()
        if lvalue.storage == Storage.SHARED and barrier is not None and not self._divergent(stmt):
            self.out.line(barrier)

    def _declare_alias(self, stmt: ast.Assign) -> None:
        """`x = expr;` declaring `x`: a register for a scalar, a new name for a view or a shape."""
        assert isinstance(stmt.target, ast.Name)
        value = self.expressions.value(stmt.value)
        if isinstance(value, Operand):
            self.out.source(stmt)
            self._declare_scalar(stmt, stmt.target.id, value, mutable=False)
        else:
            self._bind(stmt, value)

    def _store(self, target: Operand, op: str, value: Operand) -> str:
        """`target op value` with the conversions of the element types (narrow floats round on store)."""
        if op == "=":
            return f"{target.expr.text} = {elements.convert(value.expr, value.type, target.type).text}"
        if target.type in elements.STORED_AS_BITS:
            current, current_type = elements.widen(target.expr, target.type)
            widened, widened_type = elements.widen(value.expr, value.type)
            combined = cexpr.binary(op[:-1], current, widened)
            result = elements.arithmetic_type(current_type, widened_type)
            return f"{target.expr.text} = {elements.convert(combined, result, target.type).text}"
        widened, _ = elements.widen(value.expr, value.type)
        return f"{target.expr.text} {op} {widened.text}"

    def _ExprStmt(self, stmt: ast.ExprStmt, tail: bool) -> None:
        expr = stmt.expr
        self.out.source(stmt)
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.callee, ast.Name)
            and expr.callee.id in ("swap", "rotate")
        ):
            symbols = [self.expressions.symbol(a) for a in expr.args if isinstance(a, ast.Name)]
            if self.mma.rotate(symbols):
                self.out.line("// MMA futures trade names: their wgmma groups are tracked by the compiler")
                return
            futures = [f for f in map(self.expressions.value, expr.args) if isinstance(f, FutureValue)]
            if len(futures) != len(expr.args):
                raise LoweringError(f"'{expr.callee.id}' rotates named futures", stmt)
            variables = [f.variable for f in futures if f.variable is not None]
            if len(variables) != len(futures):
                raise LoweringError(
                    f"'{expr.callee.id}' rotates the futures of dma copies; the CUDA backend tracks TMA loads "
                    "on mbarriers and cannot rotate them",
                    stmt,
                )
            names = ", ".join(variable.text for variable in variables)
            self.out.line(f"choreo::rotate({names});  // each future takes the next one's copy and buffer")
            self._rotate_groups(expr.args)
            return
        if is_device_effect(expr):
            self.device.effect(stmt)
            return
        self.out.line(f"{self.expressions.integer(expr).text};")

    def _rotate_groups(self, args: tuple[ast.Expr, ...]) -> None:
        symbols = [self.expressions.symbol(a) for a in args if isinstance(a, ast.Name)]
        groups = [self.future_groups.get(s) for s in symbols]
        for symbol, group in zip(symbols, groups[1:] + groups[:1]):
            if group is not None:
                self.future_groups[symbol] = group

    # ------------------------------------------------------------------ data movement

    def _OperationStmt(self, stmt: ast.OperationStmt, tail: bool) -> None:
        operation = stmt.operation
        self.out.source(stmt)
        if operation.qualifiers and operation.qualifiers[0] == "any":
            self._placeholder(stmt)
            return
        for item in operation.after:
            self.out.line(f"// 'after {printer.expression(item)}': this copy starts once it has landed")
            self._wait_future(item)
        if operation.family == "tma":
            self.tma.operation(stmt)
            return
        if operation.family == "mma":
            (self.warp_mma if self.warp_mma.handles(stmt) else self.mma).operation(stmt)
            return
        assert operation.destination is not None
        transfer = self.info.transfers.get(id(operation), Transfer())
        source = self.expressions.view(operation.args[0])
        if transfer.permutation is not None:
            source = source.permuted(transfer.permutation)
        low = self._padding(transfer.low)
        high = self._padding(transfer.high) or (cexpr.ZERO,) * len(low)
        padded = tuple(cexpr.add(dim, before, after) for dim, before, after in zip(source.dims, low, high))
        destination = self.destination(stmt, source, dims=padded if low else None)
        self.note_written(operation.destination)
        # into a local buffer each thread copies the whole tile into its own copy; elsewhere the
        # instance's threads share the copy
        group = THREAD_GROUP if destination.storage == Storage.LOCAL else self._group(stmt)
        cp_async = copies.uses_cp_async(source, destination, operation.is_async)
        fill = self._fill_value(transfer, source)
        if low:
            if source.inside() is not None:
                self.out.line(
                    "// the tile may reach past the end of its array: the fill stands for what is not there"
                )
            self.out.line(
                copies.padded_call(source.within_array(), destination, low, fill, group, stmt, cp_async)
            )
        else:
            call = copies.tail_call(source, destination, fill, group, stmt, cp_async)
            if call is not None:
                self.out.line("// a tile may reach past the end of its array: only the part inside it moves")
            else:
                call = copies.copy_call(
                    "copy_async" if cp_async else "copy", source, destination, group, stmt
                )
            mismatch = copies.count_mismatch(source, destination)
            if mismatch is None:
                self.out.line(call)
            else:  # as on sim: shapes that differ when it runs are an error, never a write past the tile
                site = self._copy_check_site(stmt, source, destination)
                self.out.line(f"if ({mismatch.text}) choreo::assertion_fails({self.status}, {site});")
                self.out.line(f"else {call}")
        batch = f"choreo::cp_async_commit({self.cp_async_groups})" if cp_async else "0"
        if not cp_async:
            self._fence_for_tensor_cores(destination)
        barrier = group.barrier()
        if not cp_async and barrier is not None and destination.storage != Storage.LOCAL:
            self.out.line(barrier)
        if stmt.result is not None:
            self._assign_future(stmt, destination, batch, group)

    def _copy_check_site(self, stmt: ast.OperationStmt, source: View, destination: View) -> int:
        def shape(view: View) -> str:
            return "[" + ", ".join(dim.text for dim in view.dims) + "]"

        failure = (
            f"a copy of shape {shape(source)} does not fit a destination of shape {shape(destination)}: "
            "the shapes must agree, and here they differ when the copy runs"
        )
        return self._site(stmt, "check", message=failure)

    def _fence_for_tensor_cores(self, destination: View) -> None:
        """A swizzled tile is read by WGMMA (or a TMA store), the async proxy: the threads' own writes
        of it must be fenced into that proxy before the barrier that hands it over."""
        if destination.swizzle:
            self.out.line("choreo::fence_proxy_async_shared();  // these writes are seen by the tensor cores")

    def _padding(self, items: tuple[ast.Expr | int, ...] | None) -> tuple[CExpr, ...]:
        """A dma.pad list (or the zeros of a copy into a larger tile)."""
        if items is None:
            return ()
        return tuple(
            cexpr.const(item) if isinstance(item, int) else self.expressions.integer(item) for item in items
        )

    def _fill_value(self, transfer: Transfer, source: View) -> CExpr:
        """What a padded copy writes around its source: dma.pad's value, 0 for a larger tile."""
        value = (
            self.expressions.operand(transfer.fill)
            if transfer.fill is not None
            else Operand(cexpr.ZERO, "s32")
        )
        return elements.convert(value.expr, value.type, source.elem)

    def _placeholder(self, stmt: ast.OperationStmt) -> None:
        assert stmt.result is not None
        symbol = self.expressions.symbol(stmt.result)
        info = symbol.future
        element = info.destination.elem if info is not None and info.destination is not None else "u8"
        existing = self.bindings.get(symbol)
        if symbol.declaration is stmt or not isinstance(existing, FutureValue) or existing.variable is None:
            name = self.names.local(symbol.name)
            rotated_tma = stmt.operation.family == "tma" and symbol in self.rotations.groups
            kind = "TmaFuture" if rotated_tma else "DataFuture"
            self.out.line(f"choreo::{kind}<{elements.c_type(element)}> {name} = {{}};  // no copy yet")
            self.bindings[symbol] = FutureValue(cexpr.name(name), None, element)
        else:
            self.out.line(f"{existing.variable.text} = {{}};")

    def _assign_future(self, stmt: ast.OperationStmt, destination: View, batch: str, group: Group) -> None:
        assert stmt.result is not None
        symbol = self.expressions.symbol(stmt.result)
        value = f"{{{destination.start.text}, {batch}}}"
        existing = self.bindings.get(symbol)
        if symbol.declaration is stmt or not isinstance(existing, FutureValue) or existing.variable is None:
            name = self.names.local(symbol.name)
            c_type = f"choreo::DataFuture<{elements.c_type(destination.elem)}>"
            self.out.line(f"{c_type} {name} = {value};")
        else:
            name = existing.variable.text
            self.out.line(f"{name} = {value};")
        data = replace(destination, pointer=cexpr.raw(f"{name}.data"), offset=cexpr.ZERO)
        if isinstance(existing, FutureValue) and existing.data is not None:
            data = existing.data
        self.bindings[symbol] = FutureValue(cexpr.name(name), data, destination.elem)
        self.future_groups[symbol] = group

    # ------------------------------------------------------------------ futures and events

    def _Wait(self, stmt: ast.Wait, tail: bool) -> None:
        self.out.source(stmt)
        for target in stmt.targets:
            symbol = self.info.symbol_of.get(id(target)) if isinstance(target, ast.Name) else None
            if symbol is not None and self.tma.waits(symbol):
                self.tma.wait(symbol, stmt)
            elif symbol is not None and self.mma.waits(symbol):
                self.mma.wait(symbol, stmt)
            elif symbol is not None and self.warp_mma.waits(symbol):
                self.out.line(
                    f"// '{symbol.name}' is complete: a warp's mma.sync finishes within its statement"
                )
            elif self._is_future(target):
                self._wait_future(target)
            else:
                self.events.wait(stmt, target, self.status, self.out)

    def _wait_future(self, target: ast.Expr) -> None:
        future = self.expressions.value(target)
        if not isinstance(future, FutureValue) or future.variable is None:
            raise LoweringError("'wait' on this future has no CUDA lowering", target)
        self.out.line(f"choreo::cp_async_wait({future.variable.text}.group, {self.cp_async_groups});")
        if future.data is not None:
            self._fence_for_tensor_cores(future.data)
        group = (
            self.future_groups.get(self.expressions.symbol(target)) if isinstance(target, ast.Name) else None
        )
        barrier = group.barrier() if group is not None else None
        if barrier is not None:
            self.out.line(f"{barrier}  // every thread's part of the copy has landed")

    def _is_future(self, target: ast.Expr) -> bool:
        symbol = self.info.symbol_of.get(id(target)) if isinstance(target, ast.Name) else None
        return symbol is not None and isinstance(symbol.value, Future)

    def _Trigger(self, stmt: ast.Trigger, tail: bool) -> None:
        self.out.source(stmt)
        if stmt.after:
            self.tma.trigger_after(stmt)
            return
        for target in stmt.targets:
            self.events.trigger(target, self.out, stmt.cluster)


def names_in(stmt: ast.Stmt) -> list[ast.Name]:
    found: list[ast.Name] = []
    pending: list[object] = [stmt]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name):
            found.append(node)
        if isinstance(node, ast.Node):
            for value in vars(node).values():
                if isinstance(value, ast.Node):
                    pending.append(value)
                elif isinstance(value, tuple):
                    pending.extend(value)
    return found


def _has_async_copy(stmt: ast.Stmt) -> bool:
    if isinstance(stmt, ast.OperationStmt):
        return stmt.operation.family == "dma" and stmt.operation.is_async
    return any(_has_async_copy(child) for child in ast.child_statements(stmt))
