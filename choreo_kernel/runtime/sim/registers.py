"""Elements of accumulators and fragments, as the sim's expressions see them (sim/fragments.py runs the rest)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from choreo_kernel.runtime.dtypes import numpy_dtype
from choreo_kernel.runtime.sim.arith import stored
from choreo_kernel.runtime.sim.errors import SimError
from choreo_kernel.runtime.sim.operations import Accumulator, Fragment
from choreo_kernel.runtime.sim.views import Element

NO_ELEMENTS = np.empty(0, dtype=np.float32)  # a RegisterElement reads its registers, not a flat buffer

Register = Accumulator | Fragment


def is_register(value: Any) -> bool:
    """An accumulator or a fragment, or one per thread."""
    if isinstance(value, np.ndarray) and value.dtype == object and value.size:
        value = value.flat[0]
    return isinstance(value, (Accumulator, Fragment))


def tile_of(register: Register) -> np.ndarray:
    if isinstance(register, Fragment):
        return register.tile
    if register.value is None:
        raise SimError("this accumulator has no shape yet: it takes it from its first mma")
    return register.value


def converted(register: Register, elem: str) -> Fragment:
    """`__to<T>(acc)`: the whole accumulator or fragment, element by element, as registers of type `elem`."""
    dtype = numpy_dtype(elem)
    return Fragment(stored(tile_of(register).astype(np.float32), dtype).astype(dtype))


@dataclass(frozen=True)
class RegisterElement(Element):
    """`x.at(i, j)` of a fragment or accumulator, per (virtual) thread: each may see another instance's."""

    registers: Any = None  # one Register, or one per thread
    indices: tuple[Any, ...] = ()

    def _groups(self) -> list[tuple[np.ndarray, Any, tuple[Any, ...]]]:
        if not isinstance(self.registers, np.ndarray):
            return [(tile_of(self.registers), slice(None), self.indices)]
        groups = []
        owners = np.array([id(r) for r in self.registers])
        for owner in np.unique(owners):
            mask = owners == owner
            register = self.registers[np.argmax(mask)]
            picked = tuple(i[mask] if isinstance(i, np.ndarray) else i for i in self.indices)
            groups.append((tile_of(register), mask, picked))
        return groups

    def load(self) -> Any:
        groups = self._groups()
        if len(groups) == 1 and isinstance(groups[0][1], slice):
            return groups[0][0][groups[0][2]]
        out = np.empty(len(self.registers), dtype=groups[0][0].dtype)
        for tile, mask, picked in groups:
            out[mask] = tile[picked]
        return out

    def store(self, value: Any) -> None:
        for tile, mask, picked in self._groups():
            part = value[mask] if isinstance(value, np.ndarray) and value.ndim else value
            tile[picked] = stored(part, tile.dtype)
