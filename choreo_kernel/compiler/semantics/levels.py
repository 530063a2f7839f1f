"""Parallel levels and storage kinds: the vocabulary every pass and backend shares.

Levels, outermost first (language.md 4.1): a cluster of blocks, a block (a CUDA thread
block), a warpgroup (`group-4`, 4 warps), a warp (`group`) and a thread. A warpgroup, a warp
and a thread have a fixed number of threads per instance; a block has as many as the levels
inside it make.
"""

from __future__ import annotations

from enum import Enum


class _Word(str, Enum):
    """An enum whose members are the source words themselves: `Level.BLOCK == "block"` and
    `f"{Level.BLOCK}"` is `block`, so messages and emitted comments read as the user wrote them."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Level(_Word):
    CLUSTER = "cluster"
    BLOCK = "block"
    WARPGROUP = "group-4"
    WARP = "group"
    THREAD = "thread"

    @property
    def rank(self) -> int:
        """Nesting order: a level nests only inside levels of smaller rank."""
        return _RANK[self]

    @property
    def unit(self) -> int | None:
        """Threads per instance of a warpgroup, a warp or a thread; None for a block or a cluster."""
        return _UNIT.get(self)

    @classmethod
    def named(cls, word: str) -> Level | None:
        """The level a source word names (`group-4`), or None."""
        try:
            return cls(word)
        except ValueError:
            return None


_RANK = {Level.CLUSTER: -1, Level.BLOCK: 0, Level.WARPGROUP: 1, Level.WARP: 2, Level.THREAD: 3}
_UNIT = {Level.WARPGROUP: 128, Level.WARP: 32, Level.THREAD: 1}
WARPGROUP_THREADS = 128
WARP_THREADS = 32
MAX_THREADS_PER_BLOCK = 1024
REGISTER_TILE_ROWS = {
    Level.WARPGROUP: 64,
    Level.WARP: 16,
}  # the rows of one tile of a level's register layout


def register_level(levels: tuple[Level, ...]) -> Level | None:
    """Whose registers an MMA, an accumulator or a fragment uses, by the group levels around it: a
    warpgroup's (WGMMA's layouts) where a `group-4` encloses it, else a warp's (mma.sync's) where a `group`
    does; None outside both (semantics/launch.py's register_owner also reads `thread` scopes)."""
    if Level.WARPGROUP in levels:
        return Level.WARPGROUP
    if Level.WARP in levels:
        return Level.WARP
    return None


class Storage(_Word):
    """Where a buffer lives: device memory (host level), one block's shared memory, one thread's registers."""

    GLOBAL = "global"
    SHARED = "shared"
    LOCAL = "local"

    @classmethod
    def named(cls, word: str) -> Storage | None:
        try:
            return cls(word)
        except ValueError:
            return None
