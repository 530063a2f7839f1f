"""Replaying a CUDA call's host plan for arguments that look like an earlier call's.

Before its kernels run, a call checks its arguments and evaluates its plan's sizes from them: grids,
block sizes, shared memory, scratch, host buffers, host scalars. For CuPy arrays and plain scalars all
of that follows from each array's type, shape, dtype and strides and each scalar's type and value
(`arguments_key`), as long as the plan reads no element, prints nothing, stores and waits nothing on
the host before its end and uses no stream argument (`replay_blocker`). So the first successful call
with a key records what it launched (`Recording`, then a `Replay`), and a later call with the same
key launches the same kernels with the same configurations, taking from its own arguments only what
differs from call to call: the arrays' addresses, their tensor maps (from the backend's cache), and
fresh host buffers and scratch. A short kernel is bound by this host time, which is most of a call.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Symbol
from choreo_kernel.compiler.cuda.plan import (
    FunctionPlan,
    HostBuffer,
    HostCheck,
    HostIf,
    HostLoop,
    HostPrint,
    HostScalar,
    HostStore,
    HostSync,
    KernelParameter,
    Launch,
    Step,
)
from choreo_kernel.compiler.diagnostics import ChoreoError
from choreo_kernel.runtime.dtypes import RANGES
from choreo_kernel.runtime.host_steps import reads_elements

REPLAYS_KEPT = 64  # argument keys remembered per function
_CONSTANT_RESULTS = (int, float, bool, tuple, np.generic, type(None))
TensorMap = Callable[[Any, KernelParameter], np.ndarray]


def replay_blocker(plan: FunctionPlan, info: FunctionInfo) -> str | None:
    """Why calls of this plan cannot be replayed (what in it is not the same for every call with the same
    key), or None where they can."""
    for param in plan.function.params:
        if param.is_stream:
            return f"parameter '{param.name}' is a stream"
        if param.type.shape is not None and param.type.name in RANGES:
            return f"the values of {param.type.name} array '{param.name}' are checked on every call"
    for step in _walk(plan.steps):
        if isinstance(step, HostPrint | HostStore | HostSync):
            return f"the host {_HOST_WORK[type(step)]} at line {step.statement.span.line}"
        if isinstance(step, Launch) and step.stream is not None:
            return f"the parallel at line {step.statement.span.line} launches on a stream argument"
    result = () if plan.result is None else (plan.result,)
    for expr in _with_declarations([*_expressions(plan.steps), *result], info):
        if reads_elements(expr):
            return f"the host reads an element at line {expr.span.line}"
    return None


_HOST_WORK = {HostPrint: "prints", HostStore: "writes an element", HostSync: "waits for the kernels"}


def arguments_key(ndarray: type, args: Sequence[Any]) -> tuple[Hashable, ...] | None:
    """What a call's checks and host plan depend on: each CuPy array's shape, dtype and strides (other
    device arrays are CuPy views by then), each scalar's type and value (a float's sign too: -0.0 ==
    0.0); None where an argument is anything else (a NumPy array, copied in and written back), which
    takes the slow path."""
    key: list[Hashable] = []
    for value in args:
        kind = type(value)
        if kind is ndarray:
            dtype = value.dtype
            if dtype.metadata is not None:  # a tagged dtype (u6 in uint8) is equal to the untagged one
                return None
            key.append((value.shape, dtype, value.strides))
        elif kind is int or kind is bool or isinstance(value, np.integer | np.bool_):
            key.append((kind, value))
        elif kind is float or isinstance(value, np.floating):
            key.append((kind, value, math.copysign(1.0, value)))
        else:
            return None
    return tuple(key)


class Caller(Protocol):
    """What a replay uses of the CUDA function whose calls it repeats (runtime/cuda.py's CudaFunction)."""

    def _cuda_error(self, error: Exception, launch: Launch | None) -> ChoreoError: ...

    def _synchronize(self, cupy: Any) -> None: ...


@dataclass(frozen=True)
class Allocation:
    """A host buffer the plan allocates (and fills) on every call."""

    slot: int
    dims: tuple[int, ...]
    dtype: np.dtype
    fill: Any  # the fill value as `dtype` holds it, or None for an empty buffer

    def allocate(self, cupy: Any) -> Any:
        return allocate(cupy, self.dims, self.dtype, self.fill)


@dataclass(frozen=True)
class RecordedLaunch:
    """One launch as the first call made it; `constants` are its arguments that stay the same from call to
    call (None where each call fills one in: an array, a tensor map, scratch)."""

    launch: Launch  # for the error of a failed launch
    kernel: Any
    grid: tuple[int, ...]
    threads: int
    shared_bytes: int
    constants: tuple[Any, ...]
    arrays: tuple[tuple[int, int], ...]  # (argument position, slot of the array)
    tensor_maps: tuple[tuple[int, int, KernelParameter], ...]  # (position, slot of the array, parameter)
    scratch: tuple[tuple[int, int], ...]  # (position, bytes)
    grid_barrier: Any  # a cooperative launch's counters, zeroed before it; else None

    def arguments(self, cupy: Any, slots: list[Any], tensor_map: TensorMap) -> list[Any]:
        """This call's arguments of the kernel: the constants, and its arrays, tensor maps and scratch."""
        arguments = list(self.constants)
        for position, slot in self.arrays:
            arguments[position] = slots[slot]
        for position, slot, parameter in self.tensor_maps:
            arguments[position] = tensor_map(slots[slot], parameter)
        for position, size in self.scratch:
            arguments[position] = cupy.empty(size, dtype=np.uint8)
        return arguments


@dataclass(frozen=True)
class Replay:
    """What a call with one key did, to do again: its device arrays, its buffers and launches in order,
    whether it waited at the end, and what it returned."""

    # (parameter position, the dtype it is viewed as or None to pass it as it is, whether C-contiguous)
    arrays: tuple[tuple[int, np.dtype | None, bool], ...]
    steps: tuple[Allocation | RecordedLaunch, ...]
    slots: int
    waits: bool
    result_slot: int | None  # the call returns this slot's array
    result: Any  # else this value

    def __call__(self, function: Caller, cupy: Any, tensor_map: TensorMap, args: Sequence[Any]) -> Any:
        slots: list[Any] = [None] * self.slots
        for position, dtype, contiguous in self.arrays:
            value = args[position] if contiguous else cupy.ascontiguousarray(args[position])
            slots[position] = value if dtype is None else value.view(dtype)
        stream = cupy.cuda.get_current_stream()
        for step in self.steps:
            if isinstance(step, Allocation):
                slots[step.slot] = step.allocate(cupy)
                continue
            arguments = step.arguments(cupy, slots, tensor_map)
            if step.launch.prints:
                sys.stdout.flush()  # Python's output so far comes before the kernel's
            try:
                start_kernel(
                    step.kernel,
                    step.grid,
                    step.threads,
                    arguments,
                    step.shared_bytes,
                    stream,
                    step.grid_barrier,
                )
            except Exception as error:  # as the slow path reports it (CudaFunction._launch)
                raise function._cuda_error(error, step.launch) from None
        if self.waits:
            function._synchronize(cupy)
        return self.result if self.result_slot is None else slots[self.result_slot]


class Recording:
    """What one call of a replayable plan does, noted as the slow path does it; `finish` makes the Replay,
    or None where something it launched came from where a replay cannot take it."""

    def __init__(self, plan: FunctionPlan, args: Sequence[Any], values: dict[Symbol, Any]) -> None:
        arrays = [
            (position, symbol)
            for position, (param, symbol) in enumerate(zip(plan.function.params, plan.parameters))
            if param.type.shape is not None
        ]
        # a call's arrays by slot: its array arguments' at their positions, then its host buffers'
        self.slots = {symbol: position for position, symbol in arrays}
        self.size = len(plan.parameters)
        self.arrays = [
            (position, values[symbol].dtype, args[position].dtype, bool(args[position].flags.c_contiguous))
            for position, symbol in arrays
        ]
        self.steps: list[Allocation | RecordedLaunch] = []
        self.complete = True

    def allocation(self, symbol: Symbol, dims: tuple[int, ...], dtype: np.dtype, fill: Any) -> None:
        if symbol not in self.slots:
            self.slots[symbol] = self.size
            self.size += 1
        self.steps.append(Allocation(self.slots[symbol], dims, dtype, fill))

    def launch(
        self,
        launch: Launch,
        kernel: Any,
        configuration: tuple[list[int], int, list[Any], int],
        grid_barrier: Any,
    ) -> None:
        grid, threads, arguments, shared_bytes = configuration
        constants = list(arguments)
        arrays, tensor_maps, scratch = [], [], []
        for position, parameter in enumerate(launch.parameters):
            if parameter.kind == "scratch" and arguments[position] is not None:
                scratch.append((position, int(arguments[position].nbytes)))
            elif parameter.kind in ("array", "tensor_map"):
                slot = self.slots.get(parameter.symbol) if parameter.symbol is not None else None
                if slot is None:
                    self.complete = False
                    return
                if parameter.kind == "array":
                    arrays.append((position, slot))
                else:
                    tensor_maps.append((position, slot, parameter))
            else:
                continue
            constants[position] = None
        self.steps.append(
            RecordedLaunch(
                launch,
                kernel,
                tuple(grid),
                threads,
                shared_bytes,
                tuple(constants),
                tuple(arrays),
                tuple(tensor_maps),
                tuple(scratch),
                grid_barrier if launch.cooperative else None,
            )
        )

    def finish(self, waits: bool, values: dict[Symbol, Any], result: Any) -> Replay | None:
        if not self.complete:
            return None
        slot = next((slot for symbol, slot in self.slots.items() if values.get(symbol) is result), None)
        if result is not None and slot is None and not isinstance(result, _CONSTANT_RESULTS):
            return None
        # an argument already of its device dtype goes to the kernels as it is (the slow path's view of it
        # has the same address), unless the call returns it
        arrays = tuple(
            (position, None if dtype == given and contiguous and position != slot else dtype, contiguous)
            for position, dtype, given, contiguous in self.arrays
        )
        return Replay(arrays, tuple(self.steps), self.size, waits, slot, result)


def allocate(cupy: Any, dims: tuple[int, ...], dtype: np.dtype, fill: Any) -> Any:
    """A host buffer: empty, or filled with `fill` (already in `dtype`)."""
    return cupy.empty(dims, dtype=dtype) if fill is None else cupy.full(dims, fill, dtype=dtype)


def start_kernel(
    kernel: Any,
    grid: Sequence[int],
    threads: int,
    arguments: list[Any],
    shared_bytes: int,
    stream: Any,
    grid_barrier: Any,
) -> None:
    """Launch `kernel`; cooperatively (cuLaunchCooperativeKernel, its grid barrier's counters zeroed first)
    where it has a `grid_barrier`."""
    if grid_barrier is None:
        kernel(tuple(grid), (threads,), arguments, shared_mem=shared_bytes, stream=stream)
        return
    grid_barrier.fill(0)
    kernel.kernel(tuple(grid), (threads, 1, 1), arguments, shared_bytes, stream, True)


def _walk(steps: tuple[Step, ...]) -> Iterator[Step]:
    for step in steps:
        yield step
        if isinstance(step, HostLoop):
            yield from _walk(step.body)
        elif isinstance(step, HostIf):
            yield from _walk(step.then + step.otherwise)


def _expressions(steps: tuple[Step, ...]) -> Iterator[ast.Expr]:
    """Every expression the host evaluates to run these steps."""
    for step in _walk(steps):
        if isinstance(step, HostBuffer):
            yield from step.shape
            if step.fill is not None:
                yield step.fill
        elif isinstance(step, HostScalar):
            yield step.value
        elif isinstance(step, HostCheck | HostIf):
            yield step.statement.condition
        elif isinstance(step, HostLoop):
            yield step.statement.extent
        elif isinstance(step, Launch):
            yield from step.grid
            yield from (factor for factor in step.thread_factors if not isinstance(factor, int))


def _with_declarations(exprs: list[ast.Expr], info: FunctionInfo) -> Iterator[ast.Expr]:
    """`exprs`, and the values of the shapes and ituples they name (the host evaluates those where named)."""
    pending, seen = list(exprs), set()
    while pending:
        expr = pending.pop()
        if id(expr) in seen:
            continue
        seen.add(id(expr))
        yield expr
        for node in ast.walk_expr(expr):
            symbol = info.symbol_of.get(id(node)) if isinstance(node, ast.Name) else None
            declaration = symbol.declaration if symbol is not None else None
            if isinstance(declaration, ast.ShapeDecl | ast.TupleDecl):
                pending.append(declaration.value)
