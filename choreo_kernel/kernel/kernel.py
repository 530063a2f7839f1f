"""The `choreo` Jupyter kernel: IPython's kernel with Choreo as the default cell language.

Every cell still runs through IPython's `run_cell`, so execution counts, history, errors,
`stop_on_error`, interrupts and display work exactly as in IPython. The only change is how a
cell becomes Python: a Choreo cell becomes one call that compiles it, a `%%python` cell runs
its body in the shared namespace, and any other `%` magic is IPython's own.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from ipykernel.ipkernel import IPythonKernel
from ipykernel.zmqshell import ZMQInteractiveShell
from IPython.core.interactiveshell import ExecutionResult
from traitlets import List, Type

from choreo_kernel.compiler.version import __version__
from choreo_kernel.kernel.cells import CHOREO, CUDA, PYTHON, choreo_is_complete, split_cell
from choreo_kernel.kernel.completion import complete, complete_options
from choreo_kernel.kernel.inspection import help_at
from choreo_kernel.kernel.magics import register_magics
from choreo_kernel.kernel.session import ChoreoSession


class ChoreoShell(ZMQInteractiveShell):
    """IPython's kernel shell, reading cells as Choreo unless they say otherwise.

    `transform_cell` keeps IPython's meaning (Python in, Python out) because magics such as
    `%time EXPR` call it on Python snippets; the cell language is decided where whole cells
    arrive, in `run_cell_async` and `should_run_async`.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.choreo_session = ChoreoSession(self)
        # `%%choreo` as a magic too, on the same session: `run_cell_magic` from Python works alike.
        register_magics(self, self.choreo_session)

    def python_of(self, raw_cell: str) -> str:
        """The Python that runs a whole cell, with the cell's own line numbers."""
        cell = split_cell(raw_cell)
        if cell.language == CHOREO:
            return f"get_ipython().choreo_session.run_cell({raw_cell!r})\n"
        if cell.language == PYTHON:
            return "\n" * cell.header_line + self.transform_cell(cell.body)
        if cell.language == CUDA:
            return f"get_ipython().choreo_session.run_cuda_cell({raw_cell!r})\n"
        return self.transform_cell(raw_cell)

    def _python_or_error(self, raw_cell: str) -> tuple[str, Any]:
        """`python_of`, or the exception to report before running, as IPython's own `_run_cell` does."""
        try:
            return self.python_of(raw_cell), None
        except Exception:
            return raw_cell, sys.exc_info()

    def should_run_async(
        self, raw_cell: str, *, transformed_cell: Any = None, preprocessing_exc_tuple: Any = None
    ) -> bool:
        python, error = self._python_or_error(raw_cell)
        return bool(
            super().should_run_async(raw_cell, transformed_cell=python, preprocessing_exc_tuple=error)
        )

    async def run_cell_async(
        self,
        raw_cell: str,
        store_history: bool = False,
        silent: bool = False,
        shell_futures: bool = True,
        *,
        transformed_cell: str | None = None,
        preprocessing_exc_tuple: Any = None,
        **kwargs: Any,
    ) -> ExecutionResult:
        """Keyword arguments beyond ours (`cell_id`, IPython 9's `cell_meta`) pass through unchanged.

        ipykernel decides which of them to send from this method's signature, so the signature
        advertised below is the installed IPython's own.
        """
        python, error = self._python_or_error(raw_cell)
        return await super().run_cell_async(
            raw_cell,
            store_history,
            silent,
            shell_futures,
            transformed_cell=python,
            preprocessing_exc_tuple=error,
            **kwargs,
        )

    run_cell_async.__signature__ = inspect.signature(ZMQInteractiveShell.run_cell_async)  # type: ignore[attr-defined]


class ChoreoKernel(IPythonKernel):
    implementation = "choreo-kernel"
    implementation_version = __version__
    language_info = {
        "name": "choreo",
        "version": __version__,
        "mimetype": "text/x-choreo",
        "file_extension": ".co",
        "codemirror_mode": "choreo",
        "pygments_lexer": "choreo",
    }
    banner = (
        f"Choreo kernel {__version__}: cells are Choreo; start a cell with %%python "
        "for Python, where compiled functions are callables and `choreo` is the last module, "
        "or with %%cuda for C++ device functions that later cells `call`."
    )
    shell_class = Type(ChoreoShell)
    help_links = List(
        [
            {
                "text": "CUDA C++ Programming Guide",
                "url": "https://docs.nvidia.com/cuda/cuda-c-programming-guide/",
            },
            {"text": "PTX ISA", "url": "https://docs.nvidia.com/cuda/parallel-thread-execution/"},
            {"text": "CuPy Reference", "url": "https://docs.cupy.dev/en/stable/reference/"},
            {"text": "NumPy Reference", "url": "https://numpy.org/doc/stable/reference/"},
            {
                "text": "Python Reference",
                "url": f"https://docs.python.org/{sys.version_info[0]}.{sys.version_info[1]}",
            },
            {"text": "IPython Reference", "url": "https://ipython.readthedocs.io/en/stable/"},
        ]
    ).tag(config=True)

    @property
    def choreo(self) -> ChoreoSession:
        assert isinstance(self.shell, ChoreoShell)
        return self.shell.choreo_session

    def do_complete(self, code: str, cursor_pos: int | None) -> dict[str, Any]:
        cursor_pos = len(code) if cursor_pos is None else cursor_pos
        cell = split_cell(code)
        if cell.language == CHOREO:
            state = self.choreo
            on_header = complete_options(cell, cursor_pos)
            if on_header is not None:
                return on_header
            return complete(cell.masked, cursor_pos, [*state.functions, *state.macros])
        return super().do_complete(cell.masked, cursor_pos)

    def do_inspect(
        self, code: str, cursor_pos: int | None, detail_level: int = 0, omit_sections: Any = ()
    ) -> dict[str, Any]:
        cursor_pos = len(code) if cursor_pos is None else cursor_pos
        cell = split_cell(code)
        if cell.language != CHOREO:
            return super().do_inspect(cell.masked, cursor_pos, detail_level, omit_sections)
        state = self.choreo
        text = help_at(cell.masked, cursor_pos, state.functions, state.macros)
        return {
            "status": "ok",
            "found": text is not None,
            "data": {} if text is None else {"text/markdown": text, "text/plain": text},
            "metadata": {},
        }

    def do_history(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """IPython's history, with the current session's real number where IPython answers 0.

        A `range` request for the current session is served from memory and numbered 0,
        while `tail` names the same entries by their session number; clients get one name.
        """
        reply: dict[str, Any] = super().do_history(*args, **kwargs)
        current = self.choreo.shell.history_manager.session_number
        reply["history"] = [(session or current, *entry) for session, *entry in reply["history"]]
        return reply

    def do_is_complete(self, code: str) -> dict[str, Any]:
        cell = split_cell(code)
        if cell.language not in (CHOREO, CUDA):  # C++ too is complete once its braces close
            return super().do_is_complete(cell.masked)
        status, indent = choreo_is_complete(cell.masked)
        return {"status": status, "indent": indent} if status == "incomplete" else {"status": status}
