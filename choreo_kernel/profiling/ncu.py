"""Nsight Compute's command lines and its CSV pages, read into numbers in base units.

`ncu --csv --page raw` prints one header row of metric names, one row of units and one row per
profiled kernel launch; `--page source --print-source sass` prints, per launch, a "Kernel Name"
row, a header row and one row per SASS instruction with its warp-stall samples. Values may carry
thousands separators, and units a decimal prefix (Kbyte, us, Ghz, Tbyte/s): `to_base` removes
both, so every number the rest of the package reads is in bytes, seconds, hertz or counts.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

# Decimal prefixes, as ncu scales units (Kbyte is 1000 bytes).
_PREFIX = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BASE_UNITS = {"byte", "s", "second", "hz", "cycle", "inst", "warp", "thread", "sector", "request", "block"}


@dataclass(frozen=True)
class KernelMetrics:
    """One profiled launch: its ID in the report, the kernel's name, and each metric in base units."""

    id: int
    name: str
    values: dict[str, float | str]

    def number(self, metric: str) -> float | None:
        value = self.values.get(metric)
        return value if isinstance(value, float) else None


@dataclass(frozen=True)
class SampledInstruction:
    """A SASS instruction of a launch with its warp samples: all of them, and per stall column."""

    address: int
    text: str
    samples: int
    stalls: dict[str, int] = field(default_factory=dict)  # "stall_long_sb" -> samples


def unit_scale(unit: str) -> float:
    """What a value in `unit` is multiplied by to be in base units: 1e-6 for us, 1e3 for Kbyte/s."""
    numerator, _, denominator = unit.partition("/")
    return _prefix_scale(numerator) / (_prefix_scale(denominator) if denominator else 1.0)


def _prefix_scale(word: str) -> float:
    if word.lower() in _BASE_UNITS or len(word) < 2:
        return 1.0
    prefix, rest = word[0], word[1:]
    return _PREFIX.get(prefix, 1.0) if rest.lower() in _BASE_UNITS else 1.0


def to_base(text: str, unit: str) -> float | str:
    """A value of the raw page as a number in base units, or the text itself when it is not a number."""
    cleaned = text.replace(",", "").strip()
    try:
        value = float(cleaned)
    except ValueError:
        return text
    return value * unit_scale(unit)


def csv_rows(text: str) -> list[list[str]]:
    """The CSV rows of ncu's output, without the ==PROF== and ==WARNING== lines it mixes in."""
    return list(csv.reader(line for line in text.splitlines() if line.startswith('"')))


def parse_raw_page(text: str) -> list[KernelMetrics]:
    """Every launch of `ncu --import R --csv --page raw`, in the report's order."""
    rows = csv_rows(text)
    if len(rows) < 2:
        return []
    names, units, *launches = rows
    kernels = []
    for row in launches:
        values = {name: to_base(value, unit) for name, unit, value in zip(names, units, row)}
        kernels.append(KernelMetrics(int(row[names.index("ID")]), row[names.index("Kernel Name")], values))
    return kernels


def parse_source_page(text: str) -> dict[str, list[SampledInstruction]]:
    """The SASS of each kernel in `ncu --import R --csv --page source --print-source sass`, by name.

    ncu prints some library kernels in more than one block; a Choreo function launches each of its
    kernels once per call (every launch has its own kernel), so a name's first block is its launch.
    """
    kernels: dict[str, list[SampledInstruction]] = {}
    instructions: list[SampledInstruction] = []
    header: list[str] = []
    for row in csv_rows(text):
        if row and row[0] == "Kernel Name":
            instructions = [] if row[1] in kernels else kernels.setdefault(row[1], [])  # repeats: dropped
            header = []
        elif not header:
            header = row
        elif row and row[0].startswith("0x"):
            instructions.append(_instruction(dict(zip(header, row))))
    return kernels


def _instruction(cells: dict[str, str]) -> SampledInstruction:
    stalls = {
        name: int(value)
        for name, value in cells.items()
        if name.startswith("stall_") and "(" not in name and value.isdigit()  # not the "(Not Issued)" ones
    }
    samples = cells.get("Warp Stall Sampling (All Samples)", "")
    return SampledInstruction(
        int(cells["Address"], 16), cells["Source"].strip(), int(samples) if samples.isdigit() else 0, stalls
    )


def kernel_filter(kernels: list[str]) -> str:
    """ncu's --kernel-name value that matches exactly these kernels."""
    return "regex:^(" + "|".join(re.escape(name) for name in sorted(set(kernels))) + ")$"


def import_command(ncu: Path, report: Path, page: str) -> list[str]:
    """The command that prints one page of a report as CSV in base units."""
    command = [str(ncu), "--import", str(report), "--csv", "--print-units", "base", "--page", page]
    return [*command, "--print-source", "sass"] if page == "source" else command
