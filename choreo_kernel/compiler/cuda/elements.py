"""Choreo element types in the emitted CUDA, and the conversions between them.

Narrow floating types (f16, bf16, fp8) are stored as their bits (`choreo::f16`) and widened
to f32 for arithmetic, then rounded on store (language.md 10), so every value carries its
Choreo type and the conversions are inserted where a value crosses between the two.
"""

from __future__ import annotations

from choreo_kernel.compiler.analysis.values import SUB_BYTE_BITS
from choreo_kernel.compiler.cuda import cexpr
from choreo_kernel.compiler.cuda.cexpr import CExpr

C_TYPES = {
    "f64": "double",
    "f32": "float",
    "tf32": "float",
    "f16": "choreo::f16",
    "bf16": "choreo::bf16",
    "f8_e4m3": "choreo::f8_e4m3",
    "f8_e5m2": "choreo::f8_e5m2",
    "s64": "long long",
    "u64": "unsigned long long",
    "s32": "int",
    "u32": "unsigned",
    "s16": "short",
    "u16": "unsigned short",
    "s8": "signed char",
    "u8": "unsigned char",
    "bool": "bool",
    **{name: f"choreo::{name}" for name in SUB_BYTE_BITS},
}
NARROW_FLOATS = ("f16", "bf16", "f8_e4m3", "f8_e5m2", "f6_e3m2", "f6_e2m3", "f4_e2m1")
# Integers narrower than a byte: kept in a byte, read as int (language.md 10).
SMALL_INTS = tuple(name for name in SUB_BYTE_BITS if name not in NARROW_FLOATS)
STORED_AS_BITS = NARROW_FLOATS + SMALL_INTS  # structs of bits in C: converted on every read and write
# C's usual arithmetic conversions, widest first; the small integer types promote to int.
_RANK = ("f64", "f32", "u64", "s64", "u32", "s32")


def c_type(element: str) -> str:
    return C_TYPES[element]


def arithmetic_type(a: str, b: str) -> str:
    """The type C computes `a op b` in, once narrow floats are widened to f32."""
    a, b = _computed(a), _computed(b)
    for candidate in _RANK:
        if candidate in (a, b):
            return candidate
    return "s32"


def _computed(element: str) -> str:
    if element in NARROW_FLOATS or element == "tf32":
        return "f32"
    return element if element in _RANK else "s32"


def widen(value: CExpr, element: str) -> tuple[CExpr, str]:
    """A value ready for arithmetic: narrow floats become f32, integers narrower than a byte int."""
    if element in NARROW_FLOATS:
        return cexpr.call("choreo::to_f32", value), "f32"
    if element in SMALL_INTS:
        return cexpr.call("choreo::to_int", value), "s32"
    return value, element


def convert(value: CExpr, source: str, target: str) -> CExpr:
    """`value` (of type `source`) as a `target` to store: rounding into narrow floats, widening out of them."""
    if source == target:
        return value
    if source in STORED_AS_BITS:
        value, source = widen(value, source)
    if target in STORED_AS_BITS:
        return cexpr.call(f"choreo::to_{target}", value)
    return value
