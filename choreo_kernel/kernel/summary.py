"""One line per compiled function: its signature, kernels, threads per block and shared data.

Everything here is read off the analysis, never guessed: a host-level `parallel` is one
kernel launch, its block size is what the levels module computes, and shared memory is the
shared buffers the kernel uses (declared ones and `=> shared` copy destinations). Counts that
depend on the arguments say so instead of showing a number.
"""

from __future__ import annotations

from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.levels import inner_parallels
from choreo_kernel.compiler.analysis.resolve import FunctionInfo
from choreo_kernel.compiler.analysis.scope import THREADS_PER_UNIT, Context
from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES, BufferArray, Data, Dim, product
from choreo_kernel.compiler.preprocess import blank_comments


@dataclass
class Kernel:
    """One kernel launch: its block size and the bytes of shared data it holds."""

    threads: Dim = 1  # an int, or the text of a size set by the arguments ("N / 4")
    shared_bytes: int = 0
    shared_symbolic: bool = False  # some shared buffer's size depends on the arguments


def signature(info: FunctionInfo, source: str) -> str:
    """The function's header as the user wrote it, on one line, without `__co__`."""
    function = info.function
    lines = blank_comments(source).split("\n")
    start, end = function.span, function.body.span
    if start.line == end.line:
        text = lines[start.line - 1][start.column - 1 : end.column - 1]
    else:
        first = lines[start.line - 1][start.column - 1 :]
        text = " ".join([first, *lines[start.line : end.line - 1], lines[end.line - 1][: end.column - 1]])
    return " ".join(text.split()).removeprefix("__co__").strip()


def kernels(info: FunctionInfo) -> list[Kernel]:
    """The kernels of a function in launch order, with what each one needs per block."""
    launches = [launch for stmt in info.function.body.body for launch in inner_parallels(stmt)]
    found = {id(launch.clauses[0]): Kernel() for launch in launches}
    for context in info.context_of.values():
        kernel = found.get(id(context.levels[0].clause)) if context.levels else None
        if kernel is not None:
            kernel.threads = _larger(kernel.threads, _block_size(context))
    for clause_id, elem, dims in _shared_buffers(info):
        kernel = found[clause_id]
        size = product((ELEMENT_BYTES[elem], *dims))
        if isinstance(size, int):
            kernel.shared_bytes += size
        else:
            kernel.shared_symbolic = True
    return list(found.values())


def _block_size(context: Context) -> Dim:
    """Threads per block seen from a statement: its sub-block level counts, a warp(group) unit last."""
    inside = [level for level in context.levels if level.name != "block"]
    if not inside:
        return 1
    return product((*(level.count for level in inside), THREADS_PER_UNIT[inside[-1].name]))


def _larger(a: Dim, b: Dim) -> Dim:
    """The block size seen from the deepest statement; siblings agree (the compiler checks that)."""
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    return b if a == 1 else a


def _shared_buffers(info: FunctionInfo) -> list[tuple[int, str, tuple[Dim, ...]]]:
    """(kernel clause id, element type, dims) of each shared buffer the function uses, once each."""
    found: dict[int, tuple[int, str, tuple[Dim, ...]]] = {}
    for symbol in info.symbol_of.values():
        value = symbol.value
        counts: tuple[Dim, ...] = ()  # a buffer array holds one buffer per slot
        if isinstance(value, BufferArray):
            counts = value.counts
            value = value.element
        if isinstance(value, Data) and value.storage == "shared" and isinstance(symbol.declaration, ast.Stmt):
            context = info.context_of.get(id(symbol.declaration))
            if context is not None and context.levels:
                found[id(symbol.declaration)] = (
                    id(context.levels[0].clause),
                    value.elem,
                    (*value.dims, *counts),
                )
    for operation in info.operations.values():
        destination = operation.destination
        if destination is not None and destination.storage == "shared" and not destination.root:
            context = info.context_of[id(operation.statement)]
            found[id(operation.statement)] = (
                id(context.levels[0].clause),
                destination.elem,
                destination.dims,
            )
    return list(found.values())


def describe(info: FunctionInfo, source: str) -> str:
    """`f32 [M, N] add(f32 [M, N] a, f32 [M, N] b): 1 kernel, 256 threads/block, no shared memory`."""
    launches = kernels(info)
    if not launches:
        return f"{signature(info, source)}: no kernel"
    parts = "; ".join(_kernel_text(kernel) for kernel in launches)
    count = f"{len(launches)} kernel{'s' * (len(launches) != 1)}"
    return f"{signature(info, source)}: {count}{', ' if len(launches) == 1 else ': '}{parts}"


def _kernel_text(kernel: Kernel) -> str:
    threads = f"{kernel.threads} thread{'' if kernel.threads == 1 else 's'}/block"
    if kernel.shared_symbolic:
        shared = "shared memory set by the arguments"
        if kernel.shared_bytes:
            shared = f"{format_bytes(kernel.shared_bytes)} shared + more set by the arguments"
    elif kernel.shared_bytes:
        shared = f"{format_bytes(kernel.shared_bytes)} shared"
    else:
        shared = "no shared memory"
    return f"{threads}, {shared}"


def format_bytes(count: int) -> str:
    """512 B, 1.5 KiB, 64 KiB."""
    if count < 1024:
        return f"{count} B"
    return f"{count / 1024:.1f}".removesuffix(".0") + " KiB"
