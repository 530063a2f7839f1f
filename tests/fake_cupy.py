"""A stand-in for CuPy, enough for the CUDA backend to run its host plan without a GPU: device arrays
are NumPy arrays in a wrapper (so they are not `np.ndarray`s, as CuPy's are not), kernels record their
launches instead of running, streams are always done. `install` puts it under a `CudaBackend` of an
analysed source (no NVRTC, no driver), for tests that read what a call launches."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from choreo_kernel.compiler.driver import analyze
from choreo_kernel.runtime import cuda


class FakeArray:
    """A device array: its elements live in a NumPy array; `data.ptr` is that array's address."""

    def __init__(self, host: np.ndarray) -> None:
        self.host = host
        self.data = types.SimpleNamespace(ptr=host.__array_interface__["data"][0])

    shape = property(lambda self: self.host.shape)
    dtype = property(lambda self: self.host.dtype)
    strides = property(lambda self: self.host.strides)
    size = property(lambda self: self.host.size)
    nbytes = property(lambda self: self.host.nbytes)
    flags = property(lambda self: self.host.flags)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.data.ptr, False), "version": 3}

    def view(self, dtype: Any) -> FakeArray:
        return FakeArray(self.host.view(dtype))

    def get(self) -> np.ndarray:
        return self.host.copy()

    def fill(self, value: Any) -> None:
        self.host.fill(value)

    def __getitem__(self, index: Any) -> Any:
        return self.host[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self.host[index] = value


@dataclass
class Launched:
    """One launch a fake kernel received."""

    kernel: str
    grid: tuple[int, ...]
    block: tuple[int, ...]
    arguments: list[Any]
    shared_mem: int
    cooperative: bool = False


class FakeKernel:
    def __init__(self, name: str, launches: list[Launched]) -> None:
        self.name = name
        self.launches = launches
        self.shared_size_bytes = 0
        self.max_dynamic_shared_size_bytes = 0
        self.kernel = _CooperativeEntry(self)
        self.failure: Exception | None = None  # what a launch raises, where set

    def launched(self, launch: Launched) -> None:
        if self.failure is not None:
            raise self.failure
        self.launches.append(launch)

    def __call__(
        self,
        grid: tuple[int, ...],
        block: tuple[int, ...],
        args: Any,
        shared_mem: int = 0,
        stream: Any = None,
    ) -> None:
        self.launched(Launched(self.name, tuple(grid), tuple(block), list(args), shared_mem))


class _CooperativeEntry:
    """`kernel.kernel`: the driver function, which the backend calls for a cooperative launch."""

    def __init__(self, owner: FakeKernel) -> None:
        self.owner = owner
        self.ptr = id(owner)

    def __call__(self, grid: Any, block: Any, args: Any, shared: int, stream: Any, cooperative: bool) -> None:
        self.owner.launched(Launched(self.owner.name, tuple(grid), tuple(block), list(args), shared, True))


class FakeModule:
    """A loaded `RawModule`: its kernels by name, all recording into one list."""

    def __init__(self) -> None:
        self.launches: list[Launched] = []
        self.loaded: dict[str, FakeKernel] = {}

    def get_function(self, name: str) -> FakeKernel:
        return self.loaded.setdefault(name, FakeKernel(name, self.launches))

    def get_global(self, name: str) -> Any:
        return types.SimpleNamespace(memset=lambda value, size: None)


class _Stream:
    ptr = 0

    def record(self) -> object:
        return object()

    def wait_event(self, event: object) -> None:
        return None

    def synchronize(self) -> None:
        return None


class _Pinned(bytearray):
    @property
    def ptr(self) -> int:
        return 0x1000


def fake_cupy() -> Any:
    """A module object with the names of CuPy the backend uses."""
    stream = _Stream()
    runtime = types.SimpleNamespace(
        streamQuery=lambda ptr: 0, CUDARuntimeError=type("CUDARuntimeError", (Exception,), {})
    )
    driver = types.SimpleNamespace(
        CUDADriverError=type("CUDADriverError", (Exception,), {}),
        funcSetAttribute=lambda *args: None,
        occupancyMaxActiveBlocksPerMultiprocessor=lambda pointer, threads, shared: 1,
    )
    device = types.SimpleNamespace(attributes={"MultiProcessorCount": 132}, synchronize=lambda: None)
    cuda_namespace = types.SimpleNamespace(
        alloc_pinned_memory=_Pinned,
        get_current_stream=lambda: stream,
        ExternalStream=lambda handle: stream,
        Device=lambda: device,
        runtime=runtime,
        driver=driver,
    )

    def asarray(value: Any) -> FakeArray:
        return value if isinstance(value, FakeArray) else FakeArray(np.array(value))

    return types.SimpleNamespace(
        ndarray=FakeArray,
        cuda=cuda_namespace,
        empty=lambda shape, dtype: FakeArray(np.empty(shape, dtype)),
        zeros=lambda shape, dtype: FakeArray(np.zeros(shape, dtype)),
        full=lambda shape, fill, dtype: FakeArray(np.full(shape, fill, dtype)),
        asarray=asarray,
        ascontiguousarray=lambda value: FakeArray(np.ascontiguousarray(value.host)),
    )


def install(
    monkeypatch: pytest.MonkeyPatch, source: str, defines: dict[str, object] | None = None
) -> tuple[cuda.CudaBackend, FakeModule]:
    """A CUDA backend of `source` over the fake CuPy, and the module whose kernels record the launches.
    Tensor maps are encoded as 128 bytes naming the array's address."""
    module = FakeModule()
    monkeypatch.setattr(cuda, "_cupy", fake_cupy)
    monkeypatch.setattr(cuda, "compile_module", lambda source: module)
    monkeypatch.setattr(cuda, "encode_tiled", _fake_tensor_map)
    analysis = analyze(source, defines, target="cuda")
    assert analysis.lowered is not None
    return cuda.CudaBackend(analysis, analysis.lowered, source), module


def _fake_tensor_map(array: FakeArray, element: str, box: Any, swizzle: int = 0) -> np.ndarray:
    blob = np.zeros(1, dtype=np.dtype((np.void, 128)))
    blob.view(np.uint64)[0] = array.data.ptr
    return blob
