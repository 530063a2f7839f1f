"""Front-end latency: preprocess + parse + analyze (`ck.check`) on the conformance programs.

A notebook cell is re-checked on every run, so the largest corpus program should
check in under 30 ms. Prints numbers; asserts nothing (benchmarks are not tests).

    python bench/frontend.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import choreo_kernel as ck
from choreo_kernel.tuning.timing import wall_clock_seconds

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "conformance"
TARGET_MS = 30.0


def time_check(source: str, runs: int, warmup: int = 3) -> list[float]:
    """Milliseconds per `ck.check`, after warm-up runs that fill lark's and Python's caches."""
    for _ in range(warmup):
        ck.check(source)
    return [seconds * 1000 for seconds in wall_clock_seconds(lambda: ck.check(source), runs)]


def p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10, method="inclusive")[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="timed runs of the largest program")
    args = parser.parse_args()

    paths = sorted(CORPUS.glob("*/*.co"))
    if not paths:
        raise SystemExit(f"no conformance programs under {CORPUS}")
    largest = max(paths, key=lambda path: path.stat().st_size)
    samples = time_check(largest.read_text(encoding="utf-8"), args.runs)
    median = statistics.median(samples)
    verdict = "within" if median <= TARGET_MS else "OVER"
    print(
        f"largest program: {largest.relative_to(CORPUS)} ({largest.stat().st_size} bytes), {args.runs} runs"
    )
    print(f"  median {median:.2f} ms, p90 {p90(samples):.2f} ms; target {TARGET_MS:.0f} ms: {verdict}")

    medians = [statistics.median(time_check(path.read_text(encoding="utf-8"), runs=10)) for path in paths]
    print(f"all {len(paths)} programs: median of per-program medians {statistics.median(medians):.2f} ms")


if __name__ == "__main__":
    main()
