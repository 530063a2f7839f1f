"""The Choreo syntax tree: one small frozen dataclass per construct.

Every node carries the `span` of the user's text it came from (after mapping
back through the preprocessor), so any pass can point a diagnostic at it.
Meaning (types, shapes, symbols) lives in the analysis side tables, not here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from choreo_kernel.compiler.diagnostics import Span


@dataclass(frozen=True, eq=False)
class Node:
    span: Span


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True, eq=False)
class Expr(Node):
    pass


@dataclass(frozen=True, eq=False)
class Name(Expr):
    id: str


@dataclass(frozen=True, eq=False)
class IntLiteral(Expr):
    value: int
    unsigned: bool = False
    long: bool = False  # written with an `ll` suffix: 64 bits whatever its value
    text: str = ""  # as written (`0xFFu`), for messages


@dataclass(frozen=True, eq=False)
class FloatLiteral(Expr):
    value: float
    single: bool = False  # written with an `f` suffix


@dataclass(frozen=True, eq=False)
class BoolLiteral(Expr):
    value: bool


@dataclass(frozen=True, eq=False)
class StringLiteral(Expr):
    value: str


@dataclass(frozen=True, eq=False)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, eq=False)
class Unary(Expr):
    """`-x`, `!x`, `~x`, `#x` (the bound of a bounded value), `&x`."""

    op: str
    operand: Expr


@dataclass(frozen=True, eq=False)
class IncDec(Expr):
    """`x++`, `++x`, `x--`, `--x`: C value semantics."""

    op: str
    operand: Expr
    prefix: bool


@dataclass(frozen=True, eq=False)
class Ternary(Expr):
    condition: Expr
    then: Expr
    otherwise: Expr


@dataclass(frozen=True, eq=False)
class Paren(Expr):
    """Kept because `(i)` inside a shape derivation `s[(0) / 2, (1)]` names dimension i."""

    inner: Expr


@dataclass(frozen=True, eq=False)
class Call(Expr):
    """`cdiv(a, b)`, `__exp(x)`, `s(0)` (a dimension), `j(-1)` (a range value)."""

    callee: Expr
    args: tuple[Expr, ...]


@dataclass(frozen=True, eq=False)
class Member(Expr):
    """`f.data`, `x.span`: a member without arguments."""

    value: Expr
    name: str
    name_span: Span


@dataclass(frozen=True, eq=False)
class Method(Expr):
    """`x.chunkat(i, j)`, `e.at(order)`, `x.span(0)`: a member with arguments.

    `strides` are the element strides after a colon, `x.view(16, 8 : 64, 2)`."""

    value: Expr
    name: str
    name_span: Span
    args: tuple[Expr, ...]
    strides: tuple[Expr, ...] = ()


@dataclass(frozen=True, eq=False)
class Index(Expr):
    """`stage[slot]`, `events[i][j]`, `s[(0) / 2, (1)]` on shapes, and `t {(1), (0)}` on ituples (`braced`)."""

    value: Expr
    indices: tuple[Expr, ...]
    braced: bool = False


@dataclass(frozen=True, eq=False)
class TupleLiteral(Expr):
    items: tuple[Expr, ...]


@dataclass(frozen=True, eq=False)
class ListLiteral(Expr):
    items: tuple[Expr, ...]


@dataclass(frozen=True, eq=False)
class ElementCount(Expr):
    """`|s|`: the element count of a shape."""

    operand: Expr


@dataclass(frozen=True, eq=False)
class TypeSize(Expr):
    """`|f32|`: the size of an element type in bytes."""

    type_name: str


@dataclass(frozen=True, eq=False)
class Cast(Expr):
    type_name: str
    operand: Expr


@dataclass(frozen=True, eq=False)
class ForeignCast(Expr):
    """`__to<"const float*">(nullptr)`: a C cast to a type written as C++ text, for an argument of a
    device function call (Croqtile's foreign cast)."""

    c_type: str
    operand: Expr


@dataclass(frozen=True, eq=False)
class AnyDim(Expr):
    """`?` in a parameter shape: any size, bound from the argument; `??` (`unbounded`): a size nothing
    states, which only a global parameter may have."""

    unbounded: bool = False


# ------------------------------------------------ device code: calls of C++ device functions


@dataclass(frozen=True, eq=False)
class TemplateArg(Node):
    """One `<...>` argument of a device call: a compile-time integer expression, or C++ text (an
    element type such as `f32`, or a qualified name such as `mylib::MODE`) given verbatim."""

    expr: Expr | None = None
    text: str | None = None
    is_type: bool = False


@dataclass(frozen=True, eq=False)
class DeviceCall(Expr):
    """`call f(x)`, `call ns::g<f32, 64>(a.data, |a.span|)`: a C++ device function of the source's C++
    part or of an earlier `%%cuda` cell, called by each thread that runs it."""

    callee: str  # as written, with its namespaces: "mylib::compute"
    callee_span: Span
    template_args: tuple[TemplateArg, ...] | None  # None: no `<...>`
    args: tuple[Expr, ...]


# -------------------------------------------------------------- declarations


@dataclass(frozen=True, eq=False)
class Stmt(Node):
    pass


@dataclass(frozen=True, eq=False)
class BufferDecl(Stmt):
    """`shared f16 [128, 64] stage[3] {0};` (one node per declarator)."""

    storage: str | None
    elem_type: str
    shape: tuple[Expr, ...]
    name: str
    name_span: Span
    array_dims: tuple[Expr, ...] = ()
    init: tuple[Expr, ...] | None = None


@dataclass(frozen=True, eq=False)
class AccumulatorArrayDecl(Stmt):
    """`frag mc[2][3] {0.0};`, `frag.s32 mc[1][2] {0};`: an array of MMA accumulators, each filled with the
    value; one shape for all, from the MMAs that use them, and one type, `.T` or the operands' default."""

    elem: str | None
    name: str
    name_span: Span
    dims: tuple[Expr, ...]
    init: tuple[Expr, ...] | None = None


@dataclass(frozen=True, eq=False)
class ScalarDecl(Stmt):
    """`int x = 3;`, `mutable int k = 0;`, `f32 v = ...;` (one node per declarator).

    `element_typed`: declared with an element type name (`s32`, `f32`, not `int` or `bool`), which
    makes the scalar re-assignable as in Croqtile; `mutable` is the keyword as written."""

    mutable: bool
    type_name: str | None
    name: str
    name_span: Span
    init: Expr | None
    storage: str | None = None
    element_typed: bool = False


@dataclass(frozen=True, eq=False)
class EventDecl(Stmt):
    """`shared event full[2], empty[2] = ready;` (one node per declarator)."""

    storage: str | None
    name: str
    name_span: Span
    dims: tuple[Expr, ...]
    ready: bool
    arrival_count: int | None = None


@dataclass(frozen=True, eq=False)
class ShapeDecl(Stmt):
    """`s : [128, 64];` or `mdspan<2> s : [128, 64];`."""

    name: str
    name_span: Span
    value: Expr
    rank: int | None = None


@dataclass(frozen=True, eq=False)
class TupleDecl(Stmt):
    """`ituple<3> t = {1, 2, 3};`."""

    name: str
    name_span: Span
    value: Expr
    size: int | None = None


# ----------------------------------------------------------------- statements


@dataclass(frozen=True, eq=False)
class Block(Stmt):
    body: tuple[Stmt, ...]


@dataclass(frozen=True, eq=False)
class BoundVars(Node):
    """The variables a `parallel`, `foreach` or `with` introduces; `group` names a tuple of them."""

    names: tuple[Name, ...]
    group: Name | None = None
    braced: bool = False


@dataclass(frozen=True, eq=False)
class ParallelClause(Node):
    variables: BoundVars | None
    count: Expr  # an expression, or a ListLiteral for several variables
    level: str | None
    level_span: Span | None = None
    cooperative: bool = False  # `: block<cooperative>`: the grid's blocks run at once and can meet


@dataclass(frozen=True, eq=False)
class Attribute(Node):
    """`launch_bounds(256, 2)` of `[[launch_bounds(256, 2)]] parallel ...`, `unroll(4)` of
    `foreach k in [K] : unroll(4)`: a name and its arguments."""

    name: str
    args: tuple[Expr, ...] = ()


@dataclass(frozen=True, eq=False)
class Parallel(Stmt):
    is_async: bool
    clauses: tuple[ParallelClause, ...]
    body: Stmt
    attributes: tuple[Attribute, ...] = ()  # `[[launch_bounds(...)]]`, `[[maxnreg(...)]]` before it
    stream: Name | None = None  # `parallel<s>`: launched on the stream that parameter `s` holds


@dataclass(frozen=True, eq=False)
class Foreach(Stmt):
    """`foreach {i, j} in [4, 8] { ... }`."""

    variables: BoundVars
    extent: Expr
    body: Stmt
    hint: Attribute | None = None  # `: unroll(4)`


@dataclass(frozen=True, eq=False)
class RangeItem(Node):
    """`j` or `j(start:stop:step)` in `foreach j(1:) { ... }`."""

    name: Name
    start: Expr | None = None
    stop: Expr | None = None
    step: Expr | None = None
    sliced: bool = False


@dataclass(frozen=True, eq=False)
class ForeachRange(Stmt):
    """`foreach j(1:-1:2) { ... }`: iterate a `with` variable, or a slice of it."""

    items: tuple[RangeItem, ...]
    body: Stmt
    hint: Attribute | None = None  # `: unroll(4)`


@dataclass(frozen=True, eq=False)
class WithBinding(Node):
    variables: BoundVars
    extent: Expr


@dataclass(frozen=True, eq=False)
class With(Stmt):
    bindings: tuple[WithBinding, ...]
    body: Stmt
    where: tuple[tuple[Name, Name], ...] | None = None  # `where x <-> y, ...`


@dataclass(frozen=True, eq=False)
class If(Stmt):
    condition: Expr
    then: Stmt
    otherwise: Stmt | None


@dataclass(frozen=True, eq=False)
class While(Stmt):
    condition: Expr
    body: Stmt


@dataclass(frozen=True, eq=False)
class InThreads(Stmt):
    is_async: bool
    condition: Expr
    body: Stmt


L2_HINTS = ("evict_first", "evict_last")  # `tma.load.async.evict_first`: the L2 policy of a TMA load
MODIFIERS = (
    "async",
    "swiz",
    "multicast",
    *L2_HINTS,
)  # qualifiers that say how an operation runs, not what it does


@dataclass(frozen=True, eq=False)
class Operation(Node):
    """`dma.copy.async src => dst after f`, `mma.row.row acc, a, b`, `mma.fill.f32 0.0f`.

    `qualifiers` are the dotted words after the family (`("copy", "async")`), and
    `template_args` the `<...>` texts attached to them (`{"swiz": "128"}`).
    """

    family: str
    qualifiers: tuple[str, ...]
    template_args: dict[str, str] = field(hash=False)
    args: tuple[Expr, ...]
    destination: Expr | None
    after: tuple[Expr, ...]
    op_span: Span
    config: tuple[Expr, ...] = ()  # the template arguments of dma.pad and dma.transp, parsed

    @property
    def text(self) -> str:
        return ".".join((self.family, *self.qualifiers))

    @property
    def is_async(self) -> bool:
        return "async" in self.qualifiers

    @property
    def is_multicast(self) -> bool:
        """`tma.copy.multicast`: one load that lands in every block of the cluster."""
        return "multicast" in self.qualifiers

    @property
    def words(self) -> list[str]:
        """The qualifiers that say what the operation does (`["load"]`, `["row", "row"]`): without
        `async`, `swiz` and the L2 hints, which say how."""
        return [q for q in self.qualifiers if q not in MODIFIERS]


@dataclass(frozen=True, eq=False)
class OperationStmt(Stmt):
    """An operation as a statement, optionally naming its future: `f = tma.load.async ...;`."""

    operation: Operation
    result: Name | None = None


@dataclass(frozen=True, eq=False)
class Wait(Stmt):
    targets: tuple[Expr, ...]


@dataclass(frozen=True, eq=False)
class Trigger(Stmt):
    """`trigger E after F`; `trigger.cluster E` arrives on E in every block of the cluster."""

    targets: tuple[Expr, ...]
    after: tuple[Expr, ...]
    cluster: bool = False


@dataclass(frozen=True, eq=False)
class Sync(Stmt):
    """`sync.shared;`: a barrier of all threads of the block."""

    kind: str


@dataclass(frozen=True, eq=False)
class Assign(Stmt):
    """`x = e;`, `out.at(i) += e;`: declares `x` when the name is new."""

    target: Expr
    op: str
    value: Expr


@dataclass(frozen=True, eq=False)
class ExprStmt(Stmt):
    """`k++;`, `swap(cur, nxt);`."""

    expr: Expr


@dataclass(frozen=True, eq=False)
class Apply(Stmt):
    """`apply {i, j} in acc.span stmt`: `stmt` once for each logical element (i, j) of an accumulator or
    fragment; where the registers of each element live is the compiler's business."""

    variables: BoundVars
    target: Expr  # `acc.span`
    body: Stmt


FRAGMENT_OPS = ("reduce_max", "reduce_sum", "all_reduce_sum", "copy")  # the statement calls of FragmentOp


@dataclass(frozen=True, eq=False)
class FragmentOp(Stmt):
    """`reduce_max(m, acc, 1);`, `reduce_sum(l, acc, 1);`, `all_reduce_sum(l);`, `copy(dst, src);`: whole-fragment
    register work."""

    name: str
    name_span: Span
    args: tuple[Expr, ...]


@dataclass(frozen=True, eq=False)
class Return(Stmt):
    value: Expr | None


@dataclass(frozen=True, eq=False)
class Break(Stmt):
    pass


@dataclass(frozen=True, eq=False)
class Continue(Stmt):
    pass


@dataclass(frozen=True, eq=False)
class Empty(Stmt):
    pass


@dataclass(frozen=True, eq=False)
class Unsupported(Stmt):
    """A construct of the wider Choreo language that this compiler parses but does not run; for an
    attribute (`[[schedule(...)]] stmt`), its items, which the analysis still checks for mistakes."""

    what: str
    inner: Stmt | None = None
    attributes: tuple[Attribute, ...] = ()


# -------------------------------------------------------- device code: inline assembly


@dataclass(frozen=True, eq=False)
class AsmOperand(Node):
    """`[name] "=r"(out.at(p))` of an inline assembly statement."""

    constraint: str
    expr: Expr
    name: str | None = None


@dataclass(frozen=True, eq=False)
class Asm(Stmt):
    """`__asm__ volatile("mov.u32 %0, %1;" : "=r"(x) : "r"(v) : "memory");`: GNU extended inline
    assembly, emitted as written on CUDA. `template` and `clobbers` keep their C escapes."""

    template: str
    volatile: bool
    outputs: tuple[AsmOperand, ...] = ()
    inputs: tuple[AsmOperand, ...] = ()
    clobbers: tuple[str, ...] = ()


# ------------------------------------------ synchronization, control and debugging (issue 14, c14d)


@dataclass(frozen=True, eq=False)
class Barrier(Stmt):
    """`sync.barrier : L;`: the threads of an instance of L meet (a warp for `group` and `thread`, a
    warpgroup for `group-4`, the block for `block`); in a `block<cooperative>` kernel, `block` and
    `device` mean every block of the grid."""

    level: str
    level_span: Span


@dataclass(frozen=True, eq=False)
class Fence(Stmt):
    """`sync.fence : L;`: this thread's memory writes before it are seen before those after it by the
    threads of its L instance (the block for `thread`, `group` and `group-4`; the device above)."""

    level: str
    storage: str | None = None  # `sync.fence : block<shared>`


@dataclass(frozen=True, eq=False)
class NamedBarrier(Stmt):
    """`__bar_sync(id, count);` arrives at hardware barrier `id` of `count` threads and waits for
    them; `__bar_arrive(id, count);` only arrives."""

    waits: bool
    barrier: Expr
    count: Expr


@dataclass(frozen=True, eq=False)
class Yield(Stmt):
    """`yield;`: the thread leaves the kernel; nothing after it runs in that thread."""


@dataclass(frozen=True, eq=False)
class Assert(Stmt):
    """`assert(cond, "message");`: checked at compile time where the condition is known, else when it runs."""

    condition: Expr
    message: str


@dataclass(frozen=True, eq=False)
class Print(Stmt):
    """`print(...)` / `println(...)` when the statement runs; `print!(...)` / `println!(...)` print what
    the compiler knows of the values, when it compiles."""

    args: tuple[Expr, ...]
    newline: bool
    compile_time: bool


# ----------------------------------------------------------------- functions

STREAM_TYPE = "stream"  # the type of a `stream s` parameter: a CUDA stream the caller passes


@dataclass(frozen=True, eq=False)
class TypeRef(Node):
    """`f16 [M, K]` (spanned) or `int` (scalar, `shape` None); `void`/`auto` for returns."""

    name: str
    shape: tuple[Expr, ...] | None = None


@dataclass(frozen=True, eq=False)
class Param(Node):
    """`f16 [M, K] a`, `global f32 [N] out`, `f32 [N] &out` (by reference), `stream s`, or an unnamed
    `bool` (`named` False: its name is made up, and nothing can refer to it)."""

    type: TypeRef
    name: str
    name_span: Span
    is_global: bool = False
    by_reference: bool = False
    named: bool = True

    @property
    def is_stream(self) -> bool:
        return self.type.name == STREAM_TYPE

    @property
    def writes_back(self) -> bool:
        """Whether what the function writes into the argument reaches the caller's array."""
        return self.is_global or self.by_reference


@dataclass(frozen=True, eq=False)
class Function(Node):
    name: str
    name_span: Span
    return_type: TypeRef
    params: tuple[Param, ...]
    body: Block


@dataclass(frozen=True, eq=False)
class Program(Node):
    functions: tuple[Function, ...]


# ------------------------------------------------------------------ traversal


def child_statements(stmt: Stmt) -> Iterator[Stmt]:
    """The statements directly inside `stmt` (a body, the branches of an if, a block's items)."""
    for value in vars(stmt).values():
        if isinstance(value, Stmt):
            yield value
        elif isinstance(value, tuple):
            yield from (item for item in value if isinstance(item, Stmt))


def walk_statements(stmt: Stmt) -> Iterator[Stmt]:
    """`stmt` and every statement nested in it, outermost first."""
    yield stmt
    for child in child_statements(stmt):
        yield from walk_statements(child)


def walk_expr(expr: Expr) -> Iterator[Expr]:
    """Every sub-expression of `expr`, itself first."""
    yield expr
    for value in vars(expr).values():
        if isinstance(value, Expr):
            yield from walk_expr(value)
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, Expr):
                    yield from walk_expr(item)


def root_name(expr: Expr | None) -> Name | None:
    """The name a view, an element or a method chain starts from: `a` of `a.chunkat(i).at(j)`, `(a)[0]`."""
    while isinstance(expr, Method | Member | Index | Paren):
        expr = expr.inner if isinstance(expr, Paren) else expr.value
    return expr if isinstance(expr, Name) else None


def written_names(body: Block) -> frozenset[str]:
    """The names that some statement of `body` writes: an assignment's target (`x = e`, `x += e`), an
    increment (`x++`), an output of inline assembly."""
    names: set[str] = set()
    for stmt in walk_statements(body):
        if isinstance(stmt, Assign) and isinstance(stmt.target, Name):
            names.add(stmt.target.id)
        elif isinstance(stmt, Asm):
            names.update(o.expr.id for o in stmt.outputs if isinstance(o.expr, Name))
        for value in vars(stmt).values():
            for expr in value if isinstance(value, tuple) else (value,):
                if isinstance(expr, Expr):
                    names.update(
                        e.operand.id
                        for e in walk_expr(expr)
                        if isinstance(e, IncDec) and isinstance(e.operand, Name)
                    )
    return frozenset(names)
