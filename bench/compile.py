"""Compile latency of the CUDA path: front end, lowering, NVRTC cold and warm, per program.

The front end for target cuda includes the lowering (so that check reports its limits); the
lowering column times the lowering alone.

A notebook cell compiles on every run. Re-running an unchanged cell reuses the remembered build
(`ck.compile` + loading its function: the "re-run" column) and should take under 5 ms; a new
process pays front end + lowering + loading the binary from the disk cache ("disk warm
total"); a cold compile (NVRTC) should stay under 0.5 s for a GEMM-sized program. Needs CuPy
and a GPU (the binary is built for the device). Prints; asserts nothing.

    python bench/compile.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from cuda_corpus import PROGRAMS  # noqa: E402

import choreo_kernel as ck  # noqa: E402
from choreo_kernel.compiler.cuda import emit_program, lower_program  # noqa: E402
from choreo_kernel.compiler.driver import analyze  # noqa: E402
from choreo_kernel.runtime import cuda  # noqa: E402
from choreo_kernel.tuning.timing import wall_clock_seconds  # noqa: E402

WARM_TARGET_MS = 5.0
# Every program the CUDA backend is tested on, and the GEMM-sized one of bench/gemm.py.
SOURCES = [(program.name, program.source) for program in PROGRAMS] + [
    ("bench/gemm_ws.co", (ROOT / "bench" / "gemm_ws.co").read_text())
]
COLD_TARGET_MS = 500.0


def milliseconds(run: Callable[[], object], runs: int) -> float:
    return statistics.median(wall_clock_seconds(run, runs)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timed runs of each warm step")
    args = parser.parse_args()
    # NVRTC's first use loads the library: not a per-program cost.
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        cuda.compile_module(emit_program(analyze(SOURCES[0][1])), Path(cache))
        first = (time.perf_counter() - start) * 1000
    print(f"NVRTC's first use in this process (loading it, one compile): {first:.0f} ms")
    print(
        f"{'program':32} {'front end':>10} {'lowering':>9} {'NVRTC cold':>11} {'disk warm':>10} "
        f"{'disk warm total':>15} {'re-run':>8}"
    )
    worst_warm = worst_cold = worst_rerun = 0.0
    for name, source in SOURCES:
        analysis = analyze(source)
        front = milliseconds(lambda source=source: analyze(source), args.runs)
        lowering = milliseconds(lambda analysis=analysis: lower_program(analysis), args.runs)
        cuda_source = emit_program(analysis)
        with tempfile.TemporaryDirectory() as cache:
            cuda.clear_loaded_modules()
            start = time.perf_counter()
            cuda.compile_module(cuda_source, Path(cache))
            cold = (time.perf_counter() - start) * 1000

            def warm(cuda_source: str = cuda_source, cache: str = cache) -> None:
                cuda.clear_loaded_modules()
                cuda.compile_module(cuda_source, Path(cache))

            disk = milliseconds(warm, args.runs)
        total = front + disk  # the front end includes the lowering

        def rerun(source: str = source) -> None:
            module = ck.compile(source, target="cuda")
            module.function(module.functions[0])

        rerun()  # the first run builds and loads; later runs of the same cell reuse it
        again = milliseconds(rerun, args.runs)
        worst_warm, worst_cold = max(worst_warm, total), max(worst_cold, front + cold)
        worst_rerun = max(worst_rerun, again)
        print(
            f"{name:32} {front:8.2f}ms {lowering:7.2f}ms {cold:9.1f}ms {disk:8.2f}ms {total:13.2f}ms "
            f"{again:6.2f}ms"
        )
    print(
        f"worst re-run of an unchanged cell {worst_rerun:.2f} ms (target {WARM_TARGET_MS} ms); "
        f"worst warm compile in a new process {worst_warm:.2f} ms; "
        f"worst cold compile {worst_cold:.0f} ms (target {COLD_TARGET_MS:.0f} ms)"
    )


if __name__ == "__main__":
    main()
