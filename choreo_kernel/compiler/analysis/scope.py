"""Lexical scopes and where each statement sits: levels, paths and loops."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.values import Dim, Symbol

LEVEL_RANK = {"cluster": -1, "block": 0, "group-4": 1, "group": 2, "thread": 3}
THREADS_PER_UNIT = {"group-4": 128, "group": 32, "thread": 1}


class Scope:
    """One block of declarations; lookups fall through to the enclosing scope."""

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.symbols: dict[str, Symbol] = {}

    def lookup(self, name: str) -> Symbol | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.symbols:
                return scope.symbols[name]
            scope = scope.parent
        return None

    def all_names(self) -> list[str]:
        names: list[str] = []
        scope: Scope | None = self
        while scope is not None:
            names.extend(scope.symbols)
            scope = scope.parent
        return names


@dataclass(frozen=True)
class Level:
    """One parallel level entered on the way to a statement."""

    name: str  # block, group-4, group, thread
    count: Dim
    clause: ast.ParallelClause


@dataclass(frozen=True)
class Context:
    """Where a statement sits: the parallel levels around it, its async path, its loops."""

    levels: tuple[Level, ...] = ()
    path: ast.InThreads | None = None
    in_inthreads: bool = False
    loops: tuple[ast.Stmt, ...] = field(default=())
    predicates: tuple[ast.Expr, ...] = ()  # the conditions of the enclosing inthreads

    @property
    def in_parallel(self) -> bool:
        return bool(self.levels)

    @property
    def level_names(self) -> tuple[str, ...]:
        return tuple(level.name for level in self.levels)

    @property
    def below_block(self) -> bool:
        """Inside a group-4, group or thread level: per-thread code."""
        return any(LEVEL_RANK[level.name] > 0 for level in self.levels)

    @property
    def in_block(self) -> bool:
        """Inside some block: a parallel without a block level runs in one implicit block (12.9)."""
        return bool(self.levels)

    def enter(self, **changes: object) -> Context:
        return replace(self, **changes)  # type: ignore[arg-type]
