"""Parallel levels: filling in missing annotations, and checking that the nest can be built.

Levels from outermost to innermost are block > group-4 > group > thread (language.md 4.1).
A lone unannotated `parallel by N` is N threads in one block; in a nest an unannotated
outermost level is `block` and an unannotated innermost level is `thread`. The block sizes
that the levels make are checked once the launch model exists (launch_checks.py).
"""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.diagnostics import DiagnosticSink
from choreo_kernel.compiler.semantics.launch import inner_parallels
from choreo_kernel.compiler.semantics.levels import Level


def fill_levels(stmt: ast.Parallel, context: Context, sink: DiagnosticSink) -> tuple[tuple[Level, ...], bool]:
    """The level of each clause of `stmt`, annotated or inferred, and whether they nest; nesting
    errors go to `sink`."""
    enclosing = context.in_parallel
    nested = any(True for child in ast.child_statements(stmt) for _ in inner_parallels(child))
    last = len(stmt.clauses) - 1
    outer = list(context.level_kinds)
    filled: list[Level] = []
    nests = True
    for index, clause in enumerate(stmt.clauses):
        level = Level.named(clause.level) if clause.level is not None else None
        if clause.level is None:
            level = Level.THREAD
            if not enclosing and index == 0 and (nested or last > 0):
                level = Level.BLOCK
            elif not ((index == last and not nested) or (not enclosing and index == 0)):
                nests = False
                sink.error(
                    "cannot infer the level of this parallel between others; annotate it with ': block', "
                    "': group-4', ': group' or ': thread'",
                    clause.span,
                )
        elif level is None or level == Level.CLUSTER:
            nests = False
            sink.error(
                f"unknown parallel level '{clause.level}'; the levels are block, group-4, group and thread",
                clause.level_span or clause.span,
            )
            level = Level.THREAD
        nests = _check_nesting(level, outer, clause, sink) and nests
        outer.append(level)
        filled.append(level)
    return tuple(filled), nests


def _check_nesting(
    level: Level, outer: list[Level], clause: ast.ParallelClause, sink: DiagnosticSink
) -> bool:
    for enclosing in reversed(outer):
        if level.rank < enclosing.rank or (level.rank == enclosing.rank and level != Level.THREAD):
            sink.error(
                f"a '{level}' level cannot be nested inside a '{enclosing}' level: levels go "
                "block > group-4 > group > thread, outermost first",
                clause.level_span or clause.span,
            )
            return False
    return True
