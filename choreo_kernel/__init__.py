"""choreo-kernel: compile Choreo tile programs, show what the compiler did, run them.

The public API (design/architecture.md 3.1)::

    import choreo_kernel as ck
    diagnostics = ck.check(source)            # analysis only
    mod = ck.compile(source, defines={"TILE_K": 64})
    gemm = ck.autotune(source, "gemm", {"BN": [128, 256]})  # the best build per shape, remembered
"""

from typing import Any

from choreo_kernel.compiler.diagnostics import ChoreoError, Diagnostic, Span
from choreo_kernel.compiler.driver import check
from choreo_kernel.compiler.version import __version__
from choreo_kernel.module import Module, compile
from choreo_kernel.tuning.autotune import Autotuned, autotune

__all__ = [
    "Autotuned",
    "ChoreoError",
    "Diagnostic",
    "Module",
    "Span",
    "__version__",
    "autotune",
    "check",
    "compile",
]


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext choreo_kernel`: the `%%choreo` cell magic; IPython is imported only now."""
    from choreo_kernel.kernel.magics import load_ipython_extension as load

    load(ipython)
