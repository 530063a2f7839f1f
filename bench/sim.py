"""Sim backend speed: the whole conformance corpus, and one warp-specialized GEMM.

The sim is the oracle of the GPU tests and the backend of every machine without a GPU,
so the corpus should run in under 60 s and a 128x128x128 warp-specialized GEMM (one
producer and two consumer warpgroups, two-stage rings) in under 2 s. Prints numbers;
asserts nothing (benchmarks are not tests).

    python bench/sim.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import choreo_kernel as ck
from choreo_kernel.tuning.timing import wall_clock_seconds

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from corpus import load  # noqa: E402  (the corpus header parser lives with the tests)
from generators import make_arguments  # noqa: E402

CORPUS_TARGET_S = 60.0
GEMM_TARGET_S = 2.0
GEMM_PROGRAM = "gemm_ws_1p2c.co"


def time_corpus() -> tuple[int, float]:
    """(programs, seconds) to compile and run every valid program that lists `sim`."""
    programs = [p for p in load("valid") if "sim" in p.targets]
    start = time.perf_counter()
    for program in programs:
        module = ck.compile(program.source, target="sim", filename=program.name)
        if program.function is not None:
            module.function(program.function)(*make_arguments(program.arguments).values())
    return len(programs), time.perf_counter() - start


def time_gemm(runs: int) -> list[float]:
    """Seconds per call of the corpus' warp-specialized GEMM at M = N = K = 128."""
    source = (TESTS / "conformance" / "valid" / GEMM_PROGRAM).read_text(encoding="utf-8")
    gemm = ck.compile(source, target="sim").gemm_ws
    rng = np.random.default_rng(0)
    lhs = rng.uniform(-1, 1, (128, 128)).astype(np.float16)
    rhs = rng.uniform(-1, 1, (128, 128)).astype(np.float16)
    gemm(lhs, rhs)  # warm-up: NumPy's and BLAS's first-call costs
    return wall_clock_seconds(lambda: gemm(lhs, rhs), runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timed calls of the GEMM")
    args = parser.parse_args()

    count, seconds = time_corpus()
    verdict = "within" if seconds <= CORPUS_TARGET_S else "OVER"
    print(f"conformance corpus on sim: {count} programs compiled and run in {seconds:.2f} s")
    print(f"  target {CORPUS_TARGET_S:.0f} s: {verdict}")

    samples = time_gemm(args.runs)
    median = statistics.median(samples)
    verdict = "within" if median <= GEMM_TARGET_S else "OVER"
    print(f"128x128x128 warp-specialized GEMM ({GEMM_PROGRAM}) on sim, {args.runs} calls")
    print(
        f"  median {median * 1000:.1f} ms, max {max(samples) * 1000:.1f} ms; target {GEMM_TARGET_S:.0f} s: {verdict}"
    )


if __name__ == "__main__":
    main()
