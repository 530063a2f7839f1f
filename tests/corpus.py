"""The conformance corpus and its `//` header (tests/conformance/README.md of the shared set).

One `Program` per `.co` file. Later tests run programs from CALL/REF, so those
are parsed now too: kept as written, and CALL also split into (name, generator)
pairs. A malformed header raises `HeaderError`, so a broken corpus file fails
loudly instead of silently testing less.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CONFORMANCE = Path(__file__).parent / "conformance"
ALL_TARGETS = ("cuda", "sim")

_KEY_LINE = re.compile(
    r"//\s*(?P<key>VALID|INVALID|COMPILE-ONLY|CALL|REF-ARG|REF|TOL|TARGETS|GRAPH-MENTIONS|GRAPH"
    r"|ERROR-LINE|ERROR-KEYWORDS)(?:\s*:\s*(?P<value>.*?))?\s*$"
)
_CALL = re.compile(r"(?P<function>[A-Za-z_]\w*)\s*\((?P<arguments>.*)\)")
_FLAGS = {"VALID", "INVALID", "COMPILE-ONLY"}


class HeaderError(ValueError):
    """A corpus file whose header does not follow the format."""


@dataclass(frozen=True)
class Program:
    """One corpus file: its source and what its header promises about it."""

    path: Path
    source: str
    valid: bool
    header_lines: int  # how many leading `//` lines the header has
    targets: tuple[str, ...] = ALL_TARGETS
    # Valid programs.
    call: str | None = None  # as written: "matmul(lhs=rand(f16,256,128), rhs=...)"
    function: str | None = None  # the __co__ function that CALL names
    arguments: tuple[tuple[str, str], ...] = ()  # (parameter name, generator text) in order
    ref: str | None = None  # NumPy expression for the return value
    ref_args: tuple[tuple[str, str], ...] = ()  # (argument name, NumPy expression) per REF-ARG
    tol: float | None = None  # None: the result must be exact
    compile_only: bool = False
    graph: str | None = None
    graph_mentions: tuple[str, ...] = ()
    # Invalid programs.
    error_line: int | None = None
    error_keywords: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.path.name


def split_arguments(text: str) -> list[str]:
    """Split at the commas that are not inside parentheses: `a=rand(f16,2,3), b=1` has two."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        depth += (char == "(") - (char == ")")
        if depth < 0:
            raise HeaderError(f"unbalanced ')' in {text!r}")
        current.append(char)
    if depth:
        raise HeaderError(f"unbalanced '(' in {text!r}")
    tail = "".join(current).strip()
    if tail or parts:
        parts.append(tail)
    return parts


def parse_call(call: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """`fn(a=gen, b=gen)` -> ("fn", (("a", "gen"), ("b", "gen")))."""
    match = _CALL.fullmatch(call.strip())
    if not match:
        raise HeaderError(f"CALL is not 'function(name=generator, ...)': {call!r}")
    arguments = []
    for part in split_arguments(match["arguments"]):
        name, sep, generator = part.partition("=")
        if not sep or not name.strip().isidentifier() or not generator.strip():
            raise HeaderError(f"CALL argument is not 'name=generator': {part!r}")
        arguments.append((name.strip(), generator.strip()))
    return match["function"], tuple(arguments)


def parse_program(path: Path) -> Program:
    """Read one corpus file and its header (the leading `//` lines)."""
    source = path.read_text(encoding="utf-8")
    header: list[tuple[str, str | None]] = []
    header_lines = 0
    for line in source.splitlines():
        if not line.startswith("//"):
            break
        header_lines += 1
        match = _KEY_LINE.fullmatch(line)
        if match:  # any other `//` line is free text
            header.append((match["key"], match["value"]))

    fields: dict[str, object] = {}
    ref_args: list[tuple[str, str]] = []
    for key, value in header:
        if (value is None) != (key in _FLAGS):
            raise HeaderError(f"{path.name}: {key} {'takes no value' if key in _FLAGS else 'needs a value'}")
        if key == "REF-ARG":
            name, sep, expression = (value or "").partition("=")
            if not sep or not name.strip().isidentifier():
                raise HeaderError(f"{path.name}: REF-ARG is not 'name = expression': {value!r}")
            ref_args.append((name.strip(), expression.strip()))
        elif key in fields:
            raise HeaderError(f"{path.name}: {key} given twice")
        else:
            fields[key] = value

    valid = "VALID" in fields
    if valid == ("INVALID" in fields):
        raise HeaderError(f"{path.name}: the header must say exactly one of VALID and INVALID")
    values = {key: str(value) for key, value in fields.items() if value is not None}
    targets = tuple(values.get("TARGETS", " ".join(ALL_TARGETS)).split())
    if not targets or not set(targets) <= set(ALL_TARGETS):
        raise HeaderError(f"{path.name}: TARGETS must list some of {ALL_TARGETS}: {targets}")
    function, arguments = parse_call(values["CALL"]) if "CALL" in values else (None, ())
    try:
        program = Program(
            path=path,
            source=source,
            valid=valid,
            header_lines=header_lines,
            targets=targets,
            call=values.get("CALL"),
            function=function,
            arguments=arguments,
            ref=values.get("REF"),
            ref_args=tuple(ref_args),
            tol=float(values["TOL"]) if "TOL" in values else None,
            compile_only="COMPILE-ONLY" in fields,
            graph=values.get("GRAPH"),
            graph_mentions=tuple(values.get("GRAPH-MENTIONS", "").split()),
            error_line=int(values["ERROR-LINE"]) if "ERROR-LINE" in values else None,
            error_keywords=tuple(values.get("ERROR-KEYWORDS", "").split()),
        )
    except ValueError as err:  # int() or float() of a malformed number
        raise HeaderError(f"{path.name}: {err}") from err
    _check_complete(program)
    return program


def _check_complete(program: Program) -> None:
    """The keys each kind of file must have, so a test never runs on half a header."""
    name = program.name
    if program.valid:
        if program.compile_only == (program.call is not None):
            raise HeaderError(f"{name}: a valid program has exactly one of CALL and COMPILE-ONLY")
        if program.call is not None and program.ref is None and not program.ref_args:
            raise HeaderError(f"{name}: CALL needs a REF or a REF-ARG")
        if program.error_line is not None or program.error_keywords:
            raise HeaderError(f"{name}: ERROR-* keys belong to invalid programs")
    else:
        if program.error_line is None:
            raise HeaderError(f"{name}: an invalid program needs ERROR-LINE")
        if not program.header_lines < program.error_line <= len(program.source.splitlines()):
            raise HeaderError(f"{name}: ERROR-LINE {program.error_line} is not a line of the program")
        if program.call or program.ref or program.ref_args or program.compile_only:
            raise HeaderError(f"{name}: CALL, REF and COMPILE-ONLY belong to valid programs")


def load(kind: str) -> list[Program]:
    """Every program of `valid` or `invalid`, sorted by file name."""
    return [parse_program(path) for path in sorted((CONFORMANCE / kind).glob("*.co"))]


def per_target(programs: list[Program]) -> list[object]:
    """One pytest param per (file, target), with the file name in the id, so a failure names both."""
    import pytest

    return [
        pytest.param(program, target, id=f"{program.name}-{target}")
        for program in programs
        for target in program.targets
    ]


def error_diagnostics(diagnostics: list) -> list:
    """The diagnostics with severity error, in the order reported."""
    return [d for d in diagnostics if d.severity == "error"]
