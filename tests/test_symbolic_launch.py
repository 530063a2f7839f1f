"""Blocks whose thread count the arguments give (`parallel t by N`): the host plan keeps the factors of
the block size and checks it at each call against the 1024-thread limit, on the sim as on the GPU
(marked `gpu`); what needs fixed units (warp levels, TMA, MMA, events, independent paths) is a located
check error for CUDA."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from corpus import parse_program

import choreo_kernel as ck
from choreo_kernel.compiler.driver import analyze
from choreo_kernel.compiler.printer import expression

ROWS = parse_program(Path(__file__).parent / "cuda" / "symbolic_block_threads.co")


def _errors(source: str) -> list[ck.Diagnostic]:
    return [d for d in ck.check(source, target="cuda") if d.severity == "error"]


def test_the_plan_keeps_the_factors_of_the_block_size() -> None:
    analysis = analyze(ROWS.source, target="cuda")
    assert analysis.lowered is not None
    (launch,) = analysis.lowered.plans["rows"].launches
    assert launch.threads == 0
    assert [f if isinstance(f, int) else expression(f) for f in launch.thread_factors] == [2, "C / 2"]


@pytest.mark.parametrize("target", ["sim", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_block_over_1024_threads_is_refused_at_the_call(target: str) -> None:
    module = ck.compile(ROWS.source, target=target)
    with pytest.raises(ck.ChoreoError, match="makes a block of 2048 threads: at most 1024 threads per block"):
        module.rows(np.zeros((2, 2048), np.float32), 1)


@pytest.mark.gpu
def test_a_block_the_arguments_size_runs_for_several_sizes() -> None:
    module = ck.compile(ROWS.source, target="cuda")
    for columns in (2, 64, 1024):
        x = np.random.default_rng(columns).uniform(-1, 1, (3, columns)).astype(np.float32)
        expected = x * 3 + np.arange(columns) % (columns // 2)
        np.testing.assert_allclose(module.rows(x, 3).get(), expected, rtol=1e-6)


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ("parallel t by W : thread { shared event e; trigger e; }", "events"),
        (
            "parallel t by W : thread { inthreads.async (t == 0) { y.at(t) = 1.0f; } }",
            "independent paths",
        ),
        (
            "parallel t by W : thread { y.at(t) = 1.0f; } parallel u by W / 2 : thread { y.at(u) = 2.0f; }",
            "sibling parallels of different thread counts (W at line 4, W / 2 here)",
        ),
    ],
)
def test_what_needs_fixed_units_is_a_check_error(body: str, what: str) -> None:
    source = f"""
__co__ void f(f32 [W] y) {{
  parallel b by 1 : block {{
    {body}
  }}
}}
"""
    (error,) = _errors(source)
    assert "block size depends on the arguments (line 4)" in error.message and what in error.message


def test_a_thread_count_the_kernel_computes_cannot_size_the_block() -> None:
    source = """
__co__ void f(f32 [N] y) {
  parallel b by 1 : block {
    int halves = y.span(0) / 2;
    parallel t by halves : thread
      y.at(t) = 1.0f;
  }
}
"""
    errors = _errors(source)
    assert errors and "uses 'halves', which the kernel computes" in errors[0].message
