"""Every tutorial runs top to bottom, headless, as a reader would run it, with no error in any cell.

On the sim backend (CI) each notebook gets small sizes through a cell inserted after its
`parameters` cell, as papermill injects parameters; the GPU test runs them on the cuda
backend with their own sizes. A check cell prints a line starting with ✓ after its asserts,
so a check that was skipped is as visible as one that failed. With $CHOREO_TUTORIAL_OUT
set, the executed notebooks and a text digest of their outputs (plus the plots as PNG) are
written there.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

TUTORIALS = Path(__file__).resolve().parent.parent / "tutorials"
NAMES = sorted(path.stem for path in TUTORIALS.glob("*.ipynb"))
CHECK_MARK = "✓"
SMALL_SIZES = {
    "01_first_kernel": "M, N = 32, 48\nROWS = 32",
    "02_async_copies": "B, T = 4, 6",
    "03_events_pipelines": "ROWS = 64\nT = 6",
    "04_hopper_gemm": "SIM_SIZE = (128, 256, 128)",
    "05_tuning": "SIM_SIZE = (128, 256, 128)",
    "06_attention": "SIM_SHAPE = (1, 200)",
}


def test_every_tutorial_has_small_sizes_for_sim() -> None:
    assert NAMES == sorted(SMALL_SIZES)


@pytest.mark.parametrize("name", NAMES)
def test_tutorial_is_stored_clean_with_a_parameters_cell_first(name: str) -> None:
    notebook = nbformat.read(TUTORIALS / f"{name}.ipynb", as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "choreo"
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert code[0].source.startswith("%%python")
    assert all(not cell.outputs and cell.execution_count is None for cell in code)


@pytest.mark.parametrize("name", NAMES)
def test_tutorial_runs_on_sim(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHOREO_TARGET", "sim")
    notebook = execute(name, SMALL_SIZES[name], cell_timeout=120)
    check_outputs(notebook)
    keep(notebook, name, "sim")


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_tutorial_runs_on_cuda(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHOREO_TARGET", "cuda")
    notebook = execute(name, "", cell_timeout=600)
    check_outputs(notebook)
    keep(notebook, name, "cuda")


def execute(name: str, parameters: str, cell_timeout: int) -> nbformat.NotebookNode:
    """The notebook after running it in a fresh `choreo` kernel; `parameters` run after its own."""
    notebook = nbformat.read(TUTORIALS / f"{name}.ipynb", as_version=4)
    if parameters:
        index = next(
            i for i, cell in enumerate(notebook.cells) if "parameters" in cell.metadata.get("tags", [])
        )
        injected = nbformat.v4.new_code_cell(f"%%python\n# injected by tests/test_tutorials.py\n{parameters}")
        injected.metadata["tags"] = ["injected-parameters"]
        notebook.cells.insert(index + 1, injected)
    client = NotebookClient(notebook, timeout=cell_timeout, kernel_name="choreo", allow_errors=True)
    client.execute(cwd=str(TUTORIALS))
    return notebook


def check_outputs(notebook: nbformat.NotebookNode) -> None:
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        errors = [output for output in cell.outputs if output.output_type == "error"]
        assert not errors, f"cell {index} failed:\n{cell.source}\n" + "\n".join(errors[0].traceback)
        if CHECK_MARK in cell.source:
            assert CHECK_MARK in stdout(cell), f"cell {index} printed no confirmation:\n{cell.source}"


def stdout(cell: nbformat.NotebookNode) -> str:
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def keep(notebook: nbformat.NotebookNode, name: str, target: str) -> None:
    """Under $CHOREO_TUTORIAL_OUT: the executed notebook, a text digest of it, and its plots."""
    directory = os.environ.get("CHOREO_TUTORIAL_OUT")
    if not directory:
        return
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, out / f"{name}.{target}.ipynb")
    digest = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        digest.append(f"=== cell {index}: {cell.source.splitlines()[0] if cell.source else ''}")
        for number, output in enumerate(cell.outputs):
            if output.output_type == "stream":
                digest.append(output.text.rstrip())
            elif "data" in output:
                if "image/png" in output.data:
                    png = out / f"{name}.{target}.cell{index}.{number}.png"
                    png.write_bytes(base64.b64decode(output.data["image/png"]))
                    digest.append(f"[plot: {png.name}]")
                elif "text/plain" in output.data and "image/svg+xml" not in output.data:
                    digest.append(output.data["text/plain"].rstrip())
    (out / f"{name}.{target}.txt").write_text("\n".join(digest) + "\n")
