"""How the threads of a block are numbered (language.md 4.1), and which of them run a statement.

Below the block level every thread has one index, laid out row-major over the parallel
variables (the first variable is the slowest).  A level's unit is the number of threads
in one of its instances: 128 for a warpgroup, the product of the inner counts for a block.
Statements written between levels run once per instance of the enclosing level, so the
sim runs them on one representative thread per instance; data movement and MMA run once
per instance of the level that language.md 12.2 names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.levels import inner_parallels
from choreo_kernel.compiler.analysis.resolve import FunctionInfo
from choreo_kernel.compiler.analysis.scope import THREADS_PER_UNIT, Context, Level

# Threads per instance of an innermost level with nothing nested in it.
LEAF_UNIT = {"block": 1, **THREADS_PER_UNIT}


class Structure:
    """Static facts about one function's parallel statements, gathered once per function."""

    def __init__(self, info: FunctionInfo) -> None:
        self.levels_of = info.levels_of
        self.owner: dict[int, tuple[ast.Parallel, int]] = {}  # id(clause) -> its parallel, its position
        self.nested: dict[int, ast.Parallel | None] = {}  # id(parallel) -> the first parallel inside it
        for stmt in ast.walk_statements(info.function.body):
            if isinstance(stmt, ast.Parallel):
                for position, clause in enumerate(stmt.clauses):
                    self.owner[id(clause)] = (stmt, position)
                self.nested[id(stmt)] = next(inner_parallels(stmt.body), None)

    def first_below_block(self, stmt: ast.Parallel) -> int:
        """The position of the first clause of `stmt` that is not a block level."""
        levels = self.levels_of[id(stmt)]
        return next((i for i, level in enumerate(levels) if level != "block"), len(levels))


@dataclass(frozen=True)
class Instances:
    """The instances of one level among some active threads."""

    lanes: np.ndarray  # a representative thread per instance (its first active one)
    groups: np.ndarray  # each instance's id: thread // unit
    of_lane: np.ndarray  # for each active thread, the position of its instance


def instances(lanes: np.ndarray, unit: int) -> Instances:
    groups = lanes // unit
    first = np.empty(len(lanes), dtype=bool)
    first[:1] = True
    np.not_equal(groups[1:], groups[:-1], out=first[1:])
    return Instances(lanes[first], groups[first], np.cumsum(first) - 1)


class Layout:
    """Sizes and thread indices of one block's parallel levels, with counts evaluated at run time."""

    def __init__(self, structure: Structure, counts: Callable[[ast.ParallelClause], list[int]]) -> None:
        self.structure = structure
        self.counts = counts
        self._sizes: dict[tuple[int, int], int] = {}

    def size(self, stmt: ast.Parallel, start: int) -> int:
        """Threads that clauses `start`.. of `stmt`, and the parallels nested inside it, make."""
        key = (id(stmt), start)
        if key not in self._sizes:
            total = self.inner(stmt)
            for clause in stmt.clauses[start:]:
                total *= math.prod(self.counts(clause))
            self._sizes[key] = total
        return self._sizes[key]

    def inner(self, stmt: ast.Parallel) -> int:
        """Threads in one instance of the innermost level of `stmt`."""
        nested = self.structure.nested[id(stmt)]
        if nested is not None:
            return self.size(nested, 0)
        return LEAF_UNIT[self.structure.levels_of[id(stmt)][-1]]

    def block_threads(self, stmt: ast.Parallel) -> int:
        """The block size of a kernel launched by `stmt`."""
        return self.size(stmt, self.structure.first_below_block(stmt))

    def variables(
        self, stmt: ast.Parallel, start: int, threads: int, stop: int | None = None
    ) -> list[tuple[str, np.ndarray, int]]:
        """(name, value per thread of the block, bound) for the variables of clauses start..stop."""
        local = np.arange(threads, dtype=np.int32) % self.block_threads(stmt)
        result = []
        for position in range(start, len(stmt.clauses) if stop is None else stop):
            clause = stmt.clauses[position]
            names = clause.variables.names if clause.variables else ()
            stride = self.size(stmt, position + 1)
            for index, count in reversed(list(enumerate(self.counts(clause)))):
                if index < len(names):
                    result.append((names[index].id, (local // stride) % count, count))
                stride *= count
        return result

    def unit(self, level: Level) -> int:
        """Threads per instance of a level that encloses a statement."""
        stmt, position = self.structure.owner[id(level.clause)]
        return self.size(stmt, position + 1)

    def body_unit(self, stmt: ast.Parallel) -> int:
        """Threads per execution of a statement in the body of `stmt`: 1 where each thread runs it,
        one instance of the innermost level where parallels nested in the body make the threads."""
        return self.inner(stmt) if self.structure.nested[id(stmt)] is not None else 1

    def execution_unit(self, context: Context, threads: int) -> int:
        """Threads per execution of a statement: 1 where each thread runs it, more between levels."""
        if not context.levels:
            return threads
        stmt, _ = self.structure.owner[id(context.levels[-1].clause)]
        return self.body_unit(stmt)

    def operation_unit(self, context: Context, family: str, threads: int) -> int:
        """Threads per instance of the level that runs a dma, tma or mma operation (12.2)."""
        levels = context.levels
        if not levels:
            return threads
        if family == "dma":
            return self.unit(levels[-1])
        if family == "mma":
            warpgroups = [level for level in levels if level.name == "group-4"]
            if warpgroups:
                return self.unit(warpgroups[-1])
        above_thread = [level for level in levels if level.name != "thread"]
        return self.unit(above_thread[-1]) if above_thread else threads
