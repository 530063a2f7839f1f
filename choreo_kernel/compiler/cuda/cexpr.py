"""Expressions of the emitted CUDA: text with its C precedence, folded as they are built.

Index arithmetic is assembled from views (`chunkat`, `subspan`, `at`...) piece by piece;
folding constants and identities while building (`x * 1`, `0 + y`, `4 * 16`) keeps the
emitted subscripts close to what a person would write, and parentheses appear only where
C needs them (or where mixing bitwise and other operators would confuse a reader).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from choreo_kernel.compiler.semantics import cint

PRIMARY = 15
UNARY = 14
TERNARY = 3
_BINARY_PRECEDENCE = {
    "*": 13,
    "/": 13,
    "%": 13,
    "+": 12,
    "-": 12,
    "<<": 11,
    ">>": 11,
    "<": 10,
    "<=": 10,
    ">": 10,
    ">=": 10,
    "==": 9,
    "!=": 9,
    "&": 8,
    "^": 7,
    "|": 6,
    "&&": 5,
    "||": 4,
}
_BITWISE = ("&", "^", "|", "<<", ">>")


# An integer expression as a tree the host can evaluate: a constant, a name, or (operator, left, right).
Term = int | str | tuple[str, "Term", "Term"]
_TERM_OPERATORS = ("+", "-", "*", "/", "%")


@dataclass(frozen=True)
class CExpr:
    """A C expression: its text, how tightly it binds, its value when it is a known integer, and, where it is
    integer arithmetic on names and constants, the same as a `Term` (a size the host computes at launch)."""

    text: str
    precedence: int = PRIMARY
    value: int | None = None
    pure: bool = True  # no side effects (an `i++` inside is not)
    operator: str = ""
    term: Term | None = None

    def __str__(self) -> str:
        return self.text


def const(value: int) -> CExpr:
    return CExpr(str(value), PRIMARY if value >= 0 else UNARY, value, term=value)


def name(text: str, value: int | None = None) -> CExpr:
    return CExpr(text, PRIMARY, value, term=value if value is not None else text)


def raw(text: str, precedence: int = PRIMARY, pure: bool = True) -> CExpr:
    return CExpr(text, precedence, pure=pure)


ZERO = const(0)
ONE = const(1)


def _wrap(operand: CExpr, parent: str, right: bool) -> str:
    precedence = _BINARY_PRECEDENCE[parent]
    needs = operand.precedence < precedence or (right and operand.precedence == precedence)
    if operand.operator and operand.operator != parent and (parent in _BITWISE or operand.operator == "%"):
        needs = True  # `(a & b) == c`, `(x + 1) << 2` and `(k % 2) * 64` read better with the parentheses
    return f"({operand.text})" if needs else operand.text


def binary(op: str, a: CExpr, b: CExpr) -> CExpr:
    """`a op b`, folded where both sides are known integers or one side is an identity."""
    if a.value is not None and b.value is not None:
        folded = cint.arithmetic(op, a.value, b.value)
        if folded is not None:
            return const(folded)
    if op == "+":
        if a.value == 0:
            return b
        if b.value == 0:
            return a
    if op == "-" and b.value == 0:
        return a
    if op == "*":
        if a.value == 1:
            return b
        if b.value == 1:
            return a
        if (a.value == 0 and b.pure) or (b.value == 0 and a.pure):
            return ZERO
    if op in ("/", ">>", "<<") and b.value == (1 if op == "/" else 0):
        return a
    if op == "/" and a.text == b.text and a.pure:
        return ONE  # dimensions are positive: d / d is 1
    text = f"{_wrap(a, op, False)} {op} {_wrap(b, op, True)}"
    term: Term | None = None
    if op in _TERM_OPERATORS and a.term is not None and b.term is not None:
        term = (op, a.term, b.term)
    return CExpr(text, _BINARY_PRECEDENCE[op], pure=a.pure and b.pure, operator=op, term=term)


def add(*terms: CExpr) -> CExpr:
    total = ZERO
    for term in terms:
        total = binary("+", total, term)
    return total


def multiply(*factors: CExpr) -> CExpr:
    total = ONE
    for factor in factors:
        total = binary("*", total, factor)
    return total


def unary(op: str, operand: CExpr) -> CExpr:
    if op == "-" and operand.value is not None:
        return const(-operand.value)
    if op == "~" and operand.value is not None:
        return const(~operand.value)
    text = operand.text if operand.precedence >= UNARY else f"({operand.text})"
    if op == "-" and text.startswith("-"):
        text = f"({text})"
    return CExpr(f"{op}{text}", UNARY, pure=operand.pure)


def ternary(condition: CExpr, then: CExpr, otherwise: CExpr) -> CExpr:
    parts = [e.text if e.precedence > TERNARY else f"({e.text})" for e in (condition, then, otherwise)]
    return CExpr(
        f"{parts[0]} ? {parts[1]} : {parts[2]}", TERNARY, pure=condition.pure and then.pure and otherwise.pure
    )


def call(function: str, *args: CExpr) -> CExpr:
    return CExpr(f"{function}({', '.join(a.text for a in args)})", PRIMARY, pure=all(a.pure for a in args))


def subscript(base: CExpr, index: CExpr) -> CExpr:
    text = base.text if base.precedence >= PRIMARY else f"({base.text})"
    return CExpr(f"{text}[{index.text}]", PRIMARY, pure=base.pure and index.pure)


def parenthesized(operand: CExpr) -> CExpr:
    """`(x)` as written in the source, kept when it clarifies (a sum under a product keeps it anyway)."""
    if operand.precedence >= UNARY:
        return operand
    return CExpr(f"({operand.text})", PRIMARY, operand.value, operand.pure, term=operand.term)


def names_in(term: Term) -> set[str]:
    """The names a term refers to."""
    if isinstance(term, str):
        return {term}
    if isinstance(term, int):
        return set()
    return names_in(term[1]) | names_in(term[2])


def evaluate(term: Term, values: Mapping[str, int]) -> int:
    """The term's value (C integer semantics) with `values` for its names; raises ArithmeticError where C
    leaves it undefined (a division by zero)."""
    if isinstance(term, int):
        return term
    if isinstance(term, str):
        return values[term]
    op, left, right = term
    result = cint.arithmetic(op, evaluate(left, values), evaluate(right, values))
    if result is None:
        raise ArithmeticError(f"'{op}' is undefined here")
    return result
