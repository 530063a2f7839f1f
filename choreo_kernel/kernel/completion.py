"""Tab completion in Choreo cells: keywords, types, operations, and the names already in play.

Dotted operations complete as whole words (`dma.` offers `dma.copy`, `dma.copy.async`,
`dma.any`), because that is how the language spells them; a dot after a name, a call or an
index offers the view methods. Names come from earlier cells (functions, macros) and from the cell.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from choreo_kernel.compiler.preprocess import blank_comments
from choreo_kernel.kernel.vocabulary import FAMILIES, OPERATIONS, VIEW_METHODS, words

_PARTIAL = re.compile(r"[A-Za-z_][\w.]*$")
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_OPERATION_HEADS = frozenset(name.split(".")[0] for name in OPERATIONS) | set(FAMILIES)


def complete(code: str, cursor_pos: int, names: Iterable[str]) -> dict[str, Any]:
    """A `complete_reply` content for `code` with the cursor at `cursor_pos`."""
    match = _PARTIAL.search(code[:cursor_pos])
    prefix = match.group() if match else ""
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
    matches = sorted({candidate for candidate in candidates if candidate.startswith(prefix)})
    return {
        "status": "ok",
        "matches": matches,
        "cursor_start": start,
        "cursor_end": cursor_pos,
        "metadata": {},
    }
