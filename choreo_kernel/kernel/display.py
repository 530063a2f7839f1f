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


def assembly_bundle(module: Module, kind: str) -> Bundle:
    """The PTX or SASS of the module's kernels, marked with Choreo lines and highlighted; where a tool
    this needs is missing (nvdisasm, nvcc without a GPU), the one line that says so."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    from choreo_kernel.kernel.assembly_lexer import PtxLexer, SassLexer
    from choreo_kernel.profiling.assembly import annotated_listing
    from choreo_kernel.profiling.tools import ToolFailed, ToolMissing

    try:
        code = annotated_listing(kind, module.cuda_source, module.source, module.target == "cuda")
    except (ToolMissing, ToolFailed) as problem:
        return {"text/plain": str(problem)}
    lexer = PtxLexer() if kind == "ptx" else SassLexer()
    return {"text/html": highlight(code, lexer, HtmlFormatter(noclasses=True)), "text/plain": code}


def error_traceback(error: ChoreoError) -> list[str]:
    """The diagnostics, rendered against the cell's own lines and columns, one line per entry."""
    return error.render().splitlines()
