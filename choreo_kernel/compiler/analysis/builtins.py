"""The names the language defines: built-in functions of expressions and of futures."""

from __future__ import annotations

import re

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.semantics.math import MATH_FUNCTIONS

MATH_BUILTINS = tuple(MATH_FUNCTIONS)
FUTURE_BUILTINS = ("swap", "rotate")
# Atomic read-modify-write of one element of shared or global data; each returns the old value.
# The element types are those CUDA has the operation for on sm_90 (atomicAdd ... atomicCAS), and a
# 64-bit signed add, which is the unsigned one on the same bits.
ATOMIC_TYPES: dict[str, tuple[str, ...]] = {
    "__atomic_add": ("s32", "u32", "s64", "u64", "f32", "f64", "f16"),
    "__atomic_sub": ("s32", "u32"),
    "__atomic_exch": ("s32", "u32", "u64", "f32"),
    "__atomic_min": ("s32", "u32", "s64", "u64"),
    "__atomic_max": ("s32", "u32", "s64", "u64"),
    "__atomic_and": ("s32", "u32", "s64", "u64"),
    "__atomic_or": ("s32", "u32", "s64", "u64"),
    "__atomic_xor": ("s32", "u32", "s64", "u64"),
    "__atomic_cas": ("s32", "u32", "u64", "u16"),
}
ATOMIC_BUILTINS = tuple(ATOMIC_TYPES)
NAMED_OPERAND = re.compile(r"(?<!%)%\[([A-Za-z_]\w*)\]")  # `%[dst]` in an inline assembly template
BUILTINS = ("cdiv", "select", *MATH_BUILTINS, *FUTURE_BUILTINS, *ATOMIC_BUILTINS)
# Croqtile's runtime functions that set a warpgroup's registers per thread (`call croq::cuda::setreg_inc(240)`):
# setmaxnreg.inc / .dec, whose count ptxas takes as an immediate, a multiple of 8 from 24 to 256.
REGISTER_CALLS = {"croq::cuda::setreg_inc": "inc", "croq::cuda::setreg_dec": "dec"}
REGISTER_COUNTS = range(24, 257, 8)


def atomic_arity(name: str) -> int:
    """Arguments of an atomic: the element and its operand; a compare-and-swap also compares."""
    return 3 if name == "__atomic_cas" else 2


def is_atomic(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.callee, ast.Name) and expr.callee.id in ATOMIC_TYPES


def is_device_effect(expr: ast.Expr) -> bool:
    """A device function call or an atomic: an expression run for what it does, not only its value."""
    return isinstance(expr, ast.DeviceCall) or is_atomic(expr)


def register_action(callee: str) -> str | None:
    """`inc` or `dec` for a call of Croqtile's setreg_inc / setreg_dec, else None (a device function)."""
    return REGISTER_CALLS.get(callee)
