"""The Jupyter messaging protocol, checked by jupyter_kernel_test against the installed `choreo` kernel.

Every test of `KernelTests` that applies to this kernel is enabled; the Python samples run
in `%%python` cells, the shared namespace of a Choreo notebook.
"""

from __future__ import annotations

import jupyter_kernel_test
from jupyter_client.kernelspec import find_kernel_specs
from programs import ADD

assert "choreo" in find_kernel_specs(), "the 'choreo' kernelspec is not installed: run `pip install -e .`"


class ChoreoKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "choreo"
    language_name = "choreo"
    file_extension = ".co"

    code_hello_world = "%%python\nprint('hello, world')"
    code_stderr = "%%python\nimport sys\nprint('to stderr', file=sys.stderr)"

    completion_samples = [
        {"text": "dma.", "matches": {"dma.copy", "dma.copy.async", "dma.any", "dma.pad", "dma.transp"}},
        {"text": "tma.lo", "matches": {"tma.load", "tma.load.async", "tma.load.async.evict_first"}},
        {"text": "mma.row.r", "matches": {"mma.row.row", "mma.row.row.async"}},
        {"text": "parallel p by 4 { f1", "matches": {"f16"}},
        {"text": "%%python\nimport o"},
    ]

    complete_code_samples = [ADD, "#define TILE 64", "%%python\nx = 1", "%%choreo --target sim\n" + ADD]
    incomplete_code_samples = [
        "__co__ void f() {",
        "__co__ f32 [M] g(f32 [M] a) {\n  parallel p by 4 {",
        "%%python\nfor i in range(3):",
    ]
    invalid_code_samples = ["}", "__co__ void f() { ) }"]

    code_page_something = "%%python\nprint?"

    code_generate_error = "__co__ void f() {\n  wait nothing;\n}"

    code_execute_result = [
        {"code": "%%python\n6 * 7", "result": "42"},
        {"code": "%%python\n'choreo'.upper()", "result": "'CHOREO'"},
    ]

    code_display_data = [
        {"code": ADD, "mime": "text/plain"},
        {
            "code": "%%python\nfrom IPython.display import HTML, display\ndisplay(HTML('<b>tile</b>'))",
            "mime": "text/html",
        },
    ]

    code_history_pattern = "%%python*6 * 7"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "tma.load"

    code_clear_output = "%%python\nfrom IPython.display import clear_output\nclear_output()"

    def test_choreo_kernel_info(self) -> None:
        """language_info names the Choreo lexer and editor mode, and the reply links to help."""
        self.flush_channels()
        self.kc.kernel_info()
        reply = self.kc.get_shell_msg(timeout=jupyter_kernel_test.TIMEOUT)
        content = reply["content"]
        info = content["language_info"]
        assert info["codemirror_mode"] == "choreo" and info["pygments_lexer"] == "choreo"
        assert info["mimetype"] == "text/x-choreo"
        assert content["help_links"] and content["implementation"] == "choreo-kernel"
