"""Where a statement runs: its scope chain, the threads that run it, its path and its block.

The sim runs a statement once for all the threads that reach it.  A variable is stored
uniform (one value) while every thread that can see it agrees, and per thread (one entry
per thread of the block) once threads disagree: after a declaration from thread-dependent
values, or an assignment in a branch that only some threads take.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.runtime.dtypes import numpy_dtype
from choreo_kernel.runtime.sim.arith import convert, element_type
from choreo_kernel.runtime.sim.errors import SimError
from choreo_kernel.runtime.sim.scheduler import Scheduler, Task
from choreo_kernel.runtime.sim.values import Buffer
from choreo_kernel.runtime.sim.views import Bounded

if TYPE_CHECKING:
    from choreo_kernel.compiler.analysis.scope import Context
    from choreo_kernel.compiler.semantics.launch import Family, KernelLaunch


class PerThread:
    """A variable whose value differs between threads: `values[thread]`, and a bound if it is bounded."""

    __slots__ = ("bound", "values")

    def __init__(self, values: np.ndarray, bound: int | None) -> None:
        self.values = values
        self.bound = bound


class Scope:
    """One lexical scope, and the threads that were active where it opened."""

    __slots__ = ("lanes", "names", "parent", "types")

    def __init__(self, parent: Scope | None, lanes: np.ndarray) -> None:
        self.names: dict[str, Any] = {}
        self.types: dict[str, str] = {}  # declared element types, applied on every assignment
        self.parent = parent
        self.lanes = lanes

    def find(self, name: str) -> Scope | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope
            scope = scope.parent
        return None

    def owner(self, name: str) -> Scope:
        scope = self.find(name)
        if scope is None:
            raise SimError(f"'{name}' is not declared here")
        return scope

    def put(self, name: str, value: Any, lanes: np.ndarray, threads: int, span: int = 1) -> None:
        """Store `value` for threads `lanes` (of `threads` in the block), each standing for the `span`
        threads of its instance from it on (between levels, where every thread of the instance runs
        the statement and so writes its own copy)."""
        inner = value.value if isinstance(value, Bounded) else value
        bound = value.bound if isinstance(value, Bounded) else None
        if not isinstance(inner, np.ndarray) and _same(lanes, self.lanes):
            self.names[name] = value
            return
        if span > 1:
            lanes = covered(lanes, span)
            inner = np.repeat(inner, span) if isinstance(inner, np.ndarray) else inner
        current = self.names.get(name)
        dtype = _dtype_of(inner)
        if isinstance(current, PerThread):
            values = current.values
            if np.result_type(values.dtype, dtype) != values.dtype:
                values = values.astype(np.result_type(values.dtype, dtype))
        else:
            previous = current.value if isinstance(current, Bounded) else current
            if previous is not None:
                dtype = np.result_type(dtype, _dtype_of(previous))
            values = np.empty(threads, dtype=dtype)
            if previous is not None:
                values.fill(previous)
        values[lanes] = inner
        self.names[name] = PerThread(values, bound)


def covered(lanes: np.ndarray, span: int) -> np.ndarray:
    """The threads that representatives `lanes` stand for: each the first of `span` threads."""
    return (lanes[:, None] + np.arange(span)).ravel() if span > 1 else lanes


def _same(lanes: np.ndarray, others: np.ndarray) -> bool:
    return lanes is others or (len(lanes) == len(others) and bool(np.array_equal(lanes, others)))


def read(stored: Any, lanes: np.ndarray) -> Any:
    """A stored value as the threads `lanes` see it."""
    if type(stored) is PerThread:
        values = stored.values[lanes]
        return values if stored.bound is None else Bounded(values, stored.bound)
    return stored


def _dtype_of(value: Any) -> np.dtype:
    if isinstance(value, np.ndarray):
        return value.dtype
    if isinstance(value, (bool, int, float, np.generic)):
        return numpy_dtype(element_type(value))
    return np.dtype(object)  # accumulators, fragments, futures: one object per thread


@dataclass
class Block:
    """One block instance while it runs."""

    label: str  # "block (0, 1)", for messages
    threads: int
    scheduler: Scheduler
    launch: KernelLaunch | None  # None for the host code
    index3: tuple[int, int, int] = (0, 0, 0)  # blockIdx, as the CUDA lowering numbers the grid
    grid3: tuple[int, int, int] = (1, 1, 1)  # gridDim

    def place(self, index: tuple[int, ...], grid: tuple[int, ...]) -> None:
        """Where this block is in its grid, for device functions that read blockIdx and gridDim."""
        self.index3 = (*index, 0, 0, 0)[:3]  # type: ignore[assignment]
        self.grid3 = (*grid, 1, 1, 1)[:3]  # type: ignore[assignment]

    barriers: dict[object, Any] = field(default_factory=dict)  # the block's named barriers (control.py)
    grid: Any = None  # the grid barrier of a cooperative launch (a control.BarrierState)
    cluster: Any = None  # the thread-block cluster it runs in (a clusters.Cluster)
    rank: int = 0  # its rank in that cluster

    def register_unit(self, context: Context) -> int:
        """Threads per instance that hold one copy of a fragment (the model's, semantics/launch.py)."""
        return self.launch.register_unit(context) if self.launch is not None else self.threads

    def issuing_unit(self, context: Context, family: Family) -> int:
        """Threads per instance of the level that runs an operation (the model's, semantics/launch.py)."""
        return self.launch.issuing_unit(context, family) if self.launch is not None else self.threads


@dataclass(frozen=True)
class Frame:
    scope: Scope
    lanes: np.ndarray  # the threads of the block that run the statement, ascending
    task: Task
    block: Block
    span: int = 1  # threads each lane stands for: its instance's, between levels (semantics/launch.py)

    def narrow(self, lanes: np.ndarray) -> Frame:
        return replace(self, lanes=lanes)

    def enter(self, lanes: np.ndarray | None = None) -> Frame:
        """A frame with a new inner scope (for the threads `lanes`, by default the same ones)."""
        lanes = self.lanes if lanes is None else lanes
        return replace(self, scope=Scope(self.scope, lanes), lanes=lanes)

    def store(self, name: str, value: Any, scope: Scope | None = None) -> None:
        """Assign `name` where it is declared (or declare it in `scope`), converted to its declared type."""
        target = scope or self.scope.owner(name)
        elem = target.types.get(name)
        if elem is not None:
            value = convert(value.value if isinstance(value, Bounded) else value, elem)
        target.put(name, value, self.lanes, self.block.threads, self.span)


def per_thread_buffer(target: ast.Expr, frame: Frame) -> Buffer | None:
    """The local buffer (one copy per thread) that a store's target writes into, if it is one."""
    root = ast.root_name(target)
    owner = frame.scope.find(root.id) if root is not None else None
    value = owner.names[root.id] if owner is not None and root is not None else None
    return value if isinstance(value, Buffer) and value.per_thread else None
