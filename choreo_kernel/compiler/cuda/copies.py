"""`dma.copy`, `dma.transp` and `dma.pad` between views as cooperative copies (language.md 6, 12.2).

A copy runs once per instance of the innermost level around it, its threads cooperating:
at block level every thread of the block moves its share and the block synchronizes after
it; in a thread-level scope each thread copies alone. Each side becomes a 2-D tile (rows of
contiguous elements) for `choreo::copy` where it can, which moves 16-byte vectors when the
addresses allow, and an N-dimensional region of any strides otherwise (a transpose, a
strided view, a tile strided in three or more dimensions); both sides are walked in
row-major order. `.async` global-to-shared copies use cp.async (a padded copy for its source,
its fill at once) and commit one batch per copy, which the future records; other async
copies (no cp.async form) complete at once, which an async copy is allowed to do.

Either side may be a tile that reaches past the end of its array (a tail tile, `View.inside`), as
Croqtile's predicated copies take it: only the corner inside the array is read, the rest of the
destination becomes zero (a padded copy's fill, for `dma.pad`), and only the corner inside the
destination's array is written.
"""

from __future__ import annotations

from dataclasses import replace

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.cuda import cexpr
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.threads import Group
from choreo_kernel.compiler.cuda.views import LoweringError, View
from choreo_kernel.compiler.semantics.levels import Storage


def region(view: View, node: ast.Node) -> str:
    """The view as `choreo::tile(start, rows, cols, row_stride[, swizzle])` where its rows are contiguous (after
    merging dimensions that are contiguous with each other), else as `choreo::region(start, {dims...},
    {strides...})`. A swizzled tile (TMA's and WGMMA's layout) names its swizzle, which places each element."""
    dims, strides = view.dims, view.strides
    if not dims:
        raise LoweringError("a copy moves spanned data, not one element", node)
    if view.panels is not None:
        return _panel_tile(view, node)
    swizzle = f", {view.swizzle}" if view.swizzle else ""
    if strides[-1].value == 1:
        if len(dims) == 1:
            return f"choreo::tile({view.start.text}, 1, {dims[0].text}, {dims[0].text}{swizzle})"
        if all(
            strides[k].text == cexpr.multiply(dims[k + 1], strides[k + 1]).text for k in range(len(dims) - 2)
        ):
            rows = cexpr.multiply(*dims[:-1])
            return (
                f"choreo::tile({view.start.text}, {rows.text}, {dims[-1].text}, {strides[-2].text}{swizzle})"
            )
    merged = _merged(dims, strides)
    if len(merged) <= 2 and merged[-1][1].value == 1:
        rows, row_stride = merged[0] if len(merged) == 2 else (cexpr.ONE, merged[0][0])
        return (
            f"choreo::tile({view.start.text}, {rows.text}, {merged[-1][0].text}, {row_stride.text}{swizzle})"
        )
    if view.swizzle:
        raise LoweringError(
            f"'{view.root}' has the {view.swizzle}-byte swizzled layout that TMA and WGMMA use; a copy into or out "
            "of it must move whole rows of contiguous elements",
            node,
        )
    extents = ", ".join(dim.text for dim, _ in merged)
    steps = ", ".join(stride.text for _, stride in merged)
    return f"choreo::region({view.start.text}, {{{extents}}}, {{{steps}}})"


def _panel_tile(view: View, node: ast.Node) -> str:
    """A tile of a buffer that lies in panels (views.Panels): its rows are rows of the buffer, each
    `width` columns of a row in one panel; `choreo::tile` walks the panels from the tile's first column."""
    panels = view.panels
    assert panels is not None
    outer = [(dim, stride) for dim, stride in _merged(view.dims[:-1], view.strides[:-1]) if dim.value != 1]
    rows, row_stride = outer[0] if outer else (cexpr.ONE, cexpr.const(panels.columns))
    if len(outer) > 1 or view.strides[-1].value != 1 or row_stride.value != panels.columns:
        raise LoweringError(
            f"'{view.root}' lies in panels one swizzle wide (its rows are wider than its swizzle); a copy into or "
            "out of it moves a box of its rows",
            node,
        )
    return (
        f"choreo::tile({view.start.text}, {rows.text}, {view.dims[-1].text}, {panels.width}, {view.swizzle}, "
        f"{panels.stride}, {panels.first(view.offset).text})"
    )


def _merged(dims: tuple[CExpr, ...], strides: tuple[CExpr, ...]) -> list[tuple[CExpr, CExpr]]:
    """Dimensions and strides without the dimensions of extent 1, and with a dimension merged into the one
    inside it where the two are contiguous (outer stride = inner extent * inner stride)."""
    merged: list[tuple[CExpr, CExpr]] = []
    for dim, stride in reversed(list(zip(dims, strides))):
        if dim.value == 1:
            continue
        if merged and stride.text == cexpr.multiply(merged[-1][0], merged[-1][1]).text:
            inner, inner_stride = merged.pop()
            merged.append((cexpr.multiply(dim, inner), inner_stride))
        else:
            merged.append((dim, stride))
    return list(reversed(merged)) or [(cexpr.ONE, cexpr.ONE)]


def matched(source: View, destination: View) -> tuple[View, View]:
    """The two sides shaped alike where one is contiguous (same element count), which keeps rows long for
    vectors; otherwise as they are: each side is walked in its own row-major order."""
    if [d.text for d in source.dims] == [d.text for d in destination.dims]:
        return source, destination
    if destination.is_compact and destination.panels is None:  # a buffer in panels keeps its rows
        return source, destination.reshaped(source.dims)
    if source.is_compact and source.panels is None:
        return source.reshaped(destination.dims), destination
    return source, destination


def count_mismatch(source: View, destination: View) -> CExpr | None:
    """The condition under which the two sides hold different numbers of elements, where only the run
    can tell (a dimension the arguments or a loop give); None where they agree at compile time. The
    analysis rejects shapes that differ at compile time."""
    counts = [cexpr.multiply(*side.dims) for side in (source, destination)]
    if counts[0].text == counts[1].text:
        return None
    return cexpr.binary("!=", *counts)


def copy_call(function: str, source: View, destination: View, group: Group, node: ast.Node) -> str:
    source, destination = matched(source, destination)
    return (
        f"choreo::{function}({region(destination, node)}, {region(source, node)}, "
        f"{group.rank.text}, {group.threads.text});"
    )


def tail_call(
    source: View, destination: View, fill: CExpr, group: Group, node: ast.Node, cp_async: bool
) -> str | None:
    """A copy of which a side may reach past the end of its array: the destination cut to its corner inside
    its array, the source to that corner and to its own elements inside its array, the rest of the (cut)
    destination `fill` (zero). None where both sides fit."""
    reads_tail, writes_tail = source.inside() is not None, destination.inside() is not None
    if not reads_tail and not writes_tail:
        return None
    source, destination = _alike(source, destination, node)
    destination = destination.within_array()
    source = replace(source, dims=destination.dims)
    if not reads_tail:
        return copy_call("copy_async" if cp_async else "copy", source, destination, group, node)
    source = source.within_array()
    if source.swizzle or source.panels is not None:
        # a laid-out shared tile ends where its buffer does, past which the sim stops with a range error:
        # the corner both sides have moves, as a tile that knows its layout (copy_padded reads regions)
        destination = replace(destination, dims=source.dims)
        return copy_call("copy_async" if cp_async else "copy", source, destination, group, node)
    low = (cexpr.ZERO,) * len(destination.dims)
    return padded_call(source, destination, low, fill, group, node, cp_async)


def _alike(source: View, destination: View, node: ast.Node) -> tuple[View, View]:
    """The two sides of one shape for a copy with a tail tile: the side that fits, compact, takes the tail
    tile's shape (which keeps where the tile lies in its array)."""
    if [d.text for d in source.dims] == [d.text for d in destination.dims]:
        return source, destination
    if destination.inside() is None and destination.is_compact and destination.panels is None:
        return source, destination.reshaped(source.dims)
    if source.inside() is None and source.is_compact and source.panels is None:
        return source.reshaped(destination.dims), destination
    raise LoweringError(
        "this copy has a tile that may reach past the end of its array; the other side must have the tile's "
        "shape, or be a contiguous buffer of as many elements",
        node,
    )


def padded_call(
    source: View,
    destination: View,
    low: tuple[CExpr, ...],
    fill: CExpr,
    group: Group,
    node: ast.Node,
    cp_async: bool,
) -> str:
    """`choreo::copy_padded`: the source at `low` in the destination (of one rank), the rest `fill`; with
    `cp_async` the source moves with cp.async. A swizzled destination goes as a tile, which knows its layout."""

    def full(view: View) -> str:
        extents = ", ".join(dim.text for dim in view.dims)
        steps = ", ".join(stride.text for stride in view.strides)
        return f"choreo::region({view.start.text}, {{{extents}}}, {{{steps}}})"

    if len(source.dims) != len(destination.dims):
        raise LoweringError("a padded copy needs a source and a destination of one rank", node)
    if destination.swizzle and len(destination.dims) != 2:
        raise LoweringError(
            f"'{destination.root}' has the {destination.swizzle}-byte swizzled layout that TMA and WGMMA read, "
            f"which a padded copy writes as a 2-D tile, not {len(destination.dims)}-D",
            node,
        )
    corner = ", ".join(start.text for start in low)
    index = f"choreo::Index<{len(low)}>{{{{{corner}}}}}"
    laid_out = region(destination, node) if destination.swizzle else full(destination)  # a Tile: its layout
    return (
        f"choreo::copy_padded<{'true' if cp_async else 'false'}>({laid_out}, {full(source)}, {index}, {fill.text}, "
        f"{group.rank.text}, {group.threads.text});"
    )


def uses_cp_async(source: View, destination: View, is_async: bool) -> bool:
    """cp.async moves global memory into shared memory; everything else is copied at once."""
    return is_async and source.storage == Storage.GLOBAL and destination.storage == Storage.SHARED
