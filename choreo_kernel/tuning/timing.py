"""Timing one Python expression for `%bench` and `%sweep`, and what the numbers mean on this device.

On a GPU each run sits between two CUDA events, so a time is the stream's, not the host's
guess at it; on the sim backend the clock is the wall clock, which times NumPy on the CPU
and says nothing about a GPU. A rate needs the work done, given (`--flops`, `--bytes`) or
read off the arrays a call passes and returns; its share of the device's peak needs the
device, so unknown devices get no percentage rather than a wrong one.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# (name pattern, dense fp16 tensor-core FLOP/s, DRAM bytes/s), most specific first: datasheet peaks.
PEAKS: tuple[tuple[str, float, float], ...] = (
    (r"\bH200 NVL\b", 835e12, 4.8e12),
    (r"\bH200\b", 989e12, 4.8e12),
    (r"\bH100 NVL\b", 835e12, 3.9e12),
    (r"\bH100 PCIe\b", 756e12, 2.0e12),
    (r"\bH100\b", 989e12, 3.35e12),
)
FLOPS = "FLOP"
BYTES = "B"


@dataclass(frozen=True)
class Device:
    """Where a timing ran, with its peaks when this table knows the device."""

    name: str
    peak_flops: float | None = None
    peak_bytes: float | None = None

    @property
    def is_gpu(self) -> bool:
        return self.name != SIM_DEVICE.name


SIM_DEVICE = Device("sim backend (CPU)")


def device_named(name: str) -> Device:
    for pattern, flops, bandwidth in PEAKS:
        if re.search(pattern, name):
            return Device(name, flops, bandwidth)
    return Device(name)


def current_device(on_gpu: bool) -> Device:
    """The current CUDA device, or the sim backend when Choreo functions run on the CPU."""
    if not on_gpu:
        return SIM_DEVICE
    import cupy  # type: ignore[import-not-found]

    properties = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = properties["name"]
    return device_named(name.decode() if isinstance(name, bytes) else str(name))


@dataclass(frozen=True)
class Work:
    """What one run does: floating-point operations (FLOP) or bytes moved (B)."""

    amount: float
    unit: str


def wall_clock_seconds(run: Callable[[], object], repeats: int) -> list[float]:
    """Seconds per run by the host's clock, `repeats` times (also the benchmarks' clock for CPU work)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def measure(run: Callable[[], object], repeats: int, device: Device) -> list[float]:
    """Seconds per run, `repeats` times; the caller warms up (compiling, loading) first. On the GPU the runs
    are queued back to back, each between two CUDA events, and the host waits once at the end: waiting
    after each run would leave the GPU idle while the host launches the next, and every time would
    include that launch (about 0.1 ms for a short GEMM, as long as the kernel itself)."""
    if not device.is_gpu:
        return wall_clock_seconds(run, repeats)
    import cupy

    events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(repeats)]
    for start_event, end_event in events:
        start_event.record()
        run()
        end_event.record()
    events[-1][1].synchronize()
    return [cupy.cuda.get_elapsed_time(start, end) / 1e3 for start, end in events]


@dataclass(frozen=True)
class Timing:
    """The times of one expression: `median`, spread (`minimum`, `maximum`), and the rate they imply."""

    expression: str
    seconds: list[float]
    device: Device
    work: Work | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def minimum(self) -> float:
        return min(self.seconds)

    @property
    def maximum(self) -> float:
        return max(self.seconds)

    @property
    def clock(self) -> str:
        return "CUDA events" if self.device.is_gpu else "wall clock"

    @property
    def rate(self) -> float | None:
        """FLOP/s or bytes/s at the median time."""
        return self.work.amount / self.median if self.work and self.median > 0 else None

    @property
    def percent_of_peak(self) -> float | None:
        if self.rate is None or self.work is None:
            return None
        peak = self.device.peak_flops if self.work.unit == FLOPS else self.device.peak_bytes
        return 100 * self.rate / peak if peak else None

    def rate_text(self) -> str:
        return "" if self.rate is None or self.work is None else format_rate(self.rate, self.work.unit)

    def __str__(self) -> str:
        spread = f"min {format_seconds(self.minimum)}, max {format_seconds(self.maximum)}"
        text = (
            f"{self.expression}: median {format_seconds(self.median)} over {len(self.seconds)} runs "
            f"({spread}; {self.clock}, {self.device.name})"
        )
        if self.rate is not None:
            text += f" · {self.rate_text()}"
        if self.percent_of_peak is not None:
            text += f" · {self.percent_of_peak:.0f}% of peak"
        return text

    def __repr__(self) -> str:
        return f"<Timing {self}>"


def format_seconds(seconds: float) -> str:
    """1.23 s, 4.56 ms, 789 µs: three significant digits in the unit that fits."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def rate_unit(rate: float, unit: str) -> tuple[str, float]:
    """The unit to show a rate in and its scale: TFLOP/s from 1 TFLOP/s up, else GFLOP/s; GB/s for bytes."""
    if unit == FLOPS:
        return ("TFLOP/s", 1e12) if rate >= 1e12 else ("GFLOP/s", 1e9)
    return "GB/s", 1e9


def format_rate(rate: float, unit: str) -> str:
    name, scale = rate_unit(rate, unit)
    return f"{rate / scale:.4g} {name}"


def array_bytes(values: list[Any]) -> int:
    """Bytes of the arrays among `values` (anything with `nbytes`: NumPy, CuPy, ...)."""
    return sum(int(value.nbytes) for value in values if hasattr(value, "nbytes"))
