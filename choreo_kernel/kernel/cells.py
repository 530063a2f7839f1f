"""What a cell is: Choreo (the default), `%%python`, `%%cuda` (device functions), or another IPython magic.

The kernel, completion, inspection and `is_complete` all need the same answer, and they
need positions in the cell exactly as the user sees it, so a header line is masked with
spaces rather than removed: every other character keeps its line and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from choreo_kernel.compiler.preprocess import blank_comments

CHOREO = "choreo"
PYTHON = "python"
CUDA = "cuda"  # C++ device functions that later Choreo cells `call`
IPYTHON = "ipython"  # a line or cell magic of IPython's own (%time, %%bash, %load_ext ...)

_HEADER = re.compile(r"%%(choreo|python|cuda)(?![\w-])[ \t]*")
_OPENERS = {"{": "}", "(": ")", "[": "]"}
INDENT = "  "


@dataclass(frozen=True)
class Cell:
    """A cell's text and, when its first line is a `%%choreo`/`%%python`/`%%cuda` header, where that is."""

    text: str
    language: str
    header_line: int = 0  # 1-based line of the header, 0 when there is none
    options: str = ""  # what follows `%%choreo` on the header line
    options_column: int = 1  # 1-based column where `options` starts

    @property
    def masked(self) -> str:
        """The text with the header line blanked: the same offsets, no header for a parser to trip on."""
        if not self.header_line:
            return self.text
        lines = self.text.split("\n")
        lines[self.header_line - 1] = " " * len(lines[self.header_line - 1])
        return "\n".join(lines)

    @property
    def body(self) -> str:
        """The text after the header line (the whole text when there is none)."""
        return "\n".join(self.text.split("\n")[self.header_line :])


def split_cell(text: str) -> Cell:
    """Classify `text` by its first non-blank line, which IPython also treats as the magic line."""
    lines = text.split("\n")
    index = next((i for i, line in enumerate(lines) if line.strip()), 0)
    first = lines[index] if lines else ""
    match = _HEADER.match(first)
    if match is not None:
        return Cell(text, match.group(1), index + 1, first[match.end() :].rstrip(), match.end() + 1)
    if first.startswith("%"):
        return Cell(text, IPYTHON)
    return Cell(text, CHOREO)


def choreo_is_complete(source: str) -> tuple[str, str]:
    """`is_complete` for Choreo: incomplete while a brace, bracket or parenthesis is open.

    Returns the status and, for an incomplete cell, the indentation of the next line.
    """
    stack: list[str] = []
    for char in blank_comments(source):
        if char in _OPENERS:
            stack.append(_OPENERS[char])
        elif char in _OPENERS.values() and (not stack or stack.pop() != char):
            return "invalid", ""
    if stack:
        return "incomplete", INDENT * stack.count("}")
    return "complete", ""
