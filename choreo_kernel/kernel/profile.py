"""What `%profile` shows: a table per launch, what its stall reasons mean, the roofline, the Choreo lines.

The numbers come from choreo_kernel.profiling (Nsight Compute in a child process); this module
only turns a `Profile` into mime bundles and lines of text.
"""

from __future__ import annotations

from IPython.display import Image, display

from choreo_kernel.kernel.summary import format_bytes
from choreo_kernel.kernel.tables import table_bundle
from choreo_kernel.profiling.profile import Profile
from choreo_kernel.profiling.report import STALL_REASONS, KernelProfile, LineSamples
from choreo_kernel.profiling.roofline import RooflinePoint, plot_png
from choreo_kernel.tuning.timing import device_named, format_seconds

NO_GPU = (
    "%profile runs the call on a GPU under Nsight Compute (ncu), and Choreo runs on the sim backend here "
    "(no CUDA GPU with CuPy, or CHOREO_TARGET=sim): there is nothing to profile"
)
LINES_SHOWN = 10
_MEANING = {reason.key: reason.meaning for reason in STALL_REASONS}
_TENSOR_ROOFS = ("f16 tensor cores", "bf16 tensor cores")  # the datasheet's dense peak is theirs


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}%"


def stalls_text(kernel: KernelProfile) -> str:
    return ", ".join(f"{reason.label} {share:.0%}" for reason, share in kernel.top_stalls()) or "—"


def kernels_bundle(profile: Profile) -> dict[str, str]:
    headers = [
        "kernel",
        "time",
        "SM",
        "tensor pipe",
        "L2",
        "DRAM",
        "occupancy",
        "registers",
        "shared/block",
        "top warp stalls (of samples)",
    ]
    rows = [
        [
            kernel.kernel,
            "—" if kernel.seconds is None else format_seconds(kernel.seconds),
            percent(kernel.sm_percent),
            percent(kernel.tensor_percent),
            percent(kernel.l2_percent),
            percent(kernel.dram_percent),
            percent(kernel.occupancy_percent),
            "—" if kernel.registers is None else str(kernel.registers),
            "—" if kernel.shared_bytes is None else format_bytes(kernel.shared_bytes),
            stalls_text(kernel),
        ]
        for kernel in profile.kernels
    ]
    title = f"profile of {profile.label}: throughputs as % of peak over the kernel's time (ncu)"
    return table_bundle(headers, rows, title=title)


def stall_meanings(profile: Profile) -> str:
    """One line per stall reason the table names: what a warp stalled for it is waiting on."""
    shown = dict.fromkeys(reason.key for kernel in profile.kernels for reason, _ in kernel.top_stalls())
    return "\n".join(f"  {key.replace('_', ' ')}: {_MEANING[key]}" for key in shown)


def roofline_text(kernel: KernelProfile, point: RooflinePoint) -> str:
    """Where a launch sits against its roofs, in words, with where those roofs come from."""
    datasheet = device_named(str(kernel.metrics.values.get("device__attribute_display_name", ""))).peak_flops
    boost = (
        f"; the datasheet's {datasheet / 1e12:.0f} TFLOP/s is at the boost clock"
        if datasheet and point.roof in _TENSOR_ROOFS
        else ""
    )
    return (
        f"{kernel.kernel}: {point.achieved / 1e12:.3g} TFLOP/s at {point.intensity:.0f} FLOP per DRAM byte, "
        f"{point.bound}-bound: {point.share_of_roof:.0%} of its roof ({point.roof} {point.peak_flops / 1e12:.0f} "
        f"TFLOP/s, DRAM {point.peak_bandwidth / 1e12:.2f} TB/s: ncu's peaks for this GPU at the profile's "
        f"{point.sm_clock / 1e9:.2f} GHz SM clock{boost})"
    )


def lines_bundle(kernel: str, lines: list[LineSamples], total: int) -> dict[str, str]:
    """The Choreo lines with the most warp samples in one kernel, each with its two top stalls."""
    headers = ["line", "Choreo source", "samples", "top stalls (of the kernel's samples)"]
    rows = []
    for line in lines[:LINES_SHOWN]:
        shown = [(key, count / total) for key, count in line.top_stalls() if count >= 0.005 * total]
        stalls = ", ".join(f"{key.replace('_', ' ')} {share:.0%}" for key, share in shown)
        where = str(line.line) if line.line is not None else "—"
        text = line.text if line.line is not None else "(kernel set-up and code of no Choreo statement)"
        rows.append([where, text, f"{line.samples / total:.1%}" if total else "0", stalls or "—"])
    return table_bundle(headers, rows, title=f"{kernel}: the Choreo lines its warps were sampled at")


def report_line(profile: Profile) -> str:
    return f"full report: {profile.report} (open it in Nsight Compute: ncu-ui {profile.report})"


def show_profile(profile: Profile) -> None:
    """The table, what its stall reasons mean, the roofline, the Choreo lines (--source), the report's path."""
    display(kernels_bundle(profile), raw=True)
    meanings = stall_meanings(profile)
    if meanings:
        print("what the stall reasons mean:\n" + meanings)
    points = [(kernel, kernel.roofline) for kernel in profile.kernels]
    placed = [(kernel, point) for kernel, point in points if point is not None]
    for kernel, point in placed:
        print(roofline_text(kernel, point))
    if placed:
        display(Image(plot_png([(kernel.kernel, point) for kernel, point in placed]), format="png"))
    for kernel in profile.kernels:
        lines = profile.lines.get(kernel.kernel)
        if lines:
            display(lines_bundle(kernel.kernel, lines, sum(line.samples for line in lines)), raw=True)
    if profile.lines_note:
        print(profile.lines_note)
    print(report_line(profile))
