"""A sweep: every point of a grid of defines through `measure_point`, on a runner, into one `Sweep`.

The first point that runs is the reference: a point whose result differs from it has a bug,
not a speed, so it is flagged and never chosen as the best. Points before the reference run
one at a time (each may become it); once it is known, the rest go to the runner together,
which may run them in parallel.
"""

from __future__ import annotations

import functools
import itertools
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, TypeVar

from choreo_kernel.compiler.diagnostics import DiagnosticSink
from choreo_kernel.compiler.preprocess import preprocess
from choreo_kernel.tuning.point import (
    Bind,
    Check,
    Measured,
    MetricProbe,
    Point,
    SweepSettings,
    SweptSource,
    measure_point,
)
from choreo_kernel.tuning.timing import format_seconds

Grid = dict[str, list[object]]
# (points finished, points in all, what is happening): for a progress display.
Progress = Callable[[int, int, str], None]
T = TypeVar("T")


@dataclass
class Sweep:
    """Every point in grid order; `best` is the fastest point whose result agrees with the reference,
    or, ranked by a metric, the one whose metric is best."""

    name: str
    points: list[Point] = field(default_factory=list)
    unchecked: bool = False  # the reference returned None: there was nothing to compare
    where: str = "in this process"  # where the points ran
    seconds: float = 0.0  # the wall time of the whole sweep
    metric: MetricProbe | None = None  # what the points are ranked by, when not by time

    @property
    def ranked(self) -> bool:
        """Whether anything ranks the configurations: a metric, or GPU timings (the sim's are the
        NumPy interpreter's CPU times, which say nothing about a GPU)."""
        if self.metric is not None:
            return True
        return any(point.timing is not None and point.timing.device.is_gpu for point in self.points)

    @property
    def best(self) -> Point | None:
        """The best point that agrees with the reference; None where nothing ranks the points."""
        if not self.ranked:
            return None
        usable = [point for point in self.points if point.usable]
        if self.metric is None:
            return min(usable, key=_median, default=None)
        measured = [(point.metric, point) for point in usable if point.metric is not None]
        pick = min if self.metric.lower_is_better else max
        return pick(measured, key=lambda pair: pair[0], default=(None, None))[1]

    def defines_text(self) -> str:
        """The best point as `#define` lines, to paste into the source."""
        best = self.best
        return "" if best is None else "\n".join(f"#define {n} {v}" for n, v in best.defines.items())


def _median(point: Point) -> float:
    assert point.timing is not None
    return point.timing.median


def grid_points(grid: Grid) -> list[dict[str, object]]:
    """Every combination, the first name varying slowest (as nested loops in the order written)."""
    names = list(grid)
    return [dict(zip(names, values)) for values in itertools.product(*grid.values())]


def check_source_takes(swept: SweptSource, grid: Grid) -> None:
    """A swept name must reach the program: mentioned in it and not fixed by its own `#define`."""
    probes = {name: f"__choreo_swept_{name}" for name in grid}  # values no source defines itself
    macros = preprocess(swept.source, DiagnosticSink(), {**swept.defines, **probes}).macros
    for name, probe in probes.items():
        if not re.search(rf"\b{re.escape(name)}\b", swept.source):
            raise ValueError(f"{swept.filename} does not use {name}")
        if name not in macros:  # `#undef NAME` after its own #define: the source decides NAME
            raise ValueError(
                f"{swept.filename} undefines {name} ('#undef {name}'), so the value of {name} in it is its own and a "
                f"sweep or a -D value cannot set it: remove the #undef or wrap its '#define {name}' in "
                f"'#ifndef {name}' ... '#endif'"
            )
        if macros[name].body.strip() != probe:
            raise ValueError(
                f"{swept.filename} defines {name} itself, so a sweep or a -D value cannot set it: write "
                f"'#ifndef {name}' ... '#endif' around its #define"
            )


class PointJob(NamedTuple):
    """The arguments of one `measure_point` call (a runner may replace `bind` and `check` by handles)."""

    source: SweptSource
    defines: dict[str, object]
    bind: Bind
    settings: SweepSettings
    check: Check | None


class Runner(Protocol):
    """Where the points of a sweep run."""

    where: str  # for the progress line and the table: "in this process", "on 4 Dask workers"

    def share(self, value: T) -> T:
        """`value` as every job will receive it (sent once to each worker, for a cluster)."""
        ...

    def run(
        self, jobs: Sequence[PointJob], stage: Callable[[int, str], None]
    ) -> Iterator[tuple[int, Measured]]:
        """Each job's index and result, in the order they finish; `stage(index, text)` may report steps."""
        ...


class InProcess:
    """The points one after another in this process, on its GPU or the sim backend."""

    where = "in this process"

    def share(self, value: T) -> T:
        return value

    def run(
        self, jobs: Sequence[PointJob], stage: Callable[[int, str], None]
    ) -> Iterator[tuple[int, Measured]]:
        for index, job in enumerate(jobs):
            yield index, measure_point(*job, stage=functools.partial(stage, index), keep_on_device=True)


def run_sweep(
    swept: SweptSource,
    grid: Grid,
    bind: Bind,
    settings: SweepSettings,
    runner: Runner,
    progress: Progress,
) -> Sweep:
    """Measure every point of `grid` on `runner`; the points come back in grid order."""
    start = time.perf_counter()
    all_defines = grid_points(grid)
    total = len(all_defines)
    points: list[Point | None] = [None] * total
    shared_bind = runner.share(bind)

    def run(indices: list[int], check: Check | None) -> list[Measured]:
        """The points at `indices`, each checked by `check` (None: each may be the reference)."""
        jobs = [PointJob(swept, all_defines[index], shared_bind, settings, check) for index in indices]

        def stage(offset: int, text: str) -> None:
            progress(total - points.count(None), total, f"{_label(jobs[offset].defines)}: {text}")

        results = []
        for offset, measured in runner.run(jobs, stage):
            points[indices[offset]] = measured.point
            progress(total - points.count(None), total, _outcome(measured.point))
            results.append(measured)
        return results

    reference: Measured | None = None
    index = 0
    while reference is None and index < total:
        (measured,) = run([index], None)
        reference = measured if measured.point.error is None else None
        index += 1
    sweep = Sweep(swept.filename, where=runner.where, metric=settings.metric)
    if reference is not None:
        sweep.unchecked = reference.value is None
        if index < total:
            check = Check(reference.value, settings.rtol, settings.atol)
            run(list(range(index, total)), runner.share(check))
    sweep.points = [point for point in points if point is not None]
    assert len(sweep.points) == total
    sweep.seconds = time.perf_counter() - start
    return sweep


def _label(defines: dict[str, object]) -> str:
    return Point(defines).label


def _outcome(point: Point) -> str:
    where = f" on {point.worker}" if point.worker else ""
    if point.timing is None:
        return f"{point.label}{where}: error: {point.error}"
    verdict = f"; DIFFERS: {point.difference}" if point.difference else ""
    return f"{point.label}{where}: median {format_seconds(point.timing.median)}{verdict}"
