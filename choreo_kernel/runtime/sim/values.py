"""Run-time values besides numbers, views, events and futures: shapes and declared buffers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from choreo_kernel.runtime.sim.errors import SimError
from choreo_kernel.runtime.sim.views import View, check_range, compact_strides


@dataclass(frozen=True)
class IntTuple:
    """A shape (`[128, 64]`, `x.span`) or an ituple (`{1, 2}`): integers with `s(i)` access."""

    items: tuple[int, ...]

    def item(self, index: int) -> int:
        if not -len(self.items) <= index < len(self.items):
            raise SimError(f"dimension {index} is out of range for a rank-{len(self.items)} shape")
        return self.items[index]


@dataclass(frozen=True)
class TupleOf:
    """A bounded ituple as stored in a scope: the names its elements are stored under (`("x", "y")` for
    `index = {x, y}`, made-up names for anonymous elements). Read by name each time, so the tuple always
    holds its elements' current values (those of a `foreach` over one of them, inside it)."""

    elements: tuple[str, ...]


@dataclass(frozen=True)
class BoundedTuple:
    """A bounded ituple's value: one bounded integer per element; spliced into index lists."""

    items: tuple[Any, ...]  # Bounded


@dataclass(frozen=True)
class Buffer:
    """A declared buffer or buffer array.

    `local` buffers belong to one thread each, so their base has a leading axis with one
    row per thread of the block; a view of one starts at the active threads' rows.
    """

    base: np.ndarray
    slots: int  # leading axes (after the thread axis) that index a buffer array: `stage[slot]`
    per_thread: bool

    def view(self, lanes: np.ndarray) -> View:
        if not self.per_thread:
            return View.whole(self.base)
        rest = tuple(self.base.shape[1:])
        return View(self.base, lanes * math.prod(rest), rest, compact_strides(rest))

    def share_store(self, index: Any, span: int) -> None:
        """Give the elements a store between levels wrote in a lane's copy (flat `index`, per lane) to the
        other `span - 1` threads of its instance: on the GPU every one of them made that store."""
        row = self.base.size // self.base.shape[0]
        index = np.asarray(index).reshape(-1)
        copies = (index[:, None] + row * np.arange(1, span)).ravel()
        flat = self.base.reshape(-1)
        flat[copies] = np.repeat(flat[index], span - 1)

    def slot(self, indices: list[Any], lanes: np.ndarray) -> View | Slots:
        """`stage[slot]`, `b[i][j]`: one buffer of the array, by physical slot; with fewer indices than the
        array's dimensions, the sub-array they select."""
        if len(indices) > self.slots:
            raise SimError(f"this buffer array has {self.slots} dimension(s), indexed with {len(indices)}")
        if len(indices) < self.slots:
            return Slots(self, tuple(indices))
        whole = self.view(lanes)
        for position, index in enumerate(indices):
            check_range(index, whole.dims[position], "the buffer slot")
        view = whole.at(indices)
        assert isinstance(view, View)
        return view


@dataclass(frozen=True)
class Slots:
    """`b[i]` of a two-dimensional buffer array `b[2][3]`: waiting for its next index."""

    buffer: Buffer
    indices: tuple[Any, ...]

    def slot(self, indices: list[Any], lanes: np.ndarray) -> View | Slots:
        return self.buffer.slot([*self.indices, *indices], lanes)


def reshaped_slots(slots: Buffer | Slots, dims: tuple[int, ...], lanes: np.ndarray) -> View:
    """`b[i].span_as(dims)` of a sub-array of buffers (or of a whole array): its buffers stored one after
    another in the shape `dims`, or only its first buffer where `dims` holds one buffer's elements
    (as the analysis decides, resolve/views.py)."""
    buffer, indices = (slots, []) if isinstance(slots, Buffer) else (slots.buffer, list(slots.indices))
    whole = buffer.view(lanes).at(indices) if indices else buffer.view(lanes)
    assert isinstance(whole, View)
    first = whole.at([0] * (buffer.slots - len(indices)))
    assert isinstance(first, View)
    return (first if math.prod(dims) == math.prod(first.dims) else whole).reshape(dims)
