"""The CUDA runtime: compile emitted CUDA with NVRTC through CuPy, cache the binary, marshal, launch.

Thin on purpose: the lowering (compiler/cuda) decides everything about the kernels and hands
over a host plan per function; this module evaluates the plan's sizes from the arguments,
moves data, launches, and turns CUDA failures and timed-out waits into `ChoreoError`s that
name the function (and the event, for a wait that never completed). A later call with the same
argument key replays what the first launched (runtime/replay.py).

Binaries are cached on disk under `$CHOREO_CACHE_DIR` (default `~/.cache/choreo-kernel`),
keyed by a hash of everything that changes them: the emitted source, the header, the
architecture, the NVRTC options and version, and this package's version. Files are written
to a temporary name and renamed into place, so concurrent processes never read half a file.

A wait on an event gives up after `$CHOREO_WAIT_TIMEOUT` seconds (default 2): the kernel records
which wait in host memory, every later wait of the launch gives up at once and no more TMA loads
are issued, so the launch ends and the call raises, leaving the CUDA context usable (a trap would
poison it for the whole process). The host waits for a launch only so long
(`$CHOREO_HOST_TIMEOUT`, default 60 s). Where a failure does poison the context (an illegal
address, a kernel that never ends), every later call says so in one line instead of failing
with the driver's error.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import struct
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.values import SUB_BYTE_BITS, Symbol
from choreo_kernel.compiler.cuda import HEADER, LoweredProgram, header_text
from choreo_kernel.compiler.cuda.cexpr import evaluate as evaluate_term
from choreo_kernel.compiler.cuda.emit import MAX_SHARED_BYTES
from choreo_kernel.compiler.cuda.plan import (
    FunctionPlan,
    HostBuffer,
    HostCheck,
    HostIf,
    HostLoop,
    HostPrint,
    HostScalar,
    HostStore,
    HostSync,
    KernelParameter,
    Launch,
    Step,
)
from choreo_kernel.compiler.devicecode import DevicePart, render
from choreo_kernel.compiler.diagnostics import ERROR, ChoreoError, Diagnostic
from choreo_kernel.compiler.program import Analysis
from choreo_kernel.compiler.semantics.evaluate import NotEvaluable, evaluate, shape
from choreo_kernel.compiler.semantics.launch import (
    PORTABLE_CLUSTER_BLOCKS,
    check_block_threads,
    cluster_problem,
)
from choreo_kernel.compiler.version import __version__
from choreo_kernel.runtime.cache import cache_directory, cached_file
from choreo_kernel.runtime.compile_errors import NvrtcFailure, user_errors
from choreo_kernel.runtime.cuda_include import include_options
from choreo_kernel.runtime.dtypes import DEVICE_BITS, numpy_dtype
from choreo_kernel.runtime.host_steps import host_lookup, loop_indices, reads_elements, store_element
from choreo_kernel.runtime.launch_streams import LaunchStreams, Progress
from choreo_kernel.runtime.replay import (
    REPLAYS_KEPT,
    Recording,
    Replay,
    allocate,
    arguments_key,
    replay_blocker,
    start_kernel,
)
from choreo_kernel.runtime.reports import flush_device_output, host_print, site_failure
from choreo_kernel.runtime.signature import bind_arguments
from choreo_kernel.runtime.tensormap import encode_tiled

WAIT_TIMEOUT_S = float(os.environ.get("CHOREO_WAIT_TIMEOUT", "2"))
HOST_TIMEOUT_S = float(os.environ.get("CHOREO_HOST_TIMEOUT", str(max(60.0, 10 * WAIT_TIMEOUT_S))))
# CUDA errors after which the process's context is unusable (cudaError_t values).
STICKY_ERRORS = frozenset({700, 701, 702, 710, 714, 715, 716, 717, 718, 719, 720, 999})
SPIN_S = 2e-4  # how long the host checks a launch without sleeping
NOT_READY = 600  # cudaErrorNotReady: the stream still has work
_lost_context: list[str] = []  # why this process's CUDA context became unusable, once it has
MAX_GRID = (2**31 - 1, 65535, 65535)
UNIT = "choreo.cu"  # NVRTC's name for the emitted CUDA: the file its line info (and ncu) names
NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14  # CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
STATIC_SHARED_LIMIT = 48 * 1024  # above this a kernel must raise its dynamic shared-memory limit
TENSOR_MAPS_KEPT = 256  # encoded tensor maps remembered per compiled source
# Narrow types have no CuPy dtype: their arrays travel as the unsigned integers of the same width.
_STORAGE: dict[str, np.dtype] = {**DEVICE_BITS, **dict.fromkeys(SUB_BYTE_BITS, np.dtype(np.uint8))}


def _cupy() -> Any:
    try:
        import cupy  # type: ignore[import-not-found]
    except ImportError:
        raise ChoreoError.simple(
            "target 'cuda' needs CuPy: pip install 'choreo-kernel[cuda12]' (or [cuda13]); "
            "target 'sim' runs without a GPU"
        ) from None
    return cupy


@functools.cache
def storage_dtype(element: str) -> np.dtype:
    """The dtype a device array of this element type has (narrow floats as their bits)."""
    return _STORAGE.get(element, numpy_dtype(element))


# ---------------------------------------------------------------------------- compiling


def architecture() -> str:
    """`sm_XY` of the current device, with the `a` suffix on 9.0 (WGMMA and setmaxnreg need sm_90a)."""
    capability = str(_cupy().cuda.Device().compute_capability)
    return f"sm_{capability}a" if capability == "90" else f"sm_{capability}"


def nvrtc_options(arch: str) -> tuple[str, ...]:
    """NVRTC's options for `arch` (`sm_90a` for a cubin, `compute_90a` for PTX). `-lineinfo` maps each
    instruction to its line of the emitted CUDA, which Nsight Compute and nvdisasm read; it changes no code."""
    timeout_ns = int(WAIT_TIMEOUT_S * 1e9)
    return (
        f"--gpu-architecture={arch}",
        "-std=c++17",
        "-lineinfo",
        f"-DCHOREO_WAIT_TIMEOUT_NS={timeout_ns}ull",
    )


_loaded: dict[str, Any] = {}  # cache key -> RawModule, for this process


def clear_loaded_modules() -> None:
    """Forget the modules loaded in this process (the disk cache stays): for cold/warm measurements."""
    _loaded.clear()


def compile_module(source: str, cache_dir: Path | None = None) -> Any:
    """A `cupy.RawModule` for emitted CUDA source: from this process, from the disk cache, or from NVRTC."""
    cupy = _cupy()
    key, path = _cached_cubin(source, cache_dir)
    if key not in _loaded:
        _loaded[key] = cupy.RawModule(path=str(path))
    return _loaded[key]


def cubin_path(source: str, cache_dir: Path | None = None) -> Path:
    """The cubin file that `compile_module` loads for emitted CUDA source (compiled first if it is not cached)."""
    return _cached_cubin(source, cache_dir)[1]


def _cached_cubin(source: str, cache_dir: Path | None) -> tuple[str, Path]:
    _cupy()
    from cupy.cuda import nvrtc  # type: ignore[import-not-found]

    arch = architecture()
    options = (*nvrtc_options(arch), *include_options(source))
    header = header_text()
    key_material = [source, header, arch, options, list(nvrtc.getVersion()), __version__]
    key = hashlib.sha256(json.dumps(key_material).encode()).hexdigest()
    path = (cache_dir or cache_directory()) / f"{key[:40]}.cubin"
    cached_file(path, lambda: complete_elf(_nvrtc(nvrtc, source, header, options, nvrtc.getCUBIN)))
    return key, path


def nvrtc_ptx(source: str, arch: str) -> str:
    """The PTX of emitted CUDA source, from NVRTC with the cubin's options (`arch`: `compute_90a`)."""
    _cupy()
    from cupy.cuda import nvrtc

    options = (*nvrtc_options(arch), *include_options(source))
    ptx = _nvrtc(nvrtc, source, header_text(), options, nvrtc.getPTX)
    return ptx.decode() if isinstance(ptx, bytes) else str(ptx)


def _nvrtc(nvrtc: Any, source: str, header: str, options: Sequence[str], result: Callable[[Any], Any]) -> Any:
    """`result(program)` (its cubin or its PTX) after compiling `source` with NVRTC."""
    program = nvrtc.createProgram(source, UNIT, [header.encode()], [HEADER.encode()])
    try:
        try:
            nvrtc.compileProgram(program, list(options))
        except nvrtc.NVRTCError:
            raise NvrtcFailure(nvrtc.getProgramLog(program)) from None
        return result(program)
    finally:
        nvrtc.destroyProgram(program)


def complete_elf(data: bytes) -> bytes:
    """`data` as long as its ELF header says it is.

    CuPy's `getCUBIN` drops the last byte of the binary, as if it were a C string ending in NUL.
    That byte is the top byte of the last header-table entry's 8-byte alignment field, always 0,
    and the driver loads the binary without it, but cuobjdump ("does not contain device code") and
    nvdisasm ("invalid ELF file") refuse it. A complete binary (a fixed CuPy) comes back unchanged.
    """
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2:  # ELF64 only, as every cubin is
        return data
    program_headers, section_headers = struct.unpack_from("<QQ", data, 0x20)
    program_entry, program_count, section_entry, section_count = struct.unpack_from("<HHHH", data, 0x36)
    end = max(
        program_headers + program_entry * program_count, section_headers + section_entry * section_count
    )
    missing = end - len(data)
    return data + bytes(missing) if 0 < missing <= 8 else data


def check_device_code(parts: Sequence[DevicePart], source: str, filename: str) -> None:
    """Compile device code alone (a `%%cuda` cell) with NVRTC; its errors at the lines they are about."""
    lines = [f'#include "{HEADER}"']
    if any("__co_device__" in part.text for part in parts):
        lines.append("#define __co_device__ __device__")
    device_lines, line_map = render(parts, len(lines) + 1)
    unit = "\n".join([*lines, *device_lines]) + "\n"
    try:
        compile_module(unit)
    except NvrtcFailure as failure:
        raise user_errors(failure, unit, line_map, source, filename) from None


# ---------------------------------------------------------------------------- running


class CudaBackend:
    """The functions of one compiled source, on the current CUDA device."""

    def __init__(self, analysis: Analysis, lowered: LoweredProgram, source: str = "") -> None:
        self.analysis = analysis
        self.source = source  # for the source lines of run-time errors, when the caller has it
        self.plans = lowered.plans
        try:
            self.module = compile_module(lowered.source)
        except NvrtcFailure as failure:
            raise user_errors(
                failure, lowered.source, lowered.device_lines, source, analysis.filename
            ) from None
        self.cupy = _cupy()
        self.status_memory = self.cupy.cuda.alloc_pinned_memory(8)  # choreo::Status, written by the GPU
        self.status_pointer = np.uint64(self.status_memory.ptr)
        self.status = np.frombuffer(self.status_memory, dtype=np.uint32, count=2)
        self.status[:] = 0
        self.tensor_maps: dict[tuple[Any, ...], np.ndarray] = {}
        self.kernels: dict[str, Any] = {}
        self.shared_limits: dict[str, int] = {}  # kernel -> the dynamic shared memory it may have now
        self.grid_barrier = self.cupy.zeros(
            2, dtype=np.uint32
        )  # the counters of cooperative launches' grid syncs
        self.functions: dict[str, CudaFunction] = {}

    def clear_gave_up(self) -> None:
        """Clear the blocks' device copy of the Status's `failed` (choreo_launch_gave_up), once the host has
        reported it. Where the failure also lost the context, nothing runs on it again: leave it."""
        lost = (self.cupy.cuda.runtime.CUDARuntimeError, self.cupy.cuda.driver.CUDADriverError)
        with contextlib.suppress(*lost):
            self.module.get_global("choreo_launch_gave_up").memset(0, 4)

    def kernel(self, launch: Launch, shared_bytes: int) -> Any:
        """The loaded kernel of a launch, its dynamic shared-memory limit raised where it needs more than
        the default (once, or again for a larger launch where the arguments size the shared memory)."""
        kernel = self.kernels.get(launch.kernel)
        if kernel is None:
            kernel = self.module.get_function(launch.kernel)
            if launch.cluster is not None and math.prod(launch.cluster) > PORTABLE_CLUSTER_BLOCKS:
                # a cluster of more than 8 blocks runs only where the kernel opts in
                self.cupy.cuda.driver.funcSetAttribute(
                    kernel.kernel.ptr, NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1
                )
            self.kernels[launch.kernel] = kernel
            # the default 48 KiB is for static and dynamic shared memory together
            self.shared_limits[launch.kernel] = STATIC_SHARED_LIMIT - kernel.shared_size_bytes
        if shared_bytes > self.shared_limits[launch.kernel]:
            kernel.max_dynamic_shared_size_bytes = shared_bytes
            self.shared_limits[launch.kernel] = shared_bytes
        return kernel

    def tensor_map(self, array: Any, parameter: KernelParameter) -> np.ndarray:
        """The TMA descriptor of `array` for a kernel parameter's box and swizzle: encoded once per array
        (its address and shape are all the descriptor holds), so repeated calls skip the driver."""
        key = (
            int(array.data.ptr),
            tuple(array.shape),
            tuple(array.strides),
            parameter.element,
            parameter.box,
            parameter.swizzle,
        )
        encoded = self.tensor_maps.get(key)
        if encoded is None:
            if len(self.tensor_maps) >= TENSOR_MAPS_KEPT:
                self.tensor_maps.clear()
            encoded = encode_tiled(array, parameter.element, parameter.box, parameter.swizzle)
            self.tensor_maps[key] = encoded
        return encoded

    def function(self, name: str) -> Callable[..., Any]:
        function = self.functions.get(name)
        if function is None:
            function = self.functions[name] = CudaFunction(self, self.plans[name])
        return function


class CudaFunction:
    """A `__co__` function on the GPU: checks its arguments, runs the host plan, returns CuPy arrays."""

    def __init__(self, backend: CudaBackend, plan: FunctionPlan) -> None:
        self.backend = backend
        self.plan = plan
        self.info = backend.analysis.functions[plan.function.name]
        self.name = plan.function.name
        self.written = [symbol for symbol in plan.parameters if symbol.name in plan.written]
        self._reading: dict[int, bool] = {}  # id(expression) -> whether it reads elements, for the plan's
        self.not_replayed = replay_blocker(plan, self.info)  # why no call is replayed (runtime/replay.py)
        self.replays: dict[Hashable, Replay] = {}  # arguments_key -> what the first such call launched

    def __repr__(self) -> str:
        return f"<choreo cuda function {self.name}>"

    def __call__(self, *args: Any) -> Any:
        if _lost_context:
            raise ChoreoError.simple(_lost_context[0])
        cupy = self.backend.cupy
        arguments = [_as_array_like(cupy, value) for value in args]
        key = arguments_key(cupy.ndarray, arguments) if self.not_replayed is None else None
        replay = self.replays.get(key) if key is not None else None
        if replay is not None:
            return replay(self, cupy, self.backend.tensor_map, arguments)
        bound = bind_arguments(self.plan.function, arguments)
        values: dict[Symbol, Any] = {}
        host_arrays: dict[Symbol, np.ndarray] = {}
        for param, symbol, value in zip(self.plan.function.params, self.plan.parameters, arguments):
            if param.type.shape is None:
                values[symbol] = value
            else:
                values[symbol] = _device_array(cupy, value, param, self.name)
                if isinstance(value, np.ndarray):
                    host_arrays[symbol] = value
        for symbol in self.plan.dimensions:
            values[symbol] = bound.dims[symbol.name]
        recording = Recording(self.plan, arguments, values) if key is not None else None
        progress = Progress(LaunchStreams(cupy), recording)
        self._run(self.plan.steps, values, progress)
        progress.streams.join()
        if progress.waits or any(s in host_arrays for s in self.written):
            self._synchronize(cupy)
        for symbol in self.written:
            if symbol in host_arrays and _writes_back(symbol):
                np.copyto(host_arrays[symbol], _to_host(values[symbol], host_arrays[symbol].dtype))
        result = self._result(values)
        replay = recording.finish(progress.waits, values, result) if recording is not None else None
        if replay is not None:
            if len(self.replays) >= REPLAYS_KEPT:
                self.replays.clear()
            self.replays[key] = replay
        return result

    # ------------------------------------------------------------------ host plan

    def _run(self, steps: tuple[Step, ...], values: dict[Symbol, Any], progress: Progress) -> None:
        cupy = self.backend.cupy
        for step in steps:
            if isinstance(step, HostBuffer):
                values[step.symbol] = self._allocate(cupy, step, values, progress.recording)
            elif isinstance(step, HostScalar):
                if self._reads_elements(step.value):
                    self._settle(progress)
                values[step.symbol] = self._evaluate(step.value, values)
            elif isinstance(step, HostPrint):
                if progress.unsynchronized:  # what the kernels before it print comes first
                    self._synchronize(cupy)
                    progress.unsynchronized = False
                host_print(step, lambda expr: self._evaluate(expr, values))
            elif isinstance(step, HostCheck):
                if not self._evaluate(step.statement.condition, values):
                    raise self._assertion(step.statement)
            elif isinstance(step, HostStore):
                self._settle(progress)  # the host reads and writes what the kernels before it wrote
                store_element(step.statement, lambda expr: self._evaluate(expr, values))
            elif isinstance(step, HostSync):
                self._settle(progress)
            elif isinstance(step, HostIf):
                if self._reads_elements(step.statement.condition):
                    self._settle(progress)
                taken = self._evaluate(step.statement.condition, values)
                self._run(step.then if taken else step.otherwise, values, progress)
            elif isinstance(step, HostLoop):
                for indices in loop_indices(step.statement, lambda expr: self._evaluate(expr, values)):
                    values.update((s, i) for s, i in zip(step.variables, indices) if s is not None)
                    self._run(step.body, values, progress)
            else:
                self._launch(step, values, progress.streams.before(step, values), progress.recording)
                progress.streams.after(step)
                progress.waits = progress.waits or not step.is_async
                progress.unsynchronized = progress.unsynchronized or not step.is_async
                progress.running = True

    def _reads_elements(self, expr: ast.Expr) -> bool:
        """reads_elements of one of the plan's expressions, walked once: every call runs the plan again."""
        reading = self._reading.get(id(expr))
        if reading is None:
            reading = self._reading[id(expr)] = reads_elements(expr)
        return reading

    def _settle(self, progress: Progress) -> None:
        """Wait, within the host's time limit, for every kernel launched so far (the `.async` ones and
        those on other streams too): the host reads and writes what they wrote."""
        if progress.running:
            progress.streams.join()
            self._synchronize(self.backend.cupy)
        progress.running = progress.unsynchronized = False

    def _evaluate(self, expr: ast.Expr, values: dict[Symbol, Any]) -> Any:
        try:
            return evaluate(expr, host_lookup(self.info, values))
        except (NotEvaluable, ZeroDivisionError) as error:
            raise ChoreoError.simple(
                f"{self.name}(): cannot compute a size on the host at line {expr.span.line} ({error!r})"
            ) from None

    def _allocate(
        self, cupy: Any, step: HostBuffer, values: dict[Symbol, Any], recording: Recording | None
    ) -> Any:
        dims = shape(step.shape, host_lookup(self.info, values))
        dtype = storage_dtype(step.element)
        fill = None
        if step.fill is not None:
            fill = np.asarray(self._evaluate(step.fill, values), dtype=numpy_dtype(step.element)).view(dtype)
        if recording is not None:
            recording.allocation(step.symbol, dims, dtype, fill)
        return allocate(cupy, dims, dtype, fill)

    def _launch(
        self, launch: Launch, values: dict[Symbol, Any], stream: Any, recording: Recording | None
    ) -> None:
        grid = [int(self._evaluate(count, values)) for count in launch.grid]
        if any(size <= 0 for size in grid):
            if any(size < 0 for size in grid):
                raise ChoreoError.simple(
                    f"{self.name}(): a parallel of line {launch.statement.span.line} has {grid} blocks"
                )
            return
        grid += [1] * (3 - len(grid))
        for size, limit, axis in zip(grid, MAX_GRID, "xyz"):
            if size > limit:
                raise ChoreoError.simple(
                    f"{self.name}(): {size} blocks on grid axis {axis} (line {launch.statement.span.line}); "
                    f"CUDA allows at most {limit}"
                )
        problem = cluster_problem(launch.cluster, grid, launch.statement)
        if problem is not None:
            raise ChoreoError.simple(f"{self.name}(): {problem}")
        threads = launch.threads or self._block_threads(launch, values)
        arguments = [self._argument(parameter, values) for parameter in launch.parameters]
        self._allocate_scratch(launch, arguments, threads * math.prod(grid))
        shared_bytes = self._shared_bytes(launch, arguments)
        if launch.prints:
            sys.stdout.flush()  # Python's output so far comes before the kernel's
        try:
            kernel = self.backend.kernel(launch, shared_bytes)
            if launch.cooperative:
                self._launch_cooperatively(kernel, launch, (grid, threads, arguments, shared_bytes), stream)
            else:
                start_kernel(kernel, grid, threads, arguments, shared_bytes, stream, None)
        except ChoreoError:
            raise
        except Exception as error:
            raise self._cuda_error(error, launch) from None
        if recording is not None:
            recording.launch(
                launch, kernel, (grid, threads, arguments, shared_bytes), self.backend.grid_barrier
            )

    def _launch_cooperatively(
        self, kernel: Any, launch: Launch, configuration: tuple[list[int], int, list[Any], int], stream: Any
    ) -> None:
        """cuLaunchCooperativeKernel, whose blocks are all resident at once, so that they can meet at a grid
        barrier; refused (CuPy would shrink a 1-D grid) where more blocks than fit are asked for."""
        grid, threads, arguments, shared_bytes = configuration
        cupy = self.backend.cupy
        per_multiprocessor = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            kernel.kernel.ptr, threads, shared_bytes
        )
        resident = per_multiprocessor * cupy.cuda.Device().attributes["MultiProcessorCount"]
        blocks = grid[0] * grid[1] * grid[2]
        if blocks > resident:
            raise ChoreoError.simple(
                f"{self.name}(): the cooperative parallel of line {launch.statement.span.line} has {blocks} blocks, "
                f"but this GPU runs at most {resident} of them at once, and a cooperative launch needs them all "
                "resident: use fewer blocks"
            )
        start_kernel(kernel, grid, threads, arguments, shared_bytes, stream, self.backend.grid_barrier)

    def _shared_bytes(self, launch: Launch, arguments: list[Any]) -> int:
        """The launch's shared memory: what the compiler fixed, and the buffers sized by the arguments."""
        if launch.dynamic_shared is None:
            return launch.shared_bytes
        scalars = {
            parameter.name: int(argument)
            for parameter, argument in zip(launch.parameters, arguments)
            if parameter.kind in ("scalar", "dim", "extent")
        }
        try:
            total = launch.shared_bytes_for(scalars)
        except ArithmeticError as error:
            raise ChoreoError.simple(
                f"{self.name}(): cannot size the shared memory of the parallel at line "
                f"{launch.statement.span.line} from these arguments ({error})"
            ) from None
        if total > MAX_SHARED_BYTES:
            raise ChoreoError.simple(
                f"{self.name}(): with these arguments the parallel at line {launch.statement.span.line} needs "
                f"{total} bytes of shared memory per block ({total - launch.shared_bytes} of them for buffers "
                f"sized by the arguments); a block on sm_90a has at most {MAX_SHARED_BYTES} (227 KiB)"
            )
        return total

    def _block_threads(self, launch: Launch, values: dict[Symbol, Any]) -> int:
        """A block size the arguments give: the product of its factors, within the hardware's limit."""
        threads = 1
        for factor in launch.thread_factors:
            threads *= factor if isinstance(factor, int) else int(self._evaluate(factor, values))
        problem = check_block_threads(threads, launch.statement)
        if problem is not None:
            raise ChoreoError.simple(f"{self.name}(): {problem}")
        return threads

    def _allocate_scratch(self, launch: Launch, arguments: list[Any], threads: int) -> None:
        """The global scratch of the local buffers sized at launch: their bytes per thread, evaluated from the
        kernel's scalar arguments, for each thread of the grid."""
        if not any(parameter.kind == "scratch" for parameter in launch.parameters):
            return
        scalars = {
            parameter.name: int(argument)
            for parameter, argument in zip(launch.parameters, arguments)
            if parameter.kind in ("scalar", "dim", "extent")
        }
        for position, parameter in enumerate(launch.parameters):
            if parameter.kind == "scratch" and parameter.size is not None:
                size = max(int(evaluate_term(parameter.size, scalars)), 0)
                arguments[position] = self.backend.cupy.empty(size * threads, dtype=np.uint8)

    def _argument(self, parameter: KernelParameter, values: dict[Symbol, Any]) -> Any:
        if parameter.kind == "scratch":
            return None  # allocated once the launch's size is known (_allocate_scratch)
        if parameter.kind == "status":
            return self.backend.status_pointer
        if parameter.kind == "grid_barrier":
            return self.backend.grid_barrier
        assert parameter.symbol is not None
        value = values[parameter.symbol]
        if parameter.kind == "array":
            return value
        if parameter.kind == "tensor_map":
            return self.backend.tensor_map(value, parameter)
        if parameter.kind == "extent":
            return np.int32(value.shape[parameter.axis])
        return _scalar(value, parameter.element)

    def _synchronize(self, cupy: Any) -> None:
        """Wait for the launches, at most HOST_TIMEOUT_S: a kernel that never ends is an error too."""
        stream = cupy.cuda.get_current_stream()
        start = time.monotonic()
        delay = 1e-5
        try:
            while not _finished(cupy, stream):
                waited = time.monotonic() - start
                if waited > HOST_TIMEOUT_S:
                    raise self._lost(
                        f"the kernel has not finished after {HOST_TIMEOUT_S:g} s (a barrier its threads never "
                        "all reach?), and the GPU is still running it"
                    )
                if waited > SPIN_S:
                    time.sleep(delay)
                    delay = min(2 * delay, 1e-3)
            stream.synchronize()
            if any(launch.prints for launch in self.plan.launches):
                flush_device_output()
        except ChoreoError:
            raise
        except Exception as error:
            # The stream reports a failed kernel only here; name it where the function has one kernel.
            only = self.plan.launches[0] if len(self.plan.launches) == 1 else None
            raise self._cuda_error(error, only) from None
        self._check_waits()

    def _lost(self, why: str) -> ChoreoError:
        """The error for a failure that leaves this process's CUDA context unusable; later calls repeat it."""
        message = (
            f"{self.name}(): {why}. The GPU cannot be used again in this process: restart the kernel "
            "(Kernel > Restart Kernel) or the Python process; target 'sim' still runs."
        )
        _lost_context.append(message)
        return ChoreoError.simple(message)

    def _check_waits(self) -> None:
        timed_out = self._timed_out()
        if timed_out is not None:
            raise timed_out

    def _timed_out(self) -> ChoreoError | None:
        """The error for a wait of the last launches that gave up (the status it left is cleared)."""
        status = self.backend.status
        if not status[0]:
            return None
        site_index = int(status[1])
        status[:] = 0
        self.backend.clear_gave_up()
        sites = self.plan.wait_sites
        site = sites[site_index] if site_index < len(sites) else None
        return site_failure(
            self.name, site, WAIT_TIMEOUT_S, self.backend.source, self.backend.analysis.filename
        )

    def _assertion(self, stmt: ast.Assert) -> ChoreoError:
        """A host-level `assert` whose condition is false for this call's arguments."""
        message = f"run-time error in '{self.name}': assertion failed: {stmt.message}"
        if self.backend.source:
            return ChoreoError(
                [Diagnostic(ERROR, message, stmt.span)], self.backend.source, self.backend.analysis.filename
            )
        return ChoreoError.simple(f"{self.name}(): assertion failed at line {stmt.span.line}: {stmt.message}")

    def _cuda_error(self, error: Exception, launch: Launch | None) -> ChoreoError:
        if isinstance(error, ChoreoError):
            return error
        timed_out = self._timed_out()
        kernel = (
            f" in kernel {launch.kernel} (the parallel at line {launch.statement.span.line})"
            if launch
            else ""
        )
        shared = (
            f", {launch.shared_bytes} bytes of shared memory per block"
            if launch and launch.shared_bytes
            else ""
        )
        if getattr(error, "status", None) in STICKY_ERRORS:
            after = f" ({timed_out.message.partition('(): ')[2]})" if timed_out else ""
            return self._lost(f"CUDA failed{kernel}{shared}: {error}{after}")
        if timed_out is not None:
            return timed_out
        return ChoreoError.simple(f"{self.name}(): CUDA failed{kernel}{shared}: {error}")

    def _result(self, values: dict[Symbol, Any]) -> Any:
        result = self.plan.result
        if result is None:
            return None
        if isinstance(result, ast.Name):
            symbol = self.info.symbol_of.get(id(result))
            if symbol in values:
                return values[symbol]
        return self._evaluate(result, values)


# ---------------------------------------------------------------------------- marshalling


def _finished(cupy: Any, stream: Any) -> bool:
    """Whether the stream's work is done; a launch that failed raises here (`stream.done` only says no)."""
    status = cupy.cuda.runtime.streamQuery(stream.ptr)
    if isinstance(status, bool):
        return status
    if status == NOT_READY:
        return False
    if status:
        stream.synchronize()  # raises the launch's error
    return True


def _as_array_like(cupy: Any, value: Any) -> Any:
    """NumPy and CuPy arrays as they are; other device arrays (DLPack, __cuda_array_interface__) as CuPy views."""
    if isinstance(value, np.ndarray | cupy.ndarray) or np.isscalar(value):
        return value
    if hasattr(value, "__cuda_array_interface__"):
        return cupy.asarray(value)
    if hasattr(value, "__dlpack__"):
        return cupy.from_dlpack(value)
    return value


def _device_array(cupy: Any, value: Any, param: ast.Param, function: str) -> Any:
    """The device array a parameter uses: a device array in place, a host array copied in."""
    dtype = storage_dtype(param.type.name)
    if isinstance(value, cupy.ndarray):
        if value.flags.c_contiguous:
            return value.view(dtype)
        if param.writes_back:
            raise ChoreoError.simple(
                f"{function}(): parameter '{param.name}' is written in place (global or passed by reference), "
                "so it must be a C-contiguous array (use cupy.ascontiguousarray)"
            )
        return cupy.ascontiguousarray(value).view(dtype)
    return cupy.asarray(np.ascontiguousarray(value).view(dtype))


def _writes_back(symbol: Symbol) -> bool:
    return isinstance(symbol.declaration, ast.Param) and symbol.declaration.writes_back


def _to_host(array: Any, dtype: np.dtype) -> np.ndarray:
    host: np.ndarray = array.get()
    return host.view(dtype)


def _scalar(value: Any, element: str) -> Any:
    """A kernel argument of a scalar type, as a NumPy scalar of exactly that width."""
    converted = np.asarray(value, dtype=numpy_dtype(element))
    return converted.view(storage_dtype(element))[()]
