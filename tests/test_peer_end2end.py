"""Croqtile's end-to-end programs (tests/gpu/end2end/*.co) called through `ck.compile`, with the inputs their
C++ `main`s build, checked as those `main`s check them (tests/peer_end2end.py says how, per program).

The suite is read where it lies: $CHOREO_PEER_TESTS, else the first `shared/peer/croqtile/tests` beside
the repository or one of the folders above it. Without it (a clean clone elsewhere) every test skips,
saying so. Each program runs on the sim backend, and on the GPU under the `gpu` marker (skipped without
CuPy and a device), where the programs whose sizes are arguments run at the `main`'s own sizes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from peer_end2end import PROGRAMS as SIMPLE_PROGRAMS
from peer_end2end import Call, Printed, Program, Tolerance
from peer_end2end_mma import PROGRAMS as MMA_PROGRAMS

import choreo_kernel as ck
from choreo_kernel.compiler import ast
from choreo_kernel.runtime.dtypes import DEVICE_BITS, numpy_dtype

PROGRAMS = [*SIMPLE_PROGRAMS, *MMA_PROGRAMS]
ROOT = Path(__file__).resolve().parent.parent
SUITE_IN_SHARED = Path("shared/peer/croqtile/tests")


def peer_suite() -> Path | None:
    """Croqtile's tests folder: the environment's, or the nearest one beside the repository's folders."""
    configured = os.environ.get("CHOREO_PEER_TESTS")
    if configured:
        return Path(configured)
    for folder in ROOT.parents:
        if (folder / SUITE_IN_SHARED).is_dir():
            return folder / SUITE_IN_SHARED
    return None


@pytest.fixture(scope="module")
def end2end() -> Path:
    suite = peer_suite()
    if suite is None:
        pytest.skip(
            f"Croqtile's test suite is not here: set CHOREO_PEER_TESTS or put it at ../{SUITE_IN_SHARED}"
        )
    folder = suite / "gpu" / "end2end"
    if not folder.is_dir():
        pytest.fail(f"{suite} has no gpu/end2end folder: CHOREO_PEER_TESTS must name Croqtile's tests folder")
    return folder


def cases(target: str) -> Iterator[Any]:
    for program in PROGRAMS:
        marks = []
        if program.pending and (target == "cuda" or program.pending_on_sim):
            marks.append(pytest.mark.xfail(reason=program.pending, strict=False))
        reason = program.sim_xfail if target == "sim" else program.gpu_xfail
        if reason:
            marks.append(pytest.mark.xfail(reason=reason, strict=True))
        yield pytest.param(program, id=program.name, marks=marks)


@pytest.mark.parametrize("program", list(cases("sim")))
def test_program_on_sim(program: Program, end2end: Path, capfd: pytest.CaptureFixture[str]) -> None:
    run(program, end2end, "sim", capfd)


@pytest.mark.gpu
@pytest.mark.parametrize("program", list(cases("cuda")))
def test_program_on_gpu(program: Program, end2end: Path, capfd: pytest.CaptureFixture[str]) -> None:
    run(program, end2end, "cuda", capfd)


def test_every_program_of_the_suite_has_an_entry(end2end: Path) -> None:
    """A program added to the suite gets an entry here, and an entry names a program that is there."""
    assert sorted(path.stem for path in end2end.glob("*.co")) == sorted(p.name for p in PROGRAMS)


def run(program: Program, folder: Path, target: str, capfd: pytest.CaptureFixture[str]) -> None:
    assert program.calls, f"{program.name}: no calls written for it yet"
    path = folder / f"{program.name}.co"
    module = ck.compile(path.read_text(), target=target, filename=str(path))
    rng = np.random.default_rng(2026)
    known = []
    for index, call in enumerate(program.calls):
        where = f"{program.name}: call {index + 1}, {call.function}"
        arguments = call.arguments(rng, target == "cuda")
        if call.differs is None:
            check(module, call, arguments, where, capfd)
            continue
        if call.faults and target == "cuda":
            known.append(f"{call.function} (not run on the GPU): {call.differs}")
            continue
        try:
            check(module, call, arguments, where, capfd)
        except (AssertionError, ck.ChoreoError):
            known.append(f"{call.function}: {call.differs}")
            continue
        pytest.fail(f"{where} now passes the main's check; its entry says it differs ({call.differs})")
    if known:
        pytest.xfail("; ".join(known))


def check(module: ck.Module, call: Call, arguments: tuple[Any, ...], where: str, capfd: Any) -> None:
    """Call the function with copies of the arguments and check what the main checks."""
    passed = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in arguments)
    capfd.readouterr()
    returned = module.function(call.function)(*passed)
    expected = call.reference(*arguments)
    if isinstance(expected, Printed):
        printed = {line.strip() for line in capfd.readouterr().out.splitlines()}
        missing = expected.lines - printed
        assert not missing, f"{where}: printed {sorted(printed)}, without {sorted(missing)}"
        return
    info = module.analysis.functions[call.function]
    if not call.written:
        compare(
            on_host(returned, expected, result_element(module, call.function)),
            np.asarray(expected),
            call,
            where,
        )
        return
    expected_each = expected if len(call.written) > 1 else (expected,)
    for index, wanted in zip(call.written, expected_each, strict=True):
        element = info.function.params[index].type.name
        compare(
            on_host(passed[index], wanted, element),
            np.asarray(wanted),
            call,
            f"{where}, argument {index + 1}",
        )


def result_element(module: ck.Module, function: str) -> str | None:
    """The element type of the buffer a function returns, where the CUDA plan names it."""
    plan = module.cuda_plan(function)
    if plan is None or not isinstance(plan.result, ast.Name):
        return None
    symbol = module.analysis.functions[function].symbol_of.get(id(plan.result))
    return getattr(symbol.value, "elem", None) if symbol is not None else None


def on_host(value: Any, expected: Any, element: str | None = None) -> np.ndarray:
    """A result as NumPy with the reference's dtype: CuPy arrays come back, and a type CuPy lacks (bf16,
    fp8, fp6, fp4, the narrow integers) comes back as its bits, read as the type (`element`, the
    declared one, where the reference computes in a wider type)."""
    host = np.asarray(value.get() if hasattr(value, "get") else value)
    if element in DEVICE_BITS and host.dtype == DEVICE_BITS[element]:
        host = host.view(numpy_dtype(element))
    wanted = np.asarray(expected).dtype
    if host.dtype != wanted and host.dtype.kind in "ub" and host.dtype.itemsize == wanted.itemsize:
        return host.view(wanted)
    return host


def compare(got: np.ndarray, expected: np.ndarray, call: Call, where: str) -> None:
    assert got.shape == expected.shape, f"{where}: shape {got.shape}, expected {expected.shape}"
    tolerance = call.tolerance
    if tolerance is None:
        np.testing.assert_array_equal(got.astype(expected.dtype), expected, err_msg=where)
        return
    got64, ref64 = got.astype(np.float64), expected.astype(np.float64)
    error = np.abs(got64 - ref64)
    bad = misses(error, np.abs(ref64), tolerance)
    assert not bad.any(), (
        f"{where}: {int(bad.sum())} of {bad.size} elements off, the first at {np.argwhere(bad)[0].tolist()}: "
        f"got {got64[bad][:4]}, expected {ref64[bad][:4]} (largest error {error.max():.3g})"
    )


def misses(error: np.ndarray, size: np.ndarray, tolerance: Tolerance) -> np.ndarray:
    if tolerance.either:
        return ~((error <= tolerance.atol) | (error <= tolerance.rtol * (size + 1e-6)))
    return ~(error <= tolerance.atol + tolerance.rtol * size)
