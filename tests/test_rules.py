"""Rule-by-rule programs (tests/rules/*.co) against the front end.

Each file of tests/rules has the header of the conformance corpus (corpus.py). For every
row of the diagnostics table of language.md section 11, and for the rules of 12.x,
futures.md and events.md that imply a diagnostic, there is at least one INVALID program
(a different program from the conformance ones) and a VALID near miss that must stay
clean. The assertions are those of test_conformance.py: a valid program has no error for
each target it lists; an invalid one has its first error on ERROR-LINE, naming every
ERROR-KEYWORD. The direct tests below cover what one file per rule cannot: several
mistakes in one run, sim warnings for CUDA-only rules, where notes point.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus import ALL_TARGETS, CONFORMANCE, Program, error_diagnostics, parse_program, per_target

import choreo_kernel as ck
from choreo_kernel.compiler.diagnostics import DiagnosticSink
from choreo_kernel.compiler.parser import parse
from choreo_kernel.compiler.preprocess import preprocess

RULES = Path(__file__).parent / "rules"
PROGRAMS = [parse_program(path) for path in sorted(RULES.glob("*.co"))]
VALID = [p for p in PROGRAMS if p.valid]
INVALID = [p for p in PROGRAMS if not p.valid]
BY_NAME = {p.name: p for p in PROGRAMS}

# Rules that section 11 marks "on CUDA" / "on Hopper", and the event storage rule of 12.13:
# errors for target cuda, warnings for target sim (12.10, 12.13).
SIM_WARNING_FILES = [
    "trigger_after_dma_joined_cuda.co",
    "mma_in_warp_scope_cuda.co",
    "mma_m96_cuda.co",
    "event_global_cuda.co",
    "event_local_cuda.co",
]


def _warnings(diagnostics: list[ck.Diagnostic]) -> list[ck.Diagnostic]:
    return [d for d in diagnostics if d.severity == "warning"]


def _shown(source: str, name: str, diagnostics: list[ck.Diagnostic]) -> str:
    return "\n".join(d.render(source, name) for d in diagnostics) or "(no diagnostics)"


def _check(source: str, target: str = "cuda", name: str = "<test>") -> list[ck.Diagnostic]:
    return ck.check(source, target=target, filename=name)


def _line_of(source: str, marker: str, occurrence: int = 1) -> int:
    """1-based line of the `occurrence`-th line that contains `marker`."""
    hits = [number for number, line in enumerate(source.splitlines(), 1) if marker in line]
    assert len(hits) >= occurrence, f"{marker!r} not found {occurrence} time(s)"
    return hits[occurrence - 1]


def _mentions_line(diagnostic: ck.Diagnostic, line: int) -> bool:
    """A note points at `line`, or the message names it (`line 12`, `:12:`)."""
    notes = getattr(diagnostic, "notes", ())
    if any(note.span is not None and note.span.line == line for note in notes):
        return True
    return str(line) in diagnostic.full_message


# ------------------------------------------------------------------ the corpus itself
# These need only the preprocessor and the parser, so they run before the analysis exists.


def test_rules_corpus_is_complete() -> None:
    assert len(INVALID) >= 40
    assert len(VALID) >= 25
    for program in PROGRAMS:
        assert set(program.targets) <= set(ALL_TARGETS)
        if program.valid:
            assert program.compile_only, program.name


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_rules_file_parses_as_its_header_says(program: Program) -> None:
    """Only the syntax_* invalid files are syntax errors, and they fail on ERROR-LINE."""
    sink = DiagnosticSink()
    pp = preprocess(program.source, sink)
    prog = parse(pp.text, pp.source_map, sink)
    if not program.valid and program.name.startswith("syntax_"):
        assert sink.diagnostics, "a syntax_* file must not parse"
        first = sink.diagnostics[0]
        assert first.line == program.error_line, str(first)
        assert first.message.startswith("syntax error") or "expected" in first.message
    else:
        assert not sink.diagnostics, [str(d) for d in sink.diagnostics]
        assert prog.functions


# ---------------------------------------------------------------- the analysis, per file


@pytest.mark.parametrize(("program", "target"), per_target(VALID))
def test_valid_rule_program_has_no_error(program: Program, target: str) -> None:
    diagnostics = _check(program.source, target, program.name)
    assert not error_diagnostics(diagnostics), _shown(program.source, program.name, diagnostics)


@pytest.mark.parametrize(("program", "target"), per_target(INVALID))
def test_invalid_rule_program_is_rejected_on_its_line(program: Program, target: str) -> None:
    diagnostics = _check(program.source, target, program.name)
    shown = _shown(program.source, program.name, diagnostics)
    errors = error_diagnostics(diagnostics)
    assert errors, f"no error reported for {target}:\n{shown}"
    first = errors[0]
    assert first.line == program.error_line, (
        f"first error on line {first.line}, not {program.error_line}:\n{shown}"
    )
    text = first.full_message.lower()
    missing = [word for word in program.error_keywords if word.lower() not in text]
    assert not missing, f"first error does not mention {missing}:\n{shown}"


@pytest.mark.parametrize(("program", "target"), per_target(PROGRAMS))
def test_every_diagnostic_points_into_the_file(program: Program, target: str) -> None:
    diagnostics = _check(program.source, target, program.name)
    line_count = len(program.source.splitlines())
    for d in diagnostics:
        assert d.severity in ("error", "warning"), d
        assert 1 <= d.line <= line_count, str(d)
        assert d.column >= 1, str(d)
        assert (d.end_line, d.end_column) >= (d.line, d.column), str(d)
        assert d.message.strip(), str(d)


# ------------------------------------------------------------------------ direct tests


@pytest.mark.parametrize("name", SIM_WARNING_FILES)
def test_cuda_only_rule_is_a_warning_on_sim(name: str) -> None:
    """12.10: a rule marked "on CUDA"/"on Hopper" is a warning for target sim, at the same place."""
    program = BY_NAME[name]
    assert program.targets == ("cuda",)
    diagnostics = _check(program.source, "sim", program.name)
    shown = _shown(program.source, program.name, diagnostics)
    assert not error_diagnostics(diagnostics), shown
    warnings = [w for w in _warnings(diagnostics) if w.line == program.error_line]
    assert warnings, f"no warning on line {program.error_line}:\n{shown}"
    assert any("cuda" in w.full_message.lower() for w in warnings), shown


def test_trigger_after_dma_is_error_on_cuda_warning_on_sim() -> None:
    program = parse_program(CONFORMANCE / "invalid" / "trigger_after_dma_cuda.co")
    source, line, name = program.source, program.error_line, program.name
    assert line == _line_of(source, "trigger loaded after f;")
    cuda = _check(source, "cuda")
    assert [d.line for d in error_diagnostics(cuda)] == [line], _shown(source, name, cuda)
    sim = _check(source, "sim")
    assert not error_diagnostics(sim), _shown(source, name, sim)
    assert any(w.line == line for w in _warnings(sim)), _shown(source, name, sim)
    # The default target is cuda (12.10).
    assert [d.line for d in error_diagnostics(ck.check(source))] == [line]


def test_two_independent_mistakes_are_both_reported() -> None:
    """Section 11: all problems that can be found in one run are reported, not only the first."""
    source = """\
__co__ f32 [B, 64] two_bugs(f32 [B, 64] x) {
  f32 [B, 64] y;
  parallel b by B : block {
    shared f32 [64] row;
    dma.copy x.at(b) => row;
    parallel t by 64 : thread {
      int base = t;
      base = t + 1;
      y.at(b, t) = row.at(t) * scael;
    }
  }
  return y;
}
"""
    diagnostics = _check(source)
    lines = {d.line for d in error_diagnostics(diagnostics)}
    shown = _shown(source, "<test>", diagnostics)
    assert _line_of(source, "base = t + 1;") in lines, shown
    assert _line_of(source, "* scael;") in lines, shown
    texts = " ".join(d.full_message for d in error_diagnostics(diagnostics))
    assert "base" in texts and "scael" in texts, shown


def test_mistakes_in_two_functions_are_both_reported() -> None:
    source = """\
__co__ f32 [64] first(f32 [64] x) {
  f32 [64] y;
  parallel t by 64 {
    y.at(t) = x.at(t) + missing_one;
  }
  return y;
}

__co__ f32 [64] second(f32 [64] x) {
  f32 [64] y;
  local f32 [4] scratch;
  parallel t by 64 {
    y.at(t) = x.at(t);
  }
  return y;
}
"""
    diagnostics = _check(source)
    lines = {d.line for d in error_diagnostics(diagnostics)}
    shown = _shown(source, "<test>", diagnostics)
    assert {_line_of(source, "missing_one"), _line_of(source, "local f32 [4] scratch;")} <= lines, shown


def test_syntax_error_does_not_hide_other_functions() -> None:
    """Each function is parsed on its own: a syntax error in one still lets the others be checked."""
    source = """\
__co__ f32 [64] broken(f32 [64] x) {
  f32 [64] y;
  parallel t by 64 {
    y.at(t) = x.at(t) * ;
  }
  return y;
}

__co__ f32 [64] undeclared(f32 [64] x) {
  f32 [64] y;
  parallel t by 64 {
    y.at(t) = x.at(t) + not_declared_here;
  }
  return y;
}
"""
    diagnostics = _check(source)
    errors = error_diagnostics(diagnostics)
    shown = _shown(source, "<test>", diagnostics)
    assert errors[0].line == _line_of(source, "x.at(t) * ;"), shown
    assert "expected" in errors[0].message, shown
    assert any(d.line == _line_of(source, "not_declared_here") for d in errors), shown


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("name", ["trigger_after_mma_same_path.co", "bind_after_mma_wait.co"])
def test_rejected_trigger_after_is_one_error(name: str, target: str) -> None:
    """12.11: one error at the rejected trigger, no second error about the future being unconsumed."""
    program = BY_NAME[name]
    diagnostics = _check(program.source, target, program.name)
    errors = error_diagnostics(diagnostics)
    assert [d.line for d in errors] == [program.error_line], _shown(program.source, program.name, diagnostics)


def test_rejected_trigger_after_dma_is_one_error_on_cuda() -> None:
    program = BY_NAME["trigger_after_dma_joined_cuda.co"]
    diagnostics = _check(program.source, "cuda", program.name)
    errors = error_diagnostics(diagnostics)
    assert [d.line for d in errors] == [program.error_line], _shown(program.source, program.name, diagnostics)


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_misused_ring_is_reported_at_each_use(target: str) -> None:
    """12.11: a two-dimensional ring used with .at is an error at every such use."""
    program = BY_NAME["ring_2d_at_wait.co"]
    diagnostics = _check(program.source, target, program.name)
    lines = {d.line for d in error_diagnostics(diagnostics)}
    expected = {
        _line_of(program.source, "wait lanes_full.at(k);"),
        _line_of(program.source, "trigger lanes_full.at(k)"),
    }
    assert expected <= lines, _shown(program.source, program.name, diagnostics)


def test_declared_twice_says_where_the_first_declaration_is() -> None:
    program = BY_NAME["declared_twice_event.co"]
    diagnostics = _check(program.source, "cuda", program.name)
    first = error_diagnostics(diagnostics)[0]
    assert first.line == program.error_line
    assert _mentions_line(first, program.error_line - 1), _shown(program.source, program.name, diagnostics)


def test_second_wait_says_where_the_first_wait_is() -> None:
    """futures.md / section 11: a second consumption names the earlier consumption's location."""
    program = BY_NAME["future_waited_twice_in_if.co"]
    diagnostics = _check(program.source, "cuda", program.name)
    first = error_diagnostics(diagnostics)[0]
    assert first.line == program.error_line
    earlier = _line_of(program.source, "wait row_ld;")
    assert earlier < program.error_line
    assert _mentions_line(first, earlier), _shown(program.source, program.name, diagnostics)


def test_error_column_is_the_offending_name() -> None:
    program = BY_NAME["undeclared_param_typo.co"]
    first = error_diagnostics(_check(program.source, "cuda", program.name))[0]
    line = program.source.splitlines()[program.error_line - 1]
    assert first.line == program.error_line
    assert first.column == line.index("alhpa") + 1
    assert first.end_column == first.column + len("alhpa")


def test_error_column_after_a_macro_is_the_users_column() -> None:
    """A diagnostic on expanded text points at the user's own columns (section 11)."""
    source = """\
#define LONG_SCALE_EXPRESSION (2.0f * 0.5f + 0.25f * 4.0f)
__co__ f32 [64] scaled(f32 [64] x) {
  f32 [64] y;
  parallel t by 64 {
    y.at(t) = LONG_SCALE_EXPRESSION * x.at(t) + nope_v;
  }
  return y;
}
"""
    diagnostics = _check(source)
    errors = error_diagnostics(diagnostics)
    line = _line_of(source, "nope_v")
    assert errors and errors[0].line == line, _shown(source, "<test>", diagnostics)
    assert errors[0].column == source.splitlines()[line - 1].index("nope_v") + 1
    assert "nope_v" in errors[0].full_message


def test_macro_defined_by_the_caller_is_used() -> None:
    """`defines=` retunes a program without editing it; a bad value is reported like any other."""
    source = """\
__co__ f32 [8, 64] ident(f32 [8, 64] x) {
  f32 [8, 64] y;
  parallel b by 8 : block {
    parallel t by THREADS : thread {
      y.at(b, t) = x.at(b, t);
    }
  }
  return y;
}
"""
    assert not error_diagnostics(ck.check(source, defines={"THREADS": 64}))
    zero = error_diagnostics(ck.check(source, defines={"THREADS": 0}))
    assert zero and zero[0].line == _line_of(source, "parallel t by THREADS")
    assert error_diagnostics(ck.check(source)), "THREADS is undeclared without the define"


def test_explicit_arrival_count_that_differs_is_a_warning() -> None:
    """12.2: `event<N>` wins over the derived arrival count, and the compiler warns when they differ."""
    source = """\
__co__ f32 [B, 32] hand(f32 [B, 32] x) {
  f32 [B, 32] y;
  parallel b by B : block {
    shared f32 [32] row;
    shared event<3> filled;
    parallel w by 2 : group, l by 32 : thread {
      inthreads.async (w == 0) {
        row.at(l) = x.at(b, l);
        trigger filled;
      }
      inthreads.async (w == 1) {
        wait filled;
        y.at(b, l) = row.at(l);
      }
    }
  }
  return y;
}
"""
    for target in ALL_TARGETS:
        diagnostics = _check(source, target)
        assert not error_diagnostics(diagnostics), _shown(source, "<test>", diagnostics)
        assert _warnings(diagnostics), _shown(source, "<test>", diagnostics)


WARP_TRIGGER = """\
__co__ f32 [B, 32] hand(f32 [B, 32] x) {
  f32 [B, 32] y;
  parallel b by B : block {
    shared f32 [32] row;
    shared event<COUNT> filled;
    parallel w by 2 : group {
      inthreads.async (w == 0) {
        dma.copy x.chunkat(b, _) => row;
        trigger filled;
      }
      inthreads.async (w == 1) {
        wait filled;
        dma.copy row => y.chunkat(b, _);
      }
    }
  }
  return y;
}
"""


@pytest.mark.parametrize(("count", "warned"), [(32, False), (1, True)])
def test_a_warp_level_trigger_counts_every_thread_of_the_warp(count: int, warned: bool) -> None:
    """language.md 8: a direct trigger counts one arrival per executing thread, so a trigger
    directly in a `group` level is 32 arrivals, not one per warp instance."""
    source = WARP_TRIGGER.replace("COUNT", str(count))
    diagnostics = _check(source, "sim")
    assert not error_diagnostics(diagnostics), _shown(source, "<test>", diagnostics)
    assert bool(_warnings(diagnostics)) == warned, _shown(source, "<test>", diagnostics)


def test_check_reports_and_does_not_raise_on_bad_input() -> None:
    """Bad input gives diagnostics, never an exception (section 11)."""
    for source in ["", "__co__", "__co__ void f() {", "__co__ void f() { parallel t by { } }", "#if 1\n"]:
        diagnostics = ck.check(source)
        assert isinstance(diagnostics, list)
        for d in diagnostics:
            assert d.line >= 1 and d.column >= 1


REASSIGNED = """\
__co__ void k(global f32 [4, 64] x) {
  parallel b by 4 : block {
    shared f32 [64] tile;
    load = dma.copy.async x.at(b) => shared;
    wait load;
    event e;
    bool v = true;
    ASSIGN
  }
}
"""


@pytest.mark.parametrize(
    ("assign", "advice"),
    [
        ("v = false;", "(declare it as 'mutable bool v = ...')"),
        (
            "tile = x.at(b);",
            "copy into it ('dma.copy SRC => tile;') or assign its elements ('tile.at(i) = ...')",
        ),
        ("load = x.at(b);", "give the new copy another name, or rotate futures with swap(...)"),
        ("e = e;", "signal it with 'trigger e;'"),
    ],
)
def test_an_immutable_is_given_advice_that_fits_what_it_is(assign: str, advice: str) -> None:
    (diagnostic,) = _check(REASSIGNED.replace("ASSIGN", assign))
    assert diagnostic.line == 8 and diagnostic.message.endswith(advice), diagnostic.message
    assert "mutable int" not in diagnostic.message


@pytest.mark.parametrize("condition", ["full && ready", "!ready && full", "full && (ready || full)"])
def test_a_bool_in_an_event_predicate_is_one_error(condition: str) -> None:
    source = BY_NAME["while_event_mixed_with_bool.co"].source.replace("full && ready", condition)
    (diagnostic,) = _check(source)
    assert diagnostic.message.startswith("requires an event predication expression: 'ready' is bool")


@pytest.mark.parametrize("statement", ["launch_bounds(128);", "undeclared_name;", "x.at(t) + nothing;"])
def test_a_wrong_expression_statement_is_one_error_without_a_no_effect_warning(statement: str) -> None:
    source = (
        f"__co__ void f(global f32 [32] x) {{\n  parallel t by 32 : thread {{\n    {statement}\n  }}\n}}\n"
    )
    (diagnostic,) = _check(source)
    assert diagnostic.severity == "error" and diagnostic.line == 3


def test_an_expression_statement_without_effect_is_still_a_warning() -> None:
    (diagnostic,) = _check(
        "__co__ void f(global f32 [32] x) {\n  parallel t by 32 : thread {\n    x.at(t) * 2.0f;\n  }\n}\n"
    )
    assert diagnostic.severity == "warning" and "has no effect" in diagnostic.message
