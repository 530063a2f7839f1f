"""The `choreo` command line (architecture.md 3.2): the same compiler core as the API.

Exit codes: 0 clean or only warnings, 1 any error in a source, 2 usage or I/O
problems (a file that is missing, empty, binary or not UTF-8), 3 an internal
compiler error. A file problem is one `choreo: error: FILE: reason` line on
stderr, never a traceback, and the other files are still checked.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import choreo_kernel as ck
from choreo_kernel.compiler.diagnostics import ERROR, Diagnostic

EXIT_OK = 0
EXIT_ERRORS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3

TARGETS = ("cuda", "sim")


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


def parse_define(text: str) -> tuple[str, object]:
    """`NAME=VALUE` or `NAME` (as for a C compiler: value 1); integer values become ints."""
    name, sep, value = text.partition("=")
    if not name.isidentifier():
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME or NAME=VALUE")
    if not sep:
        return name, 1
    try:
        return name, int(value, 0)
    except ValueError:
        return name, value


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="choreo",
        description="Compile Choreo tile programs (a tile-level GPU DSL).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {ck.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    check = commands.add_parser(
        "check",
        help="report diagnostics (errors and warnings) for Choreo source files",
        description="Report diagnostics for each FILE. Exit 0 when no file has an error, "
        "1 when any has, 2 on a usage or I/O problem.",
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="a Choreo source file (.co)")
    check.add_argument(
        "--target",
        choices=TARGETS,
        default="cuda",
        help="analyze for this backend; CUDA-only rules are warnings on sim (default: cuda)",
    )
    check.add_argument(
        "-D",
        dest="defines",
        action="append",
        type=parse_define,
        default=[],
        metavar="NAME[=VALUE]",
        help="define a preprocessor macro, as with a C compiler (repeatable)",
    )
    check.add_argument("-q", "--quiet", action="store_true", help="print no summary line")
    check.set_defaults(run=run_check)
    return parser


def _check_one(path: str, target: str, defines: dict[str, object]) -> tuple[int, int] | None:
    """Print the diagnostics of one file; its (errors, warnings), or None if it could not be read."""
    try:
        source = read_source(path)
    except SourceFileError as err:
        print(f"choreo: error: {path}: {err}", file=sys.stderr)
        return None
    try:
        diagnostics: Sequence[Diagnostic] = ck.check(source, defines or None, target=target, filename=path)
    except ck.ChoreoError as err:  # tolerated: the contract says check returns them, but they are diagnostics
        diagnostics = err.diagnostics
    for diagnostic in diagnostics:
        print(diagnostic.render(source, path))
    errors = sum(d.severity == ERROR for d in diagnostics)
    return errors, len(diagnostics) - errors


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def run_check(args: argparse.Namespace) -> int:
    """`choreo check`: every file is checked even after a bad one, so one run reports everything."""
    defines = dict(args.defines)
    errors = warnings = unreadable = 0
    for path in args.files:
        try:
            counts = _check_one(path, args.target, defines)
        except Exception as err:  # a compiler bug: one line naming the file, not a traceback
            if os.environ.get("CHOREO_TRACEBACK"):
                raise
            reason = ": ".join(filter(None, (type(err).__name__, str(err))))
            print(
                f"choreo: internal error: {path}: {reason} (set CHOREO_TRACEBACK=1 for the traceback)",
                file=sys.stderr,
            )
            return EXIT_INTERNAL
        if counts is None:
            unreadable += 1
        else:
            errors += counts[0]
            warnings += counts[1]
    checked = len(args.files) - unreadable
    if checked and not args.quiet:  # an unreadable file has said so on its own line already
        print(
            f"checked {_plural(checked, 'file')}: {_plural(errors, 'error')}, {_plural(warnings, 'warning')}"
        )
    if unreadable:
        return EXIT_USAGE
    return EXIT_ERRORS if errors else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `choreo` console script and of `python -m choreo_kernel`."""
    args = _build_parser().parse_args(argv)
    status: int = args.run(args)
    return status
