"""A warpgroup's registers to and from shared or global tiles: `mma.store[.transp|.mask] acc, tile` and
`mma.load tile, x` (into a `frag`, WGMMA's A from registers). Both place each element where the tile's
layout puts it (cuda/swizzles.py: the swizzle, the panels of a wide buffer), as the tensor cores and TMA
read it; a whole shared tile of 16-bit elements is stored with stmatrix (choreo_runtime.cuh)."""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES
from choreo_kernel.compiler.cuda import cexpr, elements
from choreo_kernel.compiler.cuda.context import KernelContext
from choreo_kernel.compiler.cuda.views import AccumulatorRegisters, LoweringError, View
from choreo_kernel.compiler.semantics.levels import Storage

STORE_TYPES = ("f32", "f16", "bf16")  # what mma.store converts an accumulator into


def store(emitter: KernelContext, accumulator: AccumulatorRegisters, stmt: ast.OperationStmt) -> None:
    """`mma.store[.transp|.mask] acc, tile`: each thread's fragment elements into the tile, in its layout
    (swizzled, in panels); a whole shared tile of 16-bit elements with stmatrix."""
    words = stmt.operation.words
    transposed = "transp" in words
    destination = emitter.expressions.view(stmt.operation.args[1])
    emitter.note_written(stmt.operation.args[1])
    dims = [d.value for d in destination.dims]
    shape = [accumulator.rows, accumulator.columns]
    if transposed:
        shape.reverse()
    implicit = words == ["store"] and dims != shape and all(d in (None, e) for d, e in zip(dims, shape))
    if (dims != shape and not implicit) or destination.strides[-1].value != 1:
        raise LoweringError(
            f"'{' '.join(words)}' writes a {accumulator.rows}x{accumulator.columns} accumulator into a "
            f"{shape[0]}x{shape[1]} tile with contiguous rows",
            stmt,
        )
    if destination.elem not in STORE_TYPES:
        raise LoweringError(
            f"'mma.store' converts into {', '.join(STORE_TYPES)}, not {destination.elem}", stmt
        )
    row_stride = destination.strides[0]
    counts = [emitter.expressions.integer(count).text for count in stmt.operation.args[2:]]
    if implicit:  # a tile of a size known at run time: the elements inside it, as mma.store.mask writes them
        counts = [d.text for d in destination.dims]
        emitter.out.line(
            "// the tile's extents are known at run time: only the elements inside it are written"
        )
    inside = destination.inside() if destination.storage == Storage.GLOBAL else None
    if inside is not None:  # rows first, then columns, of the accumulator
        limits = [limit.text for limit in (inside[::-1] if transposed else inside)]
        counts = [
            count if count == limit else f"min({count}, {limit})" for count, limit in zip(counts, limits)
        ] + limits[len(counts) :]
        emitter.out.line(
            "// the tile may reach past the end of the array: only the elements inside it are written"
        )
    panels = destination.panels
    layout: list[str] = []  # where the panels and the tile's first column are
    if panels is not None:  # rows of one panel
        if row_stride.value != panels.columns:
            raise LoweringError(
                f"'{destination.root}' lies in panels one swizzle wide, so 'mma.store' writes a tile of its rows",
                stmt,
            )
        row_stride = cexpr.const(panels.width)
        layout = [str(panels.stride), panels.first(destination.offset).text]
    elif (
        destination.swizzle
        and (row_stride.value or 0) * ELEMENT_BYTES[destination.elem] != destination.swizzle
    ):
        raise LoweringError(
            f"'{destination.root}' is swizzled by {destination.swizzle} bytes, so its rows must be that long",
            stmt,
        )
    template = f"{accumulator.columns}, {accumulator.tiles}, {destination.swizzle}"
    if transposed:
        template += ", true"
        emitter.out.line("// transposed: element (i, j) of the accumulator goes to (j, i) of the tile")
    start = f"{accumulator.name.text}, {destination.start.text}, {row_stride.text}"
    stmatrix = destination.storage == Storage.SHARED and ELEMENT_BYTES[destination.elem] == 2 and not counts
    if stmatrix and not transposed and _starts_a_swizzled_row(destination):
        panel_stride = layout[0] if layout else "0"
        emitter.out.line(
            f"choreo::store_accumulator_stmatrix_swizzled128<{accumulator.columns}, {accumulator.tiles}>"
            f"({accumulator.name.text}, {destination.start.text}, {panel_stride});"
        )
    elif stmatrix:
        arguments = "".join(f", {value}" for value in layout)
        emitter.out.line(f"choreo::store_accumulator_stmatrix<{template}>({start}{arguments});")
    else:
        if layout:
            counts += [str(accumulator.rows), str(accumulator.columns)][len(counts) :]
        masks = "".join(f", {value}" for value in counts + layout)  # .mask: the rows (and columns) to write
        emitter.out.line(f"choreo::store_accumulator<{template}>({start}{masks});")
    if destination.swizzle:  # TMA or WGMMA reads it next: the async proxy
        emitter.out.line("choreo::fence_proxy_async_shared();  // these writes are seen by the tensor cores")
    context = emitter.info.context_of[id(stmt)]
    if destination.storage == Storage.SHARED and emitter.threads.covers_instances(context):
        barrier = emitter.threads.issuing_group(context).barrier()
        if barrier is not None:
            emitter.out.line("// the whole tile is stored")
            emitter.out.line(barrier)


def _starts_a_swizzled_row(tile: View) -> bool:
    """Whether a shared tile is 128-byte swizzled rows of 16-bit elements, each starting its row of a
    panel (or of the buffer, one swizzle wide), so stmatrix addresses follow from one row address per
    thread (choreo_runtime.cuh store_accumulator_stmatrix_swizzled128). Its column start along the buffer
    must be known here: the general store handles a tile that starts inside a panel."""
    if tile.swizzle != 128 or ELEMENT_BYTES[tile.elem] != 2 or tile.origin is None:
        return False
    column = tile.origin[-1].value
    width = tile.panels.width if tile.panels is not None else 128 // ELEMENT_BYTES[tile.elem]
    return column is not None and column % width == 0


def load_registers(emitter: KernelContext, stmt: ast.OperationStmt) -> None:
    """`mma.load tile, x`: each thread reads its elements of the tile, wherever the buffer's layout
    (swizzle, panels) puts them, into x in the accumulator layout, WGMMA's A from registers (RS)."""
    source, target = stmt.operation.args
    tile = emitter.expressions.view(source)
    registers = emitter.expressions.value(target)
    if not isinstance(registers, AccumulatorRegisters) or registers.tile_rows != 64:
        raise LoweringError("'mma.load TILE, X' loads into a warpgroup's fragment X ('frag')", target)
    dims = [d.value for d in tile.dims]
    if dims != [registers.rows, registers.columns] or tile.strides[-1].value != 1:
        raise LoweringError(
            f"'mma.load' into a {registers.rows}x{registers.columns} fragment reads a tile of that shape "
            "with contiguous rows",
            stmt,
        )
    row_stride, layout = tile.strides[0], ""
    if tile.panels is not None:
        if row_stride.value != tile.panels.columns:
            raise LoweringError(
                f"'{tile.root}' lies in panels one swizzle wide, so 'mma.load' reads a tile of its rows",
                stmt,
            )
        row_stride = cexpr.const(tile.panels.width)
        layout = f", {tile.panels.stride}, {tile.panels.first(tile.offset).text}"
    packed = f"{elements.c_type(registers.elem)}, " if registers.c_type == "unsigned" else ""
    load = "load_fragment8" if registers.eight_bit else "load_fragment"  # WGMMA's 8-bit A layout (k32)
    emitter.out.line(
        f"choreo::{load}<{packed}{registers.columns}, {registers.tiles}, {tile.swizzle}>"
        f"({registers.name.text}, {tile.start.text}, {row_stride.text}{layout});"
    )
