"""Diagnostics: located messages about the user's source, rendered like rustc.

Every problem the compiler finds is a `Diagnostic` that points at a line and
column range of the user's own text (a notebook cell or a `.co` file), never at
generated code.  Passes report into a `DiagnosticSink` and keep going, so one
run reports everything it can find.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

ERROR = "error"
WARNING = "warning"

# What ends a line of Choreo source: as C reads it, LF, CRLF or a lone CR (old Mac files). Form feeds,
# vertical tabs, NEL and U+2028 are spaces within a line, though Python's `splitlines` breaks there.
_LINE_END = re.compile(r"\r\n|\r|\n")
# Characters an excerpt shows as a space, so that the caret stays under its column on a terminal.
_SHOWN_AS_SPACE = re.compile(r"[\t\f\v\x00-\x08\x0e-\x1f\x7f\x85\u2028\u2029]")


def abbreviated(text: str, limit: int = 40) -> str:
    """`text` for a message: its start and its length when it is longer than `limit` (a 4,000-digit
    literal would make a 4,000-character diagnostic)."""
    return text if len(text) <= limit else f"{text[: limit // 2]}... ({len(text):,} characters)"


def source_lines(source: str) -> list[str]:
    """The lines of `source` as the compiler numbers them (line N of a diagnostic is item N - 1)."""
    return _LINE_END.split(source)


@dataclass(frozen=True)
class Span:
    """A range in the user's source: 1-based lines and columns, end inclusive-exclusive.

    After a `#line N "file"` directive, `line` is the line the directive names and `file` its file;
    the text is still at line `line + offset` of the source (where an excerpt shows it).
    """

    line: int
    column: int
    end_line: int
    end_column: int
    file: str | None = None
    offset: int = 0


@dataclass(frozen=True)
class Note:
    """A related place (where a name was first declared, where a future was waited)."""

    message: str
    span: Span | None = None


@dataclass(frozen=True)
class Diagnostic:
    severity: str
    message: str
    span: Span
    notes: tuple[Note, ...] = ()

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    @property
    def end_line(self) -> int:
        return self.span.end_line

    @property
    def end_column(self) -> int:
        return self.span.end_column

    @property
    def full_message(self) -> str:
        """The message followed by its notes: what a keyword search should see."""
        return "\n".join([self.message, *(note.message for note in self.notes)])

    def render(self, source: str, filename: str = "<source>") -> str:
        return render_diagnostic(self, source_lines(source), filename)

    def __str__(self) -> str:
        return f"{self.line}:{self.column}: {self.severity}: {self.message}"


@dataclass
class DiagnosticSink:
    """Collects diagnostics from all passes, in the order they are reported."""

    diagnostics: list[Diagnostic] = field(default_factory=list)

    def error(self, message: str, span: Span, *notes: Note) -> None:
        self.diagnostics.append(Diagnostic(ERROR, message, span, tuple(notes)))

    def warning(self, message: str, span: Span, *notes: Note) -> None:
        self.diagnostics.append(Diagnostic(WARNING, message, span, tuple(notes)))

    def target_rule(self, target: str, message: str, span: Span, *notes: Note) -> None:
        """A rule of the CUDA/Hopper target: an error there, a portability warning on sim (12.10)."""
        if target == "cuda":
            self.error(message, span, *notes)
        else:
            self.warning(f"would not run on CUDA: {message}", span, *notes)

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == ERROR for d in self.diagnostics)


class ChoreoError(Exception):
    """Raised for any problem in a Choreo source; carries every diagnostic found."""

    def __init__(
        self,
        diagnostics: Sequence[Diagnostic],
        source: str = "",
        filename: str = "<source>",
    ) -> None:
        self.diagnostics = list(diagnostics)
        self.source = source
        self.filename = filename
        self.message = ""
        super().__init__(self.render())

    @classmethod
    def simple(cls, message: str) -> ChoreoError:
        """An error found when running (bad arguments, a failed launch): no source position."""
        error = cls([])
        error.message = message
        error.args = (message,)
        return error

    def render(self, limit: int | None = None) -> str:
        """Every diagnostic, or the first `limit` of them and a line that counts the others (a cell with
        250,000 errors is not shown whole)."""
        if self.message:
            return self.message
        lines = source_lines(self.source)
        shown = self.diagnostics if limit is None else self.diagnostics[:limit]
        rendered = [render_diagnostic(d, lines, self.filename) for d in shown]
        rest = self.diagnostics[len(shown) :]
        if rest:
            errors = sum(d.severity == ERROR for d in rest)
            counts = [
                f"{count:,} {word}{'' if count == 1 else 's'}"
                for count, word in ((errors, ERROR), (len(rest) - errors, WARNING))
                if count
            ]
            rendered.append(f"... and {len(rest):,} more ({', '.join(counts)})")
        return "\n".join(rendered)

    def __str__(self) -> str:
        return self.render()


def render_diagnostic(diagnostic: Diagnostic, lines: Sequence[str], filename: str) -> str:
    """`file:line:col: severity: message`, the source line, a caret underline, then notes."""
    span = diagnostic.span
    out = [f"{span.file or filename}:{span.line}:{span.column}: {diagnostic.severity}: {diagnostic.message}"]
    # One gutter for every excerpt of the diagnostic, so the `|` bars line up.
    gutter = max(len(str(s.line)) for s in [span, *(n.span for n in diagnostic.notes if n.span)])
    out.extend(_excerpt(span, lines, gutter))
    for note in diagnostic.notes:
        if note.span is None:
            out.append(f"   = note: {note.message}")
        else:
            out.append(
                f"{note.span.file or filename}:{note.span.line}:{note.span.column}: note: {note.message}"
            )
            out.extend(_excerpt(note.span, lines, gutter))
    return "\n".join(out)


def _excerpt(span: Span, lines: Sequence[str], gutter: int) -> list[str]:
    physical = span.line + span.offset  # the line in `lines`, where a #line directive renumbered the source
    if not 1 <= physical <= len(lines):
        return []
    text = _SHOWN_AS_SPACE.sub(" ", lines[physical - 1])
    end = span.end_column if span.end_line == span.line else len(text) + 1
    width = max(1, end - span.column)
    underline = " " * (span.column - 1) + "^" + "~" * (width - 1)
    return [
        f" {str(span.line).rjust(gutter)} | {text}",
        f" {' ' * gutter} | {underline}",
    ]
