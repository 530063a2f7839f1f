"""Host time per call of a Choreo CUDA function: how long the host takes to check, plan and launch one
call, which bounds a short kernel when calls are queued back to back.

For bench/gemm_ws_persistent.co (f16 and FP8) and bench/gemm_ws.co (FP8) at 1024³ it prints, in µs
per call: calls queued without a sync (the host's time alone), each call followed by a sync, the GPU's
time for one call (CUDA events), and the same calls with the replay off (`not_replayed` set, so every
call checks its arguments and evaluates its host plan: the slow path); then a `ck.autotune`
dispatcher's calls of one shape, and `cupy.matmul` of the same f16 operands for scale. A replayed f16
call's result is checked against cupy.matmul first. Needs CuPy and a Hopper GPU.

    python bench/host_overhead.py [--calls 300] [--size 1024] [--profile]

--profile prints cProfile's top functions for the replayed and the slow calls of the first program.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import cupy

import choreo_kernel as ck

BENCH = Path(__file__).resolve().parent
PROGRAMS = [  # (program, label, defines)
    ("gemm_ws_persistent", "f16", {"GROUP_M": 8, "TMA_STORE": 1}),
    ("gemm_ws_persistent", "f8", {"GROUP_M": 8, "TMA_STORE": 1, "ELEM": "f8_e4m3", "BK": 128}),
    ("gemm_ws", "f8", {"STAGES": 4, "ELEM": "f8_e4m3", "BK": 128}),
]


def host_us(call: Callable[[], object], calls: int, sync: bool) -> float:
    """µs of host time per call, over `calls` calls after a warm-up (with a sync after each where `sync`)."""
    synchronize = cupy.cuda.get_current_stream().synchronize
    for _ in range(20):
        call()
    synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call()
        if sync:
            synchronize()
    elapsed = time.perf_counter() - start
    synchronize()
    return 1e6 * elapsed / calls


def gpu_us(call: Callable[[], object]) -> float:
    begin, end = cupy.cuda.Event(), cupy.cuda.Event()
    begin.record()
    call()
    end.record()
    end.synchronize()
    return 1e3 * cupy.cuda.get_elapsed_time(begin, end)


def profile(call: Callable[[], object], calls: int, title: str) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    cupy.cuda.get_current_stream().synchronize()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)
    print(f"-- cProfile, {title}\n{text.getvalue()[:4000]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--size", type=int, default=1024, help="M = N = K")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    size, calls = args.size, args.calls
    f16 = cupy.random.random((size, size), dtype=cupy.float32).astype(cupy.float16) - 0.5
    f16_rhs = cupy.random.random((size, size), dtype=cupy.float32).astype(cupy.float16) - 0.5
    f8 = cupy.zeros((size, size), cupy.uint8)  # FP8 bits: zeros are 0.0
    out = cupy.empty((size, size), cupy.float16)
    print(f"{size}³, {calls} calls; µs per call")
    print(f"{'':32} {'no sync':>8} {'sync':>8} {'GPU':>8} {'slow':>8} {'slow+sync':>10}")
    for program, label, defines in PROGRAMS:
        source = (BENCH / f"{program}.co").read_text(encoding="utf-8")
        function = ck.compile(source, defines, target="cuda", filename=f"{program}.co").function(program)
        lhs, rhs = (f16, f16_rhs) if label == "f16" else (f8, f8)

        def call(function: Callable[..., object] = function, lhs: object = lhs, rhs: object = rhs) -> object:
            return function(lhs, rhs, out)

        if label == "f16":
            call()
            call()  # the second call of this shape is a replay
            expected = cupy.matmul(f16, f16_rhs.T).astype(cupy.float32)
            error = float(cupy.abs(out.astype(cupy.float32) - expected).max() / cupy.abs(expected).max())
            assert error < 1e-2, f"{program} {label}: relative max error {error:.3g}"
        replayed = (host_us(call, calls, False), host_us(call, calls, True), gpu_us(call))
        if args.profile and program == PROGRAMS[0][0] and label == PROGRAMS[0][1]:
            profile(call, 200, f"{program} {label}, replayed")
        function.not_replayed = "timed without the replay"  # a CudaFunction: every call takes the slow path
        slow = (host_us(call, calls, False), host_us(call, calls, True))
        if args.profile and program == PROGRAMS[0][0] and label == PROGRAMS[0][1]:
            profile(call, 200, f"{program} {label}, slow path")
        print(
            f"{program + ' ' + label:32} {replayed[0]:8.1f} {replayed[1]:8.1f} {replayed[2]:8.1f} "
            f"{slow[0]:8.1f} {slow[1]:10.1f}"
        )
    with tempfile.TemporaryDirectory() as cache:
        source = (BENCH / "gemm_ws_persistent.co").read_text(encoding="utf-8")
        tuned = ck.autotune(
            source,
            "gemm_ws_persistent",
            {"BM": [128]},
            defines={"GROUP_M": 8, "TMA_STORE": 1},
            target="cuda",
            filename="gemm_ws_persistent.co",
            cache_dir=Path(cache),
            repeats=2,
        )
        dispatched = (host_us(lambda: tuned(f16, f16_rhs, out), calls, False),)
        print(f"{'autotuned gemm_ws_persistent f16':32} {dispatched[0]:8.1f}")
    matmul = host_us(lambda: cupy.matmul(f16, f16_rhs.T, out=out), calls, False)
    print(f"{'cupy.matmul f16':32} {matmul:8.1f}")


if __name__ == "__main__":
    main()
