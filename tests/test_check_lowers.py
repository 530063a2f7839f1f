"""For target cuda, check runs the CUDA lowering: a program that check accepts also emits, and every
limit of the lowering is a located diagnostic (in the API, the CLI and ck.compile without a GPU)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from corpus import Program, load, parse_program

import choreo_kernel as ck
from choreo_kernel.compiler.cuda import emit_program
from choreo_kernel.compiler.driver import analyze

TESTS = Path(__file__).parent
FOUR_BLOCK_AXES = """\
__co__ void counts(f32 [2, 2, 2, 2] a) {
  parallel {i, j, k, l} by [2, 2, 2, 2] : block {
    a.at(i, j, k, l) = 1.0f;
  }
}
"""
SYMBOLIC_PATHS = """\
__co__ f32 [N] twice(f32 [N] x) {
  f32 [N] y;
  parallel t by N : thread {
    inthreads.async (t == 0) {
      y.at(t) = x.at(t) * 2.0f;
    }
  }
  return y;
}
"""


def test_check_for_cuda_reports_a_lowering_limit_where_it_is_in_the_source() -> None:
    (error,) = [d for d in ck.check(FOUR_BLOCK_AXES, target="cuda") if d.severity == "error"]
    assert (error.line, error.column) == (2, 3)
    assert "at most three block variables" in error.message
    rendered = error.render(FOUR_BLOCK_AXES, "counts.co")
    assert "counts.co:2:3: error:" in rendered and "parallel {i, j, k, l}" in rendered


def test_check_for_sim_does_not_lower() -> None:
    assert not [d for d in ck.check(FOUR_BLOCK_AXES, target="sim") if d.severity == "error"]


def test_compile_for_cuda_reports_the_lowering_without_a_gpu() -> None:
    with pytest.raises(ck.ChoreoError) as raised:
        ck.compile(SYMBOLIC_PATHS, target="cuda")
    (error,) = raised.value.diagnostics
    assert (error.line, error.column) == (4, 5)
    assert "block size depends on the arguments" in error.message and "independent paths" in error.message


def test_more_shared_memory_than_a_block_has_is_a_check_error() -> None:
    """Found by check, at the kernel, rather than when the launch fails on a GPU."""
    source = """\
__co__ f32 [64] too_big(f32 [64] x) {
  f32 [64] out;
  parallel b by 1 : block {
    shared f32 [80000] scratch;
    parallel t by 64 : thread {
      scratch.at(t) = x.at(t);
      out.at(t) = scratch.at(t);
    }
  }
  return out;
}
"""
    (error,) = [d for d in ck.check(source, target="cuda") if d.severity == "error"]
    assert error.line == 3 and "320000 bytes of shared memory" in error.message and "232448" in error.message


def test_the_cli_check_fails_where_emit_would(tmp_path: Path) -> None:
    path = tmp_path / "counts.co"
    path.write_text(FOUR_BLOCK_AXES)
    for command in ("check", "emit"):
        done = subprocess.run(
            [sys.executable, "-m", "choreo_kernel", command, str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1, done.stderr
        assert f"{path}:2:3: error:" in done.stdout + done.stderr
        assert "Traceback" not in done.stdout + done.stderr


def _programs() -> list[Program]:
    rules = [parse_program(path) for path in sorted((TESTS / "rules").glob("*.co"))]
    cuda = [parse_program(path) for path in sorted((TESTS / "cuda").glob("*.co"))]
    return [*load("valid"), *load("invalid"), *rules, *cuda]


@pytest.mark.parametrize("program", _programs(), ids=lambda program: program.name)
def test_what_check_accepts_for_cuda_emits(program: Program) -> None:
    """Over every test program, valid or not: no error from check for cuda means emit succeeds."""
    analysis = analyze(program.source, target="cuda", filename=program.name)
    if analysis.has_errors:
        assert analysis.lowered is None or analysis.lowered.errors
        return
    assert "__global__" in emit_program(analysis) or "parallel" not in program.source
