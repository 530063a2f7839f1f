"""The math built-ins: one table (compiler/semantics/math.py) that the analysis, the CUDA header and the
sim all follow. What each computes is checked by tests/cuda/math_*.co against NumPy (on the sim here,
on the GPU in test_gpu.py); this file checks the table against the header and the analysis's rules."""

from __future__ import annotations

import re

import pytest

import choreo_kernel as ck
from choreo_kernel.compiler.analysis.values import Scalar
from choreo_kernel.compiler.cuda import header_text
from choreo_kernel.compiler.driver import analyze
from choreo_kernel.compiler.semantics.math import MATH_FUNCTIONS


def _math_namespace() -> str:
    header = header_text()
    start = header.index("namespace math {")
    return header[start : header.index("}  // namespace math", start)]


@pytest.mark.parametrize("function", MATH_FUNCTIONS.values(), ids=lambda f: f.name)
def test_every_built_in_has_a_device_function(function: object) -> None:
    namespace = _math_namespace()
    device = function.device  # type: ignore[attr-defined]
    defined = re.search(rf"(\b{device}\(|CHOREO_MATH_\w+\({device},|using choreo::{device};)", namespace)
    assert defined, f"choreo::math::{device} is not in choreo_runtime.cuh"


def _errors(body: str, params: str = "f32 [8] x") -> list[ck.Diagnostic]:
    source = f"__co__ void f({params}) {{\n  parallel p by 1 : block, t by 8 : thread {{\n{body}\n  }}\n}}\n"
    return [d for d in ck.check(source, target="sim") if d.severity == "error"]


@pytest.mark.parametrize(
    ("call", "words"),
    [
        ("__pow(x.at(t))", ["__pow", "2 argument"]),
        ("__sin(x.at(t), 1.0f)", ["__sin", "1 argument"]),
        ("__fmaf(1.0f, 2.0f)", ["__fmaf", "3 argument"]),
        ("__alignup(x.at(t), 4)", ["__alignup", "integers", "f32"]),
        ("__alignup(t, 0)", ["multiple of 0"]),
        ("__sqrt(x)", ["__sqrt", "scalars", "f32 [8]"]),
    ],
)
def test_misused_built_ins_are_located_errors(call: str, words: list[str]) -> None:
    errors = _errors(f"    f32 v = {call};")
    assert errors, f"{call} was accepted"
    assert errors[0].line == 3
    assert all(word in errors[0].message for word in words), errors[0].message


def _value_of_r(source: str) -> Scalar:
    analysis = analyze(source, target="sim")
    assert not [d for d in analysis.diagnostics if d.severity == "error"], analysis.diagnostics
    (value,) = {s.value for s in analysis.functions["f"].symbol_of.values() if s.name == "r"}
    assert isinstance(value, Scalar)
    return value


@pytest.mark.parametrize(
    ("expression", "params", "result"),
    [
        ("__sin(h)", "f16 h", "f32"),
        ("__sin(i)", "int i", "f32"),
        ("__pow(d, 2.0f)", "f64 d", "f64"),
        ("__max(i, l)", "int i, s64 l", "s64"),
        ("__abs(i)", "int i", "s32"),
        ("__alignup(i, 8)", "int i", "s32"),
    ],
)
def test_the_result_type_follows_the_table(expression: str, params: str, result: str) -> None:
    assert _value_of_r(f"__co__ void f({params}) {{\n  r = {expression};\n  q = r;\n}}\n").type == result


def test_alignment_of_known_values_is_folded() -> None:
    source = "__co__ void f() {\n  r = __alignup(17, 12) + __aligndown(-19, 8);\n  q = r;\n}\n"
    assert _value_of_r(source).const == 24 - 16
