"""What the CUDA compiler (NVRTC, or nvcc, which words its messages alike) says about the user's code,
at the user's lines.

An error inside device code points at the line the code came from; one inside a kernel, at the
Choreo statement whose `// line N:` comment precedes it when that statement calls a device function.
A name such a call uses that nothing defines (`call kernel(x)` with no `kernel` in the file's C++ part,
in a `%%cuda` cell or in the runtime header) is said so at the callee. Anything else is the lowering's
own fault, reported as it is.
"""

from __future__ import annotations

import re

from choreo_kernel.compiler.devicecode import LineMap
from choreo_kernel.compiler.diagnostics import ERROR, ChoreoError, Diagnostic, Span

_NVRTC_MESSAGE = re.compile(
    r"^[^\n(]+\((?P<line>\d+)\): (?:catastrophic )?error: (?P<text>.*)$", re.MULTILINE
)
_LINE_COMMENT = re.compile(r"^\s*// line (\d+): ")
NOT_DEFINED = " is not defined: declare it in the file's C++ part or in a %%cuda cell"
_CALL = re.compile(r"\bcall\s+(?P<callee>[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)")
_UNDEFINED_IDENTIFIER = re.compile(r'identifier "(?P<name>[\w:]+)" is undefined')
_NO_MEMBER = re.compile(r'namespace "(?P<namespace>[\w:]+)" has no member "(?P<name>\w+)"')
_NOT_A_NAMESPACE = 'name followed by "::" must be a class or namespace name'


class NvrtcFailure(ChoreoError):
    """NVRTC refused a translation unit; `log` is what it said."""

    def __init__(self, log: str) -> None:
        super().__init__([])
        self.log = log
        self.message = f"NVRTC could not compile the emitted CUDA (a bug in choreo-kernel's lowering):\n{log}"
        self.args = (self.message,)


def user_errors(failure: NvrtcFailure, unit: str, lines: LineMap, source: str, filename: str) -> ChoreoError:
    """NVRTC's errors about the user's code, at the user's lines: in device code, at the line it came
    from; in a kernel, at the Choreo statement whose `// line N:` comment precedes it when that
    statement calls a device function. Anything else is the lowering's own fault: `failure` itself."""
    unit_lines = unit.split("\n")
    diagnostics = []
    for match in _NVRTC_MESSAGE.finditer(failure.log):
        line, text = int(match.group("line")), match.group("text")
        found = lines.locate(line)
        if found is not None:
            part, origin_line = found
            if part.origin == filename:
                diagnostics.append(
                    Diagnostic(ERROR, f"NVRTC rejects this device code: {text}", _line_span(origin_line))
                )
            else:
                message = (
                    f"the device code of {part.origin} does not compile: {part.origin}:{origin_line}: {text}"
                )
                diagnostics.append(Diagnostic(ERROR, message, _line_span(1)))
            continue
        statement = statement_line(unit_lines, line)
        if statement is not None and "call " in unit_lines[statement[1] - 1]:
            diagnostics.append(_call_error(text, source, statement[0]))
    # The parser's errors after an unknown name on a line (`expected an identifier`) follow from it.
    undefined = {d.line for d in diagnostics if d.message.endswith(NOT_DEFINED)}
    kept = [d for d in diagnostics if d.line not in undefined or d.message.endswith(NOT_DEFINED)]
    unique = list({(d.line, d.column, d.message): d for d in kept}.values())
    return ChoreoError(unique, source, filename) if unique else failure


def _call_error(text: str, source: str, line: int) -> Diagnostic:
    """NVRTC's error `text` about the device call(s) on Choreo line `line`: at the callee that it finds
    undefined, else at the line's `call`."""
    lines = source.splitlines()
    calls = _CALL.finditer(lines[line - 1]) if 0 < line <= len(lines) else iter(())
    for call in calls:
        callee = call.group("callee")
        if undefined_callee(text, callee):
            column = call.start("callee") + 1
            message = f"'{callee}'{NOT_DEFINED}"
            return Diagnostic(ERROR, message, Span(line, column, line, column + len(callee)))
    message = f"NVRTC rejects the device function call on this line: {text}"
    return Diagnostic(ERROR, message, _call_span(source, line))


def undefined_callee(text: str, callee: str) -> bool:
    """Whether the compiler's error `text` says that `callee` (`f`, `ns::f`) is defined nowhere: the
    function (`identifier "f" is undefined`), its namespace (`name followed by "::" must be a class or
    namespace name`) or the function in its namespace (`namespace "ns" has no member "f"`)."""
    if (found := _UNDEFINED_IDENTIFIER.search(text)) is not None:
        return found.group("name") in (callee, callee.rsplit("::", 1)[-1])
    if (found := _NO_MEMBER.search(text)) is not None:
        return callee == f"{found.group('namespace')}::{found.group('name')}"
    return "::" in callee and _NOT_A_NAMESPACE in text


def statement_line(unit_lines: list[str], line: int) -> tuple[int, int] | None:
    """The Choreo line that the lowered statement around unit line `line` implements, and the unit line
    of its comment."""
    for number in range(min(line, len(unit_lines)), 0, -1):
        marker = _LINE_COMMENT.match(unit_lines[number - 1])
        if marker is not None:
            return int(marker.group(1)), number
    return None


def _line_span(line: int) -> Span:
    return Span(line, 1, line, 2)


def _call_span(source: str, line: int) -> Span:
    """The `call` on source line `line` (the line's start if the source is not at hand)."""
    lines = source.splitlines()
    column = lines[line - 1].find("call ") + 1 if 0 < line <= len(lines) else 0
    return Span(line, column, line, column + 4) if column > 0 else _line_span(line)
