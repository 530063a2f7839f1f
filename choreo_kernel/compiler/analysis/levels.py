"""Parallel levels: filling in missing annotations and checking that the nest can be built.

Levels from outermost to innermost are block > group-4 > group > thread
(language.md 4.1).  A lone unannotated `parallel by N` is N threads in one
block; in a nest an unannotated outermost level is `block` and an
unannotated innermost level is `thread`.  Below the block, thread counts
multiply into the block size, which must suit the warpgroup/warp levels.
"""

from __future__ import annotations

from collections.abc import Iterator

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.scope import LEVEL_RANK, THREADS_PER_UNIT, Context, Level
from choreo_kernel.compiler.diagnostics import DiagnosticSink
from choreo_kernel.compiler.semantics.evaluate import constant_count

MAX_THREADS_PER_BLOCK = 1024


def inner_parallels(stmt: ast.Stmt) -> Iterator[ast.Parallel]:
    """The parallel statements nested in `stmt` that are not inside another nested parallel."""
    if isinstance(stmt, ast.Parallel):
        yield stmt
        return
    for child in ast.child_statements(stmt):
        yield from inner_parallels(child)


def fill_levels(stmt: ast.Parallel, context: Context, sink: DiagnosticSink | None = None) -> tuple[str, ...]:
    """The level of each clause of `stmt`, annotated or inferred; reports nesting errors to `sink`."""
    enclosing = context.in_parallel
    nested = any(True for child in ast.child_statements(stmt) for _ in inner_parallels(child))
    last = len(stmt.clauses) - 1
    outer = list(context.level_names)
    filled: list[str] = []
    for index, clause in enumerate(stmt.clauses):
        level = clause.level
        if level is None:
            if not enclosing and index == 0 and (nested or last > 0):
                level = "block"
            elif (index == last and not nested) or (not enclosing and index == 0):
                level = "thread"
            else:
                level = "thread"
                if sink is not None:
                    sink.error(
                        "cannot infer the level of this parallel between others; annotate it with ': block', "
                        "': group-4', ': group' or ': thread'",
                        clause.span,
                    )
        elif level not in LEVEL_RANK or level == "cluster":
            if sink is not None:
                sink.error(
                    f"unknown parallel level '{level}'; the levels are block, group-4, group and thread",
                    clause.level_span or clause.span,
                )
            level = "thread"
        if sink is not None:
            _check_nesting(level, outer, clause, sink)
        outer.append(level)
        filled.append(level)
    if sink is not None:
        _check_thread_units(stmt, tuple(filled), sink)
    return tuple(filled)


def _check_nesting(level: str, outer: list[str], clause: ast.ParallelClause, sink: DiagnosticSink) -> None:
    for enclosing in reversed(outer):
        rank, outer_rank = LEVEL_RANK[level], LEVEL_RANK[enclosing]
        if rank < outer_rank or (rank == outer_rank and level != "thread"):
            sink.error(
                f"a '{level}' level cannot be nested inside a '{enclosing}' level: levels go "
                "block > group-4 > group > thread, outermost first",
                clause.level_span or clause.span,
            )
            return


def thread_count(stmt: ast.Parallel, filled: tuple[str, ...] | None = None) -> int | None:
    """Threads per block that the sub-block levels of `stmt` (and the parallels inside it) make."""
    filled = filled or fill_levels(stmt, Context(levels=()))
    return _threads(stmt, filled, 0)


def _threads(stmt: ast.Parallel, filled: tuple[str, ...], index: int) -> int | None:
    if index == len(stmt.clauses):
        nested = (
            next(inner_parallels(stmt.body), None) if not isinstance(stmt.body, ast.Parallel) else stmt.body
        )
        if nested is None:
            return None
        return _threads(nested, _inner_levels(nested), 0)
    level = filled[index]
    rest = _threads(stmt, filled, index + 1)
    if level == "block":
        return rest
    count = constant_count(stmt.clauses[index].count)
    if count is None:
        return None
    return count * (rest if rest is not None else THREADS_PER_UNIT[level])


def _inner_levels(stmt: ast.Parallel) -> tuple[str, ...]:
    """Levels of a parallel known to be nested in another one."""
    dummy = ast.ParallelClause(stmt.span, None, ast.IntLiteral(stmt.span, 1), "block")
    return fill_levels(stmt, Context(levels=(Level("block", 1, dummy),)))


def _check_thread_units(stmt: ast.Parallel, filled: tuple[str, ...], sink: DiagnosticSink) -> None:
    for index, level in enumerate(filled):
        if level not in ("group-4", "group"):
            continue
        if _nests_badly_inside(stmt, index, level):
            continue  # the nesting error, reported at the inner level, explains it
        inside = _threads(stmt, filled, index + 1)
        unit = THREADS_PER_UNIT[level]
        if inside is not None and inside != unit:
            sink.error(
                f"a '{level}' level has {unit} threads per unit, but the levels inside it make {inside}",
                stmt.clauses[index].span,
            )


def _nests_badly_inside(stmt: ast.Parallel, index: int, level: str) -> bool:
    """Whether a later clause, or a parallel inside, has a level that cannot nest in `level`."""
    inner_levels = [clause.level for clause in stmt.clauses[index + 1 :]]
    for inner in inner_parallels(stmt.body):
        inner_levels.extend(clause.level for clause in inner.clauses)
    return any(
        other in LEVEL_RANK and LEVEL_RANK[other] <= LEVEL_RANK[level]
        for other in inner_levels
        if other is not None
    )


def check_sibling_threads(stmt: ast.Parallel, filled: tuple[str, ...], sink: DiagnosticSink) -> None:
    """Inner parallels of one block must agree on the block size (language.md 12.9)."""
    if "block" not in filled or filled[-1] != "block":
        total = thread_count(stmt, filled) if "block" in filled else None
        if total is not None and total > MAX_THREADS_PER_BLOCK:
            sink.error(
                f"a block of {total} threads: at most {MAX_THREADS_PER_BLOCK} threads per block", stmt.span
            )
        return
    first: tuple[ast.Parallel, int] | None = None
    for inner in inner_parallels(stmt.body):
        count = _threads(inner, _inner_levels(inner), 0)
        if count is None:
            continue
        if count > MAX_THREADS_PER_BLOCK:
            sink.error(
                f"a block of {count} threads: at most {MAX_THREADS_PER_BLOCK} threads per block", inner.span
            )
        if first is None:
            first = (inner, count)
        elif count != first[1]:
            sink.error(
                f"sibling parallels in one block have different thread counts: {first[1]} (line "
                f"{first[0].span.line}) and {count}; the block size is one number",
                inner.span,
            )
