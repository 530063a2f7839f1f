"""Thread-block clusters: where a `cluster` level may stand, its size, and what needs one.

A cluster level stands alone around one block-level parallel, the kernel whose grid it groups
(`parallel {c} by [2] : cluster { parallel {m, n} by [M, N] : block { ... } }`). Its counts are
compile-time constants: at most three, at most 8 blocks in all on every sm_90 device, 16 with
the non-portable opt-in (a warning), never more. The grid must divide into whole clusters
along each axis. A `.multicast` TMA load (one load landing in every block of the cluster) and a
`trigger.cluster` (an arrival on the event in every block) need a cluster around them.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.diagnostics import DiagnosticSink
from choreo_kernel.compiler.semantics.launch import (
    MAX_CLUSTER_BLOCKS,
    PORTABLE_CLUSTER_BLOCKS,
    body_statements,
)
from choreo_kernel.compiler.semantics.levels import Level

_FORM = "'parallel {c} by [2] : cluster { parallel ... : block { ... } }'"


def check_clusters(info: FunctionInfo, sink: DiagnosticSink) -> None:
    """Report misplaced or oversized cluster levels, and multicasts and cluster triggers without one."""
    for stmt in ast.walk_statements(info.function.body):
        if isinstance(stmt, ast.Parallel) and Level.CLUSTER in info.levels_of.get(id(stmt), ()):
            _check_cluster(info, stmt, sink)
        elif isinstance(stmt, ast.Trigger) and stmt.cluster:
            _check_cluster_trigger(info, stmt, sink)
        elif isinstance(stmt, ast.OperationStmt) and stmt.operation.is_multicast:
            _check_multicast(info, stmt, sink)


def _check_cluster(info: FunctionInfo, stmt: ast.Parallel, sink: DiagnosticSink) -> None:
    context = info.context_of.get(id(stmt))
    levels = info.levels_of[id(stmt)]
    clause = stmt.clauses[levels.index(Level.CLUSTER)]
    where = clause.level_span or clause.span
    inner = [s for s in body_statements(stmt.body) if not isinstance(s, ast.Empty)]
    alone = len(stmt.clauses) == 1 and (context is None or not context.levels)
    kernel = inner[0] if len(inner) == 1 and isinstance(inner[0], ast.Parallel) else None
    if not alone or kernel is None or info.levels_of.get(id(kernel), (None,))[0] != Level.BLOCK:
        sink.error(
            f"a 'cluster' level stands alone, outermost, around one block-level parallel: {_FORM}", where
        )
        return
    if stmt.is_async:
        sink.error(
            "write 'parallel.async' on the block-level parallel inside the cluster: that parallel is the kernel "
            "launch",
            stmt.span,
        )
    counts = info.counts_of.get(id(clause), ())
    if len(counts) > 3:
        sink.error(
            f"a cluster has at most three dimensions (x, y, z); this one has {len(counts)}", clause.span
        )
        return
    if not all(isinstance(count, int) for count in counts):
        sink.error(
            "the cluster's size must be a compile-time constant (use a #define): CUDA fixes it with the kernel",
            clause.count.span,
        )
        return
    blocks = 1
    for count in counts:
        blocks *= int(count)
    if any(int(count) <= 0 for count in counts):
        return  # the count's own error says so
    if blocks > MAX_CLUSTER_BLOCKS:
        sink.error(
            f"a cluster of {blocks} blocks: sm_90 runs at most {PORTABLE_CLUSTER_BLOCKS} blocks per cluster, "
            f"{MAX_CLUSTER_BLOCKS} with the non-portable opt-in",
            clause.count.span,
        )
    elif blocks > PORTABLE_CLUSTER_BLOCKS:
        sink.warning(
            f"a cluster of {blocks} blocks is not portable: the launch opts in to clusters of up to "
            f"{MAX_CLUSTER_BLOCKS} blocks, which only some sm_90 parts run (at most {PORTABLE_CLUSTER_BLOCKS} "
            "everywhere)",
            clause.count.span,
        )
    _check_grid(info, kernel, [int(count) for count in counts], sink)


def _check_grid(info: FunctionInfo, kernel: ast.Parallel, dims: list[int], sink: DiagnosticSink) -> None:
    """Each grid axis a cluster spans is a whole number of clusters (where the grid is known here)."""
    grid = [
        count
        for clause, level in zip(kernel.clauses, info.levels_of[id(kernel)])
        if level == Level.BLOCK
        for count in info.counts_of.get(id(clause), ())
    ]
    for axis, dim in enumerate(dims):
        if dim == 1:
            continue
        if axis >= len(grid):
            sink.error(
                f"the cluster spans {dim} blocks along axis {'xyz'[axis]}, but the grid has {len(grid)} "
                "block dimension(s)",
                kernel.span,
            )
        elif isinstance(grid[axis], int) and int(grid[axis]) % dim:
            sink.error(
                f"the grid has {grid[axis]} blocks along axis {'xyz'[axis]}, not a multiple of the cluster's "
                f"{dim}: a grid is made of whole clusters",
                kernel.clauses[0].count.span,
            )


def _in_cluster(info: FunctionInfo, node: ast.Stmt) -> bool:
    context = info.context_of.get(id(node))
    return context is not None and any(scope.level == Level.CLUSTER for scope in context.levels)


def _check_cluster_trigger(info: FunctionInfo, stmt: ast.Trigger, sink: DiagnosticSink) -> None:
    if not _in_cluster(info, stmt):
        sink.error(
            "'trigger.cluster' arrives on the event in every block of a cluster, and this kernel has no cluster "
            f"level: put it in {_FORM}, or write 'trigger'",
            stmt.span,
        )
        return
    if stmt.after:
        sink.error(
            "'trigger.cluster ... after' is not supported: bind the loads with a local 'trigger ... after', and "
            "release peers with 'trigger.cluster' once the data is used",
            stmt.after[0].span,
        )


def _check_multicast(info: FunctionInfo, stmt: ast.OperationStmt, sink: DiagnosticSink) -> None:
    operation = stmt.operation
    if operation.family != "tma" or operation.words not in (["copy"], ["load"]):
        sink.error(
            f"'.multicast' is a qualifier of TMA loads ('tma.copy.multicast'), not of '{operation.text}'",
            operation.op_span,
        )
        return
    if not _in_cluster(info, stmt):
        sink.error(
            "'tma.copy.multicast' loads one tile into every block of a cluster, and this kernel has no cluster "
            f"level: put it in {_FORM}, or drop '.multicast'",
            operation.op_span,
        )
