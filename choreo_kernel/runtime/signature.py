"""Check call arguments against a `__co__` signature before anything runs, on every backend.

Symbolic dimensions (`f16 [M, K] a, f16 [N, K] b`) bind at their first use and must agree
everywhere else; a mismatch names the parameter, the dimension and both sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.values import INT_TYPES, fold
from choreo_kernel.compiler.diagnostics import ChoreoError
from choreo_kernel.compiler.printer import expression, expressions
from choreo_kernel.runtime.dtypes import RANGES, accepts

_DIM_OPS = ("+", "-", "*", "/", "%")


@dataclass
class BoundArguments:
    """The arguments in parameter order and the value of every symbolic dimension."""

    values: list[Any]
    dims: dict[str, int] = field(default_factory=dict)


def bind_arguments(function: ast.Function, args: Sequence[Any]) -> BoundArguments:
    """Match `args` to `function`'s parameters; raise `ChoreoError` on the first mismatch."""
    params = function.params
    if len(args) != len(params):
        expected = ", ".join(_describe(p) for p in params)
        raise ChoreoError.simple(
            f"{function.name}() takes {len(params)} argument{'s' * (len(params) != 1)} "
            f"({expected}), got {len(args)}"
        )
    bound = BoundArguments(list(args))
    for param, value in zip(params, args):
        if param.type.shape is None:
            _check_scalar(function, param, value)
        else:
            _check_array(function, param, value, bound.dims)
    return bound


def _describe(param: ast.Param) -> str:
    ref = param.type
    if ref.shape is None:
        return f"{ref.name} {param.name}"
    return f"{ref.name} [{expressions(ref.shape)}] {param.name}"


def _check_scalar(function: ast.Function, param: ast.Param, value: Any) -> None:
    kind = param.type.name
    if param.is_stream:
        if not is_stream(value):
            raise ChoreoError.simple(
                f"{function.name}(): parameter '{param.name}' is a stream: pass a CuPy stream "
                f"(cupy.cuda.Stream()), its integer handle, or None for the current stream; got {type(value).__name__}"
            )
        return
    if kind == "bool":
        ok = isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b"
    elif kind in INT_TYPES:
        ok = (isinstance(value, int) and not isinstance(value, bool)) or _is_integer_scalar(value)
    else:
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)) or _is_number_scalar(value)
    if not ok:
        raise ChoreoError.simple(
            f"{function.name}(): parameter '{param.name}' is a {kind} scalar, got {type(value).__name__}"
        )


def is_stream(value: Any) -> bool:
    """What a `stream` parameter takes: a CuPy stream (anything with the `ptr` of a cudaStream_t), a raw
    handle, or None (the current stream). The sim runs in order, so it ignores streams."""
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or isinstance(getattr(value, "ptr", None), int)


def _is_integer_scalar(value: Any) -> bool:
    return getattr(value, "shape", None) == () and getattr(value.dtype, "kind", "") in "iu"


def _is_number_scalar(value: Any) -> bool:
    return getattr(value, "shape", None) == () and getattr(value.dtype, "kind", "") in "iuf"


def _check_array(function: ast.Function, param: ast.Param, value: Any, dims: dict[str, int]) -> None:
    where = f"{function.name}(): parameter '{param.name}'"
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None:
        raise ChoreoError.simple(f"{where} is an array {_describe(param)}, got {type(value).__name__}")
    expected_dims = param.type.shape
    assert expected_dims is not None
    if len(shape) != len(expected_dims):
        raise ChoreoError.simple(
            f"{where} has rank {len(expected_dims)} ({_describe(param)}), got an array of rank {len(shape)}"
        )
    if not accepts(param.type.name, dtype, device=hasattr(value, "__cuda_array_interface__")):
        raise ChoreoError.simple(f"{where} has element type {param.type.name}, got {dtype}")
    if param.type.name in RANGES:  # held in a wider dtype: its values must be the type's
        low, high = RANGES[param.type.name]
        values = np.asarray(value.get() if hasattr(value, "get") else value)
        if values.size and (values.min() < low or values.max() > high):
            raise ChoreoError.simple(
                f"{where} has element type {param.type.name}, whose values are {low} to {high}; the array "
                f"holds {values.min()} to {values.max()}"
            )
    for axis, (dim, size) in enumerate(zip(expected_dims, shape)):
        if isinstance(dim, ast.AnyDim):
            continue
        if isinstance(dim, ast.Name) and dim.id not in dims:
            dims[dim.id] = int(size)
            continue
        expected = _evaluate(dim, dims)
        if expected is not None and expected != size:
            raise ChoreoError.simple(
                f"{where}: dimension {axis} ({expression(dim)}) must be {expected}"
                f"{_binding_hint(dim, dims)}, got {size}"
            )


def _binding_hint(dim: ast.Expr, dims: dict[str, int]) -> str:
    names = sorted({n.id for n in ast.walk_expr(dim) if isinstance(n, ast.Name)} & dims.keys())
    return f" ({', '.join(f'{n} = {dims[n]}' for n in names)} from earlier arguments)" if names else ""


def _evaluate(expr: ast.Expr, dims: dict[str, int]) -> int | None:
    """A dimension expression's value (C integer arithmetic); None when a name is still unbound."""
    if isinstance(expr, ast.IntLiteral):
        return expr.value
    if isinstance(expr, ast.Name):
        return dims.get(expr.id)
    if isinstance(expr, ast.Paren):
        return _evaluate(expr.inner, dims)
    if isinstance(expr, ast.Binary) and expr.op in _DIM_OPS:
        left, right = _evaluate(expr.left, dims), _evaluate(expr.right, dims)
        if left is None or right is None:
            return None
        result = fold(expr.op, left, right)  # a division by zero folds to text, not a number
        return result if isinstance(result, int) else None
    return None
