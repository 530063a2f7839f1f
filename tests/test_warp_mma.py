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
    [("f16", 32, 16), ("bf16", 16, 16), ("s8", 64, 32), ("s8", 48, 16), ("u8", 16, 16), ("f32", 24, 8)],
)
def test_each_k_takes_the_widest_step_that_divides_it(operand: str, k: int, step: int) -> None:
    form = warp_instruction(operand, k)
    assert form is not None and form.k == step


def test_a_k_that_no_step_divides_has_no_form() -> None:
    assert warp_instruction("f16", 8) is None
    assert warp_instruction("f64", 16) is None


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
            data_bytes = (
                16 * form.k * (4 if form.kind == "tf32" else 2 if form.kind in ("f16", "bf16") else 1)
            )
            assert form.a_registers == data_bytes // 128


@pytest.mark.parametrize(
    ("shape", "problem"),
    [
        ((16, 16, 16), None),
        ((16, 8, 64), None),
        ((32, 32, 32), "m32n32k32"),
        ((16, 24, 16), "m16n24k16"),
        ((16, 16, 8), "K a multiple of 16"),
    ],
)
def test_a_warp_tile_is_m16_by_n8_or_n16(shape: tuple[int, int, int], problem: str | None) -> None:
    found = warp_tile_problem("f16", "f32", *shape)
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
