"""Warp-level MMA (mma.sync): the table of forms (semantics/mma_shapes.py), the wrappers the CUDA
lowering generates from it, and the rules the analysis reads off it. The programs themselves are
tests/cuda/warp_*.co: checked against NumPy on the sim (test_sim.py), built with nvcc
(test_cuda_compile.py) and run on the GPU against NumPy and the sim (test_gpu.py, `-m gpu`)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import choreo_kernel as ck
from choreo_kernel.compiler.cuda.warp_mma import wrapper
from choreo_kernel.compiler.semantics.mma_shapes import (
    WARP_MMA,
    default_accumulator,
    warp_instruction,
    warp_tile_problem,
)


@pytest.mark.parametrize(
    ("operand", "k", "step"),
    [
        ("f16", 32, 16),
        ("f16", 24, 8),
        ("bf16", 16, 16),
        ("bf16", 8, 8),
        ("s8", 64, 32),
        ("s8", 48, 16),
        ("u8", 16, 16),
        ("f32", 24, 8),
    ],
)
def test_each_k_takes_the_widest_step_that_divides_it(operand: str, k: int, step: int) -> None:
    form = warp_instruction(operand, k, default_accumulator(operand))
    assert form is not None and form.k == step and form.m == 16


def test_a_k_that_no_step_divides_has_no_form() -> None:
    assert warp_instruction("f16", 12, "f32") is None
    assert warp_instruction("f64", 16, "f32") is None


def test_8_row_tiles_take_the_m8n8_forms_and_m8n8k4_accumulates_only_f16() -> None:
    quad_pairs = warp_instruction("f16", 8, "f16", m=8)
    assert quad_pairs is not None and quad_pairs.shape == "m8n8k4" and quad_pairs.quad_pairs
    assert warp_instruction("f16", 8, "f32", m=8) is None
    integer = warp_instruction("s8", 32, "s32", m=8)
    assert integer is not None and integer.shape == "m8n8k16" and not integer.quad_pairs
    assert warp_instruction("bf16", 16, "f32", m=8) is None


# Registers per lane of A, B and C, as PTX ISA 9.7.14.5 lists them for each form.
PTX_REGISTERS = {
    ("m16n8k16", "f16", "f32"): (4, 2, 4),
    ("m16n8k16", "f16", "f16"): (4, 2, 2),
    ("m16n8k8", "bf16", "f32"): (2, 1, 4),
    ("m8n8k4", "f16", "f16"): (2, 2, 4),
    ("m16n8k32", "s8", "s32"): (4, 2, 4),
    ("m16n8k16", "u8", "s32"): (2, 1, 4),
    ("m8n8k16", "s8", "s32"): (1, 1, 2),
    ("m16n8k8", "tf32", "f32"): (4, 2, 4),
}


@pytest.mark.parametrize("operand", sorted(WARP_MMA))
def test_each_wrapper_names_as_many_registers_as_the_ptx_form_takes(operand: str) -> None:
    """D, A, B and C registers: the asm's operand list must match its constraints one for one."""
    for form in WARP_MMA[operand]:
        for accumulator in form.accumulators:
            text = wrapper(form, accumulator)
            assert form.ptx(accumulator) in text
            operands = {int(n) for n in re.findall(r"%(\d+)", text)}
            constraints = len(re.findall(r'"\+?[rf]"\(', text))
            assert operands == set(range(constraints))
            registers = (form.a_registers, form.b_registers, form.c_registers(accumulator))
            expected = PTX_REGISTERS.get((form.shape, form.kind, accumulator))
            assert expected is None or registers == expected


@pytest.mark.parametrize(
    ("shape", "accumulator", "problem"),
    [
        ((16, 16, 16), "f32", None),
        ((16, 8, 64), "f32", None),
        ((16, 16, 8), "f32", None),
        ((8, 8, 4), "f16", None),
        ((8, 16, 12), "f16", None),
        ((8, 8, 4), "f32", "m16n8 or m16n16 with K a multiple of 8"),
        ((32, 32, 32), "f32", "m32n32k32"),
        ((16, 24, 16), "f32", "m16n24k16"),
        ((16, 16, 12), "f32", "K a multiple of 8"),
        ((8, 8, 6), "f16", "m8n8 or m8n16 with K a multiple of 4"),
    ],
)
def test_a_warp_tile_is_m16_or_m8_by_n8_or_n16(
    shape: tuple[int, int, int], accumulator: str, problem: str | None
) -> None:
    found = warp_tile_problem("f16", accumulator, *shape)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_symbolic_extents_are_left_to_the_lowering() -> None:
    assert warp_tile_problem("bf16", "f32", "M", "N", "K") is None


def test_untyped_fills_accumulate_f16_in_f16_and_integers_in_s32() -> None:
    assert [default_accumulator(t) for t in ("f16", "bf16", "f32", "s8", "u8")] == [
        "f16",
        "f32",
        "f32",
        "s32",
        "s32",
    ]


def test_an_mma_on_a_warp_is_no_longer_sent_to_a_warpgroup() -> None:
    source = """
__co__ void warp(f16 [16, 16] a, f16 [16, 16] b, global f32 [16, 16] out) {
  parallel w by 1 : group {
    acc = mma.fill.f32 0.0f;
    x = mma.load a;
    y = mma.load b;
    mma.row.col acc, x, y;
    mma.store acc, out;
  }
}
"""
    assert ck.check(source, target="cuda") == []
    emitted = ck.compile(source, target="sim").cuda_source
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in emitted
    assert "wgmma" not in emitted.split("__global__")[1]


UNTYPED_FILL = """\
__co__ f32 [64, 64] f(f16 [64, 64] a, f16 [64, 64] b) {
  f32 [64, 64] out;
  parallel p by 1 : block {
    sa = tma.load.swiz<128> a => shared;
    sb = tma.load.swiz<128> b => shared;
    parallel g by 1 : group-4 {
      acc = mma.fill 0.0f;
      foreach k in [4] {
        mma.row.row acc, sa.chunkat(_, k), sb.chunkat(_, k);
      }
      mma.store acc, out;
    }
  }
  return out;
}
"""


def test_an_untyped_fill_accumulates_f16_operands_in_f16_on_a_warpgroup_on_both_backends() -> None:
    """language.md: the accumulator's type is by default that of A, for WGMMA as for mma.sync."""
    cuda = ck.compile(UNTYPED_FILL, target="cuda").cuda_source
    assert "unsigned acc[16];  // 64x64 f16" in cuda and "wgmma_m64n64k16_f16_f16(" in cuda
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 1, (64, 64)).astype(np.float16)
    got = ck.compile(UNTYPED_FILL, target="sim").f(a, a)
    exact = a.astype(np.float32) @ a.astype(np.float32).T
    error = np.abs(got - exact).max()
    assert 1e-3 < error < 0.1  # f16 partial sums round; f32 ones would be within 1e-4
