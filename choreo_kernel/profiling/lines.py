"""From a line of the emitted CUDA back to the Choreo line it implements.

The CUDA backend starts every lowered statement with `// line N: <statement>` and marks a
statement emitted away from its own block with a trailing `// line N` (compiler/cuda/writer.py),
so a CUDA line belongs to the comment on it or to the nearest one above it in its kernel. The
lines of a kernel before its first such comment are the kernel's own set-up (its signature,
shared memory, `choreo::block_starts`), its last lines from `choreo::block_ends` its own end (a
block that gave up on a wait lets its loads land), and the generated wgmma wrappers belong to no
Choreo line: they are inlined where a statement calls them, and that call site is what nvdisasm
and Nsight Compute report.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from choreo_kernel.runtime.cuda import UNIT

_STATEMENT = re.compile(r"^\s*// line (\d+):")
_TRAILING = re.compile(r"\S.*// line (\d+)\s*$")
# A kernel starts, a kernel's body ends, or the wrappers start.
_NO_STATEMENT = re.compile(r"__global__|^\s*choreo::block_ends\(|^namespace choreo")


def is_unit(path: str) -> bool:
    """Whether a file named in line info is the emitted CUDA (compiled as choreo.cu in some folder)."""
    return PurePosixPath(path).name == UNIT


class SourceMap:
    """The Choreo line of each line of one emitted CUDA source, and the Choreo source's own text."""

    def __init__(self, cuda_source: str, choreo_source: str) -> None:
        self._choreo = choreo_source.split("\n")
        self._statement: list[int | None] = [None]  # index 0 is unused: lines count from 1
        current: int | None = None
        for text in cuda_source.split("\n"):
            if _NO_STATEMENT.search(text):
                current = None
            statement, trailing = _STATEMENT.match(text), _TRAILING.search(text)
            if statement:
                current = int(statement.group(1))
            self._statement.append(int(trailing.group(1)) if trailing else current)

    def choreo_line(self, cuda_line: int) -> int | None:
        """The Choreo line that CUDA line `cuda_line` implements, or None (set-up, wrappers, past the end)."""
        return self._statement[cuda_line] if 0 < cuda_line < len(self._statement) else None

    def text(self, line: int) -> str:
        """Choreo line `line` as the user wrote it."""
        return self._choreo[line - 1].strip() if 0 < line <= len(self._choreo) else ""
