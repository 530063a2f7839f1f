"""The host side of a lowered function: what the runtime does around the kernels, in order.

A function's statements outside every `parallel` become steps: allocate a global buffer,
compute a host scalar, write an element, loop, wait, launch a kernel, return. Sizes stay Choreo expressions, which the
runtime evaluates (compiler/semantics/evaluate.py) from the call's arguments, so one compiled
binary serves every shape that binds the symbolic dimensions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.values import Symbol
from choreo_kernel.compiler.cuda.cexpr import Term, evaluate
from choreo_kernel.compiler.devicecode import LineMap
from choreo_kernel.compiler.diagnostics import ChoreoError, Diagnostic, Span
from choreo_kernel.compiler.semantics.printing import Piece


@dataclass(frozen=True)
class KernelParameter:
    """One parameter of a kernel and the host value it takes.

    `kind` is "array" (a parameter or host buffer: its device pointer), "tensor_map" (a TMA
    descriptor of array `symbol` for copies of `box`, outermost first, with `swizzle`),
    "scalar" (a scalar parameter or host scalar), "dim" (a symbolic dimension), "extent"
    (dimension `axis` of array `symbol`, for a `?` dimension), "status" (where a timed-out
    wait reports), "grid_barrier" (two counters of a cooperative launch's grid barrier) or "scratch"
    (global memory for the local buffers sized at launch: `size` bytes, a term over the kernel's
    scalar parameters, for each thread of the grid).
    """

    name: str
    kind: str
    element: str  # the Choreo element type passed ("s32" for dimensions)
    symbol: Symbol | None = None
    axis: int = 0
    box: tuple[int, ...] = ()
    swizzle: int = 0
    size: Term | None = None


@dataclass(frozen=True)
class WaitSite:
    """A place where a kernel can report a failure, so the host can name it: a bounded wait on an event
    (`kind` "event"), a grid barrier ("barrier"), a `while (event)` loop ("spin"), an `assert` whose
    condition was false ("assert", with its `message`), or a run-time check such as a `select` factor out
    of range ("check", `message` saying what was wrong)."""

    event: str
    line: int
    text: str
    kind: str = "event"
    message: str = ""
    span: Span | None = None


@dataclass(frozen=True)
class Launch:
    """One kernel launch. `shared_bytes` is the shared memory of a size known at compile time; where some
    buffers are sized by the call's arguments, `dynamic_shared` is their bytes as a term over the kernel's
    scalar parameters (by name), which the runtime evaluates at launch and adds."""

    kernel: str
    statement: ast.Parallel
    grid: tuple[ast.Expr, ...]  # one count per block variable (x, y, z)
    threads: int
    shared_bytes: int
    parameters: tuple[KernelParameter, ...]
    dynamic_shared: Term | None = None
    cooperative: bool = False  # `block<cooperative>`: launched with cuLaunchCooperativeKernel
    cluster: tuple[int, int, int] | None = (
        None  # blocks per thread-block cluster (the kernel's __cluster_dims__)
    )
    prints: bool = False  # calls printf: the host flushes the output after it

    stream: Symbol | None = None  # `parallel<s>`: the stream it launches on (else the current one)
    # where the arguments give the block size (`threads` is 0): the factors whose product it is, each a
    # number or an expression the host evaluates at the call
    thread_factors: tuple[int | ast.Expr, ...] = ()

    def shared_bytes_for(self, values: Mapping[str, int]) -> int:
        """The shared memory of the launch, given the values of its scalar parameters by name."""
        if self.dynamic_shared is None:
            return self.shared_bytes
        return self.shared_bytes + evaluate(self.dynamic_shared, values)

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


@dataclass(frozen=True)
class HostPrint:
    """`print(...)` at host level: the values are the host's (parameters, sizes)."""

    statement: ast.Print
    pieces: tuple[Piece, ...]


@dataclass(frozen=True)
class HostCheck:
    """`assert(...)` at host level, checked when the call reaches it."""

    statement: ast.Assert


@dataclass(frozen=True)
class HostStore:
    """`x.at(i, j) = e` at host level: the host writes one element of a buffer (a `device(cpu)` body, a
    host-level loop), after the kernels launched before it."""

    statement: ast.Assign


@dataclass(frozen=True)
class HostSync:
    """`sync.global`: the host waits for every kernel launched before it."""

    statement: ast.Sync


@dataclass(frozen=True)
class HostLoop:
    """`foreach` at host level: its body's steps once per index, outermost variable first; each
    variable is a host scalar that the kernels inside it receive by value."""

    statement: ast.Foreach
    variables: tuple[Symbol | None, ...]  # None for a variable nothing refers to
    body: tuple[Step, ...]


@dataclass(frozen=True)
class HostIf:
    """`if` at host level: the host evaluates the condition (after the kernels launched before it, whose
    results it may read) and runs the steps of one branch."""

    statement: ast.If
    then: tuple[Step, ...]
    otherwise: tuple[Step, ...]


Step = HostBuffer | HostScalar | Launch | HostPrint | HostCheck | HostStore | HostSync | HostLoop | HostIf


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
        return tuple(_launches(self.steps))


def _launches(steps: tuple[Step, ...]) -> list[Launch]:
    found: list[Launch] = []
    for step in steps:
        if isinstance(step, Launch):
            found.append(step)
        elif isinstance(step, HostLoop):
            found.extend(_launches(step.body))
        elif isinstance(step, HostIf):
            found.extend(_launches(step.then) + _launches(step.otherwise))
    return found


@dataclass
class LoweredProgram:
    """The emitted CUDA (including the header by name), each function's plan, and what could not be lowered."""

    source: str
    plans: dict[str, FunctionPlan] = field(default_factory=dict)
    errors: dict[str, list[Diagnostic]] = field(default_factory=dict)
    device_lines: LineMap = field(default_factory=LineMap)  # the lines of `source` that hold device code

    def checked(self, filename: str = "<source>") -> LoweredProgram:
        """This program, or a `ChoreoError` with every function's lowering errors."""
        if self.errors:
            diagnostics = [d for errors in self.errors.values() for d in errors]
            raise ChoreoError(diagnostics, "", filename)
        return self
