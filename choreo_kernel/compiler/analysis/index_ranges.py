"""The values an integer index takes, where the compiler knows them exactly.

An index such as `b[wg - 1]` is a sum of parallel and foreach variables scaled by constants. Every
instance of a parallel and every iteration of a foreach runs, so each variable takes every value of
its range, narrowed by the comparisons of the conditions around the index (`if (wg >= 1)`), and the
index takes every value between the extremes of the sum: one outside the extent is a definite
out-of-bounds access. Wherever the values are not known exactly (a condition that reads data or
relates two variables, a loop that can break, continue or return, a sliced range, a mutable scalar)
the answer is None, so that no valid program is rejected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.values import Bounded, Scalar, Symbol

# An enclosing condition and whether it holds there (False: the else branch); None for a loop that can
# leave an iteration early (break, continue, return), after which not every value reaches the index.
Condition = tuple[ast.Expr, bool] | None
EARLY_EXITS = (ast.Break, ast.Continue, ast.Return)
RANGE_ORIGINS = ("parallel", "foreach", "with")  # where a bounded integer is a variable of its own
SymbolOf = Callable[[ast.Name], Symbol | None]
COMPARISONS = ("<", "<=", ">", ">=", "==")
NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "!=": "=="}
MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}


@dataclass(frozen=True)
class Affine:
    """`constant + sum(coefficient * variable)`: the variables are range variables (by symbol id)."""

    terms: tuple[tuple[Symbol, int], ...]
    constant: int

    def plus(self, other: Affine, sign: int = 1) -> Affine:
        coefficients = {id(symbol): (symbol, c) for symbol, c in self.terms}
        for symbol, c in other.terms:
            previous = coefficients.get(id(symbol), (symbol, 0))[1]
            coefficients[id(symbol)] = (symbol, previous + sign * c)
        terms = tuple((s, c) for s, c in coefficients.values() if c != 0)
        return Affine(terms, self.constant + sign * other.constant)

    def times(self, factor: int) -> Affine:
        return Affine(tuple((s, c * factor) for s, c in self.terms if c * factor), self.constant * factor)


@dataclass(frozen=True)
class IndexRange:
    """The lowest and highest value an index takes, and the variables' ranges that give them."""

    low: int
    high: int
    variables: tuple[tuple[str, int, int], ...]  # (name, lowest, highest) of each variable it reads


def index_range(index: ast.Expr, conditions: Sequence[Condition], symbol_of: SymbolOf) -> IndexRange | None:
    """The exact range of `index` under `conditions`, or None where it is not known exactly."""
    form = affine(index, symbol_of)
    if form is None or not form.terms or None in conditions:
        return None
    low = high = form.constant
    variables = []
    for symbol, coefficient in form.terms:
        span = variable_range(symbol, conditions, symbol_of)
        if span is None:
            return None
        ends = (coefficient * span[0], coefficient * span[1])
        low, high = low + min(ends), high + max(ends)
        variables.append((symbol.name, *span))
    return IndexRange(low, high, tuple(variables))


def affine(expr: ast.Expr, symbol_of: SymbolOf) -> Affine | None:
    """`expr` as an affine form of range variables, following immutable scalars to their value."""
    if isinstance(expr, ast.Paren):
        return affine(expr.inner, symbol_of)
    if isinstance(expr, ast.IntLiteral):
        return Affine((), expr.value)
    if isinstance(expr, ast.Unary) and expr.op in "+-":
        inner = affine(expr.operand, symbol_of)
        return None if inner is None else inner.times(-1 if expr.op == "-" else 1)
    if isinstance(expr, ast.Binary) and expr.op in ("+", "-", "*"):
        left, right = affine(expr.left, symbol_of), affine(expr.right, symbol_of)
        if left is None or right is None:
            return None
        if expr.op != "*":
            return left.plus(right, 1 if expr.op == "+" else -1)
        if not left.terms:
            return right.times(left.constant)
        return left.times(right.constant) if not right.terms else None
    if isinstance(expr, ast.Name):
        return _name_form(expr, symbol_of)
    return None


def _name_form(name: ast.Name, symbol_of: SymbolOf) -> Affine | None:
    symbol = symbol_of(name)
    if symbol is None or symbol.mutable:
        return None
    if isinstance(symbol.value, Bounded) and symbol.origin in RANGE_ORIGINS:
        return Affine(((symbol, 1),), 0)
    if isinstance(symbol.value, Scalar) and isinstance(symbol.value.const, int):
        return Affine((), symbol.value.const)
    value = defining_value(symbol)
    return None if value is None else affine(value, symbol_of)


def defining_value(symbol: Symbol) -> ast.Expr | None:
    """The expression an immutable scalar was declared with (`idx = wg - 1;`, `int k = 2 * p;`)."""
    declaration = symbol.declaration
    if isinstance(declaration, ast.Assign) and declaration.op == "=" and symbol.origin == "local":
        return declaration.value
    if isinstance(declaration, ast.ScalarDecl) and not declaration.mutable:
        return declaration.init
    return None


def variable_range(
    symbol: Symbol, conditions: Sequence[Condition], symbol_of: SymbolOf
) -> tuple[int, int] | None:
    """Every value the range variable takes where `conditions` hold, as (lowest, highest)."""
    whole = _whole_range(symbol)
    if whole is None:
        return None
    low, high = whole
    for condition in conditions:
        assert condition is not None
        for comparison in _comparisons(*condition):
            bound = None
            if comparison is not None:
                left, op, right = comparison
                bound = _bound_on(symbol, affine(left, symbol_of), op, affine(right, symbol_of))
            if bound is None:  # a condition that does not bound the variable: fine if independent of it
                if not _independent(condition[0], symbol, symbol_of):
                    return None
                continue
            op, value = bound
            if op in ("<", "<="):
                high = min(high, value - 1 if op == "<" else value)
            if op in (">", ">="):
                low = max(low, value + 1 if op == ">" else value)
            if op == "==":
                low, high = max(low, value), min(high, value)
    return (low, high) if low <= high else None


def _whole_range(symbol: Symbol) -> tuple[int, int] | None:
    """The range of a parallel variable, or of a foreach variable whose every iteration runs."""
    if not isinstance(symbol.value, Bounded) or not isinstance(symbol.value.bound, int):
        return None
    loop = symbol.declaration
    if symbol.origin == "foreach":
        if not isinstance(loop, ast.Foreach | ast.ForeachRange):
            return None
        if isinstance(loop, ast.ForeachRange) and any(item.sliced for item in loop.items):
            return None
    elif symbol.origin != "parallel":
        return None
    return (0, symbol.value.bound - 1)


def _comparisons(condition: ast.Expr, holds: bool) -> list[tuple[ast.Expr, str, ast.Expr] | None]:
    """The comparisons that hold where `condition` is `holds`: each conjunct of a condition that holds,
    the negation of a single comparison that does not; None for a part that is not a comparison."""
    while isinstance(condition, ast.Paren):
        condition = condition.inner
    if holds and isinstance(condition, ast.Binary) and condition.op == "&&":
        return [*_comparisons(condition.left, True), *_comparisons(condition.right, True)]
    if isinstance(condition, ast.Binary) and condition.op in (*COMPARISONS, "!="):
        op = condition.op if holds else NEGATED.get(condition.op)
        if op in COMPARISONS:
            return [(condition.left, op, condition.right)]
    return [None]


def _bound_on(symbol: Symbol, left: Affine | None, op: str, right: Affine | None) -> tuple[str, int] | None:
    """`left op right` as `symbol op' value`, where it is a comparison of that variable (coefficient
    one or minus one) alone with a constant."""
    if left is None or right is None:
        return None
    difference = left.plus(right, -1)  # difference op 0
    if len(difference.terms) != 1 or difference.terms[0][0] is not symbol:
        return None
    coefficient = difference.terms[0][1]
    if coefficient not in (1, -1):
        return None
    value = -difference.constant * coefficient  # symbol op value (coefficient 1), or mirrored
    return (op if coefficient == 1 else MIRRORED[op]), value


def exits_early(loop: ast.Stmt) -> bool:
    """Whether some iteration of `loop` can end before its body does."""
    return any(isinstance(stmt, EARLY_EXITS) for stmt in ast.walk_statements(loop))


def _independent(
    condition: ast.Expr, symbol: Symbol, symbol_of: SymbolOf, seen: frozenset[int] = frozenset()
) -> bool:
    """Whether `condition` is the same for every value of the variable: it reads other range variables,
    constants and the function's scalar parameters only (no data, no mutable scalar, not the variable),
    directly or through the immutable scalars it names."""
    for node in ast.walk_expr(condition):
        if not isinstance(node, ast.Name):
            continue
        named = symbol_of(node)
        if named is None or named is symbol or named.mutable:
            return False
        if (isinstance(named.value, Bounded) and named.origin in RANGE_ORIGINS) or id(named) in seen:
            continue
        if isinstance(named.value, Scalar) and (
            named.value.const is not None or named.origin in ("param", "dim")
        ):
            continue
        value = defining_value(named)
        if value is None or not _independent(value, symbol, symbol_of, seen | {id(named)}):
            return False
    return True
