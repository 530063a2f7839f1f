"""Copies and matrix operations, and the in-flight operations that futures name.

An operation statement runs once per instance of its level (language.md 12.2); the sim
runs every instance of one execution together, so one `Operation` covers them all.  An
async operation poisons its destination when it is issued and does its work only when it
completes (at its `wait`, or when the scheduler needs progress), reading its sources then:
a program that reads the destination before the wait, or overwrites a source too early,
computes with NaN instead of getting a lucky right answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.semantics import sparsity
from choreo_kernel.compiler.semantics.mma_shapes import default_accumulator
from choreo_kernel.runtime.dtypes import element_type_of, numpy_dtype
from choreo_kernel.runtime.sim.arith import poison_of
from choreo_kernel.runtime.sim.errors import SimError
from choreo_kernel.runtime.sim.instances import Instances
from choreo_kernel.runtime.sim.views import View


class Operation:
    """One execution of a data movement or MMA statement, for all its instances: what a future names."""

    def __init__(
        self,
        statement: ast.OperationStmt,
        perform: Callable[[], None],
        after: Sequence[Operation] = (),
        destination: View | None = None,
        groups: np.ndarray | None = None,
        unit: int = 1,
    ) -> None:
        self.statement = statement
        self._perform = perform
        self.after = list(after)
        self.destination = destination
        self.groups = groups  # the instance (thread // unit) of each instance that issued it
        self.unit = unit
        self.done = False
        self._callbacks: list[Callable[[], None]] = []

    def complete(self) -> None:
        """Finish the operation now: its `after` operations first, then its own work."""
        if self.done:
            return
        for dependency in self.after:
            dependency.complete()
        self._perform()
        self.done = True
        for callback in self._callbacks:
            callback()
        self._callbacks.clear()

    def when_done(self, callback: Callable[[], None]) -> None:
        if self.done:
            callback()
        else:
            self._callbacks.append(callback)

    def data(self, lanes: np.ndarray) -> View:
        """`f.data` as seen by threads `lanes`: each thread sees its own instance's destination."""
        if self.destination is None:
            raise SimError(f"'{self.statement.operation.text}' has no data: it is a placeholder or an MMA")
        if self.groups is None or not self.destination.varying:
            return self.destination
        groups = lanes // self.unit
        count = int(max(self.groups.max(), groups.max())) + 1
        return self.destination.regroup(self.groups, groups, count)


class FutureWait:
    """A path blocked at `wait f` until the scheduler completes the operations its futures name.

    The wait does not complete them itself: other paths run first, so one that reads the
    destination through a wrongly ordered event sees the poison.
    """

    def __init__(self, statement: ast.Stmt, operations: list[Operation]) -> None:
        self.statement = statement
        self.operations = operations

    def ready(self) -> bool:
        return all(operation.done for operation in self.operations)

    def describe(self) -> str:
        return "for " + ", ".join(
            f"'{operation.statement.operation.text}' (line {operation.statement.span.line})"
            for operation in self.operations
            if not operation.done
        )


def placeholder(statement: ast.OperationStmt) -> Operation:
    """`dma.any`: a future that is already complete and names no data."""
    operation = Operation(statement, lambda: None)
    operation.done = True
    return operation


def copy(source: View, destination: View) -> None:
    """Copy every instance's source tile to its destination tile (element counts must agree). Either may be
    a tail tile (views.py), as on CUDA: a read gives zeros past the end, a write stores only what exists."""
    data = source.read_filled()
    if data.size // (data.shape[0] if source.varying else 1) != int(np.prod(destination.shape)):
        raise SimError(
            f"a copy of shape {list(source.shape)} does not fit a destination of shape {list(destination.shape)}"
        )
    if source.varying:
        data = data.reshape((data.shape[0], *destination.shape))
        if not destination.varying:
            data = data[-1]  # several instances copy into one tile: the last one wins, as in a race
    else:
        data = data.reshape(destination.shape)
    if destination.edge is None:
        destination.write(data)
    else:
        destination.write_clipped(data)


@dataclass
class Fragment:
    """An MMA operand loaded with `mma.load`: a snapshot of the tile, as registers hold it."""

    tile: np.ndarray


class Accumulator:
    """An MMA accumulator (one per warpgroup); its shape comes from its first use (language.md 9)."""

    def __init__(self, elem: str | None, fill: Any) -> None:
        self.elem = elem  # None: the type of operand A, decided at the first MMA
        self.fill = fill
        self.value: np.ndarray | None = None
        self.pending: Operation | None = None  # the async MMA that updates it last, until waited
        self.partial: np.ndarray | None = None  # the unscaled product of a block-scaled K block (sparsity.py)

    def ensure(self, shape: tuple[int, ...], operand_elem: str) -> np.ndarray:
        if self.value is None:
            if self.elem is None:
                self.elem = default_accumulator(operand_elem)
            self.value = np.full(shape, self.fill, dtype=numpy_dtype(self.elem))
        elif self.value.shape != shape:
            raise SimError(f"the accumulator is {list(self.value.shape)} but this MMA produces {list(shape)}")
        return self.value

    def reset(self, fill: Any) -> None:
        self.fill = fill
        if self.value is not None:
            self.value[...] = fill


def loaded_accumulator(tile: np.ndarray) -> Accumulator:
    """`acc = mma.load TILE;` that an MMA accumulates into: an accumulator of the tile's type, holding it."""
    accumulator = Accumulator(element_type_of(tile.dtype), 0)
    accumulator.value = tile
    return accumulator


class InstanceAccumulators:
    """An accumulator declared above the level that runs its MMAs (`mc = mma.fill 0.0;` in a block, its
    MMAs in `parallel ... : group`): one per instance of that level (each warp's registers), made at its
    first use there."""

    def __init__(self, elem: str | None, fill: Any) -> None:
        self.elem = elem
        self.fill = fill
        self.instances: dict[int, Accumulator] = {}

    def reset(self, fill: Any) -> None:
        """`mma.fill acc, v;` above the warps: every warp's accumulator, and those not made yet."""
        self.fill = fill
        for accumulator in self.instances.values():
            accumulator.reset(fill)

    def of(self, instance: int) -> Accumulator:
        if instance not in self.instances:
            self.instances[instance] = Accumulator(self.elem, self.fill)
        return self.instances[instance]


class AccumulatorSlots:
    """`frag mc[2][3] {0.0};`: its accumulators (each as `acc = mma.fill` would make it), by index."""

    def __init__(self, items: np.ndarray) -> None:
        self.items = items  # object array of the declared counts

    def at(self, indices: list[int]) -> Any:
        """`mc[0][i]`: one accumulator, or with fewer indices the sub-array they select."""
        for index, count in zip(indices, self.items.shape):
            if not 0 <= index < count:
                raise SimError(f"index {index} is out of range for an accumulator array dimension of {count}")
        item = self.items[tuple(indices)]
        return AccumulatorSlots(item) if len(indices) < self.items.ndim else item


def owned(items: list[Any], group: Instances) -> list[Any]:
    """Each instance's own accumulator, where one was declared for all instances of a level (above)."""
    return [
        item.of(int(instance)) if isinstance(item, InstanceAccumulators) else item
        for item, instance in zip(items, group.groups)
    ]


@dataclass(frozen=True)
class Operand:
    """An MMA operand: read when the operation completes, of one shape per instance."""

    read: Callable[[], np.ndarray]
    shape: tuple[int, ...]
    elem: str


def operand_of(value: View | Fragment | list[Fragment]) -> Operand:
    """A tile (read at completion), one fragment, or one fragment per instance."""
    if isinstance(value, View):
        return Operand(value.read, value.shape, _elem(value.base))
    if isinstance(value, Fragment):
        return Operand(lambda: value.tile, value.tile.shape, _elem(value.tile))
    stacked = np.stack([fragment.tile for fragment in value])
    return Operand(lambda: stacked, stacked.shape[1:], _elem(stacked))


def _elem(array: np.ndarray) -> str:
    return element_type_of(array.dtype) or "f32"


@dataclass(frozen=True)
class Product:
    """What the sparse and block-scaled forms add to an MMA (semantics/sparsity.py)."""

    metadata: Operand | None = None  # `.sp`: A is packed 2:4, this says where its values were
    scales: tuple[np.ndarray, np.ndarray] | None = None  # `.scale`: row scales [I, M], column scale [I]
    into_partial: bool = False  # a plain MMA whose product an `mma.scale` later adds


def matrix_multiply(
    statement: ast.OperationStmt,
    accumulators: list[Accumulator],
    a: Operand,
    b: Operand,
    layouts: tuple[str, str],
    extra: Product = Product(),
) -> Operation:
    """acc += A * B per instance (row/col layouts as in language.md 9), computed in the accumulator's type;
    a sparse A is expanded to dense first, a scaled product is scaled per row before it is added."""
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise SimError(f"an MMA needs two-dimensional operands, got {list(a.shape)} and {list(b.shape)}")
    if extra.metadata is not None:
        a = _decompressed(a, extra.metadata)
    m = a.shape[0] if layouts[0] == "row" else a.shape[1]
    n = b.shape[0] if layouts[1] == "row" else b.shape[1]
    for accumulator in accumulators:
        accumulator.ensure((m, n), a.elem)
        if accumulator.pending is not None:
            # An MMA into an accumulator that an earlier one still updates accumulates after it
            # (a warpgroup's tensor-core operations run in order): that one may finish first.
            accumulator.pending.complete()
            accumulator.pending = None
    is_async = statement.operation.is_async
    before = [_value(accumulator).copy() for accumulator in accumulators] if is_async else []
    if is_async:
        for accumulator in accumulators:
            _value(accumulator)[...] = poison_of(_value(accumulator).dtype)

    def perform() -> None:
        compute = np.int32 if _value(accumulators[0]).dtype.kind in "iu" else np.float32
        left, right = (_tensor_core_input(operand).astype(compute) for operand in (a, b))
        if layouts[0] == "col":
            left = np.swapaxes(left, -1, -2)
        if layouts[1] == "row":
            right = np.swapaxes(right, -1, -2)
        products = left @ right
        for index, accumulator in enumerate(accumulators):
            value = _value(accumulator)
            part = products[index] if products.ndim == 3 else products
            if extra.into_partial:
                accumulator.partial = _partial(accumulator, value) + part.astype(value.dtype)
                if is_async:
                    value[...] = before[index]
                continue
            start = before[index] if is_async else value
            if extra.scales is not None:  # the partial in the accumulator's type, then scaled and added
                rows, column = extra.scales
                scale = rows[min(index, len(rows) - 1)] * column[min(index, len(column) - 1)]
                part = part.astype(value.dtype).astype(np.float32) * scale[:, None]
            value[...] = start.astype(compute) + part

    operation = Operation(statement, perform)
    if not is_async:
        operation.complete()
    else:
        for accumulator in accumulators:
            accumulator.pending = operation
    return operation


def _tensor_core_input(operand: Operand) -> np.ndarray:
    """An operand as the tensor cores read it: 32-bit floats as tf32, the top 19 bits of each (the
    mma instructions ignore the low 13 mantissa bits of the registers they are given)."""
    values = operand.read()
    if values.dtype != np.float32:
        return values
    return (np.ascontiguousarray(values).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def _decompressed(a: Operand, metadata: Operand) -> Operand:
    """The dense A that a packed 2:4 operand and its metadata stand for, per instance."""

    def read() -> np.ndarray:
        packed, where = a.read(), metadata.read()
        try:
            if packed.ndim == 2:
                return sparsity.decompress(packed, where)
            wheres = where if where.ndim == 3 else [where] * len(packed)
            return np.stack([sparsity.decompress(p, w) for p, w in zip(packed, wheres)])
        except ValueError as error:  # metadata the GPU would read as undefined
            raise SimError(str(error)) from None

    return Operand(read, (a.shape[0], a.shape[1] * 2), a.elem)


def _partial(accumulator: Accumulator, value: np.ndarray) -> np.ndarray:
    return accumulator.partial if accumulator.partial is not None else np.zeros_like(value)


def add_scaled_partial(accumulators: list[Accumulator], rows: np.ndarray, column: np.ndarray) -> None:
    """`mma.scale ACC, SA, SB`: acc += partial * SA[row] * SB, and the partial starts again from zero."""
    for index, accumulator in enumerate(accumulators):
        value = _value(accumulator)
        if accumulator.partial is None:
            continue
        scale = rows[min(index, len(rows) - 1)] * column[min(index, len(column) - 1)]
        value[...] = value.astype(np.float32) + accumulator.partial.astype(np.float32) * scale[:, None]
        accumulator.partial = None


def store_accumulators(
    accumulators: list[Accumulator],
    destination: View,
    mask: tuple[Any, ...] | None = None,
    transposed: bool = False,
) -> None:
    """`mma.store`: every instance's accumulator into its destination tile, converted to its type; of a
    tail tile (one reaching past the end of the array), only the elements inside the array.
    `mma.store.mask` (`mask`: the rows, and the columns, to write) writes only the elements below
    them that are inside the array; `mma.store.transp` writes element
    (i, j) at (j, i). A tile smaller than the accumulator (its size known at run time) takes the elements
    inside it."""
    tiles = []
    for accumulator in accumulators:
        value = accumulator.value
        if value is None:
            value = np.full(destination.shape, accumulator.fill, dtype=np.float32)
        elif transposed:
            value = value.T
        shape = tuple(destination.shape)
        if (
            value.ndim == len(shape)
            and value.shape != shape
            and all(d <= v for d, v in zip(shape, value.shape))
        ):
            value = value[
                tuple(slice(0, d) for d in shape)
            ]  # a smaller tile: the elements inside it (as on CUDA)
        if value.size != int(np.prod(destination.shape)):
            raise SimError(
                f"'mma.store' of a {list(value.shape)} accumulator into data of shape {list(destination.shape)}"
            )
        tiles.append(value.reshape(destination.shape))
    values = np.stack(tiles) if destination.varying else tiles[-1]
    if mask is None and destination.edge is None:
        destination.write(values)
    else:  # masked, or a tail tile: the elements inside the array (and below the mask)
        destination.write_clipped(values, mask)


def _value(accumulator: Accumulator) -> np.ndarray:
    assert accumulator.value is not None  # ensure() ran first
    return accumulator.value
