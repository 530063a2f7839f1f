"""The MMA instruction family of warp-level matrix operations: which tiles a warp multiplies.

An `mma.row.col acc, a, b` inside a `group` scope (and no `group-4` around it) runs on one warp
with `mma.sync.aligned.m16n8kK` (PTX ISA 9.7.14): a warp's tile is m16n8 or m16n16 (two
instructions side by side, the size WMMA calls m16n16k16), and K a multiple of the instruction's
K (k16 for 16-bit types; k32, or k16, for 8-bit integers; k8 for tf32, and f32 tiles, which it
reads as tf32).
The analysis checks a program against this table, the CUDA lowering picks its instruction from it,
and an untyped `mma.fill` takes its accumulator type from `default_accumulator` on every backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES, FLOAT_TYPES, Dim


@dataclass(frozen=True)
class WarpInstruction:
    """One mma.sync form: m16n8kK with A and B of `operand` type, accumulating into `accumulators`."""

    operand: str
    k: int
    accumulators: tuple[str, ...]
    m: int = 16
    n: int = 8

    @property
    def a_registers(self) -> int:
        """32-bit registers of A per lane: 16 rows of K elements over 32 lanes."""
        return self.m * self.k * ELEMENT_BYTES[self.operand] // (32 * 4)

    @property
    def b_registers(self) -> int:
        return self.k * self.n * ELEMENT_BYTES[self.operand] // (32 * 4)

    @property
    def kind(self) -> str:
        """The PTX type of the operands: f32 tiles are read as tf32."""
        return "tf32" if self.operand == "f32" else self.operand

    def ptx(self, accumulator: str) -> str:
        kind = self.kind
        return (
            f"mma.sync.aligned.m{self.m}n{self.n}k{self.k}.row.col.{accumulator}.{kind}.{kind}.{accumulator}"
        )


# Per operand type, the forms a warp uses, widest K first (each K step of a tile takes the widest that fits).
WARP_MMA = {
    "f16": (WarpInstruction("f16", 16, ("f32", "f16")),),
    "bf16": (WarpInstruction("bf16", 16, ("f32",)),),
    "tf32": (WarpInstruction("tf32", 8, ("f32",)),),
    "f32": (WarpInstruction("f32", 8, ("f32",)),),  # multiplied as tf32 (10 mantissa bits), as WMMA does
    "s8": (WarpInstruction("s8", 32, ("s32",)), WarpInstruction("s8", 16, ("s32",))),
    "u8": (WarpInstruction("u8", 32, ("s32",)), WarpInstruction("u8", 16, ("s32",))),
}
WARP_TILE_ROWS = 16
WARP_TILE_COLUMNS = (8, 16)


def warp_instruction(operand: str, k: int) -> WarpInstruction | None:
    """The mma.sync form for a tile of `operand` elements with K = k: the widest K step that divides k."""
    return next((form for form in WARP_MMA.get(operand, ()) if k % form.k == 0), None)


def default_accumulator(operand: str) -> str:
    """The accumulator type of an untyped `mma.fill`: f16 for f16 operands, f32 for other floats, s32."""
    if operand == "f16":
        return "f16"
    return "f32" if operand in FLOAT_TYPES else "s32"


def warp_tile_problem(operand: str, accumulator: str, m: Dim, n: Dim, k: Dim) -> str | None:
    """Why a warp cannot multiply this tile (None: it can, or its extents are not known yet)."""
    forms = WARP_MMA.get(operand)
    shape = f"[{operand}(a){operand}(b){accumulator}(c){accumulator}(d): m{m}n{n}k{k}]"
    if forms is None:
        kinds = ", ".join(WARP_MMA)
        return f"MMA {shape} is not supported by the current architecture (sm_90a) at warp level: mma.sync takes {kinds} operands"
    if accumulator not in forms[0].accumulators:
        return (
            f"MMA {shape} is not supported by the current architecture (sm_90a) at warp level: "
            f"{operand} operands accumulate into {' or '.join(forms[0].accumulators)}"
        )
    step = forms[-1].k
    fits = (
        (not isinstance(m, int) or m == WARP_TILE_ROWS)
        and (not isinstance(n, int) or n in WARP_TILE_COLUMNS)
        and (not isinstance(k, int) or k % step == 0)
    )
    if fits:
        return None
    return (
        f"MMA {shape} is not supported by the current architecture (sm_90a) at warp level: a warp's tile "
        f"is m16n8 or m16n16 with K a multiple of {step} for {operand} (mma.sync m16n8k{step}); "
        "give each warp such a tile, or use a 'group-4' scope for WGMMA"
    )
