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

if TYPE_CHECKING:
    from choreo_kernel.compiler import ast

Dim = int | str

FLOAT_TYPES = ("f64", "f32", "tf32", "f16", "bf16", "f8_e4m3", "f8_e5m2")
INT_TYPES = ("s64", "u64", "s32", "u32", "s16", "u16", "s8", "u8")
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
    """Spanned data: a buffer or a view of one.  `root` is the buffer's symbol name."""

    elem: str
    dims: tuple[Dim, ...]
    storage: Storage
    root: str

    def describe(self) -> str:
        return f"{self.elem} {shape_text(self.dims)}"


@dataclass(frozen=True)
class Tiling(Value):
    """`x.subspan(a, b)` (or `.step`, `.chunk`) waiting for its `.at(i, j)`."""

    base: Data
    extents: tuple[Dim, ...]
    steps: tuple[Dim, ...]
    origin_method: str

    def tile(self) -> Data:
        return Data(self.base.elem, self.extents, self.base.storage, self.base.root)


@dataclass(frozen=True)
class Window(Value):
    """`x.view(a, b)` waiting for its `.from(o0, o1)`."""

    base: Data
    extents: tuple[Dim, ...]


@dataclass(frozen=True)
class BufferArray(Value):
    """`shared f16 [128, 64] stage[3]`: index with a physical slot to get one buffer."""

    element: Data
    counts: tuple[Dim, ...]

    def describe(self) -> str:
        return f"array of {len(self.counts)}-d {self.element.describe()} buffers"


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

    def describe(self) -> str:
        return f"mma operand fragment {self.data.describe()}"


@dataclass(frozen=True)
class StorageKeyword(Value):
    """`shared` / `local` as a copy destination: the compiler allocates the buffer."""

    storage: Storage


@dataclass(frozen=True)
class Builtin(Value):
    name: str


@dataclass(frozen=True)
class Unknown(Value):
    """The value of an expression that already has an error: checks on it stay silent."""


UNKNOWN = Unknown()


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
        "u64",
        "s64",
        "u32",
        "s32",
        "u16",
        "s16",
        "u8",
        "s8",
        "bool",
    )
    if a not in order or b not in order:
        return None
    best = min(order.index(a), order.index(b))
    result = order[best]
    if result in ("bf16", "f16", "tf32", "f8_e4m3", "f8_e5m2") and a != b:
        return "f32"
    if result in ("u16", "s16", "u8", "s8", "bool"):
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
