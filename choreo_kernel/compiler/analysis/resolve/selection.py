"""`select(k, a, b, ...)`: the k-th of several spanned values of one type, chosen at run time.

The operands are buffers or views (`select(y % 2, left, right)`, also as a copy destination) or the
data of data futures (`select(k, f0, f1)` is the data of the chosen future, read as `f.data`
would be; wait the futures themselves). They must agree in element type, shape and storage, so
whatever uses the selection works on any of them. The factor `k` is an integer; a factor known
at compile time must be in [0, n). Otherwise the range its bounded values allow decides: a factor
that can never be in range is an error, one that always is needs nothing more, and any other
is checked when it runs (the sim stops with an error there, the GPU reports it like a wait that
gave up, and the call raises). `FunctionInfo.checked_selects` lists the selections whose factor
is checked at run time.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.resolve.base import ResolverBase
from choreo_kernel.compiler.analysis.values import (
    INT_TYPES,
    UNKNOWN,
    Bounded,
    Data,
    Future,
    Scalar,
    Unknown,
    Value,
)
from choreo_kernel.compiler.diagnostics import Note
from choreo_kernel.compiler.printer import expression
from choreo_kernel.compiler.semantics import cint

SELECT = "select"
Range = tuple[int, int]  # lowest and highest value, both included


class SelectionRules(ResolverBase):
    """`select(k, a, b, ...)`: operand agreement, the factor's range, and the run-time check it needs."""

    def _select(self, expr: ast.Call) -> Value:
        if len(expr.args) < 2:
            self.error("'select' takes a factor and one or more values: select(k, a, b, ...)", expr.span)
            for arg in expr.args:
                self._expr(arg)
            return UNKNOWN
        factor, *operands = expr.args
        self._select_factor(factor, len(operands), expr)
        values = [self._selected(operand) for operand in operands]
        first: tuple[ast.Expr, Data] | None = None
        for operand, value in zip(operands, values):
            if not isinstance(value, Data):
                continue
            if first is None:
                first = (operand, value)
            elif (value.elem, value.dims, value.storage) != (first[1].elem, first[1].dims, first[1].storage):
                self.error(
                    f"the values of a select must have the same type: '{expression(operand)}' is "
                    f"{_typed(value)} but '{expression(first[0])}' is {_typed(first[1])}",
                    operand.span,
                    Note(f"'{expression(first[0])}' is the first value", first[0].span),
                )
        return first[1] if first is not None else UNKNOWN

    def _selected(self, operand: ast.Expr) -> Value:
        """An operand: spanned data, or the data of a data future."""
        value = self._expr(operand)
        if isinstance(value, Future):
            if not value.is_data:
                self.error(
                    f"'{expression(operand)}' is an MMA operation future, which owns no data to select; select "
                    "the accumulators' data instead",
                    operand.span,
                )
                return UNKNOWN
            data = self._future_data(operand)
            return data if data is not None else UNKNOWN
        if not isinstance(value, Data | Unknown):
            self.error(
                f"'select' chooses between spanned values (buffers, views, data futures); "
                f"'{expression(operand)}' is {value.describe()}",
                operand.span,
            )
            return UNKNOWN
        return value

    def _select_factor(self, factor: ast.Expr, count: int, select: ast.Call) -> None:
        value = self._expr(factor)
        if isinstance(value, Scalar) and value.type not in INT_TYPES and value.type != "bool":
            self.error(f"the select factor must be a (bounded) integer, got {value.type}", factor.span)
            return
        if not isinstance(value, Scalar | Bounded | Unknown):
            self.error(
                f"the select factor '{expression(factor)}' must be a (bounded) integer, got {value.describe()}",
                factor.span,
            )
            return
        reach = self._range_of(factor)
        if reach is None:
            self.info.checked_selects.add(id(select))
            return
        low, high = reach
        if high < 0 or low >= count:
            shown = str(low) if low == high else f"{expression(factor)} (from {low} to {high})"
            self.error(
                f"the select factor {shown} is not in bound [0, {count}): it selects one of {count} values",
                factor.span,
            )
        elif low < 0 or high >= count:
            self.info.checked_selects.add(id(select))

    def _range_of(self, expr: ast.Expr) -> Range | None:
        """The lowest and highest value an integer expression can take, where its parts say; None where
        they do not (a parameter, data, a mutable)."""
        if isinstance(expr, ast.IntLiteral):
            return expr.value, expr.value
        if isinstance(expr, ast.Paren):
            return self._range_of(expr.inner)
        if isinstance(expr, ast.Name):
            symbol = self.info.symbol_of.get(id(expr))
            if symbol is None or symbol.mutable:
                return None
            value = symbol.value
            if isinstance(value, Bounded) and isinstance(value.bound, int):
                return 0, value.bound - 1
            if isinstance(value, Scalar) and isinstance(value.const, int):
                return value.const, value.const
            return None
        if isinstance(expr, ast.Unary) and expr.op == "#":
            bound = self._bound_of(expr.operand)
            return (bound, bound) if bound is not None else None
        if isinstance(expr, ast.Unary) and expr.op == "-":
            inner = self._range_of(expr.operand)
            return (-inner[1], -inner[0]) if inner is not None else None
        if isinstance(expr, ast.Binary) and expr.op in ("+", "-", "*", "/", "%"):
            return _combine(expr.op, self._range_of(expr.left), self._range_of(expr.right))
        return None

    def _bound_of(self, expr: ast.Expr) -> int | None:
        symbol = self.info.symbol_of.get(id(expr)) if isinstance(expr, ast.Name) else None
        value = symbol.value if symbol is not None else None
        return value.bound if isinstance(value, Bounded) and isinstance(value.bound, int) else None


def _combine(op: str, left: Range | None, right: Range | None) -> Range | None:
    if left is None or right is None:
        return None
    if op in ("+", "-", "*"):
        corners = [_arithmetic(op, a, b) for a in left for b in right]
        return min(corners), max(corners)
    low, high = right
    if low != high or low == 0:
        return None
    divisor = low
    if op == "/":
        corners = [cint.divide(a, divisor) for a in left]
        return min(corners), max(corners)
    if left[0] >= 0:  # `%` of a non-negative value: [0, |divisor| - 1], no more than the value itself
        return (0, min(abs(divisor) - 1, left[1])) if left[1] >= abs(divisor) else left
    return None


def _arithmetic(op: str, a: int, b: int) -> int:
    return a + b if op == "+" else a - b if op == "-" else a * b


def _typed(data: Data) -> str:
    return f"{data.storage} {data.describe()}"
