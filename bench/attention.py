"""Attention forward speed: bench/attention.co (FlashAttention in Choreo) against torch's SDPA backends.

For each (B, H, S, D), causal or not, and element type: fresh random q, k, v; the Choreo kernel
writes o (poisoned with NaN first) and the log-sum-exp, which must match an f32 reference computed
on the first heads (relative max error, TOLERANCE) before anything is timed. Then the Choreo kernel and
each of `torch.nn.functional.scaled_dot_product_attention`'s flash, cuDNN and memory-efficient backends
are timed in the same process, call by call in turn (so all see the same clocks), with CUDA events
around single calls queued back to back; medians are reported, and the best backend is the reference
of the ratio. Forward FLOPs: 4 * B * H * S * S * D, half of it causal. Needs CuPy, torch and a Hopper GPU.

    python bench/attention.py [--shapes 4x32x8192x128 16x16x2048x128 4x32x8192x64 8x16x4096x128]
                              [--causal 0 1] [--dtypes f16 bf16] [--repeats 20] [--emit DIR] [--check-heads 2]
                              [--variants "" PERSISTENT=0 PERSISTENT=1 PINGPONG=0,STAGES=3]

Each of --variants is a set of -D defines of bench/attention.co (comma-separated, "" for its defaults): all
are checked and timed in the same alternation, as choreo[DEFINES], and the best of them makes the ratio.
A persistent build (PERSISTENT=1) gets one block per SM of this GPU (BLOCKS) unless the variant sets it.
S may be any length: the kernel masks the tail tiles.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cupy
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import choreo_kernel as ck
from choreo_kernel.compiler.cuda import inline_header

BENCH = Path(__file__).resolve().parent
SHAPES = ["4x32x8192x128", "16x16x2048x128", "4x32x8192x64", "8x16x4096x128"]
TOLERANCE = {"f16": 1e-2, "bf16": 3e-2}  # relative max error of o against the f32 reference
TORCH_TYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
}


def parse_variant(text: str) -> dict[str, object]:
    """`PIPE=0,STAGES=3` as defines; "" is the program's defaults."""
    pairs = (item.split("=", 1) for item in text.split(",") if item)
    return {name: int(value) if value.lstrip("-").isdigit() else value for name, value in pairs}


def compile_kernel(head_dim: int, causal: bool, elem: str, variant: str, emit: Path | None) -> Any:
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    defines = {
        "BLOCKS": sms,
        **parse_variant(variant),
        "HEAD_DIM": head_dim,
        "CAUSAL": int(causal),
        "ELEM": elem,
    }
    source = (BENCH / "attention.co").read_text(encoding="utf-8")
    module = ck.compile(source, defines, target="cuda", filename="attention.co")
    if emit is not None:
        emit.mkdir(parents=True, exist_ok=True)
        suffix = variant.replace(",", "_").replace("=", "")
        name = f"attention_d{head_dim}_{'causal' if causal else 'full'}_{elem}{'_' + suffix if suffix else ''}.cu"
        (emit / name).write_text(inline_header(module.cuda_source), encoding="utf-8")
    return module.attention


def as_bits(tensor: torch.Tensor) -> Any:
    """A bf16 tensor as a CuPy array of its bits (uint16: how a bf16 array reaches the Choreo runtime)."""
    if tensor.dtype != torch.bfloat16:
        return tensor
    return cupy.from_dlpack(tensor.view(torch.int16)).view(cupy.uint16)


def reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """o and the natural log-sum-exp in f32, for q, k, v of [heads, S, D]."""
    q32, k32, v32 = (x.float() for x in (q, k, v))
    scores = q32 @ k32.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        size = scores.shape[-1]
        scores = scores.masked_fill(
            torch.ones(size, size, device=q.device, dtype=torch.bool).triu(1), -math.inf
        )
    return torch.softmax(scores, -1) @ v32, torch.logsumexp(scores, -1)


def relative_error(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got.float() - expected).abs().max() / expected.abs().max().clamp(min=1.0))


def timed(calls: dict[str, Callable[[], object]], repeats: int, warmup: int = 3) -> dict[str, float]:
    """The median milliseconds of one call of each, the calls taken in turn, CUDA events around each."""
    for _ in range(warmup):
        for call in calls.values():
            call()
    events = {
        name: [(torch.cuda.Event(True), torch.cuda.Event(True)) for _ in range(repeats)] for name in calls
    }
    for index in range(repeats):
        for name, call in calls.items():
            start, end = events[name][index]
            start.record()
            call()
            end.record()
    torch.cuda.synchronize()
    return {name: statistics.median(a.elapsed_time(b) for a, b in pairs) for name, pairs in events.items()}


def sdpa(
    backend: SDPBackend, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool
) -> Callable[[], object]:
    def call() -> object:
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return call


def compare(
    shape: str, causal: bool, elem: str, kernels: dict[str, Any], repeats: int, check_heads: int
) -> float | None:
    batch, heads, size, dim = (int(x) for x in shape.split("x"))
    torch.manual_seed(size + dim + int(causal))
    q, k, v = (torch.randn(batch, heads, size, dim, device="cuda", dtype=TORCH_TYPES[elem]) for _ in range(3))
    lse = torch.empty(batch * heads, size, device="cuda", dtype=torch.float32)
    label = f"B={batch:2d} H={heads:2d} S={size:5d} D={dim:3d} {'causal' if causal else 'full  '} {elem:4}"
    flat = [x.view(batch * heads, size, dim)[:check_heads] for x in (q, k, v)]
    expected_o, expected_lse = reference(*flat, causal)
    calls: dict[str, Callable[[], object]] = {}
    verdicts: dict[str, str] = {}
    for variant, kernel in kernels.items():
        o = torch.full_like(q, math.nan)

        def choreo(kernel: Any = kernel, o: torch.Tensor = o) -> object:
            return kernel(*(as_bits(x.view(batch * heads, size, dim)) for x in (q, k, v, o)), lse)

        choreo()
        torch.cuda.synchronize()
        error = relative_error(o.view(batch * heads, size, dim)[:check_heads], expected_o)
        lse_error = float((lse[:check_heads] - expected_lse).abs().max())
        verdict = "INCORRECT (the output is not fully written)" if bool(o.isnan().any()) else ""
        if not verdict and (error > TOLERANCE[elem] or lse_error > 1e-3):
            verdict = "INCORRECT"
        name = f"choreo[{variant}]" if variant else "choreo"
        verdicts[name] = f"{verdict + '; ' if verdict else ''}error {error:.1e}, lse {lse_error:.1e}"
        calls[name] = choreo
    ours = list(calls)
    for name, backend in BACKENDS.items():
        try:
            sdpa(backend, q, k, v, causal)()
            calls[name] = sdpa(backend, q, k, v, causal)
        except RuntimeError as problem:
            print(f"  ({name} backend unavailable here: {str(problem).splitlines()[0][:100]})")
    times = timed(calls, repeats)
    flops = 4 * batch * heads * size * size * dim / (2 if causal else 1)
    rate = {name: flops / ms / 1e9 for name, ms in times.items()}
    others = {name: ms for name, ms in times.items() if name not in ours}
    best = min(others, key=others.__getitem__) if others else None
    backends = ", ".join(f"{name} {rate[name]:6.1f}" for name in others)
    print(f"{label}: {backends}{f' (best {best})' if best else ''}")
    ratios = []
    for name in ours:
        ratio = others[best] / times[name] if best else None
        print(
            f"    {name:28} {rate[name]:6.1f} TFLOP/s ({times[name]:.3f} ms) "
            f"{f'{ratio:.3f}x best' if ratio else ''}; {verdicts[name]}"
        )
        if ratio and "INCORRECT" not in verdicts[name]:
            ratios.append(ratio)
    return max(ratios) if ratios else None


def builds(dim: int, causal: bool, elem: str, variants: list[str], emit: Path | None) -> dict[str, Any]:
    """The kernel of each variant that builds for this head dim (STAGES=3 does not fit D = 128, say)."""
    kernels = {}
    for variant in variants:
        try:
            kernels[variant] = compile_kernel(dim, causal, elem, variant, emit)
        except ck.ChoreoError as problem:
            first = str(problem).splitlines()[0]
            print(
                f"  choreo[{variant}] D={dim} {'causal' if causal else 'full'} {elem} does not build: {first}"
            )
    return kernels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=SHAPES)
    parser.add_argument("--causal", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--dtypes", nargs="+", default=["f16"])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--check-heads", type=int, default=2)
    parser.add_argument("--emit", type=Path, default=None)
    parser.add_argument("--variants", nargs="+", default=[""])
    args = parser.parse_args()
    # The Choreo runtime launches on CuPy's current stream: make it torch's, so that the events bracket both.
    cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream).use()
    print(f"attention forward; median of {args.repeats} calls each, in turn; {torch.cuda.get_device_name()}")
    print(f"torch {torch.__version__}; ratio = best SDPA backend's time / Choreo's time")
    kernels: dict[tuple[int, bool, str], dict[str, Any]] = {}
    for elem in args.dtypes:
        for causal in (bool(c) for c in args.causal):
            for shape in args.shapes:
                dim = int(shape.split("x")[-1])
                key = (dim, causal, elem)
                if key not in kernels:
                    kernels[key] = builds(dim, causal, elem, args.variants, args.emit)
                try:
                    compare(shape, causal, elem, kernels[key], args.repeats, args.check_heads)
                except Exception as problem:  # report it and go on with the next shape
                    print(f"{shape} causal={causal} {elem}: FAILED, {type(problem).__name__}: {problem}")


if __name__ == "__main__":
    main()
