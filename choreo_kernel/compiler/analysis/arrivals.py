"""Arrival counts of events: how many threads a direct `trigger E` waits for (language.md 8, 12.2).

A generation of an event triggered directly completes when every thread that
executes a direct trigger of it has triggered once.  The count follows from
the parallel levels around each trigger and the `inthreads` predicates that
select threads; it is computed here by walking the block's thread index
space when every count is a compile-time constant.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.scope import THREADS_PER_UNIT, Context
from choreo_kernel.compiler.semantics.evaluate import constant

MAX_THREADS = 1024


def triggering_threads(context: Context) -> set[tuple[int, ...]] | None:
    """The threads that reach a statement (an index per sub-block parallel variable, and a lane index
    when the innermost level is a warp or warpgroup), if computable."""
    variables: list[str] = []
    extents: list[int] = []
    for level in context.levels:
        if level.name == "block":
            continue
        names = level.clause.variables.names if level.clause.variables else ()
        counts = (
            level.clause.count.items
            if isinstance(level.clause.count, ast.ListLiteral)
            else (level.clause.count,)
        )
        for name, count in itertools.zip_longest(names, counts):
            extent = constant(count) if count is not None else None
            if extent is None:
                return None
            variables.append(name.id if name is not None else f"_anonymous{len(variables)}")
            extents.append(extent)
    # A statement directly in a warp or warpgroup level runs on every thread of that unit.
    lanes = THREADS_PER_UNIT.get(context.levels[-1].name, 1) if context.levels else 1
    if lanes > 1:
        variables.append("_lane")
        extents.append(lanes)
    total = 1
    for extent in extents:
        total *= extent
    if total > MAX_THREADS:
        return None
    reached: set[tuple[int, ...]] = set()
    for index in itertools.product(*(range(e) for e in extents)):
        values = dict(zip(variables, index))
        verdicts = [_evaluate(p, values) for p in context.predicates]
        if any(v is None for v in verdicts):
            return None
        if all(verdicts):
            reached.add(index)
    return reached


def _evaluate(expr: ast.Expr, values: dict[str, int]) -> int | None:
    if isinstance(expr, ast.IntLiteral):
        return expr.value
    if isinstance(expr, ast.BoolLiteral):
        return int(expr.value)
    if isinstance(expr, ast.Name):
        return values.get(expr.id)
    if isinstance(expr, ast.Paren):
        return _evaluate(expr.inner, values)
    if isinstance(expr, ast.Unary) and expr.op in ("!", "-"):
        operand = _evaluate(expr.operand, values)
        if operand is None:
            return None
        return int(not operand) if expr.op == "!" else -operand
    if isinstance(expr, ast.Binary):
        left, right = _evaluate(expr.left, values), _evaluate(expr.right, values)
        if left is None or right is None:
            return None
        return _apply(expr.op, left, right)
    return None


def _apply(op: str, a: int, b: int) -> int | None:
    if op in ("/", "%"):
        if b == 0:
            return None
        quotient = int(a / b)
        return quotient if op == "/" else a - quotient * b
    operations = {
        "+": a + b,
        "-": a - b,
        "*": a * b,
        "==": int(a == b),
        "!=": int(a != b),
        "<": int(a < b),
        "<=": int(a <= b),
        ">": int(a > b),
        ">=": int(a >= b),
        "&&": int(bool(a) and bool(b)),
        "||": int(bool(a) or bool(b)),
        "&": a & b,
        "|": a | b,
        "^": a ^ b,
    }
    return operations.get(op)


def direct_arrivals(contexts: Iterator[Context]) -> int | None:
    """Threads that arrive on one generation: the union over every direct trigger site."""
    threads: set[tuple[int, ...]] = set()
    for context in contexts:
        reached = triggering_threads(context)
        if reached is None:
            return None
        threads |= reached
    return len(threads)
