"""One call of a Choreo function, made once in a child process under Nsight Compute.

The notebook's own process is never profiled: the call's arguments are saved (device arrays
copied to the host) with the function's source and defines, and `python -m
choreo_kernel.profiling.child` compiles the source again for cuda (the CUDA backend's disk cache
makes that quick), makes the call and exits. ncu profiles only the function's own kernels and
writes its report; the child also leaves the emitted CUDA beside it, so that the report can
import it (Nsight's source view) and the SASS can be mapped back to Choreo lines.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from choreo_kernel.profiling.ncu import KernelMetrics, import_command, kernel_filter, parse_raw_page
from choreo_kernel.profiling.tools import require

PROFILE_TIMEOUT_S = 900  # ncu replays each kernel a dozen times or more
NCU_INSTALL = "install Nsight Compute; it comes with the CUDA toolkit"
CHILD_ERROR = "choreo profile: "  # how the child's own error lines start
SPEC = "call.pickle"
RESULT = "result.json"


@dataclass(frozen=True)
class Call:
    """What the child needs: the module's source and defines, the function and its arguments (host copies)."""

    source: str
    defines: dict[str, object]
    filename: str
    function: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def host_value(value: Any) -> Any:
    """A value the child can load: device arrays (CuPy, or anything with __cuda_array_interface__) as NumPy."""
    if hasattr(value, "__cuda_array_interface__"):
        import cupy  # type: ignore[import-not-found]

        return cupy.asnumpy(cupy.asarray(value))
    return value


class ProfileFailed(Exception):
    """ncu or the call under it failed; the message says what the user can act on."""


@dataclass(frozen=True)
class Recording:
    """What one run under ncu left: the report, each launch's metrics, and what the child compiled."""

    report: Path
    launches: list[KernelMetrics]
    cubin: Path  # the cubin the child loaded (the CUDA backend's disk cache)
    cuda_source: str  # the CUDA it emitted, which the cubin's line info numbers
    source_page: str  # ncu's SASS page with warp samples, "" unless asked for


def record(
    call: Call,
    kernels: Sequence[str],
    report: Path,
    metrics: Sequence[str],
    sections: Sequence[str] = (),
    source_page: bool = False,
) -> Recording:
    """Run `call` under ncu, profiling `kernels` for `metrics` and `sections`; the report goes to `report`."""
    ncu = require("ncu", "%profile", NCU_INSTALL)
    if not kernels:
        raise ProfileFailed(f"{call.function}() launches no kernel: there is nothing to profile")
    report.parent.mkdir(parents=True, exist_ok=True)
    report.unlink(missing_ok=True)  # an earlier report must not pass for this run's
    with tempfile.TemporaryDirectory(prefix="choreo-profile-") as folder:
        work = Path(folder)
        (work / SPEC).write_bytes(pickle.dumps(call))
        command = [
            str(ncu),
            "--export",
            str(report),
            "--force-overwrite",
            "--kernel-name",
            kernel_filter(list(kernels)),
            *(option for section in sections for option in ("--section", section)),
            "--metrics",
            ",".join(metrics),
            "--import-source",
            "yes",
            "--source-folders",
            str(work),
            sys.executable,
            "-m",
            "choreo_kernel.profiling.child",
            str(work / SPEC),
        ]
        done = _run(command, f"{call.function}()")
        if not (work / RESULT).exists():  # the child failed, and ncu did not pass its status on
            raise ProfileFailed(
                f"{call.function}() failed under ncu: {failure_reason(done.stdout + done.stderr)}"
            )
        if not report.exists():
            raise ProfileFailed(
                f"ncu profiled no kernel of {call.function}() (it launches {', '.join(kernels)})"
            )
        result = json.loads((work / RESULT).read_text())
        launches = parse_raw_page(_run(import_command(ncu, report, "raw"), "reading the report").stdout)
        page = _run(import_command(ncu, report, "source"), "reading the report").stdout if source_page else ""
        return Recording(report, launches, Path(result["cubin"]), result["cuda_source"], page)


def _run(command: list[str], what: str) -> subprocess.CompletedProcess[str]:
    """ncu's run; `ProfileFailed` with the line that says why, when it fails."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PROFILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ProfileFailed(f"ncu did not finish {what} in {PROFILE_TIMEOUT_S} s") from None
    if done.returncode != 0:
        raise ProfileFailed(f"ncu failed on {what}: {failure_reason(done.stdout + done.stderr)}")
    return done


def failure_reason(output: str) -> str:
    """The child's own error if it reported one, else ncu's first ==ERROR== line, else the last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    child = [line.removeprefix(CHILD_ERROR) for line in lines if line.startswith(CHILD_ERROR)]
    errors = [line for line in lines if line.startswith("==ERROR==")]
    return (child or errors or lines or ["no output"])[0]
