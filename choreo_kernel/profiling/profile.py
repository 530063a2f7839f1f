"""A profile of one call: each of its kernels as `%profile` shows it, and optionally its Choreo lines.

Two uses: `profile` collects ncu's Speed Of Light, launch, occupancy and warp-state sections with
the roofline's counters and keeps the report; `measure_metric` collects one metric (for `%sweep
--metric`) and throws the report away.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from choreo_kernel.profiling.assembly import parse_sass, sass_of
from choreo_kernel.profiling.call import Call, ProfileFailed, record
from choreo_kernel.profiling.lines import SourceMap
from choreo_kernel.profiling.ncu import KernelMetrics, parse_source_page
from choreo_kernel.profiling.report import (
    DURATION,
    METRICS,
    SECTIONS,
    KernelProfile,
    LineSamples,
    ListingMismatch,
    line_samples,
)
from choreo_kernel.profiling.tools import ToolFailed, ToolMissing

__all__ = ["Call", "Profile", "ProfileFailed", "measure_metric", "metric_name", "profile"]


@dataclass
class Profile:
    """What `%profile` shows and leaves in `_profile`."""

    label: str  # the call, with the defines it was compiled with when they were overridden
    report: Path  # the full ncu report, for Nsight Compute's GUI
    kernels: list[KernelProfile]
    lines: dict[str, list[LineSamples]] = field(default_factory=dict)  # kernel -> its Choreo lines (--source)
    lines_note: str = ""  # why `lines` is empty although they were asked for


def profile(
    call: Call, kernels: Sequence[str], report: Path, label: str, source_lines: bool = False
) -> Profile:
    """Profile `call` under ncu; with `source_lines`, add up its warp samples per Choreo line."""
    recording = record(call, kernels, report, METRICS, SECTIONS, source_page=source_lines)
    result = Profile(label, recording.report, [KernelProfile(launch) for launch in recording.launches])
    if source_lines:
        try:
            sass = parse_sass(sass_of(recording.cubin.read_bytes()))
            source_map = SourceMap(recording.cuda_source, call.source)
            for name, instructions in parse_source_page(recording.source_page).items():
                result.lines[name] = line_samples(instructions, sass.get(name, []), source_map)
        except (ToolMissing, ToolFailed, ListingMismatch, OSError) as error:
            result.lines_note = f"--source: {error}"
    return result


def metric_name(name: str) -> str:
    """A full ncu metric name: `sm__throughput` is its %-of-peak, `gpu__time_duration` its sum."""
    if "." in name:
        return name
    return f"{name}.avg.pct_of_peak_sustained_elapsed" if name.endswith("throughput") else f"{name}.sum"


def lower_is_better(metric: str) -> bool:
    """Durations and cycle counts rank lowest first; throughputs, rates and shares highest first."""
    return any(word in metric for word in ("duration", "cycles_elapsed", "cycles_active"))


def measure_metric(call: Call, kernels: Sequence[str], metric: str) -> float:
    """`metric` of one call: summed over its launches, or their average weighted by time for a share or rate."""
    with tempfile.TemporaryDirectory(prefix="choreo-metric-") as folder:
        launches = record(call, kernels, Path(folder) / "metric.ncu-rep", (DURATION, metric)).launches
    return combine(launches, metric)


def combine(launches: list[KernelMetrics], metric: str) -> float:
    values = [(launch.number(metric), launch.number(DURATION) or 0.0) for launch in launches]
    if not values or any(value is None for value, _ in values):
        raise ProfileFailed(f"ncu did not report {metric} (is it a metric of this GPU? ncu --query-metrics)")
    numbers = [(value or 0.0, seconds) for value, seconds in values]
    if not any(word in metric for word in ("pct", "per_second", "ratio")):
        return sum(value for value, _ in numbers)
    total = sum(seconds for _, seconds in numbers)
    return sum(value * seconds for value, seconds in numbers) / total if total else numbers[0][0]
