"""Sweep points on `dask.distributed` workers: a scheduler already running, or one worker per local GPU.

Dask schedules; this module only connects, sends each worker what every point needs once
(`share`: the expression's values, the reference result), submits one `measure_point` task
per point and yields the results as they finish. A worker compiles its points itself, so the
binaries land in its own cache (the CUDA backend's disk cache and its loaded modules), warm
for the next sweep on the same cluster: connections and local clusters are kept for the
life of the process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from choreo_kernel.tuning.point import Measured, Point, measure_point
from choreo_kernel.tuning.sweep import PointJob

if TYPE_CHECKING:
    from distributed import Client

T = TypeVar("T")
CONNECT_TIMEOUT_S = 10
_clients: dict[str, Client] = {}  # by scheduler address, or "gpus=N" for a local cluster of N GPUs
_local_clusters: dict[int, Any] = {}  # LocalCUDACluster by number of GPUs, kept with their client


class ClusterError(Exception):
    """No cluster to run on, with what to do about it."""


class DaskRunner:
    """Points as Dask tasks, run by as many workers at once as the cluster has."""

    def __init__(self, client: Client) -> None:
        self.client = client
        address = client.scheduler_info()["address"]
        workers = len(client.nthreads())
        if workers == 0:
            raise ClusterError(f"the Dask scheduler at {address} has no workers")
        plural = "s" if workers != 1 else ""
        self.where = f"on {workers} Dask worker{plural} ({address})"

    def share(self, value: T) -> T:
        """A handle to `value`, sent once to every worker; a task given it receives `value` there."""
        (future,) = self.client.scatter([value], broadcast=True, hash=False)
        return future  # Dask swaps the future for the value in a task

    def run(
        self, jobs: Sequence[PointJob], stage: Callable[[int, str], None]
    ) -> Iterator[tuple[int, Measured]]:
        """Steps inside a worker are not reported: a point shows when it finishes."""
        from distributed import KilledWorker, as_completed

        futures = [self.client.submit(measure_point, *job, pure=False) for job in jobs]
        index_of = {future.key: index for index, future in enumerate(futures)}
        try:
            for future in as_completed(futures, loop=self.client.loop):
                index = index_of[future.key]
                try:
                    measured: Measured = future.result()
                except KilledWorker:  # it crashed every worker that tried it: the point failed, not the sweep
                    measured = Measured(
                        Point(jobs[index].defines, error="it killed the Dask workers that ran it"), None
                    )
                else:
                    measured.point.worker = _worker_of(self.client, future)
                yield index, measured
        finally:
            self.client.cancel([future for future in futures if not future.done()])


def _worker_of(client: Client, future: Any) -> str | None:
    holders = client.who_has([future]).get(future.key, ())
    return holders[0] if holders else None


def connect(address: str | None = None, gpus: int | None = None) -> DaskRunner:
    """A runner on the scheduler at `address`, or on a LocalCUDACluster of `gpus` workers, one per GPU."""
    try:
        from distributed import Client
    except ImportError:
        raise ClusterError(
            "sweeping on a Dask cluster needs dask.distributed: pip install 'choreo-kernel[dask]'"
        ) from None
    key = address if address is not None else f"gpus={gpus}"
    client = _clients.get(key)
    if client is None or client.status != "running":
        if address is not None:
            client = _client_at(address)
        else:
            assert gpus is not None
            client = Client(_local_cuda_cluster(gpus), set_as_default=False)
        _clients[key] = client
    return DaskRunner(client)


def _client_at(address: str) -> Client:
    """A client of the scheduler at `address`; it does not become the notebook's default Dask client."""
    from distributed import Client
    from distributed.comm import resolve_address

    try:
        # An address Dask cannot parse fails in Client() before it cleans up after itself.
        resolved = resolve_address(address)
        return Client(resolved, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, ValueError) as error:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {error}") from None


def _local_cuda_cluster(gpus: int) -> Any:
    """One worker process per GPU (dask-cuda gives each its own CUDA_VISIBLE_DEVICES), started once."""
    if gpus in _local_clusters:
        return _local_clusters[gpus]
    try:
        from dask_cuda import LocalCUDACluster
        from dask_cuda.utils import get_n_gpus
    except ImportError:
        raise ClusterError("--gpus needs dask-cuda: pip install 'choreo-kernel[dask-cuda]'") from None
    available = get_n_gpus()
    if gpus > available:
        raise ClusterError(f"--gpus {gpus}: this machine has {available} GPU{'s' if available != 1 else ''}")
    cluster = LocalCUDACluster(n_workers=gpus, threads_per_worker=1)
    _local_clusters[gpus] = cluster
    return cluster
