"""The element types narrower than a byte: fp6 (e3m2, e2m3), fp4 (e2m1), the 6-, 4-, 2- and 1-bit integers
and bin1. Hopper has no instructions for them, so choreo_runtime.cuh converts them in software; this
builds those conversions for the CPU with nvcc and checks them against ml_dtypes (what the sim uses) on
every code and on the values that round hardest. The programs of tests/cuda/narrow_*.co check them in
kernels, on the sim and the GPU."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import choreo_kernel as ck
from choreo_kernel.compiler.cuda import header_text

NVCC = shutil.which("nvcc")
FLOATS = {
    "f6_e3m2": ml_dtypes.float6_e3m2fn,
    "f6_e2m3": ml_dtypes.float6_e2m3fn,
    "f4_e2m1": ml_dtypes.float4_e2m1fn,
}
INTEGERS = {
    "u6": (6, False),
    "s6": (6, True),
    "u4": (4, False),
    "s4": (4, True),
    "u2": (2, False),
    "s2": (2, True),
    "u1": (1, False),
}

# Reads floats (and integers) from standard input, writes what each conversion of the header makes of them.
PROGRAM = r"""
#include <cstdio>
int main() {
  float value;
  while (std::scanf("%f", &value) == 1) {
    std::printf("%u %u %u %.9g %.9g %.9g\n",
                choreo::to_f6_e3m2(value).bits, choreo::to_f6_e2m3(value).bits, choreo::to_f4_e2m1(value).bits,
                choreo::to_f32(choreo::f6_e3m2{static_cast<unsigned char>(static_cast<int>(value) & 63)}),
                choreo::to_f32(choreo::f6_e2m3{static_cast<unsigned char>(static_cast<int>(value) & 63)}),
                choreo::to_f32(choreo::f4_e2m1{static_cast<unsigned char>(static_cast<int>(value) & 15)}));
  }
  long long integer;
  std::scanf("%*s");
  while (std::scanf("%lld", &integer) == 1) {
    std::printf("%d %d %d %d %d %d %d %d\n", choreo::to_int(choreo::to_u6(integer)), choreo::to_int(choreo::to_s6(integer)),
                choreo::to_int(choreo::to_u4(integer)), choreo::to_int(choreo::to_s4(integer)),
                choreo::to_int(choreo::to_u2(integer)), choreo::to_int(choreo::to_s2(integer)),
                choreo::to_int(choreo::to_u1(integer)), choreo::to_int(choreo::to_bin1(integer)));
  }
}
"""


@pytest.fixture(scope="module")
def conversions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if NVCC is None:
        pytest.skip("nvcc is not installed here, so the header's conversions cannot be built for the CPU")
    directory = tmp_path_factory.mktemp("narrow")
    source = directory / "conversions.cu"
    source.write_text(header_text().replace("#pragma once\n", "") + PROGRAM)
    binary = directory / "conversions"
    subprocess.run([NVCC, "-arch=sm_90a", str(source), "-o", str(binary)], check=True, capture_output=True)
    return binary


def _values() -> np.ndarray:
    """Every value of each format, the midpoints between neighbours (ties round to even), values just
    beside them, the extremes, and random values across the range."""
    points = [np.arange(256, dtype=np.uint8).view(dtype).astype(np.float32) for dtype in FLOATS.values()]
    exact = np.unique(np.concatenate(points))
    exact = exact[np.isfinite(exact)]
    middles = (exact[1:] + exact[:-1]) / 2
    near = np.concatenate([np.nextafter(middles, np.inf), np.nextafter(middles, -np.inf)])
    wide = np.random.default_rng(1).uniform(-40, 40, 2000).astype(np.float32)
    special = np.array([0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, np.inf, -np.inf, np.nan], dtype=np.float32)
    return np.concatenate([exact, middles, near, wide, special]).astype(np.float32)


def _run(binary: Path, floats: np.ndarray, integers: np.ndarray) -> list[list[str]]:
    text = " ".join(f"{v:.9g}" for v in floats) + " integers " + " ".join(str(int(i)) for i in integers)
    out = subprocess.run([str(binary)], input=text, capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()]


def test_float_conversions_round_as_ml_dtypes(conversions: Path) -> None:
    values = _values()
    rows = _run(conversions, values, np.array([], dtype=np.int64))[: len(values)]
    for column, (name, dtype) in enumerate(FLOATS.items()):
        device = np.array([int(row[column]) for row in rows], dtype=np.uint8)
        expected = values.astype(dtype).view(np.uint8)
        wrong = np.flatnonzero(device != expected)
        assert not wrong.size, (
            f"{name}: {values[wrong[:5]]} -> {device[wrong[:5]]}, ml_dtypes {expected[wrong[:5]]}"
        )


def test_every_code_decodes_as_ml_dtypes(conversions: Path) -> None:
    codes = np.arange(64, dtype=np.float32)
    rows = _run(conversions, codes, np.array([], dtype=np.int64))
    for column, (name, dtype) in zip((3, 4, 5), FLOATS.items()):
        count = 16 if name == "f4_e2m1" else 64
        device = np.array([float(row[column]) for row in rows[:count]], dtype=np.float32)
        expected = np.arange(count, dtype=np.uint8).view(dtype).astype(np.float32)
        np.testing.assert_array_equal(device, expected, err_msg=name)


def test_integer_conversions_keep_the_low_bits_as_c_does(conversions: Path) -> None:
    integers = np.array([*range(-70, 71), 1000, -1000, 2**31 - 1, -(2**31), 2**40 + 5], dtype=np.int64)
    rows = _run(conversions, np.array([], dtype=np.float32), integers)
    for column, (name, (bits, signed)) in enumerate(INTEGERS.items()):
        device = np.array([int(row[column]) for row in rows])
        low = integers & ((1 << bits) - 1)
        expected = np.where(signed & (low >= 1 << (bits - 1)), low - (1 << bits), low)
        np.testing.assert_array_equal(device, expected, err_msg=name)
    np.testing.assert_array_equal(np.array([int(row[7]) for row in rows]), (integers != 0).astype(int))


@pytest.mark.parametrize("name", [*FLOATS, *INTEGERS, "bin1"])
def test_the_sim_stores_as_the_device_converts(name: str) -> None:
    """A store into a buffer of each type, on the sim, against the same C rules."""
    source = f"""__co__ s32 [16] stored(s32 [16] x) {{
  {name} [16] held;
  s32 [16] y;
  parallel p by 1 : block, t by 16 : thread {{
    held.at(t) = x.at(t) * 7 - 40;
    y.at(t) = held.at(t) * 2;
  }}
  return y;
}}
"""
    x = np.arange(16, dtype=np.int32)
    wide = x * 7 - 40
    if name in FLOATS:  # held as the float type; times 2 in f32; into s32 truncating
        expected = np.trunc(wide.astype(np.float32).astype(FLOATS[name]).astype(np.float32) * 2)
        np.testing.assert_array_equal(ck.compile(source, target="sim").stored(x), expected)
        return
    if name == "bin1":
        narrow = (wide != 0).astype(np.int64)
    else:
        bits, signed = INTEGERS[name]
        low = wide & ((1 << bits) - 1)
        narrow = np.where(signed & (low >= 1 << (bits - 1)), low - (1 << bits), low)
    np.testing.assert_array_equal(ck.compile(source, target="sim").stored(x), narrow * 2)


def test_hopper_has_no_mma_for_fp6_operands() -> None:
    source = """__co__ f32 [64, 64] mm(f6_e2m3 [64, 64] a, f6_e2m3 [64, 64] b) {
  f32 [64, 64] c;
  parallel p by 1 : block {
    shared f6_e2m3 [64, 64] sa, sb;
    dma.copy a => sa;
    dma.copy b => sb;
    parallel g by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      mma.row.row acc, sa, sb;
      mma.store acc, c;
    }
  }
  return c;
}
"""
    errors = [d for d in ck.check(source) if d.severity == "error"]
    assert errors and "no MMA instruction for f6_e2m3" in errors[0].message and errors[0].line == 9


def test_a_u6_argument_outside_its_range_is_refused_before_the_call() -> None:
    source = "__co__ s32 [4] f(u6 [4] x) {\n  s32 [4] y;\n  parallel p by 4 : block {\n    y.at(p) = x.at(p);\n  }\n  return y;\n}\n"
    module = ck.compile(source, target="sim")
    np.testing.assert_array_equal(module.f(np.array([0, 1, 62, 63], np.uint8)), [0, 1, 62, 63])
    with pytest.raises(ck.ChoreoError, match="u6, whose values are 0 to 63"):
        module.f(np.array([0, 64, 1, 2], np.uint8))
