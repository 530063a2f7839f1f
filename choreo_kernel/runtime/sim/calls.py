"""Device function calls and atomics on the sim, with the GPU's meaning.

A call runs the device function natively (device_library.py) once for each thread of the frame,
as each GPU thread that reaches it does: scalars by value, data as the address of its first
element in the buffer's row-major memory, so the function sees the same neighbours it would on
the GPU, and a fragment as the thread's own registers of it (ThreadRegisters). An atomic serializes the frame's threads in their order: each sees the element as the
threads before it left it, and gets that as its old value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.builtins import atomic_arity, register_action
from choreo_kernel.compiler.analysis.values import NARROW_FLOAT_TYPES
from choreo_kernel.compiler.semantics.register_layout import RegisterLayout
from choreo_kernel.runtime.dtypes import element_type_of, numpy_dtype
from choreo_kernel.runtime.sim import arith
from choreo_kernel.runtime.sim.device_library import DeviceLibrary, DeviceStop
from choreo_kernel.runtime.sim.errors import SimError
from choreo_kernel.runtime.sim.frames import Frame
from choreo_kernel.runtime.sim.registers import tile_of
from choreo_kernel.runtime.sim.views import Bounded, Element, View


class DeviceEvaluation:
    """The `_device_call` case of the sim's expressions, and its atomics."""

    device: DeviceLibrary | None
    if TYPE_CHECKING:

        def value(self, expr: ast.Expr, frame: Frame) -> Any: ...

        def view(self, expr: ast.Expr, frame: Frame) -> View: ...

        def element(self, expr: ast.Expr, frame: Frame) -> Element: ...

    def _device_call(self, expr: ast.DeviceCall, frame: Frame) -> Any:
        if register_action(expr.callee) is not None:
            return None  # setmaxnreg: the sim's threads have no registers to trade
        device = self.device
        site = device.sites.get(id(expr)) if device is not None else None
        if device is None or site is None:
            raise SimError(f"the sim has no build of this call of '{expr.callee}' (a bug in choreo-kernel)")
        count = len(frame.lanes)
        columns = []
        held: list[ThreadRegisters] = []
        for arg, passed in zip(expr.args, site.info.arguments):
            if isinstance(arg, ast.ForeignCast):  # the entry point casts what it passes (device_library.py)
                arg = arg.operand
            if passed.kind == "null":
                columns.append(np.zeros(count, dtype=np.uint64))
            elif passed.kind == "registers" and passed.layout is not None:
                registers = ThreadRegisters(self.value(arg, frame), passed.layout, passed.type, frame.lanes)
                held.append(registers)
                columns.append(registers.addresses)
            elif passed.kind == "data":
                columns.append(addresses(self.view(arg, frame), count))
            else:
                value = arith.convert(_plain(self.value(arg, frame)), passed.type)
                column = np.broadcast_to(np.asarray(value, dtype=numpy_dtype(passed.type)), (count,))
                columns.append(np.ascontiguousarray(column))
        block = frame.block
        try:
            result = device.run(site, columns, frame.lanes, block.index3, block.grid3, block.threads)
        except DeviceStop as stop:
            raise SimError(str(stop)) from None
        for registers in held:
            registers.write_back()
        if result is not None and site.info.result in NARROW_FLOAT_TYPES:
            return arith.convert(result, site.info.result)  # rounded, as the CUDA lowering rounds it
        return result

    def _atomic(self, name: str, expr: ast.Call, frame: Frame) -> Any:
        if len(expr.args) != atomic_arity(name):
            raise SimError(f"'{name}' expects {atomic_arity(name)} arguments")
        element = self.element(expr.args[0], frame)
        operands = [_plain(self.value(arg, frame)) for arg in expr.args[1:]]
        return atomic(name, element, operands, len(frame.lanes))


class ThreadRegisters:
    """Each thread's registers of a fragment or an accumulator, as the GPU holds them: the elements that
    semantics/register_layout.py gives the thread, in its order, copied out for the call and back after
    it (a row vector's from the first lane of each quad, which the CUDA lowering shuffles to the others)."""

    def __init__(self, value: Any, layout: RegisterLayout, elem: str, lanes: np.ndarray) -> None:
        items = list(value) if isinstance(value, np.ndarray) else [value]
        self.tiles = [tile_of(item) for item in items * (len(lanes) // len(items))]
        self.lanes = lanes
        self.positions = [layout.positions(int(lane) % layout.threads) for lane in lanes]
        self.keeps = [not layout.replicated or int(lane) % 4 == 0 for lane in lanes]
        self.values = np.empty((len(lanes), layout.elements), dtype=numpy_dtype(elem))
        for i, (tile, at) in enumerate(zip(self.tiles, self.positions)):
            self.values[i] = tile[at]
        self.addresses = (self.values.ctypes.data + np.arange(len(lanes)) * self.values[0:1].nbytes).astype(
            np.uint64
        )

    def write_back(self) -> None:
        for tile, at, keep, values in zip(self.tiles, self.positions, self.keeps, self.values):
            if keep:
                tile[at] = values.astype(tile.dtype)


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Bounded) else value


def addresses(view: View, count: int) -> np.ndarray:
    """The address of the first element of each thread's tile of `view`, in its base's memory."""
    base = view.base
    if not base.flags.c_contiguous:
        raise SimError(
            "a device function takes data as a pointer into row-major memory, and this array is not "
            "contiguous: pass a C-contiguous array (np.ascontiguousarray)"
        )
    offset = np.asarray(view.offset, dtype=np.int64) * base.itemsize
    return np.ascontiguousarray(per_thread(base.ctypes.data + offset, count), dtype=np.uint64)


def per_thread(value: Any, count: int) -> np.ndarray:
    """One entry per thread of the frame, in thread order: a value all threads share, or one per thread
    (shaped like the frame's thread variables)."""
    array = np.asarray(value)
    return array.reshape(count) if array.size == count else np.broadcast_to(array, (count,))


def atomic(name: str, element: Element, operands: list[Any], count: int) -> np.ndarray:
    """`name` on `element` for `count` threads in order; each thread's old value."""
    base = element.flat
    index = (per_thread(element.index, count),)
    elem = _element(base)
    values = [np.broadcast_to(np.asarray(arith.convert(v, elem), base.dtype), (count,)) for v in operands]
    old = np.empty(count, base.dtype)
    if not count:
        return old
    flat = np.ravel_multi_index(index, base.shape)
    order = np.argsort(flat, kind="stable")  # each element's threads together, in thread order
    first = np.ones(count, dtype=bool)
    np.not_equal(flat[order][1:], flat[order][:-1], out=first[1:])
    starts = np.flatnonzero(first)
    sizes = np.diff(np.append(starts, count))
    if name in ("__atomic_add", "__atomic_sub"):
        step = (values[0] if name == "__atomic_add" else -values[0])[order].astype(base.dtype)
        lead = tuple(i[order][starts] for i in index)
        if np.issubdtype(base.dtype, np.integer) or len(starts) == 1:
            _running_sums(base, lead, step, starts, sizes, order, old)
            return old
    rank = np.empty(count, dtype=np.int64)
    rank[order] = np.arange(count) - np.repeat(starts, sizes)
    for round_ in range(int(sizes.max())):  # a round touches each element once, for its next thread
        chosen = rank == round_
        at = tuple(i[chosen] for i in index)
        current = base[at]
        old[chosen] = current
        base[at] = _combine(name, current, [v[chosen] for v in values])
    return old


def _running_sums(
    base: np.ndarray,
    lead: tuple[np.ndarray, ...],
    step: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    order: np.ndarray,
    old: np.ndarray,
) -> None:
    """Adds in thread order as running sums: exact for integers (they wrap alike), and for floats
    when every thread adds to one element (one sum, in order)."""
    initial = base[lead]
    if len(starts) == 1:
        running = np.cumsum(np.concatenate((initial, step)), dtype=base.dtype)
        old[order] = running[:-1]
        base[lead] = running[-1:]
        return
    running = np.cumsum(step, dtype=base.dtype)
    before = np.concatenate((np.zeros(1, base.dtype), running[starts[1:] - 1]))
    old[order] = np.repeat(initial - before, sizes) + running - step
    base[lead] = initial + running[starts + sizes - 1] - before


def _combine(name: str, current: np.ndarray, operands: list[np.ndarray]) -> np.ndarray:
    if name == "__atomic_exch":
        return operands[0]
    if name == "__atomic_min":
        return np.minimum(current, operands[0])
    if name == "__atomic_max":
        return np.maximum(current, operands[0])
    if name == "__atomic_and":
        return np.bitwise_and(current, operands[0])
    if name == "__atomic_or":
        return np.bitwise_or(current, operands[0])
    if name == "__atomic_xor":
        return np.bitwise_xor(current, operands[0])
    compare, value = operands  # __atomic_cas
    return np.where(current == compare, value, current)


def _element(base: np.ndarray) -> str:
    elem = element_type_of(base.dtype)
    if elem is None or (elem in NARROW_FLOAT_TYPES and elem != "f16"):
        raise SimError(f"atomics do not take {base.dtype} elements")
    return elem
