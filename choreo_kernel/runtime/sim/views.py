"""Views of spanned data (language.md 5) as boxes over a NumPy base array.

A view keeps, for each axis of its base buffer, a start and an extent; an axis indexed
away by `.at` keeps its start and drops its extent.  A start is an int while every active
thread sees the same tile, and an int array (one entry per thread) once the tile depends
on the thread: reads then gather, and writes scatter, every thread's tile in one NumPy
call.  Indices are checked against the view they index, so reading past a tile is an
error even where the base buffer would have room.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from choreo_kernel.runtime.sim.arith import saturated
from choreo_kernel.runtime.sim.errors import SimError

Start = Any  # int | np.ndarray of one start per thread


@dataclass(frozen=True)
class Bounded:
    """A parallel, foreach or with variable (or arithmetic on one): a value and its bound `#x`."""

    value: Any  # int | np.ndarray
    bound: int


@dataclass(frozen=True)
class Element:
    """One element of a buffer, per thread: what a full `.at(...)` selects, to load or store."""

    base: np.ndarray
    index: tuple[Start, ...]

    def load(self) -> Any:
        return self.base[self.index]

    def store(self, value: Any) -> None:
        if isinstance(value, np.ndarray) and not any(isinstance(i, np.ndarray) for i in self.index):
            value = value[-1]  # every thread writes the same element: the last one wins, as in a race
        self.base[self.index] = saturated(value, self.base.dtype)


@dataclass(frozen=True)
class View:
    base: np.ndarray
    starts: tuple[Start, ...]
    sizes: tuple[int | None, ...]  # None: the axis was indexed away and stays at its start

    @classmethod
    def whole(cls, base: np.ndarray) -> View:
        return cls(base, (0,) * base.ndim, tuple(base.shape))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(size for size in self.sizes if size is not None)

    @property
    def varying(self) -> bool:
        return any(isinstance(start, np.ndarray) for start in self.starts)

    def _kept(self) -> list[int]:
        return [axis for axis, size in enumerate(self.sizes) if size is not None]

    def _with(self, changes: dict[int, tuple[Start, int | None]]) -> View:
        starts, sizes = list(self.starts), list(self.sizes)
        for axis, (offset, size) in changes.items():
            starts[axis] = starts[axis] + offset
            sizes[axis] = size
        return View(self.base, tuple(starts), tuple(sizes))

    def _rank_check(self, count: int, method: str) -> list[int]:
        kept = self._kept()
        if count != len(kept):
            raise SimError(f"'.{method}' takes {len(kept)} index(es) for data of shape {list(self.shape)}")
        return kept

    def chunkat(self, indices: list[Bounded | None]) -> View:
        """Tile `indices` of the tiling that splits each axis by its index's bound (None: keep whole)."""
        changes: dict[int, tuple[Start, int | None]] = {}
        for axis, index in zip(self._rank_check(len(indices), "chunkat"), indices):
            if index is None:
                continue
            check_range(index.value, index.bound, "the chunkat index")
            extent = self.sizes[axis]
            assert extent is not None
            size = extent // index.bound
            changes[axis] = (index.value * size, size)
        return self._with(changes)

    def tile(self, extents: list[int], steps: list[int], indices: list[Any]) -> View:
        """`subspan(extents).step(steps).at(indices)`: the tile starting at `index * step`."""
        changes: dict[int, tuple[Start, int | None]] = {}
        for axis, extent, step, index in zip(self._rank_check(len(indices), "at"), extents, steps, indices):
            size = self.sizes[axis]
            assert size is not None
            check_range(index, (size - extent) // step + 1, "the tile index")
            changes[axis] = (index * step, extent)
        return self._with(changes)

    def window(self, extents: list[int], offsets: list[Any]) -> View:
        """`view(extents).from(offsets)`."""
        changes: dict[int, tuple[Start, int | None]] = {}
        for axis, extent, offset in zip(self._rank_check(len(offsets), "from"), extents, offsets):
            size = self.sizes[axis]
            assert size is not None
            check_range(offset, size - extent + 1, "the window offset")
            changes[axis] = (offset, extent)
        return self._with(changes)

    def at(self, indices: list[Any]) -> View | Element:
        """Index the leading axes; with as many indices as the rank, one element."""
        kept = self._kept()
        if len(indices) > len(kept):
            raise SimError(f"'.at' takes at most {len(kept)} index(es) for data of shape {list(self.shape)}")
        changes: dict[int, tuple[Start, int | None]] = {}
        for position, (axis, index) in enumerate(zip(kept, indices)):
            size = self.sizes[axis]
            assert size is not None
            check_range(index, size, f"the index of dimension {position}")
            changes[axis] = (index, None)
        view = self._with(changes)
        return Element(view.base, view.starts) if len(indices) == len(kept) else view

    def reshape(self, dims: tuple[int, ...]) -> View:
        """`span_as(dims)`: the same elements in another shape, still writable in place."""
        if math.prod(dims) != math.prod(self.shape):
            raise SimError(
                f"span_as({list(dims)}) does not hold the {math.prod(self.shape)} elements of the data"
            )
        kept = self._kept()
        first = kept[0] if kept else self.base.ndim
        whole_suffix = kept == list(range(first, self.base.ndim)) and all(
            _is_zero(self.starts[axis]) and self.sizes[axis] == self.base.shape[axis] for axis in kept
        )
        if whole_suffix:
            base = _reshaped(self.base, self.base.shape[:first] + dims)
            return View(base, self.starts[:first] + (0,) * len(dims), self.sizes[:first] + dims)
        if not self.varying:
            return View.whole(_reshaped(self.read(), dims))
        raise SimError("span_as of a tile that differs between threads is not supported by the sim")

    def _index(self) -> tuple[Any, ...]:
        if not self.varying:
            return tuple(
                start if size is None else slice(start, start + size)
                for start, size in zip(self.starts, self.sizes)
            )
        rank = len(self._kept())
        index: list[Any] = []
        position = 0
        for start, size in zip(self.starts, self.sizes):
            column = np.reshape(start, (-1,) + (1,) * rank)
            if size is None:
                index.append(column)
                continue
            extent = [1] * (rank + 1)
            extent[position + 1] = size
            index.append(column + np.arange(size).reshape(extent))
            position += 1
        return tuple(index)

    def read(self) -> np.ndarray:
        """The tile: of `shape`, or `(threads, *shape)` when it differs between threads."""
        return self.base[self._index()]

    def write(self, values: Any) -> None:
        self.base[self._index()] = saturated(values, self.base.dtype)

    def regroup(self, old: np.ndarray, new: np.ndarray, count: int) -> View:
        """The same per-thread tiles, keyed by groups `new` instead of `old` (ids below `count`)."""
        if not self.varying:
            return self

        def move(start: Start) -> Start:
            if not isinstance(start, np.ndarray):
                return start
            table = np.zeros(count, dtype=start.dtype)
            table[old] = start
            return table[new]

        return View(self.base, tuple(move(start) for start in self.starts), self.sizes)


@dataclass(frozen=True)
class Tiling:
    """`x.subspan(a, b)` or `.step(...)`, waiting for its `.at(i, j)`."""

    view: View
    extents: list[int]
    steps: list[int]


@dataclass(frozen=True)
class Window:
    """`x.view(a, b)`, waiting for its `.from(o0, o1)`."""

    view: View
    extents: list[int]


def check_range(value: Any, limit: int, what: str) -> None:
    """0 <= value < limit, for an index that may differ between threads."""
    if isinstance(value, np.ndarray):
        if not value.size:
            return
        low, high = int(value.min()), int(value.max())
        bad = low if low < 0 else high
        if low >= 0 and high < limit:
            return
    else:
        bad = int(value)
        if 0 <= bad < limit:
            return
    raise SimError(f"{what} is {bad}, outside 0..{limit - 1}")


def _is_zero(start: Start) -> bool:
    return not isinstance(start, np.ndarray) and start == 0


def _reshaped(array: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    result = array.reshape(dims)
    if not np.may_share_memory(result, array):
        raise SimError(
            "span_as of a non-contiguous view would copy the data; take span_as of the whole buffer"
        )
    return result
