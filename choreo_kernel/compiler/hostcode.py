"""Finding `__co__` functions among the C++ host code of a `.co` file.

A `.co` file may hold `#include`s, `main()`, `__cok__ { ... }` device blocks and
other C++ around its Choreo functions.  The front end does not parse that
code: it skips it brace-balanced, aware of string and character literals
(comments are already blanked by the preprocessor).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CO_KEYWORD = re.compile(r"(?<![\w])__co__(?![\w])")


@dataclass(frozen=True)
class Region:
    """A `__co__` function: text offsets [start, end) and its 1-based start line and column."""

    start: int
    end: int
    line: int
    column: int


def function_regions(text: str) -> list[Region]:
    """The `__co__` functions of `text`, each from its keyword to its closing brace."""
    regions: list[Region] = []
    pos = 0
    depth = 0
    n = len(text)
    while pos < n:
        c = text[pos]
        if starts_literal(text, pos):
            pos = skip_literal(text, pos)
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
        elif c == "_" and depth == 0 and _CO_KEYWORD.match(text, pos):
            end = _function_end(text, pos)
            line = text.count("\n", 0, pos) + 1
            column = pos - (text.rfind("\n", 0, pos) + 1) + 1
            regions.append(Region(pos, end, line, column))
            pos = end
            continue
        pos += 1
    return regions


def starts_literal(text: str, pos: int) -> bool:
    """A quote that opens a string or character literal (not a C++14 digit separator as in 1'000)."""
    c = text[pos]
    return c == '"' or (c == "'" and not (pos > 0 and text[pos - 1].isalnum()))


def skip_literal(text: str, pos: int) -> int:
    """The offset after the string or character literal that starts at `pos`."""
    quote = text[pos]
    pos += 1
    while pos < len(text) and text[pos] not in (quote, "\n"):
        pos += 2 if text[pos] == "\\" else 1
    return pos + 1


def _function_end(text: str, start: int) -> int:
    """The offset after the brace that closes the function body (or the end of the text)."""
    pos = text.find("{", start)
    if pos < 0:
        return len(text)
    depth = 0
    while pos < len(text):
        c = text[pos]
        if starts_literal(text, pos):
            pos = skip_literal(text, pos)
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return pos + 1
        pos += 1
    return len(text)


def isolate(text: str, region: Region) -> str:
    """The text of `region`, after as many line ends and spaces as put it at the same line and column
    as in `text` (blanking the whole text before it cost each of a cell's functions the whole cell)."""
    line_start = text.rfind("\n", 0, region.start) + 1
    prefix = "\n" * text.count("\n", 0, region.start) + " " * (region.start - line_start)
    return prefix + text[region.start : region.end]
