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

import importlib.util
import os
import secrets
import shutil
import sys
import urllib.parse
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
from playwright.sync_api import Browser, Locator, Page, sync_playwright
from programs import BLEND

RUN_SECONDS = 120

# A small elementwise kernel with two async copies, so its graph has futures to show; the
# comment line is there to be highlighted.
PROGRAM = "// Blend two tiles: w * x + (1 - w) * y, one block per row.\n" + BLEND + "\n"

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


def test_co_file_is_highlighted_in_the_editor(lab: tuple[str, Path], page: Page, tmp_path: Path) -> None:
    url, root = lab
    (root / "blend.co").write_text(PROGRAM)
    page.goto(url.format(path="blend.co"))
    try:
        assert_highlighted(page.locator(".jp-FileEditor"))
    finally:
        page.screenshot(path=tmp_path / "choreo-browser-editor.png")


def test_choreo_cell_runs_with_summary_and_graph(lab: tuple[str, Path], page: Page, tmp_path: Path) -> None:
    if "choreo" not in KernelSpecManager().find_kernel_specs():
        pytest.skip("the choreo kernelspec is not installed (kernelspec/choreo, shipped in the wheel)")
    url, root = lab
    # A new, empty notebook on the Choreo kernel; the cells are typed in the browser.
    notebook = nbformat.v4.new_notebook(
        metadata={"kernelspec": {"name": "choreo", "display_name": "Choreo", "language": "choreo"}},
        cells=[nbformat.v4.new_code_cell(""), nbformat.v4.new_code_cell("")],
    )
    nbformat.write(notebook, root / "blend.ipynb")
    page.goto(url.format(path="blend.ipynb"))

    cells = page.locator(".jp-Notebook .jp-CodeCell")
    cell = cells.first
    try:
        # A cell run before the kernel is connected is dropped; the status bar names the
        # kernel's display name and state once it is.
        page.locator("#jp-main-statusbar").get_by_text("Choreo | Idle").wait_for(timeout=RUN_SECONDS * 1000)
        # Text arrives as one input (as a paste does), so the editor's auto-indent adds nothing.
        cells.nth(1).locator(".cm-content").click()
        page.keyboard.insert_text(PYTHON_CELL)
        cell.locator(".cm-content").click()
        page.keyboard.insert_text("%%choreo --graph --target sim\n" + PROGRAM)
        page.keyboard.press("Control+Enter")  # run the cell and stay on it
        # JupyterLab shows an SVG output as an <img> of a data URL.
        graph = cell.locator('.jp-OutputArea-output[data-mime-type="image/svg+xml"] img').first
        graph.wait_for(timeout=RUN_SECONDS * 1000)

        assert_highlighted(cell)
        assert highlighted(cell, "meta") == ["%%choreo --graph --target sim"]
        outputs = cell.locator(".jp-OutputArea").inner_text()
        assert "blend(" in outputs and "kernel" in outputs, outputs
        svg = urllib.parse.unquote(graph.get_attribute("src") or "")
        assert svg.startswith("data:image/svg+xml") and "<svg" in svg and "dma.copy.async" in svg, svg[:200]
        assert graph.evaluate("image => image.complete && image.naturalWidth > 0"), "the graph did not render"

        # A %%python cell is Python: only its first line is Choreo's.
        python = cells.nth(1)
        assert python.locator(".cm-content [class*='cm-choreo-']").all_inner_texts() == ["%%python"]
    finally:
        page.screenshot(path=tmp_path / "choreo-browser.png")  # on a failure too: what the page did instead
