"""What one call may cost the sim: it runs on the CPU, so a program sized for a GPU can ask for more
work or memory than a notebook can give. Past these limits the call stops with an error at the
statement that asked (the cuda target, or smaller sizes, are the way on)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

MAX_STEPS = int(os.environ.get("CHOREO_SIM_MAX_STEPS", "5000000"))  # loop iterations and blocks per call
MAX_BYTES = int(os.environ.get("CHOREO_SIM_MAX_BYTES", str(8 << 30)))  # one buffer


def index_space(ranges: Sequence[range]) -> Iterator[tuple[int, ...]]:
    """Every index of a box, the last axis fastest, one at a time (itertools.product would first make
    a tuple of each whole range)."""
    if not ranges:
        yield ()
        return
    for first in ranges[0]:
        for rest in index_space(ranges[1:]):
            yield (first, *rest)


def gigabytes(count: int) -> str:
    return f"{count / (1 << 30):.3g} GiB"
