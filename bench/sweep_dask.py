"""`%sweep` in the notebook's process against `%sweep --gpus 1` (a one-worker LocalCUDACluster).

Runs tutorials/05_tuning.ipynb in a `choreo` kernel up to its sweep (the warp-specialized
GEMM, BN=128,256 x STAGES=2,3,4: six points at the tutorial's size), then the tutorial's
`%sweep` line in the kernel's process and again with `--gpus 1`, each once cold (an empty
binary cache; for the cluster, a new worker process) and once warm (the same sweep again).
The cluster's start-up is timed apart. Prints the wall times (`_sweep.seconds`) and the
ratios; asserts nothing (benchmarks are not tests). Needs a GPU, CuPy and dask-cuda.

    python bench/sweep_dask.py
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.manager import start_new_kernel

TUTORIAL = Path(__file__).resolve().parent.parent / "tutorials" / "05_tuning.ipynb"
TIMEOUT = 600
EMPTY_CACHE = "%%python\nimport os, tempfile\nos.environ['CHOREO_CACHE_DIR'] = tempfile.mkdtemp()"
DEVICE = "%%python\nfrom choreo_kernel.tuning.timing import current_device\nprint(current_device(True).name)"
VERDICTS = "%%python\nprint(repr([(p.label, p.error, p.difference) for p in _sweep.points]))"


def tutorial_cells() -> tuple[list[str], str]:
    """The code cells before the tutorial's `%sweep` line, and that line."""
    notebook = json.loads(TUTORIAL.read_text())
    cells = ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
    index = next(i for i, cell in enumerate(cells) if cell.startswith("%sweep"))
    return cells[:index], cells[index].strip()


def run(client: BlockingKernelClient, code: str) -> str:
    """Execute `code`; what it printed. A failing cell stops the benchmark with its error."""
    printed: list[str] = []

    def collect(message: dict) -> None:
        if message["msg_type"] == "stream" and message["content"]["name"] == "stdout":
            printed.append(message["content"]["text"])

    reply = client.execute_interactive(code, timeout=TIMEOUT, output_hook=collect)
    if reply["content"]["status"] != "ok":
        raise SystemExit(f"cell failed: {code.splitlines()[0]}: {reply['content'].get('evalue')}")
    return "".join(printed)


def sweep(client: BlockingKernelClient, line: str) -> tuple[float, str, str]:
    """Seconds of one sweep, its verdicts and its best point."""
    run(client, line)
    seconds = float(run(client, "%%python\nprint(_sweep.seconds)"))
    best = run(client, "%%python\nprint(_sweep.best.label if _sweep.best else None)").strip()
    return seconds, run(client, VERDICTS).strip(), best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    setup, line = tutorial_cells()
    head, _, expression = line.partition(" -- ")
    on_cluster = f"{head} --gpus 1 -- {expression}"

    manager, client = start_new_kernel(kernel_name="choreo", startup_timeout=TIMEOUT)
    try:
        for cell in setup:
            run(client, cell)
        target = run(client, "%%python\nprint(choreo.target, M, N, K)").split()
        if target[0] != "cuda":
            raise SystemExit("needs the cuda target: a GPU with CuPy (and CHOREO_TARGET unset)")
        device = run(client, DEVICE)

        run(client, EMPTY_CACHE)
        here_cold = sweep(client, line)
        run(client, EMPTY_CACHE)  # the worker inherits the variable: its binaries start from nothing too
        startup = float(
            run(
                client,
                "%%python\nimport time\nfrom choreo_kernel.tuning.cluster import connect\n"
                "_start = time.perf_counter(); connect(gpus=1); print(time.perf_counter() - _start)",
            )
        )
        cluster_cold = sweep(client, on_cluster)
        here_warm = sweep(client, line)
        cluster_warm = sweep(client, on_cluster)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)

    print(f"{line}\n  tutorial GEMM at M, N, K = {', '.join(target[1:])} on {device.strip()}")
    print(f"  {'':28}{'in process':>12}{'--gpus 1':>12}{'ratio':>8}")
    for name, here, cluster in (
        ("cold (empty caches)", here_cold, cluster_cold),
        ("warm (same sweep again)", here_warm, cluster_warm),
    ):
        print(f"  {name:28}{here[0]:>10.2f} s{cluster[0]:>10.2f} s{cluster[0] / here[0]:>8.2f}")
    print(f"  LocalCUDACluster start-up (not in the times above): {startup:.2f} s")
    same = here_cold[1] == cluster_cold[1] == here_warm[1] == cluster_warm[1]
    print(f"  same points, errors and checks in all four: {'yes' if same else 'NO'}")
    if not same:
        for name, result in (("in process", here_cold), ("--gpus 1", cluster_cold)):
            print(f"    {name}: {result[1]}")
    print(
        f"  best: in process {here_cold[2]} / {here_warm[2]}; --gpus 1 {cluster_cold[2]} / {cluster_warm[2]}"
    )


if __name__ == "__main__":
    main()
