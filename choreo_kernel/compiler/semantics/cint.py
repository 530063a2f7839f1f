"""C integer semantics: the one table that every pass and backend computes integers with.

Choreo's integers behave as C's (language.md 10): division truncates toward zero, `%` takes
the sign of the dividend, `cdiv(a, b)` is `(a + b - 1) / b` as the device header computes it,
shifts by a negative count or by the width or more are undefined, and a 32-bit `int` wraps
in two's complement on the GPU. The analysis folds dimensions, the CUDA lowering folds
subscripts, the sim computes thread values and the preprocessor evaluates `#if` with these
functions. `divide`, `remainder` and `cdiv` also work element-wise on NumPy integer arrays,
so the sim's per-thread values take the same definitions as its uniform ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

INT_BITS = 32  # a Choreo `int` (s32), as on the device
INTMAX_BITS = 64  # the preprocessor computes `#if` in intmax_t

Integer = Any  # an int, or a NumPy integer array (element-wise)


def divide(a: Integer, b: Integer) -> Integer:
    """`a / b` truncated toward zero (the caller has excluded b == 0)."""
    quotient = abs(a) // abs(b)
    negative = (a < 0) ^ (b < 0)
    return quotient - 2 * (negative * quotient)  # keeps a NumPy array's integer type


def remainder(a: Integer, b: Integer) -> Integer:
    """`a % b`, with the sign of the dividend: `a - (a / b) * b`."""
    return a - divide(a, b) * b


def cdiv(a: Integer, b: Integer) -> Integer:
    """`cdiv(a, b)`: a / b rounded up for positive operands, `(a + b - 1) / b` as the device header has it."""
    return divide(a + b - 1, b)


def wrap(value: int, bits: int = INT_BITS, signed: bool = True) -> int:
    """`value` as a two's-complement integer of `bits` bits (what the hardware keeps)."""
    span = 1 << bits
    value %= span
    if signed and value >= span >> 1:
        value -= span
    return value


def fits(value: int, bits: int = INT_BITS, signed: bool = True) -> bool:
    """Whether `value` is representable without wrapping."""
    if signed:
        return -(1 << (bits - 1)) <= value < 1 << (bits - 1)
    return 0 <= value < 1 << bits


def literal_type(value: int, unsigned: bool, long: bool = False) -> str | None:
    """The type of an integer literal, as C gives it: `int` where it fits and no `ll` suffix asks for
    64 bits, else a 64-bit one (unsigned with a `u` suffix); None where no 64-bit type holds it."""
    for bits in (INTMAX_BITS,) if long else (INT_BITS, INTMAX_BITS):
        if fits(value, bits, signed=not unsigned):
            return f"{'u' if unsigned else 's'}{bits}"
    return None


def literal_range(unsigned: bool, hexadecimal: bool) -> str:
    """The values a 64-bit literal can have, as the message for one out of range writes them."""
    top = (1 << INTMAX_BITS) - 1 if unsigned else (1 << (INTMAX_BITS - 1)) - 1
    return f"[0, {hex(top) if hexadecimal else top}]"


_ARITHMETIC: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": divide,
    "%": remainder,
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
}
_LOGICAL: dict[str, Callable[[int, int], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "&&": lambda a, b: bool(a) and bool(b),
    "||": lambda a, b: bool(a) or bool(b),
}
ARITHMETIC_OPERATORS = frozenset(_ARITHMETIC)
LOGICAL_OPERATORS = frozenset(_LOGICAL)


def undefined(op: str, b: int, bits: int = INT_BITS) -> str | None:
    """Why C leaves `a op b` undefined for this right operand, or None when it is defined."""
    if op in ("/", "%") and b == 0:
        return "division by zero"
    if op in ("<<", ">>") and not 0 <= b < bits:
        return f"a shift by {b} (the count must be from 0 to {bits - 1})"
    return None


def arithmetic(op: str, a: int, b: int, bits: int = INT_BITS) -> int | None:
    """`a op b` for an arithmetic or bitwise operator, exactly (no wrap); None where C leaves it undefined
    or `op` is not one of them."""
    compute = _ARITHMETIC.get(op)
    if compute is None or undefined(op, b, bits) is not None:
        return None
    return compute(a, b)


def logical(op: str, a: int, b: int) -> bool | None:
    """`a op b` for a comparison, `&&` or `||`; None for any other operator."""
    compute = _LOGICAL.get(op)
    return compute(a, b) if compute is not None else None


def unary(op: str, a: int) -> int | None:
    """`-a`, `+a`, `~a`, `!a` (as 0 or 1); None for any other operator."""
    if op == "-":
        return -a
    if op == "+":
        return a
    if op == "~":
        return ~a
    if op == "!":
        return int(not a)
    return None
