"""The tuning package without Jupyter: the per-point job, the order of a sweep, and what travels to workers.

Everything runs in this process on the sim backend; tests/test_tuning_dask.py runs the same
job on Dask workers.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from programs import SCALED_ADD

import choreo_kernel as ck
from choreo_kernel.compiler.diagnostics import ChoreoError
from choreo_kernel.tuning.point import Check, MetricProbe, SweepSettings, SweptSource, measure_point
from choreo_kernel.tuning.shipping import CellFunction, PointFunction, PointModule, ShippedExpression
from choreo_kernel.tuning.sweep import InProcess, check_source_takes, run_sweep

SOURCE = SweptSource(SCALED_ADD, {}, "sim", "scaled.co")
SETTINGS = SweepSettings("add(a, b)", repeats=2)
A = np.ones((32, 32), np.float32)
B = np.full((32, 32), 2.0, np.float32)


def add_ab(module: ck.Module) -> Callable[[], Any]:
    """The Python API's way to say what to time: a function of the point's build."""
    return lambda: module.add(A, B)


def quiet(done: int, total: int, text: str) -> None:
    pass


def test_measure_point_returns_the_reference_value_or_a_verdict() -> None:
    steps: list[str] = []
    reference = measure_point(SOURCE, {"SCALE": 3}, add_ab, SETTINGS, None, steps.append)
    assert steps == ["compiling", "running add(a, b)"]
    assert reference.value is not None and float(reference.value[0, 0]) == 5.0  # 1 * 3 + 2
    timing = reference.point.timing
    assert timing is not None and len(timing.seconds) == 2 and timing.device.name == "sim backend (CPU)"
    check = Check(reference.value, 1e-3, 1e-3)
    same = measure_point(SOURCE, {"SCALE": 3}, add_ab, SETTINGS, check)
    other = measure_point(SOURCE, {"SCALE": 4}, add_ab, SETTINGS, check)
    assert same.value is None and same.point.usable
    assert other.point.difference == "1024 of 1024 values differ from the first point's"
    assert not other.point.usable


def test_a_point_that_fails_to_compile_or_run_is_an_error_not_an_exception() -> None:
    measured = measure_point(SOURCE, {"SCALE": "a.b"}, add_ab, SETTINGS, None)
    assert measured.point.timing is None and measured.value is None
    assert measured.point.error == "spanned data has no member '.b'"

    def mismatched(module: ck.Module) -> Callable[[], Any]:
        return lambda: module.add(A, B[:16])

    measured = measure_point(SOURCE, {"SCALE": 1}, mismatched, SETTINGS, None)
    assert measured.point.timing is None
    assert (
        measured.point.error
        == "add(): parameter 'b': dimension 0 (M) must be 32 (M = 32 from earlier arguments), got 16"
    )


def test_the_first_point_that_runs_is_the_reference() -> None:
    progress: list[tuple[int, int, str]] = []
    sweep = run_sweep(
        SOURCE,
        {"SCALE": ["a.b", 2, 2, 5]},
        add_ab,
        SETTINGS,
        InProcess(),
        lambda *report: progress.append(report),
    )
    failed, reference, same, other = sweep.points
    assert failed.error and failed.timing is None
    assert reference.usable and same.usable and reference.difference is None
    assert other.difference is not None  # compared with SCALE=2, not with the failed first point
    assert not sweep.unchecked
    assert not sweep.ranked and sweep.best is None and sweep.defines_text() == ""  # sim times rank nothing
    assert [done for done, _, text in progress if "median" in text or "error" in text] == [1, 2, 3, 4]
    assert all(total == 4 for _, total, _ in progress)
    assert sweep.seconds > 0


def test_a_call_that_returns_none_leaves_the_sweep_unchecked() -> None:
    out = np.zeros((32, 32), np.float32)

    def writes_only(module: ck.Module) -> Callable[[], Any]:
        return lambda: out.fill(module.add(A, B)[0, 0])  # fill() returns None

    sweep = run_sweep(SOURCE, {"SCALE": [1, 2]}, writes_only, SETTINGS, InProcess(), quiet)
    assert sweep.unchecked and all(point.usable for point in sweep.points)


def test_a_sweep_where_every_point_fails_has_no_best() -> None:
    sweep = run_sweep(SOURCE, {"SCALE": ["a.b", "c.d"]}, add_ab, SETTINGS, InProcess(), quiet)
    assert [point.error is not None for point in sweep.points] == [True, True]
    assert sweep.best is None and sweep.defines_text() == ""


def test_a_swept_name_must_reach_the_source() -> None:
    with pytest.raises(ValueError, match=r"scaled\.co does not use TILE"):
        check_source_takes(SOURCE, {"TILE": [1]})
    fixed = SweptSource("#define SCALE 3\n" + SCALED_ADD.split("#endif\n")[1], {}, "sim", "fixed.co")
    with pytest.raises(ValueError, match="#ifndef SCALE"):
        check_source_takes(fixed, {"SCALE": [1, 2]})


def test_a_metric_is_measured_on_each_points_own_build_and_ranks_the_sweep() -> None:
    """The metric here is the point's result (1 * SCALE + 2), right only when taken from the point's build."""
    measured: list[dict[str, object]] = []

    def result_of(module: ck.Module) -> float:
        measured.append(module.defines)
        return float(module.add(A, B)[0, 0])

    def settings(lower_is_better: bool) -> SweepSettings:
        return SweepSettings("add(a, b)", 1, metric=MetricProbe("result", lower_is_better, result_of))

    steps: list[str] = []
    point = measure_point(SOURCE, {"SCALE": 4}, add_ab, settings(False), None, steps.append).point
    assert point.metric == 6.0 and steps[-1] == "profiling result" and measured == [{"SCALE": 4}]
    # SCALE=2 is the reference; 5 has the highest metric and 1 the lowest, but their results differ,
    # so either way the best is a SCALE=2 point.
    grid = {"SCALE": [2, 5, 2, 1]}
    for lower_is_better in (False, True):
        sweep = run_sweep(SOURCE, grid, add_ab, settings(lower_is_better), InProcess(), quiet)
        assert [point.metric for point in sweep.points] == [4.0, 7.0, 4.0, 3.0]
        assert sweep.best is not None and sweep.best.defines == {"SCALE": 2}
    # Unchecked (the call returns None), every point is usable: the metric alone picks.
    for lower_is_better, best in ((True, 1), (False, 3)):
        sweep = run_sweep(
            SOURCE, {"SCALE": [1, 3, 2]}, returns_none, settings(lower_is_better), InProcess(), quiet
        )
        assert sweep.best is not None and sweep.best.defines == {"SCALE": best}


def returns_none(module: ck.Module) -> Callable[[], Any]:
    return lambda: None


def test_a_metric_that_cannot_be_measured_fails_its_point() -> None:
    def unavailable(module: ck.Module) -> float:
        if module.defines["SCALE"] == 2:
            raise ChoreoError.simple("--metric x: ncu did not report x")
        return 1.0

    settings = SweepSettings("add(a, b)", 1, metric=MetricProbe("x", False, unavailable))
    sweep = run_sweep(SOURCE, {"SCALE": [2, 3]}, returns_none, settings, InProcess(), quiet)
    failed, measured = sweep.points
    assert failed.error == "--metric x: ncu did not report x" and failed.timing is None
    assert measured.metric == 1.0 and sweep.best is measured


# ---------------------------------------------------------------------------- shipping


def test_a_shipped_expression_calls_each_points_build_through_helpers() -> None:
    """The tutorial's shape: a helper calls the Choreo function through its globals and fills a shared array."""
    cell = ck.compile(SCALED_ADD, {}, "sim", "cell")
    namespace: dict[str, Any] = {"a": A, "b": B, "out": np.zeros((32, 32), np.float32), "add": cell.add}
    exec("def fill():\n    out[...] = add(a, b)\n", namespace)
    shipped = ShippedExpression("(fill(), out)[1]", namespace, {id(namespace["add"]): PointFunction("add")})
    copy = pickle.loads(pickle.dumps(shipped))  # what a worker gets
    run = copy(ck.compile(SCALED_ADD, {"SCALE": 7}, "sim", "cell"))
    # 7: the point's build ran, through `fill`'s globals; and `out` read by the expression is
    # the array `fill` wrote, not a second copy.
    assert float(run()[0, 0]) == 9.0
    run = copy(ck.compile(SCALED_ADD, {"SCALE": 0}, "sim", "cell"))
    assert float(run()[0, 0]) == 2.0
    assert float(namespace["out"][0, 0]) == 0.0  # the notebook's array was not touched


def test_choreo_objects_travel_as_stand_ins_or_not_at_all() -> None:
    swept = ck.compile(SCALED_ADD, {}, "sim", "cell")
    other_source = SweptSource(SCALED_ADD.replace("add(", "other("), {"SCALE": 5}, "sim", "older")
    other = other_source.compile({})
    namespace = {"a": A, "choreo": swept, "other": other.other, "kept": other}
    stand_ins = {id(swept): PointModule(), id(namespace["other"]): CellFunction(other_source, "other")}
    shipped = ShippedExpression("other(choreo.add(a, a), a)", namespace, stand_ins)
    run = pickle.loads(pickle.dumps(shipped))(ck.compile(SCALED_ADD, {"SCALE": 3}, "sim", "cell"))
    assert float(run()[0, 0]) == 21.0  # (1 * 3 + 1) * 5 + 1: the point's module, the other cell rebuilt
    with pytest.raises(ValueError, match="cannot send kept to the Dask workers: it holds a Choreo module"):
        ShippedExpression("kept.other(a, a)", namespace, stand_ins)


def test_a_value_that_cannot_travel_is_named() -> None:
    namespace = {"a": A, "lock": threading.Lock()}
    with pytest.raises(
        ValueError, match=r"cannot send lock to the Dask workers: cannot pickle '_thread\.lock'"
    ):
        ShippedExpression("a if lock else None", namespace, {})
