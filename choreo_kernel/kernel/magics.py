"""`%load_ext choreo_kernel`: the `%%choreo` cell magic and the tuning magics in any IPython, as in the kernel."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import cell_magic, magics_class

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


def register_magics(shell: InteractiveShell, session: ChoreoSession) -> None:
    """The `%%choreo` cell magic and the tuning line magics, on `session`."""
    shell.register_magics(ChoreoMagics(shell, session))
    shell.register_magics(TuningMagics(shell, session))


def load_ipython_extension(shell: InteractiveShell) -> None:
    """The magics in any IPython, on a session of their own."""
    register_magics(shell, ChoreoSession(shell))
