"""`select(k, a, b, ...)` in CUDA: a view whose start is the k-th operand's, picked by a conditional.

The analysis has made the operands agree in element type, shape and storage (resolve/selection.py);
here they must also share a layout (strides and swizzle), since one view stands for all of them. A
factor the analysis could not show in range goes through `choreo::checked_select`, which reports
an out-of-range factor to the host as a wait that gave up reports itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.cuda import cexpr
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.views import LoweringError, View

# How a kernel checks a select factor at run time: (factor, value count, the select) -> the checked factor.
FactorCheck = Callable[[CExpr, int, ast.Call], CExpr]


def lower_select(
    expr: ast.Call, factor: CExpr, views: list[View], checked: bool, check: FactorCheck | None
) -> View:
    """The view that `select(factor, views...)` stands for; `checked` where the analysis could not show the
    factor in range."""
    first = views[0]
    layout = ([s.text for s in first.strides], first.swizzle)
    for arg, view in zip(expr.args[1:], views):
        if ([s.text for s in view.strides], view.swizzle) != layout:
            raise LoweringError(
                "the values of this select have different layouts in memory (strides or swizzle), so one view "
                "cannot stand for them on CUDA; select buffers of the same shape",
                arg,
            )
    if checked:
        if check is None:
            raise LoweringError(
                "a select whose factor is checked at run time must be inside a parallel", expr
            )
        factor = check(factor, len(views), expr)
    elif factor.value is not None:
        return views[factor.value]
    start = cexpr.call("choreo::pick", factor, *(view.start for view in views))
    return replace(first, pointer=start, offset=cexpr.ZERO, origin=None, axes=())
