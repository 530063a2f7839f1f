"""`%load_ext choreo_kernel`: the `%%choreo` and `%%cuda` cell magics, `%docs` and the tuning magics in any
IPython, as in the kernel."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import cell_magic, line_magic, magics_class
from IPython.display import display

from choreo_kernel import docs
from choreo_kernel.kernel.session import ChoreoSession, SessionMagics
from choreo_kernel.kernel.tuning import TuningMagics


@magics_class
class ChoreoMagics(SessionMagics):
    @cell_magic
    def choreo(self, line: str, cell: str) -> None:
        """Compile the cell as Choreo; its functions become Python callables, `choreo` the module.

        Options: --graph (dependency graphs), --cuda (emitted CUDA C++), --ptx and --sass (the
        kernels' PTX and SASS, marked with Choreo lines), --target auto|sim|cuda, -D NAME[=VALUE]
        (a macro, repeatable).
        """
        # The header is put back so that diagnostics count lines and columns as the user sees them.
        self.session.run_cell(f"%%choreo {line}".rstrip() + "\n" + cell)

    @line_magic("docs")
    def show_docs(self, line: str) -> None:
        """%docs [PAGE]: a page of the Choreo docs, shown here; without PAGE, the list of pages."""
        name = line.strip()
        try:
            text = (
                docs.markdown(name)
                if name
                else "The Choreo docs; `%docs NAME` shows a page:\n\n" + docs.contents()
            )
        except (docs.UnknownPage, FileNotFoundError) as error:
            raise UsageError(str(error)) from None
        display({"text/markdown": text, "text/plain": text}, raw=True)

    @cell_magic
    def cuda(self, line: str, cell: str) -> None:
        """Define C++ device functions (`__device__ float f(float x) {...}`) that later Choreo cells
        `call`; they are checked now, on the session's target."""
        self.session.run_cuda_cell(f"%%cuda {line}".rstrip() + "\n" + cell)


def register_magics(shell: InteractiveShell, session: ChoreoSession) -> None:
    """The `%%choreo` cell magic and the tuning line magics, on `session`."""
    shell.register_magics(ChoreoMagics(shell, session))
    shell.register_magics(TuningMagics(shell, session))


def load_ipython_extension(shell: InteractiveShell) -> None:
    """The magics in any IPython, on a session of their own."""
    register_magics(shell, ChoreoSession(shell))
