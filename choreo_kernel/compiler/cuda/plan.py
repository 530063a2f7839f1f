"""The host side of a lowered function: what the runtime does around the kernels, in order.

A function's statements outside every `parallel` become steps: allocate a global buffer,
compute a host scalar, launch a kernel, return. Sizes stay Choreo expressions, which the
runtime evaluates (compiler/semantics/evaluate.py) from the call's arguments, so one compiled
binary serves every shape that binds the symbolic dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.values import Symbol
from choreo_kernel.compiler.diagnostics import ChoreoError, Diagnostic


@dataclass(frozen=True)
class KernelParameter:
    """One parameter of a kernel and the host value it takes.

    `kind` is "array" (a parameter or host buffer: its device pointer), "tensor_map" (a TMA
    descriptor of array `symbol` for copies of `box`, outermost first, with `swizzle`),
    "scalar" (a scalar parameter or host scalar), "dim" (a symbolic dimension), "extent"
    (dimension `axis` of array `symbol`, for a `?` dimension) or "status" (where a timed-out
    wait reports).
    """

    name: str
    kind: str
    element: str  # the Choreo element type passed ("s32" for dimensions)
    symbol: Symbol | None = None
    axis: int = 0
    box: tuple[int, ...] = ()
    swizzle: int = 0


@dataclass(frozen=True)
class WaitSite:
    """A bounded wait, so a timeout can name the event and the statement."""

    event: str
    line: int
    text: str


@dataclass(frozen=True)
class Launch:
    kernel: str
    statement: ast.Parallel
    grid: tuple[ast.Expr, ...]  # one count per block variable (x, y, z)
    threads: int
    shared_bytes: int
    parameters: tuple[KernelParameter, ...]

    @property
    def is_async(self) -> bool:
        return self.statement.is_async


@dataclass(frozen=True)
class HostBuffer:
    """A global buffer declared at host level: allocated (and filled) before the kernels run."""

    symbol: Symbol
    element: str
    shape: tuple[ast.Expr, ...]
    fill: ast.Expr | None


@dataclass(frozen=True)
class HostScalar:
    symbol: Symbol
    element: str
    value: ast.Expr


Step = HostBuffer | HostScalar | Launch


@dataclass(frozen=True)
class FunctionPlan:
    function: ast.Function
    steps: tuple[Step, ...]
    result: ast.Expr | None
    written: frozenset[str]  # parameters the kernels write into
    wait_sites: tuple[WaitSite, ...]  # the bounded waits of all its kernels, as numbered in the CUDA
    parameters: tuple[Symbol, ...]  # the symbol of each parameter, in order
    dimensions: tuple[Symbol, ...]  # the symbolic dimensions bound from the arguments' shapes

    @property
    def launches(self) -> tuple[Launch, ...]:
        return tuple(step for step in self.steps if isinstance(step, Launch))


@dataclass
class LoweredProgram:
    """The emitted CUDA (including the header by name), each function's plan, and what could not be lowered."""

    source: str
    plans: dict[str, FunctionPlan] = field(default_factory=dict)
    errors: dict[str, list[Diagnostic]] = field(default_factory=dict)

    def checked(self, filename: str = "<source>") -> LoweredProgram:
        """This program, or a `ChoreoError` with every function's lowering errors."""
        if self.errors:
            diagnostics = [d for errors in self.errors.values() for d in errors]
            raise ChoreoError(diagnostics, "", filename)
        return self
