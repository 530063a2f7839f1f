"""choreo-kernel: compile Choreo tile programs, show what the compiler did, run them.

The public API (design/architecture.md 3.1)::

    import choreo_kernel as ck
    diagnostics = ck.check(source)            # analysis only
    mod = ck.compile(source, defines={"TILE_K": 64})
"""

from choreo_kernel.compiler.diagnostics import ChoreoError, Diagnostic, Span
from choreo_kernel.compiler.driver import check
from choreo_kernel.module import Module, compile

__all__ = ["ChoreoError", "Diagnostic", "Module", "Span", "check", "compile"]
__version__ = "0.1.0"
