"""`%resources`: what each emitted kernel of a function costs the SM, read from the loaded CUDA binary.

Registers, spills and static shared memory are decided by ptxas, so only the compiled
binary knows them; dynamic shared memory and the block size come from the launch plan.
Occupancy is what the driver computes from all of them for one SM. None of this exists on
the sim backend, which runs NumPy on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from choreo_kernel.compiler.semantics.levels import MAX_THREADS_PER_BLOCK
from choreo_kernel.kernel.session import CompiledFunction
from choreo_kernel.kernel.summary import format_bytes
from choreo_kernel.kernel.tables import table_bundle

WARP = 32


@dataclass(frozen=True)
class KernelResources:
    kernel: str
    threads: int  # per block
    registers: int  # per thread
    static_shared: int  # bytes per block, declared in the kernel
    dynamic_shared: int  # bytes per block, given at launch
    local_bytes: int  # per thread: spills and local arrays
    blocks_per_sm: int
    warps_per_sm: int  # the SM's limit

    @property
    def occupancy(self) -> float:
        """Resident warps as a fraction of what the SM can hold."""
        warps = self.blocks_per_sm * -(-self.threads // WARP)
        return warps / self.warps_per_sm if self.warps_per_sm else 0.0


def sim_message(function: CompiledFunction) -> str:
    return (
        f"%resources {function.__name__}: registers, shared memory, spills and occupancy are read from "
        f"the compiled CUDA binary, so they need the cuda target; {function.__name__} was compiled for "
        "sim (NumPy on the CPU). On a machine with a CUDA GPU and CuPy, run its cell with "
        f"--target cuda (or auto).\nWhat the compiler knows without a GPU: {function.__doc__}"
    )


def kernel_resources(function: CompiledFunction) -> list[KernelResources]:
    """One entry per kernel launch of the function (the binary is compiled and loaded if it is not yet)."""
    import cupy  # type: ignore[import-not-found]

    from choreo_kernel.compiler.cuda.plan import Launch
    from choreo_kernel.runtime.cuda import STATIC_SHARED_LIMIT

    cuda_function: Any = function.module.function(function.__name__)
    properties = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    warps_per_sm = properties["maxThreadsPerMultiProcessor"] // WARP
    found = []
    for launch in cuda_function.plan.steps:
        if not isinstance(launch, Launch):
            continue
        kernel = cuda_function.backend.module.get_function(launch.kernel)
        if launch.shared_bytes > STATIC_SHARED_LIMIT:  # as the launcher does, or the query says 0 blocks
            kernel.max_dynamic_shared_size_bytes = launch.shared_bytes
        blocks = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            kernel.kernel.ptr, launch.threads or MAX_THREADS_PER_BLOCK, launch.shared_bytes
        )
        found.append(
            KernelResources(
                launch.kernel,
                launch.threads or MAX_THREADS_PER_BLOCK,  # a size the arguments give: its bound
                kernel.num_regs,
                kernel.shared_size_bytes,
                launch.shared_bytes,
                kernel.local_size_bytes,
                blocks,
                warps_per_sm,
            )
        )
    return found


def resources_bundle(name: str, kernels: list[KernelResources]) -> dict[str, str]:
    headers = [
        "kernel",
        "threads/block",
        "registers/thread",
        "static shared",
        "dynamic shared",
        "local (spills)/thread",
        "blocks/SM",
        "occupancy",
    ]
    rows = [
        [
            k.kernel,
            str(k.threads),
            str(k.registers),
            format_bytes(k.static_shared),
            format_bytes(k.dynamic_shared),
            format_bytes(k.local_bytes),
            str(k.blocks_per_sm),
            f"{k.occupancy:.0%}",
        ]
        for k in kernels
    ]
    spilling = {index for index, k in enumerate(kernels) if k.local_bytes or not k.blocks_per_sm}
    return table_bundle(headers, rows, spilling, f"resources of {name}")
