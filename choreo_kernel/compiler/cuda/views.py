"""What Choreo expressions are in the emitted CUDA: typed scalars, views as index arithmetic, shapes.

A view is a pointer, an element offset, and per dimension an extent and a stride (in
elements). Every view method (`chunkat`, `subspan(...).at`, `at`, `view(...).from`,
`span_as`, a buffer array slot) only moves the offset and replaces extents and strides, so a
chain of views folds into one subscript: `x.chunkat(i, j).at(r, c)` is
`x[(i * 16 + r) * N + j * 16 + c]`. The innermost stride is always 1.

A view also keeps where it starts along each dimension of its buffer (`origin`) and which
buffer dimension each of its own is (`axes`): a TMA copy addresses a global tile by those
coordinates, not by its offset. A shared buffer that TMA or WGMMA uses may have a swizzled
layout (`swizzle` bytes); its elements are then not where the row-major subscript says.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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

    @property
    def start(self) -> CExpr:
        """A pointer to the first element."""
        if self.offset.value == 0:
            return self.pointer
        return cexpr.binary("+", self.pointer, self.offset)

    def element(self, indices: tuple[CExpr, ...]) -> CExpr:
        """The subscript of one element: `base[offset + i * stride + ...]`."""
        if self.swizzle:
            raise LoweringError(
                f"'{self.root}' has the {self.swizzle}-byte swizzled layout that TMA and WGMMA use, so its "
                "elements cannot be read or written one by one on CUDA; copy it without .swiz for element access"
            )
        index = self.offset
        for value, stride in zip(indices, self.strides):
            index = cexpr.add(index, cexpr.multiply(value, stride))
        return cexpr.subscript(self.pointer, index)

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
        """Whether the elements are contiguous in row-major order (the strides of a whole buffer)."""
        return [s.text for s in self.strides] == [s.text for s in compact_strides(self.dims)]

    def reshaped(self, dims: tuple[CExpr, ...]) -> View:
        return replace(self, dims=dims, strides=compact_strides(dims), origin=None, axes=())


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
    )


def element_count(dims: tuple[CExpr, ...]) -> CExpr:
    return cexpr.multiply(*dims)


@dataclass(frozen=True)
class TilingView:
    """`x.subspan(a, b)` (or `.step`, `.chunk`) waiting for its `.at(i, j)`."""

    view: View
    extents: tuple[CExpr, ...]
    steps: tuple[CExpr, ...]

    def at(self, indices: tuple[CExpr, ...]) -> View:
        return self.view.shifted(indices, self.steps, self.extents)

    def tile(self) -> View:
        return replace(self.view, dims=self.extents)


@dataclass(frozen=True)
class WindowView:
    """`x.view(a, b)` waiting for its `.from(o0, o1)`."""

    view: View
    extents: tuple[CExpr, ...]


@dataclass(frozen=True)
class ShapeValue:
    """A shape or an integer tuple: its dimensions."""

    dims: tuple[CExpr, ...]


@dataclass(frozen=True)
class BufferSlots:
    """`shared f16 [128, 64] stage[3]`: `stage[i]` is the buffer `i * |element|` elements further."""

    element: View
    counts: tuple[CExpr, ...]

    def slot(self, indices: tuple[CExpr, ...]) -> View:
        slot = cexpr.ZERO
        for index, count in zip(indices, self.counts):
            slot = cexpr.add(cexpr.multiply(slot, count), index)
        offset = cexpr.multiply(slot, element_count(self.element.dims))
        return replace(self.element, offset=cexpr.add(self.element.offset, offset))


@dataclass(frozen=True)
class FutureValue:
    """A named data future: a `choreo::DataFuture` variable whose `.data` is where its copy landed.

    A TMA future has no variable (`variable` is None): its completion is an mbarrier phase
    that the lowering tracks itself.
    """

    variable: CExpr | None
    data: View | None  # None until an operation with a destination has been assigned to it
    elem: str


@dataclass(frozen=True)
class AccumulatorRegisters:
    """An MMA accumulator: in each thread of its warpgroup, the registers of `rows / 64` m64nN fragments.

    f32 elements take one register each; f16 elements are packed two to a 32-bit register.
    """

    name: CExpr
    elem: str  # f32 or f16
    rows: int
    columns: int

    @property
    def tiles(self) -> int:
        return self.rows // 64

    @property
    def registers(self) -> int:
        per_tile = self.columns // 2 if self.elem == "f32" else self.columns // 4
        return self.tiles * per_tile

    @property
    def c_type(self) -> str:
        return "float" if self.elem == "f32" else "unsigned"


Lowered = (
    Operand | View | TilingView | WindowView | ShapeValue | BufferSlots | FutureValue | AccumulatorRegisters
)
