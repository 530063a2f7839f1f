"""The conformance corpus against the front end: valid programs check clean, invalid ones are
rejected on their ERROR-LINE with their ERROR-KEYWORDS, for every target the header lists."""

from __future__ import annotations

import pytest
from corpus import ALL_TARGETS, Program, error_diagnostics, load, per_target

import choreo_kernel as ck

VALID = load("valid")
INVALID = load("invalid")


def _rendered(program: Program, diagnostics: list[ck.Diagnostic]) -> str:
    return "\n".join(d.render(program.source, program.name) for d in diagnostics)


def test_corpus_is_complete() -> None:
    """Guards the parametrization below: an empty or half-copied corpus would test nothing."""
    assert len(VALID) >= 30
    assert len(INVALID) >= 40
    for program in VALID + INVALID:
        assert set(program.targets) <= set(ALL_TARGETS)


@pytest.mark.parametrize(("program", "target"), per_target(VALID))
def test_valid_program_has_no_error(program: Program, target: str) -> None:
    diagnostics = ck.check(program.source, target=target, filename=program.name)
    assert not error_diagnostics(diagnostics), _rendered(program, diagnostics)


@pytest.mark.parametrize(("program", "target"), per_target(INVALID))
def test_invalid_program_is_rejected_on_its_line(program: Program, target: str) -> None:
    diagnostics = ck.check(program.source, target=target, filename=program.name)
    errors = error_diagnostics(diagnostics)
    assert errors, f"no error reported for {target}:\n{_rendered(program, diagnostics)}"
    _assert_expected(program, errors[0], diagnostics)

    with pytest.raises(ck.ChoreoError) as raised:
        ck.compile(program.source, target=target, filename=program.name)
    compile_errors = error_diagnostics(raised.value.diagnostics)
    assert compile_errors, "ck.compile raised ChoreoError without an error diagnostic"
    _assert_expected(program, compile_errors[0], raised.value.diagnostics)


def _assert_expected(program: Program, first: ck.Diagnostic, diagnostics: list[ck.Diagnostic]) -> None:
    """The first error sits on ERROR-LINE and names every ERROR-KEYWORD (notes included)."""
    shown = _rendered(program, diagnostics)
    assert first.line == program.error_line, (
        f"first error on line {first.line}, not {program.error_line}:\n{shown}"
    )
    text = first.full_message.lower()
    missing = [word for word in program.error_keywords if word.lower() not in text]
    assert not missing, f"first error does not mention {missing}:\n{shown}"
