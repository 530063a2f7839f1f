"""Device code: what of a source's C++ part is device code, how calls, atomics and inline assembly
are checked and lowered, and how the sim runs them (its host build, its messages, its atomics)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import choreo_kernel as ck
from choreo_kernel.compiler import ast, printer
from choreo_kernel.compiler.cuda import emit_program
from choreo_kernel.compiler.devicecode import DevicePart, cell_parts, declared_name, merged, render
from choreo_kernel.compiler.driver import analyze
from choreo_kernel.runtime.compile_errors import NvrtcFailure, user_errors
from choreo_kernel.runtime.sim.calls import atomic
from choreo_kernel.runtime.sim.device_library import host_compiler
from choreo_kernel.runtime.sim.views import Element

needs_compiler = pytest.mark.skipif(
    host_compiler() is None, reason="the sim builds device code with a C++ compiler"
)
NVCC = shutil.which("nvcc")

SOURCE = """\
#include <cstdio>
int helper_on_the_host(int x) { return x + 1; }
template <int N>
__device__ float scaled(float v) { return N * v; }
__cok__ {
struct Pair { float a, b; };
__device__ float sum(Pair p) { return p.a + p.b; }
}
namespace lib { __device__ int twice(int x) { return 2 * x; } }
int main() { std::printf("%d", helper_on_the_host(1)); }
__co__ f32 [4] f(f32 [4] x) {
  f32 [4] y;
  parallel t by 4 : thread {
    y.at(t) = call scaled<3>(x.at(t));
  }
  return y;
}
"""


# ------------------------------------------------------------------ parsing


def _statements(body: str) -> tuple[ast.Stmt, ...]:
    source = f"__co__ void f(s32 [8] a, s32 n) {{\n  parallel p by 8 : thread {{\n{body}\n  }}\n}}\n"
    program = analyze(source, target="cuda").program
    (function,) = program.functions
    parallel = function.body.body[0]
    assert isinstance(parallel, ast.Parallel) and isinstance(parallel.body, ast.Block)
    return parallel.body.body


def test_template_arguments_are_expressions_types_and_names() -> None:
    (stmt,) = _statements("call ns::inner::f<f32, 1 + 7, #p * 2, mylib::MODE, LIMIT>(a.data, n > 0 ? n : 1);")
    assert isinstance(stmt, ast.ExprStmt) and isinstance(stmt.expr, ast.DeviceCall)
    call = stmt.expr
    assert call.callee == "ns::inner::f" and call.template_args is not None
    kinds = [
        (arg.is_type, arg.text, None if arg.expr is None else printer.expression(arg.expr))
        for arg in call.template_args
    ]
    assert kinds == [
        (True, "f32", None),
        (False, None, "1 + 7"),
        (False, None, "#p * 2"),
        (False, "mylib::MODE", None),
        (False, None, "LIMIT"),
    ]
    assert printer.expression(call.args[1]) == "n > 0 ? n : 1"


def test_a_call_is_an_expression_and_comparisons_still_parse_next_to_templates() -> None:
    stmts = _statements(
        "mutable int k = call g<2>(n) ;\nif (call h(k) > 1 && n < 3) { k = 1; }\nmutable int e = call e<>();"
    )
    assert [type(s).__name__ for s in stmts] == ["ScalarDecl", "If", "ScalarDecl"]
    condition = stmts[1].condition  # type: ignore[attr-defined]
    assert printer.expression(condition) == "call h(k) > 1 && n < 3"
    assert stmts[2].init.template_args == ()  # type: ignore[attr-defined]


def test_inline_assembly_keeps_its_parts_as_written() -> None:
    (stmt,) = _statements(
        '__asm__ volatile("add.s32 %0, %1, %2;\\n" : [out] "=r"(a.at(p)) : "r"(n), "r"(p) : "memory", "cc");'
    )
    assert isinstance(stmt, ast.Asm) and stmt.volatile
    assert stmt.template == "add.s32 %0, %1, %2;\\n"  # escapes as written: emitted as they are
    assert [(o.name, o.constraint) for o in stmt.outputs] == [("out", "=r")]
    assert [o.constraint for o in stmt.inputs] == ["r", "r"] and stmt.clobbers == ("memory", "cc")
    (plain,) = _statements('asm("membar.gl;");')
    assert isinstance(plain, ast.Asm) and not plain.volatile and not plain.outputs


# ------------------------------------------------------------------ what device code is


def test_device_code_is_the_cok_blocks_and_the_declarations_that_say_device() -> None:
    parts = analyze(SOURCE, target="sim", filename="f.co").device_code
    assert [(part.name, part.line) for part in parts] == [("scaled", 3), ("Pair", 6), ("sum", 7), ("lib", 9)]
    assert all(part.origin == "f.co" for part in parts)
    texts = "\n".join(part.text for part in parts)
    assert "main" not in texts and "helper_on_the_host" not in texts and "#include" not in texts


def test_a_part_keeps_its_columns_so_messages_point_where_it_was_written() -> None:
    (part,) = cell_parts("\n\n    __device__ int three() { return 3; }\n", "cell[2]")
    assert (part.line, part.name, part.text.index("__device__")) == (3, "three", 4)


@pytest.mark.parametrize(
    ("declaration", "name"),
    [
        ("template <typename T, int N> __device__ void fill(T* p) {}", "fill"),
        ("__device__ __forceinline__ unsigned lane_id() { return 0; }", "lane_id"),
        ("struct Pair { float a; };", "Pair"),
        ("namespace mylib { __device__ int f(); }", "mylib"),
        ("__constant__ float table[4] = {1, 2, 3, 4};", "table"),
        ("__device__ int counter;", "counter"),
        ("#include <cuda_fp16.h>", None),
    ],
)
def test_the_name_a_declaration_declares(declaration: str, name: str | None) -> None:
    parts = cell_parts(declaration, "cell[1]")
    assert [part.name for part in parts] == [name]
    if name is not None:
        assert declared_name(declaration) == name


def test_a_later_definition_replaces_the_earlier_one_and_directives_are_kept_once() -> None:
    first = cell_parts(
        "#include <x.h>\n__device__ int f() { return 1; }\n__device__ int g() { return 2; }", "cell[1]"
    )
    second = cell_parts("#include <x.h>\n__device__ int f() { return 3; }", "cell[2]")
    kept = merged(first, second)
    assert [(part.name, part.origin) for part in kept] == [
        (None, "cell[1]"),
        ("g", "cell[1]"),
        ("f", "cell[2]"),
    ]
    assert "return 3" in kept[-1].text


def test_the_line_map_finds_each_lines_part_and_its_line_there() -> None:
    parts = (DevicePart("int a;\nint b;", "x.co", 10, "a"), DevicePart("int c;", "cell[4]", 2, "c"))
    lines, line_map = render(parts, 20)
    assert lines == ["// device code from x.co", "int a;", "int b;", "// device code from cell[4]", "int c;"]
    assert line_map.locate(22) == (parts[0], 11)
    assert line_map.locate(24) == (parts[1], 2)
    assert line_map.locate(20) is None and line_map.locate(25) is None


def test_the_emitted_unit_holds_the_device_code_before_the_kernels() -> None:
    cuda = emit_program(analyze(SOURCE, filename="f.co"))
    device, kernel = cuda.index("__device__ float scaled"), cuda.index("__global__")
    assert device < kernel
    assert "scaled<3>(x[t])" in cuda and "static_cast<float>" in cuda
    assert "main" not in cuda[device:kernel]


# ------------------------------------------------------------------ CUDA's messages at the user's lines


def _failure(log: str) -> NvrtcFailure:
    return NvrtcFailure(log)


def test_an_nvrtc_error_in_device_code_points_at_the_source_line() -> None:
    analysis = analyze(SOURCE, filename="f.co")
    assert analysis.lowered is not None
    unit = analysis.lowered.source
    line = unit.split("\n").index("__device__ float scaled(float v) { return N * v; }") + 1
    error = user_errors(
        _failure(f'choreo.cu({line}): error: identifier "N" is undefined'),
        unit,
        analysis.lowered.device_lines,
        SOURCE,
        "f.co",
    )
    (diagnostic,) = error.diagnostics
    assert (diagnostic.line, diagnostic.message) == (
        4,
        'NVRTC rejects this device code: identifier "N" is undefined',
    )


def test_an_nvrtc_error_in_a_kernel_is_the_calls_when_its_statement_calls() -> None:
    analysis = analyze(SOURCE, filename="f.co")
    assert analysis.lowered is not None
    unit = analysis.lowered.source
    line = next(n for n, text in enumerate(unit.split("\n"), 1) if "scaled<3>" in text)
    log = f"choreo.cu({line}): error: no instance of function template matches"
    error = user_errors(_failure(log), unit, analysis.lowered.device_lines, SOURCE, "f.co")
    assert [(d.line, "call" in d.message) for d in error.diagnostics] == [(14, True)]
    unrelated = user_errors(
        _failure("choreo.cu(3): error: something"), unit, analysis.lowered.device_lines, SOURCE, "f.co"
    )
    assert "a bug in choreo-kernel's lowering" in str(unrelated)


def _nvcc_errors(source: str, folder: Path) -> ck.ChoreoError:
    """Build `source` (as f.co) with nvcc for sm_90a, which must fail, and map its messages to the source."""
    from choreo_kernel.compiler.cuda import header_text

    analysis = analyze(source, filename="f.co")
    assert analysis.lowered is not None
    unit = folder / "choreo.cu"
    unit.write_text(emit_program(analysis, self_contained=False))
    (folder / "choreo_runtime.cuh").write_text(header_text())
    done = subprocess.run(
        [NVCC, "-arch=sm_90a", "-cubin", "-o", str(folder / "x.cubin"), str(unit)],
        capture_output=True,
        text=True,
        cwd=folder,
    )
    assert done.returncode != 0
    return user_errors(
        _failure(done.stdout + done.stderr), unit.read_text(), analysis.lowered.device_lines, source, "f.co"
    )


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
def test_nvcc_and_the_map_agree_on_where_a_device_code_error_is(tmp_path: Path) -> None:
    """nvcc writes messages as NVRTC does; a real one lands on the user's line."""
    broken = SOURCE.replace("return p.a + p.b;", "return p.a + p.c;")
    error = _nvcc_errors(broken, tmp_path)
    assert [d.line for d in error.diagnostics] == [7]
    assert '"c"' in error.diagnostics[0].message


# ------------------------------------------------------------------ the sim's host build


@needs_compiler
def test_the_sim_reports_a_device_code_error_at_its_line() -> None:
    with pytest.raises(ck.ChoreoError) as caught:
        ck.compile(SOURCE.replace("return p.a + p.b;", "return p.a + ;"), target="sim", filename="f.co")
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.line == 7 and "C++ compiler" in diagnostic.message


@needs_compiler
def test_without_a_compiler_the_sim_says_so_at_the_first_call(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("CHOREO_CACHE_DIR", str(tmp_path))
    with pytest.raises(ck.ChoreoError) as caught:
        ck.compile(SOURCE.replace("3>", "5>"), target="sim", filename="f.co")
    assert caught.value.diagnostics
    diagnostic = caught.value.diagnostics[0]
    assert diagnostic.line == 14 and "no C++ compiler was found ($CXX is" in diagnostic.message


def test_no_compiler_is_needed_for_a_program_without_calls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    source = SOURCE.replace("call scaled<3>(x.at(t))", "x.at(t) * 3.0f")
    np.testing.assert_array_equal(
        ck.compile(source, target="sim").f(np.ones(4, np.float32)), np.full(4, 3.0, np.float32)
    )


@needs_compiler
def test_the_sim_caches_the_built_library(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CHOREO_CACHE_DIR", str(tmp_path))
    source = SOURCE.replace("3>", "7>")
    ck.compile(source, target="sim", filename="cached.co")
    (built,) = (tmp_path / "sim").glob("*.so")
    first = built.stat().st_mtime_ns
    module = ck.compile(source + "\n", target="sim", filename="cached.co")  # another source, the same unit
    assert [p.stat().st_mtime_ns for p in (tmp_path / "sim").glob("*.so")] == [first]
    np.testing.assert_array_equal(module.f(np.ones(4, np.float32)), np.full(4, 7.0, np.float32))


@needs_compiler
def test_a_device_function_that_waits_for_other_threads_stops_with_a_message() -> None:
    source = """\
__device__ void shared_sum(float* p) { __syncwarp(); p[threadIdx.x] += 1.0f; }
__co__ f32 [32] g(f32 [32] x) {
  f32 [32] y;
  parallel t by 32 : thread {
    y.at(t) = x.at(t);
    call shared_sum(y);
  }
  return y;
}
"""
    with pytest.raises(ck.ChoreoError) as caught:
        ck.compile(source, target="sim", filename="g.co").g(np.zeros(32, np.float32))
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.line == 6
    assert "__syncwarp()" in diagnostic.message and "one thread after the other" in diagnostic.message


@needs_compiler
def test_a_call_after_a_stopped_one_runs_without_the_old_failure() -> None:
    """Each entry point clears what stopped the call before it, which was reported then."""
    source = """\
__device__ float checked(float v) { if (v < 0.0f) __syncwarp(); return 2.0f * v; }
__co__ f32 [4] h(f32 [4] x) {
  f32 [4] y;
  parallel t by 4 : thread {
    y.at(t) = call checked(x.at(t));
  }
  return y;
}
"""
    module = ck.compile(source, target="sim", filename="h.co")
    with pytest.raises(ck.ChoreoError, match="__syncwarp"):
        module.h(np.full(4, -1.0, np.float32))
    np.testing.assert_array_equal(module.h(np.ones(4, np.float32)), np.full(4, 2.0, np.float32))


CALLS = """\
__device__ int f() { return 1; }
__device__ int g(int x) { return x; }
__co__ void k(s32 [8] a) {
  parallel p by 8 : thread {
    mutable int r = 0;
    BODY
    a.at(p) = r;
  }
}
"""


@pytest.mark.parametrize("target", ["cuda", "sim"])
def test_a_parenthesized_target_takes_the_result_of_a_call(target: str) -> None:
    analysis = analyze(CALLS.replace("BODY", "(r) = call f();"), target=target)
    assert analysis.diagnostics == []
    (function,) = analysis.functions.values()
    (call,) = function.device_calls.values()
    assert call.result == "s32"


def test_a_call_passed_to_a_call_is_one_error() -> None:
    diagnostics = analyze(CALLS.replace("BODY", "call g(call f());"), target="cuda").diagnostics
    assert [d.message for d in diagnostics] == [
        "the result of device function 'f' has no type as the 1st argument of 'g': assign it to a typed "
        "mutable scalar first (mutable int r = call ...)"
    ]
    assert (diagnostics[0].line, diagnostics[0].column) == (6, 12)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
def test_device_code_from_a_cuda_cell_sees_the_cuda_target_macro(tmp_path: Path) -> None:
    """A %%cuda cell's code is not preprocessed by Choreo: the header defines __CHOREO_CUDA__ for it."""
    cell = cell_parts(
        "#ifndef __CHOREO_CUDA__\n#error built without __CHOREO_CUDA__\n#endif\n"
        "__device__ float twice(float v) { return 2.0f * v; }\n",
        "cell[1]",
    )
    source = "__co__ f32 [4] f(f32 [4] x) {\n  f32 [4] y;\n  parallel t by 4 : thread {\n"
    source += "    y.at(t) = call twice(x.at(t));\n  }\n  return y;\n}\n"
    analysis = analyze(source, target="cuda", host_code=False, device_code=cell)
    assert not analysis.has_errors
    unit = tmp_path / "choreo.cu"
    unit.write_text(emit_program(analysis, self_contained=True))
    done = subprocess.run(
        [NVCC, "-arch=sm_90a", "-cubin", "-o", str(tmp_path / "x.cubin"), str(unit)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# ------------------------------------------------------------------ atomics on the sim


def test_atomics_serialize_threads_in_order_and_return_the_old_values() -> None:
    counts = np.zeros(3, np.int32)
    bins = np.array([0, 2, 0, 0, 1, 2], dtype=np.int64)
    old = atomic("__atomic_add", Element(counts, (bins,)), [1], 6)
    assert counts.tolist() == [3, 1, 2]
    assert old.tolist() == [0, 0, 1, 2, 0, 1]  # each thread sees the ones before it on its element


def test_an_integer_add_wraps_as_on_the_gpu() -> None:
    word = np.array([2**31 - 2], dtype=np.int32)
    old = atomic("__atomic_add", Element(word, (0,)), [1], 3)
    assert old.tolist() == [2**31 - 2, 2**31 - 1, -(2**31)]
    assert word.tolist() == [-(2**31) + 1]


def test_compare_and_swap_lets_one_thread_win() -> None:
    flag = np.zeros(1, np.int32)
    old = atomic("__atomic_cas", Element(flag, (0,)), [0, np.arange(1, 6)], 5)
    assert old.tolist() == [0, 1, 1, 1, 1] and flag.tolist() == [1]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("__atomic_max", 9),
        ("__atomic_min", -4),
        ("__atomic_or", 0b1111),
        ("__atomic_exch", 5),
        ("__atomic_sub", -18),
    ],
)
def test_each_atomic_folds_every_threads_value(name: str, expected: int) -> None:
    values = np.array([3, -4, 9, 4, 1, 0, 5][: 7 if name != "__atomic_or" else 4]) & (
        15 if name == "__atomic_or" else -1
    )
    word = np.zeros(1, np.int64)
    atomic(name, Element(word, (0,)), [values], len(values))
    assert word[0] == expected


def test_float_adds_to_one_element_run_in_thread_order() -> None:
    total = np.zeros(1, np.float32)
    values = np.array([1e8, 1.0, -1e8, 1.0], dtype=np.float32)
    old = atomic("__atomic_add", Element(total, (0,)), [values], 4)
    expected = np.float32(0)
    for position, value in enumerate(values):
        assert old[position] == expected
        expected = np.float32(expected + value)
    assert total[0] == expected


HALF_CALL = """\
__device__ void touch(DATA_TYPE* x) { x[0] = x[0]; }
__co__ void k(global ELEM [32] x) {
  parallel t by 32 : thread {
    call touch(x.chunkat(t));
  }
}
"""


@pytest.mark.parametrize(
    ("elem", "c_type", "header"), [("f16", "__half", "cuda_fp16.h"), ("bf16", "__nv_bfloat16", "cuda_bf16.h")]
)
def test_half_data_is_passed_as_cudas_own_type_with_its_header(elem: str, c_type: str, header: str) -> None:
    source = HALF_CALL.replace("DATA_TYPE", c_type).replace("ELEM", elem)
    emitted = emit_program(analyze(source, filename="half.co"))
    assert f"#include <{header}>" in emitted
    assert f"touch(reinterpret_cast<{c_type}*>(x + t))" in emitted


def test_cuda_headers_are_included_only_where_half_types_are_used() -> None:
    source = HALF_CALL.replace("DATA_TYPE", "float").replace("ELEM", "f32")
    assert "#include <cuda_" not in emit_program(analyze(source, filename="float.co"))


def test_nvrtc_is_given_cudas_include_directory_only_for_the_half_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from choreo_kernel.runtime import cuda_include

    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "cuda_fp16.h").write_text("// CUDA's header\n")
    monkeypatch.setenv("CUDA_PATH", str(tmp_path))
    cuda_include.cuda_include_directory.cache_clear()
    try:
        assert cuda_include.include_options("int x;\n") == ()
        assert cuda_include.include_options("#include <cuda_fp16.h>\n") == (f"-I{tmp_path / 'include'}",)
        (tmp_path / "include" / "cuda_fp16.h").unlink()
        monkeypatch.setattr(cuda_include.sys, "path", [])
        monkeypatch.delenv("CUDA_HOME", raising=False)
        monkeypatch.setattr(cuda_include, "_cupy_cuda_path", lambda: None)
        monkeypatch.setattr(cuda_include, "_TOOLKIT", str(tmp_path / "none"))
        cuda_include.cuda_include_directory.cache_clear()
        with pytest.raises(cuda_include.MissingCudaHeaders, match="CUDA_PATH"):
            cuda_include.include_options("#include <cuda_bf16.h>\n")
    finally:
        cuda_include.cuda_include_directory.cache_clear()


UNDEFINED_CALLS = """\
__co__ f32 [4] f(f32 [4] x) {
  f32 [4] y;
  parallel t by 4 : thread {
    call kernel(x);
    y.at(t) = x.at(t);
    mutable int k = call mylib::compute<64>(t);
    y.at(t) = k;
  }
  return y;
}
"""


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
def test_a_call_of_a_function_nothing_defines_is_reported_at_its_callee(tmp_path: Path) -> None:
    """nvcc's (and NVRTC's) 'identifier "kernel" is undefined' and 'name followed by "::" must be a class or
    namespace name' become one error at each callee, in the user's words; not a dump of the compiler."""
    error = _nvcc_errors(UNDEFINED_CALLS, tmp_path)
    assert [(d.line, d.column, d.end_column, d.message) for d in error.diagnostics] == [
        (4, 10, 16, "'kernel' is not defined: declare it in the file's C++ part or in a %%cuda cell"),
        (6, 26, 40, "'mylib::compute' is not defined: declare it in the file's C++ part or in a %%cuda cell"),
    ]
