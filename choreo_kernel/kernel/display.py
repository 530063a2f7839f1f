"""Mime bundles for what a Choreo cell shows, and the traceback of a `ChoreoError`.

Each bundle carries a `text/plain` form, so a console or a text-only notebook viewer
shows something useful, next to the rich form a notebook renders.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable

from choreo_kernel.compiler.diagnostics import ChoreoError
from choreo_kernel.module import Module

Bundle = dict[str, str]


def summary_bundle(summaries: Iterable[str]) -> Bundle:
    """One line per function (kernel/summary.py's `describe`): signature, kernels, threads, shared memory."""
    return {"text/plain": "\n".join(summaries)}


def graph_bundle(module: Module, name: str) -> Bundle:
    """The dependency graph as SVG with its DOT source; without graphviz, the reason and the DOT.

    Notebooks get the SVG fitted to the output width (`fitted_graph_html`): a pipeline's graph is
    often wider than the page.
    """
    bundle = module.graph(name)._repr_mimebundle_()
    if "image/svg+xml" in bundle:
        bundle["text/html"] = fitted_graph_html(bundle["image/svg+xml"], name)
    return bundle


# A click on the picture toggles a hidden checkbox, which switches it between fitted and full
# size: no script, so it works in any front end that shows trusted HTML.
_GRAPH_STYLE = """\
.choreo-graph { overflow-x: auto; }
.choreo-graph > label > input { display: none; }
.choreo-graph > label > img { display: block; max-width: 100%; height: auto; cursor: zoom-in; }
.choreo-graph > label > input:checked + img { max-width: none; cursor: zoom-out; }
.choreo-graph > p { margin: 0.2em 0 0; font-size: 85%; color: #6b7280; }"""
_POINT_IN_PIXELS = 4 / 3  # graphviz sizes an SVG in points; a CSS pixel is 3/4 of a point
_WIDE_PIXELS = 900  # wider than this is likely wider than a notebook's output area


def fitted_graph_html(svg: str, name: str) -> str:
    """The SVG as an image as wide as the output area at most; a click shows it at full size."""
    width, height = (_svg_pixels(svg, attribute) for attribute in ("width", "height"))
    source = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
    size = f' width="{width}" height="{height}"' if width and height else ""
    caption = (
        f"<p>{width} × {height} px: click the graph to see it at full size, and again to fit it to the width.</p>"
        if width > _WIDE_PIXELS
        else ""
    )
    return (
        f'<div class="choreo-graph"><style>{_GRAPH_STYLE}</style>'
        f'<label title="click: full size / fit to the width"><input type="checkbox">'
        f'<img src="{source}"{size} alt="future/event graph of {html.escape(name)}"></label>{caption}</div>'
    )


def _svg_pixels(svg: str, attribute: str) -> int:
    """The root element's `width` or `height` in CSS pixels (0 when it has none in points)."""
    match = re.search(rf'<svg\b[^>]*\b{attribute}="([\d.]+)pt"', svg)
    return round(float(match.group(1)) * _POINT_IN_PIXELS) if match else 0


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


SHOWN_DIAGNOSTICS = 50  # a cell's first diagnostics, then a count of the others


def error_traceback(error: ChoreoError) -> list[str]:
    """The first diagnostics, rendered against the cell's own lines and columns, one line per entry,
    and how many more there are."""
    return error.render(SHOWN_DIAGNOSTICS).splitlines()
