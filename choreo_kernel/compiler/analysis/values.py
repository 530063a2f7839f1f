"""What a Choreo expression denotes: scalars, bounded integers, shapes, data views, futures, events.

Dimensions are `Dim`s: an `int` when known at compile time, otherwise the
text of a symbolic expression (`"M / 128"`).  Checks compare dimensions only
when both are known, so symbolic programs are never rejected on a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from choreo_kernel.compiler.diagnostics import Span
from choreo_kernel.compiler.semantics import cint
from choreo_kernel.compiler.semantics.levels import Storage
from choreo_kernel.compiler.semantics.register_layout import RegisterLayout

if TYPE_CHECKING:
    from choreo_kernel.compiler import ast

Dim = int | str

FLOAT_TYPES = ("f64", "f32", "tf32", "f16", "bf16", "f8_e4m3", "f8_e5m2", "f6_e3m2", "f6_e2m3", "f4_e2m1")
INT_TYPES = (
    "s64",
    "u64",
    "s32",
    "u32",
    "s16",
    "u16",
    "s8",
    "u8",
    "s6",
    "u6",
    "s4",
    "u4",
    "s2",
    "u2",
    "u1",
    "bin1",
)
# The types narrower than a byte, and their bits; each is stored in a byte of its own (as NumPy holds them).
SUB_BYTE_BITS = {
    "f6_e3m2": 6,
    "f6_e2m3": 6,
    "f4_e2m1": 4,
    "u6": 6,
    "s6": 6,
    "u4": 4,
    "s4": 4,
    "u2": 2,
    "s2": 2,
    "u1": 1,
    "bin1": 1,
}
NARROW_FLOAT_TYPES = ("f16", "bf16", "f8_e4m3", "f8_e5m2")  # stored as their bits, computed in f32
# The narrow floats that device functions take as data: a pointer to CUDA's own type, from its header
# (the sim's prelude defines the same names for the host compiler).
CUDA_HALF_TYPES = {"f16": ("__half", "cuda_fp16.h"), "bf16": ("__nv_bfloat16", "cuda_bf16.h")}
ELEMENT_BYTES = {
    "f64": 8,
    "f32": 4,
    "tf32": 4,
    "f16": 2,
    "bf16": 2,
    "f8_e4m3": 1,
    "f8_e5m2": 1,
    "s64": 8,
    "u64": 8,
    "s32": 4,
    "u32": 4,
    "s16": 2,
    "u16": 2,
    "s8": 1,
    "u8": 1,
    "bool": 1,
    **dict.fromkeys(SUB_BYTE_BITS, 1),
}

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}


def fold(op: str, a: Dim, b: Dim) -> Dim:
    """`a op b` on dimensions: computed when both are known (C integer semantics), else symbolic."""
    if isinstance(a, int) and isinstance(b, int):
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if b == 0:
            return f"{a} {op} 0"
        return cint.divide(a, b) if op == "/" else cint.remainder(a, b)
    if op == "/" and a == b:
        return 1
    if op in ("*", "/") and b == 1:
        return a
    if op == "*" and a == 1:
        return b
    if op in ("+", "-") and b == 0:
        return a
    return f"{_wrap(a, op)} {op} {_wrap(b, op, right=True)}"


class _CeilInt(int):
    """A bound `cdiv(extent, tile)` known when compiling, which remembers `covers = (extent, tile)`."""

    covers: tuple[Dim, int]


class _CeilText(str):
    """A symbolic bound `cdiv(extent, tile)` (its text as any symbolic dimension's), remembering `covers`."""

    covers: tuple[Dim, int]


def ceil_bound(extent: Dim, tile: Dim) -> Dim:
    """`cdiv(extent, tile)` as a dimension: the number of tiles of `tile` that cover `extent`. Where `tile`
    is a positive constant the bound remembers both (`ceil_tiles`), so that a chunkat by a variable of
    this bound cuts tiles of `tile` (resolve/views.py); arithmetic on it makes a plain dimension again."""
    if isinstance(extent, int) and isinstance(tile, int) and tile != 0:
        bound: Dim = cint.cdiv(extent, tile)
    else:
        bound = fold("/", fold("-", fold("+", extent, tile), 1), tile)
    if not (isinstance(tile, int) and tile > 0):
        return bound
    remembered = _CeilInt(bound) if isinstance(bound, int) else _CeilText(bound)
    remembered.covers = (extent, tile)
    return remembered


def ceil_tiles(bound: Dim) -> tuple[Dim, int] | None:
    """`(extent, tile)` of a bound that `cdiv(extent, tile)` made with a constant tile, else None."""
    return getattr(bound, "covers", None)


def _wrap(dim: Dim, op: str, right: bool = False) -> str:
    text = str(dim)
    if isinstance(dim, int):
        return text if dim >= 0 else f"({text})"
    inner = min((_PRECEDENCE.get(c, 9) for c in text.split() if c in _PRECEDENCE), default=9)
    if inner < _PRECEDENCE.get(op, 0) or (right and inner == _PRECEDENCE.get(op, 0)):
        return f"({text})"
    return text


def product(dims: tuple[Dim, ...]) -> Dim:
    result: Dim = 1
    for dim in dims:
        result = fold("*", result, dim)
    return result


def shape_text(dims: tuple[Dim, ...]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def compact_strides(dims: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """Row-major element strides of a buffer with these extents."""
    strides: list[Dim] = []
    stride: Dim = 1
    for dim in reversed(dims):
        strides.append(stride)
        stride = fold("*", stride, dim)
    return tuple(reversed(strides))


# ------------------------------------------------------------------- values


class Value:
    """Base of everything an expression can denote."""

    def describe(self) -> str:
        return type(self).__name__.lower()


@dataclass(frozen=True)
class Scalar(Value):
    """A scalar of element type `type` (s32 for `int`, f32 for `float`, bool)."""

    type: str
    const: Dim | None = None  # its value, when known

    def describe(self) -> str:
        return self.type


@dataclass(frozen=True)
class Bounded(Value):
    """A bounded integer: a value with an upper bound `#x` (parallel, foreach, with variables)."""

    bound: Dim

    def describe(self) -> str:
        return f"bounded int (#{self.bound})"


@dataclass(frozen=True)
class Shape(Value):
    dims: tuple[Dim, ...]

    def describe(self) -> str:
        return f"shape {shape_text(self.dims)}"


@dataclass(frozen=True)
class ITuple(Value):
    items: tuple[Dim, ...]

    def describe(self) -> str:
        return "ituple {" + ", ".join(str(i) for i in self.items) + "}"


@dataclass(frozen=True)
class Data(Value):
    """Spanned data: a buffer or a view of one.  `root` is the buffer's symbol name.

    `strides` are the element strides of a view (None: the row-major strides of `dims`, as
    for a whole buffer and for what `span_as` makes)."""

    elem: str
    dims: tuple[Dim, ...]
    storage: Storage
    root: str
    strides: tuple[Dim, ...] | None = None

    def describe(self) -> str:
        return f"{self.elem} {shape_text(self.dims)}"

    @property
    def layout(self) -> tuple[Dim, ...]:
        """The element strides, whether written or implied."""
        return self.strides if self.strides is not None else compact_strides(self.dims)

    def viewed(self, dims: tuple[Dim, ...], strides: tuple[Dim, ...] | None) -> Data:
        """A view of the same buffer with these extents and strides."""
        return Data(self.elem, dims, self.storage, self.root, strides)

    def contiguous(self) -> bool | None:
        """Whether the elements are stored one after another in row-major order (dimensions of extent 1
        do not count); None where symbolic extents leave it open."""
        if self.strides is None:
            return True
        expected: Dim = 1
        for dim, stride in reversed(list(zip(self.dims, self.strides))):
            if dim == 1:
                continue
            if stride != expected:
                if isinstance(stride, int) and isinstance(expected, int):
                    return False
                return None
            expected = fold("*", expected, dim)
        return True


@dataclass(frozen=True)
class Tiling(Value):
    """`x.subspan(a, b)` (or `.step`, `.chunk`) waiting for its `.at(i, j)`."""

    base: Data
    extents: tuple[Dim, ...]
    steps: tuple[Dim, ...]
    origin_method: str

    def tile(self) -> Data:
        return self.base.viewed(self.extents, self.base.layout)


@dataclass(frozen=True)
class Window(Value):
    """`x.view(a, b)` or `x.view(a, b : sa, sb)` waiting for its `.from(o0, o1)`."""

    base: Data
    extents: tuple[Dim, ...]
    strides: tuple[Dim, ...] | None = None  # written after the colon; None: the data's own

    def window(self) -> Data:
        return self.base.viewed(self.extents, self.strides if self.strides is not None else self.base.layout)


@dataclass(frozen=True)
class BufferArray(Value):
    """`shared f16 [128, 64] stage[3]`: index with a physical slot to get one buffer."""

    element: Data
    counts: tuple[Dim, ...]

    def describe(self) -> str:
        return f"array of {len(self.counts)}-d {self.element.describe()} buffers"


@dataclass(frozen=True)
class AccumulatorArray(Value):
    """`frag mc[2][3] {0.0};`: index it fully (`mc[0][i]`) to get one accumulator."""

    elem: str
    counts: tuple[Dim, ...]

    def describe(self) -> str:
        return f"array of {self.elem} accumulators {shape_text(self.counts)}"


@dataclass(frozen=True)
class Transfer:
    """What a dma copy does besides moving the source's elements in order, decided once by the analysis
    and read by both backends: `dma.transp<...>` permutes dimensions (destination dimension k is source
    dimension `permutation[k]`); `dma.pad<...>` and a copy into a larger tile place the source at `low`
    (an expression or an int per dimension) and fill the rest of the destination with `fill` (None: 0).
    `high` is the padding after the source, which sizes a destination that `=> shared` allocates."""

    permutation: tuple[int, ...] | None = None
    low: tuple[ast.Expr | int, ...] | None = None
    high: tuple[ast.Expr | int, ...] | None = None
    fill: ast.Expr | None = None

    @property
    def pads(self) -> bool:
        return self.low is not None


@dataclass(eq=False)
class FutureInfo:
    """What produced a future: the operation, whether it is async, and its destination."""

    operation: ast.Operation
    statement: ast.OperationStmt
    kind: str  # "dma", "tma-load", "tma-store", "mma", "placeholder"
    is_async: bool
    destination: Data | None = None
    accumulator: str | None = None  # for MMA operation futures


@dataclass(frozen=True)
class Future(Value):
    """A data future (dma/tma) or an operation future (mma)."""

    is_data: bool

    def describe(self) -> str:
        return "data future" if self.is_data else "operation future"


@dataclass(frozen=True)
class Event(Value):
    dims: tuple[Dim, ...]
    ready: bool
    storage: Storage

    def describe(self) -> str:
        return "event" if not self.dims else f"event array {shape_text(self.dims)}"


@dataclass(frozen=True)
class EventSlot(Value):
    """One event: a plain event, `e[i]`, or `e.at(order)`."""

    event: str
    form: str  # "plain", "index", "at"


@dataclass(frozen=True)
class Accumulator(Value):
    elem: str

    def describe(self) -> str:
        return f"{self.elem} accumulator"


@dataclass(frozen=True)
class Fragment(Value):
    """An MMA operand loaded with `mma.load`."""

    data: Data
    registers: bool = False  # a `frag` buffer or a converted accumulator, in a warpgroup's registers

    def describe(self) -> str:
        return f"{'fragment' if self.registers else 'mma operand fragment'} {self.data.describe()}"


@dataclass(frozen=True)
class StorageKeyword(Value):
    """`shared` / `local` as a copy destination: the compiler allocates the buffer."""

    storage: Storage


@dataclass(frozen=True)
class Builtin(Value):
    name: str


@dataclass(frozen=True)
class BoundedTuple(Value):
    """A bounded ituple: `index` of `with index = {x, y} in [4, 8]`, `i` of `foreach i in a.span`, `q` of
    `parallel q = {q0, q1} by [2, 2]`. Each element is a bounded integer with its own bound; `elements`
    names the variables that hold them (None where the elements are anonymous, `with index in [4, 8]`).
    In an index list (`chunkat(index)`, `.at(index, p)`) it stands for all its elements in order."""

    bounds: tuple[Dim, ...]
    elements: tuple[str, ...] | None = None

    def describe(self) -> str:
        return f"bounded ituple (#{shape_text(self.bounds)})"


@dataclass(frozen=True)
class Stream(Value):
    """A `stream` parameter: the CUDA stream a `parallel<s>` launches on."""

    def describe(self) -> str:
        return "stream"


@dataclass(frozen=True)
class Unknown(Value):
    """The value of an expression that already has an error: checks on it stay silent."""


UNKNOWN = Unknown()


@dataclass(frozen=True)
class DeviceResult(Unknown):
    """The value of a device function call: C++ gives it no Choreo type, so it takes the type of
    where it is used (analysis/device_checks.py); checks on it stay silent meanwhile."""

    callee: str

    def describe(self) -> str:
        return f"the result of device function '{self.callee}'"


@dataclass(frozen=True)
class TemplateValue:
    """A template argument of a device call: an integer known at compile time (`kind` "int"), an
    element type ("type", such as "f32"), or a C++ name given verbatim ("name")."""

    kind: str
    value: int | str


@dataclass(frozen=True)
class DeviceArgument:
    """What a device call passes: a scalar of Choreo type `type` by value ("value"), a pointer to
    the first element of data of element type `type` ("data"), a pointer to the calling thread's
    registers of a fragment or an accumulator of element type `type`, in `layout` ("registers"), or a
    null pointer ("null"); `cast` is the C++ type of a foreign cast around it (`__to<"const float*">(x)`),
    None without one."""

    kind: str
    type: str = ""
    cast: str | None = None
    layout: RegisterLayout | None = None


@dataclass(frozen=True)
class DeviceCallInfo:
    """A device call as every backend emits it: its template arguments (None: no `<...>`), its
    arguments, and the Choreo type its result is converted to (None where it is discarded)."""

    template_args: tuple[TemplateValue, ...] | None
    arguments: tuple[DeviceArgument, ...]
    result: str | None = None


@dataclass(eq=False)
class Symbol:
    """A declared name: what it denotes, where it was declared, and whether it can change."""

    name: str
    value: Value
    span: Span  # where it is declared
    mutable: bool = False
    declaration: object = None  # the declaring AST node
    origin: str = ""  # "param", "dim", "parallel", "foreach", "with", "local"...
    future: FutureInfo | None = None
    accumulator_shape: tuple[Dim, ...] | None = None


def promote(a: str, b: str) -> str | None:
    """C-like promotion of two element types (f16/bf16 arithmetic happens in f32)."""
    order = (
        "f64",
        "f32",
        "tf32",
        "bf16",
        "f16",
        "f8_e4m3",
        "f8_e5m2",
        "f6_e3m2",
        "f6_e2m3",
        "f4_e2m1",
        "u64",
        "s64",
        "u32",
        "s32",
        "u16",
        "s16",
        "u8",
        "s8",
        "u6",
        "s6",
        "u4",
        "s4",
        "u2",
        "s2",
        "u1",
        "bin1",
        "bool",
    )
    if a not in order or b not in order:
        return None
    best = min(order.index(a), order.index(b))
    result = order[best]
    if result in ("bf16", "f16", "tf32", "f8_e4m3", "f8_e5m2", "f6_e3m2", "f6_e2m3", "f4_e2m1") and a != b:
        return "f32"
    if result in ("u16", "s16", "u8", "s8", "bool", *SUB_BYTE_BITS):
        return "s32"
    return result


def known_mismatch(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> bool:
    if len(a) != len(b):
        return True
    return any(isinstance(x, int) and isinstance(y, int) and x != y for x, y in zip(a, b))


def known_count_mismatch(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> bool:
    """Two shapes hold different element counts (when both counts are known)."""
    count_a, count_b = product(a), product(b)
    if isinstance(count_a, int) and isinstance(count_b, int):
        return count_a != count_b
    return False


# (exponent bits, mantissa bits) of the floating types a scalar is converted between.
FLOAT_FORMATS = {
    "f64": (11, 52),
    "f32": (8, 23),
    "tf32": (8, 10),
    "bf16": (8, 7),
    "f16": (5, 10),
    "f8_e4m3": (4, 3),
    "f8_e5m2": (5, 2),
}


def loses_precision(source: str, target: str) -> bool:
    """Whether converting a `source` float into `target` can change its value: into an integer, or into a
    float with fewer exponent or mantissa bits."""
    if source not in FLOAT_FORMATS or source == target:
        return False
    if target not in FLOAT_FORMATS:
        return target not in FLOAT_TYPES  # an integer
    return any(t < s for s, t in zip(FLOAT_FORMATS[source], FLOAT_FORMATS[target]))
