"""A kernel's roofline point, and the roofs it sits under, from the numbers Nsight Compute measured.

The roofs are the device's own peaks as ncu reports them (`<metric>.peak_sustained`, per cycle,
times the clock the profile ran at), not a datasheet: ncu locks the clocks to base by default
(`--clock-control base`; an H200 runs its SMs at about 1.3 GHz then, against 1.98 GHz boost), so
a point and its roofs share one clock. The compute roof is the dense peak of the precision that
did most of the kernel's floating-point work (tensor cores by source type, or f32 FMA on the CUDA
cores); the memory roof is DRAM's bandwidth, and intensity is FLOP per DRAM byte.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from choreo_kernel.profiling.ncu import KernelMetrics

SM_CLOCK = "sm__cycles_elapsed.avg.per_second"
DRAM_CLOCK = "dram__cycles_elapsed.avg.per_second"
DRAM_PEAK = "dram__bytes.sum.peak_sustained"  # bytes per DRAM cycle, all of them
DRAM_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")
DURATION = "gpu__time_duration.sum"


@dataclass(frozen=True)
class ComputeRoof:
    """One kind of floating-point work: the counters that add up to its FLOP, and its dense peak per cycle."""

    label: str
    work: tuple[tuple[str, float], ...]  # (metric, FLOP per count)
    peak: str  # per SM-clock cycle, whole device
    peak_factor: float = 1.0  # FLOP per counted peak unit

    def flops(self, metrics: KernelMetrics) -> float:
        return sum((metrics.number(name) or 0.0) * factor for name, factor in self.work)


_FP32 = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
COMPUTE_ROOFS = (
    ComputeRoof(
        "f16 tensor cores",
        (("sm__ops_path_tensor_src_fp16.sum", 1.0),),
        "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained",
    ),
    ComputeRoof(
        "bf16 tensor cores",
        (("sm__ops_path_tensor_src_bf16_dst_fp32.sum", 1.0),),
        "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained",
    ),
    ComputeRoof(
        "tf32 tensor cores",
        (("sm__ops_path_tensor_src_tf32_dst_fp32.sum", 1.0),),
        "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum.peak_sustained",
    ),
    ComputeRoof(
        "f8 tensor cores",
        (("sm__ops_path_tensor_src_fp8_sparsity_off.sum", 1.0),),
        "sm__ops_path_tensor_src_fp8_sparsity_off.sum.peak_sustained",
    ),
    ComputeRoof(
        "f32 CUDA cores",
        ((_FP32.format("ffma"), 2.0), (_FP32.format("fadd"), 1.0), (_FP32.format("fmul"), 1.0)),
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
        2.0,
    ),
)
METRICS = (
    SM_CLOCK,
    DRAM_CLOCK,
    DRAM_PEAK,
    *DRAM_BYTES,
    DURATION,
    *(name for roof in COMPUTE_ROOFS for name, _ in roof.work),
    *(roof.peak for roof in COMPUTE_ROOFS),
)


@dataclass(frozen=True)
class RooflinePoint:
    """Where one kernel launch sits: its work, its DRAM traffic and time, and the two roofs over it."""

    flops: float
    dram_bytes: float
    seconds: float
    roof: str  # which compute roof: "f16 tensor cores"
    peak_flops: float  # FLOP/s of that roof at the profile's SM clock
    peak_bandwidth: float  # DRAM bytes/s
    sm_clock: float  # Hz
    dram_clock: float

    @property
    def intensity(self) -> float:
        """FLOP per byte of DRAM traffic."""
        return self.flops / self.dram_bytes if self.dram_bytes else float("inf")

    @property
    def achieved(self) -> float:
        """FLOP/s."""
        return self.flops / self.seconds

    @property
    def ridge(self) -> float:
        """The intensity above which the compute roof, not DRAM, bounds a kernel."""
        return self.peak_flops / self.peak_bandwidth

    @property
    def attainable(self) -> float:
        """The roof over this point: FLOP/s the device allows at this intensity."""
        return min(self.peak_flops, self.peak_bandwidth * self.intensity)

    @property
    def share_of_roof(self) -> float:
        return self.achieved / self.attainable

    @property
    def bound(self) -> str:
        return "compute" if self.intensity >= self.ridge else "DRAM bandwidth"


def roofline_point(metrics: KernelMetrics) -> RooflinePoint | None:
    """The launch's point, or None when it did no floating-point work or ncu lacks a number it needs."""
    needed = [metrics.number(name) for name in (SM_CLOCK, DRAM_CLOCK, DRAM_PEAK, DURATION)]
    if any(value is None or value <= 0 for value in needed):
        return None
    sm_clock, dram_clock, dram_peak, seconds = (value or 0.0 for value in needed)
    measured = [(roof.flops(metrics), roof) for roof in COMPUTE_ROOFS if metrics.number(roof.peak)]
    flops = sum(work for work, _ in measured)
    if flops <= 0:
        return None
    _, roof = max(measured, key=lambda pair: pair[0])
    return RooflinePoint(
        flops,
        sum(metrics.number(name) or 0.0 for name in DRAM_BYTES),
        seconds,
        roof.label,
        (metrics.number(roof.peak) or 0.0) * roof.peak_factor * sm_clock,
        dram_peak * dram_clock,
        sm_clock,
        dram_clock,
    )


def plot_png(points: list[tuple[str, RooflinePoint]]) -> bytes:
    """Log-log roofline in TFLOP/s: DRAM's slope, the compute roof of each point's precision, a dot per launch."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    figure = Figure(figsize=(6.4, 4.0), dpi=100)
    axes = figure.add_subplot()
    bandwidth = max(point.peak_bandwidth for _, point in points)
    roofs: dict[str, float] = {}
    for _, point in points:
        roofs[point.roof] = max(roofs.get(point.roof, 0.0), point.peak_flops)
    intensities = [point.intensity for _, point in points if point.dram_bytes]
    ridges = [peak / bandwidth for peak in roofs.values()]
    low, high = min(intensities + ridges) / 8, max(intensities + ridges) * 8
    for label, peak in roofs.items():
        ridge = peak / bandwidth
        axes.plot([low, ridge, high], [bandwidth * low / 1e12, peak / 1e12, peak / 1e12], color="#374151")
        axes.annotate(
            f"{label} {peak / 1e12:.0f} TFLOP/s", (high, peak / 1e12), ha="right", va="bottom", fontsize=8
        )
    axes.annotate(
        f"DRAM {bandwidth / 1e12:.2f} TB/s",
        (low * 1.5, bandwidth * low * 1.5 / 1e12),
        fontsize=8,
        va="bottom",
    )
    for label, point in points:
        x = point.intensity if point.dram_bytes else high
        text = f"{label}: {point.achieved / 1e12:.3g} TFLOP/s, {point.share_of_roof:.0%} of its roof"
        axes.plot([x], [point.achieved / 1e12], "o", label=text)
    axes.set_xscale("log")
    axes.set_yscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    axes.xaxis.set_major_formatter(plain)
    axes.yaxis.set_major_formatter(plain)
    axes.yaxis.set_minor_formatter(plain)  # a roofline spans little more than a decade of FLOP/s
    axes.set_xlabel("FLOP per DRAM byte")
    axes.set_ylabel("TFLOP/s")
    axes.legend(loc="lower right", fontsize=8)
    first = points[0][1]
    axes.set_title(
        f"roofline at the profile's clocks (SM {first.sm_clock / 1e9:.2f} GHz, DRAM {first.dram_clock / 1e9:.2f} GHz)",
        fontsize=9,
    )
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
