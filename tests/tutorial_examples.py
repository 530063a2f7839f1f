"""The tutorials' Choreo programs as `.co` files: examples/NAME.co holds the Choreo cells of
tutorials/NAME.ipynb in order, under a short `//` header, so the CLI can be tried on them.

The notebooks are the source of truth; `python tests/tutorial_examples.py` rewrites examples/ from them,
and tests/test_examples.py fails when the two disagree.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from choreo_kernel.kernel.cells import CHOREO, split_cell

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = ROOT / "tutorials"
EXAMPLES = ROOT / "examples"


def choreo_cells(notebook_path: Path) -> list[str]:
    """The Choreo cells of a notebook, each without its `%%choreo` line."""
    notebook = nbformat.read(notebook_path, as_version=4)
    cells = [split_cell(cell.source) for cell in notebook.cells if cell.cell_type == "code"]
    return [cell.body.strip("\n") for cell in cells if cell.language == CHOREO]


def header(name: str) -> str:
    return (
        f"// The Choreo cells of tutorials/{name}.ipynb, in order (tests/test_examples.py keeps them equal).\n"
        f"// Try: choreo check examples/{name}.co; choreo graph examples/{name}.co --format svg -o {name}.svg\n"
    )


def expected_examples() -> dict[str, str]:
    """examples/NAME.co's text for each tutorial; a tutorial whose programs an earlier one already
    holds (lesson 5 tunes lesson 4's GEMM) has no file of its own."""
    examples: dict[str, str] = {}
    seen: set[str] = set()
    for notebook in sorted(TUTORIALS.glob("*.ipynb")):
        programs = "\n\n".join(choreo_cells(notebook))
        if programs and programs not in seen:
            seen.add(programs)
            examples[notebook.stem] = f"{header(notebook.stem)}\n{programs}\n"
    return examples


if __name__ == "__main__":
    for stale in EXAMPLES.glob("*.co"):
        stale.unlink()
    EXAMPLES.mkdir(exist_ok=True)
    for name, text in expected_examples().items():
        (EXAMPLES / f"{name}.co").write_text(text, encoding="utf-8")
        print(f"wrote examples/{name}.co")
