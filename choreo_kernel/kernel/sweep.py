"""`%sweep` in a notebook: how a point's build reaches the expression, and the table and plot of a sweep.

The sweep itself (choreo_kernel/tuning) compiles the last Choreo cell once per point, exactly
as it was compiled (its source, the macros of earlier cells, its `-D` options, its target)
with the point's defines on top. In this process the point's functions are published under
their usual names, so the expression, and any helper it calls, calls the point's build;
afterwards the cell's own build is back. On a Dask cluster the expression and the values it
names travel to the workers instead (tuning/shipping.py). The
first point's result is the reference: a point whose result differs has a bug, not a speed,
so it is flagged and never chosen as the best. Only GPU timings rank the points: on the sim
backend they are CPU times of the NumPy interpreter, which say nothing about a GPU, so a sim
sweep checks the points and shows their times but recommends none.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from html import escape
from typing import Any

from IPython.display import Image, display

from choreo_kernel.kernel.session import ChoreoSession, CompiledFunction
from choreo_kernel.kernel.tables import table_bundle
from choreo_kernel.module import Module
from choreo_kernel.tuning.point import Bind, Point
from choreo_kernel.tuning.shipping import CellFunction, PointFunction, PointModule, ShippedExpression, StandIn
from choreo_kernel.tuning.sweep import InProcess, Sweep
from choreo_kernel.tuning.timing import format_seconds, rate_unit


def notebook_bind(session: ChoreoSession, code: Any) -> Bind:
    """Each point's functions (and `choreo`) published in the notebook; the call evaluates `code` there."""
    namespace = session.shell.user_ns

    def bind(module: Module) -> Callable[[], Any]:
        session.shell.push(
            {**{name: CompiledFunction(module, name) for name in module.functions}, "choreo": module}
        )
        return lambda: eval(code, namespace)

    return bind


def shipped_bind(session: ChoreoSession, expression: str) -> ShippedExpression:
    """The expression and its values for Dask workers: the last cell's functions (and `choreo`) stand
    for each point's build, the functions of earlier cells are built again from their cells."""
    assert session.module is not None
    swept = set(session.module.functions)
    stand_ins: dict[int, StandIn] = {id(session.module): PointModule()}
    for name, function in session.functions.items():
        source = session.function_sources[name]
        stand_ins[id(function)] = PointFunction(name) if name in swept else CellFunction(source, name)
    return ShippedExpression(expression, session.shell.user_ns, stand_ins)


def restore(session: ChoreoSession) -> None:
    """The functions of the cells as they ran, after a sweep published its points' builds."""
    session.shell.push({**session.functions, "choreo": session.module})


# ---------------------------------------------------------------------------- showing


def sweep_table(sweep: Sweep) -> dict[str, str]:
    """One row per point; ranked by a metric, a column holds it; on a cluster, a column says which
    worker measured it."""
    names = list(sweep.points[0].defines) if sweep.points else []
    rate_header = _rate_unit(sweep)
    on_workers = any(point.worker for point in sweep.points)
    headers = [*names, "median", "min", "max", *([rate_header[0]] if rate_header else []), "% peak"]
    headers += [*([sweep.metric.name] if sweep.metric else []), *(["worker"] if on_workers else []), "check"]
    rows, flagged = [], set()
    for index, point in enumerate(sweep.points):
        cells = [str(point.defines[name]) for name in names]
        timing = point.timing
        if timing is None:
            cells += ["—"] * (len(headers) - len(cells) - 1 - on_workers)
            cells += [*([point.worker or "—"] if on_workers else []), f"error: {point.error}"]
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
        if sweep.metric:
            cells.append("—" if point.metric is None else f"{point.metric:.4g}")
        if on_workers:
            cells.append(point.worker or "—")
        if point.difference:
            flagged.add(index)
        cells.append(_check_text(sweep, index, point))
        rows.append(cells)
    return table_bundle(headers, rows, flagged, sweep_title(sweep))


def sweep_title(sweep: Sweep) -> str:
    return f"sweep of {sweep.name}" + ("" if sweep.where == InProcess.where else f" {sweep.where}")


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
    legend = "green: best" if sweep.ranked else "CPU times of the sim: no ranking"
    axes.set_title(f"{sweep_title(sweep)} ({legend}; red: failed or differs)", fontsize=9)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def progress_bundle(title: str, done: int, total: int, text: str) -> dict[str, str]:
    """A progress bar (HTML `<progress>`, so no widget library is needed) over the latest step."""
    line = f"{title}: {done}/{total} done · {text}"
    return {
        "text/plain": line,
        "text/html": f"<progress value='{done}' max='{total}'></progress> <code>{escape(line)}</code>",
    }


def show_sweep(result: Sweep) -> None:
    """The table, the plot, and the best point as `#define` lines to paste into the cell."""
    display(sweep_table(result), raw=True)
    display(Image(plot_png(result), format="png"))
    if not result.ranked:
        print(
            "not ranked: on the sim backend these are the NumPy interpreter's times on the CPU, which "
            "say nothing about a GPU; run the sweep on a GPU (the cuda target) to find the best point"
        )
        return
    best = result.best
    if best is None or best.timing is None:
        print("no point ran and agreed with the first point: nothing to recommend")
        return
    rate = f", {best.timing.rate_text()}" if best.timing.rate is not None else ""
    metric = f", {result.metric.name} {best.metric:.4g}" if result.metric and best.metric is not None else ""
    print(
        f"best: {best.label} (median {format_seconds(best.timing.median)}{rate}{metric}); paste into the cell:"
    )
    print(result.defines_text())
