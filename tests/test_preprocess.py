"""The C-style preprocessor (language.md section 1): macros, conditionals, caller defines,
and the source map that keeps diagnostics on the user's own lines and columns."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from choreo_kernel.compiler.diagnostics import Diagnostic, DiagnosticSink
from choreo_kernel.compiler.parser import parse
from choreo_kernel.compiler.preprocess import Preprocessed, preprocess


def run(source: str, defines: Mapping[str, object] | None = None) -> tuple[Preprocessed, list[Diagnostic]]:
    sink = DiagnosticSink()
    result = preprocess(source, sink, defines)
    return result, sink.diagnostics


def lines(source: str, defines: Mapping[str, object] | None = None) -> list[str]:
    """The preprocessed lines, with no diagnostics allowed."""
    result, diagnostics = run(source, defines)
    assert not diagnostics, [str(d) for d in diagnostics]
    return result.text.split("\n")


def code(source: str, defines: Mapping[str, object] | None = None) -> list[str]:
    """The non-blank preprocessed lines, stripped."""
    return [line.strip() for line in lines(source, defines) if line.strip()]


# ----------------------------------------------------------------------- macros


def test_object_like_macro() -> None:
    assert code("#define TILE 64\nn = TILE * 2;") == ["n = 64 * 2;"]


def test_object_like_macro_with_parenthesized_body() -> None:
    """A space before '(' makes an object-like macro whose body starts with '('."""
    assert code("#define PAIR (1 + 2)\nn = PAIR;") == ["n = (1 + 2);"]


def test_macro_defined_from_other_macros_expands_fully() -> None:
    assert code("#define A 4\n#define B (A * A)\n#define C B + A\nn = C;") == ["n = (4 * 4) + 4;"]


def test_function_like_macro() -> None:
    assert code("#define IDX(a, b) ((a) * 4 + (b))\nn = IDX(i, j + 1);") == ["n = ((i) * 4 + (j + 1));"]


def test_a_caller_define_can_be_a_function_like_macro() -> None:
    """A notebook passes an earlier cell's function-like macros on as defines."""
    earlier = preprocess("#define IDX(a, b) ((a) * 4 + (b))\n", DiagnosticSink()).macros
    assert code("n = IDX(i, 1);", {"IDX": earlier["IDX"]}) == ["n = ((i) * 4 + (1));"]


def test_function_like_macros_nested() -> None:
    source = "#define SQR(v) ((v) * (v))\n#define POW4(v) SQR(SQR(v))\n#define TWICE(v) (2 * (v))\nn = POW4(TWICE(x));"
    assert code(source) == ["n = (((((2 * (x))) * ((2 * (x))))) * ((((2 * (x))) * ((2 * (x))))));"]


def test_function_like_macro_arguments_with_commas_in_parentheses() -> None:
    assert code("#define IDX(a, b) ((a) * 4 + (b))\nn = IDX(cdiv(m, 2), (k));") == [
        "n = ((cdiv(m, 2)) * 4 + ((k)));"
    ]


def test_function_like_macro_name_without_arguments_is_not_expanded() -> None:
    assert code("#define F(x) [x]\ny = F;\nz = F (1);") == ["y = F;", "z = [1];"]


def test_function_like_macro_without_parameters() -> None:
    assert code("#define ZERO() 0\nn = ZERO();") == ["n = 0;"]


def test_macro_that_refers_to_itself_expands_once() -> None:
    assert code("#define A A + 1\nn = A;") == ["n = A + 1;"]


def test_macro_continued_over_several_lines() -> None:
    out = lines("#define CLAMP(v) \\\n  __min(__max(v, 0.0f), \\\n  1.0f)\nn = CLAMP(x);")
    assert len(out) == 4
    assert out[:3] == ["", "", ""]
    assert " ".join(out[3].split()) == "n = __min(__max(x, 0.0f), 1.0f);"


def test_no_expansion_inside_strings_or_comments() -> None:
    out = lines("#define N 4\ns = \"N\"; c = 'N'; /* N */ n = N; // N")
    assert out[1].startswith("s = \"N\"; c = 'N';")
    assert "n = 4;" in out[1]
    assert out[1].count("N") == 2


def test_macro_name_inside_a_longer_identifier_is_not_expanded() -> None:
    assert code("#define N 4\nNN = N_ROWS + N + xN;") == ["NN = N_ROWS + 4 + xN;"]


def test_undef() -> None:
    assert code("#define N 4\na = N;\n#undef N\nb = N;") == ["a = 4;", "b = N;"]


def test_redefinition_takes_the_new_body() -> None:
    assert code("#define N 4\na = N;\n#define N 8\nb = N;") == ["a = 4;", "b = 8;"]


# ------------------------------------------------------------------ conditionals


@pytest.mark.parametrize(
    ("condition", "taken"),
    [
        ("defined(TILE)", True),
        ("defined TILE", True),
        ("!defined(NOPE)", True),
        ("defined(NOPE)", False),
        ("defined(TILE) && MODE > 2", True),
        ("defined(TILE) && MODE > 3", False),
        ("defined(NOPE) || MODE == 3", True),
        ("TILE / 8 == 4 && (TILE << 1) == 64", True),
        ("0x20 == TILE", True),
        ("UNKNOWN_NAME", False),
        ("MODE > 2 ? 1 : 0", True),
        ("(MODE - 3)", False),
    ],
)
def test_if_condition(condition: str, taken: bool) -> None:
    source = f"#define TILE 32\n#define MODE 3\n#if {condition}\nyes\n#else\nno\n#endif"
    assert code(source) == (["yes"] if taken else ["no"])


def test_elif_chain_takes_the_first_true_branch_only() -> None:
    source = "#define MODE 2\n#if MODE == 1\none\n#elif MODE == 2\ntwo\n#elif MODE >= 2\nthree\n#else\nother\n#endif"
    assert code(source) == ["two"]


def test_else_taken_when_no_branch_is() -> None:
    assert code("#if 0\na\n#elif 0\nb\n#else\nc\n#endif") == ["c"]


def test_ifdef_and_ifndef() -> None:
    source = "#define ON\n#ifdef ON\na\n#endif\n#ifdef OFF\nb\n#endif\n#ifndef OFF\nc\n#endif\n#ifndef ON\nd\n#endif"
    assert code(source) == ["a", "c"]


def test_nested_conditionals_inside_an_inactive_branch_stay_inactive() -> None:
    source = "#if 0\n#if 1\na\n#else\nb\n#endif\n#define HIDDEN 1\n#else\nc\n#endif\n#ifdef HIDDEN\nd\n#endif"
    assert code(source) == ["c"]


def test_inactive_text_is_not_parsed() -> None:
    source = "#ifdef NOT_SET\nthis is { not } Choreo at all ;;\n#endif\nok = 1;"
    assert code(source) == ["ok = 1;"]


# ---------------------------------------------------------------- caller defines


def test_caller_define_adds_a_macro() -> None:
    assert code("n = TILE_K * 2;", {"TILE_K": 64}) == ["n = 64 * 2;"]


def test_caller_define_overrides_a_guarded_default() -> None:
    source = "#ifndef TILE_K\n#define TILE_K 32\n#endif\nn = TILE_K;"
    assert code(source) == ["n = 32;"]
    assert code(source, {"TILE_K": 64}) == ["n = 64;"]


def test_caller_defines_drive_conditionals() -> None:
    source = "#if defined(USE_FAST) && STAGES > 2\nfast\n#else\nslow\n#endif"
    assert code(source, {"USE_FAST": 1, "STAGES": 3}) == ["fast"]
    assert code(source, {"USE_FAST": 1, "STAGES": 2}) == ["slow"]
    assert code(source, {"STAGES": 4}) == ["slow"]


def test_caller_define_values_of_several_types() -> None:
    out = code("a = A; b = B; c = C; d = D;", {"A": 64, "B": True, "C": False, "D": "(8 * 4)"})
    assert out == ["a = 64; b = 1; c = 0; d = (8 * 4);"]


def test_caller_defines_are_not_shared_between_runs() -> None:
    assert code("n = TILE_K;", {"TILE_K": 64}) == ["n = 64;"]
    assert code("n = TILE_K;") == ["n = TILE_K;"]


# ------------------------------------------------------------------ positions


def test_line_numbers_are_preserved() -> None:
    source = (
        "#define A 1\n"
        "#if A\n"
        "line3 = A;\n"
        "#else\n"
        "line5;\n"
        "#endif\n"
        "#include <cstdio>\n"
        "#define LONG \\\n"
        "  2\n"
        "line10 = LONG;\n"
        "/* a comment\n"
        "   over lines */ line12 = 1;\n"
    )
    out = lines(source)
    assert len(out) == len(source.split("\n"))
    assert out[2].strip() == "line3 = 1;"
    assert out[4] == ""
    assert out[9].strip() == "line10 = 2;"
    assert out[11].strip() == "line12 = 1;"


def test_columns_are_unchanged_on_lines_without_macros() -> None:
    result, _ = run("#define N 4\n  x = y + z;")
    for column in range(1, 12):
        assert result.source_map.column(2, column) == column


def test_column_after_a_macro_expansion_maps_to_the_users_column() -> None:
    """A token after an expansion that changed the line's length keeps its original column."""
    original = "  v = WIDE + SHORT_NAME_MACRO + name;"
    result, _ = run("#define WIDE 1000000\n#define SHORT_NAME_MACRO 7\n" + original)
    expanded = result.text.split("\n")[2]
    assert expanded == "  v = 1000000 + 7 + name;"
    out_column = expanded.index("name") + 1
    assert result.source_map.column(3, out_column) == original.index("name") + 1
    span = result.source_map.span(3, out_column, 3, out_column + 4)
    assert (span.column, span.end_column) == (original.index("name") + 1, original.index("name") + 5)


def test_column_inside_an_expansion_maps_to_the_macro_name() -> None:
    original = "  v = 2.0f * SCALE;"
    result, _ = run("#define SCALE (3.0f + 1.0f)\n" + original)
    expanded = result.text.split("\n")[1]
    inner = expanded.index("1.0f") + 1
    assert result.source_map.column(2, inner) == original.index("SCALE") + 1


def test_syntax_error_after_a_macro_is_reported_at_the_users_column() -> None:
    original = "  f32 v = LONG_SCALE_FACTOR * ;"
    source = (
        "#define LONG_SCALE_FACTOR (2.0f * 3.0f * 4.0f)\n__co__ void f(f32 [4] x) {\n" + original + "\n}\n"
    )
    sink = DiagnosticSink()
    result = preprocess(source, sink)
    parse(result.text, result.source_map, sink)
    assert len(sink.diagnostics) == 1
    error = sink.diagnostics[0]
    assert (error.line, error.column) == (3, original.index(";") + 1)
    assert "expected" in error.message


# ----------------------------------------------------------------------- errors


def test_unterminated_if_is_an_error_at_the_if() -> None:
    _, diagnostics = run("a = 1;\n#if defined(X)\nb = 2;\n")
    assert len(diagnostics) == 1
    assert diagnostics[0].severity == "error"
    assert diagnostics[0].line == 2
    assert "#if" in diagnostics[0].message or "#endif" in diagnostics[0].message


def test_each_unterminated_if_is_reported() -> None:
    _, diagnostics = run("#ifdef A\n#ifndef B\nx\n")
    assert sorted(d.line for d in diagnostics) == [1, 2]


@pytest.mark.parametrize("directive", ["#else", "#elif 1", "#endif"])
def test_directive_without_if_is_an_error(directive: str) -> None:
    _, diagnostics = run(f"a = 1;\n{directive}\n")
    assert [d.line for d in diagnostics] == [2]
    assert diagnostics[0].severity == "error"


@pytest.mark.parametrize(("call", "given"), [("F(1)", 1), ("F(1, 2, 3)", 3), ("F()", 1)])
def test_macro_argument_count_error(call: str, given: int) -> None:
    """As in C, `F()` passes one (empty) argument."""
    _, diagnostics = run(f"#define F(a, b) a + b\n  x = {call};")
    assert len(diagnostics) == 1
    error = diagnostics[0]
    assert error.severity == "error"
    assert (error.line, error.column) == (2, 7)
    assert "'F'" in error.message
    assert "2" in error.message and str(given) in error.message


def test_bad_if_expression_is_an_error_not_an_exception() -> None:
    _, diagnostics = run("#if 1 / 0\nx\n#endif\n#if (1 +\ny\n#endif")
    assert [d.line for d in diagnostics] == [1, 4]


def test_include_pragma_and_line_leave_blank_lines() -> None:
    source = '#include <cstdio>\n#include "choreo.h"\n#pragma once\n#pragma unroll 4\n#line 10\nx = 1;'
    out = lines(source)
    assert out == ["", "", "", "", "", "x = 1;"]


def test_directives_with_spaces_after_the_hash() -> None:
    assert code("#  define N 4\n  #  if N == 4\nyes\n # endif\nn = N;") == ["yes", "n = 4;"]


# ------------------------------------------------------------------------ #line

LINE_SOURCE = """__co__ void f() {
#line 78
  should fail
}
"""


def _first_error(source: str, filename: str = "cell.co") -> tuple[Diagnostic, str]:
    import choreo_kernel as ck

    errors = [d for d in ck.check(source, target="sim", filename=filename) if d.severity == "error"]
    assert errors, "expected an error"
    return errors[0], errors[0].render(source, filename)


def test_line_directive_numbers_the_next_line() -> None:
    error, rendered = _first_error(LINE_SOURCE)
    assert (error.line, error.column) == (78, 10)
    assert rendered.startswith("cell.co:78:10: error:")
    assert " 78 |   should fail" in rendered  # the excerpt is the user's text at that line


def test_line_directive_with_a_file_names_it_and_later_directives_keep_it() -> None:
    source = '\n__co__ void f() {\n#line 35 "ab.c"\n  int a = 1;\n#line 90\n  b = a + c;\n}\n'
    error, rendered = _first_error(source)
    assert (error.line, error.span.file) == (90, "ab.c")
    assert rendered.startswith("ab.c:90:")
    assert "'c' is not declared" in rendered and "b = a + c;" in rendered


def test_line_directive_in_an_inactive_region_is_ignored() -> None:
    source = "#if 0\n#line 500\n#endif\n__co__ void f() {\n  x = y;\n}\n"
    error, _ = _first_error(source)
    assert error.line == 5


@pytest.mark.parametrize("directive", ["#line", "#line x", "#line 0", "#line 4 file.co"])
def test_a_malformed_line_directive_is_an_error_at_it(directive: str) -> None:
    _, diagnostics = run(f"x\n{directive}\ny")
    assert [(d.line, d.column) for d in diagnostics] == [(2, 1)]
    assert "#line" in diagnostics[0].message


def test_a_run_time_error_after_a_line_directive_reports_the_named_line() -> None:
    import numpy as np

    import choreo_kernel as ck

    source = """__co__ s32 [4] f(s32 [4] x, int d) {
  s32 [4] y;
#line 200 "kernels.co"
  parallel p by 4 : block {
    y.at(p) = x.at(p) / d;
  }
  return y;
}
"""
    module = ck.compile(source, target="sim")
    with pytest.raises(ck.ChoreoError) as raised:
        module.f(np.arange(4, dtype=np.int32), 0)
    assert raised.value.diagnostics[0].line == 201
    assert "kernels.co:201:" in str(raised.value) and "y.at(p) = x.at(p) / d;" in str(raised.value)
