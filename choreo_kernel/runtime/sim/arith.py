"""C semantics for Choreo scalar arithmetic, over uniform values and arrays of thread values.

A value is uniform (a Python or NumPy scalar: the same in every active thread) or an array
with one entry per active thread.  Python ints stand for C `int`, so loop counters and
indices cost no NumPy call.  Element arithmetic promotes like C (language.md 10): integer
division truncates toward zero, `%` takes the dividend's sign, and f16/bf16/f8 operands are
computed in f32, to be rounded only when stored.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from choreo_kernel.compiler.analysis.values import FLOAT_TYPES
from choreo_kernel.compiler.semantics import cint
from choreo_kernel.compiler.semantics.math import MATH_FUNCTIONS
from choreo_kernel.runtime.dtypes import element_type_of, numpy_dtype, tagged_type
from choreo_kernel.runtime.sim.errors import SimError

Number = Any  # int | float | bool | np.generic | np.ndarray (one entry per active thread)

_INT_RANK = {"bool": 0, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "s32": 3, "u32": 3, "s64": 4, "u64": 4}
_INT_RANK |= dict.fromkeys(("u6", "s6", "u4", "s4", "u2", "s2", "u1", "bin1"), 0)  # all promote to int
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}
_COMMON: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    **_COMPARE,
}
_INTEGER: dict[str, Callable[[Any, Any], Any]] = {
    **_COMMON,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}
COMPARISONS = frozenset(_COMPARE)


def element_type(value: Number) -> str:
    """The Choreo element type of a value: Python ints are C `int`, Python floats `double`."""
    kind = type(value)
    if kind is bool:
        return "bool"
    if kind is int:
        return "s32"
    if kind is float:
        return "f64"
    dtype = getattr(value, "dtype", None)
    name = element_type_of(dtype) if dtype is not None else None
    if name is None:
        raise SimError(f"a {type(value).__name__} is not a number")
    return name


def promote(*types: str) -> str:
    """The type C computes in: f64 over f32, narrow floats in f32, small integers as int."""
    if any(t in FLOAT_TYPES for t in types):
        return "f64" if "f64" in types else "f32"
    rank = max(3, *(_INT_RANK[t] for t in types))
    if rank == 3:
        return "u32" if "u32" in types else "s32"
    return "u64" if "u64" in types else "s64"


_SATURATING = {
    numpy_dtype(elem): float(ml_dtypes.finfo(numpy_dtype(elem)).max) for elem in ("f8_e4m3", "f8_e5m2")
}


def stored(value: Number, dtype: np.dtype) -> Number:
    """`value` as a store into an array of `dtype` keeps it: clamped to the finite range of an 8-bit
    float type, which the GPU converts with `.satfinite` (NaN stays NaN); wrapped to the low bits of a
    u6 or s6, or of any integer type for one integer (a 64-bit literal's value: C converts to the
    narrower integer), 0 or 1 for a bin1. Any other type takes `value` as it is: NumPy's conversion then rounds and wraps as the GPU does (ml_dtypes' for fp6, fp4 and the
    4-, 2- and 1-bit integers)."""
    tagged = tagged_type(dtype)
    if tagged == "bin1":
        held = truth(value)
        return held if isinstance(held, np.ndarray) else np.bool_(held)
    if tagged in ("u6", "s6"):
        whole = np.trunc(np.nan_to_num(np.asarray(value, dtype=np.float64))).astype(np.int64) & 63
        if tagged == "s6":
            whole = np.where(whole >= 32, whole - 64, whole)
        held = whole.astype(dtype)
        return held if isinstance(value, np.ndarray) else held[()]
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and dtype.kind in "iu":
        # one 64-bit value into a narrower integer: C wraps it (NumPy refuses a scalar out of range)
        return dtype.type(cint.wrap(int(value), dtype.itemsize * 8, signed=dtype.kind == "i"))
    limit = _SATURATING.get(dtype)
    if limit is None or getattr(value, "dtype", None) == dtype:
        return value
    clipped = np.clip(np.asarray(value, dtype=np.float32), -limit, limit)
    return clipped if isinstance(value, np.ndarray) else clipped[()]


def convert(value: Number, elem: str) -> Number:
    """`value` as element type `elem` (C conversion: floats truncate toward zero into integers)."""
    if elem == "s32" and type(value) is int:
        return value
    dtype = numpy_dtype(elem)
    value = stored(value, dtype)
    if isinstance(value, np.ndarray):
        return value if value.dtype == dtype else value.astype(dtype)
    try:
        return dtype.type(value)
    except (ValueError, OverflowError):  # NaN or a wide integer: the array cast wraps like C
        return np.array(value).astype(dtype)[()]


def binary(op: str, a: Number, b: Number) -> Number:
    """`a op b` for arithmetic, bitwise and comparison operators (not `&&`, `||`, `#`)."""
    if type(a) is int and type(b) is int:
        return _int_binary(op, a, b)
    left, right = element_type(a), element_type(b)
    result = promote(left, right)
    x, y = convert(a, result), convert(b, result)
    if result in FLOAT_TYPES:
        if op == "/":
            return np.true_divide(x, y)
        if op not in _COMMON:
            raise SimError(f"'{op}' needs integer operands, got {left} and {right}")
        return _COMMON[op](x, y)
    if op in ("/", "%"):
        if np.any(y == 0):
            raise SimError("integer division by zero")
        return cint.divide(x, y) if op == "/" else cint.remainder(x, y)
    return _INTEGER[op](x, y)


def _int_binary(op: str, a: int, b: int) -> Number:
    if op in ("/", "%") and b == 0:
        raise SimError("integer division by zero")
    if op in cint.LOGICAL_OPERATORS:
        return cint.logical(op, a, b)
    if op in ("<<", ">>") and b < 0:
        raise SimError(f"a shift by a negative count ({b})")
    result = cint.arithmetic(op, a, b, bits=max(b + 1, cint.INT_BITS))
    if result is None:
        raise SimError(f"'{op}' is not an integer operator")
    return cint.wrap(result)


def unary(op: str, a: Number) -> Number:
    """`-a`, `+a`, `~a`, `!a`."""
    if op == "!":
        return np.logical_not(truth(a)) if isinstance(a, np.ndarray) else not truth(a)
    if type(a) is int:
        return cint.wrap({"-": -a, "+": a, "~": ~a}[op])
    kind = element_type(a)
    x = convert(a, promote(kind))
    if op == "~":
        if kind in FLOAT_TYPES:
            raise SimError(f"'~' needs an integer operand, got {kind}")
        return np.invert(x)
    return -x if op == "-" else x


def truth(value: Number) -> Any:
    """C truthiness: a bool, or a bool array for thread values."""
    if isinstance(value, np.ndarray):
        return value if value.dtype == np.bool_ else value != 0
    return bool(value)


def builtin(name: str, args: list[Number]) -> Number:
    """`cdiv` and the math built-ins; math on integers or narrow floats is done in f32."""
    if name == "cdiv":
        a, b = args
        return binary("/", binary("-", binary("+", a, b), 1), b)  # (a + b - 1) / b, as cint.cdiv
    function = MATH_FUNCTIONS[name]
    result = promote(*(element_type(arg) for arg in args))
    if function.result == "floating" and result != "f64":
        result = "f32"
    elif function.result == "integer":
        if result in FLOAT_TYPES:
            raise SimError(f"'{name}' takes integers, got {result}")
        if np.any(np.asarray(args[1]) == 0):
            raise SimError(f"'{name}' aligns to a multiple of 0")
    with np.errstate(all="ignore"):  # NaN and infinity come out as the device's do
        value = function.reference(np, *(convert(arg, result) for arg in args))
    return value if function.result == "floating" else convert(value, result)


def as_index(value: Number) -> int | np.ndarray:
    """An integer index: a Python int, or an int array with one entry per thread."""
    if type(value) is int:
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iub":
            raise SimError(f"an index must be an integer, got {element_type(value)}")
        return value
    if isinstance(value, (bool, np.integer, np.bool_)):
        return int(value)
    raise SimError(f"an index must be an integer, got {element_type(value)}")


def poison_of(dtype: np.dtype) -> Any:
    """What an unwritten or in-flight buffer holds: NaN for floats, a recognizable sentinel otherwise."""
    if dtype == np.bool_:
        return True
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return info.min if info.min < 0 else info.max
    return np.array(np.nan).astype(dtype)[()]  # every float type, ml_dtypes' included
