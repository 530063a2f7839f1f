"""A Choreo session in an in-process IPython shell: what a cell may change, which names it may take,
and the paths that must stay fast on hostile input (issue 17, items 8-10)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from corpus import CONFORMANCE
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from test_fuzz import SLOW_SECONDS, time_limit

import choreo_kernel as ck
from choreo_kernel.kernel.completion import complete
from choreo_kernel.kernel.display import SHOWN_DIAGNOSTICS, error_traceback
from choreo_kernel.kernel.inspection import help_at
from choreo_kernel.kernel.magics import register_magics
from choreo_kernel.kernel.session import ChoreoSession

FOO4 = "%%choreo --target sim\n__co__ s32 [4] foo(s32 [4] a) { return a; }\n"
# Valid on sim, where a CUDA-only rule is a warning; its --cuda display has to lower it for CUDA and fails.
CUDA_ONLY_ERROR = (
    "%%choreo --target sim --cuda\n"
    + (CONFORMANCE / "invalid" / "trigger_after_dma_cuda.co").read_text().replace("fold(", "foo(")
    + "#define LATER 1\n"
)


@pytest.fixture
def session() -> Iterator[ChoreoSession]:
    shell = InteractiveShell.instance()
    saved = dict(shell.user_ns)
    choreo = ChoreoSession(shell)
    register_magics(shell, choreo)
    yield choreo
    shell.user_ns.clear()
    shell.user_ns.update(saved)


def test_a_cell_that_fails_after_compiling_changes_nothing(session: ChoreoSession) -> None:
    session.run_cell(FOO4)
    before = session.shell.user_ns["foo"]
    with pytest.raises(ck.ChoreoError, match="is not a TMA load"):
        session.run_cell(CUDA_ONLY_ERROR)
    assert session.shell.user_ns["foo"] is before and session.functions["foo"] is before
    assert "LATER" not in session.macros
    assert session.last_cell is not None and "s32 [4] foo" in session.last_cell.source


@pytest.mark.parametrize("name", ["get_ipython", "In", "Out", "exit", "choreo", "_", "_i2", "_7", "__name__"])
def test_a_function_may_not_take_a_name_the_kernel_needs(session: ChoreoSession, name: str) -> None:
    with pytest.raises(ck.ChoreoError) as raised:
        session.run_cell(f"__co__ s32 [4] {name}(s32 [4] a) {{ return a; }}\n")
    (diagnostic,) = raised.value.diagnostics
    assert (diagnostic.line, diagnostic.column) == (1, 16)
    assert f"a function named '{name}' would replace the notebook's own" in diagnostic.message
    assert name not in session.functions
    assert callable(session.shell.user_ns["get_ipython"]) and "get_ipython" not in session.functions
    session.run_cell(FOO4)  # and the next cell still works
    assert "foo" in session.functions


@pytest.mark.parametrize("text", ["print(1)\n", "_co__ void f(s32 [4] a) { }\n"])
def test_plain_text_in_a_choreo_cell_is_an_error(session: ChoreoSession, text: str) -> None:
    with pytest.raises(ck.ChoreoError) as raised:
        session.run_cell(text)
    (diagnostic,) = raised.value.diagnostics
    assert diagnostic.severity == "error" and (diagnostic.line, diagnostic.column) == (1, 1)
    assert "a Choreo cell holds no other code" in diagnostic.message


def test_a_cell_with_many_errors_shows_the_first_and_a_count(session: ChoreoSession) -> None:
    lines = 2000
    with pytest.raises(ck.ChoreoError) as raised:
        # each pair of lines: an error ('zz' is not declared) and a warning (a statement with no effect)
        session.run_cell("__co__ void f(s32 [4] a) {\n" + "  zz;\n  1;\n" * lines + "}\n")
    shown = error_traceback(raised.value)
    assert sum(": error: " in line or ": warning: " in line for line in shown) == SHOWN_DIAGNOSTICS
    errors, warnings = lines - SHOWN_DIAGNOSTICS // 2, lines - SHOWN_DIAGNOSTICS // 2
    assert shown[-1] == f"... and {errors + warnings:,} more ({errors:,} errors, {warnings:,} warnings)"


def test_completion_and_inspection_in_a_long_word_do_not_hang() -> None:
    """A 400 KB word: the quadratic search of the word before the cursor took 30 s at 40 KB."""
    word, dotted = "a" * 400_000 + "-", "a." * 200_000 + "-"
    with time_limit(SLOW_SECONDS):
        assert complete(word, len(word), [])["cursor_start"] == len(word)
        assert help_at(dotted, len(dotted) // 2, {}, {}) is None


def _sweep_cell(session: ChoreoSession, tail: str = "") -> None:
    session.run_cell(
        "%%choreo --target sim\n#define T 1\n"
        "__co__ s32 [4] foo(s32 [4] a) { s32 [4] o; parallel p by 4 : block { o.at(p) = a.at(p) + T; } "
        f"return o; }}\n{tail}"
    )
    session.shell.user_ns["x"] = np.zeros(4, np.int32)


@pytest.mark.parametrize("grid", ["T=,", "T=1,,2", "T=1,"])
def test_sweep_refuses_an_empty_value(session: ChoreoSession, grid: str) -> None:
    _sweep_cell(session)
    with pytest.raises(UsageError, match=f"'{grid}' has an empty value"):
        session.shell.run_line_magic("sweep", f"{grid} -- foo(x)")


def test_sweep_names_a_macro_the_cell_undefines(session: ChoreoSession) -> None:
    _sweep_cell(session, "#undef T\n")
    with pytest.raises(UsageError, match=r"undefines T \('#undef T'\)"):
        session.shell.run_line_magic("sweep", "T=1,2 -- foo(x)")
