"""Device functions in a notebook: `%%cuda` cells, and `__device__` functions in Choreo cells, define
C++ that later Choreo cells `call`; here on the sim, through a real kernel."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kernel_driver import KernelDriver, ok

from choreo_kernel.runtime.sim.device_library import host_compiler

pytestmark = pytest.mark.skipif(
    host_compiler() is None, reason="the sim builds device code with a C++ compiler"
)

# Calls `shift`, defined by a %%cuda cell before it: each element plus shift(element).
CALLER = """\
%%choreo --target sim
__co__ f32 [8] shifted(f32 [8] x) {
  f32 [8] y;
  parallel t by 8 : thread {
    mutable f32 s = call shift(x.at(t));
    y.at(t) = x.at(t) + s;
  }
  return y;
}"""


def python(driver: KernelDriver, code: str) -> str:
    return ok(driver.run("%%python\n" + code)).stream()


def shifted(driver: KernelDriver) -> list[float]:
    assert driver.run(CALLER).status == "ok", driver.run(CALLER).traceback
    text = python(driver, "import numpy as np\nprint(shifted(np.arange(8, dtype=np.float32)).tolist())")
    return [float(v) for v in text.strip()[1:-1].split(",")]


@pytest.fixture(scope="module")
def kernel() -> Iterator[KernelDriver]:
    """One kernel for the module, as one notebook: each test defines `shift` again first."""
    with KernelDriver("choreo") as driver:
        python(driver, "import os\nos.environ['CHOREO_TARGET'] = 'sim'")
        yield driver


def test_a_cuda_cell_defines_functions_that_later_cells_call(kernel: KernelDriver) -> None:
    run = ok(kernel.run("%%cuda\n__device__ float shift(float v) { return 10.0f * v + 1.0f; }"))
    assert "shift" in run.stream()
    assert shifted(kernel) == [v + 10 * v + 1 for v in range(8)]


def test_running_an_edited_cuda_cell_again_replaces_its_function(kernel: KernelDriver) -> None:
    ok(kernel.run("%%cuda\n__device__ float shift(float v) { return 1.0f; }"))
    assert shifted(kernel) == [v + 1 for v in range(8)]
    ok(kernel.run("%%cuda\n__device__ float shift(float v) { return -v; }"))  # no redefinition error
    assert shifted(kernel) == [0.0] * 8


def test_a_cuda_cell_with_an_error_is_reported_at_its_line_and_keeps_the_earlier_functions(
    kernel: KernelDriver,
) -> None:
    ok(kernel.run("%%cuda\n__device__ float shift(float v) { return 2.0f; }"))
    run = kernel.run("%%cuda\n// a second function\n__device__ float broken(float v) { return v +; }")
    assert run.status == "error"
    assert f"cell[{run.reply['execution_count']}]:3:" in run.traceback
    assert "return v +;" in run.traceback
    assert shifted(kernel) == [v + 2 for v in range(8)]


def test_a_device_function_in_a_choreo_cell_serves_later_cells(kernel: KernelDriver) -> None:
    defining = CALLER.replace(
        "%%choreo --target sim\n",
        "%%choreo --target sim\n__device__ float shift(float v) { return v * v; }\n",
    )
    ok(kernel.run(defining.replace("shifted", "squared_plus")))
    assert shifted(kernel) == [v + v * v for v in range(8)]


def test_a_call_of_a_function_no_cell_defined_names_the_call(kernel: KernelDriver) -> None:
    run = kernel.run(CALLER.replace("call shift", "call undefined_shift"))
    assert run.status == "error"
    assert "undefined_shift" in run.traceback and "was not declared" in run.traceback
    assert f"cell[{run.reply['execution_count']}]:5:" in run.traceback
