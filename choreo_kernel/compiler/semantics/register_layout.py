"""Which logical elements of a fragment or an accumulator each thread holds in its registers.

The CUDA lowering keeps them in the layouts of the tensor cores (choreo_runtime.cuh, "register
fragments": fragment_row, fragment_column, vector_row, fragment8_*); everything else sees logical
(i, j). A device function that takes a fragment (`call f(acc)`) sees the registers themselves, so
there the layout is part of the language: the sim hands each thread the elements this module names,
in this order, as the GPU's registers hold them.

Of a tile [64 * T, N] held by a warpgroup, thread `rank` (warp w = rank / 32, lane l) holds T * N / 2
elements; element e lies in 64-row tile t = e / (N / 2) at row t * 64 + w * 16 + l / 4 + 8 * ((e % 4) / 2)
and column ((e % (N / 2)) / 4) * 8 + (l % 4) * 2 + e % 2 (WGMMA's accumulator layout). A row vector
[64 * T] keeps 2 * T rows: element v is row (v / 2) * 64 + w * 16 + l / 4 + 8 * (v % 2), the same in the 4
lanes of a quad. A warp's (mma.sync's) are the same with 16-row tiles and w = 0. An 8-bit tile is WGMMA's
k32 A layout: element e of 64 x 32 slice s = (e % (N / 2)) / 16 is at row ... + 8 * ((e % 16) / 4 % 2) and
column s * 32 + 16 * ((e % 16) / 8) + (l % 4) * 4 + e % 4.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RegisterLayout:
    """The registers of one fragment or accumulator: its logical shape and the rows of one tile of the
    layout (64 for a warpgroup's, 16 for a warp's)."""

    shape: tuple[int, ...]  # [M] (a row vector) or [M, N]
    tile_rows: int
    eight_bit: bool = False

    @property
    def threads(self) -> int:
        """Threads that hold it together: 128 (a warpgroup) or 32 (a warp)."""
        return 2 * self.tile_rows

    @property
    def tiles(self) -> int:
        return self.shape[0] // self.tile_rows

    @property
    def elements(self) -> int:
        """Elements each thread holds."""
        if len(self.shape) == 1:
            return 2 * self.tiles
        return self.tiles * self.shape[1] // 2

    def positions(self, rank: int) -> tuple[np.ndarray, ...]:
        """The logical index of each element that thread `rank` (of `threads`) holds, in register order."""
        warp, lane = rank // 32, rank % 32
        e = np.arange(self.elements)
        if len(self.shape) == 1:
            return (e // 2 * self.tile_rows + warp * 16 + lane // 4 + 8 * (e % 2),)
        half = self.shape[1] // 2
        base = e // half * self.tile_rows + warp * 16 + lane // 4
        if self.eight_bit:
            rows = base + 8 * (e % 16 // 4 % 2)
            columns = e % half // 16 * 32 + 16 * (e % 16 // 8) + lane % 4 * 4 + e % 4
        else:
            rows = base + 8 * (e % 4 // 2)
            columns = e % half // 4 * 8 + lane % 4 * 2 + e % 2
        return rows, columns

    @property
    def replicated(self) -> bool:
        """Whether the 4 lanes of a quad hold the same elements (a row vector): after a device function
        writes them, the first lane's are kept (on CUDA, shuffled from it)."""
        return len(self.shape) == 1
