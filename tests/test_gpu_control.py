"""On the GPU: device printf writes what the sim prints, a failed `assert` raises a located error and
leaves the GPU usable, and a cooperative launch too large to be resident is refused. (The programs of
tests/cuda/*.co, cooperative ones included, run against NumPy in test_gpu.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from programs import TUPLE_PRINTS

import choreo_kernel as ck

pytestmark = pytest.mark.gpu

PRINTS = """
__co__ void show(s32 [2, 3] x, int n) {
  println("n=", n, " span ", x.span, " f ", 0.25f, " b ", n > 1);
  parallel p by 2 : block, t by 3 : thread {
    println("p", p, " t", t, " x", x.at(p, t));
  }
  parallel p by 2 : block {
    println("block ", p);
  }
  println("after");
}
"""


def _printed(capfd: pytest.CaptureFixture[str], target: str) -> list[str]:
    ck.compile(PRINTS, target=target).show(np.arange(6, dtype=np.int32).reshape(2, 3), 5)
    return capfd.readouterr().out.splitlines()


def test_device_printf_writes_the_lines_the_sim_prints(capfd: pytest.CaptureFixture[str]) -> None:
    on_sim = _printed(capfd, "sim")
    on_gpu = _printed(capfd, "cuda")
    # Host lines keep their place; a kernel's lines may come in any thread order, as printf's do.
    assert on_gpu[0] == on_sim[0] == "n=5 span [2, 3] f 0.250000 b true"
    assert sorted(on_gpu[1:7]) == sorted(on_sim[1:7])
    assert sorted(on_gpu[7:9]) == sorted(on_sim[7:9]) == ["block 0", "block 1"]
    assert on_gpu[9] == on_sim[9] == "after"


CHECKED = """__co__ f32 [64] f(f32 [64] x) {
  f32 [64] y;
  parallel p by 2 : block, t by 32 : thread {
    assert(x.at(p # t) >= 0.0f, "inputs are not negative");
    y.at(p # t) = x.at(p # t) * 2.0f;
  }
  return y;
}
"""


def test_a_failed_device_assert_is_a_located_error_and_the_gpu_stays_usable() -> None:
    module = ck.compile(CHECKED, target="cuda")
    x = np.ones(64, np.float32)
    x[40] = -1
    with pytest.raises(ck.ChoreoError) as raised:
        module.f(x)
    (error,) = raised.value.diagnostics
    assert error.line == 4 and "assertion failed: inputs are not negative" in error.message
    x[40] = 1
    np.testing.assert_array_equal(module.f(x).get(), x * 2)


def test_a_cooperative_launch_larger_than_the_gpu_holds_is_refused() -> None:
    source = """__co__ void f(global f32 [B, 1024] x) {
  parallel b by B : block<cooperative>, t by 1024 : thread {
    x.at(b, t) = 1.0f;
    sync.barrier : block;
  }
}
"""
    module = ck.compile(source, target="cuda")
    with pytest.raises(ck.ChoreoError, match=r"cooperative.*at most"):
        module.f(np.zeros((2000, 1024), np.float32))
    small = np.zeros((4, 1024), np.float32)
    module.f(small)
    np.testing.assert_array_equal(small, 1)


def test_a_bounded_ituple_prints_on_the_gpu_as_on_the_sim(capfd: pytest.CaptureFixture[str]) -> None:
    for target in ("sim", "cuda"):
        ck.compile(TUPLE_PRINTS, target=target).tuples(np.zeros(4, np.int32))
    on_sim_and_gpu = capfd.readouterr().out.splitlines()
    half = len(on_sim_and_gpu) // 2
    assert half == 7 and on_sim_and_gpu[:half] == on_sim_and_gpu[half:]
