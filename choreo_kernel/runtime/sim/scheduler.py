"""Cooperative scheduling of a block's paths, pending operations, and deadlock detection.

Each path (a block's main path and every `inthreads.async` path) is a generator that runs
until it yields a blocker: a wait that cannot pass yet.  The scheduler picks among the
runnable paths with a seeded random generator.  When every path is blocked it completes
one pending async operation, also chosen at random, since a completion may land the
arrivals that a path waits for; when nothing is left to complete, the block is deadlocked.
"""

from __future__ import annotations

import random
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Protocol

from choreo_kernel.compiler import ast
from choreo_kernel.runtime.sim.operations import Operation


class Blocker(Protocol):
    """Why a path cannot go on: it is asked again after every step of another path."""

    statement: ast.Stmt

    def ready(self) -> bool: ...

    def describe(self) -> str: ...


@dataclass(eq=False)
class Task:
    """One path of a block: its generator, what blocks it, and the generations it has observed."""

    name: str
    run: Generator[Blocker, None, Any] | None = None
    blocker: Blocker | None = None
    done: bool = False
    # plain waits: (event, slot) -> the generations this path has observed
    observed: dict[tuple[object, int], int] = field(default_factory=dict)


class Join:
    """The main path waits for the block's other paths: a block barrier, or the end of a parallel."""

    def __init__(self, statement: ast.Stmt, tasks: list[Task]) -> None:
        self.statement = statement
        self.tasks = tasks

    def ready(self) -> bool:
        return all(task.done for task in self.tasks)

    def describe(self) -> str:
        return "for these paths to finish: " + ", ".join(task.name for task in self.tasks if not task.done)


class Deadlock(Exception):
    """Every live path is blocked and no pending operation can unblock one."""

    def __init__(self, tasks: list[Task]) -> None:
        super().__init__("deadlock")
        self.tasks = tasks


class Scheduler:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.main: Task | None = None
        self.tasks: list[Task] = []
        self.pending: list[Operation] = []
        self.steps = 0  # how often a path has run: progress, for the blocks of a cooperative launch

    def spawn(self, task: Task) -> None:
        self.tasks.append(task)

    def issue(self, operation: Operation) -> None:
        self.pending.append(operation)

    def run(self, main: Task) -> None:
        """Run `main` and every path it spawns to the end; raise `Deadlock` when all are stuck."""
        self.start(main)
        if not self.advance():
            raise Deadlock(self.live())

    def start(self, main: Task) -> None:
        self.main = main
        self.spawn(main)

    def live(self) -> list[Task]:
        return [task for task in self.tasks if not task.done]

    def advance(self) -> bool:
        """Run the paths until all have finished (True), or until every live one is blocked and no pending
        operation is left to complete (False: a deadlock, unless another block can release one)."""
        while True:
            live = self.live()
            if not live:
                break
            runnable = [task for task in live if task.blocker is None or task.blocker.ready()]
            if runnable:
                self._step(runnable[self.rng.randrange(len(runnable))])
            elif not self._complete_one():
                return False
        while self._complete_one():  # what no path waited for still lands before the block ends
            pass
        return True

    def _step(self, task: Task) -> None:
        assert task.run is not None
        self.steps += 1
        task.blocker = None
        while True:
            try:
                blocker = next(task.run)
            except StopIteration:
                task.done = True
                return
            if not blocker.ready():
                task.blocker = blocker
                return

    def _complete_one(self) -> bool:
        self.pending = [operation for operation in self.pending if not operation.done]
        if not self.pending:
            return False
        self.pending.pop(self.rng.randrange(len(self.pending))).complete()
        return True
