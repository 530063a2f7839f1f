"""The `choreo` command line (architecture.md 3.2): the same compiler core as the API.

Exit codes: 0 clean or only warnings, 1 any error in a source, 2 usage or I/O
problems (a file that is missing, empty, binary or not UTF-8), 3 an internal
compiler error. A file problem is one `choreo: error: FILE: reason` line on
stderr, never a traceback, and the other files are still checked.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeAlias
from xml.etree import ElementTree

import choreo_kernel as ck
from choreo_kernel.compiler.diagnostics import ERROR, Diagnostic
from choreo_kernel.compiler.driver import TARGETS, analyze
from choreo_kernel.compiler.preprocess import parse_define
from choreo_kernel.compiler.program import Analysis
from choreo_kernel.compiler.version import __version__

EXIT_OK = 0
EXIT_ERRORS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3

Runner: TypeAlias = "Callable[[argparse.Namespace], int]"  # a `run_NAME` function: the exit status
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class SourceFileError(Exception):
    """A file that cannot be read as Choreo source; the message is the reason, for one line."""


def read_source(path: str) -> str:
    """The text of `path`, or `SourceFileError` saying in plain words why it is not usable."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise SourceFileError("no such file") from None
    except IsADirectoryError:
        raise SourceFileError("is a directory, not a file") from None
    except PermissionError:
        raise SourceFileError("permission denied") from None
    except OSError as err:
        raise SourceFileError(err.strerror or str(err)) from None
    if b"\0" in data:
        raise SourceFileError("binary file (contains NUL bytes), not Choreo source")
    try:
        text = data.decode("utf-8-sig")  # tolerate a BOM, which some editors write
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise SourceFileError(
            f"not valid UTF-8 (byte 0x{data[err.start]:02x} on line {line}); save the file as UTF-8"
        ) from None
    if not text.strip():
        raise SourceFileError("file is empty")
    return text


def _define(text: str) -> tuple[str, object]:
    """A `-D` argument, as the preprocessor reads one (argparse shows the problem)."""
    try:
        return parse_define(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _add_target(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--target",
        choices=TARGETS,
        default="cuda",
        help="analyze for this backend; CUDA-only rules are warnings on sim (default: cuda)",
    )


def _add_defines(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "-D",
        dest="defines",
        action="append",
        type=_define,
        default=[],
        metavar="NAME[=VALUE]",
        help="define a preprocessor macro, as with a C compiler (repeatable)",
    )


def _command(commands: Subcommands, run: Runner, summary: str, description: str) -> argparse.ArgumentParser:
    """The subcommand that `run_NAME` runs: NAME, a line for `choreo --help`, its own --help text."""
    command = commands.add_parser(run.__name__.removeprefix("run_"), help=summary, description=description)
    command.set_defaults(run=run)
    return command


def _writing_command(
    commands: Subcommands, run: Runner, summary: str, writes: str
) -> argparse.ArgumentParser:
    """A command that compiles FILE and writes one artifact (`writes`) to standard output or `-o OUT`."""
    command = _command(
        commands,
        run,
        summary,
        f"Write {writes}. Exit 0 when written, 1 on errors in the source, 2 on a usage or I/O problem.",
    )
    command.add_argument("file", metavar="FILE", help="a Choreo source file (.co)")
    command.add_argument("-o", "--output", metavar="OUT", help="write here instead of standard output")
    _add_defines(command)
    return command


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="choreo",
        description="Compile Choreo tile programs (a tile-level GPU DSL).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    check = _command(
        commands,
        run_check,
        "report diagnostics (errors and warnings) for Choreo source files",
        "Report diagnostics for each FILE. Exit 0 when no file has an error, "
        "1 when any has, 2 on a usage or I/O problem.",
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="a Choreo source file (.co)")
    _add_target(check)
    _add_defines(check)
    check.add_argument("-q", "--quiet", action="store_true", help="print no summary line")

    _writing_command(
        commands,
        run_emit,
        "write the CUDA C++ that a Choreo source compiles to",
        "one self-contained CUDA C++ translation unit for FILE (the device header inlined): "
        "it builds with nvcc -gencode=arch=compute_90a,code=sm_90a -cubin",
    )
    graph = _writing_command(
        commands,
        run_graph,
        "draw the future/event dependency graphs of the __co__ functions",
        "the dependency graph of every __co__ function of FILE, or of --function F (futures, events, "
        "waits, triggers, async paths), as Graphviz DOT (one graph per function), SVG (one picture, "
        "the functions one below the other) or JSON (a list of graphs; one graph with --function)",
    )
    graph.add_argument("--function", metavar="F", help="only this __co__ function")
    graph.add_argument(
        "--format", choices=("dot", "svg", "json"), default="dot", help="what to write (default: dot)"
    )
    _add_target(graph)

    docs_command = _command(
        commands,
        run_docs,
        "print a page of the docs (the language reference and the user guide)",
        "Print the docs page PAGE as Markdown, or the list of pages without PAGE. "
        "In a notebook, %docs PAGE shows the same page.",
    )
    docs_command.add_argument("page", metavar="PAGE", nargs="?", help="a page name, from `choreo docs`")

    install = _command(
        commands,
        run_install,
        "install the Choreo Jupyter kernelspec for this Python",
        "Install the 'choreo' kernelspec, running this Python, for a Jupyter outside "
        "this environment (pip install already adds one to this environment).",
    )
    where = install.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for the current user only")
    where.add_argument("--sys-prefix", action="store_true", help=f"in this environment ({sys.prefix})")
    where.add_argument("--prefix", metavar="P", help="under P/share/jupyter/kernels")
    return parser


def _check_one(path: str, target: str, defines: dict[str, object]) -> tuple[int, int] | None:
    """Print the diagnostics of one file; its (errors, warnings), or None if it could not be read."""
    try:
        source = _source(path)
    except CommandStopped:
        return None
    analysis = analyze(source, defines or None, target=target, filename=path)
    sys.stdout.write(analysis.printed)  # what print! shows as the source compiles
    diagnostics = analysis.diagnostics
    for diagnostic in diagnostics:
        print(diagnostic.render(source, path))
    errors = sum(d.severity == ERROR for d in diagnostics)
    return errors, len(diagnostics) - errors


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def run_check(args: argparse.Namespace) -> int:
    """`choreo check`: every file is checked even after a bad one (or a compiler bug on one), so one run
    reports everything; the exit status is the worst: internal error, then unreadable file, then errors."""
    defines = dict(args.defines)
    errors = warnings = unreadable = internal = 0
    for path in args.files:
        try:
            counts = _check_one(path, args.target, defines)
        except Exception as err:  # a compiler bug: one line naming the file, then the next file
            _internal_error(err, path)
            internal += 1
            continue
        if counts is None:
            unreadable += 1
        else:
            errors += counts[0]
            warnings += counts[1]
    checked = len(args.files) - unreadable - internal
    if checked and not args.quiet:  # an unreadable file has said so on its own line already
        print(
            f"checked {_plural(checked, 'file')}: {_plural(errors, 'error')}, {_plural(warnings, 'warning')}"
        )
    if internal:
        return EXIT_INTERNAL
    if unreadable:
        return EXIT_USAGE
    return EXIT_ERRORS if errors else EXIT_OK


def _internal_error(err: Exception, path: str | None) -> None:
    """A compiler bug as one line on stderr, naming the file (the traceback with CHOREO_TRACEBACK=1)."""
    if os.environ.get("CHOREO_TRACEBACK"):
        raise err
    first = next(iter(str(err).strip().splitlines()), "")  # a lark VisitError's message runs over lines
    reason = ": ".join(filter(None, (type(err).__name__, first)))
    where = f"{path}: " if path else ""
    print(
        f"choreo: internal error: {where}{reason} (set CHOREO_TRACEBACK=1 for the traceback)", file=sys.stderr
    )


def run_docs(args: argparse.Namespace) -> int:
    """`choreo docs`: the pages ship with the package (choreo_kernel/docs.py)."""
    from choreo_kernel import docs

    try:
        text = docs.markdown(args.page) if args.page else docs.contents()
    except (docs.UnknownPage, FileNotFoundError) as error:
        raise _usage_error(str(error)) from None
    return _write_output(text, None)


def run_install(args: argparse.Namespace) -> int:
    """`choreo install`: Jupyter is imported only here, so the other commands work without it."""
    from choreo_kernel.kernel.install import install

    prefix = sys.prefix if args.sys_prefix else args.prefix
    try:
        path = install(user=args.user, prefix=prefix)
    except OSError as err:
        print(f"choreo: error: cannot install the kernelspec: {err}", file=sys.stderr)
        return EXIT_USAGE
    print(f"Installed the Choreo kernelspec in {path}")
    return EXIT_OK


def run_emit(args: argparse.Namespace) -> int:
    """`choreo emit`: diagnostics as `check` prints them, else the CUDA translation unit."""
    from choreo_kernel.compiler.cuda import emit_program

    source, analysis = _analyzed(args.file, args.defines, "cuda")
    try:
        cuda = emit_program(analysis, self_contained=True)
    except ck.ChoreoError as err:
        raise _errors_in_source(err.diagnostics, source, args.file) from None
    return _write_output(cuda, args.output)


def run_graph(args: argparse.Namespace) -> int:
    """`choreo graph`: diagnostics as `check` prints them when the source has errors, else the graphs."""
    from choreo_kernel.compiler.graph import GraphvizMissing, build_graph

    path = args.file
    source, analysis = _analyzed(path, args.defines, args.target)
    for warning in analysis.diagnostics:  # on stderr: standard output is the graph
        print(warning.render(source, path), file=sys.stderr)
    functions = list(analysis.functions)
    if not functions:
        raise _usage_error(f"{path}: has no __co__ function")
    if args.function is not None and args.function not in analysis.functions:
        raise _usage_error(
            f"{path}: has no __co__ function '{args.function}'; it has: {', '.join(functions)}"
        )
    graphs = [build_graph(analysis, name) for name in ([args.function] if args.function else functions)]
    if args.format == "json":
        listed = json.dumps([graph.to_dict() for graph in graphs], indent=2)
        text = (graphs[0].to_json() if args.function else listed) + "\n"
    elif args.format == "svg":
        try:
            text = stacked_svg([graph.to_svg() for graph in graphs])
        except GraphvizMissing as missing:
            print(f"choreo: warning: {missing}; writing the DOT text instead", file=sys.stderr)
            text = "".join(graph.to_dot() for graph in graphs)
    else:
        text = "".join(graph.to_dot() for graph in graphs)  # several graphs: one page each for `dot`
    return _write_output(text, args.output)


def stacked_svg(pictures: Sequence[str]) -> str:
    """One SVG document holding `pictures` one below the other, each at its own size.

    Graphviz draws each function separately (so each looks as it does alone); the pictures are
    nested `<svg>` elements of an outer one whose user unit is graphviz's point.
    """
    if len(pictures) == 1:
        return pictures[0]
    namespace = "http://www.w3.org/2000/svg"
    ElementTree.register_namespace("", namespace)
    ElementTree.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    parsed = [ElementTree.fromstring(picture) for picture in pictures]
    sizes = [(_points(svg.get("width")), _points(svg.get("height"))) for svg in parsed]
    width, height = max(w for w, _ in sizes), sum(h for _, h in sizes)
    outer = ElementTree.Element(
        f"{{{namespace}}}svg",
        {"width": f"{width:g}pt", "height": f"{height:g}pt", "viewBox": f"0 0 {width:g} {height:g}"},
    )
    top = 0.0
    for svg, (w, h) in zip(parsed, sizes):
        svg.set("y", f"{top:g}")
        svg.set("width", f"{w:g}")
        svg.set("height", f"{h:g}")
        outer.append(svg)
        top += h
    return ElementTree.tostring(outer, encoding="unicode", xml_declaration=True) + "\n"


def _points(length: str | None) -> float:
    """Graphviz writes sizes as `123pt`."""
    return float((length or "0").removesuffix("pt"))


class CommandStopped(Exception):
    """A command cannot go on; what went wrong is printed already, `status` is the exit code."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _usage_error(message: str) -> CommandStopped:
    """Print the one `choreo: error: ...` line on stderr; raise the result to exit 2."""
    print(f"choreo: error: {message}", file=sys.stderr)
    return CommandStopped(EXIT_USAGE)


def _errors_in_source(diagnostics: Sequence[Diagnostic], source: str, path: str) -> CommandStopped:
    """Print the diagnostics as `check` does; raise the result to exit 1."""
    for diagnostic in diagnostics:
        print(diagnostic.render(source, path))
    return CommandStopped(EXIT_ERRORS)


def _source(path: str) -> str:
    try:
        return read_source(path)
    except SourceFileError as err:
        raise _usage_error(f"{path}: {err}") from None


def _analyzed(path: str, defines: list[tuple[str, object]], target: str) -> tuple[str, Analysis]:
    """The source of `path` and its analysis, for the commands that go on to write something from it."""
    source = _source(path)
    analysis = analyze(source, dict(defines) or None, target=target, filename=Path(path).name)
    sys.stderr.write(analysis.printed)  # print! output, kept off standard output (the code or the graph)
    if analysis.has_errors:
        raise _errors_in_source(analysis.diagnostics, source, path)
    return source, analysis


def _write_output(text: str, output: str | None) -> int:
    """Write to standard output, or to the file `output` (a problem with it is one line, exit 2)."""
    if output is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as err:
        raise _usage_error(f"{output}: {err.strerror or err}") from None
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `choreo` console script and of `python -m choreo_kernel`."""
    args = _build_parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except CommandStopped as stopped:
        return stopped.status
    except Exception as err:  # a compiler bug in emit, graph, docs...: one line and exit 3, as check does
        _internal_error(err, getattr(args, "file", None))
        return EXIT_INTERNAL
    return status
