"""One line per compiled function: its signature, kernels, threads per block and shared data.

Everything here is read off the compiler, never guessed: a host-level `parallel` is one kernel
launch, its block size is the launch model's (compiler/semantics/launch.py), and its shared
memory is what the CUDA lowering allocates for it. A block size that depends on the arguments
says so instead of showing a number.
"""

from __future__ import annotations

from dataclasses import dataclass

from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Dim
from choreo_kernel.compiler.cuda.plan import FunctionPlan
from choreo_kernel.compiler.preprocess import blank_comments


@dataclass
class Kernel:
    """One kernel launch: its block size and the shared memory the CUDA lowering gives it."""

    threads: Dim  # an int, or the text of a size set by the arguments ("N / 4")
    shared_bytes: int | None  # None where the function has no CUDA lowering
    shared_sized_at_launch: bool = False  # more shared memory, for buffers whose size the arguments set
    cluster_blocks: int = 1  # blocks per thread-block cluster


def signature(info: FunctionInfo, source: str) -> str:
    """The function's header as the user wrote it, on one line, without `__co__`."""
    function = info.function
    lines = blank_comments(source).split("\n")
    start, end = function.span, function.body.span
    first_line, last_line = start.line + start.offset, end.line + end.offset  # where the text is (#line)
    if first_line == last_line:
        text = lines[first_line - 1][start.column - 1 : end.column - 1]
    else:
        first = lines[first_line - 1][start.column - 1 :]
        text = " ".join([first, *lines[first_line : last_line - 1], lines[last_line - 1][: end.column - 1]])
    return " ".join(text.split()).removeprefix("__co__").strip()


def kernels(info: FunctionInfo, plan: FunctionPlan | None) -> list[Kernel]:
    """The kernels of a function in launch order: the launch model's block size, and the bytes of
    shared memory the CUDA lowering allocates (buffers, events and alignment, as the GPU sees it)."""
    by_kernel = {id(launch.statement): launch for launch in plan.launches} if plan else {}
    launches = info.launches
    found = []
    for kernel in launches.structure.kernels:
        launch = by_kernel.get(id(kernel))
        shared = launch.shared_bytes if launch is not None else None
        sized = launch is not None and launch.dynamic_shared is not None
        model = launches.launch(kernel)
        blocks = model.cluster.blocks if model.cluster is not None else 1
        found.append(Kernel(model.block_size, shared if plan else None, sized, blocks))
    return found


def describe(info: FunctionInfo, source: str, plan: FunctionPlan | None) -> str:
    """`f32 [M, N] add(f32 [M, N] a, f32 [M, N] b): 1 kernel, 256 threads/block, no shared memory`."""
    launches = kernels(info, plan)
    if not launches:
        return f"{signature(info, source)}: no kernel"
    parts = "; ".join(_kernel_text(kernel) for kernel in launches)
    count = f"{len(launches)} kernel{'s' * (len(launches) != 1)}"
    return f"{signature(info, source)}: {count}{', ' if len(launches) == 1 else ': '}{parts}"


def _kernel_text(kernel: Kernel) -> str:
    threads = f"{kernel.threads} thread{'s' * (kernel.threads != 1)}/block"
    if kernel.cluster_blocks > 1:
        threads += f" in clusters of {kernel.cluster_blocks} blocks"
    if kernel.shared_bytes is None:
        shared = "shared memory: no CUDA lowering"
    elif kernel.shared_bytes:
        shared = f"{format_bytes(kernel.shared_bytes)} shared"
    else:
        shared = "no shared memory"
    if kernel.shared_sized_at_launch:
        fixed = (
            f"{format_bytes(kernel.shared_bytes)} shared and more" if kernel.shared_bytes else "shared memory"
        )
        shared = f"{fixed} set by the arguments"
    return f"{threads}, {shared}"


def format_bytes(count: int) -> str:
    """512 B, 1.5 KiB, 64 KiB."""
    if count < 1024:
        return f"{count} B"
    return f"{count / 1024:.1f}".removesuffix(".0") + " KiB"
