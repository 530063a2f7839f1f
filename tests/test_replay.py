"""Replaying a CUDA call's host plan (runtime/replay.py), read without a GPU through a fake CuPy
(tests/fake_cupy.py) whose kernels record their launches: a call with the same argument key as an
earlier good one launches what it launched without checking or evaluating again; any other call
takes the slow path with its checks and errors; a plan whose host work is not the same for every
such call is never replayed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from corpus import Program
from cuda_corpus import PROGRAMS
from fake_cupy import FakeArray, Launched, install
from generators import assert_close, make_arguments

from choreo_kernel.compiler.diagnostics import ChoreoError
from choreo_kernel.runtime import cuda

CUDA_PROGRAMS = Path(__file__).parent / "cuda"


class Counts:
    """How often the slow path's checks and its evaluator ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.evaluated = self.bound = 0

        def evaluate(*args: Any) -> Any:
            self.evaluated += 1
            return original_evaluate(*args)

        def bind(*args: Any) -> Any:
            self.bound += 1
            return original_bind(*args)

        original_evaluate, original_bind = cuda.evaluate, cuda.bind_arguments
        monkeypatch.setattr(cuda, "evaluate", evaluate)
        monkeypatch.setattr(cuda, "bind_arguments", bind)

    def now(self) -> tuple[int, int]:
        return self.evaluated, self.bound


def program(name: str) -> str:
    return (CUDA_PROGRAMS / f"{name}.co").read_text()


def array(*shape: int, dtype: Any = np.float32) -> FakeArray:
    return FakeArray(np.zeros(shape, dtype))


def same_launch(first: Launched, second: Launched, per_call: set[int]) -> None:
    """`second` has `first`'s kernel and configuration, and its arguments except those at `per_call`
    (this call's arrays, tensor maps and scratch), which must differ."""
    assert (second.kernel, second.grid, second.block, second.shared_mem, second.cooperative) == (
        first.kernel,
        first.grid,
        first.block,
        first.shared_mem,
        first.cooperative,
    )
    assert len(first.arguments) == len(second.arguments)
    for position, (a, b) in enumerate(zip(first.arguments, second.arguments)):
        if position in per_call:
            assert a is not b
        else:
            assert type(a) is type(b) and np.array_equal(np.asarray(a), np.asarray(b)), position


def tensor_map_address(tensor_map: np.ndarray) -> int:
    return int(tensor_map.view(np.uint64)[0])


def test_a_second_call_with_the_same_shapes_launches_what_the_first_did_without_checking_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend, module = install(monkeypatch, program("chunkat_cdiv_copy"))
    counts = Counts(monkeypatch)
    function = backend.function("round_trip")
    first_x, second_x = array(100, 40), array(100, 40)
    first = function(first_x)
    after_first = counts.now()
    assert after_first[0] > 0 and after_first[1] == 1
    second = function(second_x)
    assert counts.now() == after_first  # neither evaluated nor checked
    (first_launch, second_launch) = module.launches
    parameters = backend.plans["round_trip"].launches[0].parameters
    per_call = {i for i, p in enumerate(parameters) if p.kind in ("array", "tensor_map")}
    assert per_call
    same_launch(first_launch, second_launch, per_call)
    assert second_launch.grid == (4, 3, 1)  # cdiv(100, 32) by cdiv(40, 16)
    maps = [a for a, p in zip(second_launch.arguments, parameters) if p.kind == "tensor_map"]
    assert second_x.data.ptr in {tensor_map_address(m) for m in maps}  # this call's array, not the first's
    assert type(second) is type(first) and second is not first  # a new result buffer, as the slow path makes
    assert (second.shape, second.dtype) == (first.shape, first.dtype)
    assert second.data.ptr in {tensor_map_address(m) for m in maps}


def test_another_shape_or_scalar_takes_the_slow_path_and_is_replayed_in_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = """
__co__ void numbered(s32 [N] &out, s32 count) {
  parallel t by count : block
    out.at(t) = t;
}
"""
    backend, module = install(monkeypatch, source)
    counts = Counts(monkeypatch)
    function = backend.function("numbered")
    out = array(16, dtype=np.int32)
    for count in (4, 8, 4, np.int32(4), 8):
        function(out, count)
    assert [launch.grid for launch in module.launches] == [
        (4, 1, 1),
        (8, 1, 1),
        (4, 1, 1),
        (4, 1, 1),
        (8, 1, 1),
    ]
    assert counts.bound == 3  # 4, 8 and np.int32(4) (another type) checked; the second 4 and 8 replayed
    assert len(function.replays) == 3
    function(array(32, dtype=np.int32), 4)  # another shape
    assert counts.bound == 4


def test_a_buffer_after_a_scalar_parameter_is_a_slot_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scalar before an array, a host buffer filled with a scalar: each call gets its own filled buffer
    and passes its own array; the scalar is the recorded value."""
    source = """
__co__ f32 [N] offset(f32 base, f32 [N] x) {
  f32 [N] y {base};
  parallel t by N : block
    y.at(t) = y.at(t) + x.at(t);
  return y;
}
"""
    backend, module = install(monkeypatch, source)
    function = backend.function("offset")
    x, other = array(8), array(8)
    results = [function(2.5, x), function(2.5, other), function(-0.0, other), function(0.0, other)]
    assert len(function.replays) == 3  # -0.0 is not 0.0
    assert all(isinstance(result, FakeArray) for result in results)
    assert len({id(result) for result in results}) == 4
    np.testing.assert_array_equal(results[1].host, np.full(8, 2.5, np.float32))  # filled on the replay too
    assert np.signbit(results[2].host).all() and not np.signbit(results[3].host).any()
    first, second = module.launches[:2]
    arguments = dict(zip((p.name for p in backend.plans["offset"].launches[0].parameters), second.arguments))
    assert arguments["x"] is not x and arguments["x"].data.ptr == other.data.ptr
    assert arguments["y"] is results[1]
    assert first.grid == second.grid == (8, 1, 1)


class Foreign:
    """A device array of another library (a PyTorch tensor, say): CuPy views it through its interface."""

    def __init__(self, array: FakeArray) -> None:
        self.array = array

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return self.array.__cuda_array_interface__


def test_another_librarys_device_array_is_replayed_through_its_cupy_view(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend, module = install(monkeypatch, program("chunkat_cdiv_copy"))
    monkeypatch.setattr(backend.cupy, "asarray", lambda value: FakeArray(value.array.host))
    function = backend.function("round_trip")
    first, second = Foreign(array(100, 40)), Foreign(array(100, 40))
    function(first)
    function(second)
    assert len(function.replays) == 1
    parameters = backend.plans["round_trip"].launches[0].parameters
    maps = [a for a, p in zip(module.launches[1].arguments, parameters) if p.kind == "tensor_map"]
    assert second.array.data.ptr in {tensor_map_address(m) for m in maps}


def test_a_wrong_shape_after_a_good_call_raises_what_it_raises_first(monkeypatch: pytest.MonkeyPatch) -> None:
    source = """
__co__ f32 [M, N] summed(f32 [M, N] a, f32 [M, N] b) {
  f32 [M, N] c;
  parallel i by M : block, j by N : thread
    c.at(i, j) = a.at(i, j) + b.at(i, j);
  return c;
}
"""
    backend, _ = install(monkeypatch, source)
    fresh, _ = install(monkeypatch, source)
    with pytest.raises(ChoreoError) as first:
        fresh.function("summed")(array(4, 8), array(4, 9))
    function = backend.function("summed")
    function(array(4, 8), array(4, 8))
    function(array(4, 8), array(4, 8))
    with pytest.raises(ChoreoError) as after:
        function(array(4, 8), array(4, 9))
    assert str(after.value) == str(first.value)
    assert "dimension 1 (N) must be 8" in str(after.value)
    with pytest.raises(ChoreoError, match="takes 2 arguments"):
        function(array(4, 8))


READS_AN_ELEMENT = """
__co__ void guarded(s32 [N] x, s32 [N] &out) {
  parallel t by N : block
    out.at(t) = x.at(t);
  if (out.at(0) == 0) {
    parallel t by N : block
      out.at(t) = 1;
  }
}
"""


@pytest.mark.parametrize(
    ("source", "reason"),
    [(READS_AN_ELEMENT, "reads an element at line 5"), (program("host_loop_launches"), "writes an element")],
)
def test_a_plan_whose_host_work_depends_on_more_than_the_key_is_never_replayed(
    monkeypatch: pytest.MonkeyPatch, source: str, reason: str
) -> None:
    backend, module = install(monkeypatch, source)
    counts = Counts(monkeypatch)
    (called,) = (backend.function(name) for name in backend.plans)
    assert reason in str(called.not_replayed)
    x, out = array(4, 8, dtype=np.int32), array(4, 8, dtype=np.int32)
    if source is READS_AN_ELEMENT:
        x, out = array(8, dtype=np.int32), array(8, dtype=np.int32)
    for _ in range(2):
        called(x, out)
    assert counts.bound == 2 and not called.replays
    if source is READS_AN_ELEMENT:  # each call read what its first kernel wrote (nothing, here: zeros)
        assert [launch.kernel for launch in module.launches] == ["guarded_kernel", "guarded_kernel_2"] * 2


def test_a_host_print_is_never_replayed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = """
__co__ void shown(f32 [N] &out) {
  println("N is ", N);
  parallel t by N : block
    out.at(t) = 1.0f;
}
"""
    backend, module = install(monkeypatch, source)
    function = backend.function("shown")
    out = array(8)
    function(out)
    function(out)
    assert capsys.readouterr().out == "N is 8\nN is 8\n"
    assert "prints" in str(function.not_replayed) and len(module.launches) == 2


def test_host_arrays_take_the_slow_path(monkeypatch: pytest.MonkeyPatch) -> None:
    backend, _ = install(monkeypatch, program("chunkat_cdiv_copy"))
    counts = Counts(monkeypatch)
    function = backend.function("round_trip")
    x = np.ones((100, 40), np.float32)
    function(x)
    function(x)
    assert counts.bound == 2 and not function.replays


def test_scratch_and_a_cooperative_launch_are_made_anew_for_each_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend, module = install(monkeypatch, program("local_sized_by_arguments"))
    function = backend.function("reversed_rows")
    x = array(3, 10)
    function(x)
    function(x)
    parameters = backend.plans["reversed_rows"].launches[0].parameters
    scratch = [i for i, p in enumerate(parameters) if p.kind == "scratch"]
    assert scratch and function.replays
    first, second = module.launches
    for position in scratch:
        assert first.arguments[position] is not second.arguments[position]
        assert first.arguments[position].nbytes == second.arguments[position].nbytes > 0

    backend, module = install(monkeypatch, program("cooperative_grid_exchange"))
    function = backend.function("neighbours")
    x = array(4, 64)
    function(x)
    backend.grid_barrier.host[:] = 7  # as a launch leaves the counters
    function(x)
    assert function.replays and [launch.cooperative for launch in module.launches] == [True, True]
    assert not backend.grid_barrier.host.any()  # zeroed before the replayed launch too


def test_a_replayed_call_reports_failures_as_the_slow_path_does(monkeypatch: pytest.MonkeyPatch) -> None:
    backend, module = install(monkeypatch, program("chunkat_cdiv_copy"))
    function = backend.function("round_trip")
    x = array(100, 40)
    function(x)
    kernel = module.loaded["round_trip_kernel"]
    kernel.failure = RuntimeError("launch refused")
    with pytest.raises(ChoreoError) as replayed:
        function(x)
    assert function.replays
    slow, slow_module = install(monkeypatch, program("chunkat_cdiv_copy"))
    slow.function("round_trip")  # the kernel loads at the first launch
    slow_module.get_function("round_trip_kernel").failure = RuntimeError("launch refused")
    with pytest.raises(ChoreoError) as first:
        slow.function("round_trip")(x)
    assert str(replayed.value) == str(first.value)
    assert "CUDA failed in kernel round_trip_kernel" in str(replayed.value)

    kernel.failure = None
    waited = []
    monkeypatch.setattr(cuda.CudaFunction, "_synchronize", lambda self, cupy: waited.append(self.name))
    function(x)
    assert waited == ["round_trip"]  # not .async: the replayed call waits for its kernel too
    monkeypatch.setattr(cuda, "_lost_context", ["the context is gone"])
    with pytest.raises(ChoreoError, match="the context is gone"):
        function(x)


def test_the_gemm_benchmark_is_replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    """bench/host_overhead.py times this call on the GPU: it must take the replay."""
    source = (Path(__file__).parent.parent / "bench" / "gemm_ws_persistent.co").read_text()
    backend, module = install(monkeypatch, source, {"GROUP_M": 8, "TMA_STORE": 1})
    function = backend.function("gemm_ws_persistent")
    assert function.not_replayed is None
    a, b, out = (
        array(256, 256, dtype=np.float16),
        array(256, 256, dtype=np.float16),
        array(256, 256, dtype=np.float16),
    )
    assert function(a, b, out) is None and function(a, b, out) is None
    assert len(function.replays) == 1 and len(module.launches) == 2


REPLAYABLE = [p for p in PROGRAMS if p.call is not None and "cuda" in p.targets]


def device_arguments(program: Program, seed: int, device: Callable[[np.ndarray], Any]) -> list[Any]:
    return [
        device(value) if isinstance(value, np.ndarray) else value
        for value in make_arguments(program.arguments, seed).values()
    ]


@pytest.mark.parametrize("program", [pytest.param(p, id=p.name) for p in REPLAYABLE])
def test_every_program_of_the_corpus_launches_the_same_again(
    monkeypatch: pytest.MonkeyPatch, program: Program
) -> None:
    """Each CUDA program of the corpus, called twice on the same fake arrays: where it can be replayed,
    the second call evaluates nothing and launches what the first launched."""
    backend, module = install(monkeypatch, program.source)
    function = backend.function(program.function)
    if function.not_replayed is not None:
        return
    arguments = device_arguments(program, 0, FakeArray)
    counts = Counts(monkeypatch)
    function(*arguments)
    first, after_first = list(module.launches), counts.now()
    function(*arguments)
    assert counts.now() == after_first and len(function.replays) == 1
    second = module.launches[len(first) :]
    assert len(second) == len(first)
    for one, other in zip(first, second):
        assert (one.kernel, one.grid, one.block, one.shared_mem, one.cooperative) == (
            other.kernel,
            other.grid,
            other.block,
            other.shared_mem,
            other.cooperative,
        )
        for a, b in zip(one.arguments, other.arguments, strict=True):
            if isinstance(a, FakeArray | np.ndarray):  # an array, a tensor map
                assert (type(a), a.shape, a.dtype) == (type(b), b.shape, b.dtype)
            else:
                assert type(a) is type(b) and a == b


ON_THE_GPU = [  # tensor maps, scratch, a cooperative launch, host scalars between launches, shared memory
    # sized at launch, WGMMA, TMA stores of tails, a buffer array at host level
    "chunkat_cdiv_copy.co",
    "local_sized_by_arguments.co",
    "cooperative_grid_exchange.co",
    "host_values_between_launches.co",
    "shared_sized_at_launch.co",
    "gemm_f16_accumulator.co",
    "tma_store_tails.co",
    "buffer_array_global.co",
]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ON_THE_GPU)
def test_a_replayed_call_on_the_gpu_computes_what_the_slow_path_computes(name: str) -> None:
    """The first call with CuPy arrays records; the second, on other data, is replayed and must give
    what the slow path (NumPy arguments) gives for that data, results and written arguments alike."""
    import cupy  # type: ignore[import-not-found]

    import choreo_kernel as ck

    program = next(p for p in REPLAYABLE if p.name == name)
    function = ck.compile(program.source, target="cuda", filename=name).function(program.function)
    function(*device_arguments(program, 0, cupy.asarray))
    replayed_arguments = device_arguments(program, 1, cupy.asarray)
    replayed = function(*replayed_arguments)
    assert len(function.replays) == 1  # type: ignore[attr-defined]
    slow_arguments = list(make_arguments(program.arguments, 1).values())
    slow = function(*slow_arguments)
    if slow is not None:
        assert_close(replayed.get(), slow.get(), program.tol, "the result")
    for got, expected in zip(replayed_arguments, slow_arguments):
        if isinstance(expected, np.ndarray):
            assert_close(got.get(), expected, program.tol, "an argument")
