"""The one evaluator of Choreo expressions in Python: constants, launch sizes, host scalars, predicates.

At compile time it folds constants (thread counts, trip counts, ring sizes) and, given the
values of the thread variables, decides which threads an `inthreads` predicate selects
(semantics/launch.py). At run time the CUDA runtime uses it for the host side of a function
(the statements outside every `parallel`): grid sizes, host-level scalars and buffer shapes
from the arguments. Integers follow C (semantics/cint.py), as on the device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.semantics import cint

HostValue = Any  # int, float, bool, a tuple of ints (a shape), or an array (anything with .shape)
Lookup = Callable[[ast.Name], HostValue]


class NotEvaluable(Exception):
    """The expression needs something the host does not know (a device value, an unbound name)."""


def evaluate(expr: ast.Expr, lookup: Lookup) -> HostValue:
    """The value of `expr`, looking names up with `lookup` (which raises `NotEvaluable` for unknowns)."""
    if isinstance(expr, ast.IntLiteral):
        return expr.value
    if isinstance(expr, ast.FloatLiteral):
        return expr.value
    if isinstance(expr, ast.BoolLiteral):
        return expr.value
    if isinstance(expr, ast.Name):
        return lookup(expr)
    if isinstance(expr, ast.Paren):
        return evaluate(expr.inner, lookup)
    if isinstance(expr, ast.Unary):
        return _unary(expr, lookup)
    if isinstance(expr, ast.Binary):
        return _binary(expr.op, evaluate(expr.left, lookup), evaluate(expr.right, lookup))
    if isinstance(expr, ast.Ternary):
        branch = expr.then if evaluate(expr.condition, lookup) else expr.otherwise
        return evaluate(branch, lookup)
    if isinstance(expr, ast.ListLiteral | ast.TupleLiteral):
        return shape(expr.items, lookup)
    if isinstance(expr, ast.ElementCount):
        count = 1
        for dim in _as_shape(evaluate(expr.operand, lookup)):
            count *= dim
        return count
    if isinstance(expr, ast.Member) and expr.name == "span":
        return _as_shape(evaluate(expr.value, lookup))
    if isinstance(expr, ast.Method) and expr.name == "span" and len(expr.args) == 1:
        return _as_shape(evaluate(expr.value, lookup))[int(evaluate(expr.args[0], lookup))]
    if isinstance(expr, ast.Method) and expr.name == "at":  # an element of an array the host holds
        array = evaluate(expr.value, lookup)
        if not hasattr(array, "shape") or len(expr.args) != len(array.shape):
            raise NotEvaluable(expr)
        return array[tuple(int(evaluate(arg, lookup)) for arg in expr.args)]
    if isinstance(expr, ast.Call):
        return _call(expr, lookup)
    raise NotEvaluable(expr)


def shape(items: tuple[ast.Expr, ...], lookup: Lookup) -> tuple[int, ...]:
    """A list of dimensions, where an item that is itself a shape (`a.span`) adds all of its dimensions."""
    dims: list[int] = []
    for item in items:
        value = evaluate(item, lookup)
        if isinstance(value, tuple) or hasattr(value, "shape"):
            dims.extend(_as_shape(value))
        else:
            dims.append(int(value))
    return tuple(dims)


def _as_shape(value: HostValue) -> tuple[int, ...]:
    if isinstance(value, tuple):
        return value
    if hasattr(value, "shape"):
        return tuple(int(d) for d in value.shape)
    raise NotEvaluable(value)


def _unary(expr: ast.Unary, lookup: Lookup) -> HostValue:
    value = evaluate(expr.operand, lookup)
    if expr.op == "-":
        return -value
    if expr.op == "!":
        return not value
    if expr.op == "~" and isinstance(value, int) and not isinstance(value, bool):
        return ~value
    raise NotEvaluable(expr)


def _binary(op: str, left: HostValue, right: HostValue) -> HostValue:
    if op in cint.LOGICAL_OPERATORS:
        return cint.logical(op, left, right)
    if isinstance(left, tuple) or isinstance(right, tuple):
        return _shape_arithmetic(op, left, right)
    if isinstance(left, int) and isinstance(right, int):
        folded = cint.arithmetic(op, left, right)
        if folded is None:
            raise NotEvaluable(op)
        return folded
    if op in ("+", "-", "*"):
        return {"+": left + right, "-": left - right, "*": left * right}[op]
    if op == "/" and right:
        return left / right
    raise NotEvaluable(op)


def _shape_arithmetic(op: str, left: HostValue, right: HostValue) -> tuple[int, ...]:
    """Per-dimension arithmetic on shapes: `s / 4`, `s / {2, 4}`."""
    size = len(left) if isinstance(left, tuple) else len(right)
    lefts = left if isinstance(left, tuple) else (left,) * size
    rights = right if isinstance(right, tuple) else (right,) * size
    return tuple(_binary(op, a, b) for a, b in zip(lefts, rights))


def _call(expr: ast.Call, lookup: Lookup) -> HostValue:
    args = [evaluate(arg, lookup) for arg in expr.args]
    if isinstance(expr.callee, ast.Name) and expr.callee.id == "cdiv" and len(args) == 2:
        if not args[1]:
            raise NotEvaluable(expr)
        return cint.cdiv(args[0], args[1])
    target = evaluate(expr.callee, lookup)
    if isinstance(target, tuple) and len(args) == 1:
        return target[args[0]]
    raise NotEvaluable(expr)


def _no_names(name: ast.Name) -> HostValue:
    raise NotEvaluable(name)


def constant(expr: ast.Expr) -> int | None:
    """The value of an integer expression of literals (macros are expanded by then); None otherwise."""
    try:
        value = evaluate(expr, _no_names)
    except (NotEvaluable, ArithmeticError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def constant_count(expr: ast.Expr) -> int | None:
    """How many instances or iterations a count makes: `8`, or the product of `[4, 8]`."""
    if not isinstance(expr, ast.ListLiteral):
        return constant(expr)
    total = 1
    for item in expr.items:
        value = constant(item)
        if value is None:
            return None
        total *= value
    return total
