"""What analysis learns about one function, for the passes after it: side tables keyed by node,
the launch model and its events' arrivals."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import (
    DeviceCallInfo,
    Dim,
    Event,
    Future,
    FutureInfo,
    Symbol,
    Transfer,
    Value,
)
from choreo_kernel.compiler.diagnostics import Span
from choreo_kernel.compiler.semantics.arrivals import EventArrivals
from choreo_kernel.compiler.semantics.launch import FunctionLaunches
from choreo_kernel.compiler.semantics.levels import Level, Storage
from choreo_kernel.compiler.semantics.printing import Piece
from choreo_kernel.compiler.semantics.sparsity import partial_mmas


@dataclass(frozen=True)
class MmaOwner:
    """Who runs the MMAs of an accumulator (the context of its first one), and the type it accumulates in."""

    context: Context
    accumulator: str
    span: Span  # its first MMA


@dataclass
class FunctionInfo:
    """What the resolver learned about one function, for the passes after it."""

    function: ast.Function
    symbol_of: dict[int, Symbol] = field(default_factory=dict)  # id(ast.Name) -> Symbol
    value_of: dict[int, Value] = field(default_factory=dict)  # id(ast.Expr) -> Value (wait/trigger operands)
    futures: dict[int, Symbol] = field(default_factory=dict)  # id(OperationStmt) -> its future's Symbol
    operations: dict[int, FutureInfo] = field(default_factory=dict)  # id(OperationStmt) -> what it made
    context_of: dict[int, Context] = field(default_factory=dict)  # id(Stmt) -> Context
    levels_of: dict[int, tuple[Level, ...]] = field(default_factory=dict)  # id(Parallel) -> filled levels
    counts_of: dict[int, tuple[Dim, ...]] = field(default_factory=dict)  # id(ParallelClause) -> its counts
    storage_of: dict[int, Storage] = field(default_factory=dict)  # id(BufferDecl) -> where it lives
    allocates: dict[int, Storage] = field(
        default_factory=dict
    )  # id(Operation) -> where `=> shared`/`=> local` allocates
    transfers: dict[int, Transfer] = field(
        default_factory=dict
    )  # id(Operation) -> a dma that pads or permutes
    events: list[Symbol] = field(default_factory=list)
    device_calls: dict[int, DeviceCallInfo] = field(default_factory=dict)  # id(ast.DeviceCall) -> it
    # id(BoundVars) of a lone name bound to a bounded ituple of anonymous elements (`with index in [4, 8]`,
    # `foreach i in a.span`): its elements have no names of their own
    anonymous_tuples: set[int] = field(default_factory=set)
    checked_selects: set[int] = field(
        default_factory=set
    )  # id(Call) of a select whose factor is checked when it runs
    # id(Index) of a shape declaration's `x [(0), 1]` on data `x`: derived from `x.span`, as Croqtile does
    spans_derived: set[int] = field(default_factory=set)
    # id(Method) of a chunkat by a bound cdiv(dim, t): per index, t where it cuts tiles of t (else None)
    ceil_chunks: dict[int, tuple[int | None, ...]] = field(default_factory=dict)
    register_counts: dict[int, int] = field(default_factory=dict)  # id(DeviceCall) of setreg_inc/dec -> N
    launches: FunctionLaunches = field(init=False)  # who runs what (semantics/launch.py)
    arrivals: dict[Symbol, EventArrivals] = field(default_factory=dict)  # of the events of static launches
    printed: list[tuple[Span, str]] = field(default_factory=list)  # what `print!` shows at compile time
    print_formats: dict[int, tuple[Piece, ...]] = field(default_factory=dict)  # id(Print) -> its format
    mma_owners: dict[Symbol, MmaOwner] = field(default_factory=dict)  # accumulator -> its MMAs' owner
    # id() of each `acc = mma.load TILE;` whose result an MMA accumulates into (a warp's, from memory)
    loaded_accumulators: set[int] = field(default_factory=set)
    # id(Apply) over a tile -> the row vectors its body sums each row into (`v.at(i) += x.at(i, j)`)
    row_sums: dict[int, tuple[ast.Expr, ...]] = field(default_factory=dict)
    # id(Assign) of `acc += bias;`: a scalar combined into every element of an accumulator or fragment
    register_updates: set[int] = field(default_factory=set)

    def declared(self, declaration: object, name: str) -> Symbol | None:
        """The symbol that `declaration` made for `name`; None when nothing ever refers to it."""
        return self._declared.get((id(declaration), name))

    @cached_property
    def scaled_partials(self) -> dict[int, int]:
        """id(plain MMA) -> id(the mma.scale that adds its partial product) (semantics/sparsity.py)."""
        return partial_mmas(self.function.body)

    @cached_property
    def _declared(self) -> dict[tuple[int, str], Symbol]:
        declared: dict[tuple[int, str], Symbol] = {}
        for symbol in (*self.symbol_of.values(), *self.events):
            declared.setdefault((id(symbol.declaration), symbol.name), symbol)
        return declared

    def future_named(self, expr: ast.Expr) -> Symbol | None:
        """The future variable that `expr` names (`wait f`, `after f`, `swap(f, g)`), if it names one."""
        symbol = self.symbol_of.get(id(expr)) if isinstance(expr, ast.Name) else None
        return symbol if symbol is not None and isinstance(symbol.value, Future) else None

    def event_named(self, expr: ast.Expr) -> Symbol | None:
        """The event that a wait or trigger operand names: `E`, a slot `E[i]`, a generation `E.at(order)`."""
        root = expr.value if isinstance(expr, ast.Method) and expr.name == "at" else expr
        while isinstance(root, ast.Index):
            root = root.value
        symbol = self.symbol_of.get(id(root)) if isinstance(root, ast.Name) else None
        return symbol if symbol is not None and isinstance(symbol.value, Event) else None
