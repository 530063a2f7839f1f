"""What Choreo expressions are in the emitted CUDA: typed scalars, views as index arithmetic, shapes.

A view is a pointer, an element offset, and per dimension an extent and a stride (in
elements). Every view method (`chunkat`, `subspan(...).at`, `at`, `view(...).from`,
`span_as`, a buffer array slot) only moves the offset and replaces extents and strides, so a
chain of views folds into one subscript: `x.chunkat(i, j).at(r, c)` is
`x[(i * 16 + r) * N + j * 16 + c]`. The innermost stride is always 1.

A view also keeps where it starts along each dimension of its buffer (`origin`) and which
buffer dimension each of its own is (`axes`): a TMA copy addresses a global tile by those
coordinates, not by its offset. A shared buffer that TMA or WGMMA uses may have a swizzled
layout (`swizzle` bytes), and, where its rows are wider than the swizzle, lie in panels
(`Panels`); its elements are then not where the row-major subscript says. The offset stays the
row-major one, so every view method works as for any buffer; only the addresses that reach
memory (`start`, `element`) go through the layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES, Symbol
from choreo_kernel.compiler.cuda import cexpr
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.semantics.levels import Storage


class LoweringError(Exception):
    """A construct the CUDA lowering cannot express; `node` is where to point the diagnostic."""

    def __init__(self, message: str, node: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.node = node


@dataclass(frozen=True)
class Operand:
    """A scalar value: its C expression, its Choreo element type, and its bound when it is bounded."""

    expr: CExpr
    type: str
    bound: CExpr | None = None
    storage: Storage | None = None  # for an element of a buffer: the buffer's storage (it is an lvalue)
    swizzled: bool = False  # an element of a swizzled shared buffer, which TMA or WGMMA reads


@dataclass(frozen=True)
class Panels:
    """A shared buffer of `rows` rows of `columns` elements whose rows are wider than its swizzle: it lies
    panel after panel, each panel `width` columns (one swizzle) of every row, the layout that TMA writes a
    box of such rows in (one box per panel) and that WGMMA reads (CUTLASS's K-major tiles of 128 bf16
    columns). Consecutive buffers of a buffer array follow one another."""

    rows: int
    columns: int
    width: int

    @property
    def stride(self) -> int:
        """Elements between two panels."""
        return self.rows * self.width

    def offset(self, offset: CExpr) -> CExpr:
        """Where the element at row-major `offset` lies."""
        if offset.value is not None:
            matrix = self.rows * self.columns
            within, column = offset.value % matrix, offset.value % self.columns
            return cexpr.const(
                offset.value
                - within
                + column // self.width * self.stride
                + within // self.columns * self.width
                + column % self.width
            )
        return cexpr.call(
            "choreo::panel_offset",
            offset,
            cexpr.const(self.rows),
            cexpr.const(self.columns),
            cexpr.const(self.width),
        )

    def first(self, offset: CExpr) -> CExpr:
        """The column within its panel of the element at row-major `offset`."""
        if offset.value is not None:
            return cexpr.const(offset.value % self.columns % self.width)
        column = cexpr.binary("%", cexpr.parenthesized(offset), cexpr.const(self.columns))
        return cexpr.binary("%", column, cexpr.const(self.width))


def panels_of(elem_bytes: int, dims: tuple[int, ...], swizzle: int) -> Panels | None:
    """The panels of a swizzled buffer whose rows are a multiple of its swizzle wide and whose rows count
    a multiple of 8 (each panel then starts on the swizzle pattern); None where its rows are one swizzle."""
    if not swizzle or not dims:
        return None
    rows, row_bytes = math.prod(dims[:-1]), dims[-1] * elem_bytes
    if row_bytes <= swizzle or row_bytes % swizzle or rows % 8:
        return None
    return Panels(rows, dims[-1], swizzle // elem_bytes)


@dataclass(frozen=True)
class View:
    elem: str
    pointer: CExpr
    offset: CExpr
    dims: tuple[CExpr, ...]
    strides: tuple[CExpr, ...]
    storage: Storage
    root: str  # the buffer's source name, for messages
    swizzle: int = 0  # bytes of the swizzle of a shared layout for TMA/WGMMA (0: plain row-major)
    origin: tuple[CExpr, ...] | None = None  # the start along each buffer dimension; None after a reshape
    axes: tuple[int, ...] = ()  # the buffer dimension of each of this view's dimensions
    panels: Panels | None = None  # rows wider than the swizzle: the buffer lies in panels
    bounds: tuple[CExpr, ...] = ()  # the buffer's extents, where `origin` is measured
    tiled: bool = (
        False  # cut by `subspan(...).at(...)` or a `cdiv` chunkat: it may reach past the array's end
    )

    @property
    def start(self) -> CExpr:
        """A pointer to the first element (before the swizzle, which moves 16-byte chunks by address)."""
        offset = self.panels.offset(self.offset) if self.panels is not None else self.offset
        if offset.value == 0:
            return self.pointer
        return cexpr.binary("+", self.pointer, offset)

    def start_after(self, delta: CExpr) -> CExpr:
        """A pointer to the element `delta` row-major elements after the first (a WGMMA K step, an M tile)."""
        if self.panels is None:
            return cexpr.add(self.start, delta)
        return cexpr.binary("+", self.pointer, self.panels.offset(cexpr.add(self.offset, delta)))

    def element(self, indices: tuple[CExpr, ...]) -> CExpr:
        """One element: `base[offset + i * stride + ...]`, through the layout of a swizzled buffer."""
        index = self.offset
        for value, stride in zip(indices, self.strides):
            index = cexpr.add(index, cexpr.multiply(value, stride))
        if self.panels is not None:
            index = self.panels.offset(index)
        if self.swizzle:
            return cexpr.call(f"choreo::swizzled_element<{self.swizzle}>", self.pointer, index)
        return cexpr.subscript(self.pointer, index)

    def inside(self) -> tuple[CExpr, ...] | None:
        """How many elements of each dimension lie inside the buffer, for a tile that may reach past its
        end (a tail tile of a `cdiv` tiling); None where every dimension is known to fit, or where the
        view is no tile (a window never reaches past the data it is a window of)."""
        if not self.tiled or self.origin is None or not self.bounds or len(self.axes) != len(self.dims):
            return None
        left = tuple(
            cexpr.binary("-", self.bounds[axis], self.origin[axis])
            if self.origin[axis].value != 0
            else self.bounds[axis]
            for axis in self.axes
        )
        fits = all(
            room.text == extent.text
            or (room.value is not None and extent.value is not None and room.value >= extent.value)
            for room, extent in zip(left, self.dims)
        )
        return None if fits else left

    def within_array(self) -> View:
        """The corner of a tile that lies inside its array: per dimension `min(extent, max(room, 0))` of the
        elements `inside` says are there (none of a tile wholly past the end); the tile itself where it fits."""
        inside = self.inside()
        if inside is None:
            return self
        dims = tuple(
            extent
            if room.text == extent.text
            else cexpr.const(min(extent.value, max(room.value, 0)))
            if room.value is not None and extent.value is not None
            else cexpr.call("min", extent, cexpr.call("max", room, cexpr.ZERO))
            for extent, room in zip(self.dims, inside)
        )
        return replace(self, dims=dims)

    def shifted(self, indices: tuple[CExpr, ...], steps: tuple[CExpr, ...], dims: tuple[CExpr, ...]) -> View:
        """The view whose origin moves by `indices[k] * steps[k]` along each dimension, with new extents."""
        offset = self.offset
        for index, step, stride in zip(indices, steps, self.strides):
            offset = cexpr.add(offset, cexpr.multiply(index, step, stride))
        moves = [cexpr.multiply(index, step) for index, step in zip(indices, steps)]
        return replace(self, offset=offset, dims=dims, origin=self._moved(moves))

    def _moved(self, moves: list[CExpr]) -> tuple[CExpr, ...] | None:
        """`origin` after moving `moves[k]` elements along this view's dimension k."""
        if self.origin is None:
            return None
        origin = list(self.origin)
        for axis, move in zip(self.axes, moves):
            origin[axis] = cexpr.add(origin[axis], move)
        return tuple(origin)

    def drop_leading(self, indices: tuple[CExpr, ...]) -> View:
        """`x.at(i)` with fewer indices than the rank: the sub-array at those leading indices."""
        offset = self.offset
        for index, stride in zip(indices, self.strides):
            offset = cexpr.add(offset, cexpr.multiply(index, stride))
        count = len(indices)
        return replace(
            self,
            offset=offset,
            dims=self.dims[count:],
            strides=self.strides[count:],
            origin=self._moved(list(indices)),
            axes=self.axes[count:],
        )

    @property
    def is_compact(self) -> bool:
        """Whether the elements are contiguous in row-major order (dimensions of extent 1 do not count)."""
        expected = cexpr.ONE
        for dim, stride in reversed(list(zip(self.dims, self.strides))):
            if dim.value == 1:
                continue
            if stride.text != expected.text:
                return False
            expected = cexpr.multiply(expected, dim)
        return True

    def reshaped(self, dims: tuple[CExpr, ...]) -> View:
        """`span_as`: the elements stored one after another from the first one, in the shape `dims`."""
        if self.panels is not None:
            raise LoweringError(
                f"'{self.root}' lies in panels one swizzle wide (its rows are wider than its swizzle), so its "
                "elements are not one after another: reshape a buffer with rows of one swizzle"
            )
        return replace(self, dims=dims, strides=compact_strides(dims), origin=None, axes=())

    def strided(
        self, dims: tuple[CExpr, ...], strides: tuple[CExpr, ...], offsets: tuple[CExpr, ...]
    ) -> View:
        """`x.view(dims : strides).from(offsets)`: element strides of its own, so no longer a box of the buffer."""
        offset = self.offset
        for index, stride in zip(offsets, strides):
            offset = cexpr.add(offset, cexpr.multiply(index, stride))
        return replace(self, offset=offset, dims=dims, strides=strides, origin=None, axes=())

    def squeezed(self) -> View:
        """`.sqz()`: without its dimensions of extent 1 (the analysis dropped the same ones)."""
        kept = [k for k, dim in enumerate(self.dims) if dim.value != 1] or [len(self.dims) - 1]
        return replace(
            self,
            dims=tuple(self.dims[k] for k in kept),
            strides=tuple(self.strides[k] for k in kept),
            axes=tuple(self.axes[k] for k in kept) if self.axes else (),
        )

    def permuted(self, permutation: tuple[int, ...]) -> View:
        """The same elements with dimension k being this view's dimension `permutation[k]` (dma.transp); it
        keeps where it lies in its buffer (`axes` permuted alike), so a transposed tail tile stays one."""
        return replace(
            self,
            dims=tuple(self.dims[p] for p in permutation),
            strides=tuple(self.strides[p] for p in permutation),
            axes=tuple(self.axes[p] for p in permutation) if len(self.axes) == len(self.dims) else (),
        )


def compact_strides(dims: tuple[CExpr, ...]) -> tuple[CExpr, ...]:
    """Row-major strides of a buffer with these extents."""
    strides: list[CExpr] = []
    stride = cexpr.ONE
    for dim in reversed(dims):
        strides.append(stride)
        stride = cexpr.multiply(stride, dim)
    return tuple(reversed(strides))


def buffer(
    elem: str, pointer: CExpr, dims: tuple[CExpr, ...], storage: Storage, root: str, swizzle: int = 0
) -> View:
    origin = (cexpr.ZERO,) * len(dims)
    extents = tuple(d.value for d in dims)
    panels = (
        panels_of(ELEMENT_BYTES[elem], tuple(int(e) for e in extents if e is not None), swizzle)
        if None not in extents
        else None
    )
    return View(
        elem,
        pointer,
        cexpr.ZERO,
        dims,
        compact_strides(dims),
        storage,
        root,
        swizzle,
        origin,
        tuple(range(len(dims))),
        panels,
        dims,
    )


def element_count(dims: tuple[CExpr, ...]) -> CExpr:
    return cexpr.multiply(*dims)


@dataclass(frozen=True)
class TilingView:
    """`x.subspan(a, b)` (or `.step`, `.chunk`) waiting for its `.at(i, j)`."""

    view: View
    extents: tuple[CExpr, ...]
    steps: tuple[CExpr, ...]
    tail: tuple[CExpr, ...] = ()  # `.modspan(...)`: the tile index where the whole tiles end

    def at(self, indices: tuple[CExpr, ...], bounds: tuple[CExpr | None, ...] = ()) -> View:
        """Tile `indices`; one that may reach past the end of the data (`tiled`) unless each index, or its
        bound (`#i` of a bounded variable), keeps it among the whole tiles."""
        tile = self.view.shifted(indices, self.steps, self.extents)
        return replace(tile, tiled=not self._among_whole_tiles(indices, bounds))

    def _among_whole_tiles(self, indices: tuple[CExpr, ...], bounds: tuple[CExpr | None, ...]) -> bool:
        if len(bounds) != len(self.extents):
            return False
        for index, bound, dim, extent, step in zip(indices, bounds, self.view.dims, self.extents, self.steps):
            if dim.value is None or extent.value is None or not step.value:
                return False
            whole = (dim.value - extent.value) // step.value + 1
            if index.value is not None:
                if not 0 <= index.value < whole:
                    return False
            elif bound is None or bound.value is None or bound.value > whole:
                return False
        return True

    def tile(self) -> View:
        """The tile without `.at`: the first, or for a modspan what the whole tiles leave."""
        if self.tail:  # what the whole tiles leave lies inside the data
            return self.view.shifted(self.tail, self.steps, self.extents)
        return self.at((cexpr.ZERO,) * len(self.extents), (None,) * len(self.extents))


@dataclass(frozen=True)
class WindowView:
    """`x.view(a, b)` or `x.view(a, b : sa, sb)` waiting for its `.from(o0, o1)`."""

    view: View
    extents: tuple[CExpr, ...]
    strides: tuple[CExpr, ...] = ()  # written after the colon; (): the view's own

    def at(self, offsets: tuple[CExpr, ...]) -> View:
        if self.strides:
            return self.view.strided(self.extents, self.strides, offsets)
        return self.view.shifted(offsets, (cexpr.ONE,) * len(offsets), self.extents)

    def window(self) -> View:
        """Used as data without `.from`: the window at the view's first element."""
        return self.at((cexpr.ZERO,) * len(self.extents))


@dataclass(frozen=True)
class ShapeValue:
    """A shape or an integer tuple: its dimensions."""

    dims: tuple[CExpr, ...]


@dataclass(frozen=True)
class BufferSlots:
    """`shared f16 [128, 64] stage[3]`: `stage[i]` is the buffer `i * |element|` elements further (the
    element view is the array's first buffer)."""

    element: View
    counts: tuple[CExpr, ...]

    def slot(self, indices: tuple[CExpr, ...]) -> View | BufferSlots:
        """`stage[i]`, `b[i][j]`: one buffer; with fewer indices than dimensions, the sub-array they select."""
        slot = cexpr.ZERO
        for index, count in zip(indices, self.counts):
            slot = cexpr.add(cexpr.multiply(slot, count), index)
        rest = self.counts[len(indices) :]
        offset = cexpr.multiply(slot, *rest, element_count(self.element.dims))
        element = replace(self.element, offset=cexpr.add(self.element.offset, offset))
        return BufferSlots(element, rest) if rest else element


@dataclass(frozen=True)
class FutureValue:
    """A named data future: a `choreo::DataFuture` variable whose `.data` is where its copy landed.

    A TMA future has no variable (`variable` is None): its completion is an mbarrier phase
    that the lowering tracks itself.
    """

    variable: CExpr | None
    data: View | None  # None until an operation with a destination has been assigned to it
    elem: str


def accumulator_dims(symbol: Symbol, stmt: ast.Stmt) -> tuple[int, int]:
    """An accumulator's rows and columns, which its registers need at compile time (the analysis takes them
    from the MMA that uses it)."""
    shape = symbol.accumulator_shape
    if shape is None or not all(isinstance(d, int) for d in shape):
        raise LoweringError(
            f"accumulator '{symbol.name}' needs a shape known at compile time, from the mma that uses it",
            stmt,
        )
    rows, columns = (int(d) for d in shape)
    return rows, columns


@dataclass(frozen=True)
class AccumulatorRegisters:
    """An MMA accumulator: in each thread of its warpgroup, the registers of `rows / 64` m64nN fragments;
    of a warp's accumulator (mma.sync, `tile_rows` 16), those of `rows / 16` m16nN fragments, the same
    layout with one warp (cuda/warp_mma.py).

    f32 and s32 elements take one register each; f16 elements are packed two to a 32-bit register. An
    8-bit fragment (f8) is WGMMA's A from registers in its k32 layout instead, four elements a register
    (choreo_runtime.cuh, "8-bit fragments").
    """

    name: CExpr
    elem: str  # f32, f16 or s32
    rows: int
    columns: int
    tile_rows: int = 64  # 64: a warpgroup's (WGMMA); 16: a warp's (mma.sync)

    @property
    def tiles(self) -> int:
        """Fragments down the tile: a warp's 8-row tile (mma.sync m8n8) fills the top half of one."""
        return -(-self.rows // self.tile_rows)

    @property
    def packing(self) -> int:
        """Elements per 32-bit register."""
        return 1 if self.elem in ("f32", "s32") else 4 if self.eight_bit else 2

    @property
    def eight_bit(self) -> bool:
        return self.elem in ("f8_e4m3", "f8_e5m2")

    @property
    def elements(self) -> int:
        """Elements per thread: its share of the tile (one 64-row tile is spread over 128 threads)."""
        return self.tiles * self.columns // 2

    @property
    def registers(self) -> int:
        return self.elements // self.packing

    @property
    def c_type(self) -> str:
        return {"f32": "float", "s32": "int"}.get(self.elem, "unsigned")


@dataclass(frozen=True)
class AccumulatorArray:
    """`frag mc[2][3] {0.0};`: a warp's accumulators of one shape, `element` each, declared as one flat
    C array of their registers (`mc[6][R]`); `prefix` is the flat index of the leading dimensions chosen."""

    element: AccumulatorRegisters
    counts: tuple[int, ...]
    prefix: CExpr = cexpr.ZERO

    def at(self, indices: tuple[CExpr, ...]) -> AccumulatorRegisters | AccumulatorArray:
        """`mc[i][j]`: one accumulator; with fewer indices, the sub-array they select."""
        slot = self.prefix
        for index, count in zip(indices, self.counts):
            slot = cexpr.add(cexpr.multiply(slot, cexpr.const(count)), index)
        rest = self.counts[len(indices) :]
        if rest:
            return AccumulatorArray(self.element, rest, slot)
        return replace(self.element, name=cexpr.raw(f"{self.element.name.text}[{slot.text}]"))


@dataclass(frozen=True)
class RowRegisters:
    """A row vector fragment (`frag f32[64] m;`): in each thread, the 2 rows of each 64-row tile its quad owns
    (of each 16-row tile, for a warp's fragment: `tile_rows` 16)."""

    name: CExpr
    rows: int
    tile_rows: int = 64

    @property
    def tiles(self) -> int:
        return self.rows // self.tile_rows

    @property
    def registers(self) -> int:
        return 2 * self.tiles

    c_type = "float"


@dataclass(frozen=True)
class IndexTuple:
    """A bounded ituple (`index` of `with index = {x, y} in [4, 8]`): one bounded integer per element; in
    an index list it stands for all of them."""

    items: tuple[Operand, ...]


Lowered = (
    Operand
    | View
    | TilingView
    | WindowView
    | ShapeValue
    | BufferSlots
    | FutureValue
    | AccumulatorRegisters
    | AccumulatorArray
    | RowRegisters
    | IndexTuple
)
