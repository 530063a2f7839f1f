"""What one profiled launch says about why it is slow: throughputs, occupancy, resources, stalls, roofline.

The percentages are ncu's own "% of peak sustained" (Speed Of Light): the SM's busiest unit,
the tensor pipe, L2 and DRAM, each over the kernel's elapsed time. Stall reasons come from
ncu's warp sampling: every few thousand cycles each SM sub-partition records what one of its
warps is doing, so a reason's share of the samples is its share of the warps' time. "selected"
(issuing an instruction) is a sample of work, not a stall, and is left out of the top reasons.
Per Choreo line, the samples of each SASS instruction are added up under the line that
nvdisasm says the instruction came from (`SourceMap`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from choreo_kernel.profiling.assembly import AssemblyLine, choreo_line_of
from choreo_kernel.profiling.lines import SourceMap
from choreo_kernel.profiling.ncu import KernelMetrics, SampledInstruction
from choreo_kernel.profiling.roofline import METRICS as ROOFLINE_METRICS
from choreo_kernel.profiling.roofline import RooflinePoint, roofline_point


@dataclass(frozen=True)
class StallReason:
    key: str  # smsp__pcsamp_warps_issue_stalled_<key>
    column: str  # its column on ncu's source page, "" where the page has none
    meaning: str

    @property
    def label(self) -> str:
        return self.key.replace("_", " ")


STALL_REASONS = (
    StallReason(
        "barrier", "stall_barrier", "waiting at a barrier: __syncthreads, a named barrier, wgmma's wait_group"
    ),
    StallReason(
        "long_scoreboard", "stall_long_sb", "waiting for global or local memory, or an mbarrier's test"
    ),
    StallReason(
        "short_scoreboard", "stall_short_sb", "waiting for shared memory or a special-function result"
    ),
    StallReason("wait", "stall_wait", "a fixed-latency dependency on the previous instructions"),
    StallReason("math_pipe_throttle", "stall_math", "the math pipe it needs is busy"),
    StallReason("mio_throttle", "stall_mio", "the memory input/output queue (shared memory) is full"),
    StallReason("lg_throttle", "stall_lg", "the local/global memory queue is full"),
    StallReason("tex_throttle", "stall_tex", "the texture unit's queue is full"),
    StallReason("dispatch_stall", "stall_dispatch", "picked, but the dispatcher could not issue"),
    StallReason("drain", "stall_drain", "waiting for its memory writes to drain before exiting"),
    StallReason("branch_resolving", "stall_branch_resolving", "waiting for a branch target"),
    StallReason("no_instructions", "stall_no_inst", "no instruction fetched yet (instruction cache)"),
    StallReason("imc_miss", "stall_imc", "waiting for the constant cache"),
    StallReason("membar", "stall_membar", "waiting at a memory fence"),
    StallReason("sleeping", "stall_sleep", "sleeping (nanosleep, or all threads of the warp blocked)"),
    StallReason("misc", "stall_misc", "another reason"),
    StallReason("gmma", "", "waiting for a wgmma to release its registers"),
    StallReason("warpgroup_arrive", "", "waiting at wgmma's fence (warpgroup.arrive)"),
    StallReason("not_selected", "stall_not_selected", "ready, but another warp issued"),
    StallReason("selected", "stall_selected", "issuing an instruction (not a stall)"),
)
ISSUING = "selected"
SAMPLES = "smsp__pcsamp_sample_count"
STALL_METRIC = "smsp__pcsamp_warps_issue_stalled_"
BY_COLUMN = {reason.column: reason for reason in STALL_REASONS if reason.column}

# The table's columns, by the metric each reads (ncu's Speed Of Light and launch statistics).
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
TENSOR = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
L2 = "lts__throughput.avg.pct_of_peak_sustained_elapsed"
DRAM = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
REGISTERS = "launch__registers_per_thread"
SHARED = ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")
DURATION = "gpu__time_duration.sum"
# ncu sections whose metrics the profile reads (warp sampling per instruction comes with SourceCounters).
SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats", "SourceCounters")
METRICS = tuple(
    dict.fromkeys((DURATION, SM, TENSOR, L2, DRAM, OCCUPANCY, REGISTERS, *SHARED, *ROOFLINE_METRICS))
)


@dataclass(frozen=True)
class KernelProfile:
    """One launch as `%profile` shows it; None where ncu did not report a number."""

    metrics: KernelMetrics  # everything ncu reported for the launch

    @property
    def kernel(self) -> str:
        return self.metrics.name

    @property
    def seconds(self) -> float | None:
        return self.metrics.number(DURATION)

    @property
    def sm_percent(self) -> float | None:
        return self.metrics.number(SM)

    @property
    def tensor_percent(self) -> float | None:
        return self.metrics.number(TENSOR)

    @property
    def l2_percent(self) -> float | None:
        return self.metrics.number(L2)

    @property
    def dram_percent(self) -> float | None:
        return self.metrics.number(DRAM)

    @property
    def occupancy_percent(self) -> float | None:
        return self.metrics.number(OCCUPANCY)

    @property
    def registers(self) -> int | None:
        value = self.metrics.number(REGISTERS)
        return None if value is None else int(value)

    @property
    def shared_bytes(self) -> int | None:
        values = [self.metrics.number(name) for name in SHARED]
        return None if all(value is None for value in values) else int(sum(value or 0 for value in values))

    @property
    def samples(self) -> int:
        return int(self.metrics.number(SAMPLES) or 0)

    @property
    def stalls(self) -> list[tuple[StallReason, int]]:
        """Warp samples per reason, most first (issuing included); empty without warp sampling."""
        counts = [
            (reason, int(self.metrics.number(STALL_METRIC + reason.key) or 0)) for reason in STALL_REASONS
        ]
        return sorted((pair for pair in counts if pair[1]), key=lambda pair: -pair[1])

    def top_stalls(self, count: int = 3) -> list[tuple[StallReason, float]]:
        """The `count` reasons most warps were stalled for, each with its share of all samples."""
        total = self.samples
        stalled = [(reason, samples / total) for reason, samples in self.stalls if reason.key != ISSUING]
        return stalled[:count] if total else []

    @property
    def roofline(self) -> RooflinePoint | None:
        return roofline_point(self.metrics)


@dataclass(frozen=True)
class LineSamples:
    """The warp samples of the instructions of one Choreo line (None: no statement, as kernel set-up)."""

    line: int | None
    text: str
    samples: int
    stalls: dict[str, int]  # reason key -> samples

    def top_stalls(self, count: int = 2) -> list[tuple[str, int]]:
        ranked = sorted(
            ((key, n) for key, n in self.stalls.items() if n and key != ISSUING), key=lambda kv: -kv[1]
        )
        return ranked[:count]


class ListingMismatch(Exception):
    """ncu's SASS of a launch is not the code nvdisasm read: the cubin on disk is not the one profiled."""


def line_samples(
    instructions: list[SampledInstruction], sass: list[AssemblyLine], source_map: SourceMap
) -> list[LineSamples]:
    """The samples of a launch added up per Choreo line, most first.

    ncu gives absolute addresses; the function starts at the lowest, which is nvdisasm's offset 0.
    Both list the same instructions or the join is refused: every opcode is compared.
    """
    code = {line.offset: line for line in sass if line.offset is not None}
    if not instructions or len(code) != len(instructions):
        raise ListingMismatch(f"ncu profiled {len(instructions)} instructions, the cubin has {len(code)}")
    start = min(instruction.address for instruction in instructions)
    samples: Counter[int | None] = Counter()
    stalls: dict[int | None, Counter[str]] = {}
    for instruction in instructions:
        line = code.get(instruction.address - start)
        if line is None or _opcode(instruction.text) != _opcode(line.code):
            raise ListingMismatch(f"at offset {instruction.address - start:#x} ncu has {instruction.text!r}")
        choreo = choreo_line_of(line.location, source_map)
        samples[choreo] += instruction.samples
        reasons = stalls.setdefault(choreo, Counter())
        for column, count in instruction.stalls.items():
            if column in BY_COLUMN:
                reasons[BY_COLUMN[column].key] += count
    return [
        LineSamples(line, source_map.text(line) if line else "", count, dict(stalls[line]))
        for line, count in samples.most_common()
    ]


def _opcode(text: str) -> str:
    """`HGMMA.64x256x16.F32` of `@P0 HGMMA.64x256x16.F32 R24, ...`: what both listings spell alike
    (their operands differ: ncu writes branch targets as addresses, nvdisasm as labels)."""
    words = text.rstrip("; ").split()
    return words[1] if words and words[0].startswith("@") and len(words) > 1 else (words[0] if words else "")
