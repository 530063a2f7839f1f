"""The CUDA backend on a GPU: each covered program matches its REF (and the sim backend, where it
exists), deadlocks and CUDA failures become `ChoreoError`s naming what failed, device arrays
are used in place. Every test here is marked `gpu`; conftest.py skips them without CuPy and a GPU.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from corpus import Program
from cuda_corpus import PROGRAMS
from generators import assert_close, make_arguments
from programs import GUARDED_TRIGGER

import choreo_kernel as ck
from choreo_kernel.compiler.semantics import sparsity
from choreo_kernel.runtime.dtypes import DEVICE_BITS, numpy_dtype

pytestmark = pytest.mark.gpu

RUNNABLE = [p for p in PROGRAMS if p.call is not None and "cuda" in p.targets]


def arguments(program: Program, seed: int = 0) -> dict[str, Any]:
    return make_arguments(program.arguments, seed)


def host(value: Any) -> Any:
    return value.get() if hasattr(value, "get") else value


def as_reference(got: Any, element_type: str | None) -> Any:
    """A CUDA result of a narrow float type comes back as its bits (CuPy has no such dtype): read them
    as the declared element type (`element_type`; None where it is not a narrow float)."""
    got = np.asarray(got)
    if element_type in DEVICE_BITS and got.dtype == DEVICE_BITS[element_type]:
        return got.view(numpy_dtype(element_type))
    return got


def result_type(module: Any, function: str) -> str | None:
    """The element type `function` returns, as declared in its source."""
    returned = module.analysis.functions[function].function.return_type
    return None if returned is None else returned.name


def argument_type(module: Any, function: str, argument: str) -> str | None:
    """The element type of parameter `argument` of `function`, as declared in its source."""
    params = module.analysis.functions[function].function.params
    return next((p.type.name for p in params if p.name == argument), None)


def run_on_sim(program: Program) -> Any:
    module = ck.compile(program.source, target="sim", filename=program.name)
    return module.function(program.function)(*arguments(program).values())


def sim_available() -> bool:
    try:
        from choreo_kernel.runtime.sim import SimBackend  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("program", [pytest.param(p, id=p.name) for p in RUNNABLE])
def test_program_matches_its_reference_and_sim(program: Program) -> None:
    module = ck.compile(program.source, target="cuda", filename=program.name)
    before = arguments(program)
    passed = {name: value.copy() if hasattr(value, "copy") else value for name, value in before.items()}
    result = module.function(program.function)(*passed.values())
    returned = result_type(module, program.function)
    scope = {
        "np": np,
        "ml_dtypes": ml_dtypes,
        "sparsity": sparsity,
        **before,
    }  # ml_dtypes: the narrow float types
    if program.ref is not None:
        expected = eval(program.ref, scope)
        assert_close(as_reference(host(result), returned), expected, program.tol, "the result")
    for name, expression in program.ref_args:
        expected = eval(expression, scope)
        got = as_reference(host(passed[name]), argument_type(module, program.function, name))
        assert_close(got, expected, program.tol, f"argument '{name}'")
    if sim_available() and program.ref is not None:
        on_sim = run_on_sim(program)
        assert_close(as_reference(host(result), returned), on_sim, program.tol, "the result against sim")


def test_a_never_triggered_event_raises_naming_it() -> None:
    guarded = ck.compile(GUARDED_TRIGGER, target="cuda").guarded  # no x is large: nothing triggers
    start = time.perf_counter()
    with pytest.raises(ck.ChoreoError, match=r"guarded\(\).*'some'.*line 10"):
        guarded(np.zeros(32, np.float32), np.zeros(32, np.float32))
    assert time.perf_counter() - start < 10
    # The process's CUDA context survives the timeout: the next call runs.
    add = ck.compile(
        (Path(__file__).parent / "conformance/valid/add_blocks_threads.co").read_text(), target="cuda"
    )
    a = np.ones((16, 16), np.float32)
    np.testing.assert_array_equal(add.add(a, a).get(), a * 2)


ILLEGAL_ADDRESS = """
import numpy as np, choreo_kernel as ck
source = '''
__co__ void wild(global f32 [16] out) {
  parallel p by 4096 : block, t by 256 : thread {
    out.at(p * 1000000 + t) = 1.0f;
  }
}
'''
wild = ck.compile(source, target="cuda").wild
add = ck.compile(open(ADD).read(), target="cuda").add
for call in (lambda: wild(np.zeros(16, np.float32)), lambda: wild(np.zeros(16, np.float32)),
             lambda: add(np.ones((16, 16), np.float32), np.ones((16, 16), np.float32))):
    try:
        call()
        print("returned")
    except ck.ChoreoError as error:
        print("ChoreoError:", error)
"""


def test_an_illegal_address_names_the_function_and_every_later_call_says_the_gpu_is_lost() -> None:
    """In its own process: an illegal address leaves the CUDA context unusable. The first call names the
    function and what to do; every later call says so in one line instead of the driver's error."""
    add = Path(__file__).parent / "conformance/valid/add_blocks_threads.co"
    result = subprocess.run(
        [sys.executable, "-c", ILLEGAL_ADDRESS.replace("ADD", repr(str(add)))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    first, second, third = result.stdout.strip().splitlines()[-3:]
    assert first.startswith("ChoreoError: wild(): CUDA failed in kernel wild_kernel"), (
        result.stdout + result.stderr
    )
    for line in (first, second, third):
        assert "cannot be used again in this process: restart the kernel" in line, line
    assert second == third  # the same one line, whatever is called


def test_device_arrays_are_used_in_place() -> None:
    import cupy

    program = next(p for p in RUNNABLE if p.name == "scale_shift_subspan.co")
    scale_shift = ck.compile(program.source, target="cuda").scale_shift
    x = cupy.arange(32 * 128, dtype=cupy.float32).reshape(32, 128)
    out = cupy.zeros((32, 128), cupy.float32)
    scale_shift(x, out, 2.0, 1.0)
    cupy.testing.assert_allclose(out, x * 2 + 1)


def test_a_bad_argument_is_reported_before_anything_runs() -> None:
    program = next(p for p in RUNNABLE if p.name == "add_blocks_threads.co")
    add = ck.compile(program.source, target="cuda").add
    with pytest.raises(ck.ChoreoError, match="parameter 'b'"):
        add(np.zeros((16, 16), np.float32), np.zeros((16, 32), np.float32))


def test_the_binary_cache_is_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from choreo_kernel.runtime import cuda

    monkeypatch.setenv("CHOREO_CACHE_DIR", str(tmp_path))
    source = ck.compile(RUNNABLE[0].source, target="cuda").cuda_source
    cuda.clear_loaded_modules()
    cuda.compile_module(source)
    assert len(list(tmp_path.glob("*.cubin"))) == 1
    cuda.clear_loaded_modules()
    start = time.perf_counter()
    cuda.compile_module(source)
    assert time.perf_counter() - start < 0.25  # loaded from disk, not compiled again
    assert len(list(tmp_path.glob("*.cubin"))) == 1


# ------------------------------------------------------------------ device code through NVRTC

DEVICE_ERROR = """\
__device__ float broken(float v) { return v + undefined_name; }
__co__ f32 [32] uses(f32 [32] x) {
  f32 [32] y;
  parallel t by 32 : thread {
    y.at(t) = call broken(x.at(t));
  }
  return y;
}
"""


def test_an_nvrtc_error_in_device_code_is_a_diagnostic_at_its_line() -> None:
    with pytest.raises(ck.ChoreoError) as caught:
        ck.compile(DEVICE_ERROR, target="cuda", filename="broken.co")
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.line == 1 and "undefined_name" in diagnostic.message


def test_a_call_nvrtc_rejects_is_a_diagnostic_at_the_call() -> None:
    wrong = DEVICE_ERROR.replace("v + undefined_name", "v").replace(
        "call broken(x.at(t))", "call broken(x.at(t), 2)"
    )
    with pytest.raises(ck.ChoreoError) as caught:
        ck.compile(wrong, target="cuda", filename="wrong.co")
    assert [d.line for d in caught.value.diagnostics] == [5]
    assert "call" in caught.value.diagnostics[0].message


def test_a_cuda_cell_is_checked_with_nvrtc() -> None:
    from choreo_kernel.compiler.devicecode import cell_parts
    from choreo_kernel.module import check_device_code

    good = "\n__device__ float twice(float v) { return 2.0f * v; }\n"
    check_device_code(cell_parts(good, "cell[3]"), "cuda", good, "cell[3]")
    bad = "\n\n__device__ float twice(float v) { return 2.0f * w; }\n"
    with pytest.raises(ck.ChoreoError) as caught:
        check_device_code(cell_parts(bad, "cell[4]"), "cuda", bad, "cell[4]")
    assert [d.line for d in caught.value.diagnostics] == [3]
