"""GEMM speed: Choreo's warp-specialized TMA + WGMMA GEMMs against cuBLAS, fp16 in, f32 accumulate, f16 out.

The programs: bench/gemm_ws.co (one accumulator per consumer warpgroup, each MMA waited before its
stage is released), bench/gemm_ws_paired.co (two stages per wait: two synchronous MMAs in a row
share one wait) and bench/gemm_ws_pipelined.co (two half accumulators, so one MMA runs while the
other is waited). out = lhs · rhsᵀ with lhs [M, K] and rhs [N, K] ("TN"), timed against
`cupy.matmul(lhs, rhs.T)`
(cuBLAS) in the same run on the same inputs. Each size gets fresh random inputs; the Choreo result
goes into an output poisoned with NaN and must be fully written and match cuBLAS (relative max error)
before it is timed. Timings are CUDA events around single calls, queued back to back after warm-up so
the GPU never waits for the host; cuBLAS and the Choreo kernel are timed alternately, call by call, so
that both see the same clocks (the GPU's clock drifts as it heats up: timing one after the other
skews the ratio), and the medians are reported. Needs CuPy and a Hopper GPU.

    python bench/gemm.py [--sizes 4096 8192] [--programs gemm_ws gemm_ws_paired gemm_ws_pipelined]
                         [--variants 256x3 256x4] [--repeats 25] [--emit DIR] [--profile]

A variant is BNxSTAGES (the -D values of the programs). --emit writes each kernel's CUDA there, for
nvcc/ptxas/cuobjdump; --profile runs the first kernel once at the largest size (for ncu) and exits.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cupy

import choreo_kernel as ck
from choreo_kernel.compiler.cuda import inline_header

BENCH = Path(__file__).resolve().parent
TOLERANCE = 1e-2  # relative max error of an f16 result against cuBLAS's


def alternating_milliseconds(
    first: Callable[[], object], second: Callable[[], object], repeats: int, warmup: int = 10
) -> tuple[float, float]:
    """The median time of one call of each, from CUDA events around calls queued back to back, alternating."""
    for _ in range(warmup):
        first()
        second()
    events = [[cupy.cuda.Event() for _ in range(4)] for _ in range(repeats)]
    for start_first, end_first, start_second, end_second in events:
        start_first.record()
        first()
        end_first.record()
        start_second.record()
        second()
        end_second.record()
    events[-1][-1].synchronize()
    times = [(cupy.cuda.get_elapsed_time(a, b), cupy.cuda.get_elapsed_time(c, d)) for a, b, c, d in events]
    return statistics.median(t for t, _ in times), statistics.median(t for _, t in times)


def variant(text: str) -> dict[str, int]:
    columns, stages = text.split("x")
    return {"BN": int(columns), "STAGES": int(stages)}


def compile_kernel(program: str, defines: dict[str, int], emit: Path | None) -> Any:
    source = (BENCH / f"{program}.co").read_text(encoding="utf-8")
    module = ck.compile(source, defines, target="cuda", filename=f"{program}.co")
    if emit is not None:
        emit.mkdir(parents=True, exist_ok=True)
        name = f"{program}_bn{defines['BN']}_s{defines['STAGES']}.cu"
        (emit / name).write_text(inline_header(module.cuda_source), encoding="utf-8")
    return getattr(module, program)


def relative_error(result: Any, reference: Any) -> float:
    got, expected = result.astype(cupy.float32), reference.astype(cupy.float32)
    return float(cupy.abs(got - expected).max() / cupy.abs(expected).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--programs", nargs="+", default=["gemm_ws", "gemm_ws_paired", "gemm_ws_pipelined"])
    parser.add_argument("--variants", nargs="+", default=["256x3", "256x4"])
    parser.add_argument("--repeats", type=int, default=25)
    parser.add_argument("--emit", type=Path, default=None)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    kernels = {
        (program, text): compile_kernel(program, variant(text), args.emit)
        for program in args.programs
        for text in args.variants
    }
    if args.profile:
        size = max(args.sizes)
        lhs = cupy.random.random((size, size), dtype=cupy.float32).astype(cupy.float16)
        out = cupy.empty((size, size), cupy.float16)
        next(iter(kernels.values()))(lhs, lhs, out)
        cupy.cuda.get_current_stream().synchronize()
        return
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"GEMM fp16 in, f32 accumulate, f16 out, TN; median of {args.repeats} calls; {device}")
    best = {size: max(compare(size, kernels, args.repeats)) for size in args.sizes}
    for size, ratio in best.items():
        print(f"best at {size}^3: {ratio:.3f}x cuBLAS (target >= 0.9 at 8192^3)")


def compare(size: int, kernels: dict[tuple[str, str], Any], repeats: int) -> list[float]:
    """Time cuBLAS and each variant on fresh random inputs of one size; the ratio of each variant."""
    rng = cupy.random.default_rng(size)
    lhs = (rng.random((size, size), dtype=cupy.float32) * 2 - 1).astype(cupy.float16)
    rhs = (rng.random((size, size), dtype=cupy.float32) * 2 - 1).astype(cupy.float16)
    reference = cupy.matmul(lhs, rhs.T)
    flops = 2 * size**3
    print(f"{size}^3, fresh random inputs; each line times cuBLAS and the Choreo kernel alternately:")
    ratios = []
    for (program, text), gemm in kernels.items():
        out = cupy.full((size, size), cupy.nan, dtype=cupy.float16)
        gemm(lhs, rhs, out)
        cupy.cuda.get_current_stream().synchronize()
        assert not bool(cupy.isnan(out).any()), f"{program} {text}: the output is not fully written"
        error = relative_error(out, reference)
        assert error <= TOLERANCE, f"{program} {text}: relative max error {error:.3g} against cuBLAS"
        cublas, choreo = alternating_milliseconds(
            lambda: cupy.matmul(lhs, rhs.T), lambda gemm=gemm, out=out: gemm(lhs, rhs, out), repeats
        )
        ratios.append(cublas / choreo)
        defines = variant(text)
        print(
            f"  {program:17} BN={defines['BN']:3d} STAGES={defines['STAGES']}: "
            f"{flops / choreo / 1e9:6.1f} TFLOP/s ({choreo:.3f} ms), cuBLAS {flops / cublas / 1e9:6.1f} TFLOP/s "
            f"({cublas:.3f} ms): {cublas / choreo:.3f}x cuBLAS, error {error:.1e}"
        )
    return ratios


if __name__ == "__main__":
    main()
