"""Evaluating Choreo expressions in Python: launch sizes, host scalars, buffer shapes, predicates.

The host side of a function (the statements outside every `parallel`) runs in the runtime:
it computes grid sizes and host-level scalars from the arguments before each launch. The
lowering uses the same evaluator at compile time to enumerate which threads reach a trigger.
Integer arithmetic follows C (truncating division), as on the device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.cuda.cexpr import fold_int

HostValue = Any  # int, float, bool, a tuple of ints (a shape), or an array (anything with .shape)
Lookup = Callable[[ast.Name], HostValue]

_COMPARISONS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


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
    if expr.op == "~" and isinstance(value, int):
        return ~value
    raise NotEvaluable(expr)


def _binary(op: str, left: HostValue, right: HostValue) -> HostValue:
    if op in _COMPARISONS:
        return _COMPARISONS[op](left, right)
    if op == "&&":
        return bool(left) and bool(right)
    if op == "||":
        return bool(left) or bool(right)
    if isinstance(left, tuple) or isinstance(right, tuple):
        return _shape_arithmetic(op, left, right)
    if isinstance(left, int) and isinstance(right, int):
        folded = fold_int(op, left, right)
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
        return -(-args[0] // args[1])
    target = evaluate(expr.callee, lookup)
    if isinstance(target, tuple) and len(args) == 1:
        return target[args[0]]
    raise NotEvaluable(expr)
