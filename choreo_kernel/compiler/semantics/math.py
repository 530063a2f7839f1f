"""The math built-ins (`__sin(x)`, `__pow(x, y)`, `__alignup(n, a)`, ...): one table for every pass.

The analysis reads a function's arity and the type of its result from here, the CUDA lowering
calls `choreo::math::<device>` (choreo_runtime.cuh defines each for float and double), and the
sim computes `reference` with NumPy, so the three cannot disagree about which built-ins exist.

Results, as language.md 10 has it for arithmetic: a `floating` function computes in f64 when an
argument is f64 and in f32 otherwise (integers and the narrow floats are converted first), and
returns that type; `__max`, `__min` and `__abs` keep C's arithmetic type of their operands;
`__alignup` and `__aligndown` work on integers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from choreo_kernel.compiler.semantics import cint

Reference = Callable[..., Any]  # (numpy, *arguments) -> the value, element-wise


@dataclass(frozen=True)
class MathFunction:
    name: str  # as written: "__sin"
    arity: int
    result: str  # "floating", "arithmetic" (C's type of the operands) or "integer"
    device: str  # choreo::math::<device> in the emitted CUDA
    reference: Reference
    help: str


def _round(xp: Any, x: Any) -> Any:
    """C's roundf: halves away from zero (NumPy's round takes them to even)."""
    whole = xp.trunc(x)
    return xp.where(xp.abs(x - whole) >= 0.5, whole + xp.sign(x), whole)


def _gelu(xp: Any, x: Any) -> Any:
    """The tanh approximation of GELU, with the constants as the device computes them."""
    k0 = x.dtype.type(0.044715)
    k1 = x.dtype.type(0.7978845608028654)
    half, one = x.dtype.type(0.5), x.dtype.type(1)
    return x * half * (one + xp.tanh(k1 * (x + k0 * x * x * x)))


def _fma(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """a * b + c with one rounding: the product of two floats is exact in double."""
    wide = xp.asarray(a, dtype=xp.float64) * xp.asarray(b, dtype=xp.float64) + xp.asarray(c, dtype=xp.float64)
    return wide.astype(xp.result_type(a, b, c))


def _exp2(xp: Any, x: Any) -> Any:
    """2^x; in f32 a result below the smallest normal float is 0, as CUDA's ex2.approx.ftz gives it."""
    result = xp.exp2(x)
    if xp.asarray(result).dtype != xp.float32:
        return result
    return xp.where(result < xp.finfo(xp.float32).tiny, xp.float32(0), result).astype(xp.float32)[()]


def _one(x: Any) -> Any:
    return x.dtype.type(1)


_FUNCTIONS = (
    MathFunction("__exp", 1, "floating", "exp", lambda xp, x: xp.exp(x), "e to the power x"),
    MathFunction("__exp2f", 1, "floating", "exp2", _exp2, "2 to the power x (f32: below 2^-126, 0)"),
    MathFunction("__expm1", 1, "floating", "expm1", lambda xp, x: xp.expm1(x), "e^x - 1, exact near 0"),
    MathFunction("__log", 1, "floating", "log", lambda xp, x: xp.log(x), "the natural logarithm"),
    MathFunction("__log1p", 1, "floating", "log1p", lambda xp, x: xp.log1p(x), "log(1 + x), exact near 0"),
    MathFunction("__pow", 2, "floating", "pow", lambda xp, x, y: xp.power(x, y), "x to the power y"),
    MathFunction("__sqrt", 1, "floating", "sqrt", lambda xp, x: xp.sqrt(x), "the square root"),
    MathFunction("__rsqrt", 1, "floating", "rsqrt", lambda xp, x: _one(x) / xp.sqrt(x), "1 / sqrt(x)"),
    MathFunction(
        "__frcp_rn", 1, "floating", "frcp_rn", lambda xp, x: _one(x) / x, "1 / x, rounded to nearest"
    ),
    MathFunction("__sin", 1, "floating", "sin", lambda xp, x: xp.sin(x), "the sine"),
    MathFunction("__cos", 1, "floating", "cos", lambda xp, x: xp.cos(x), "the cosine"),
    MathFunction("__tan", 1, "floating", "tan", lambda xp, x: xp.tan(x), "the tangent"),
    MathFunction("__asin", 1, "floating", "asin", lambda xp, x: xp.arcsin(x), "the inverse sine"),
    MathFunction("__acos", 1, "floating", "acos", lambda xp, x: xp.arccos(x), "the inverse cosine"),
    MathFunction("__atan", 1, "floating", "atan", lambda xp, x: xp.arctan(x), "the inverse tangent"),
    MathFunction(
        "__atan2", 2, "floating", "atan2", lambda xp, y, x: xp.arctan2(y, x), "the angle of the point (x, y)"
    ),
    MathFunction("__sinh", 1, "floating", "sinh", lambda xp, x: xp.sinh(x), "the hyperbolic sine"),
    MathFunction("__cosh", 1, "floating", "cosh", lambda xp, x: xp.cosh(x), "the hyperbolic cosine"),
    MathFunction("__tanh", 1, "floating", "tanh", lambda xp, x: xp.tanh(x), "the hyperbolic tangent"),
    MathFunction("__ceil", 1, "floating", "ceil", lambda xp, x: xp.ceil(x), "the smallest whole number >= x"),
    MathFunction(
        "__floor", 1, "floating", "floor", lambda xp, x: xp.floor(x), "the largest whole number <= x"
    ),
    MathFunction("__round", 1, "floating", "round", _round, "the nearest whole number, halves away from 0"),
    MathFunction("__fabs", 1, "floating", "fabs", lambda xp, x: xp.abs(x), "the absolute value, as a float"),
    MathFunction(
        "__sign", 1, "floating", "sign", lambda xp, x: xp.sign(xp.nan_to_num(x, nan=0.0)), "-1, 0 or 1"
    ),
    MathFunction(
        "__isfinite",
        1,
        "floating",
        "isfinite",
        lambda xp, x: xp.isfinite(x).astype(x.dtype),
        "1 when x is neither infinite nor NaN, else 0",
    ),
    MathFunction(
        "__sigmoid",
        1,
        "floating",
        "sigmoid",
        lambda xp, x: _one(x) / (_one(x) + xp.exp(-x)),
        "1 / (1 + e^-x)",
    ),
    MathFunction("__softplus", 1, "floating", "softplus", lambda xp, x: xp.log1p(xp.exp(x)), "log(1 + e^x)"),
    MathFunction("__gelu", 1, "floating", "gelu", _gelu, "GELU, with the tanh approximation"),
    MathFunction("__fmaf", 3, "floating", "fma", _fma, "a * b + c, rounded once"),
    MathFunction("__max", 2, "arithmetic", "max", lambda xp, a, b: xp.maximum(a, b), "the larger of a and b"),
    MathFunction(
        "__min", 2, "arithmetic", "min", lambda xp, a, b: xp.minimum(a, b), "the smaller of a and b"
    ),
    MathFunction("__abs", 1, "arithmetic", "abs", lambda xp, x: xp.abs(x), "the absolute value"),
    MathFunction(
        "__alignup",
        2,
        "integer",
        "alignup",
        lambda xp, n, a: cint.cdiv(n, a) * a,
        "n rounded up to a multiple of a",
    ),
    MathFunction(
        "__aligndown",
        2,
        "integer",
        "aligndown",
        lambda xp, n, a: cint.divide(n, a) * a,
        "n rounded down to a multiple of a",
    ),
)
MATH_FUNCTIONS: dict[str, MathFunction] = {function.name: function for function in _FUNCTIONS}
