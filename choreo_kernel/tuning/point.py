"""One point of a sweep: compile the program with the point's defines, run, check, time.

`measure_point` is a plain function of picklable arguments, so the same job runs in the
notebook's process and on a Dask worker; whatever it needs from its caller (how to call the
point's build, the reference result) comes in as an argument, and what it returns is data.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from choreo_kernel import module as choreo_module
from choreo_kernel.compiler.devicecode import DevicePart
from choreo_kernel.compiler.diagnostics import ChoreoError
from choreo_kernel.tuning.timing import Timing, Work, current_device, measure

# NumPy is imported where it is used: the kernel imports this module at start-up, and most
# sessions never sweep.
if TYPE_CHECKING:
    import numpy as np

# Given the point's build, the call to time (it returns the result to check, or None).
Bind = Callable[[choreo_module.Module], Callable[[], Any]]

# Two points timed at once on one device would each measure the other: a process (a Dask
# worker with several threads, say) runs one point at a time.
_ONE_POINT_AT_A_TIME = threading.Lock()


@dataclass(frozen=True)
class SweptSource:
    """What every point compiles: a source, the defines it always gets, its target and file name."""

    source: str
    defines: dict[str, object]
    target: str
    filename: str
    device_code: tuple[DevicePart, ...] = ()  # the device functions of the notebook's earlier cells
    host_code: bool = True  # a file's text outside functions is host code; a cell's is an error

    def compile(self, defines: Mapping[str, object]) -> choreo_module.Module:
        return choreo_module.compile(
            self.source,
            {**self.defines, **defines},
            self.target,
            self.filename,
            host_code=self.host_code,
            device_code=self.device_code,
        )


@dataclass
class Point:
    """One point of a sweep: its defines, and its timing or why it has none."""

    defines: dict[str, object]
    timing: Timing | None = None
    error: str | None = None  # why the point did not compile or run
    difference: str | None = None  # how its result differs from the reference's
    worker: str | None = None  # the Dask worker that ran it; None in this process
    metric: float | None = None  # the profiled metric of `SweepSettings.metric`

    @property
    def label(self) -> str:
        return " ".join(f"{name}={value}" for name, value in self.defines.items())

    @property
    def usable(self) -> bool:
        return self.timing is not None and self.difference is None


@dataclass(frozen=True)
class MetricProbe:
    """A metric measured on each point's build (Nsight Compute's, for `%sweep --metric`), and which way
    is better; `measure` raises ChoreoError when it cannot, which fails the point."""

    name: str
    lower_is_better: bool
    measure: Callable[[choreo_module.Module], float]


@dataclass(frozen=True)
class SweepSettings:
    """How every point is timed and checked; `label` names the timed call in each Timing. With a
    `metric`, each point is also measured by it and the sweep ranks by it instead of by time."""

    label: str
    repeats: int
    work: Work | None = None
    rtol: float = 1e-2
    atol: float = 1e-2
    metric: MetricProbe | None = None


@dataclass(frozen=True)
class Check:
    """The reference point's result, which every later point must match; None: nothing to compare."""

    reference: np.ndarray | None
    rtol: float
    atol: float


class Measured(NamedTuple):
    """A point, and its result when it ran as the reference (the later points are checked against it)."""

    point: Point
    value: np.ndarray | None


def measure_point(
    source: SweptSource,
    defines: dict[str, object],
    bind: Bind,
    settings: SweepSettings,
    check: Check | None,
    stage: Callable[[str], None] | None = None,
    keep_on_device: bool = False,
) -> Measured:
    """Compile, run once (untimed: loading the binary; its result is checked), then time `settings.repeats`
    runs and measure `settings.metric`, if any. `keep_on_device`: a result in GPU memory is kept and
    checked there (a runner in the process that holds the reference), not copied to the host.

    With `check` None this point is the reference and its result comes back; otherwise the
    result is compared with `check.reference` and only the verdict comes back. A `ChoreoError`
    (the program, its launch, a wait that timed out) fails the point, not the sweep.
    """
    report = stage or (lambda text: None)
    point = Point(dict(defines))
    with _ONE_POINT_AT_A_TIME:
        try:
            report("compiling")
            module = source.compile(defines)
            run = bind(module)
            report(f"running {settings.label}")
            value = result_copy(run(), keep_on_device)
            device = current_device(module.target == "cuda")
            seconds = measure(run, settings.repeats, device)
            if settings.metric is not None:
                report(f"profiling {settings.metric.name}")
                point.metric = settings.metric.measure(module)
        except ChoreoError as error:
            point.error = first_line(error)
            return Measured(point, None)
    point.timing = Timing(settings.label, seconds, device, settings.work)
    if check is None:
        return Measured(point, value)
    if check.reference is not None:
        point.difference = difference(value, check.reference, check.rtol, check.atol)
    return Measured(point, None)


def result_copy(value: Any, keep_on_device: bool = False) -> Any:
    """A copy of a result (a later point may overwrite the same array in place): NumPy, or with
    `keep_on_device` a CuPy copy of a result in GPU memory, so that checking a large GEMM's output costs
    neither a copy to the host nor a NumPy pass over it (seconds a point at 16384 x 16384)."""
    import numpy as np

    if value is None:
        return None
    on_device = getattr(value, "device_copy", None)  # autotune.WrittenArguments
    if keep_on_device and on_device is not None and (copied := on_device()) is not None:
        return copied
    if hasattr(value, "__cuda_array_interface__"):
        if keep_on_device:
            import cupy  # type: ignore[import-not-found]

            return cupy.array(value, copy=True)
        value = value.get()
    return np.array(value, copy=True)


def difference(value: Any, reference: Any, rtol: float, atol: float) -> str | None:
    """None when `value` matches `reference` within the tolerance, else how it differs; on the GPU where
    either is there."""
    import numpy as np

    if value is None:
        return "returned None, the first point returned an array"
    if value.shape != reference.shape:
        return f"shape {value.shape}, the first point's is {reference.shape}"
    xp: Any = np
    if hasattr(value, "__cuda_array_interface__") or hasattr(reference, "__cuda_array_interface__"):
        import cupy

        xp, value, reference = cupy, cupy.asarray(value), cupy.asarray(reference)
    with np.errstate(invalid="ignore"):
        close = xp.isclose(value.astype(xp.float64), reference.astype(xp.float64), rtol=rtol, atol=atol)
    wrong = int(close.size - int(xp.count_nonzero(close)))
    return None if wrong == 0 else f"{wrong} of {close.size} values differ from the first point's"


def first_line(error: ChoreoError) -> str:
    if error.diagnostics:
        return error.diagnostics[0].message
    return str(error).strip().splitlines()[0]
