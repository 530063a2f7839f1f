"""`select(k, ...)` factors that only the run time can judge: the sim stops with the factor's value at
the statement; on the GPU (marked `gpu`) the kernel reports the check like a wait that gave up and
the call raises naming the line, while an in-range factor selects as the sim does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from corpus import parse_program

import choreo_kernel as ck
from choreo_kernel.compiler.cuda import emit_program
from choreo_kernel.compiler.driver import analyze

PROGRAM = parse_program(Path(__file__).parent / "cuda" / "select_buffers.co")


@pytest.mark.parametrize("pick", [2, -1])
def test_an_out_of_range_factor_stops_the_sim_at_the_select(pick: int) -> None:
    module = ck.compile(PROGRAM.source, target="sim")
    with pytest.raises(ck.ChoreoError) as raised:
        module.alternate(np.zeros((8, 64), np.float32), pick)
    (error,) = raised.value.diagnostics
    assert f"the select factor 'pick' is {pick}, not in bound [0, 2)" in error.message
    line = "      out.at(p, t) = select(p % 2, even, odd).at(t) * 2.0f + select(pick, even, odd).at(t);"
    assert error.line == PROGRAM.source.splitlines().index(line) + 1


def test_a_factor_that_differs_between_threads_is_reported_on_the_sim() -> None:
    source = """
__co__ f32 [64] halves(f32 [64] a) {
  f32 [64] out;
  parallel p by 1 : block {
    shared f32 [64] left, right;
    dma.copy a => left;
    dma.copy a => right;
    parallel t by 64 : thread
      out.at(t) = select(t % 2, left, right).at(t);
  }
  return out;
}
"""
    module = ck.compile(source, target="sim")
    with pytest.raises(ck.ChoreoError, match="differs between the threads"):
        module.halves(np.zeros(64, np.float32))


def test_only_factors_the_compiler_cannot_bound_are_checked() -> None:
    text = emit_program(analyze(PROGRAM.source, target="cuda"))
    assert text.count("choreo::checked_select(") == 1
    assert "choreo::checked_select(pick, 2, status, 0)" in text


@pytest.mark.gpu
def test_an_out_of_range_factor_raises_on_the_gpu() -> None:
    module = ck.compile(PROGRAM.source, target="cuda")
    with pytest.raises(ck.ChoreoError, match=r"line 16 .*the select factor 'pick' is not in bound \[0, 2\)"):
        module.alternate(np.zeros((8, 64), np.float32), 3)
    a = np.random.default_rng(1).uniform(-1, 1, (8, 64)).astype(np.float32)
    expected = a * 2 + np.where((np.arange(8) % 2 == 0)[:, None], a[::-1], a)
    np.testing.assert_allclose(module.alternate(a, 1).get(), expected, rtol=1e-6)
