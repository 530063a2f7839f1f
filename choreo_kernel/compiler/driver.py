"""The front-end pipeline that every entry point (API, CLI, kernel) drives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from choreo_kernel.compiler.analysis.asyncflow import AsyncFlow
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.resolve import Resolver
from choreo_kernel.compiler.cuda.emit import lower_program
from choreo_kernel.compiler.devicecode import DevicePart, merged, source_parts
from choreo_kernel.compiler.diagnostics import Diagnostic, DiagnosticSink, Note, Span
from choreo_kernel.compiler.graph.build import build_function_graph
from choreo_kernel.compiler.graph.checks import check_graph
from choreo_kernel.compiler.graph.graph import Graph
from choreo_kernel.compiler.hostcode import function_regions
from choreo_kernel.compiler.parser import parse
from choreo_kernel.compiler.preprocess import preprocess
from choreo_kernel.compiler.program import Analysis

TARGETS = ("cuda", "sim")


def analyze(
    source: str,
    defines: Mapping[str, object] | None = None,
    target: str = "cuda",
    host_code: bool = True,
    filename: str = "<source>",
    device_code: Sequence[DevicePart] = (),
) -> Analysis:
    """Preprocess, parse and analyze `source` for `target`; for cuda, lower it too, so that what
    analysis accepts also emits and every limit of the lowering is a diagnostic. Never raises for
    bad input. `device_code` is C++ from outside the source (a notebook's `%%cuda` cells) that its
    `call`s may reach; the source's own device code (`__device__` functions, `__cok__` blocks) is
    added to it, replacing what it defines again."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)}")
    sink = DiagnosticSink()
    preprocessed = preprocess(source, sink, {target_macro(target): 1, **(defines or {})})
    program = parse(preprocessed.text, preprocessed.source_map, sink, host_code)
    functions: dict[str, FunctionInfo] = {}
    graphs: dict[str, Graph] = {}
    names = frozenset(function.name for function in program.functions)
    for function in program.functions:
        if function.name in functions:
            first = functions[function.name].function
            sink.error(
                f"function '{function.name}' is defined twice",
                function.name_span,
                Note("first defined here", first.name_span),
            )
            continue
        info = Resolver(sink, target, names).function(function)
        AsyncFlow(info, sink, target).run()
        graphs[function.name] = build_function_graph(info)
        check_graph(graphs[function.name], sink)
        functions[function.name] = info
    # Only directives and comments (a notebook's macro cell) leave nothing to look for a function in.
    if not program.functions and preprocessed.text.strip() and not sink.has_errors:
        sink.warning("no '__co__' function found", Span(1, 1, 1, 2))
    own = source_parts(preprocessed.text, function_regions(preprocessed.text), filename)
    analysis = Analysis(program, functions, graphs, [], target, filename, merged(device_code, own))
    if target == "cuda" and not sink.has_errors:
        analysis.lowered = lower_program(analysis)
        sink.extend(d for errors in analysis.lowered.errors.values() for d in errors)
    analysis.diagnostics = _ordered(sink.diagnostics)
    return analysis


def target_macro(target: str) -> str:
    """The macro defined while preprocessing for `target` (`__CHOREO_SIM__`, `__CHOREO_CUDA__`), so that
    a program can give the sim an equivalent of what only CUDA runs (inline assembly)."""
    return f"__CHOREO_{target.upper()}__"


def _ordered(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics in source order, each once (loops are analyzed twice)."""
    seen: set[tuple[str, str, Span]] = set()
    unique = []
    for diagnostic in diagnostics:
        key = (diagnostic.severity, diagnostic.message, diagnostic.span)
        if key not in seen:
            seen.add(key)
            unique.append(diagnostic)
    return sorted(unique, key=lambda d: (d.line, d.column))


def check(
    source: str,
    defines: Mapping[str, object] | None = None,
    target: str = "cuda",
    filename: str = "<source>",
) -> list[Diagnostic]:
    """All diagnostics (errors and warnings) of `source`, in source order; for cuda, the lowering's too."""
    return analyze(source, defines, target, filename=filename).diagnostics


def resolve_target(target: str) -> str:
    """`auto` is cuda when CuPy and a CUDA device are present, sim otherwise."""
    if target != "auto":
        if target not in TARGETS:
            raise ValueError(f"unknown target {target!r}; expected auto, cuda or sim")
        return target
    try:
        import cupy  # type: ignore[import-not-found]

        return "cuda" if cupy.cuda.runtime.getDeviceCount() > 0 else "sim"
    except Exception:
        return "sim"
