"""The streams of one CUDA call's launches and where its host plan stands between them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from choreo_kernel.compiler.analysis.values import Symbol
from choreo_kernel.compiler.cuda.plan import Launch

if TYPE_CHECKING:
    from choreo_kernel.runtime.replay import Recording


@dataclass
class Progress:
    """Where a call's host plan stands: its streams, what it records for a replay (runtime/replay.py),
    whether a launch still runs, whether one waits."""

    streams: LaunchStreams
    recording: Recording | None = None
    waits: bool = False  # a launch that the call waits for (not `.async`)
    unsynchronized: bool = False  # such a launch since the host last waited
    running: bool = False  # any launch since the host last waited


class LaunchStreams:
    """The streams of one call's launches, ordered as the program is: a launch on a `parallel<s>` stream
    starts after everything before it on the current stream (the arguments' copies, earlier launches), a
    non-async launch is waited for by whatever follows it, and at the end the current stream waits for
    every stream used, so the returned arrays are ordered on it. Async launches on different streams
    may overlap, as `parallel.async` says; the sim runs them in order, which is one of the orders they
    may take."""

    def __init__(self, cupy: Any) -> None:
        self.cupy = cupy
        self.current = cupy.cuda.get_current_stream()
        self.last = self.current
        self.used: list[Any] = []

    def before(self, launch: Launch, values: dict[Symbol, Any]) -> Any:
        """The stream `launch` goes on, made to wait for the work before it."""
        stream = self.current
        if launch.stream is not None:
            stream = cuda_stream(self.cupy, values.get(launch.stream))
        if stream.ptr != self.current.ptr:
            stream.wait_event(self.current.record())
            self.used.append(stream)
        self.last = stream
        return stream

    def after(self, launch: Launch) -> None:
        """A non-async launch on another stream: what follows (on the current stream) waits for it."""
        if not launch.is_async and self.last.ptr != self.current.ptr:
            self.current.wait_event(self.last.record())

    def join(self) -> None:
        for stream in self.used:
            self.current.wait_event(stream.record())


def cuda_stream(cupy: Any, value: Any) -> Any:
    """A `stream` argument as a CuPy stream: the current one for None, a CuPy stream as it is, a raw handle
    wrapped."""
    if value is None:
        return cupy.cuda.get_current_stream()
    if isinstance(value, int):
        return cupy.cuda.ExternalStream(value)
    return value
