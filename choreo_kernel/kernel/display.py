"""Mime bundles for what a Choreo cell shows, and the traceback of a `ChoreoError`.

Each bundle carries a `text/plain` form, so a console or a text-only notebook viewer
shows something useful, next to the rich form a notebook renders.
"""

from __future__ import annotations

from choreo_kernel.compiler.diagnostics import ChoreoError
from choreo_kernel.kernel.summary import describe
from choreo_kernel.module import Module

Bundle = dict[str, str]


def summary_bundle(module: Module) -> Bundle:
    """One line per function: signature, kernels, threads per block, shared memory."""
    lines = [describe(module.analysis.functions[name], module.source) for name in module.functions]
    return {"text/plain": "\n".join(lines)}


def graph_bundle(module: Module, name: str) -> Bundle:
    """The dependency graph as SVG with its DOT source; without graphviz, the reason and the DOT."""
    return module.graph(name)._repr_mimebundle_()


def cuda_bundle(module: Module) -> Bundle:
    """The emitted CUDA C++, highlighted for notebooks (inline styles: no stylesheet needed)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import CudaLexer

    code = module.cuda_source
    return {"text/html": highlight(code, CudaLexer(), HtmlFormatter(noclasses=True)), "text/plain": code}


def error_traceback(error: ChoreoError) -> list[str]:
    """The diagnostics, rendered against the cell's own lines and columns, one line per entry."""
    return error.render().splitlines()
