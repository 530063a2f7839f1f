"""Lexical scopes and where each statement sits: levels, paths and loops."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.values import Dim, Symbol
from choreo_kernel.compiler.semantics.levels import Level


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
class LevelScope:
    """One parallel level entered on the way to a statement: its kind, its count, its clause."""

    level: Level
    count: Dim
    clause: ast.ParallelClause


@dataclass(frozen=True)
class Context:
    """Where a statement sits: the parallel levels around it, its async path, its loops."""

    levels: tuple[LevelScope, ...] = ()
    path: ast.InThreads | None = None
    in_inthreads: bool = False
    loops: tuple[ast.Stmt, ...] = field(default=())
    predicates: tuple[ast.Expr, ...] = ()  # the conditions of the enclosing inthreads

    @property
    def in_parallel(self) -> bool:
        return bool(self.levels)

    @property
    def level_kinds(self) -> tuple[Level, ...]:
        return tuple(scope.level for scope in self.levels)

    @property
    def below_block(self) -> bool:
        """Inside a group-4, group or thread level: per-thread code."""
        return any(scope.level.rank > Level.BLOCK.rank for scope in self.levels)

    @property
    def cooperative(self) -> bool:
        """Inside a kernel launched cooperatively: its outermost level is `block<cooperative>`."""
        return bool(self.levels) and self.levels[0].level == Level.BLOCK and self.levels[0].clause.cooperative

    @property
    def in_block(self) -> bool:
        """Inside some block: a parallel without a block level runs in one implicit block (12.9)."""
        return bool(self.levels)

    def enter(self, **changes: object) -> Context:
        return replace(self, **changes)  # type: ignore[arg-type]
