"""Register fragments on the sim: `frag` buffers, `apply`, `reduce_max` / `reduce_sum`, `copy`, `__to<T>`.

A fragment, like an accumulator, is one object (operations.Fragment, its tile a NumPy array) per
instance of the warpgroup or warp that holds it (semantics/launch.py, `register_owner`); where its elements sit in registers is the CUDA lowering's business, and here every
instance sees its logical [M, N] (or [M]) array. `apply {i, j} in x.span` runs its body once for all
elements of all instances together: the body's frame has one virtual thread per (instance, i, j),
each seeing the variables of its instance's first thread, so the element-wise body (the analysis
allows nothing else, resolve/fragments.py) runs vectorized as any statement does.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import replace
from typing import Any

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.printer import expression
from choreo_kernel.runtime.dtypes import numpy_dtype
from choreo_kernel.runtime.sim import arith
from choreo_kernel.runtime.sim.arith import poison_of, stored
from choreo_kernel.runtime.sim.errors import SimError
from choreo_kernel.runtime.sim.expressions import Evaluator, plain
from choreo_kernel.runtime.sim.frames import Frame, PerThread, Scope
from choreo_kernel.runtime.sim.instances import Instances, instances
from choreo_kernel.runtime.sim.issue import per_lane
from choreo_kernel.runtime.sim.operations import Accumulator, Fragment, owned
from choreo_kernel.runtime.sim.registers import Register, converted, tile_of
from choreo_kernel.runtime.sim.views import Bounded


class _Translated(dict):
    """The names a virtual thread sees: each real variable, as the first thread of its instance holds it."""

    def __init__(self, scope: Scope, lanes: np.ndarray) -> None:
        super().__init__()
        self.scope = scope
        self.lanes = lanes

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.scope.find(name) is not None

    def __getitem__(self, name: str) -> Any:
        stored_value = self.scope.owner(name).names[name]
        if isinstance(stored_value, PerThread):
            return PerThread(stored_value.values[self.lanes], stored_value.bound)
        return stored_value


class Fragments:
    """Runs the register-level statements for the interpreter."""

    def __init__(self, info: FunctionInfo, evaluator: Evaluator) -> None:
        self.info = info
        self.evaluator = evaluator

    def _group(self, stmt: ast.Stmt, frame: Frame) -> Instances:
        return instances(frame.lanes, frame.block.register_unit(self.info.context_of[id(stmt)]))

    def declare(self, stmt: ast.BufferDecl, frame: Frame) -> None:
        """`frag f32[64] m {-inf};`: a new fragment per warpgroup instance."""
        group = self._group(stmt, frame)
        shape = tuple(self.evaluator.ints(stmt.shape, frame))
        dtype = numpy_dtype(stmt.elem_type)
        fill = poison_of(dtype)
        if stmt.init:
            fill = stored(plain(self.evaluator.value(stmt.init[0], frame)), dtype)
        fragments = [Fragment(np.full(shape, fill, dtype=dtype)) for _ in group.lanes]
        frame.store(stmt.name, per_lane(fragments, group), frame.scope)

    def registers(self, expr: ast.Expr, stmt: ast.Stmt, frame: Frame) -> list[Register]:
        """The accumulator or fragment `expr` of each instance; an accumulator before its first MMA gets the
        shape the analysis took from that MMA."""
        group = self._group(stmt, frame)
        if isinstance(expr, ast.Cast):
            return [converted(r, expr.type_name) for r in self.registers(expr.operand, stmt, frame)]
        value = self.evaluator.value(expr, frame.narrow(group.lanes))
        items = list(value) if isinstance(value, np.ndarray) else [value]
        items = owned(items * (len(group.lanes) // len(items)), group)
        if not all(isinstance(item, (Accumulator, Fragment)) for item in items):
            raise SimError(f"'{expression(expr)}' is not an accumulator or a fragment")
        symbol = self.info.symbol_of.get(id(expr))
        shape = symbol.accumulator_shape if symbol is not None else None
        for item in items:
            if isinstance(item, Accumulator) and item.value is None and shape is not None:
                item.ensure(tuple(int(d) for d in shape), "f32")
        return items

    def apply(
        self, stmt: ast.Apply, frame: Frame, body: Callable[[ast.Stmt, Frame], Generator[Any, Any, Any]]
    ) -> Generator[Any, Any, Any]:
        """An apply that sums rows into a row vector (info.row_sums) runs column by column, j = 0, 1, ..., so
        that each row's sum takes every column; any other runs over all elements at once."""
        target = stmt.target.value if isinstance(stmt.target, ast.Member) else stmt.target
        group = self._group(stmt, frame)
        shape = tile_of(self.registers(target, stmt, frame)[0]).shape
        grid = np.indices(shape).reshape(len(shape), -1)
        if id(stmt) in self.info.row_sums:
            for column in range(shape[1]):
                yield from self._visit(stmt, frame, group, grid[:, grid[1] == column], shape, body)
            return None
        return (yield from self._visit(stmt, frame, group, grid, shape, body))

    def _visit(
        self,
        stmt: ast.Apply,
        frame: Frame,
        group: Instances,
        grid: np.ndarray,
        shape: tuple[int, ...],
        body: Callable[[ast.Stmt, Frame], Generator[Any, Any, Any]],
    ) -> Generator[Any, Any, Any]:
        """The body once, for the elements `grid` of every instance: one virtual thread each."""
        lanes = np.repeat(group.lanes, grid.shape[1])  # virtual thread -> the first thread of its instance
        virtual = np.arange(len(lanes))
        root = Scope(None, virtual)
        root.names = _Translated(frame.scope, lanes)
        inner = Frame(Scope(root, virtual), virtual, frame.task, replace(frame.block, threads=len(lanes)))
        for name, values, bound in zip(stmt.variables.names, grid, shape):
            inner.store(name.id, Bounded(np.tile(values, len(group.lanes)), int(bound)), inner.scope)
        return (yield from body(stmt.body, inner))

    def update(self, stmt: ast.Assign, frame: Frame) -> None:
        """`acc += bias;`: the scalar (as the first thread of each instance holds it) into every element."""
        group = self._group(stmt, frame)
        value = self.evaluator.value(stmt.value, frame.narrow(group.lanes))
        values = np.broadcast_to(np.asarray(plain(value)), (len(group.lanes),))
        for item, scalar in zip(self.registers(stmt.target, stmt, frame), values):
            tile = tile_of(item)
            tile[...] = stored(arith.binary(stmt.op[:-1], tile, scalar), tile.dtype)

    def operation(self, stmt: ast.FragmentOp, frame: Frame) -> None:
        if stmt.name == "all_reduce_sum":
            return  # the apply that summed into it left each row's total (resolve/fragments.py)
        targets = self.registers(stmt.args[0], stmt, frame)
        sources = self.registers(stmt.args[1], stmt, frame)
        for target, source in zip(targets, sources * (len(targets) // max(len(sources), 1))):
            values = tile_of(source).astype(np.float32)
            if stmt.name == "reduce_max":
                values = values.max(axis=1)
            elif stmt.name == "reduce_sum":
                values = values.sum(axis=1, dtype=np.float32)
            into = tile_of(target)
            if into.shape != values.shape:
                raise SimError(f"'{stmt.name}' into {list(into.shape)} from {list(values.shape)}")
            into[...] = stored(values, into.dtype)
