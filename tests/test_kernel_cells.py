"""How the kernel reads a cell: its language, its options line, and whether it is complete."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import choreo_kernel as ck
from choreo_kernel.kernel.cells import CHOREO, IPYTHON, PYTHON, choreo_is_complete, split_cell
from choreo_kernel.kernel.options import CellOptions, parse_options

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("__co__ void f() {}", CHOREO),
        ("%%choreo --graph\n__co__ void f() {}", CHOREO),
        ("\n%%python\nx = 1", PYTHON),
        ("%time x", IPYTHON),
        ("%%bash\nls", IPYTHON),
        ("%%pythonic\nx", IPYTHON),  # a different magic, not %%python
    ],
)
def test_language_is_read_from_the_first_non_blank_line(text: str, language: str) -> None:
    assert split_cell(text).language == language


def test_the_header_is_masked_so_positions_do_not_move() -> None:
    cell = split_cell("%%choreo --cuda\n  x;")
    assert cell.masked == " " * len("%%choreo --cuda") + "\n  x;"
    assert (cell.header_line, cell.options, cell.options_column) == (1, "--cuda", 10)
    assert split_cell("%%python\nprint(1)").body == "print(1)"


def options(line: str) -> CellOptions:
    return parse_options(split_cell(f"%%choreo {line}\n"), "cell[1]")


def test_options_are_parsed() -> None:
    assert options("") == CellOptions()
    assert options("--graph --cuda --target sim -D TILE=64 -DFAST --target=cuda -D NAME=x") == CellOptions(
        graph=True, cuda=True, target="cuda", defines={"TILE": 64, "FAST": 1, "NAME": "x"}
    )


@pytest.mark.parametrize(
    ("line", "column", "end_column", "message"),
    [
        ("--grpah", 10, 17, "unknown option '--grpah'"),
        ("--graph --target gpu", 27, 30, "unknown target 'gpu'"),
        ("--target=gpu", 19, 22, "unknown target 'gpu'"),
        ("-D 3x=1", 13, 17, "'-D 3x=1' is not -D NAME or -D NAME=VALUE"),
        ("--cuda -D", 17, 19, "'-D' needs a value"),
    ],
)
def test_a_bad_option_is_a_diagnostic_on_the_header(
    line: str, column: int, end_column: int, message: str
) -> None:
    with pytest.raises(ck.ChoreoError) as caught:
        options(line)
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.line, diagnostic.column, diagnostic.end_column) == (1, column, end_column)
    assert message in diagnostic.message
    assert f"%%choreo {line}" in str(caught.value)


@pytest.mark.parametrize(
    ("source", "status", "indent"),
    [
        ("__co__ void f() {}", "complete", ""),
        ("", "complete", ""),
        ("__co__ void f() {", "incomplete", "  "),
        ("__co__ void f() {\n  x = [4 };", "invalid", ""),
        ("__co__ void f() {\n  parallel p by 4 {", "incomplete", "    "),
        ("__co__ void f(f32 [4] a", "incomplete", ""),
        ("__co__ void f() { // }\n", "incomplete", "  "),  # a brace in a comment does not count
        ("}", "invalid", ""),
    ],
)
def test_is_complete_follows_brackets(source: str, status: str, indent: str) -> None:
    assert choreo_is_complete(source) == (status, indent)


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed")
def test_a_wide_graph_is_fitted_to_the_output_width_with_its_size_said() -> None:
    from choreo_kernel.kernel.display import fitted_graph_html, graph_bundle

    module = ck.compile((EXAMPLES / "03_events_pipelines.co").read_text(), target="sim")
    html = graph_bundle(module, "pipe2")["text/html"]
    width, height = (
        int(value) for value in re.search(r'<img [^>]*width="(\d+)" height="(\d+)"', html).groups()
    )
    assert width > 1000, "tutorial 3's pipe2 is the wide graph of the issue"
    assert "max-width: 100%" in html and "input:checked + img { max-width: none" in html
    assert f"{width} × {height} px: click the graph to see it at full size" in html
    # A narrow one needs no caption.
    narrow = '<svg width="300pt" height="150pt" viewBox="0 0 300 150"></svg>'
    assert 'width="400" height="200"' in fitted_graph_html(narrow, "f") and "<p>" not in fitted_graph_html(
        narrow, "f"
    )


def test_without_graphviz_the_graph_cell_shows_the_reason_and_the_dot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A machine without `dot` (the H200 image has none) still runs `%%choreo --graph` cells."""
    from programs import BLEND

    from choreo_kernel.compiler.graph import dot as dot_module
    from choreo_kernel.kernel.display import graph_bundle

    monkeypatch.setattr(dot_module.shutil, "which", lambda name: None)
    module = ck.compile(BLEND, target="sim")
    bundle = graph_bundle(module, "blend")
    assert "image/svg+xml" not in bundle and "text/html" not in bundle
    assert bundle["text/vnd.graphviz"] == module.graph("blend").to_dot()
    assert bundle["text/plain"].startswith("graphviz is not installed")
