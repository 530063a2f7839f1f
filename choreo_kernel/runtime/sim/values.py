"""Run-time values besides numbers, views, events and futures: shapes and declared buffers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from choreo_kernel.runtime.sim.errors import SimError
from choreo_kernel.runtime.sim.views import View, check_range


@dataclass(frozen=True)
class IntTuple:
    """A shape (`[128, 64]`, `x.span`) or an ituple (`{1, 2}`): integers with `s(i)` access."""

    items: tuple[int, ...]

    def item(self, index: int) -> int:
        if not -len(self.items) <= index < len(self.items):
            raise SimError(f"dimension {index} is out of range for a rank-{len(self.items)} shape")
        return self.items[index]


@dataclass(frozen=True)
class Buffer:
    """A declared buffer or buffer array.

    `local` buffers belong to one thread each, so their base has a leading axis with one
    row per thread of the block; a view of one indexes that axis with the active threads.
    """

    base: np.ndarray
    slots: int  # leading axes (after the thread axis) that index a buffer array: `stage[slot]`
    per_thread: bool

    def view(self, lanes: np.ndarray) -> View:
        if not self.per_thread:
            return View.whole(self.base)
        return View(self.base, (lanes,) + (0,) * (self.base.ndim - 1), (None, *self.base.shape[1:]))

    def slot(self, indices: list[Any], lanes: np.ndarray) -> View:
        """`stage[slot]`: one buffer of the array, by physical slot."""
        if len(indices) != self.slots:
            raise SimError(f"this buffer array has {self.slots} dimension(s), indexed with {len(indices)}")
        whole = self.view(lanes)
        lead = int(self.per_thread)
        for position, index in enumerate(indices):
            check_range(index, self.base.shape[lead + position], "the buffer slot")
        starts = whole.starts[:lead] + tuple(indices) + whole.starts[lead + self.slots :]
        sizes = whole.sizes[:lead] + (None,) * self.slots + whole.sizes[lead + self.slots :]
        return View(self.base, starts, sizes)
