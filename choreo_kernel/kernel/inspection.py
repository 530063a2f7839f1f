"""Shift-Tab help in Choreo cells: what a keyword, operation, type or compiled function is.

The help is Markdown (code in backticks), which JupyterLab's tooltip renders; a text-only
front end shows the same text with its backticks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from choreo_kernel.kernel.vocabulary import (
    BUILTIN_HELP,
    ELEMENT_TYPES,
    KEYWORDS,
    OPERATIONS,
    VIEW_METHODS,
    element_type_help,
)

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_OPERATION_PARTS = max(name.count(".") + 1 for name in OPERATIONS)  # the longest operation's parts


def help_at(
    code: str, cursor_pos: int, functions: Mapping[str, object], macros: Mapping[str, object]
) -> str | None:
    """Help for the word under the cursor (or just before it), or None when there is none.

    An operation is looked up whole (`tma.load.async.swiz` is `tma.load.async`); elsewhere a
    dotted word is looked up up to the part under the cursor, so `lhs.subspan` explains
    `subspan` and not `lhs`.
    """
    for match in _DOTTED.finditer(code):
        if match.start() <= cursor_pos <= match.end():
            word = match.group()
            upto = word[: _segment_end(word, cursor_pos - match.start())]
            return _operation_help(word) or _word_help(upto, functions, macros)
    return None


def _segment_end(word: str, offset: int) -> int:
    end = word.find(".", offset)
    return len(word) if end < 0 else end


def _operation_help(word: str) -> str | None:
    parts = word.split(".", _OPERATION_PARTS)[:_OPERATION_PARTS]  # a 40 KB `a.a.a...` costs no more
    for count in range(len(parts), 1, -1):
        name = ".".join(parts[:count])
        if name in OPERATIONS:
            return f"{name}: {OPERATIONS[name]}"
    return None


def _word_help(word: str, functions: Mapping[str, object], macros: Mapping[str, object]) -> str | None:
    if "." in word:
        method = word.rsplit(".", 1)[1]
        return f".{method}: {VIEW_METHODS[method]}" if method in VIEW_METHODS else None
    if word in KEYWORDS:
        return f"{word}: {KEYWORDS[word]}"
    if word in ELEMENT_TYPES:
        return element_type_help(word)
    if word in BUILTIN_HELP:
        return f"{word}: {BUILTIN_HELP[word]}"
    if word in functions:
        return f"`__co__ {functions[word].__doc__}`"
    if word in macros:
        return f"`#define {word} {macros[word]}`"
    return None
