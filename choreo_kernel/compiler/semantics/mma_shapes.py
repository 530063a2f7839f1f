"""The MMA instruction family of warp-level matrix operations: which tiles a warp multiplies.

An `mma.row.col acc, a, b` inside a `group` scope (and no `group-4` around it) runs on one warp
with `mma.sync.aligned` (PTX ISA 9.7.14). A warp's tile is m16n8 or m16n16 (two instructions side
by side, the size WMMA calls m16n16k16) with m16n8kK, K a multiple of the instruction's K (k16 or
k8 for 16-bit types; k32 or k16 for 8-bit integers; k8 for tf32, and f32 tiles, which it reads as
tf32); or m8n8 (or m8n16) with the 8-row forms: m8n8k4 for f16 operands into f16, m8n8k16 for
8-bit integers.
An 8-row tile keeps its accumulator in the top half of the 16-row layout (rows 8-15 are padding),
so every warp accumulator has one layout; the m8n8k4 wrapper moves it into the rows the
instruction's four quad pairs hold, each of which computes the whole 8x8 tile (choreo_runtime.cuh).
The analysis checks a program against this table, the CUDA lowering picks its instruction from it,
and an untyped `mma.fill` takes its accumulator type from `default_accumulator` on every backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES, FLOAT_TYPES, Dim


@dataclass(frozen=True)
class WarpInstruction:
    """One mma.sync form: mMn8kK with A and B of `operand` type, accumulating into `accumulators`."""

    operand: str
    k: int
    accumulators: tuple[str, ...]
    m: int = 16
    n: int = 8

    @property
    def quad_pairs(self) -> bool:
        """m8n8k4: four independent MMAs, one per quad pair (lanes 4q..4q+3 and 16+4q..16+4q+3)."""
        return self.m == 8 and self.k == 4

    @property
    def a_registers(self) -> int:
        """32-bit registers of A per lane: M rows of K elements over 32 lanes (each quad pair its own)."""
        return self.m * self.k * ELEMENT_BYTES[self.operand] * (4 if self.quad_pairs else 1) // (32 * 4)

    @property
    def b_registers(self) -> int:
        return self.k * self.n * ELEMENT_BYTES[self.operand] * (4 if self.quad_pairs else 1) // (32 * 4)

    def c_registers(self, accumulator: str) -> int:
        """32-bit registers of C per lane in the instruction's own layout."""
        if self.quad_pairs:
            return 4  # a whole row of 8 f16, packed in pairs
        return self.m * self.n // 32 // (2 if accumulator == "f16" else 1)

    @property
    def kind(self) -> str:
        """The PTX type of the operands: f32 tiles are read as tf32."""
        return "tf32" if self.operand == "f32" else self.operand

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    def ptx(self, accumulator: str) -> str:
        kind = self.kind
        return f"mma.sync.aligned.{self.shape}.row.col.{accumulator}.{kind}.{kind}.{accumulator}"


def _forms(operand: str, ks: tuple[int, ...], accumulators: tuple[str, ...]) -> tuple[WarpInstruction, ...]:
    return tuple(WarpInstruction(operand, k, accumulators) for k in ks)


# Per operand type, the forms a warp uses, widest K first (each K step of a tile takes the widest that fits).
WARP_MMA = {
    "f16": (*_forms("f16", (16, 8), ("f32", "f16")), WarpInstruction("f16", 4, ("f16",), m=8)),
    "bf16": _forms("bf16", (16, 8), ("f32",)),
    "tf32": _forms("tf32", (8,), ("f32",)),
    "f32": _forms("f32", (8,), ("f32",)),  # multiplied as tf32 (10 mantissa bits), as WMMA does
    "s8": (*_forms("s8", (32, 16), ("s32",)), WarpInstruction("s8", 16, ("s32",), m=8)),
    "u8": (*_forms("u8", (32, 16), ("s32",)), WarpInstruction("u8", 16, ("s32",), m=8)),
}
WARP_TILE_ROWS = 16  # the rows of one fragment of a warp's accumulator (an 8-row tile fills half of one)
WARP_TILE_COLUMNS = (8, 16)


def warp_instruction(
    operand: str, k: int, accumulator: str, m: int = WARP_TILE_ROWS
) -> WarpInstruction | None:
    """The mma.sync form for an m-row tile of `operand` elements with K = k into `accumulator`: the widest
    K step that divides k."""
    return next(
        (
            form
            for form in WARP_MMA.get(operand, ())
            if form.m == m and k % form.k == 0 and accumulator in form.accumulators
        ),
        None,
    )


def default_accumulator(operand: str) -> str:
    """The accumulator type of an untyped `mma.fill`: f16 for f16 operands, f32 for other floats, s32."""
    if operand == "f16":
        return "f16"
    return "f32" if operand in FLOAT_TYPES else "s32"


def _tile_text(forms: list[WarpInstruction]) -> str:
    """'m16n8 or m16n16 with K a multiple of 8' for each row count that `forms` offer, with the forms."""
    parts = []
    for m in sorted({form.m for form in forms}, reverse=True):
        step = min(form.k for form in forms if form.m == m)
        parts.append(f"m{m}n8 or m{m}n16 with K a multiple of {step}")
    names = ", ".join(form.shape for form in forms)
    return f"{'; or '.join(parts)} (mma.sync {names})"


def warp_tile_problem(operand: str, accumulator: str, m: Dim, n: Dim, k: Dim) -> str | None:
    """Why a warp cannot multiply this tile (None: it can, or its extents are not known yet)."""
    forms = WARP_MMA.get(operand)
    shape = f"[{operand}(a){operand}(b){accumulator}(c){accumulator}(d): m{m}n{n}k{k}]"
    prefix = f"MMA {shape} is not supported by the current architecture (sm_90a) at warp level: "
    if forms is None:
        return f"{prefix}mma.sync takes {', '.join(WARP_MMA)} operands"
    usable = [form for form in forms if accumulator in form.accumulators]
    if not usable:
        into = sorted({a for form in forms for a in form.accumulators})
        return f"{prefix}{operand} operands accumulate into {' or '.join(into)}"
    if isinstance(m, int):
        rows = [form for form in usable if form.m == m]
    else:
        rows = usable
    fits = (
        bool(rows)
        and (not isinstance(n, int) or n in WARP_TILE_COLUMNS)
        and (not isinstance(k, int) or any(k % form.k == 0 for form in rows))
    )
    if fits:
        return None
    return (
        f"{prefix}a warp's tile of {operand} into {accumulator} is {_tile_text(usable)}; give each warp such a "
        "tile, or use a 'group-4' scope for WGMMA"
    )
