"""GEMM speed: Choreo's warp-specialized TMA + WGMMA GEMMs against the vendor libraries, per type and shape.

out = lhs · rhsᵀ with lhs [M, K] and rhs [N, K] ("TN", both K-major), f32 accumulate, f16 out:

- f16 operands against `cupy.matmul(lhs, rhs.T)` (cuBLAS);
- bf16 operands against `torch.matmul(lhs, rhs.T)` (cuBLAS through PyTorch: CuPy has no bfloat16);
- FP8 e4m3 operands against `torch._scaled_mm(lhs, rhs.T, scale_a=1, scale_b=1, out_dtype=float16)`
  (cuBLASLt), whose second operand must be column-major: `rhs.T` of a row-major [N, K] rhs is;
- `f16_sp`: a 2:4 sparse f16 lhs (2 of every 4 K elements zero), packed with its metadata
  (compiler/semantics/sparsity.py) for bench/gemm_ws_sparse.co, against PyTorch's semi-structured
  sparse matmul, `torch.mm(to_sparse_semi_structured(lhs), rhs.T)` (cuSPARSELt or CUTLASS).

The programs: bench/gemm_ws.co (one accumulator per consumer warpgroup; counts tiles with cdiv, so it
is correct for any M, N and K; -D ELEM/BK/ACC for bf16 and FP8; -D CLUSTER=2 for clusters of two blocks
that share the rhs tile by a multicast load), bench/gemm_ws_persistent.co (the
same, persistent: one block per SM walks the tiles, its ring running on across them; with TMA_STORE=1
its epilogue is an asynchronous TMA store drained a tile later; with STREAMK=1 the tiles of its last,
partial wave are split along K evenly over all blocks, stream-K), and
bench/gemm_ws_paired.co and bench/gemm_ws_pipelined.co (f16, multiples of the tile only). Each shape gets fresh random inputs; each
variant writes into an output poisoned with NaN, which must be fully written and match the reference
(relative max error) before it is timed. Timings are CUDA events around single calls queued back to
back after warm-up, so the GPU never waits for the host; the reference and the Choreo kernel are timed
alternately, call by call, so that both see the same clocks (the H200's clock drifts with its power
draw: timing one after the other skews the ratio), and the medians are reported. The best variant of
each (type, shape) is the row of the summary. Needs CuPy (and PyTorch for bf16 and FP8) and a Hopper GPU.

    python bench/gemm.py [--types f16 bf16 f8_e4m3 f16_sp] [--shapes 8192 4096x8192x4096 ...] [--repeats 20]
                         [--variants "gemm_ws BN=256 STAGES=4" PINGPONG=1 ...] [--autotune] [--graph] [--emit DIR] [--profile]

--variants keeps the variants of the fixed list whose label (as printed) contains one of the strings.

--autotune replaces the fixed list of variants by `ck.autotune` over grids of defines of gemm_ws and
gemm_ws_persistent (AUTOTUNED): the first call of each shape tunes (each point compiled, checked against
the grid's first point on the GPU, timed; every point's median is printed), the chosen build of each
grid is then timed against the library as above, and the summary names the configuration chosen.

--graph times both from CUDA graph replays instead of Python calls: the kernels' own time, without the
host's work per call (Choreo's host plan costs far more per call than a library's, and a kernel shorter
than that cost leaves the GPU waiting for the host between calls); each call is captured once, through
PyTorch's graph capture with CuPy's launches on the capturing stream.

--emit writes each kernel's CUDA there, for nvcc/ptxas/cuobjdump; --profile runs the first kernel once
at the first shape (for ncu) and exits.
"""

from __future__ import annotations

import argparse
import functools
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cupy
import numpy as np

import choreo_kernel as ck
from choreo_kernel.compiler.cuda import inline_header
from choreo_kernel.compiler.semantics import sparsity

BENCH = Path(__file__).resolve().parent
TOLERANCE = 1e-2  # relative max error of the f16 result against the reference's
SHAPES = [
    "8192",
    "4096",
    "6144",
    "8192x8192x2048",
    "16384x16384x4096",
    "2048x2048x8192",
    "4096x8192x4096",
    "8000",
]
BM = 128


@dataclass(frozen=True, eq=False)  # kept in a dict by identity: its defines are a dict
class Variant:
    """One compiled configuration: a program and its defines."""

    program: str
    defines: dict[str, Any]

    @property
    def label(self) -> str:
        shown = {k: v for k, v in self.defines.items() if k not in ("ELEM",)}
        return f"{self.program} " + " ".join(f"{k}={v}" for k, v in shown.items())

    def fits(self, m: int, n: int, k: int) -> bool:
        """Whether the program handles this shape: gemm_ws and gemm_ws_persistent any (rows of K a
        multiple of 16 bytes, for TMA; gemm_ws with CLUSTER: M tiles that make whole clusters), the others only
        multiples of their tiles (of two K tiles for the paired one; gemm_ws_sparse's K tile is 64 dense
        columns)."""
        if self.program in ("gemm_ws", "gemm_ws_persistent"):
            clusters = self.defines.get("CLUSTER", 1) if self.program == "gemm_ws" else 1
            whole_clusters = -(-m // self.defines.get("BM", BM)) % clusters == 0
            return (
                whole_clusters
                and k * (1 if self.defines.get("ELEM", "f16").startswith("f8") else 2) % 16 == 0
            )
        bk = 2 * 64 if self.program == "gemm_ws_paired" else 64
        return m % BM == 0 and n % self.defines["BN"] == 0 and k % bk == 0


TYPE_DEFINES: dict[str, dict[str, Any]] = {
    "f8_e4m3": {"ELEM": "f8_e4m3", "BK": 128},
    "bf16": {"ELEM": "bf16"},
}
# What --autotune chooses from, on top of the type's defines: one ck.autotune per entry, each a program,
# defines fixed for it and a grid. BM=256 is a 256x128 tile (BN follows BM in both programs), BM=128 a
# 128x256 one; the persistent program's STAGES follows TMA_STORE (4, or 3 beside the staging tile), and
# its ping-pong form takes 128x128 tiles in two rings of 3. Every point is compiled on the device.
AUTOTUNED: list[tuple[str, dict[str, object], dict[str, list[object]]]] = [
    ("gemm_ws", {"STAGES": 4}, {"BM": [128, 256], "CLUSTER": [1, 2]}),
    (
        "gemm_ws_persistent",
        {"GROUP_M": 8},
        {"BM": [128, 256], "CLUSTER": [1, 2], "TMA_STORE": [0, 1], "IN_FLIGHT": [0, 1]},
    ),
    ("gemm_ws_persistent", {"GROUP_M": 8, "PINGPONG": 1}, {"CLUSTER": [1, 2], "IN_FLIGHT": [0, 1]}),
    # the last, partial wave split by stream-K, against the same build without it, at the same clocks
    ("gemm_ws_persistent", {"GROUP_M": 8, "BM": 128, "TMA_STORE": 1, "CLUSTER": 1}, {"STREAMK": [0, 1]}),
]


def grid(element: str) -> list[Variant]:
    """The configurations tried for one operand type (a small define grid)."""
    if element == "f16_sp":
        return [
            Variant("gemm_ws_sparse", {"BN": bn, "STAGES": s}) for bn, s in ((256, 4), (128, 4), (128, 6))
        ]
    types = TYPE_DEFINES.get(element, {})
    shapes = {"f8_e4m3": ((256, 3), (256, 4), (128, 6))}.get(element, ((256, 3), (256, 4), (128, 4)))
    variants = [Variant("gemm_ws", {"BN": bn, "STAGES": s, **types}) for bn, s in shapes]
    # clusters of two blocks along M, the rhs tile multicast to both
    variants += [Variant("gemm_ws", {"BN": bn, "STAGES": s, "CLUSTER": 2, **types}) for bn, s in shapes[:2]]
    variants.append(Variant("gemm_ws", {"BM": 256, "BN": 128, "STAGES": 4, "CLUSTER": 2, **types}))
    variants.append(Variant("gemm_ws_persistent", {"BN": 256, "STAGES": 4, **types}))
    variants.append(Variant("gemm_ws_persistent", {"BN": 256, "STAGES": 3, "TMA_STORE": 1, **types}))
    # clusters of two on pairs of tile rows, tiles walked in groups of 8 tile rows: 128x256 and 256x128
    for bm, bn in ((128, 256), (256, 128)):
        persistent = {"BM": bm, "BN": bn, "STAGES": 4, "CLUSTER": 2, "GROUP_M": 8, **types}
        variants.append(Variant("gemm_ws_persistent", persistent))
        variants.append(Variant("gemm_ws_persistent", {**persistent, "STAGES": 3, "TMA_STORE": 1}))
    # the tiles of the last, partial wave shared out by stream-K (STREAMK=0: the same build without it)
    for streamk in (0, 1):
        tail = {"BN": 256, "STAGES": 3, "TMA_STORE": 1, "GROUP_M": 8, "STREAMK": streamk, **types}
        variants.append(Variant("gemm_ws_persistent", tail))
    # ping-pong: 128x128 tiles, one consumer warpgroup's epilogue under the other's main loop
    for cluster in (1, 2):
        pingpong = {"BN": 128, "STAGES": 3, "PINGPONG": 1, "CLUSTER": cluster, "GROUP_M": 8, **types}
        variants.append(Variant("gemm_ws_persistent", pingpong))
    if element == "f16":
        variants += [
            Variant("gemm_ws_persistent", {"BN": 128, "STAGES": 5}),
            Variant("gemm_ws_paired", {"BN": 256, "STAGES": 4}),
            Variant("gemm_ws_pipelined", {"BN": 256, "STAGES": 4}),
        ]
    return variants


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


def graph_replay(call: Callable[[], object]) -> Callable[[], object]:
    """The call captured once into a CUDA graph, replayed on the current stream with no host work; what the
    call returns is kept alive with the graph, whose kernels write into it on every replay. Calls that
    cannot be captured raise, and bench/gemm.py reports that variant as failed."""
    import torch

    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    # CuPy's own pool may not allocate while a stream is captured; stream-ordered allocations can be.
    asynchronous = cupy.cuda.MemoryAsyncPool()
    with (
        torch.cuda.graph(graph),
        cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream),
        cupy.cuda.using_allocator(asynchronous.malloc),
    ):
        kept = call()
    torch.cuda.synchronize()
    return lambda: (graph.replay(), kept)


def compile_kernel(variant: Variant, emit: Path | None) -> Any:
    source = (BENCH / f"{variant.program}.co").read_text(encoding="utf-8")
    module = ck.compile(source, variant.defines, target="cuda", filename=f"{variant.program}.co")
    if emit is not None:
        emit.mkdir(parents=True, exist_ok=True)
        name = "_".join([variant.program, *(f"{k}{v}" for k, v in variant.defines.items())]) + ".cu"
        (emit / name).write_text(inline_header(module.cuda_source), encoding="utf-8")
    return getattr(module, variant.program)


def autotuners(element: str) -> dict[str, Any]:
    """One `ck.autotune` dispatcher per entry of AUTOTUNED, for one operand type, by its label."""
    tuners = {}
    for program, fixed, program_grid in AUTOTUNED:
        label = " ".join([program, *(f"{k}={v}" for k, v in fixed.items())])
        tuners[label] = ck.autotune(
            (BENCH / f"{program}.co").read_text(encoding="utf-8"),
            program,
            program_grid,
            defines={**TYPE_DEFINES.get(element, {}), **fixed},
            target="cuda",
            filename=f"{program}.co",
        )
    return tuners


def autotuned_kernels(
    element: str, tuners: dict[str, Any], setup: Problem, m: int, n: int
) -> dict[Variant, Any]:
    """Each tuner's build that it chooses for this shape (tuned by its first call; every point's median
    is printed, the grid's own comparison at one clock)."""
    kernels: dict[Variant, Any] = {}
    for label, tuned in tuners.items():
        out = cupy.empty((m, n), cupy.float16)
        try:
            choice = tuned.choice((*setup.operands, out))
        except ck.ChoreoError as error:
            print(f"  {label} (autotuned): FAILED: {error}")
            continue
        for sweep in tuned.sweeps.values():
            points = ", ".join(
                f"{point.label} {point.timing.median * 1e3:.3f} ms{' DIFFERS' * bool(point.difference)}"
                if point.timing
                else f"{point.label} failed"
                for point in sweep.points
            )
            print(f"  {label} grid: {points}")
        tuned.sweeps.clear()
        defines = {**tuned.swept.defines, **choice, "autotuned": "yes"}
        kernels[Variant(tuned.function, defines)] = tuned
    return kernels


def fixed_kernels(kernels: dict[Variant, Any], setup: Problem, m: int, n: int) -> dict[Variant, Any]:
    """The same compiled variants for every shape."""
    return kernels


def relative_error(result: Any, reference: Any) -> float:
    got, expected = result.astype(cupy.float32), reference.astype(cupy.float32)
    return float(cupy.abs(got - expected).max() / cupy.abs(expected).max())


def shape_of(text: str) -> tuple[int, int, int]:
    sizes = [int(part) for part in text.split("x")]
    return (sizes[0],) * 3 if len(sizes) == 1 else (sizes[0], sizes[1], sizes[2])


@dataclass
class Problem:
    """One type and shape: the Choreo kernels' arguments, the reference call and its result."""

    operands: tuple[Any, ...]  # what the Choreo kernel takes before `out` (CuPy arrays; FP8 as its bytes)
    reference: Callable[[], Any]
    expected: Any  # the reference's result, as CuPy


def problem(element: str, m: int, n: int, k: int) -> Problem:
    """Fresh random inputs in [-1, 1) of one type and shape, and the library call to compare with."""
    rng = cupy.random.default_rng(m * 31 + n * 7 + k)
    lhs = rng.random((m, k), dtype=cupy.float32) * 2 - 1
    rhs = rng.random((n, k), dtype=cupy.float32) * 2 - 1
    if element == "f16":
        a, b = lhs.astype(cupy.float16), rhs.astype(cupy.float16)
        return Problem((a, b), lambda: cupy.matmul(a, b.T), cupy.matmul(a, b.T))
    if element == "f16_sp":
        return sparse_problem(lhs, rhs)
    import torch

    dtype = torch.bfloat16 if element == "bf16" else torch.float8_e4m3fn
    ta, tb = torch.as_tensor(lhs, device="cuda").to(dtype), torch.as_tensor(rhs, device="cuda").to(dtype)
    if element == "bf16":
        call: Callable[[], Any] = lambda: torch.matmul(ta, tb.T)  # noqa: E731
        ours = (
            cupy.asarray(ta.view(torch.int16)).view(cupy.uint16),
            cupy.asarray(tb.view(torch.int16)).view(cupy.uint16),
        )
    else:
        one = torch.ones((), device="cuda", dtype=torch.float32)
        call = lambda: torch._scaled_mm(ta, tb.T, scale_a=one, scale_b=one, out_dtype=torch.float16)  # noqa: E731
        ours = (cupy.asarray(ta.view(torch.uint8)), cupy.asarray(tb.view(torch.uint8)))
    expected = cupy.asarray(call().float())
    torch.cuda.synchronize()
    return Problem(ours, call, expected)


def sparse_problem(lhs: Any, rhs: Any) -> Problem:
    """2:4 sparse f16: the two largest of every 4 lhs values kept, packed for Choreo, sparse for PyTorch."""
    import torch
    from torch.sparse import to_sparse_semi_structured

    groups = cupy.asnumpy(lhs).reshape(lhs.shape[0], -1, 4)  # on the host: NumPy has put_along_axis
    np.put_along_axis(groups, np.argsort(np.abs(groups), axis=-1)[..., :2], 0, axis=-1)
    dense = groups.reshape(lhs.shape).astype(np.float16)
    packed, metadata = sparsity.compress(dense)
    b = rhs.astype(cupy.float16)
    ta, tb = torch.as_tensor(dense, device="cuda"), torch.as_tensor(b, device="cuda")
    sparse_lhs = to_sparse_semi_structured(ta)
    call: Callable[[], Any] = lambda: torch.mm(sparse_lhs, tb.T)  # noqa: E731
    expected = cupy.asarray(call().float())
    torch.cuda.synchronize()
    return Problem((cupy.asarray(packed), cupy.asarray(metadata), b), call, expected)


REFERENCE = {
    "f16": "cuBLAS",
    "bf16": "torch.matmul",
    "f8_e4m3": "torch._scaled_mm",
    "f16_sp": "torch semi-structured",
}


Kernels = Callable[["Problem", int, int], dict[Variant, Any]]  # the builds to time on one shape


def compare(
    element: str, shape: tuple[int, int, int], kernels_for: Kernels, repeats: int, graphs: bool
) -> tuple:
    """Time the reference and each variant that fits the shape (as graph replays where `graphs`); the best
    variant's row."""
    m, n, k = shape
    setup = problem(element, m, n, k)
    kernels = kernels_for(setup, m, n)
    flops = 2 * m * n * k
    library = REFERENCE[element]
    print(f"{element} {m}x{n}x{k}, fresh random inputs; each line times {library} and Choreo alternately:")
    best = None
    for variant, gemm in kernels.items():
        if not variant.fits(m, n, k):
            continue
        out = cupy.full((m, n), cupy.nan, dtype=cupy.float16)
        try:
            gemm(*setup.operands, out)
            cupy.cuda.get_current_stream().synchronize()
        except Exception as error:  # a failed variant is reported, and the others still run
            print(f"  {variant.label:44}: FAILED: {error}")
            continue
        if bool(cupy.isnan(out).any()):
            print(f"  {variant.label:44}: FAILED: the output is not fully written")
            continue
        error = relative_error(out, setup.expected)
        if error > TOLERANCE:
            print(f"  {variant.label:44}: FAILED: relative max error {error:.3g} against {library}")
            continue
        calls = (setup.reference, lambda gemm=gemm, out=out: gemm(*setup.operands, out))
        if graphs:
            try:
                calls = (graph_replay(calls[0]), graph_replay(calls[1]))
            except Exception as error:
                print(
                    f"  {variant.label:44}: FAILED to capture into a CUDA graph: {str(error).splitlines()[0]}"
                )
                continue
        theirs, ours = alternating_milliseconds(*calls, repeats)
        row = (theirs / ours, flops / ours / 1e9, flops / theirs / 1e9, variant.label, error)
        print(
            f"  {variant.label:44}: {row[1]:6.1f} TFLOP/s ({ours:.3f} ms), {library} {row[2]:6.1f} TFLOP/s "
            f"({theirs:.3f} ms): {row[0]:.3f}x, error {error:.1e}"
        )
        best = row if best is None or row[0] > best[0] else best
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", nargs="+", default=["f16", "bf16", "f8_e4m3"])
    parser.add_argument("--shapes", nargs="+", default=SHAPES)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument(
        "--variants", nargs="+", default=None, help="time only the variants whose label has one of these"
    )
    parser.add_argument("--autotune", action="store_true")
    parser.add_argument("--graph", action="store_true", help="time CUDA graph replays of the calls")
    parser.add_argument("--emit", type=Path, default=None)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    timed = "graph replays of the calls" if args.graph else "calls"
    print(f"GEMM TN, f32 accumulate, f16 out; median of {args.repeats} alternating {timed}; {device}")
    summary = []
    for element in args.types:
        if args.autotune and element == "f16_sp":
            parser.error("--autotune has no grid for f16_sp: leave it out, or time f16_sp without it")
        if args.autotune:
            kernels_for: Kernels = functools.partial(autotuned_kernels, element, autotuners(element))
        else:
            chosen = [
                v for v in grid(element) if args.variants is None or any(w in v.label for w in args.variants)
            ]
            kernels = {variant: compile_kernel(variant, args.emit) for variant in chosen}
            kernels_for = functools.partial(fixed_kernels, kernels)
        if args.profile and not args.autotune:
            m, n, k = shape_of(args.shapes[0])
            setup = problem(element, m, n, k)
            next(iter(kernels.values()))(*setup.operands, cupy.empty((m, n), cupy.float16))
            cupy.cuda.get_current_stream().synchronize()
            return
        for text in args.shapes:
            if not args.autotune and not any(variant.fits(*shape_of(text)) for variant in kernels):
                print(f"{element} {text}: no variant takes this shape")  # no inputs made for it
                summary.append((element, text, None))
                continue
            best = compare(element, shape_of(text), kernels_for, args.repeats, args.graph)
            summary.append((element, text, best))
    print("\nbest variant per type and shape (ratio: the library's time / Choreo's, same clocks):")
    print("| type | shape | best variant | Choreo TFLOP/s | reference | reference TFLOP/s | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for element, text, best in summary:
        if best is None:
            print(f"| {element} | {text} | no variant takes this shape | | {REFERENCE[element]} | | |")
            continue
        ratio, ours, theirs, label, _ = best
        print(
            f"| {element} | {text} | {label} | {ours:.1f} | {REFERENCE[element]} | {theirs:.1f} | {ratio:.3f} |"
        )


if __name__ == "__main__":
    main()
