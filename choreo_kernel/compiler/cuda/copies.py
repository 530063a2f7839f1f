"""`dma.copy` between views as cooperative tile copies (language.md 6, 12.2).

A copy runs once per instance of the innermost level around it, its threads cooperating:
at block level every thread of the block moves its share and the block synchronizes after
it; in a thread-level scope each thread copies alone. Both sides become 2-D tiles (rows of
contiguous elements) for `choreo::copy`, which moves 16-byte vectors when the addresses
allow. `.async` global-to-shared copies use cp.async and commit one batch per copy, which
the future records; other async copies (no cp.async form) complete at once, which an async
copy is allowed to do.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.cuda import cexpr
from choreo_kernel.compiler.cuda.threads import Group
from choreo_kernel.compiler.cuda.views import LoweringError, View
from choreo_kernel.compiler.semantics.levels import Storage


def tile(view: View, node: ast.Node) -> str:
    """`choreo::tile(start, rows, cols, row_stride[, swizzle])` for a view whose rows are contiguous."""
    dims, strides = view.dims, view.strides
    if not dims:
        raise LoweringError("a copy moves spanned data, not one element", node)
    if len(dims) == 1:
        rows, row_stride = cexpr.ONE, dims[0]
    else:
        for k in range(len(dims) - 2):
            if strides[k].text != cexpr.multiply(dims[k + 1], strides[k + 1]).text:
                raise LoweringError(
                    f"this copy of '{view.root}' is strided in more than two dimensions, which the CUDA backend "
                    "does not copy yet; copy it in slices",
                    node,
                )
        rows, row_stride = cexpr.multiply(*dims[:-1]), strides[-2]
    swizzle = f", {view.swizzle}" if view.swizzle else ""
    return f"choreo::tile({view.start.text}, {rows.text}, {dims[-1].text}, {row_stride.text}{swizzle})"


def matched(source: View, destination: View, node: ast.Node) -> tuple[View, View]:
    """The two sides shaped alike: a contiguous side takes the other's shape (same element count)."""
    if [d.text for d in source.dims] == [d.text for d in destination.dims]:
        return source, destination
    if destination.is_compact:
        return source, destination.reshaped(source.dims)
    if source.is_compact:
        return source.reshaped(destination.dims), destination
    raise LoweringError(
        "the two sides of this copy have different shapes and neither is contiguous; make the shapes match",
        node,
    )


def copy_call(function: str, source: View, destination: View, group: Group, node: ast.Node) -> str:
    source, destination = matched(source, destination, node)
    return f"choreo::{function}({tile(destination, node)}, {tile(source, node)}, {group.rank.text}, {group.threads.text});"


def uses_cp_async(source: View, destination: View, is_async: bool) -> bool:
    """cp.async moves global memory into shared memory; everything else is copied at once."""
    return is_async and source.storage == Storage.GLOBAL and destination.storage == Storage.SHARED
