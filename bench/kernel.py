"""Kernel latency: start-up of the `choreo` kernel, and what a Choreo cell costs beyond compiling.

Start-up is from launching the kernel process to its first kernel_info reply (target: under
2 s). Per-cell overhead is the round trip of a Choreo cell (execute request to idle, with its
summary displayed) minus the median `ck.compile` of the same source timed inside the same
kernel (target: under 50 ms). Prints numbers; asserts nothing (benchmarks are not tests).

    python bench/kernel.py [--starts N] [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.manager import KernelManager

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "conformance" / "valid"
STARTUP_TARGET_S = 2.0
OVERHEAD_TARGET_MS = 50.0
TIMEOUT = 60


def time_startup() -> float:
    """Seconds from launching a kernel to its kernel_info reply."""
    manager = KernelManager(kernel_name="choreo")
    start = time.perf_counter()
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=TIMEOUT)
        return time.perf_counter() - start
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def round_trips(client: BlockingKernelClient, code: str, runs: int) -> list[float]:
    """Milliseconds from an execute request to the kernel being idle again, after one warm-up."""
    samples = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        reply = client.execute_interactive(code, timeout=TIMEOUT, output_hook=lambda message: None)
        samples.append((time.perf_counter() - start) * 1000)
        if reply["content"]["status"] != "ok":
            raise SystemExit(f"the benchmark cell failed: {reply['content'].get('evalue')}")
    return samples[1:]


def compile_ms_in_kernel(client: BlockingKernelClient, path: Path, runs: int) -> float:
    """The median `ck.compile` of `path`, timed inside the kernel, in milliseconds."""
    code = (
        "%%python\nimport statistics, time, choreo_kernel as ck\n"
        f"_source = open({str(path)!r}).read()\n_samples = []\n"
        f"for _ in range({runs + 1}):\n"
        "    _start = time.perf_counter(); ck.compile(_source, target='sim')\n"
        "    _samples.append((time.perf_counter() - _start) * 1000)\n"
        "print(statistics.median(_samples[1:]))"
    )
    printed: list[str] = []

    def collect(message: dict) -> None:
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])

    client.execute_interactive(code, timeout=TIMEOUT, output_hook=collect)
    return float("".join(printed))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=5, help="kernel start-ups to time")
    parser.add_argument("--runs", type=int, default=30, help="timed runs of each cell")
    args = parser.parse_args()

    startups = [time_startup() for _ in range(args.starts)]
    startup = statistics.median(startups)
    verdict = "within" if startup <= STARTUP_TARGET_S else "OVER"
    print(
        f"start-up: median {startup:.2f} s over {args.starts} starts; target {STARTUP_TARGET_S:.0f} s: {verdict}"
    )

    largest = max(CORPUS.glob("*.co"), key=lambda path: path.stat().st_size)
    manager = KernelManager(kernel_name="choreo")
    manager.start_kernel()
    client = manager.blocking_client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=TIMEOUT)
        python_ms = statistics.median(round_trips(client, "%%python\npass", args.runs))
        cell_ms = statistics.median(
            round_trips(client, f"%%choreo --target sim\n{largest.read_text()}", args.runs)
        )
        compile_ms = compile_ms_in_kernel(client, largest, args.runs)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    overhead = cell_ms - compile_ms
    verdict = "within" if overhead <= OVERHEAD_TARGET_MS else "OVER"
    print(f"empty %%python cell: median round trip {python_ms:.1f} ms")
    print(
        f"Choreo cell ({largest.name}, {largest.stat().st_size} bytes): median round trip {cell_ms:.1f} ms, "
        f"of which compile {compile_ms:.1f} ms"
    )
    print(f"  overhead beyond compilation {overhead:.1f} ms; target {OVERHEAD_TARGET_MS:.0f} ms: {verdict}")


if __name__ == "__main__":
    main()
