"""JupyterLab in a real browser: Choreo highlighted by the extension, and a cell run on the kernel.

Starts `jupyter lab` on a free port in a temporary directory and drives the system's
Chromium, headless, through Playwright (Playwright's own browser downloads are never
used). One test opens a `.co` file in the file editor; the other opens a notebook on the
`choreo` kernel, types a `%%choreo --graph` cell into it, runs it and checks its summary
and graph. Both look for the extension's `cm-choreo-<kind>` classes on the editor's tokens
and leave a screenshot in the test's output folder (pytest's tmp_path) for a person to
look at.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import re
import secrets
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api", reason="needs Playwright (pip install -e '.[browser]')")
if importlib.util.find_spec("jupyterlab") is None:
    pytest.skip("needs JupyterLab (pip install -e '.[browser]')", allow_module_level=True)

# JupyterLab brings these; only after the checks above.
import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_core.paths import jupyter_path
from local_server import STARTUP_SECONDS, free_port, serving
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright
from programs import BLEND

import choreo_kernel as ck

RUN_SECONDS = 120

# A small elementwise kernel with two async copies, so its graph has futures to show; the
# comment line is there to be highlighted.
PROGRAM = "// Blend two tiles: w * x + (1 - w) * y, one block per row.\n" + BLEND + "\n"

# A missing `;` on a line long enough to wrap in the output area.
MISSING_SEMICOLON = """\
__co__ f32 [B, 64] rotate(f32 [B, 64] x) {
  f32 [B, 64] y;
  parallel b by B : block, t by 64 : thread {
    int source_lane_of_this_thread_in_the_rotation = (t + 1) % 64
    y.at(b, t) = x.at(b, source_lane_of_this_thread_in_the_rotation);
  }
  return y;
}"""

PIPELINE_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "03_events_pipelines.co"

PYTHON_CELL = """\
%%python
import numpy as np  # a Python comment, not Choreo's `#` operator
print(blend(np.ones((2, 128), np.float32), np.zeros((2, 128), np.float32), 0.25).sum())
"""

# Chromium flags for a machine without a display, GPU or outside network (Playwright
# already adds --no-sandbox and --headless): background requests to Google's hosts would
# only fail, slowly.
CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str | None:
    """The system's Chromium or Chrome."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def extension_installed() -> bool:
    return any(
        Path(directory, "choreo-kernel", "package.json").exists()
        for directory in jupyter_path("labextensions")
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A running `jupyter lab`: the URL to append paths to (token included), and its root directory."""
    if not extension_installed():
        pytest.skip("the JupyterLab extension is not installed (needs npm at `pip install -e .`)")
    home = tmp_path_factory.mktemp("lab")
    root = home / "root"
    root.mkdir()
    # Settings, workspaces and runtime files of this server only; no news pop-up over the page.
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    }
    port, token = free_port(), secrets.token_hex(16)
    arguments = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",  # CI runs as root
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    base = f"http://127.0.0.1:{port}"
    ready = f"{base}/api/status?token={token}"
    with serving("jupyter lab", arguments, ready, home / "server.log", env=env, cwd=root):
        yield f"{base}/lab/tree/{{path}}?token={token}", root


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_path()
    if executable is None:
        pytest.skip("needs a system Chromium (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    yield context.new_page()
    context.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where screenshots go: $CHOREO_BROWSER_OUT when set (to keep them), else the test's own folder."""
    directory = Path(os.environ.get("CHOREO_BROWSER_OUT") or tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def function_source(path: Path, name: str) -> str:
    """The text of one `__co__` function of a file."""
    text = path.read_text(encoding="utf-8")
    span = ck.compile(text, target="sim").analysis.functions[name].function.span
    return "\n".join(text.splitlines()[span.line - 1 : span.end_line])


def highlighted(editor: Locator, kind: str) -> list[str]:
    """The texts of the editor's tokens of one kind."""
    return editor.locator(f".cm-content .cm-choreo-{kind}").all_inner_texts()


def assert_highlighted(editor: Locator) -> None:
    editor.locator(".cm-content .cm-choreo-keyword").first.wait_for(timeout=STARTUP_SECONDS * 1000)
    assert {"__co__", "parallel", "by", "wait", "return"} <= set(highlighted(editor, "keyword"))
    assert {"dma.copy.async", "dma.copy"} <= set(highlighted(editor, "operation"))
    assert {"f32"} <= set(highlighted(editor, "type"))
    assert {"shared"} <= set(highlighted(editor, "storage"))
    assert {"block", "thread"} <= set(highlighted(editor, "level"))
    assert any(text.startswith("// Blend") for text in highlighted(editor, "comment"))


def test_co_file_is_highlighted_in_the_editor(lab: tuple[str, Path], page: Page, shots: Path) -> None:
    url, root = lab
    (root / "blend.co").write_text(PROGRAM)
    page.goto(url.format(path="blend.co"))
    try:
        assert_highlighted(page.locator(".jp-FileEditor"))
    finally:
        page.screenshot(path=shots / "choreo-browser-editor.png")


def open_notebook(page: Page, lab: tuple[str, Path], name: str, cells: int) -> Locator:
    """A new notebook of `cells` empty cells on the Choreo kernel, open and connected; its cells."""
    if "choreo" not in KernelSpecManager().find_kernel_specs():
        pytest.skip("the choreo kernelspec is not installed (kernelspec/choreo, shipped in the wheel)")
    url, root = lab
    notebook = nbformat.v4.new_notebook(
        metadata={"kernelspec": {"name": "choreo", "display_name": "Choreo", "language": "choreo"}},
        cells=[nbformat.v4.new_code_cell("") for _ in range(cells)],
    )
    nbformat.write(notebook, root / name)
    page.goto(url.format(path=name) + "&reset")  # `reset`: only this notebook, not the last test's too
    # A cell run before the kernel is connected is dropped; the status bar names the kernel's
    # display name and state once it is.
    page.locator("#jp-main-statusbar").get_by_text("Choreo | Idle").wait_for(timeout=RUN_SECONDS * 1000)
    return page.locator(".jp-Notebook .jp-CodeCell")


def run_cell(page: Page, cell: Locator, text: str) -> None:
    """Type `text` into `cell` as one input (as a paste does: no auto-indent), run it, wait for its end."""
    cell.locator(".cm-content").click()
    page.keyboard.insert_text(text)
    page.keyboard.press("Control+Enter")  # run the cell and stay on it
    cell.locator(".jp-InputPrompt").get_by_text(re.compile(r"\[\d+\]")).wait_for(timeout=RUN_SECONDS * 1000)


def graph_image(cell: Locator) -> Locator:
    """The cell's dependency graph: the kernel's HTML form, an <img> of the SVG in a `choreo-graph` box."""
    graph = cell.locator(".jp-OutputArea-output .choreo-graph img").first
    graph.wait_for(timeout=RUN_SECONDS * 1000)
    return graph


def test_choreo_cell_runs_with_summary_and_graph(lab: tuple[str, Path], page: Page, shots: Path) -> None:
    cells = open_notebook(page, lab, "blend.ipynb", 2)
    cell = cells.first
    try:
        cells.nth(1).locator(".cm-content").click()
        page.keyboard.insert_text(PYTHON_CELL)
        run_cell(page, cell, "%%choreo --graph --target sim\n" + PROGRAM)
        graph = graph_image(cell)

        assert_highlighted(cell)
        assert highlighted(cell, "meta") == ["%%choreo --graph --target sim"]
        outputs = cell.locator(".jp-OutputArea").inner_text()
        assert "blend(" in outputs and "kernel" in outputs, outputs
        svg = base64.b64decode((graph.get_attribute("src") or "").removeprefix("data:image/svg+xml;base64,"))
        assert b"<svg" in svg and b"dma.copy.async" in svg, svg[:200]
        assert graph.evaluate("image => image.complete && image.naturalWidth > 0"), "the graph did not render"
        # The README's picture: the cell and its outputs, in a window tall enough for all of it.
        page.set_viewport_size({"width": 1100, "height": 1400})
        cell.screenshot(path=shots / "choreo-cell-with-graph.png")

        # A %%python cell is Python: only its first line is Choreo's.
        python = cells.nth(1)
        assert python.locator(".cm-content [class*='cm-choreo-']").all_inner_texts() == ["%%python"]
    finally:
        page.screenshot(path=shots / "choreo-browser.png")  # on a failure too: what the page did instead


def test_a_wide_graph_fits_the_output_and_a_click_shows_it_full_size(
    lab: tuple[str, Path], page: Page, shots: Path
) -> None:
    """Tutorial 3's `pipe2` is wider than the output area: fitted first, its full size one click away."""
    (cell,) = open_notebook(page, lab, "pipe2.ipynb", 1).all()
    try:
        run_cell(page, cell, "%%choreo --graph --target sim\n" + function_source(PIPELINE_EXAMPLE, "pipe2"))
        graph = graph_image(cell)
        graph.evaluate("image => image.decode()")
        natural = graph.evaluate("image => image.naturalWidth")
        area = cell.locator(".jp-OutputArea-output .choreo-graph").first
        fitted, room = graph.bounding_box(), area.bounding_box()
        assert fitted and room and natural > room["width"], (natural, room)
        assert fitted["width"] <= room["width"] + 1, "the graph is wider than its output area"
        assert "click the graph to see it at full size" in area.inner_text()
        cell.screenshot(path=shots / "choreo-wide-graph-fitted.png")

        graph.click()
        full = graph.bounding_box()
        assert full and abs(full["width"] - natural) <= 1, (full, natural)
        assert area.evaluate("box => box.scrollWidth > box.clientWidth"), "the full-size graph should scroll"
        cell.screenshot(path=shots / "choreo-wide-graph-full-size.png")
        graph.click()
        back = graph.bounding_box()
        assert back and back["width"] <= room["width"] + 1
    finally:
        page.screenshot(path=shots / "choreo-browser-wide-graph.png")


def test_an_error_is_its_diagnostic_wrapped_between_words(
    lab: tuple[str, Path], page: Page, shots: Path
) -> None:
    (cell,) = open_notebook(page, lab, "error.ipynb", 1).all()
    try:
        run_cell(page, cell, MISSING_SEMICOLON)
        error = cell.locator(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"] pre'
        ).first
        error.wait_for(timeout=RUN_SECONDS * 1000)
        text = error.inner_text()
        assert "error: syntax error: expected ',' or ';', found 'y'" in text, text
        assert "note: 'y' is here" in text and "Traceback" not in text
        # JupyterLab breaks output lines anywhere; in a Choreo notebook they break between words.
        assert error.evaluate("pre => getComputedStyle(pre).wordBreak") == "normal"
        assert error.evaluate("pre => getComputedStyle(pre).overflowWrap") == "break-word"
        cell.screenshot(path=shots / "choreo-error.png")
    finally:
        page.screenshot(path=shots / "choreo-browser-error.png")


def test_shift_tab_shows_help_with_its_code_rendered(lab: tuple[str, Path], page: Page, shots: Path) -> None:
    (cell,) = open_notebook(page, lab, "tooltip.ipynb", 1).all()
    try:
        cell.locator(".cm-content").click()
        page.keyboard.insert_text(PROGRAM)
        cell.get_by_text("parallel", exact=True).first.click()  # the cursor in the word
        page.keyboard.press("Shift+Tab")
        tooltip = page.locator(".jp-Tooltip")
        # The tooltip box appears first, its rendered Markdown a moment later.
        expect(tooltip).to_contain_text("parallel:", timeout=RUN_SECONDS * 1000)
        assert tooltip.inner_text().startswith("parallel:"), tooltip.inner_text()
        assert "%docs parallelism" in tooltip.inner_text()
        assert tooltip.locator("code").count() >= 1, "the backticks should be rendered as code"
        assert "`" not in tooltip.inner_text()
        page.screenshot(path=shots / "choreo-tooltip.png")
    finally:
        page.screenshot(path=shots / "choreo-browser-tooltip.png")


def test_the_editor_indents_by_two_and_a_closing_brace_dedents(lab: tuple[str, Path], page: Page) -> None:
    (cell,) = open_notebook(page, lab, "indent.ipynb", 1).all()
    cell.locator(".cm-content").click()
    page.keyboard.type("__co__ void f() {\nparallel b by 1 : block {\nsync.shared;\n}\n}")
    lines = cell.locator(".cm-content .cm-line").all_inner_texts()
    assert lines == ["__co__ void f() {", "  parallel b by 1 : block {", "    sync.shared;", "  }", "}"], (
        lines
    )
    # A %%python cell keeps Python's four spaces.
    page.keyboard.press("Control+a")
    page.keyboard.type("%%python\nif True:\nx = 1")
    lines = cell.locator(".cm-content .cm-line").all_inner_texts()
    assert lines == ["%%python", "if True:", "    x = 1"], lines
