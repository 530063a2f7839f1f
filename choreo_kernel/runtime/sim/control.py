"""Barriers, `yield`, `assert`, `print` and `while (event)` on the sim, as the GPU runs them.

- A named barrier (`__bar_sync(id, count)`, and a warpgroup's `sync.barrier : group-4`, which the
  CUDA lowering puts on barrier `1 + warpgroup`) counts whole warps, 32 threads for each warp with a
  thread at it, as `bar.sync` does; `__bar_sync` waits for the generation its arrival completes.
- `sync.barrier : block` is the block's barrier; in a `block<cooperative>` kernel it, and `: device`,
  wait for every block of the grid (the launch runs the blocks in turns, interpreter.py).
- `yield` takes its threads out of every statement after it in the kernel, outer levels included: a
  statement run once per instance by the instance's first thread (a block-level store or print) does
  not run once that thread has left, as on the GPU.
- `while (e)` holds while the generation a wait on `e` would wait for is pending; the loop gives the
  other paths their turn after each iteration, until an event it tests changes.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.semantics.levels import WARP_THREADS, WARPGROUP_THREADS
from choreo_kernel.compiler.semantics.printing import render
from choreo_kernel.runtime.sim.errors import SimError
from choreo_kernel.runtime.sim.events import EventArray, EventTarget
from choreo_kernel.runtime.sim.expressions import Evaluator, plain
from choreo_kernel.runtime.sim.frames import Frame
from choreo_kernel.runtime.sim.scheduler import Blocker
from choreo_kernel.runtime.sim.values import BoundedTuple, IntTuple


@dataclass
class BarrierState:
    """A hardware barrier of a block (named barrier `id`), or the grid barrier of a cooperative launch."""

    name: str  # for messages: "named barrier 1", "the grid barrier"
    expected: int
    arrived: int = 0
    generation: int = 0  # generations completed

    def arrive(self, count: int) -> int:
        """Count `count` arrivals in; the generation a waiter among them waits for."""
        total = self.arrived + count
        self.generation += total // self.expected
        self.arrived = total % self.expected
        return self.generation + (1 if self.arrived else 0)


class BarrierWait:
    """A path at a barrier, until the generation its arrival belongs to completes."""

    def __init__(self, statement: ast.Stmt, state: BarrierState, generation: int) -> None:
        self.statement = statement
        self.state = state
        self.generation = generation

    def ready(self) -> bool:
        return self.state.generation >= self.generation

    def describe(self) -> str:
        return f"at {self.state.name}: {self.state.arrived} of its {self.state.expected} arrivals are in"


class EventChange:
    """A `while (e)` loop between two tests: it goes on once an event it tests has changed."""

    def __init__(self, statement: ast.Stmt, events: list[EventArray]) -> None:
        self.statement = statement
        self.events = events
        self.seen = _snapshot(events)

    def ready(self) -> bool:
        return _snapshot(self.events) != self.seen

    def describe(self) -> str:
        names = ", ".join(f"'{event.name}'" for event in self.events)
        return f"in a loop while event {names} is pending"


def _snapshot(events: list[EventArray]) -> tuple[tuple[int, int], ...]:
    return tuple((slot.completed, slot.arrivals) for event in events for slot in event.slots)


def warps(lanes: np.ndarray) -> int:
    """The warps that the threads `lanes` belong to."""
    return len(np.unique(lanes // WARP_THREADS))


class ControlStatements:
    """The sim's barriers, fences, `yield`, `assert`, `print` and `while (event)`; mixed into the interpreter."""

    info: FunctionInfo
    evaluator: Evaluator

    # ------------------------------------------------------------------ barriers

    def _named_barrier(self, stmt: ast.NamedBarrier, frame: Frame) -> Generator[Blocker, None, None]:
        barrier = self.evaluator.uniform_int(stmt.barrier, frame)
        count = self.evaluator.uniform_int(stmt.count, frame)
        if not 0 <= barrier < 16 or count <= 0 or count % WARP_THREADS:
            raise SimError(f"named barrier {barrier} of {count} threads: ids are 0 to 15, counts whole warps")
        threads = self._executing(stmt, frame)
        name = f"named barrier {barrier}"
        yield from self._meet(stmt, frame, threads, ("named", barrier), name, count, stmt.waits)

    def _warpgroup_barrier(self, stmt: ast.Stmt, frame: Frame) -> Generator[Blocker, None, None]:
        """`sync.barrier : group-4`: each warpgroup meets on its own barrier, `1 + warpgroup` as on CUDA."""
        threads = self._executing(stmt, frame)
        for group in np.unique(threads // WARPGROUP_THREADS):
            mine = threads[threads // WARPGROUP_THREADS == group]
            key, name = ("named", 1 + int(group)), f"named barrier {1 + int(group)}"
            yield from self._meet(stmt, frame, mine, key, name, WARPGROUP_THREADS, True)

    def _executing(self, stmt: ast.Stmt, frame: Frame) -> np.ndarray:
        """The threads that run `stmt` on the GPU: where the sim runs it once per instance (between
        levels, as for block-level statements), all of the instance's threads."""
        launch = frame.block.launch
        unit = launch.execution_unit(self.info.context_of[id(stmt)]) if launch is not None else 1
        return (frame.lanes[:, None] + np.arange(unit)).ravel()

    def _meet(
        self,
        stmt: ast.Stmt,
        frame: Frame,
        threads: np.ndarray,
        key: object,
        name: str,
        expected: int,
        waits: bool,
    ) -> Generator[Blocker, None, None]:
        """`threads` arrive at a hardware barrier: as many arrivals as their warps have threads."""
        barriers = frame.block.barriers
        state = barriers.get(key)
        if state is None or (not state.arrived and state.expected != expected):
            state = barriers[key] = BarrierState(name, expected, generation=state.generation if state else 0)
        elif state.expected != expected:
            raise SimError(
                f"{name} is in use by {state.expected} threads, and this statement counts {expected}"
            )
        generation = state.arrive(WARP_THREADS * warps(threads))
        if waits:
            blocker = BarrierWait(stmt, state, generation)
            while not blocker.ready():
                yield blocker

    def _grid_barrier(self, stmt: ast.Stmt, frame: Frame) -> Generator[Blocker, None, None]:
        grid = frame.block.grid
        assert isinstance(grid, BarrierState)
        blocker = BarrierWait(stmt, grid, grid.arrive(1))  # one arrival per block
        while not blocker.ready():
            yield blocker

    # ------------------------------------------------------------------ yield, assert and print

    def _assert(self, stmt: ast.Assert, frame: Frame) -> None:
        holds = self.evaluator.truth(stmt.condition, frame)
        if not np.all(holds):
            raise SimError(f"assertion failed: {stmt.message}")

    def _print(self, stmt: ast.Print, frame: Frame) -> None:
        if stmt.compile_time:
            return  # printed when the source compiled
        pieces = self.info.print_formats[id(stmt)]
        values = [self._printed(arg, frame) for arg in stmt.args if not isinstance(arg, ast.StringLiteral)]
        for lane in range(len(frame.lanes)):  # each thread (or instance) prints once, in thread order
            flat: list[Any] = []
            for value in values:
                flat.extend(_at_lane(item, lane) for item in value)
            sys.stdout.write(render(pieces, flat, stmt.newline))

    def _printed(self, arg: ast.Expr, frame: Frame) -> list[Any]:
        value = self.evaluator.value(arg, frame)
        if isinstance(value, IntTuple | BoundedTuple):
            return [plain(item) for item in value.items]
        return [plain(value)]

    # ------------------------------------------------------------------ while (event)

    def event_condition(self, condition: ast.Expr) -> bool:
        return any(self.info.event_named(node) is not None for node in ast.walk_expr(condition))

    def _pending(self, expr: ast.Expr, frame: Frame) -> tuple[bool, list[EventArray]]:
        """Whether an event predicate holds (its generations are pending), and the events it tests."""
        if isinstance(expr, ast.Paren):
            return self._pending(expr.inner, frame)
        if isinstance(expr, ast.Unary) and expr.op == "!":
            holds, events = self._pending(expr.operand, frame)
            return not holds, events
        if isinstance(expr, ast.Binary) and expr.op in ("&&", "||"):
            left, left_events = self._pending(expr.left, frame)
            right, right_events = self._pending(expr.right, frame)
            holds = (left and right) if expr.op == "&&" else (left or right)
            return holds, left_events + right_events
        value = self.evaluator.raw(expr, frame)
        if isinstance(value, EventTarget):
            return self._slot_pending(value.event, value.slot, value.generation, frame), [value.event]
        if isinstance(value, EventArray):
            slots = range(len(value.slots))
            return any(self._slot_pending(value, slot, None, frame) for slot in slots), [value]
        raise SimError("a 'while' on events takes events, '!', '&&' and '||'")

    @staticmethod
    def _slot_pending(event: EventArray, slot: int, generation: int | None, frame: Frame) -> bool:
        if generation is None:  # the generation a plain wait of this path would wait for
            generation = frame.task.observed.get((event, slot), 0)
        return not event.passed(slot, generation)


def _at_lane(value: Any, lane: int) -> Any:
    return value[lane] if isinstance(value, np.ndarray) and value.ndim else value
