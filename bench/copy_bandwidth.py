"""Copy bandwidth: bench/copy.co (a dma.copy per warpgroup) against a CuPy device-to-device copy.

Both move the same bytes in one run, timed with CUDA events over back-to-back repetitions; the
ratio of the two bandwidths is the figure of merit (target >= 0.9). Needs CuPy and a GPU.

    python bench/copy_bandwidth.py [--mib N] [--repeats N] [--chunk FLOATS]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import cupy

import choreo_kernel as ck

SOURCE = Path(__file__).resolve().parent / "copy.co"


def seconds_per_run(run: Callable[[], object], repeats: int) -> float:
    run()
    cupy.cuda.get_current_stream().synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(repeats):
        run()
    end.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / 1000 / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="bytes to copy, in MiB")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument(
        "--chunk", type=int, default=4096, help="floats each warpgroup copies (copy.co's CHUNK)"
    )
    args = parser.parse_args()
    count = args.mib * 2**20 // 4 // (4 * args.chunk) * (4 * args.chunk)
    source = cupy.random.random(count, dtype=cupy.float32)
    destination = cupy.empty_like(source)
    reference = cupy.empty_like(source)
    source_text = SOURCE.read_text(encoding="utf-8")
    copy = ck.compile(source_text, {"CHUNK": args.chunk}, target="cuda", filename="copy.co").copy

    choreo = seconds_per_run(lambda: copy(source, destination), args.repeats)
    device = seconds_per_run(
        lambda: reference.data.copy_from_device_async(source.data, source.nbytes), args.repeats
    )
    assert bool((destination == source).all()), "the Choreo copy is wrong"
    moved = 2 * source.nbytes  # read and written
    print(
        f"{source.nbytes / 2**20:.0f} MiB copied, {args.repeats} repeats, {args.chunk} floats per warpgroup"
    )
    print(f"  dma.copy (bench/copy.co): {moved / choreo / 1e9:8.1f} GB/s")
    print(f"  CuPy device-to-device:    {moved / device / 1e9:8.1f} GB/s")
    print(f"  ratio: {device / choreo:.3f} (target >= 0.9)")


if __name__ == "__main__":
    main()
