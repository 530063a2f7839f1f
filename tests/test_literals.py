"""Integer literals as C types them (semantics/cint.literal_type), with Croqtile's suffixes and its
out-of-range messages: the analysis, the CUDA lowering and the sim read the type from one place."""

from __future__ import annotations

import numpy as np
import pytest

import choreo_kernel as ck
from choreo_kernel.compiler.driver import analyze


def _type_of_r(literal: str) -> str:
    analysis = analyze(f"__co__ void f() {{\n  r = {literal};\n  q = r;\n}}\n", target="sim")
    assert not [d for d in analysis.diagnostics if d.severity == "error"], analysis.diagnostics
    (value,) = {s.value for s in analysis.functions["f"].symbol_of.values() if s.name == "r"}
    return value.type  # type: ignore[attr-defined, no-any-return]


@pytest.mark.parametrize(
    ("literal", "elem"),
    [
        ("7", "s32"),
        ("7ll", "s64"),
        ("7LL", "s64"),
        ("7u", "u32"),
        ("7ull", "u64"),
        ("7LLU", "u64"),
        ("0x7fffffff", "s32"),
        ("2147483648", "s64"),
        ("4294967296u", "u64"),
        ("18446744073709551615ULL", "u64"),
        ("9223372036854775807", "s64"),
    ],
)
def test_a_literal_has_the_type_its_value_and_suffix_give(literal: str, elem: str) -> None:
    assert _type_of_r(literal) == elem


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        (
            "18446744073709551619ull",
            "unsigned integer literal '18446744073709551619ull' out of range [0, 18446744073709551615]",
        ),
        (
            "9223372036854775808",
            "signed integer literal '9223372036854775808' out of range [0, 9223372036854775807]",
        ),
        (
            "0x1ffffffffffffffffULL",
            "unsigned integer literal '0x1ffffffffffffffffULL' out of range [0, 0xffffffffffffffff]",
        ),
    ],
)
def test_a_literal_wider_than_64_bits_is_a_located_error(literal: str, message: str) -> None:
    source = f"__co__ void f() {{\n  x = 1 + {literal};\n}}\n"
    (error,) = [d for d in ck.check(source, target="sim") if d.severity == "error"]
    assert (error.line, error.column) == (2, 11)
    assert message in error.message


def test_a_malformed_suffix_is_a_syntax_error() -> None:
    (error,) = [d for d in ck.check("__co__ void f() {\n  x = 3lul;\n}\n") if d.severity == "error"]
    assert error.line == 2 and "syntax error" in error.message


SUM64 = """__co__ s64 [4] big(s64 [4] x) {
  s64 [4] y;
  parallel p by 4 : block {
    y.at(p) = x.at(p) + 3000000000ll * (p + 1) + 1ll;
  }
  return y;
}
"""


def test_a_64_bit_literal_computes_in_64_bits_on_the_sim() -> None:
    x = np.arange(4, dtype=np.int64)
    out = ck.compile(SUM64, target="sim").big(x)
    np.testing.assert_array_equal(out, x + 3000000000 * (np.arange(4) + 1) + 1)


def test_a_64_bit_literal_is_emitted_with_its_suffix() -> None:
    source = ck.compile(SUM64, target="cuda").cuda_source
    assert "3000000000ll * (p + 1) + 1ll" in source


def test_a_64_bit_value_stored_into_an_s32_element_wraps_on_the_sim() -> None:
    # C converts the s64 sum to the element's 32 bits; the sim used to raise NumPy's OverflowError
    source = """__co__ s32 [2] f(s32 [2] a) {
  s32 [2] out;
  parallel p by 1 : block { parallel t by 1 : thread {
    out.at(0) = a.at(0) + 4294967296;
    out.at(1) = a.at(1) + 4294967299;
  } }
  return out;
}
"""
    out = ck.compile(source, target="sim").f(np.array([5, -7], dtype=np.int32))
    np.testing.assert_array_equal(out, [5, -4])
