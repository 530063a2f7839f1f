"""Hostile and pathological input (issue 17 item 5): whatever the program, the compiler answers with
located diagnostics, quickly, never an internal error, a traceback or a hang.

The programs are the shapes that broke it: nesting as deep as a macro or a generator makes it
(operator chains, parentheses, blocks, loops, `#if` conditions), macros that grow exponentially,
numbers wider than any integer, undefined `#if` arithmetic, every kind of line end. The cases are
generated, then hypothesis combines them; each check runs under test_fuzz's hang guard. The
whole file takes about a minute.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fuzz import FUZZ_SETTINGS, SLOW_SECONDS, assert_checks_cleanly, time_limit

import choreo_kernel as ck
from choreo_kernel.compiler.analysis import flow
from choreo_kernel.compiler.preprocess import MAX_CONDITION_NESTING
from choreo_kernel.compiler.syntax_errors import MAX_NESTING

HEAD = "__co__ s32 [4] f(s32 [4] a) {\n  s32 [4] out;\n  parallel p by 4 : block {\n"
TAIL = "\n  }\n  return out;\n}\n"


def program(body: str, defines: str = "") -> str:
    return f"{defines}{HEAD}{body}{TAIL}"


# The deep shapes, each `depth` levels deep; each stores 1 (or -1: an odd number of negations).
def plus_chain(depth: int) -> str:
    return program(f"    out.at(p) = {' + '.join(['1'] + ['0'] * (depth - 1))};")


def parentheses(depth: int) -> str:
    return program(f"    out.at(p) = {'(' * depth}1{')' * depth};")


def negations(depth: int) -> str:
    return program(f"    out.at(p) = {'-(' * depth}1{')' * depth};")


def ternaries(depth: int) -> str:
    return program(f"    out.at(p) = {'1 ? ' * depth}1{' : 2' * depth};")


def blocks(depth: int) -> str:
    return program(f"    {'{' * depth} out.at(p) = 1; {'}' * depth}")


def ifs(depth: int) -> str:
    return program(f"    {'if (p >= 0) { ' * depth}out.at(p) = 1;{' }' * depth}")


def loops(depth: int) -> str:
    nest = "".join(f"foreach i{k} in [1] {{ " for k in range(depth))
    return program(f"    out.at(p) = 0;\n    {nest}out.at(p) = 1;{' }' * depth}")


def doubling_macro(depth: int) -> str:
    defines = "#define B0 1\n" + "".join(f"#define B{k} B{k - 1}+B{k - 1}\n" for k in range(1, depth + 1))
    return program(f"    out.at(p) = B{depth};", defines)


def condition_parentheses(depth: int) -> str:
    return f"#if {'(' * depth}1{')' * depth}\n#define V 1\n#else\n#define V 2\n#endif\n" + program(
        "    out.at(p) = V;"
    )


DEEP: dict[str, Callable[[int], str]] = {
    "plus_chain": plus_chain,
    "parentheses": parentheses,
    "negations": negations,
    "ternaries": ternaries,
    "blocks": blocks,
    "ifs": ifs,
    "loops": loops,
    "condition_parentheses": condition_parentheses,
}


def _errors(source: str, target: str = "cuda") -> list[ck.Diagnostic]:
    with time_limit(SLOW_SECONDS):
        return [d for d in ck.check(source, target=target) if d.severity == "error"]


@pytest.mark.parametrize("shape", DEEP)
@pytest.mark.parametrize("depth", [484, 2000])
def test_nesting_past_the_limit_is_one_located_error(shape: str, depth: int) -> None:
    source = DEEP[shape](depth)
    assert_checks_cleanly(source, target="sim")
    (error,) = _errors(source)
    assert "nests" in error.message and "deep" in error.message
    assert error.line in (1, 4, 5)


@pytest.mark.parametrize("shape", DEEP)
def test_nesting_under_the_limit_compiles_and_runs_on_sim(shape: str) -> None:
    """Just under the limit every pass (analysis, graph, CUDA lowering, sim) takes it on Python's stack."""
    depth = next(d for d in range(MAX_NESTING, 0, -1) if not _errors(DEEP[shape](d), "sim"))
    assert depth >= MAX_NESTING // 4
    source = DEEP[shape](depth)
    assert _errors(source, "cuda") == []
    with time_limit(SLOW_SECONDS):
        out = ck.compile(source, target="sim").f(np.zeros(4, np.int32))
    assert set(out.tolist()) <= {-1, 1}, out  # an odd number of negations is -1


def test_the_issues_deep_inputs_are_located_errors() -> None:
    """484 terms, 166 blocks, 76 parentheses in `#if`, a ten-level doubling macro."""
    for source in (plus_chain(484), blocks(166), doubling_macro(10)):
        (error,) = _errors(source)
        assert "more than 128 levels deep" in error.message
    assert _errors(condition_parentheses(76)) == []
    (error,) = _errors(condition_parentheses(MAX_CONDITION_NESTING + 1))
    assert error.line == 1 and "nests parentheses and operators more than 128 deep" in error.message


@pytest.mark.parametrize(
    ("defines", "use"),
    [
        (
            "#define A0 x\n"
            + "".join(f"#define A{k} A{k - 1} A{k - 1} A{k - 1} A{k - 1}\n" for k in range(1, 25)),
            "A24",
        ),
        (
            "#define A0\n"
            + "".join(f"#define A{k}(v) A{k - 1}(v)A{k - 1}(v)\n" for k in range(1, 40)).replace(
                "A0(v)", "A0"
            ),
            "A39(1)",
        ),
        ("#define D(v) v v\n", "D(D(D(D(D(D(D(D(D(D(D(D(D(D(D(D(D(D(D(D(zz))))))))))))))))))))"),
    ],
    ids=["bomb", "empty-bomb", "argument-bomb"],
)
def test_a_macro_bomb_stops_at_the_expansion_limit(defines: str, use: str) -> None:
    source = program(f"    out.at(p) = {use};", defines)
    assert_checks_cleanly(source)
    errors = _errors(source)
    assert any("expands to more than 100,000 characters" in e.message for e in errors), errors


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("1 << -1", "a shift by -1 (the count must be from 0 to 63) in the condition"),
        ("(1<<2000)/3", "a shift by 2000"),
        ("1 >> 64", "a shift by 64"),
        ("1 / 0", "division by zero in the condition"),
        ("9" * 4301, "does not fit in 64 bits"),
        ("0x" + "f" * 17, "does not fit in 64 bits"),
    ],
)
def test_undefined_if_arithmetic_is_a_located_error(condition: str, message: str) -> None:
    source = f"#if {condition}\n#endif\n" + program("    out.at(p) = 1;")
    (error,) = _errors(source)
    assert error.line == 1 and message in error.message


def test_if_arithmetic_wraps_in_64_bits_as_intmax_t() -> None:
    source = "#if (9223372036854775807 + 1) < 0 && -9223372036854775807 - 1 == 1 << 63 && 7 / -2 == -3\n#define V 1\n#endif\n"
    assert _errors(source + program("    out.at(p) = V;")) == []


@pytest.mark.parametrize("literal", ["9" * 4301, "9" * 4301 + "ull", "0x" + "f" * 4301, "1" + "0" * 30])
def test_a_huge_literal_is_a_short_located_error(literal: str) -> None:
    (error,) = _errors(program(f"    out.at(p) = {literal};"))
    assert error.line == 4 and "does not fit in 64 bits" in error.message and len(error.message) < 200


@pytest.mark.parametrize("end", ["\r\n", "\r"])
def test_a_define_continued_over_crlf_or_cr_lines(end: str) -> None:
    source = ("#define V 1 + \\\n  2\n" + program("    out.at(p) = V;")).replace("\n", end)
    assert _errors(source) == []
    with time_limit(SLOW_SECONDS):
        out = ck.compile(source, target="sim").f(np.zeros(4, np.int32))
    assert out.tolist() == [3, 3, 3, 3]


@pytest.mark.parametrize("separator", ["\f", "\v", "\x85", "\u2028", "\u2029"])
@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_an_excerpt_shows_the_line_the_diagnostic_names(separator: str, end: str) -> None:
    source = (f"// a{separator}b\n" + program("    out.at(p) = zz;")).replace("\n", end)
    (error,) = _errors(source)
    assert error.line == 5
    rendered = error.render(source)
    assert " 5 |     out.at(p) = zz;" in rendered.splitlines(), rendered


def test_flow_analysis_is_linear_in_the_nesting_of_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each statement is walked a bounded number of times, whatever the depth (it doubled per level)."""
    visits = 0
    walk = flow.ForwardFlow._statement

    def counted(self: flow.ForwardFlow[object], stmt: object, state: object) -> object:
        nonlocal visits
        visits += 1
        return walk(self, stmt, state)  # type: ignore[arg-type]

    monkeypatch.setattr(flow.ForwardFlow, "_statement", counted)

    def walked(depth: int) -> int:
        nonlocal visits
        visits = 0
        nest = "".join(f"foreach i{k} in [2] {{ " for k in range(depth))
        body = f"    shared event e = ready;\n    {nest}f = dma.copy.async a => shared; wait f; wait e; trigger e;{' }' * depth}\n    out.at(p) = 1;"
        assert _errors(program(body)) == []
        return visits

    shallow, deep = walked(11), walked(22)
    assert deep < 4 * shallow, (shallow, deep)


def test_many_functions_and_many_errors_are_checked_in_linear_time() -> None:
    """2,000 functions, each with an error: every one reported, each at its own line."""
    source = "\n".join(f"__co__ void f{k}() {{ zz; }}" for k in range(2000))
    with time_limit(SLOW_SECONDS * 3):
        errors = [d for d in ck.check(source, target="sim") if d.severity == "error"]
    assert [e.line for e in errors] == list(range(1, 2001))


# ------------------------------------------------------------------------ hypothesis

LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r"])
CONDITION_TOKENS = st.sampled_from(
    [
        "(",
        ")",
        "1",
        "0",
        "-1",
        "64",
        "63",
        "9" * 25,
        "0x" + "f" * 20,
        "<<",
        ">>",
        "/",
        "%",
        "*",
        "+",
        "-",
        "!",
        "~",
        "?",
        ":",
        "&&",
        "||",
        "==",
        "<",
        "defined(V)",
        "V",
    ]
)


@st.composite
def pathological(draw: st.DrawFn) -> str:
    """A program of several hostile parts: a deep shape, a macro chain, an `#if`, odd line ends."""
    shape = draw(st.sampled_from(sorted(DEEP)))
    depth = draw(st.integers(1, 3 * MAX_NESTING))
    source = DEEP[shape](depth)
    if draw(st.booleans()):
        levels = draw(st.integers(1, 24))
        fan = draw(st.integers(1, 4))
        chain = "#define M0 1\n" + "".join(
            f"#define M{k} {' + '.join([f'M{k - 1}'] * fan)}\n" for k in range(1, levels + 1)
        )
        source = chain + source.replace("out.at(p) = 1;", f"out.at(p) = M{levels};")
    if draw(st.booleans()):
        condition = " ".join(draw(st.lists(CONDITION_TOKENS, max_size=40)))
        source = f"#if {condition}\n#define V 1\n#endif\n" + source
    return source.replace("\n", draw(LINE_ENDS))


@settings(FUZZ_SETTINGS, max_examples=150)
@given(pathological(), st.sampled_from(["cuda", "sim"]))
def test_pathological_programs_get_located_diagnostics_only(source: str, target: str) -> None:
    assert_checks_cleanly(source, target=target)
