"""Views of spanned data (language.md 5) as strided windows of a buffer's elements.

A view is, as in the CUDA lowering (compiler/cuda/views.py), an element offset into its base
buffer (C-ordered, addressed flat) and an extent and a stride per dimension: every view
method only moves the offset and replaces extents and strides, so strided views
(`x.view(a, b : sa, sb)`), `.sqz()`, transposes and reshapes are views too. An offset is an
int while every active thread sees the same tile, and an int array (one entry per thread)
once the tile depends on the thread: reads then gather, and writes scatter, every thread's
tile in one NumPy call. Indices are checked against the view they index, so reading past a
tile is an error even where the base buffer would have room; a view never reaches outside
its base buffer.

The one exception is a tail tile (language.md 5.1): a `subspan(...).at(...)` tile (or a `chunkat` by a
`cdiv` bound) that starts inside the data it tiles but reaches past its end (the last tile of a `cdiv`
tiling), or lies wholly past it, along a dimension where that data ends where its array does. Such a
view keeps, per dimension, how many of its elements are in the array (`edge`). Every copy takes it, as
Croqtile's predicated copies and TMA do: a read gives zeros past the end, a write (a copy into it,
`mma.store`, `mma.store.mask`) stores only the elements that exist; a padded copy leaves its fill
there. Anything else is the range error that the index would have been.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from choreo_kernel.runtime.sim.arith import stored
from choreo_kernel.runtime.sim.errors import SimError

Start = Any  # int | np.ndarray of one offset per thread


@dataclass(frozen=True)
class Bounded:
    """A parallel, foreach or with variable (or arithmetic on one): a value and its bound `#x`."""

    value: Any  # int | np.ndarray
    bound: int


@dataclass(frozen=True)
class Element:
    """One element of a buffer, per thread: what a full `.at(...)` selects, to load or store."""

    flat: np.ndarray
    index: Start

    def load(self) -> Any:
        return self.flat[self.index]

    def store(self, value: Any) -> None:
        if isinstance(value, np.ndarray) and not isinstance(self.index, np.ndarray):
            value = value[-1]  # every thread writes the same element: the last one wins, as in a race
        self.flat[self.index] = stored(value, self.flat.dtype)


@dataclass(frozen=True)
class View:
    base: np.ndarray  # C-contiguous
    offset: Start
    dims: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    edge: tuple[Any, ...] | None = None  # a tail tile: the elements of each dimension inside the array
    edge_error: str = ""  # what its index would have been reported as, had it not been a tail
    box: bool = True  # each dimension runs along an axis of the base (not after a reshape, a strided window)
    axes: tuple[int, ...] | None = None  # the base axis of each dimension; None: the trailing ones

    @classmethod
    def whole(cls, base: np.ndarray) -> View:
        return cls(base, 0, tuple(base.shape), compact_strides(tuple(base.shape)))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.dims

    @property
    def along(self) -> tuple[int, ...]:
        """The base axis each dimension runs along (of a box)."""
        if self.axes is not None:
            return self.axes
        return tuple(range(self.base.ndim - len(self.dims), self.base.ndim))

    @property
    def varying(self) -> bool:
        return isinstance(self.offset, np.ndarray)

    @property
    def flat(self) -> np.ndarray:
        return self.base.reshape(-1)

    def _moved(self, indices: list[Any], steps: list[int]) -> Start:
        offset = self.offset
        for index, step in zip(indices, steps):
            offset = offset + index * step
        return offset

    def _whole(self) -> None:
        """Refuse a tail tile where only copies and accumulator stores take one."""
        if self.edge is not None:
            raise SimError(
                f"{self.edge_error}: only copies and 'mma.store' take a tile that reaches past the end "
                "of the array"
            )

    def _rank_check(self, count: int, method: str) -> None:
        self._whole()
        self._rank_is(count, method)

    def _rank_is(self, count: int, method: str) -> None:
        if count != len(self.dims):
            raise SimError(
                f"'.{method}' takes {len(self.dims)} index(es) for data of shape {list(self.dims)}"
            )

    def chunkat(self, indices: list[Bounded | None], tiles: tuple[int | None, ...] | None = None) -> View:
        """Tile `indices` of the tiling that splits each dimension by its index's bound (None: keep whole);
        where `tiles` gives t (the bound is cdiv(dimension, t)), of the tiles of t, as `subspan(t).at(i)`:
        the last one is a tail tile when t does not divide the dimension."""
        if tiles is None or all(tile is None for tile in tiles):
            self._whole()
        self._rank_is(len(indices), "chunkat")
        dims, moves, steps = list(self.dims), [], []
        for axis, index in enumerate(indices):
            if index is None:
                moves.append(0)
                continue
            check_range(index.value, index.bound, "the chunkat index")
            tile = tiles[axis] if tiles is not None else None
            dims[axis] = self.dims[axis] // index.bound if tile is None else tile
            moves.append(index.value)
        if tiles is not None:
            return self.tile(dims, dims, moves)
        steps = [dim * stride for dim, stride in zip(dims, self.strides)]
        return replace(self, offset=self._moved(moves, steps), dims=tuple(dims))

    def tile(self, extents: list[int], steps: list[int], indices: list[Any]) -> View:
        """`subspan(extents).step(steps).at(indices)`: the tile starting at `index * step`; past the whole
        tiles, along a dimension that ends where the array does, a tail tile (or one wholly past the end)."""
        self._rank_is(len(indices), "at")
        error = ""
        for size, extent, step, index, ends in zip(self.dims, extents, steps, indices, self._ends()):
            limit = (size - extent) // step + 1
            if not (ends and _beyond(index, limit)):
                check_range(index, limit, "the tile index")
            elif not error:
                error = range_message(index, limit, "the tile index")
        moves = [step * stride for step, stride in zip(steps, self.strides)]
        offset = self._moved(indices, moves)
        inside = self.edge or self.dims
        edge = tuple(
            np.clip(np.asarray(room) - np.asarray(index) * step, 0, extent)
            for room, extent, step, index in zip(inside, extents, steps, indices)
        )
        if all(bool(np.all(room == extent)) for room, extent in zip(edge, extents)):
            return replace(self, offset=offset, dims=tuple(extents), edge=None, edge_error="")
        return replace(
            self, offset=offset, dims=tuple(extents), edge=edge, edge_error=error or self.edge_error
        )

    def _ends(self) -> tuple[bool, ...]:
        """Per dimension, whether the view ends where its array does along that axis (for every thread), so
        that what lies past its end lies past the array's: there a tile may reach past it. A reshape or a
        strided window runs along no axis of the base."""
        if not self.box:
            return (False,) * len(self.dims)
        shape = self.base.shape
        base_strides = compact_strides(tuple(shape))
        inside = self.edge or self.dims
        ends = []
        for dim, axis, room in zip(self.dims, self.along, inside):
            start = (np.asarray(self.offset) // base_strides[axis]) % shape[axis]
            cut = np.asarray(room) < dim  # a tail tile already stops at the array's end there
            ends.append(bool(np.all(cut | (start + np.asarray(room) >= shape[axis]))))
        return tuple(ends)

    def _mask(self, limits: tuple[Any, ...]) -> np.ndarray:
        """Which elements of the tile lie below `limits` per dimension (ints, or one per thread)."""
        lead = 1 if self.varying else 0
        mask = np.ones((1,) * lead + self.dims, dtype=bool)
        for axis, (dim, limit) in enumerate(zip(self.dims, limits)):
            shape = [1] * (lead + len(self.dims))
            shape[lead + axis] = dim
            bound = np.asarray(limit)
            if bound.ndim:  # one per thread; a tile that every thread shares: the last one wins
                bound = bound.reshape((-1,) + (1,) * len(self.dims)) if lead else bound.reshape(-1)[-1]
            mask = mask & (np.arange(dim).reshape(shape) < bound)
        return mask

    def read_filled(self) -> np.ndarray:
        """The tile as a copy reads it: of a tail tile, zeros past the array's end (as TMA fills them)."""
        if self.edge is None:
            return self.read()
        mask = self._mask(self.edge)
        grid = self._grid()
        mask = np.broadcast_to(mask, grid.shape)
        values = self.flat[np.where(mask, grid, 0)]
        return np.where(mask, values, np.zeros((), dtype=self.base.dtype)).astype(self.base.dtype)

    def write_clipped(self, values: Any, limits: tuple[Any, ...] | None = None) -> None:
        """A write into a tail tile, or a masked store: only the elements inside the array (and below
        `limits`, the rows and columns of `mma.store.mask`, the columns left out where there is one) are
        written, as on CUDA."""
        bounds = list(self.edge or self.dims)
        for axis, limit in enumerate(limits or ()):  # rows first, then columns, as on CUDA
            position = max(len(self.dims) - 2, 0) + axis
            bounds[position] = np.minimum(bounds[position], np.maximum(limit, 0))
        grid = self._grid()
        mask = np.broadcast_to(self._mask(tuple(bounds)), grid.shape)
        values = np.broadcast_to(stored(values, self.base.dtype), grid.shape)
        self.flat[grid[mask]] = values[mask]

    def window(self, extents: list[int], offsets: list[Any], strides: list[int] | None = None) -> View:
        """`view(extents).from(offsets)`; with `strides` (`view(a, b : sa, sb)`), the window of any rank
        whose element (i, j) is `(o0 + i) * sa + (o1 + j) * sb` elements after this view's first one."""
        self._whole()
        box = strides is None and self.box  # a window of strides of its own is no box of the array
        if len(offsets) != len(extents):
            raise SimError(f"'.from' takes {len(extents)} offset(s), got {len(offsets)}")
        if strides is None:
            self._rank_check(len(offsets), "from")
            for size, extent, offset in zip(self.dims, extents, offsets):
                check_range(offset, size - extent + 1, "the window offset")
            strides = list(self.strides)
        offset = self._moved(offsets, strides)
        view = View(
            self.base, offset, tuple(extents), tuple(strides), box=box, axes=self.along if box else None
        )
        view.check_reach()
        return view

    def at(self, indices: list[Any]) -> View | Element:
        """Index the leading dimensions; with as many indices as the rank, one element."""
        self._whole()
        if len(indices) > len(self.dims):
            raise SimError(
                f"'.at' takes at most {len(self.dims)} index(es) for data of shape {list(self.dims)}"
            )
        for position, (size, index) in enumerate(zip(self.dims, indices)):
            check_range(index, size, f"the index of dimension {position}")
        offset = self._moved(indices, list(self.strides))
        count = len(indices)
        if count == len(self.dims):
            return Element(self.flat, offset)
        return replace(
            self, offset=offset, dims=self.dims[count:], strides=self.strides[count:], axes=self.along[count:]
        )

    def reshape(self, dims: tuple[int, ...]) -> View:
        """`span_as(dims)`: the elements stored one after another from the first one, in another shape
        (the data's own elements where they are contiguous), still writable in place."""
        if math.prod(dims) != math.prod(self.dims):
            raise SimError(
                f"span_as({list(dims)}) does not hold the {math.prod(self.dims)} elements of the data"
            )
        view = View(self.base, self.offset, dims, compact_strides(dims), box=False)
        view.check_reach()
        return view

    def squeezed(self) -> View:
        """`.sqz()`: without the dimensions of extent 1."""
        kept = [k for k, dim in enumerate(self.dims) if dim != 1] or [len(self.dims) - 1]
        edge = None
        if self.edge is not None:  # a tail tile stays one: a dropped dimension past the end empties it
            inside = np.prod(
                [np.asarray(self.edge[k]) for k in range(len(self.dims)) if k not in kept], axis=0
            )
            edge = tuple(np.asarray(self.edge[k]) * inside for k in kept)
        return replace(
            self,
            dims=tuple(self.dims[k] for k in kept),
            strides=tuple(self.strides[k] for k in kept),
            edge=edge,
            axes=tuple(self.along[k] for k in kept),
        )

    def permuted(self, permutation: tuple[int, ...]) -> View:
        """The same elements with dimension k being this view's dimension `permutation[k]` (dma.transp);
        a tail tile keeps its edges, permuted alike."""
        edge = None if self.edge is None else tuple(self.edge[p] for p in permutation)
        return replace(
            self,
            dims=tuple(self.dims[p] for p in permutation),
            strides=tuple(self.strides[p] for p in permutation),
            edge=edge,
            box=False,
        )

    def corner(self, low: list[int], dims: tuple[int, ...], edge: tuple[Any, ...] | None = None) -> View:
        """The sub-view of extents `dims` starting at `low` (where dma.pad places its source); `edge`: of a
        tail source, the part of the corner that its elements inside the array fill."""
        self._whole()
        for size, start, extent in zip(self.dims, low, dims):
            if not 0 <= start <= size - extent:
                raise SimError(f"a padded copy of shape {list(dims)} does not fit {list(self.dims)} at {low}")
        return replace(self, offset=self._moved(low, list(self.strides)), dims=dims, edge=edge)

    def check_reach(self) -> None:
        """The view's elements lie inside its base buffer (a strided view or a reshape could leave it)."""
        low = high = self.offset
        for dim, stride in zip(self.dims, self.strides):
            if dim > 0:
                low, high = low + min(0, (dim - 1) * stride), high + max(0, (dim - 1) * stride)
        low, high = int(np.min(low)), int(np.max(high))
        if math.prod(self.dims) and not (0 <= low and high < self.base.size):
            raise SimError(
                f"this view reaches element {high if high >= self.base.size else low} of a buffer of "
                f"{self.base.size} elements"
            )

    def indices(self) -> np.ndarray:
        """The flat index of every element in the base (per thread where the tile differs between threads)."""
        return self._grid()

    def _grid(self) -> np.ndarray:
        """The flat index of every element: of `dims`, or `(threads, *dims)` when it differs between threads."""
        index = np.zeros(self.dims, dtype=np.int64)
        for axis, (dim, stride) in enumerate(zip(self.dims, self.strides)):
            shape = [1] * len(self.dims)
            shape[axis] = dim
            index = index + np.arange(dim, dtype=np.int64).reshape(shape) * stride
        if not self.varying:
            return index + self.offset
        return np.reshape(self.offset, (-1,) + (1,) * len(self.dims)) + index

    def _strided(self) -> np.ndarray:
        """The tile as a NumPy view of the base (one offset for every thread)."""
        itemsize = self.base.itemsize
        flat = self.flat[self.offset :]
        # as_strided cannot rebuild some ml_dtypes types from their array interface (f8_e5m2 is '<f1'):
        # stride their bits, then view them as the type again
        bits = flat.view(f"u{itemsize}") if itemsize in (1, 2, 4, 8) else flat
        tile = as_strided(bits, self.dims, tuple(stride * itemsize for stride in self.strides))
        return tile.view(self.base.dtype)

    def read(self) -> np.ndarray:
        """The tile: of `shape`, or `(threads, *shape)` when it differs between threads."""
        self._whole()
        if self.varying:
            return self.flat[self._grid()]
        if not math.prod(self.dims):
            return np.empty(self.dims, dtype=self.base.dtype)
        return self._strided()

    def write(self, values: Any) -> None:
        self._whole()
        values = stored(values, self.base.dtype)
        if self.varying or not math.prod(self.dims):
            self.flat[self._grid()] = values
        else:
            self._strided()[...] = values

    def regroup(self, old: np.ndarray, new: np.ndarray, count: int) -> View:
        """The same per-thread tiles, keyed by groups `new` instead of `old` (ids below `count`)."""
        if not self.varying:
            return self
        table = np.zeros(count, dtype=self.offset.dtype)
        table[old] = self.offset
        edge = None
        if self.edge is not None:
            edge = tuple(
                _regrouped(np.broadcast_to(limit, self.offset.shape), old, new, count) for limit in self.edge
            )
        return replace(self, offset=table[new], edge=edge)


@dataclass(frozen=True)
class Tiling:
    """`x.subspan(a, b)` or `.step(...)`, waiting for its `.at(i, j)`."""

    view: View
    extents: list[int]
    steps: list[int]
    tail: list[int] | None = None  # `.modspan(...)`: the tile index where the whole tiles end

    def first(self) -> View:
        """The tile without `.at`: the first, or for a modspan what the whole tiles leave."""
        return self.view.tile(self.extents, self.steps, self.tail or [0] * len(self.extents))


@dataclass(frozen=True)
class Window:
    """`x.view(a, b)` or `x.view(a, b : sa, sb)`, waiting for its `.from(o0, o1)`."""

    view: View
    extents: list[int]
    strides: list[int] | None = None


def compact_strides(dims: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides of a buffer with these extents."""
    strides = []
    stride = 1
    for dim in reversed(dims):
        strides.append(stride)
        stride *= dim
    return tuple(reversed(strides))


def check_range(value: Any, limit: int, what: str) -> None:
    """0 <= value < limit, for an index that may differ between threads."""
    message = range_message(value, limit, what)
    if message:
        raise SimError(message)


def range_message(value: Any, limit: int, what: str) -> str:
    """How an index outside 0..limit-1 is reported ("" where it is inside)."""
    if isinstance(value, np.ndarray):
        if not value.size:
            return ""
        low, high = int(value.min()), int(value.max())
        bad = low if low < 0 else high
        if low >= 0 and high < limit:
            return ""
    else:
        bad = int(value)
        if 0 <= bad < limit:
            return ""
    return f"{what} is {bad}, outside 0..{limit - 1}"


def _beyond(index: Any, limit: int) -> bool:
    """A tile index past the whole tiles, never negative: a tail tile (or one wholly past the end)."""
    values = np.asarray(index)
    return bool(values.size) and int(values.min()) >= 0 and int(values.max()) >= limit


def _regrouped(values: np.ndarray, old: np.ndarray, new: np.ndarray, count: int) -> np.ndarray:
    table = np.zeros(count, dtype=np.int64)
    table[old] = values
    return table[new]
