"""The host's part of a CUDA call: the names its sizes read, host-level loops and element writes.

The statements of a `device(cpu)` body, or of a `foreach` at host level, run on the host between
the launches. Their values come from the one evaluator (compiler/semantics/evaluate.py), which
reads names through `host_lookup` and an element `x.at(i, j)` of an array where it lies; an element
written here is stored with the array's element type, as the sim stores it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Data, Scalar, Symbol
from choreo_kernel.compiler.semantics.evaluate import NotEvaluable, evaluate

Evaluate = Callable[[ast.Expr], Any]
Lookup = Callable[[ast.Name], Any]


def host_lookup(info: FunctionInfo, values: dict[Symbol, Any]) -> Lookup:
    """What a name of `info`'s function stands for on the host: its value in `values` (the arguments and
    the host-level scalars so far), a shape or ituple declared at host level (computed from its
    declaration), the shape of a view named at host level, or an `int` the analysis folded. Anything
    else cannot be computed before the launches: NotEvaluable."""

    def lookup(name: ast.Name) -> Any:
        symbol = info.symbol_of.get(id(name))
        if symbol in values:
            return values[symbol]
        declaration = symbol.declaration if symbol is not None else None
        if isinstance(declaration, ast.ShapeDecl | ast.TupleDecl):
            return evaluate(declaration.value, lookup)
        value = symbol.value if symbol is not None else None
        if isinstance(value, Data) and all(isinstance(dim, int) for dim in value.dims):
            return value.dims  # a view named at host level (`l = a.span_as(6, 64)`): its shape is known
        if isinstance(value, Scalar) and isinstance(value.const, int):
            return value.const  # `int WARP_M = 64;` at host level: the analysis folded it
        raise NotEvaluable(name)

    return lookup


def loop_indices(loop: ast.Foreach, evaluate: Evaluate) -> Iterator[tuple[int, ...]]:
    """The indices of a host-level `foreach`, outermost variable first (the last one varies fastest)."""
    counts = evaluate(loop.extent)
    counts = tuple(counts) if isinstance(counts, tuple) else (int(counts),)
    return itertools.product(*(range(count) for count in counts))


def store_element(assign: ast.Assign, evaluate: Evaluate) -> None:
    """`x.at(i, j) = e` (or `op=`): the element of the array that `x` names takes the value of `e`."""
    target = assign.target
    assert isinstance(target, ast.Method)
    value = (
        assign.value if assign.op == "=" else ast.Binary(assign.span, assign.op[:-1], target, assign.value)
    )
    array = evaluate(target.value)
    index = tuple(int(evaluate(arg)) for arg in target.args)
    array[index] = evaluate(value)


def reads_elements(expr: ast.Expr) -> bool:
    """Whether `expr` reads an element of an array (which the kernels before it may write)."""
    return any(isinstance(node, ast.Method) and node.name == "at" for node in ast.walk_expr(expr))
