"""`%sweep`: compile the last Choreo cell once per point of a grid of defines, time an expression, compare.

Each point recompiles the cell exactly as it was compiled (its source, the macros of earlier
cells, its `-D` options, its target) with the point's defines on top, and publishes the
point's functions under their usual names, so the expression calls the point's build. The
first point's result is the reference: a point whose result differs has a bug, not a speed,
so it is flagged and never chosen as the best. Only GPU timings rank the points: on the sim
backend they are CPU times of the NumPy interpreter, which say nothing about a GPU, so a sim
sweep checks the points and shows their times but recommends none. Afterwards the cell's own
build is back.
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import choreo_kernel as ck
from choreo_kernel.compiler.diagnostics import ChoreoError, DiagnosticSink
from choreo_kernel.compiler.preprocess import preprocess
from choreo_kernel.kernel.session import ChoreoSession, CompiledCell, CompiledFunction
from choreo_kernel.kernel.tables import table_bundle
from choreo_kernel.kernel.timing import Device, Timing, Work, format_seconds, measure, rate_unit

# NumPy, like matplotlib, is imported where it is used: the kernel imports this module at
# start-up, and most sessions never sweep.
if TYPE_CHECKING:
    import numpy as np

Grid = dict[str, list[object]]


@dataclass
class Point:
    """One point of the sweep: its defines, and its timing or why it has none."""

    defines: dict[str, object]
    timing: Timing | None = None
    error: str | None = None  # why the point did not compile or run
    difference: str | None = None  # how its result differs from the first point's

    @property
    def label(self) -> str:
        return " ".join(f"{name}={value}" for name, value in self.defines.items())

    @property
    def usable(self) -> bool:
        return self.timing is not None and self.difference is None


@dataclass
class Sweep:
    """Every point in grid order; `best` is the fastest point whose result agrees with the first,
    on a GPU only."""

    cell_name: str
    device: Device
    points: list[Point] = field(default_factory=list)
    unchecked: bool = False  # the expression returned None: there was nothing to compare

    @property
    def ranked(self) -> bool:
        """Whether the timings can rank configurations: only GPU timings can."""
        return self.device.is_gpu

    @property
    def best(self) -> Point | None:
        if not self.ranked:
            return None
        usable = [point for point in self.points if point.usable]
        return min(usable, key=_median, default=None)

    def defines_text(self) -> str:
        """The best point as `#define` lines, to paste into the cell."""
        best = self.best
        return "" if best is None else "\n".join(f"#define {n} {v}" for n, v in best.defines.items())


def _median(point: Point) -> float:
    assert point.timing is not None
    return point.timing.median


def grid_points(grid: Grid) -> list[dict[str, object]]:
    """Every combination, the first name varying slowest (as nested loops in the order written)."""
    names = list(grid)
    return [dict(zip(names, values)) for values in itertools.product(*grid.values())]


def check_cell_takes(cell: CompiledCell, grid: Grid) -> None:
    """A swept name must reach the program: mentioned in the cell and not fixed by its own `#define`."""
    first = grid_points(grid)[0]
    macros = preprocess(cell.source, DiagnosticSink(), {**cell.defines, **first}).macros
    for name, value in first.items():
        if not re.search(rf"\b{re.escape(name)}\b", cell.source):
            raise ValueError(f"the last Choreo cell ({cell.filename}) does not use {name}")
        if macros[name].body.strip() != str(value):
            raise ValueError(
                f"{cell.filename} defines {name} itself, so the sweep cannot set it: write "
                f"'#ifndef {name}' ... '#endif' around its #define"
            )


@dataclass(frozen=True)
class SweepOptions:
    repeats: int
    device: Device
    work: Work | None
    rtol: float
    atol: float


def run_sweep(
    session: ChoreoSession,
    grid: Grid,
    expression: str,
    run: Callable[[], Any],
    options: SweepOptions,
    progress: Callable[[str], None],
) -> Sweep:
    """Compile, check and time every point; the session's own functions are published again at the end."""
    cell = session.last_cell
    assert cell is not None
    sweep = Sweep(cell.filename, options.device)
    reference: np.ndarray | None = None
    points = grid_points(grid)
    try:
        for index, defines in enumerate(points, 1):
            point = Point(defines)
            sweep.points.append(point)
            progress(f"sweep {index}/{len(points)}: {point.label}: compiling")
            try:
                module = ck.compile(
                    cell.source, {**cell.defines, **defines}, cell.target, cell.filename, host_code=False
                )
                session.shell.push({name: CompiledFunction(module, name) for name in module.functions})
                progress(f"sweep {index}/{len(points)}: {point.label}: running {expression}")
                value = host_copy(run())  # also the warm-up: loading the binary is not timed
                seconds = measure(run, options.repeats, options.device)
            except ChoreoError as error:
                point.error = _first_line(error)
                continue
            if value is None:
                sweep.unchecked = True
            elif reference is None:
                reference = value
            else:
                point.difference = difference(value, reference, options.rtol, options.atol)
            point.timing = Timing(expression, seconds, options.device, options.work)
    finally:
        session.shell.push({**session.functions, "choreo": session.module})
    return sweep


def host_copy(value: Any) -> np.ndarray | None:
    """A NumPy copy of a result (a later point may overwrite the same array in place)."""
    import numpy as np

    if value is None:
        return None
    if hasattr(value, "__cuda_array_interface__"):
        value = value.get()
    return np.array(value, copy=True)


def difference(value: np.ndarray, reference: np.ndarray, rtol: float, atol: float) -> str | None:
    """None when `value` matches `reference` within the tolerance, else how it differs."""
    import numpy as np

    if value.shape != reference.shape:
        return f"shape {value.shape}, the first point's is {reference.shape}"
    with np.errstate(invalid="ignore"):
        close = np.isclose(value.astype(np.float64), reference.astype(np.float64), rtol=rtol, atol=atol)
    wrong = int(close.size - np.count_nonzero(close))
    return None if wrong == 0 else f"{wrong} of {close.size} values differ from the first point's"


def _first_line(error: ChoreoError) -> str:
    if error.diagnostics:
        return error.diagnostics[0].message
    return str(error).strip().splitlines()[0]


# ---------------------------------------------------------------------------- showing


def sweep_table(sweep: Sweep) -> dict[str, str]:
    names = list(sweep.points[0].defines) if sweep.points else []
    rate_header = _rate_unit(sweep)
    headers = [*names, "median", "min", "max", *([rate_header[0]] if rate_header else []), "% peak", "check"]
    rows, flagged = [], set()
    for index, point in enumerate(sweep.points):
        cells = [str(point.defines[name]) for name in names]
        timing = point.timing
        if timing is None:
            cells += ["—"] * (len(headers) - len(cells) - 1) + [f"error: {point.error}"]
            flagged.add(index)
            rows.append(cells)
            continue
        cells += [
            format_seconds(timing.median),
            format_seconds(timing.minimum),
            format_seconds(timing.maximum),
        ]
        if rate_header and timing.rate is not None:
            cells.append(f"{timing.rate / rate_header[1]:.4g}")
        peak = timing.percent_of_peak
        cells.append("—" if peak is None else f"{peak:.0f}%")
        if point.difference:
            flagged.add(index)
        cells.append(_check_text(sweep, index, point))
        rows.append(cells)
    return table_bundle(headers, rows, flagged, f"sweep of {sweep.cell_name}")


def _check_text(sweep: Sweep, index: int, point: Point) -> str:
    if point.difference:
        return f"DIFFERS: {point.difference}"
    if sweep.unchecked:
        return "not checked (the expression returned None)"
    first_checked = next(i for i, p in enumerate(sweep.points) if p.timing is not None)
    return "reference" if index == first_checked else "matches"


def _rate_unit(sweep: Sweep) -> tuple[str, float] | None:
    """The unit of the rate column, chosen once from the fastest point so that every row uses it."""
    rates = [p.timing for p in sweep.points if p.timing and p.timing.rate is not None]
    fastest = max(rates, key=lambda timing: timing.rate or 0.0, default=None)
    if fastest is None or fastest.rate is None or fastest.work is None:
        return None
    return rate_unit(fastest.rate, fastest.work.unit)


def plot_png(sweep: Sweep) -> bytes:
    """Bars per point: the rate when the work is known (higher is better), else the median time."""
    import numpy as np
    from matplotlib.figure import Figure

    unit = _rate_unit(sweep)
    figure = Figure(figsize=(max(4.0, 0.9 * len(sweep.points) + 1.5), 3.2), dpi=100)
    axes = figure.add_subplot()
    best = sweep.best
    for position, point in enumerate(sweep.points):
        color = "#16a34a" if point is best else "#2563eb" if point.usable else "#dc2626"
        timing = point.timing
        if timing is None:
            axes.text(position, 0, "failed", ha="center", va="bottom", color=color, fontsize=8)
        elif unit is not None and timing.rate is not None:
            axes.bar(position, timing.rate / unit[1], color=color)
        else:  # times, with the spread of the runs
            spread = [[timing.median - timing.minimum], [timing.maximum - timing.median]]
            axes.bar(position, timing.median * 1e3, color=color)
            axes.errorbar(
                position, timing.median * 1e3, yerr=np.array(spread) * 1e3, fmt="none", ecolor="#374151"
            )
    labels = [point.label.replace(" ", "\n") for point in sweep.points]
    axes.set_xticks(range(len(labels)), labels, fontsize=8)
    axes.set_xlim(-0.6, len(labels) - 0.4)  # room for a failed point, which has no bar
    axes.set_ylabel(f"{unit[0]} (higher is better)" if unit else "median ms (lower is better)")
    legend = "green: best" if sweep.ranked else f"{sweep.device.name} times: no ranking"
    axes.set_title(f"sweep of {sweep.cell_name} ({legend}; red: failed or differs)", fontsize=9)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
