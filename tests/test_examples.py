"""examples/*.co: the tutorials' programs as files, equal to the notebooks' cells, and clean for the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tutorial_examples import EXAMPLES, TUTORIALS, choreo_cells, expected_examples

import choreo_kernel as ck

EXPECTED = expected_examples()
FILES = sorted(EXAMPLES.glob("*.co"))


def test_examples_are_the_tutorials_programs() -> None:
    assert sorted(path.stem for path in FILES) == sorted(EXPECTED), "run `python tests/tutorial_examples.py`"
    for path in FILES:
        assert path.read_text(encoding="utf-8") == EXPECTED[path.stem], (
            f"{path.name} differs from the Choreo cells of tutorials/{path.stem}.ipynb: "
            "run `python tests/tutorial_examples.py`"
        )


def test_every_tutorial_program_is_in_an_example() -> None:
    """Lesson 5 has no file of its own because lesson 4's holds its GEMM: check that it does."""
    texts = "\n".join(EXPECTED.values())
    for notebook in sorted(TUTORIALS.glob("*.ipynb")):
        for cell in choreo_cells(notebook):
            assert cell in texts, f"a Choreo cell of {notebook.name} is in no example"


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
@pytest.mark.parametrize("target", ["cuda", "sim"])
def test_example_compiles_without_diagnostics(path: Path, target: str) -> None:
    source = path.read_text(encoding="utf-8")
    diagnostics = ck.check(source, target=target, filename=path.name)
    assert not diagnostics, "\n".join(d.render(source, path.name) for d in diagnostics)


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_choreo_graph_draws_every_function_of_an_example(path: Path) -> None:
    functions = ck.compile(path.read_text(encoding="utf-8"), target="sim").functions
    result = subprocess.run(
        [sys.executable, "-m", "choreo_kernel", "graph", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert [
        line.split('"')[1] for line in result.stdout.splitlines() if line.startswith("digraph")
    ] == functions
