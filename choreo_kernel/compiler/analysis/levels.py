"""Parallel levels: filling in missing annotations, and checking that the nest can be built.

Levels from outermost to innermost are cluster > block > group-4 > group > thread (language.md 4.1);
a cluster stands around a kernel and does not count in the nests below.
A kernel's levels form a tree: each clause of a `parallel` is a level, the next clause or the
parallels nested in its body are the levels inside it. Missing annotations are inferred as
Croqtile infers them, innermost first: a level with nothing inside it is `thread` (a lone
`parallel by N` is N threads in one block); a level above others takes its level from the depth
of the nest it heads and the level of the first level inside it:

| levels in the nest | where            | inside it          | inferred  |
| 2                  | outermost        | thread, group(-4)  | block     |
| 3                  | outermost        | group(-4), thread  | block     |
| 3                  | second           | thread             | group     |
| 3                  | second           | group              | group-4   |
| 3                  | second           | group-4            | block     |
| 4                  | outermost        | group-4            | block     |
| 4                  | second           | group              | group-4   |
| 4                  | third            | thread             | group     |

so three unannotated levels are block > group > thread and four are block > group-4 > group >
thread; any other case cannot be inferred and must be annotated. The block sizes that the levels
make are checked once the launch model exists (launch_checks.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.diagnostics import DiagnosticSink
from choreo_kernel.compiler.semantics.launch import inner_parallels
from choreo_kernel.compiler.semantics.levels import Level

_INFERRED: dict[tuple[int, int, Level], Level] = {
    # (levels in the nest, position from the outermost (1-based), level inside) -> inferred level
    (2, 1, Level.THREAD): Level.BLOCK,
    (2, 1, Level.WARP): Level.BLOCK,
    (2, 1, Level.WARPGROUP): Level.BLOCK,
    (3, 1, Level.THREAD): Level.BLOCK,
    (3, 1, Level.WARP): Level.BLOCK,
    (3, 1, Level.WARPGROUP): Level.BLOCK,
    (3, 2, Level.THREAD): Level.WARP,
    (3, 2, Level.WARP): Level.WARPGROUP,
    (3, 2, Level.WARPGROUP): Level.BLOCK,
    (4, 1, Level.WARPGROUP): Level.BLOCK,
    (4, 2, Level.WARP): Level.WARPGROUP,
    (4, 3, Level.THREAD): Level.WARP,
}


@dataclass(eq=False)
class _LevelNode:
    """One clause of a kernel's tree of levels."""

    clause: ast.ParallelClause
    depth: int  # 0 for the kernel's first clause
    inside: list[_LevelNode] = field(default_factory=list)
    level: Level | None = None

    @property
    def height(self) -> int:
        """Levels from this one down to the deepest level below it, both counted."""
        return 1 + max((node.height for node in self.inside), default=0)


def infer_levels(kernel: ast.Parallel, sink: DiagnosticSink) -> dict[int, Level | None]:
    """The level of every clause of a kernel (an outermost parallel), annotated or inferred, by
    id(clause); None where it is unknown or cannot be inferred (the error is in `sink`)."""
    roots = _tree(kernel, 0)
    levels: dict[int, Level | None] = {}
    for root in roots:
        _infer(root, sink, levels)
    return levels


def _tree(stmt: ast.Parallel, depth: int) -> list[_LevelNode]:
    nodes = []
    for clause in stmt.clauses:
        nodes.append(_LevelNode(clause, depth))
        if clause.level != Level.CLUSTER:  # a cluster groups blocks: the nest below it infers as a kernel
            depth += 1
    for outer, inner in pairwise(nodes):
        outer.inside.append(inner)
    below = depth
    for nested in inner_parallels(stmt.body):
        nodes[-1].inside.extend(_tree(nested, below))
    return nodes[:1]


def _infer(node: _LevelNode, sink: DiagnosticSink, levels: dict[int, Level | None]) -> None:
    for inner in node.inside:
        _infer(inner, sink, levels)
    clause = node.clause
    if clause.level is not None:
        level = Level.named(clause.level)
        if level is None:
            sink.error(
                f"unknown parallel level '{clause.level}'; the levels are cluster, block, group-4, group and thread",
                clause.level_span or clause.span,
            )
            level = None
    elif not node.inside:
        level = Level.THREAD  # the innermost level: threads (of one block, for a lone parallel)
    else:
        inside = node.inside[0].level
        nest = node.depth + node.height
        level = _INFERRED.get((nest, node.depth + 1, inside)) if inside is not None else None
        if level is None and inside is not None:
            sink.error(
                f"cannot infer the level of this parallel, level {node.depth + 1} of a nest of {nest}, above a "
                f"'{inside}' level (nests of up to four levels are inferred); annotate it with ': block', "
                "': group-4', ': group' or ': thread'",
                clause.span,
            )
    node.level = level
    levels[id(clause)] = level


def fill_levels(
    stmt: ast.Parallel, context: Context, inferred: dict[int, Level | None], sink: DiagnosticSink
) -> tuple[tuple[Level, ...], bool]:
    """The level of each clause of `stmt` (from `infer_levels` of its kernel), and whether they nest
    in the levels around it; nesting errors go to `sink`."""
    outer = list(context.level_kinds)
    filled: list[Level] = []
    nests = True
    for clause in stmt.clauses:
        level = inferred.get(id(clause))
        if level is None:
            nests = False
            level = Level.THREAD
        else:
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
                "cluster > block > group-4 > group > thread, outermost first",
                clause.level_span or clause.span,
            )
            return False
    return True
