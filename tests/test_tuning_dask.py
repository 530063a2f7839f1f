"""Sweeps on a Dask cluster: a LocalCluster of two worker processes on the sim backend.

The same per-point job as in this process (tests/test_tuning.py), run by the workers: from
the Python API with a function of the point's build, and from `%sweep --cluster` in a
`choreo` kernel, where the expression and the values it names travel to the workers.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kernel_driver import KernelDriver, ok
from programs import SCALED_ADD

import choreo_kernel as ck
from choreo_kernel.tuning.cluster import DaskRunner
from choreo_kernel.tuning.point import SweepSettings, SweptSource
from choreo_kernel.tuning.sweep import InProcess, run_sweep

distributed = pytest.importorskip(
    "distributed", reason="sweeps on Dask need dask.distributed: pip install 'choreo-kernel[dask]'"
)
import dask  # noqa: E402  (after the skip: dask comes with distributed)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    # A task whose worker dies is not retried on another: one crashing point is enough to test.
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as local,
    ):
        with distributed.Client(local, set_as_default=False) as client:
            client.wait_for_workers(2, timeout=60)
        yield local


@pytest.fixture
def workers(cluster: Any) -> set[str]:
    """The workers' addresses now (a worker restarted after a crash has a new one)."""
    return set(cluster.scheduler_info["workers"])


def test_the_python_api_sweeps_on_workers_with_the_same_verdicts(cluster: Any, workers: set[str]) -> None:
    source = SweptSource(SCALED_ADD, {}, "sim", "scaled.co")
    settings = SweepSettings("add(a, b)", repeats=2)
    a, b = np.ones((32, 32), np.float32), np.full((32, 32), 2.0, np.float32)

    def bind(module: ck.Module) -> Callable[[], Any]:
        return lambda: module.add(a, b)

    grid: dict[str, list[object]] = {"SCALE": ["a.b", 1, 1, 3, 1, 1]}
    progress: list[str] = []
    with distributed.Client(cluster, set_as_default=False) as client:
        on_workers = run_sweep(
            source, grid, bind, settings, DaskRunner(client), lambda *r: progress.append(r[2])
        )
    here = run_sweep(source, grid, bind, settings, InProcess(), lambda *report: None)

    assert on_workers.where == f"on 2 Dask workers ({cluster.scheduler_address})"
    verdicts = [(p.defines, p.error is None, p.difference is None) for p in on_workers.points]
    assert verdicts == [(p.defines, p.error is None, p.difference is None) for p in here.points]
    assert [p.difference is not None for p in on_workers.points] == [False, False, False, True, False, False]
    ran = [point.worker for point in on_workers.points]
    assert set(ran) == workers  # the four points after the reference went to both workers
    assert on_workers.best is None  # sim times rank nothing, on workers as here
    assert sum(" on tcp://127.0.0.1:" in text for text in progress) == 6


def test_a_point_that_kills_its_worker_fails_alone(cluster: Any) -> None:
    source = SweptSource(SCALED_ADD, {}, "sim", "scaled.co")
    a = np.ones((32, 32), np.float32)

    def bind(module: ck.Module) -> Callable[[], Any]:
        def run() -> Any:
            out = module.add(a, a)
            if out[0, 0] == 4.0:  # SCALE=3: the worker process dies, as on a crash in a driver
                os._exit(1)
            return out

        return run

    with distributed.Client(cluster, set_as_default=False) as client:
        sweep = run_sweep(
            source,
            {"SCALE": [1, 3, 2]},
            bind,
            SweepSettings("add(a, a)", 1),
            DaskRunner(client),
            lambda *r: None,
        )
        client.wait_for_workers(2, timeout=60)  # the nanny restarts it, for the tests after this one
    first, crashed, last = sweep.points
    assert crashed.error == "it killed the Dask workers that ran it" and crashed.timing is None
    assert first.usable and last.difference is not None


# ---------------------------------------------------------------------------- through the kernel

DATA = """%%python
import numpy as np
a = np.ones((32, 32), np.float32)
b = np.ones((32, 32), np.float32)
out = np.zeros((32, 32), np.float32)

def fill():
    out[...] = add(a, b)
    return out"""


# An earlier cell's function, `double`, that an expression may call along with the swept cell's.
EARLIER = "%%choreo --target sim\n" + SCALED_ADD.replace("add(", "double(").replace("SCALE", "TWO").replace(
    " 1\n", " 2\n"
)


@pytest.fixture(scope="module")
def kernel(cluster: Any) -> Iterator[KernelDriver]:
    with KernelDriver("choreo") as driver:
        for cell in (EARLIER, "%%choreo --target sim\n" + SCALED_ADD, DATA):
            ok(driver.run(cell))
        yield driver


VERDICTS = "%%python\nprint([(p.label, p.error, p.difference, p.worker) for p in _sweep.points])"


def test_sweep_on_a_cluster_fills_the_same_table(
    kernel: KernelDriver, cluster: Any, workers: set[str]
) -> None:
    """`fill` is the tutorial's shape: a notebook helper that calls the Choreo function and writes a global."""
    address = cluster.scheduler_address
    line = "%sweep SCALE=1,1,2,a.b -n 2 {}-- fill()"
    remote = ok(kernel.run(line.format(f"--cluster {address} ")))
    remote_points = eval(ok(kernel.run(VERDICTS)).stream())
    # `fill` ran on the workers, on their own copies of `out`: the notebook's is untouched.
    assert ok(kernel.run("%%python\nprint(out[0, 0])")).stream() == "0.0\n"
    ok(kernel.run(line.format("")))
    local_points = eval(ok(kernel.run(VERDICTS)).stream())

    # The same verdicts: SCALE=2 differs only if the workers called each point's build through `fill`.
    assert [point[:3] for point in remote_points] == [point[:3] for point in local_points]
    assert [(error is None, difference is None) for _, error, difference, _ in remote_points] == [
        (True, True),
        (True, True),
        (True, False),
        (False, True),
    ]
    assert {point[3] for point in remote_points} <= workers and {point[3] for point in local_points} == {None}

    _progress, table, _plot = remote.displays()
    updates = [
        m["content"]["data"]["text/plain"] for m in remote.outputs if m["msg_type"] == "update_display_data"
    ]
    assert updates[:2] == [
        "sweep of cell[2]: 0/4 done · connecting to Dask",
        f"sweep of cell[2]: 0/4 done · starting on 2 Dask workers ({address})",
    ]
    title, header, _rule, *table_rows = table["text/plain"].splitlines()
    assert title == f"sweep of cell[2] on 2 Dask workers ({address})"
    assert header.split() == ["SCALE", "median", "min", "max", "%", "peak", "worker", "check"]
    assert all(any(worker in row for worker in workers) for row in table_rows)
    assert table_rows[0].endswith("reference") and "DIFFERS" in table_rows[2] and "error:" in table_rows[3]
    assert remote.stream().startswith("not ranked: on the sim backend")

    # The in-process sweep filled the notebook's `out` (SCALE=2 ran last: 1 * 2 + 1), and the
    # cell's own build is back (SCALE=1).
    after = ok(kernel.run("%%python\nprint(out[0, 0], add(a, b)[0, 0], _sweep.best)"))
    assert after.stream() == "3.0 2.0 None\n"


def test_choreo_stands_for_each_points_module_here_and_on_workers(kernel: KernelDriver, cluster: Any) -> None:
    for where in ("", f"--cluster {cluster.scheduler_address} "):
        ok(kernel.run(f"%sweep SCALE=1,3 -n 1 {where}-- choreo.add(a, b)"))
        differences = eval(ok(kernel.run("%%python\nprint([p.difference for p in _sweep.points])")).stream())
        assert differences == [None, "1024 of 1024 values differ from the first point's"], where
    assert ok(kernel.run("%%python\nprint(choreo.add(a, b)[0, 0])")).stream() == "2.0\n"  # the cell's own


def test_an_earlier_cells_function_is_built_again_on_the_workers(kernel: KernelDriver, cluster: Any) -> None:
    ok(kernel.run(f"%sweep SCALE=1,3 -n 1 --cluster {cluster.scheduler_address} -- double(add(a, b), a)"))
    run = ok(kernel.run("%%python\nprint([p.difference for p in _sweep.points], double(a, a)[0, 0])"))
    assert run.stream() == """[None, "1024 of 1024 values differ from the first point's"] 3.0\n"""


def test_sweep_on_a_cluster_reports_what_stops_it(kernel: KernelDriver, cluster: Any) -> None:
    address = cluster.scheduler_address

    def usage(line: str) -> str:
        run = kernel.run(line)
        assert run.status == "error" and run.reply["ename"] == "UsageError", run.traceback
        return str(run.reply["evalue"])

    assert "cannot reach the Dask scheduler at nonsense: missing port number" in usage(
        "%sweep SCALE=1,2 --cluster nonsense -- add(a, b)"
    )
    assert "not both" in usage(f"%sweep SCALE=1,2 --cluster {address} --gpus 1 -- add(a, b)")
    assert "at least 1" in usage("%sweep SCALE=1,2 --gpus 0 -- add(a, b)")
    if importlib.util.find_spec("dask_cuda") is None:
        assert "--gpus needs dask-cuda" in usage("%sweep SCALE=1,2 --gpus 1 -- add(a, b)")
    ok(kernel.run("%%python\nimport threading\nlock = threading.Lock()"))
    assert "cannot send lock to the Dask workers" in usage(
        f"%sweep SCALE=1,2 --cluster {address} -- add(a, b) if lock else None"
    )
    ok(kernel.run("%%python\nkept = choreo"))  # this cell's module now; after the next cell, a stale one
    ok(kernel.run("%%choreo --target sim\n" + SCALED_ADD))
    assert "cannot send kept to the Dask workers: it holds a Choreo module" in usage(
        f"%sweep SCALE=1,2 --cluster {address} -- kept.add(a, b)"
    )


# ---------------------------------------------------------------------------- on a GPU

TUTORIAL = Path(__file__).resolve().parents[1] / "tutorials" / "05_tuning.ipynb"
GPU_DATA = """%%python
import cupy as cp
import numpy as np
M = N = K = 1024
rng = np.random.default_rng(0)
a = cp.asarray(rng.random((M, K), dtype=np.float32) - 0.5).astype(cp.float16)
b = cp.asarray(rng.random((N, K), dtype=np.float32) - 0.5).astype(cp.float16)
c = cp.zeros((M, N), dtype=cp.float16)

def gemm():
    gemm_ws(a, b, c)
    return c"""
GPU_VERDICTS = "%%python\nprint([(p.label, p.error, p.difference, p.worker is None, p.timing.clock) for p in _sweep.points])"


def tutorial_gemm() -> str:
    """The warp-specialized GEMM cell of tutorials/05_tuning.ipynb, whose BN and STAGES the tutorial sweeps."""
    cells = json.loads(TUTORIAL.read_text())["cells"]
    return next(source for cell in cells if "__co__ void gemm_ws" in (source := "".join(cell["source"])))


@pytest.mark.gpu
def test_a_one_gpu_local_cuda_cluster_sweep_gives_the_notebooks_table() -> None:
    pytest.importorskip("dask_cuda", reason="--gpus needs dask-cuda: pip install 'choreo-kernel[dask-cuda]'")
    line = "%sweep BN=128,256 STAGES=2,3,4 -n 3 {}-- gemm()"
    with KernelDriver("choreo") as driver:
        ok(driver.run("%%choreo --target cuda\n" + tutorial_gemm()))
        ok(driver.run(GPU_DATA))
        ok(driver.run(line.format("")))
        here = eval(ok(driver.run(GPU_VERDICTS)).stream())
        on_cluster = ok(driver.run(line.format("--gpus 1 ")))
        there = eval(ok(driver.run(GPU_VERDICTS)).stream())
        title = on_cluster.displays()[1]["text/plain"].splitlines()[0]

    assert [point[:3] for point in there] == [point[:3] for point in here]
    assert len(here) == 6 and all(error is None and difference is None for _, error, difference, *_ in here)
    assert {point[3:] for point in here} == {(True, "CUDA events")}  # in the notebook's process
    assert {point[3:] for point in there} == {(False, "CUDA events")}  # on the worker, on its GPU
    assert title.startswith("sweep of cell[1] on 1 Dask worker (tcp://")
