"""The Choreo kernel end to end, through jupyter_client, as a notebook front end would use it.

One kernel serves the module (cells build on each other as in a notebook); tests that need
a kernel with no history, or that interrupt it, start their own.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Iterator

import nbformat
import pytest
from kernel_driver import KernelDriver, ok
from nbclient import NotebookClient
from programs import ADD, BLEND

# 256 threads x 2^24 iterations: far longer than any test waits, on any backend.
SPIN = """\
__co__ f32 [256] spin(f32 [256] x) {
  f32 [256] out;
  parallel t by 256 : thread {
    mutable f32 acc = 0.0f;
    foreach k in [4194304] {  // under the sim's step limit, and minutes long
      acc += x.at(t);
    }
    out.at(t) = acc;
  }
  return out;
}"""

# An undeclared name on line 3, column 5 of the Choreo text.
UNDECLARED = """\
__co__ f32 [M, N] add(f32 [M, N] a, f32 [M, N] b) {
  f32 [M, N] out;
    c.at(0, 0) = 1.0f;
  return out;
}"""


@pytest.fixture(scope="module")
def kernel() -> Iterator[KernelDriver]:
    with KernelDriver("choreo") as driver:
        yield driver


@pytest.fixture
def fresh_kernel() -> Iterator[KernelDriver]:
    with KernelDriver("choreo") as driver:
        yield driver


def python(driver: KernelDriver, code: str) -> str:
    """Run a `%%python` cell that must succeed; its stdout."""
    return ok(driver.run("%%python\n" + code)).stream()


def test_a_choreo_cell_shows_one_summary_line_per_function(kernel: KernelDriver) -> None:
    run = kernel.run(ADD)
    assert run.status == "ok", run.traceback
    (summary,) = run.displays()
    assert summary == {
        "text/plain": "f32 [M, N] add(f32 [M, N] a, f32 [M, N] b): 1 kernel, 256 threads/block, no shared memory"
    }


def test_functions_macros_and_the_last_module_carry_across_cells(kernel: KernelDriver) -> None:
    assert kernel.run("#define WIDTH 128\n" + BLEND.replace("128", "WIDTH")).status == "ok"
    assert kernel.run(ADD.replace("add", "add_again")).status == "ok"
    # WIDTH comes from the first cell; the summary shows the size it gave.
    run = kernel.run(BLEND.replace("blend", "blend_wide").replace("128", "WIDTH"))
    assert run.status == "ok", run.traceback
    assert "1.5 KiB shared" in run.displays()[0]["text/plain"]
    out = python(
        kernel,
        "print(sorted(n for n in ('add', 'blend', 'add_again', 'blend_wide') if callable(globals()[n])))",
    )
    assert out == "['add', 'add_again', 'blend', 'blend_wide']\n"
    assert python(kernel, "print(type(choreo).__name__, choreo.functions)") == "Module ['blend_wide']\n"


def test_a_macro_cell_is_quiet_and_its_function_like_macros_carry_over(kernel: KernelDriver) -> None:
    run = kernel.run("#define ROW(i) ((i) / 16)\n#define COL(i) ((i) % 16)\n")
    assert run.status == "ok", run.traceback
    assert run.stream() == "" and run.displays() == []  # no "no __co__ function" warning
    cell = ADD.replace("add", "add_flat").replace(".at(x, y)", ".at(ROW(x * 16 + y), COL(x * 16 + y))")
    run = kernel.run(cell)
    assert run.status == "ok", run.traceback
    checked = python(
        kernel,
        "import numpy as np\n"
        "a, b = np.ones((32, 32), np.float32), np.arange(1024, dtype=np.float32).reshape(32, 32)\n"
        "print(np.array_equal(add_flat(a, b), a + b))",
    )
    assert checked == "True\n"


def test_a_failing_cell_keeps_what_earlier_cells_defined(kernel: KernelDriver) -> None:
    assert kernel.run(ADD).status == "ok"
    before = python(kernel, "print(add.__doc__, choreo.functions)")
    assert kernel.run(UNDECLARED).status == "error"
    assert python(kernel, "print(add.__doc__, choreo.functions)") == before


def test_a_python_cell_runs_a_compiled_function_on_sim(kernel: KernelDriver) -> None:
    assert kernel.run("%%choreo --target sim\n" + ADD).status == "ok"
    python(
        kernel,
        "import numpy as np\n"
        "a = np.random.rand(32, 48).astype(np.float32)\n"
        "b = np.random.rand(32, 48).astype(np.float32)\n"
        "np.testing.assert_allclose(add(a, b), a + b, rtol=1e-6)",
    )


def test_an_error_is_one_reply_rendered_against_the_cells_lines(kernel: KernelDriver) -> None:
    run = kernel.run(UNDECLARED)
    assert run.status == "error"
    assert run.reply["ename"] == "ChoreoError"
    assert [m["msg_type"] for m in run.outputs] == ["error"]
    count = run.reply["execution_count"]
    assert f"cell[{count}]:3:5: error: 'c' is not declared" in run.traceback
    assert " 3 |     c.at(0, 0) = 1.0f;\n   |     ^" in run.traceback
    assert "Traceback" not in run.traceback  # diagnostics, not the compiler's Python frames


def test_line_numbers_count_the_options_line(kernel: KernelDriver) -> None:
    run = kernel.run("%%choreo --target sim\n" + UNDECLARED)
    assert f"cell[{run.reply['execution_count']}]:4:5: error: 'c' is not declared" in run.traceback


def test_a_bad_option_points_into_the_options_line(kernel: KernelDriver) -> None:
    run = kernel.run("%%choreo --target sim --grpah\n" + ADD)
    assert run.status == "error"
    assert ":1:23: error: unknown option '--grpah'" in run.traceback
    assert "%%choreo --target sim --grpah\n   |                       ^~~~~~~" in run.traceback


@pytest.mark.parametrize(("stop_on_error", "queued_status"), [(True, "aborted"), (False, "ok")])
def test_stop_on_error_decides_whether_queued_cells_run(
    kernel: KernelDriver, stop_on_error: bool, queued_status: str
) -> None:
    client = kernel.client
    failing = client.execute(UNDECLARED, stop_on_error=stop_on_error)
    queued = client.execute("%%python\nprint('ran')")
    replies = {}
    while len(replies) < 2:
        reply = client.get_shell_msg(timeout=60)
        replies[reply["parent_header"]["msg_id"]] = reply["content"]["status"]
    assert replies == {failing: "error", queued: queued_status}


def test_graph_bundle_has_svg_and_dot(kernel: KernelDriver) -> None:
    run = kernel.run("%%choreo --graph\n" + BLEND)
    assert run.status == "ok", run.traceback
    _summary, graph = run.displays()
    assert set(graph) == {"image/svg+xml", "text/html", "text/vnd.graphviz", "text/plain"}
    assert "<svg" in graph["image/svg+xml"]
    # The notebook form: the same SVG as an image no wider than the output area.
    source = re.search(r'<img src="data:image/svg\+xml;base64,([^"]+)"', graph["text/html"])
    assert source and base64.b64decode(source.group(1)).decode() == graph["image/svg+xml"]
    assert graph["text/vnd.graphviz"].lstrip().startswith(("digraph", "strict digraph"))
    assert graph["text/plain"] == graph["text/vnd.graphviz"]


def test_cuda_bundle_is_highlighted_cuda(kernel: KernelDriver) -> None:
    run = kernel.run("%%choreo --cuda\n" + BLEND)
    assert run.status == "ok", run.traceback
    _summary, code = run.displays()
    assert set(code) == {"text/html", "text/plain"}
    assert "__global__" in code["text/plain"]
    assert "<span" in code["text/html"] and "__global__" in code["text/html"]


def test_other_magics_stay_ipython(kernel: KernelDriver) -> None:
    run = kernel.run("%time 6 * 7")
    assert run.status == "ok", run.traceback
    assert run.results() == ["42"]


def test_python_tracebacks_keep_the_cells_line_numbers(kernel: KernelDriver) -> None:
    run = kernel.run("%%python\nx = 1\n1 / 0")
    assert run.reply["ename"] == "ZeroDivisionError"
    assert "line 3" in run.traceback


def test_docs_magic_shows_a_page_of_the_docs(kernel: KernelDriver) -> None:
    (page,) = ok(kernel.run("%docs futures")).displays()
    assert page["text/markdown"].startswith("# Futures\n") and page["text/markdown"] == page["text/plain"]
    (listing,) = ok(kernel.run("%docs")).displays()
    assert (
        "`%docs NAME` shows a page" in listing["text/markdown"]
        and "- `events`: Events" in listing["text/markdown"]
    )
    run = kernel.run("%docs nonsense")
    assert run.reply["ename"] == "UsageError" and "no docs page 'nonsense'" in run.reply["evalue"]


def test_python_in_a_choreo_cell_is_an_error_not_host_code(kernel: KernelDriver) -> None:
    """A .co file may hold C++ host code around its functions; a cell is Choreo only."""
    run = kernel.run("import numpy as np\n" + ADD)
    assert run.status == "error"
    count = run.reply["execution_count"]
    assert (
        f"cell[{count}]:1:1: error: expected a '__co__' function, a '__device__' function or a preprocessor line"
        in run.traceback
    )


def test_a_bad_call_is_one_choreo_error_with_the_users_line(kernel: KernelDriver) -> None:
    """A wrong element type is the user's mistake: its message and their line, no frames of this package."""
    ok(kernel.run("%%choreo --target sim\n" + ADD))
    run = kernel.run("%%python\nimport numpy as np\nwide = np.ones((16, 16))\nadd(wide, wide)")
    assert run.reply["ename"] == "ChoreoError"
    count = run.reply["execution_count"]
    assert run.traceback.splitlines() == [
        "ChoreoError: add(): parameter 'a' has element type f32, got float64",
        f"   = note: called from Cell In[{count}], line 4: add(wide, wide)",
    ]
    # Called from the user's own function: the innermost line of the user's code is named.
    run = kernel.run("%%python\ndef twice(x):\n    return add(x, x)\n\ntwice(np.ones((16, 16), np.int32))")
    assert run.traceback.splitlines()[1].endswith("line 3: return add(x, x)"), run.traceback


def test_completion_knows_functions_from_earlier_cells(kernel: KernelDriver) -> None:
    assert kernel.run(ADD).status == "ok"
    reply = kernel.request("complete", "x = ad", 6)
    assert "add" in reply["matches"] and reply["cursor_start"] == 4
    reply = kernel.request(
        "complete", "%%python\nimport numpy\nnumpy.arr", len("%%python\nimport numpy\nnumpy.arr")
    )
    assert "numpy.array" in reply["matches"] or "array" in reply["matches"]
    # On the `%%choreo` line the options complete, not Choreo's keywords.
    code = "%%choreo --graph --\n" + ADD
    reply = kernel.request("complete", code, len("%%choreo --graph --"))
    assert (
        reply["matches"] == ["--cuda", "--graph", "--ptx", "--sass", "--target"]
        and reply["cursor_start"] == 17
    )


def test_inspection_explains_operations_and_compiled_functions(kernel: KernelDriver) -> None:
    assert kernel.run(ADD).status == "ok"
    reply = kernel.request("inspect", "  f = dma.copy.async a => shared;", 10)
    assert reply["found"] and reply["data"]["text/plain"].startswith("dma.copy.async:")
    # Markdown for JupyterLab's tooltip, which renders the backticks as code.
    assert (
        reply["data"]["text/markdown"] == reply["data"]["text/plain"]
        and "`" in reply["data"]["text/markdown"]
    )
    reply = kernel.request("inspect", "add", 1)
    assert reply["found"] and "256 threads/block" in reply["data"]["text/plain"]
    reply = kernel.request("inspect", "%%python\nadd", len("%%python\nadd"))
    assert reply["found"] and "256 threads/block" in reply["data"]["text/plain"]


def test_the_sim_notice_comes_once(fresh_kernel: KernelDriver) -> None:
    first, second = fresh_kernel.run(ADD), fresh_kernel.run(BLEND)
    has_gpu = fresh_kernel.run("%%python\nprint(choreo.target)").stream() == "cuda\n"
    expected = 0 if has_gpu else 1
    assert (first.stream() + second.stream()).count("sim backend") == expected
    assert "sim backend" not in second.stream()


def test_interrupt_aborts_a_long_sim_run_and_the_kernel_survives(fresh_kernel: KernelDriver) -> None:
    assert fresh_kernel.run("%%choreo --target sim\n" + SPIN).status == "ok"
    client = fresh_kernel.client
    msg_id = client.execute("%%python\nimport numpy as np\nspin(np.ones(256, np.float32))")
    time.sleep(2)  # well inside the run: the call takes minutes
    fresh_kernel.manager.interrupt_kernel()
    reply = client.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    out = fresh_kernel.run("%%python\nprint(callable(spin), choreo.functions)").stream()
    assert out == "True ['spin']\n"


def test_load_ext_gives_a_python_kernel_the_cell_magic() -> None:
    with KernelDriver("python3") as driver:
        assert driver.run("%load_ext choreo_kernel").status == "ok"
        run = driver.run("%%choreo --target sim\n" + ADD)
        assert run.status == "ok", run.traceback
        assert "256 threads/block" in run.displays()[0]["text/plain"]
        run = driver.run(
            "import numpy as np\na = np.ones((16, 16), np.float32)\ncallable(add), choreo.functions"
        )
        assert run.status == "ok", run.traceback
        assert run.results() == ["(True, ['add'])"]
        run = driver.run("%%choreo\n" + UNDECLARED)
        assert run.reply["ename"] == "ChoreoError"
        assert f"cell[{run.reply['execution_count']}]:4:5: error: 'c' is not declared" in run.traceback


def test_a_notebook_runs_top_to_bottom_with_nbclient() -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "choreo", "display_name": "Choreo", "language": "choreo"}
    notebook.cells = [
        nbformat.v4.new_code_cell("%%choreo --target sim\n" + ADD),
        nbformat.v4.new_code_cell("%%python\nprint(add.__name__, choreo.functions)"),
    ]
    NotebookClient(notebook, timeout=60, kernel_name="choreo").execute()
    assert notebook.metadata["language_info"]["name"] == "choreo"
    compiled, printed = notebook.cells
    assert "256 threads/block" in compiled.outputs[-1]["data"]["text/plain"]
    assert printed.outputs[0]["text"] == "add ['add']\n"
