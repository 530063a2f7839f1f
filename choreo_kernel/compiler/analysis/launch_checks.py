"""What a launch must satisfy on the hardware: block sizes and the sizes of warp(group) units.

A `group-4` level is 128 threads per instance and a `group` level 32, so whatever is nested in
one must make exactly that many; a block holds at most 1024 threads, and sibling parallels in
one block make one block size (language.md 12.9). Sizes come from the launch model; a size that
depends on the arguments is checked when the function is called. A kernel whose levels do not
nest is not checked here: the nesting error explains it, and its sizes mean nothing.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.diagnostics import DiagnosticSink
from choreo_kernel.compiler.semantics.evaluate import constant
from choreo_kernel.compiler.semantics.launch import FunctionLaunches, KernelLaunch, inner_parallels
from choreo_kernel.compiler.semantics.levels import MAX_THREADS_PER_BLOCK, Level


def check_launches(launches: FunctionLaunches, badly_nested: set[int], sink: DiagnosticSink) -> None:
    """Report each kernel's size problems; kernels in `badly_nested` (by id) are skipped."""
    for kernel in launches.structure.kernels:
        if id(kernel) in badly_nested:
            continue
        launch = launches.launch(kernel)
        _check_block_size(launch, sink)
        _check_launch_bounds(launch, sink)
        for stmt in ast.walk_statements(kernel):
            if isinstance(stmt, ast.Parallel):
                _check_units(launch, stmt, sink)
            elif isinstance(stmt, ast.NamedBarrier):
                _check_named_barrier(launch, stmt, sink)


def _check_block_size(launch: KernelLaunch, sink: DiagnosticSink) -> None:
    kernel = launch.kernel
    if launch.first_inner < len(kernel.clauses):
        _at_most_a_block(launch.block_size, kernel, sink)
        return
    first: tuple[ast.Parallel, int] | None = None
    for inner in inner_parallels(kernel.body):
        count = launch.size_of(inner, 0)
        if not isinstance(count, int):
            continue
        _at_most_a_block(count, inner, sink)
        if first is None:
            first = (inner, count)
        elif count != first[1]:
            sink.error(
                f"sibling parallels in one block have different thread counts: {first[1]} (line "
                f"{first[0].span.line}) and {count}; the block size is one number",
                inner.span,
            )


def _at_most_a_block(count: object, stmt: ast.Parallel, sink: DiagnosticSink) -> None:
    if isinstance(count, int) and count > MAX_THREADS_PER_BLOCK:
        sink.error(
            f"a block of {count} threads: at most {MAX_THREADS_PER_BLOCK} threads per block", stmt.span
        )


def _check_units(launch: KernelLaunch, stmt: ast.Parallel, sink: DiagnosticSink) -> None:
    """Whatever is nested in a warpgroup or warp level makes exactly one unit of threads."""
    for index, level in enumerate(launch.structure.levels_of[id(stmt)]):
        if level not in (Level.WARPGROUP, Level.WARP):
            continue
        inside = launch.size_of(stmt, index + 1)
        if isinstance(inside, int) and inside != level.unit:
            sink.error(
                f"a '{level}' level has {level.unit} threads per unit, but the levels inside it make {inside}",
                stmt.clauses[index].span,
            )


def _check_launch_bounds(launch: KernelLaunch, sink: DiagnosticSink) -> None:
    """`[[launch_bounds(T, ...)]]` promises CUDA that a block has at most T threads: at least the kernel's."""
    for attribute in launch.kernel.attributes:
        if attribute.name != "launch_bounds" or not attribute.args:
            continue
        most = constant(attribute.args[0])
        if most is None or not launch.is_static:
            continue
        if most < launch.threads:
            sink.error(
                f"[[launch_bounds]] maxThreadsPerBlock ({most}) is less than the computed thread count "
                f"({launch.threads}) of this kernel: write at least {launch.threads}, or '_' for exactly that",
                attribute.args[0].span,
            )
        elif most > MAX_THREADS_PER_BLOCK:
            sink.error(
                f"[[launch_bounds]] maxThreadsPerBlock ({most}): a block has at most {MAX_THREADS_PER_BLOCK} threads",
                attribute.args[0].span,
            )


def _check_named_barrier(launch: KernelLaunch, stmt: ast.NamedBarrier, sink: DiagnosticSink) -> None:
    count = constant(stmt.count)
    if count is not None and launch.is_static and count > launch.threads:
        sink.error(
            f"this named barrier counts {count} threads, but the block has {launch.threads}: it would never complete",
            stmt.count.span,
        )
