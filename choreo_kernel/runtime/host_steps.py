"""The host's part of a CUDA call that touches data: host-level loops and element writes.

The statements of a `device(cpu)` body, or of a `foreach` at host level, run on the host between
the launches. Their values come from the one evaluator (compiler/semantics/evaluate.py), which
reads an element `x.at(i, j)` of an array where it lies; an element written here is stored with
the array's element type, as the sim stores it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from choreo_kernel.compiler import ast

Evaluate = Callable[[ast.Expr], Any]


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
