"""Data movement and matrix statements (language.md 6 and 9): who runs them and what they make.

Each runs once per instance of its level (12.2): the sim picks one representative thread
per instance, evaluates the operands for those threads together (a tile that depends on
the warpgroup becomes one tile per warpgroup), and issues one `Operation` for them all.
An async one goes to the block's pending list with its destination poisoned; a synchronous
one completes before the next statement.  Accumulators and fragments live one per instance
and are stored so that each thread sees its own instance's object.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Symbol, Transfer
from choreo_kernel.compiler.semantics import sparsity
from choreo_kernel.compiler.semantics.levels import WARP_THREADS
from choreo_kernel.runtime.sim.arith import poison_of, stored
from choreo_kernel.runtime.sim.errors import SimError
from choreo_kernel.runtime.sim.expressions import Evaluator, plain
from choreo_kernel.runtime.sim.frames import Frame, per_thread_buffer
from choreo_kernel.runtime.sim.instances import Instances, instances
from choreo_kernel.runtime.sim.operations import (
    Accumulator,
    AccumulatorSlots,
    Fragment,
    InstanceAccumulators,
    Operation,
    Product,
    add_scaled_partial,
    copy,
    loaded_accumulator,
    matrix_multiply,
    operand_of,
    owned,
    placeholder,
    store_accumulators,
)
from choreo_kernel.runtime.sim.registers import converted
from choreo_kernel.runtime.sim.views import View, compact_strides


class Issuer:
    def __init__(self, info: FunctionInfo, evaluator: Evaluator) -> None:
        self.info = info
        self.evaluator = evaluator

    def run(self, stmt: ast.OperationStmt, frame: Frame) -> None:
        operation = stmt.operation
        words = operation.words
        family = operation.family
        block = frame.block
        unit = block.issuing_unit(self.info.context_of[id(stmt)], family)
        group = instances(frame.lanes, unit)
        at = frame.narrow(group.lanes)
        result: Any = None
        if family in ("dma", "tma"):
            result = placeholder(stmt) if words == ["any"] else self._copy(stmt, frame, at, group, unit)
        elif words[0] == "fill":
            result = self._fill(stmt, words, frame, at, group)
        elif words[0] == "load" and len(operation.args) == 2:  # mma.load TILE, X: into fragment X
            view = self.evaluator.view(operation.args[0], at)
            self._load_into(operation.args[1], view.read(), view.varying, at, group)
        elif words[0] == "load":
            view = self.evaluator.view(operation.args[0], at)
            tiles = view.read()
            copies = [tile.copy() for tile in tiles] if view.varying else [tiles.copy()]
            if id(stmt) in self.info.loaded_accumulators:  # a warp's accumulator that starts from the tile
                own = (
                    copies if view.varying else [tiles.copy() for _ in group.lanes]
                )  # each its own, to update
                result = per_lane([loaded_accumulator(tile) for tile in own], group)
            else:
                result = per_lane([Fragment(tile) for tile in copies], group)
        elif words[0] == "store":
            accumulators = self._accumulators(operation.args[0], at, group)
            mask = tuple(plain(self.evaluator.value(arg, at)) for arg in operation.args[2:])
            destination = self.evaluator.view(operation.args[1], at)
            store_accumulators(
                accumulators, destination, mask if "mask" in words else None, "transp" in words
            )
        elif words[0] == "scale":  # mma.scale ACC, SA, SB: the partial of the MMAs before it, scaled
            accumulators = self._accumulators(operation.args[0], at, group)
            add_scaled_partial(accumulators, *self._scales(operation.args[1:], at, group))
        else:
            result = self._multiply(stmt, (words[0], words[1]), at, group)
        if stmt.result is not None and result is not None:
            self._bind(stmt, result, frame)

    def _bind(self, stmt: ast.OperationStmt, value: Any, frame: Frame) -> None:
        """Name the result: a new name where the statement declares one, else the existing variable."""
        assert stmt.result is not None
        symbol = self.info.symbol_of.get(id(stmt.result))
        declares = symbol is None or symbol.declaration is stmt or frame.scope.find(stmt.result.id) is None
        frame.store(stmt.result.id, value, frame.scope if declares else None)

    def _copy(
        self, stmt: ast.OperationStmt, frame: Frame, at: Frame, group: Instances, unit: int
    ) -> Operation:
        operation = stmt.operation
        source = self.evaluator.view(operation.args[0], at)
        if operation.is_multicast and frame.block.cluster is not None:
            frame.block.cluster.multicast(stmt, frame.block.rank, source)
        target = operation.destination
        assert target is not None
        transfer = self.info.transfers.get(id(operation), Transfer())
        if transfer.permutation is not None:
            source = source.permuted(transfer.permutation)
        low = self._padding(transfer.low, at)
        if id(operation) in self.info.allocates:  # `=> shared`, `=> local`: a new buffer like the source
            high = self._padding(transfer.high, at) or [0] * len(low)
            shape = tuple(dim + before + after for dim, before, after in zip(source.shape, low, high))
            destination = _allocate(shape if low else source.shape, source.base.dtype, group)
        else:
            destination = self.evaluator.view(target, at)
        after = [future for item in operation.after for future in futures(self.evaluator.value(item, at))]
        if low:
            fill = plain(self.evaluator.value(transfer.fill, at)) if transfer.fill is not None else 0

            def perform() -> None:
                destination.write(fill)
                copy(source, destination.corner(low, source.shape, source.edge))

        else:

            def perform() -> None:
                copy(source, destination)

        result = Operation(stmt, perform, after, destination, group.groups, unit)
        if operation.is_async:
            destination.write_clipped(poison_of(destination.base.dtype))
            frame.block.scheduler.issue(result)
        else:
            result.complete()
            local = per_thread_buffer(target, frame) if frame.span > 1 else None
            if local is not None:  # between levels every thread of the instance copies into its own copy
                local.share_store(destination.indices(), frame.span)
        return result

    def _padding(self, items: tuple[ast.Expr | int, ...] | None, at: Frame) -> list[int]:
        """A dma.pad list (or the zeros of a copy into a larger tile), evaluated where the copy is issued."""
        if items is None:
            return []
        return [item if isinstance(item, int) else self.evaluator.uniform_int(item, at) for item in items]

    def _fill(
        self, stmt: ast.OperationStmt, words: list[str], frame: Frame, at: Frame, group: Instances
    ) -> Any:
        args = stmt.operation.args
        unit = frame.block.issuing_unit(self.info.context_of[id(stmt)], "mma")
        if (
            stmt.result is not None
        ):  # acc = mma.fill.f32 0.0f: a new accumulator per instance of its MMAs' level
            fill = plain(self.evaluator.value(args[0], at))
            symbol = self.info.declared(stmt, stmt.result.id)
            return self._new_accumulator(
                symbol, words[1] if len(words) > 1 else None, fill, frame, unit, group
            )
        fill = plain(self.evaluator.value(args[1], at))
        shared = self.evaluator.value(args[0], at)
        if isinstance(shared, InstanceAccumulators) and unit > WARP_THREADS:  # above the warps: all of them
            shared.reset(fill)
            return None
        for accumulator in self._accumulators(args[0], at, group):
            accumulator.reset(fill)
        return None

    def _new_accumulator(
        self, symbol: Symbol | None, typed: str | None, fill: Any, frame: Frame, unit: int, group: Instances
    ) -> Any:
        """A new accumulator per instance of its MMAs' level, of type `typed` or its MMAs' default."""
        owner = self.info.mma_owners.get(symbol) if symbol is not None else None
        elem = typed or (owner.accumulator if owner is not None else None)
        if owner is not None and frame.block.issuing_unit(owner.context, "mma") < unit:
            return InstanceAccumulators(elem, fill)  # declared above the warps that run its MMAs
        return per_lane([Accumulator(elem, fill) for _ in group.lanes], group)

    def accumulator_array(self, stmt: ast.AccumulatorArrayDecl, frame: Frame) -> AccumulatorSlots:
        """`frag mc[2][3] {0.0};`: each accumulator as `mc = mma.fill 0.0;` there would make it."""
        unit = frame.block.issuing_unit(self.info.context_of[id(stmt)], "mma")
        group = instances(frame.lanes, unit)
        at = frame.narrow(group.lanes)
        fill = plain(self.evaluator.value(stmt.init[0], at)) if stmt.init else 0
        symbol = self.info.declared(stmt, stmt.name)
        counts = tuple(self.evaluator.ints(stmt.dims, frame))
        items = np.empty(counts, dtype=object)
        for index in np.ndindex(*counts):
            items[index] = self._new_accumulator(symbol, stmt.elem, fill, frame, unit, group)
        return AccumulatorSlots(items)

    def _multiply(
        self, stmt: ast.OperationStmt, layouts: tuple[str, str], at: Frame, group: Instances
    ) -> Operation:
        operation = stmt.operation
        accumulator, a, b = operation.args[:3]
        extra = Product()
        if sparsity.is_sparse(operation):
            extra = Product(metadata=operand_of(self._operand(operation.args[3], at)))
        elif sparsity.is_scaled(operation):
            extra = Product(scales=self._scales(operation.args[3:], at, group))
        result = matrix_multiply(
            stmt,
            self._accumulators(accumulator, at, group),
            operand_of(self._operand(a, at)),
            operand_of(self._operand(b, at)),
            layouts,
            replace(extra, into_partial=id(stmt) in self.info.scaled_partials),
        )
        if not result.done:
            at.block.scheduler.issue(result)
        return result

    def _scales(
        self, exprs: tuple[ast.Expr, ...], at: Frame, group: Instances
    ) -> tuple[np.ndarray, np.ndarray]:
        """(row scales [instances, M], column scale [instances]) of a block-scaled MMA."""
        rows = operand_of(self._operand(exprs[0], at)).read().astype(np.float32)
        rows = rows.reshape(len(group.lanes) if rows.ndim == 3 else 1, -1)
        column = np.asarray(plain(self.evaluator.value(exprs[1], at)), dtype=np.float32).reshape(-1)
        return rows, column

    def _operand(self, expr: ast.Expr, at: Frame) -> View | Fragment | list[Fragment]:
        if isinstance(expr, ast.Cast):  # `__to<f16>(acc)`: the accumulator, converted (as registers)
            value = self.evaluator.value(expr.operand, at)
            items = list(value) if isinstance(value, np.ndarray) else [value]
            return [converted(item, expr.type_name) for item in items]
        value = self.evaluator.raw(expr, at)
        if isinstance(value, Fragment):
            return value
        if isinstance(value, np.ndarray) and value.dtype == object:
            return list(value)
        return self.evaluator.as_view(value, at)

    def _load_into(
        self, expr: ast.Expr, tiles: np.ndarray, varying: bool, at: Frame, group: Instances
    ) -> None:
        """Each instance's tile into its own fragment, converted to the fragment's type."""
        value = self.evaluator.value(expr, at)
        items = owned(list(value) if isinstance(value, np.ndarray) else [value] * len(group.lanes), group)
        for index, fragment in enumerate(items):
            if not isinstance(fragment, Fragment):
                raise SimError("'mma.load TILE, X' loads into a fragment X declared with 'frag'")
            tile = tiles[index] if varying else tiles
            fragment.tile[...] = stored(tile, fragment.tile.dtype)

    def _accumulators(self, expr: ast.Expr, at: Frame, group: Instances) -> list[Accumulator]:
        value = self.evaluator.value(expr, at)
        items = list(value) if isinstance(value, np.ndarray) else [value] * len(group.lanes)
        items = owned(items, group)
        if not all(isinstance(item, Accumulator) for item in items):
            raise SimError("the first operand must be an accumulator made by mma.fill")
        return items


def futures(value: Any) -> list[Operation]:
    """The operations a future value names (one, or one per thread after a divergent assignment)."""
    items = list(dict.fromkeys(value.tolist())) if isinstance(value, np.ndarray) else [value]
    if not all(isinstance(item, Operation) for item in items):
        raise SimError("expected a future")
    return items


def per_lane(objects: list[Any], group: Instances) -> Any:
    """One object per instance, as each active thread sees it: its own instance's."""
    if len(objects) == 1:
        return objects[0]
    table = np.empty(len(objects), dtype=object)
    table[:] = objects
    return table[group.of_lane]


def _allocate(shape: tuple[int, ...], dtype: np.dtype, group: Instances) -> View:
    """The buffer that `=> shared` / `=> local` makes (shaped like the source, or padded), one per instance."""
    if len(group.lanes) == 1:
        return View.whole(np.full(shape, poison_of(dtype), dtype=dtype))
    base = np.full((int(group.groups.max()) + 1, *shape), poison_of(dtype), dtype=dtype)
    return View(base, group.groups * math.prod(shape), shape, compact_strides(shape))
