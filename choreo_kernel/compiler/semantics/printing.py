"""What `print(...)` / `println(...)` write: one format, decided from the analysis's types, that the GPU
prints with printf and the sim (and the host side of a CUDA call) renders in Python.

As Croqtile prints: the arguments follow each other with nothing between them, integers in decimal,
floating values with six decimals (`%f`), booleans as `true`/`false`, shapes as `[4, 8]` and ituples
as `{4, 8}`; `println` ends the line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from choreo_kernel.compiler.analysis.values import FLOAT_TYPES

SIGNED, UNSIGNED, FLOATING, BOOLEAN = "signed", "unsigned", "floating", "boolean"
_C_FORMATS = {SIGNED: "%lld", UNSIGNED: "%llu", FLOATING: "%f", BOOLEAN: "%s"}


@dataclass(frozen=True)
class Piece:
    """Literal `text`, or one argument: a scalar of `kind`, or (`brackets` set) a shape or an ituple
    of `count` integers."""

    text: str = ""
    kind: str | None = None
    brackets: str = ""  # "[]" for a shape, "{}" for an ituple
    count: int = 0

    @property
    def values(self) -> int:
        """How many values the piece prints."""
        if self.brackets:
            return self.count
        return 0 if self.kind is None else 1


def kind_of(element: str) -> str:
    """How a scalar of Choreo element type `element` prints."""
    if element == "bool":
        return BOOLEAN
    if element in FLOAT_TYPES:
        return FLOATING
    return UNSIGNED if element.startswith("u") else SIGNED


def c_format(pieces: Sequence[Piece], newline: bool) -> str:
    """The printf format string (its C literal, quotes included) for `pieces`."""
    out: list[str] = []
    for piece in pieces:
        if piece.kind is None and not piece.brackets:
            out.append(_c_text(piece.text))
        elif piece.brackets:
            items = ", ".join(_C_FORMATS[SIGNED] for _ in range(piece.count))
            out.append(f"{piece.brackets[0]}{items}{piece.brackets[1]}")
        else:
            assert piece.kind is not None
            out.append(_C_FORMATS[piece.kind])
    return '"' + "".join(out) + ("\\n" if newline else "") + '"'


def render(pieces: Sequence[Piece], values: Iterable[Any], newline: bool) -> str:
    """The text printf writes for `pieces` with the arguments' `values`, in order (a shape's items
    one by one)."""
    remaining = iter(values)
    out: list[str] = []
    for piece in pieces:
        if piece.brackets:
            items = ", ".join(str(int(next(remaining))) for _ in range(piece.count))
            out.append(f"{piece.brackets[0]}{items}{piece.brackets[1]}")
        elif piece.kind is None:
            out.append(piece.text)
        else:
            out.append(_scalar(piece.kind, next(remaining)))
    return "".join(out) + ("\n" if newline else "")


def _scalar(kind: str, value: Any) -> str:
    if kind == BOOLEAN:
        return "true" if value else "false"
    if kind == FLOATING:
        return f"{float(value):f}"  # as C's printf("%f", (double) value): six decimals
    return str(int(value))


def _c_text(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return escaped.replace("\n", "\\n").replace("\t", "\\t")
