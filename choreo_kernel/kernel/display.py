"""Mime bundles for what a Choreo cell shows, and the traceback of a `ChoreoError`.

Each bundle carries a `text/plain` form, so a console or a text-only notebook viewer
shows something useful, next to the rich form a notebook renders.
"""

from __future__ import annotations

from collections.abc import Iterable

from choreo_kernel.compiler.diagnostics import ChoreoError
from choreo_kernel.module import Module

Bundle = dict[str, str]


def summary_bundle(summaries: Iterable[str]) -> Bundle:
    """One line per function (kernel/summary.py's `describe`): signature, kernels, threads, shared memory."""
    return {"text/plain": "\n".join(summaries)}


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
