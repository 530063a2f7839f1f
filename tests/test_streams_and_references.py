"""`stream` parameters with `parallel<s>`, and parameters passed by reference (`&`).

On the sim, launches run in program order whatever their streams, so a stream argument changes
nothing but must still be a stream. On the GPU (marked `gpu`), launches on CuPy streams keep program
order where one reads what another wrote, `parallel.async<s>` returns before its kernel ends and
its result is ordered on the current stream, and a parameter passed by reference is written back
into a NumPy argument while one passed by value is not.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import choreo_kernel as ck
from choreo_kernel.compiler.driver import analyze

CHAINED = """
__co__ f32 [N] chained(stream s0, stream s1, f32 [N] a) {
  f32 [N] b;
  f32 [N] c;
  parallel<s0> p by N / 128 : block, t by 128 : thread
    b.at(p # t) = a.at(p # t) + 1.0f;
  parallel<s1> p by N / 128 : block, t by 128 : thread
    c.at(p # t) = b.at(p # t) * 2.0f;
  return c;
}
"""

ASYNC = """
__co__ f32 [N] doubled(stream s, f32 [N] a) {
  f32 [N] b;
  parallel.async<s> p by N / 128 : block, t by 128 : thread {
    mutable f32 v = a.at(p # t);
    foreach k in [ROUNDS] { v = v * 1.0f + 0.0f; }
    b.at(p # t) = v * 2.0f;
  }
  return b;
}
"""

WRITES = """
__co__ void fill(f32 [N] &by_reference, f32 [N] by_value) {
  parallel p by N / 64 : block, t by 64 : thread {
    by_reference.at(p # t) = 7.0f;
    by_value.at(p # t) = 7.0f;
  }
}
"""


def test_a_stream_argument_must_be_a_stream() -> None:
    module = ck.compile(CHAINED, target="sim")
    with pytest.raises(ck.ChoreoError, match="parameter 's0' is a stream"):
        module.chained(1.5, None, np.zeros(128, np.float32))


def test_streams_change_nothing_on_the_sim() -> None:
    module = ck.compile(CHAINED, target="sim")
    a = np.arange(256, dtype=np.float32)
    np.testing.assert_array_equal(module.chained(None, 12345, a), (a + 1) * 2)


def test_each_launch_keeps_its_stream_in_the_host_plan() -> None:
    analysis = analyze(CHAINED, target="cuda")
    lowered = analysis.lowered
    assert lowered is not None
    launches = lowered.plans["chained"].launches
    assert [launch.stream.name if launch.stream else None for launch in launches] == ["s0", "s1"]


def test_a_parameter_passed_by_reference_is_written_back_on_the_sim() -> None:
    module = ck.compile(WRITES, defines={"N": 128}, target="sim")
    by_reference, by_value = np.zeros(128, np.float32), np.zeros(128, np.float32)
    module.fill(by_reference, by_value)
    assert (by_reference == 7).all()
    assert (by_value == 0).all()


def test_a_read_only_array_cannot_be_passed_by_reference() -> None:
    module = ck.compile(WRITES, defines={"N": 128}, target="sim")
    frozen = np.zeros(128, np.float32)
    frozen.setflags(write=False)
    with pytest.raises(ck.ChoreoError, match="passed by reference"):
        module.fill(frozen, np.zeros(128, np.float32))


# ---------------------------------------------------------------- on the GPU


def _cupy() -> Any:
    import cupy  # type: ignore[import-not-found]

    return cupy


@pytest.mark.gpu
def test_launches_on_two_streams_keep_program_order() -> None:
    cupy = _cupy()
    module = ck.compile(CHAINED, target="cuda")
    a = cupy.arange(1 << 20, dtype=cupy.float32)
    s0, s1 = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    for _ in range(3):
        result = module.chained(s0, s1, a)
        np.testing.assert_array_equal(result.get(), ((a + 1) * 2).get())


@pytest.mark.gpu
def test_a_raw_stream_handle_and_none_are_streams() -> None:
    cupy = _cupy()
    module = ck.compile(CHAINED, target="cuda")
    a = cupy.arange(1024, dtype=cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    np.testing.assert_array_equal(module.chained(stream.ptr, None, a).get(), ((a + 1) * 2).get())


@pytest.mark.gpu
def test_an_async_launch_on_a_stream_is_ordered_on_the_current_stream() -> None:
    cupy = _cupy()
    module = ck.compile(ASYNC, defines={"ROUNDS": 20000}, target="cuda")
    a = cupy.arange(1 << 16, dtype=cupy.float32)
    side = cupy.cuda.Stream(non_blocking=True)
    result = module.doubled(side, a)
    total = cupy.sum(result)  # on the current stream: must see the finished kernel
    assert float(total.get()) == float(cupy.sum(a * 2).get())


@pytest.mark.gpu
def test_a_parameter_passed_by_reference_is_written_back_on_the_gpu() -> None:
    module = ck.compile(WRITES, defines={"N": 128}, target="cuda")
    by_reference, by_value = np.zeros(128, np.float32), np.zeros(128, np.float32)
    module.fill(by_reference, by_value)
    assert (by_reference == 7).all()
    assert (by_value == 0).all()
