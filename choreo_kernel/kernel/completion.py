"""Tab completion in Choreo cells: keywords, types, operations, and the names already in play.

Dotted operations complete as whole words (`dma.` offers `dma.copy`, `dma.copy.async`,
`dma.any`), because that is how the language spells them; a dot after a name, a call or an
index offers the view methods. Names come from earlier cells (functions, macros) and from the cell.
On a `%%choreo` line the options complete instead, and after `--target` the targets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from choreo_kernel.compiler.preprocess import blank_comments
from choreo_kernel.kernel.cells import CHOREO, Cell
from choreo_kernel.kernel.options import FLAGS, TARGETS
from choreo_kernel.kernel.vocabulary import FAMILIES, OPERATIONS, VIEW_METHODS, words

# The word before the cursor is read backwards: `[A-Za-z_][\w.]*$` searched forwards retries at every
# character of a long run of word characters that ends elsewhere, 30 s for one Tab in a 40 KB word.
_WORD_BACKWARDS = re.compile(r"[\w.]*")
_WORD_START = re.compile(r"[A-Za-z_]")
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_OPERATION_HEADS = frozenset(name.split(".")[0] for name in OPERATIONS) | set(FAMILIES)


def complete(code: str, cursor_pos: int, names: Iterable[str]) -> dict[str, Any]:
    """A `complete_reply` content for `code` with the cursor at `cursor_pos`."""
    prefix = _partial_word(code[:cursor_pos])
    start = cursor_pos - len(prefix)
    if code[start - 1 : start] == ".":  # after a call or an index: `x.chunkat(i).a`
        candidates: Iterable[str] = VIEW_METHODS
    elif "." in prefix:
        base = prefix.rsplit(".", 1)[0]
        if base.split(".")[0] in _OPERATION_HEADS:
            candidates = OPERATIONS
        else:
            candidates = (f"{base}.{method}" for method in VIEW_METHODS)
    else:
        in_cell = _IDENTIFIER.findall(blank_comments(code[:start] + code[cursor_pos:]))
        candidates = {*words(), *names, *in_cell}
    return _reply(candidates, prefix, start, cursor_pos)


def _partial_word(before: str) -> str:
    """The name or dotted name that `before` ends with (from its first letter or '_'), or ''."""
    run = _WORD_BACKWARDS.match(before[::-1])
    word = run.group()[::-1] if run else ""
    start = _WORD_START.search(word)
    return word[start.start() :] if start else ""


def complete_options(cell: Cell, cursor_pos: int) -> dict[str, Any] | None:
    """Completion on the `%%choreo` line: the options, or the targets after `--target`; None elsewhere."""
    if cell.language != CHOREO or not cell.header_line:
        return None
    lines = cell.text.split("\n")
    header_start = sum(len(line) + 1 for line in lines[: cell.header_line - 1])
    if not header_start <= cursor_pos <= header_start + len(lines[cell.header_line - 1]):
        return None
    options_start = header_start + cell.options_column - 1
    if cursor_pos < options_start or not cell.text[options_start - 1].isspace():
        return _reply((), "", cursor_pos, cursor_pos)  # in `%%choreo` itself: nothing to offer
    before = cell.text[options_start:cursor_pos]
    typed = before.split()
    prefix = typed.pop() if typed and not before[-1].isspace() else ""
    start = cursor_pos - len(prefix)
    if typed and typed[-1] == "--target":
        return _reply(TARGETS, prefix, start, cursor_pos)
    if prefix.startswith("--target="):
        return _reply((f"--target={target}" for target in TARGETS), prefix, start, cursor_pos)
    return _reply(FLAGS, prefix, start, cursor_pos)


def _reply(candidates: Iterable[str], prefix: str, start: int, end: int) -> dict[str, Any]:
    matches = sorted({candidate for candidate in candidates if candidate.startswith(prefix)})
    return {"status": "ok", "matches": matches, "cursor_start": start, "cursor_end": end, "metadata": {}}
