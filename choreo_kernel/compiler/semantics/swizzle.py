"""The swizzle of a shared buffer that WGMMA reads (language.md 12.6), decided here for the analysis
(which warns where a `.swiz<N>` is not kept) and the CUDA lowering (which lays the buffer out).

WGMMA reads a swizzled tile whose rows are whole swizzles: rows of one swizzle, or rows a multiple of
it wide, which then lie in panels one swizzle wide (cuda/views.Panels). A `.swiz<N>` that the rows
are not a multiple of (a 128-byte swizzle on rows of 32 bytes) would give a layout WGMMA cannot read,
so the compiler takes the widest swizzle the rows are a multiple of instead, and every copy, element
access and descriptor of the buffer uses that one.
"""

from __future__ import annotations

SWIZZLES = (32, 64, 128)  # bytes


def operand_swizzle(row_bytes: int, named: int | None) -> int:
    """The swizzle of a WGMMA operand buffer whose rows are `row_bytes` long: the named one where the rows
    are a multiple of it, else the widest that they are (32 where none is: WGMMA then cannot read it)."""
    if named is not None and row_bytes % named == 0:
        return named
    return max((s for s in SWIZZLES if row_bytes % s == 0), default=SWIZZLES[0])
