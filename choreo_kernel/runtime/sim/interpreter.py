"""Statements: host code, kernel launches, blocks, levels, paths, loops, waits and triggers.

Every statement runs as a generator for all the threads of its frame at once, yielding a
blocker when it must wait, so that a block's paths can interleave under the scheduler.
A kernel launch runs its blocks one after the other, each with its own shared buffers,
events and scheduler.  An `inthreads.async` path is a task of its own; as there is no
re-join, its threads go on with the statements that follow it in the same block of
statements when their path ends, while the other threads go on at once.  `break` and
`continue` taken by some threads leave the statement as a `Leaving` that the enclosing
statements and loop apply to their threads.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.device_checks import SIM_ASM
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.diagnostics import ERROR, ChoreoError, Diagnostic, Note
from choreo_kernel.compiler.printer import expression
from choreo_kernel.compiler.semantics.arrivals import event_arrivals, trigger_sites
from choreo_kernel.compiler.semantics.evaluate import HostValue, NotEvaluable
from choreo_kernel.compiler.semantics.launch import KernelLaunch, check_block_threads
from choreo_kernel.compiler.semantics.levels import Level, Storage
from choreo_kernel.runtime.dtypes import numpy_dtype
from choreo_kernel.runtime.sim import arith
from choreo_kernel.runtime.sim.clusters import ClusterGrid
from choreo_kernel.runtime.sim.control import BarrierState, ControlStatements, EventChange
from choreo_kernel.runtime.sim.device_library import DeviceLibrary
from choreo_kernel.runtime.sim.errors import SimError
from choreo_kernel.runtime.sim.events import EventArray, EventTarget, EventWait, Need
from choreo_kernel.runtime.sim.expressions import Evaluator, plain
from choreo_kernel.runtime.sim.fragments import Fragments
from choreo_kernel.runtime.sim.frames import Block, Frame, PerThread, Scope, per_thread_buffer, read
from choreo_kernel.runtime.sim.instances import instances
from choreo_kernel.runtime.sim.issue import Issuer, futures
from choreo_kernel.runtime.sim.limits import MAX_BYTES, MAX_STEPS, gigabytes, index_space
from choreo_kernel.runtime.sim.operations import FutureWait, Operation
from choreo_kernel.runtime.sim.scheduler import Blocker, Deadlock, Join, Scheduler, Task
from choreo_kernel.runtime.sim.values import Buffer, IntTuple, TupleOf
from choreo_kernel.runtime.sim.views import Bounded

ONE_THREAD = np.zeros(1, dtype=np.intp)


@dataclass(frozen=True)
class Leaving:
    """Threads that left the statements around them with `break` or `continue`, or the kernel with `yield`."""

    broken: np.ndarray
    continued: np.ndarray
    exited: np.ndarray = field(default_factory=lambda: ONE_THREAD[:0])  # by `yield`: out of the kernel

    @property
    def lanes(self) -> np.ndarray:
        return np.union1d(np.union1d(self.broken, self.continued), self.exited)

    def merge(self, other: Leaving | None) -> Leaving:
        if other is None:
            return self
        return Leaving(
            np.union1d(self.broken, other.broken),
            np.union1d(self.continued, other.continued),
            np.union1d(self.exited, other.exited),
        )

    def out_of_loop(self) -> Leaving | None:
        """What leaves the loop around it: the threads that yielded."""
        return Leaving(self.exited[:0], self.exited[:0], self.exited) if self.exited.size else None


Run = Generator[Blocker, None, Leaving | None]


class Returned(Exception):
    """`return` at host level: unwinds the host statements with the returned value."""

    def __init__(self, value: Any) -> None:
        super().__init__("return")
        self.value = value


class Interpreter(ControlStatements):
    """Runs one function: its host statements, its launches and their blocks.

    Built once per function; each call brings its own scope and seed, so nothing of one
    call outlives it here.
    """

    def __init__(
        self, info: FunctionInfo, source: str, filename: str, device: DeviceLibrary | None = None
    ) -> None:
        self.info = info
        self.launches = info.launches
        self.source = source
        self.filename = filename
        self.evaluator = Evaluator(device, info.ceil_chunks)
        self.issuer = Issuer(info, self.evaluator)
        self.fragments = Fragments(info, self.evaluator)
        self.sites = trigger_sites(info.function.body, info.event_named)
        self._simple: dict[type, Callable[[Any, Frame], Leaving | None]] = {
            kind: getattr(self, name) for kind, name in self.SIMPLE.items()
        }
        self._compound: dict[type, Callable[[Any, Frame], Run]] = {
            kind: getattr(self, name) for kind, name in self.COMPOUND.items()
        }

    # Each kind of statement and the method that runs it: a simple one returns at once, a compound one
    # is a generator that yields while it waits (tests/test_passes.py checks that every kind is here).
    SIMPLE: ClassVar[dict[type[ast.Stmt], str]] = {
        ast.BufferDecl: "_buffer_decl",
        ast.AccumulatorArrayDecl: "_accumulator_array_decl",
        ast.ScalarDecl: "_scalar_decl",
        ast.EventDecl: "_event_decl",
        ast.ShapeDecl: "_shape_decl",
        ast.TupleDecl: "_shape_decl",
        ast.Assign: "_assign",
        ast.ExprStmt: "_expr_stmt",
        ast.FragmentOp: "_fragment_op",
        ast.OperationStmt: "_operation",
        ast.Trigger: "_trigger",
        ast.Return: "_return",
        ast.Break: "_break",
        ast.Continue: "_break",
        ast.Empty: "_empty",
        ast.Asm: "_asm",
        ast.Fence: "_empty",  # the sim's memory is sequentially consistent
        ast.Yield: "_yield",
        ast.Assert: "_assert",
        ast.Print: "_print",
    }
    COMPOUND: ClassVar[dict[type[ast.Stmt], str]] = {
        ast.Block: "_body",
        ast.Parallel: "_parallel",
        ast.Foreach: "_foreach",
        ast.Apply: "_apply",
        ast.ForeachRange: "_foreach_range",
        ast.With: "_with",
        ast.If: "_if",
        ast.While: "_while",
        ast.InThreads: "_inthreads",
        ast.Wait: "_wait",
        ast.Sync: "_join",
        ast.Unsupported: "_unsupported",
        ast.Barrier: "_barrier",
        ast.NamedBarrier: "_named_barrier",
    }

    # ------------------------------------------------------------------ host

    def run_host(self, scope: Scope, seed: int) -> Any:
        """Run the function body at host level; the returned value, or None."""
        self.steps = 0
        frame = self._open("host code", scope, Task("the host code"), random.Random(seed))
        try:
            self._run(frame, self._body(self.info.function.body, frame))
        except Returned as returned:
            return returned.value
        return None

    def _open(self, label: str, scope: Scope, main: Task, rng: random.Random) -> Frame:
        """The first frame of a block (or of the host code)."""
        return Frame(scope, ONE_THREAD, main, Block(label, 1, Scheduler(rng), None))

    def _bind_launch(self, kernel: ast.Parallel, frame: Frame) -> KernelLaunch:
        """The kernel's launch model; where its thread counts are symbolic, bound with the values this
        block sees (evaluated in its first frame)."""
        launch = self.launches.launch(kernel)
        if launch.is_static:
            return launch
        bound = self.launches.bind(kernel, lambda clause: tuple(self.evaluator.extents(clause.count, frame)))
        problem = check_block_threads(bound.threads, kernel)
        if problem is not None:  # as the GPU refuses it
            raise SimError(problem)
        return bound

    def _run(self, frame: Frame, body: Run) -> None:
        """Run `body` as the main path of `frame`'s block, with every path it spawns."""
        frame.task.run = body
        try:
            frame.block.scheduler.run(frame.task)
        except Deadlock as deadlock:
            raise self._deadlock(frame.block, deadlock.tasks) from None

    # ------------------------------------------------------------ statements

    def execute(self, stmt: ast.Stmt, frame: Frame) -> Run:
        with self._located(stmt, frame):
            simple = self._simple.get(type(stmt))
            if simple is not None:
                return simple(stmt, frame)
            return (yield from self._compound[type(stmt)](stmt, frame))

    @contextmanager
    def _located(self, stmt: ast.Stmt, frame: Frame) -> Iterator[None]:
        """Run-time errors raised while `stmt` runs, as diagnostics at `stmt`."""
        try:
            yield
        except SimError as error:
            raise self._error(str(error), stmt, frame) from None
        except (IndexError, ValueError, TypeError) as error:  # NumPy refused: still point at the line
            raise self._error(f"the sim cannot run this statement ({error})", stmt, frame) from error

    def _statements(self, statements: Sequence[ast.Stmt], frame: Frame) -> Run:
        leaving: Leaving | None = None
        for index, stmt in enumerate(statements):
            if isinstance(stmt, ast.InThreads) and stmt.is_async:
                # No re-join: the path's threads go on with the statements after it once their path ends.
                with self._located(stmt, frame):
                    taken = self._spawn(stmt, frame, statements[index + 1 :])
                remaining = np.setdiff1d(frame.lanes, taken, assume_unique=True)
                if not remaining.size:
                    break
                frame = frame.narrow(remaining)
                continue
            result = yield from self.execute(stmt, frame)
            if result is not None:
                leaving = result.merge(leaving)
                remaining = np.setdiff1d(frame.lanes, result.lanes, assume_unique=True)
                if not remaining.size:
                    break
                frame = frame.narrow(remaining)
        return leaving

    def _body(self, stmt: ast.Stmt, frame: Frame) -> Run:
        inner = frame.enter()
        if isinstance(stmt, ast.Block):
            return (yield from self._statements(stmt.body, inner))
        return (yield from self.execute(stmt, inner))

    def _operation(self, stmt: ast.OperationStmt, frame: Frame) -> None:
        self.issuer.run(stmt, frame)

    @staticmethod
    def _empty(stmt: ast.Empty, frame: Frame) -> None:
        return None

    @staticmethod
    def _asm(stmt: ast.Asm, frame: Frame) -> None:
        raise SimError(SIM_ASM)

    def _unsupported(self, stmt: ast.Unsupported, frame: Frame) -> Run:
        if stmt.inner is None:
            return None
        return (yield from self.execute(stmt.inner, frame))

    def _step(self, coming: int = 0) -> None:
        """One more loop iteration or block; the sim stops a call that would run for hours, and stops at
        once a loop or a grid that says it has `coming` more."""
        self.steps += 1
        if self.steps + coming > MAX_STEPS:
            raise SimError(
                f"this call runs more than {MAX_STEPS:,} loop iterations and blocks on the sim "
                "(CHOREO_SIM_MAX_STEPS), which would take too long on the CPU: run it on the cuda target, "
                "or with smaller sizes"
            )

    # ---- declarations and assignments

    def _buffer_decl(self, stmt: ast.BufferDecl, frame: Frame) -> None:
        if stmt.storage == "frag":
            self.fragments.declare(stmt, frame)
            return
        per_thread = self.info.storage_of[id(stmt)] == Storage.LOCAL
        slots = self.evaluator.ints(stmt.array_dims, frame)
        shape = [frame.block.threads] * per_thread + slots + self.evaluator.ints(stmt.shape, frame)
        dtype = numpy_dtype(stmt.elem_type)
        needed = math.prod(shape) * dtype.itemsize
        if needed > MAX_BYTES:
            raise SimError(
                f"buffer '{stmt.name}' would take {gigabytes(needed)} on the sim, more than its {gigabytes(MAX_BYTES)} "
                "(CHOREO_SIM_MAX_BYTES): run it on the cuda target, or with smaller sizes"
            )
        base = np.full(shape, arith.poison_of(dtype), dtype=dtype)
        if stmt.init:
            values = [arith.stored(plain(self.evaluator.value(item, frame)), dtype) for item in stmt.init]
            if len(values) == 1:
                base[...] = values[0]
            else:  # C aggregate initialization: the listed elements, then zeros
                flat = np.zeros(int(np.prod(shape[per_thread:])), dtype=dtype)
                flat[: len(values)] = values
                base[...] = flat.reshape(shape[per_thread:])
        frame.store(stmt.name, Buffer(base, len(slots), per_thread), frame.scope)

    def _accumulator_array_decl(self, stmt: ast.AccumulatorArrayDecl, frame: Frame) -> None:
        frame.store(stmt.name, self.issuer.accumulator_array(stmt, frame), frame.scope)

    def _scalar_decl(self, stmt: ast.ScalarDecl, frame: Frame) -> None:
        value = self.evaluator.value(stmt.init, frame) if stmt.init is not None else 0
        if stmt.type_name is not None:
            frame.scope.types[stmt.name] = stmt.type_name
        frame.store(stmt.name, value, frame.scope)

    def _event_decl(self, stmt: ast.EventDecl, frame: Frame) -> None:
        dims = tuple(self.evaluator.ints(stmt.dims, frame))
        expected = self._arrivals(stmt, frame)
        if expected is None:
            raise SimError(
                f"the arrival count of event '{stmt.name}' cannot be derived where it is declared; "
                f"state it in the declaration: 'event<N> {stmt.name}'"
            )

        def make() -> EventArray:
            return EventArray(stmt.name, dims, stmt.ready, expected, stmt)

        cluster = frame.block.cluster
        event = cluster.declare(stmt, frame.block.rank, make) if cluster is not None else make()
        frame.store(stmt.name, event, frame.scope)

    def _arrivals(self, stmt: ast.EventDecl, frame: Frame) -> int | None:
        """The event's arrivals per generation: the analysis's where it knows them, else derived with
        the values this block sees (a predicate on a scalar parameter, symbolic thread counts)."""
        symbol = self.info.declared(stmt, stmt.name)
        if symbol is None or symbol not in self.sites:  # never triggered
            return stmt.arrival_count or 0
        known = self.info.arrivals.get(symbol)
        if known is not None and known.count is not None:
            return known.count
        launch = frame.block.launch
        assert launch is not None

        def lookup(name: ast.Name) -> HostValue:
            owner = frame.scope.find(name.id)
            value = owner.names[name.id] if owner is not None else None
            if value is None or isinstance(value, PerThread):
                raise NotEvaluable(name)
            return plain(value)

        return event_arrivals(symbol, self.sites[symbol], self.info.context_of, launch, lookup).count

    def _shape_decl(self, stmt: ast.ShapeDecl | ast.TupleDecl, frame: Frame) -> None:
        if isinstance(stmt.value, ast.Index) and id(stmt.value) in self.info.spans_derived:
            value: Any = self.evaluator.derived_from_span(stmt.value, frame)
        else:
            value = self.evaluator.value(stmt.value, frame)
        if not isinstance(value, IntTuple):
            raise SimError(f"'{stmt.name}' needs a shape or a tuple")
        frame.store(stmt.name, value, frame.scope)

    def _assign(self, stmt: ast.Assign, frame: Frame) -> None:
        if id(stmt) in self.info.register_updates:
            self.fragments.update(stmt, frame)
            return
        value = self.evaluator.value(stmt.value, frame)
        target = stmt.target
        operator = stmt.op[:-1]
        if isinstance(target, ast.Name):
            scope = frame.scope.find(target.id)
            if operator:
                value = arith.binary(operator, plain(self.evaluator.value(target, frame)), plain(value))
            frame.store(target.id, value, scope or frame.scope)
            return
        element = self.evaluator.element(target, frame)
        if operator:
            value = arith.binary(operator, element.load(), plain(value))
        element.store(plain(value))
        if frame.span > 1:  # between levels: each thread of the instance stores into its own local copy
            local = per_thread_buffer(target, frame)
            if local is not None:
                local.share_store(element.index, frame.span)

    def _expr_stmt(self, stmt: ast.ExprStmt, frame: Frame) -> None:
        expr = stmt.expr
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.callee, ast.Name)
            and expr.callee.id in ("swap", "rotate")
        ):
            self._rotate(expr.args, frame)
        else:
            self.evaluator.value(expr, frame)

    @staticmethod
    def _rotate(args: tuple[ast.Expr, ...], frame: Frame) -> None:
        """`swap(a, b)` / `rotate(a, b, c)`: each future variable takes the next one's future."""
        names = [arg.id for arg in args if isinstance(arg, ast.Name)]
        if len(names) != len(args):
            raise SimError("swap and rotate take future variables")
        scopes = [frame.scope.owner(name) for name in names]
        stored = [scope.names[name] for scope, name in zip(scopes, names)]
        for scope, name, value in zip(scopes, names, stored[1:] + stored[:1]):
            scope.names[name] = value

    def _return(self, stmt: ast.Return, frame: Frame) -> None:
        if stmt.value is None:
            raise Returned(None)
        value = self.evaluator.value(stmt.value, frame)
        if isinstance(value, (bool, int, float, np.generic)):
            raise Returned(value)
        if isinstance(value, Buffer) and not value.slots:
            raise Returned(value.base)  # the buffer itself: a returned global parameter is the caller's array
        raise Returned(self.evaluator.as_view(value, frame).read())

    # ---- parallelism

    def _parallel(self, stmt: ast.Parallel, frame: Frame) -> Run:
        context = self.info.context_of[id(stmt)]
        if not context.levels:
            self._launch(stmt, frame)
            return None
        leaving = yield from self._threads(stmt, 0, frame)
        if all(scope.level == Level.BLOCK for scope in context.levels):
            yield from self._join(stmt, frame)  # back at block level: the threads meet again
        return leaving

    def _launch(self, outer: ast.Parallel, frame: Frame) -> None:
        """A kernel launch: every block instance, one after the other (a cluster's blocks together)."""
        stmt = self.launches.structure.kernel_at(outer)
        assert stmt is not None
        first = self.launches.structure.first_below_block(stmt)
        axes: list[tuple[str | None, int]] = []
        for clause in stmt.clauses[:first]:
            names = clause.variables.names if clause.variables else ()
            for position, count in enumerate(self.evaluator.extents(clause.count, frame)):
                axes.append((names[position].id if position < len(names) else None, count))
        blocks = math.prod(count for _, count in axes)
        self._step(blocks)
        cooperative = stmt.clauses[0].cooperative and self.info.levels_of[id(stmt)][0] == Level.BLOCK
        grid = BarrierState(f"the grid barrier (line {stmt.span.line})", blocks) if cooperative else None
        clusters = ClusterGrid(self.launches.launch(stmt).cluster, outer, [count for _, count in axes])
        together: list[Frame] = []  # a cooperative launch's blocks, which run in turns
        for index in index_space([range(count) for _, count in axes]):
            self._step()
            scope = Scope(frame.scope, ONE_THREAD)
            for (name, count), value in zip(axes, index):
                if name is not None:
                    scope.names[name] = Bounded(value, count)
            self._bind_groups(stmt.clauses[:first], scope)
            label = f"block ({', '.join(map(str, index))})" if index else "its only block"
            start = self._open(label, scope, Task("the block's main path"), frame.block.scheduler.rng)
            start.block.place(index, tuple(count for _, count in axes))
            start.block.launch = self._bind_launch(stmt, start)
            start.block.threads = start.block.launch.threads
            start = replace(start, span=start.block.threads)  # block-level code: once for the whole block
            if clusters.shape is not None:
                clusters.place(start, index)
                continue
            if grid is None:
                self._run(start, self._block_body(stmt, first, start))
                continue
            start.block.grid = grid
            start.task.run = self._block_body(stmt, first, start)
            start.block.scheduler.start(start.task)
            together.append(start)
        self._run_together(together)
        for members in clusters.members():
            for member in members:
                member.task.run = self._block_body(stmt, first, member)
                member.block.scheduler.start(member.task)
            self._run_together(members)

    def _run_together(self, frames: list[Frame]) -> None:
        """The blocks of a cooperative launch, in turns: each runs until it is done or blocked, which
        another block may release (at the grid barrier); a round in which none moves is a deadlock."""
        waiting = frames
        while waiting:
            steps = [frame.block.scheduler.steps for frame in waiting]
            remaining = [frame for frame in waiting if not frame.block.scheduler.advance()]
            moved = any(frame.block.scheduler.steps != before for frame, before in zip(waiting, steps))
            if remaining and not moved:
                stuck = remaining[0].block
                raise self._deadlock(stuck, stuck.scheduler.live())
            waiting = remaining

    def _block_body(self, stmt: ast.Parallel, first: int, frame: Frame) -> Run:
        if first < len(stmt.clauses):
            yield from self._threads(stmt, first, frame)
        else:
            yield from self._body(stmt.body, frame)
        yield from self._join(stmt, frame)
        return None

    def _threads(self, stmt: ast.Parallel, start: int, frame: Frame) -> Run:
        """Enter the levels of clauses `start`.. of `stmt` from one thread per enclosing instance."""
        launch = frame.block.launch
        assert launch is not None
        unit = launch.size(stmt, start)
        lanes = (frame.lanes[:, None] + np.arange(unit)).ravel()
        step = launch.body_unit(stmt)
        if step > 1:  # statements between levels: once per instance
            lanes = lanes[lanes % step == 0]
        inner = replace(frame.enter(lanes), span=step)
        threads = np.arange(frame.block.threads, dtype=np.int32)
        for variable in launch.variables(stmt, start):
            if variable.name:
                values = (threads // variable.stride) % variable.extent
                inner.scope.names[variable.name] = PerThread(values, variable.extent)
        self._bind_groups(stmt.clauses[start:], inner.scope)
        leaving = yield from self._body(stmt.body, inner)
        return leaving.out_of_loop() if leaving is not None else None  # threads that yielded stay out

    @staticmethod
    def _bind_groups(clauses: Sequence[ast.ParallelClause], scope: Scope) -> None:
        """`q = {q0, q1} by [2, 2]`: `q` is the bounded ituple of its variables."""
        for clause in clauses:
            variables = clause.variables
            if variables is not None and variables.group is not None:
                scope.names[variables.group.id] = TupleOf(tuple(name.id for name in variables.names))

    def _inthreads(self, stmt: ast.InThreads, frame: Frame) -> Run:
        if stmt.is_async:  # alone as a body: nothing follows it there
            self._spawn(stmt, frame, ())
            return None
        lanes = self.evaluator.selected(stmt.condition, frame)
        if not lanes.size:
            return None
        return (yield from self._body(stmt.body, frame.narrow(lanes)))

    def _spawn(self, stmt: ast.InThreads, frame: Frame, rest: Sequence[ast.Stmt]) -> np.ndarray:
        """Start an `inthreads.async` path for its threads, which then run `rest`; the threads it took."""
        lanes = self.evaluator.selected(stmt.condition, frame)
        if lanes.size:
            path = Task(f"path 'inthreads.async ({expression(stmt.condition)})' (line {stmt.span.line})")
            path.run = self._path(stmt.body, rest, replace(frame, lanes=lanes, task=path))
            frame.block.scheduler.spawn(path)
        return lanes

    def _path(self, body: ast.Stmt, rest: Sequence[ast.Stmt], frame: Frame) -> Run:
        yield from self._body(body, frame)
        yield from self._statements(rest, frame)
        return None

    def _join(self, stmt: ast.Stmt, frame: Frame) -> Run:
        """The block's main path waits for every other path (`sync.shared`, the end of a parallel or block)."""
        scheduler = frame.block.scheduler
        if frame.task is not scheduler.main:
            return None  # a path runs in lockstep: a barrier among its own threads is already met
        blocker = Join(stmt, [task for task in scheduler.tasks if task is not frame.task and not task.done])
        while not blocker.ready():
            yield blocker
        return None

    # ---- control flow

    def _loop(self, body: ast.Stmt, frame: Frame, iterations: Iterable[dict[str, Any]]) -> Run:
        lanes = frame.lanes
        left: Leaving | None = None
        for bindings in iterations:
            self._step()
            inner = frame.enter(lanes)
            inner.scope.names.update(bindings)
            leaving = yield from self._body(body, inner)
            if leaving is not None and (leaving.broken.size or leaving.exited.size):
                lanes = np.setdiff1d(lanes, np.union1d(leaving.broken, leaving.exited), assume_unique=True)
                left = leaving.merge(left)
                if not lanes.size:
                    break
        return left.out_of_loop() if left is not None else None

    def _apply(self, stmt: ast.Apply, frame: Frame) -> Run:
        self._step()
        return (yield from self.fragments.apply(stmt, frame, self._body))

    def _fragment_op(self, stmt: ast.FragmentOp, frame: Frame) -> None:
        self.fragments.operation(stmt, frame)

    def _foreach(self, stmt: ast.Foreach, frame: Frame) -> Run:
        bounds = self.evaluator.extents(stmt.extent, frame)
        self._step(math.prod(bounds))
        names = self._element_names(stmt.variables, len(bounds))
        group = self._tuple_name(stmt.variables)
        iterations = (
            {
                **{name: Bounded(value, bound) for name, value, bound in zip(names, values, bounds)},
                **({group: TupleOf(tuple(names))} if group is not None else {}),
            }
            for values in index_space([range(bound) for bound in bounds])
        )
        return (yield from self._loop(stmt.body, frame, iterations))

    def _foreach_range(self, stmt: ast.ForeachRange, frame: Frame) -> Run:
        """`foreach j(1:-1:2)`: a slice of a with-variable's range, with Python slice rules (12.8)."""
        ranges = []
        for item in stmt.items:
            stored = frame.scope.owner(item.name.id).names[item.name.id]
            if isinstance(stored, TupleOf):  # a bounded ituple: every element, outermost first
                for element in stored.elements:
                    bound = read(frame.scope.owner(element).names[element], frame.lanes).bound
                    ranges.append((element, bound, range(bound)))
                continue
            variable = self.evaluator.value(item.name, frame)
            if not isinstance(variable, Bounded):
                raise SimError(f"'foreach {item.name.id}' iterates a with-variable")
            parts = [
                None if part is None else self.evaluator.uniform_int(part, frame)
                for part in (item.start, item.stop, item.step)
            ]
            ranges.append((item.name.id, variable.bound, range(variable.bound)[slice(*parts)]))
        iterations = (
            {name: Bounded(value, bound) for (name, bound, _), value in zip(ranges, values)}
            for values in index_space([values for _, _, values in ranges])
        )
        return (yield from self._loop(stmt.body, frame, iterations))

    def _with(self, stmt: ast.With, frame: Frame) -> Run:
        inner = frame.enter()
        for binding in stmt.bindings:
            bounds = self.evaluator.extents(binding.extent, frame)
            names = self._element_names(binding.variables, len(bounds))
            for name, bound in zip(names, bounds):
                inner.scope.names[name] = Bounded(0, bound)  # 0 outside a foreach over it (12.8)
            group = self._tuple_name(binding.variables)
            if group is not None:
                inner.scope.names[group] = TupleOf(tuple(names))
        return (yield from self._body(stmt.body, inner))

    def _element_names(self, variables: ast.BoundVars, count: int) -> list[str]:
        """The scope names of the `count` elements `variables` bind (made up for anonymous elements, which
        no source name can reach)."""
        if id(variables) in self.info.anonymous_tuples:
            return [f"{variables.names[0].id}#{position}" for position in range(count)]
        return [name.id for name in variables.names[:count]]

    def _tuple_name(self, variables: ast.BoundVars) -> str | None:
        """The name of the bounded ituple `variables` bind, if any: the group, or a lone name over several bounds."""
        if id(variables) in self.info.anonymous_tuples:
            return variables.names[0].id
        return variables.group.id if variables.group is not None else None

    def _if(self, stmt: ast.If, frame: Frame) -> Run:
        condition = self.evaluator.truth(stmt.condition, frame)
        if not isinstance(condition, np.ndarray):
            branch = stmt.then if condition else stmt.otherwise
            return None if branch is None else (yield from self._body(branch, frame))
        leaving: Leaving | None = None
        for mask, branch in ((condition, stmt.then), (~condition, stmt.otherwise)):
            if branch is not None and mask.any():
                result = yield from self._body(branch, frame.narrow(frame.lanes[mask]))
                leaving = result.merge(leaving) if result is not None else leaving
        return leaving

    def _while(self, stmt: ast.While, frame: Frame) -> Run:
        lanes = frame.lanes
        left: Leaving | None = None
        events = self.event_condition(stmt.condition)
        while lanes.size:
            if events:  # `while (e)`: the same for every thread of the path
                condition, tested = self._pending(stmt.condition, frame.narrow(lanes))
                change = EventChange(stmt, tested)
            else:
                condition = self.evaluator.truth(stmt.condition, frame.narrow(lanes))
            if isinstance(condition, np.ndarray):
                lanes = lanes[condition]
            elif not condition:
                break
            if not lanes.size:
                break
            self._step()
            leaving = yield from self._body(stmt.body, frame.narrow(lanes))
            if leaving is not None and (leaving.broken.size or leaving.exited.size):
                lanes = np.setdiff1d(lanes, np.union1d(leaving.broken, leaving.exited), assume_unique=True)
                left = leaving.merge(left)
            while events and lanes.size and not change.ready():  # the others' turn, until an event changes
                yield change
        return left.out_of_loop() if left is not None else None

    @staticmethod
    def _break(stmt: ast.Break | ast.Continue, frame: Frame) -> Leaving:
        none = frame.lanes[:0]
        if isinstance(stmt, ast.Break):
            return Leaving(frame.lanes, none)
        return Leaving(none, frame.lanes)

    @staticmethod
    def _yield(stmt: ast.Yield, frame: Frame) -> Leaving:
        none = frame.lanes[:0]
        return Leaving(none, none, frame.lanes)

    def _barrier(self, stmt: ast.Barrier, frame: Frame) -> Run:
        if stmt.level in ("block", "device") and frame.block.grid is not None:
            yield from self._grid_barrier(stmt, frame)
        elif stmt.level == "block":
            yield from self._join(stmt, frame)
        elif stmt.level == "group-4":
            yield from self._warpgroup_barrier(stmt, frame)
        return None  # a warp's threads run in lockstep on the sim: they are together already

    # ---- events and futures

    def _wait(self, stmt: ast.Wait, frame: Frame) -> Run:
        needs: list[Need] = []
        plain_waits: list[tuple[object, int]] = []
        operations: list[Operation] = []
        for target in stmt.targets:
            value = self.evaluator.raw(target, frame)
            if isinstance(value, (EventArray, EventTarget)):
                event_target = _event_target(value)
                generation = event_target.generation
                if generation is None:  # a plain wait: the next generation this path has not observed
                    key = (event_target.event, event_target.slot)
                    generation = frame.task.observed.get(key, 0)
                    plain_waits.append(key)
                needs.append(Need(event_target.event, event_target.slot, generation))
            else:
                operations.extend(futures(value))
        for blocker in (FutureWait(stmt, operations), EventWait(stmt, needs)):
            while not blocker.ready():
                yield blocker
        for observed in plain_waits:
            frame.task.observed[observed] = frame.task.observed.get(observed, 0) + 1
        return None

    def _trigger(self, stmt: ast.Trigger, frame: Frame) -> None:
        targets = [_event_target(self.evaluator.raw(target, frame)) for target in stmt.targets]
        if not stmt.after:  # one arrival per thread that runs it (language.md 8)
            cluster = frame.block.cluster if stmt.cluster else None
            for target in targets:
                events = (
                    cluster.peers(target.event, frame.block.rank) if cluster is not None else [target.event]
                )
                for event in events:  # `trigger.cluster`: on the event of every block of the cluster
                    event.arrive(target.slot, len(frame.lanes))
            return
        unit = frame.block.issuing_unit(self.info.context_of[id(stmt)], "tma")
        count = len(instances(frame.lanes, unit).lanes)
        bound = [operation for item in stmt.after for operation in futures(self.evaluator.value(item, frame))]
        for target in targets:
            _arrive_after(target, bound, count)

    # ---- errors

    def _error(self, message: str, stmt: ast.Stmt, frame: Frame) -> ChoreoError:
        where = f"in '{self.info.function.name}', {frame.block.label}"
        diagnostic = Diagnostic(ERROR, f"run-time error {where}: {message}", stmt.span)
        return ChoreoError([diagnostic], self.source, self.filename)

    def _deadlock(self, block: Block, tasks: list[Task]) -> ChoreoError:
        """Every path is blocked: name each one, the line it waits at and what it needs."""
        notes = []
        tasks = sorted(tasks, key=lambda task: (isinstance(task.blocker, Join), _line(task)))
        for task in tasks:
            assert task.blocker is not None
            span = task.blocker.statement.span
            notes.append(Note(f"{task.name} waits at line {span.line} {task.blocker.describe()}", span))
        message = (
            f"deadlock in '{self.info.function.name}', {block.label}: every path is blocked and no "
            "pending operation can release one"
        )
        first = tasks[0].blocker
        assert first is not None
        return ChoreoError(
            [Diagnostic(ERROR, message, first.statement.span, tuple(notes))], self.source, self.filename
        )


def _line(task: Task) -> int:
    return task.blocker.statement.span.line if task.blocker is not None else 0


def _event_target(value: Any) -> EventTarget:
    if isinstance(value, EventTarget):
        return value
    if isinstance(value, EventArray):
        if value.dims:
            raise SimError(
                f"'{value.name}' is an event array: name one event, '{value.name}[i]' or '{value.name}.at(order)'"
            )
        return EventTarget(value, 0, None)
    raise SimError("expected an event")


def _arrive_after(target: EventTarget, operations: list[Operation], count: int) -> None:
    """`trigger E after F...`: `count` arrivals land on E once every bound operation has completed."""
    remaining = [len(operations)]

    def landed() -> None:
        remaining[0] -= 1
        if remaining[0] == 0:
            target.event.arrive(target.slot, count)

    for operation in operations:
        operation.when_done(landed)
