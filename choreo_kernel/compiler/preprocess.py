"""The C-style preprocessor: `#define`, `#undef`, `#if` family, caller defines.

Output keeps the user's line numbering (directive lines and inactive regions
become blank lines), and a `SourceMap` records where each macro expansion came
from, so diagnostics on expanded text still point at the user's own columns.
Comments are blanked first (string-aware), so nothing inside them expands.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from choreo_kernel.compiler.diagnostics import DiagnosticSink, Span, abbreviated, source_lines
from choreo_kernel.compiler.hostcode import starts_literal
from choreo_kernel.compiler.semantics import cint

_TOKEN = re.compile(
    r"""(?P<number>\.?\d(?:[eEpP][+-]|[\w.])*)
      | (?P<ident>[A-Za-z_]\w*)
      | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      | (?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_DIRECTIVE = re.compile(
    r"^\s*#\s*(define|undef|ifdef|ifndef|if|elif|else|endif|include|pragma|error|warning|line)\b(.*)$"
)
_MAX_EXPANSION_DEPTH = 64
MAX_EXPANSION_SIZE = 100_000  # characters (and expansions) that one macro use may expand to: a macro bomb
MAX_CONDITION_NESTING = 128  # parentheses and unary operators in one `#if` (C asks compilers for 63)


@dataclass(frozen=True)
class Macro:
    name: str
    body: str
    params: tuple[str, ...] | None = None  # None: object-like


@dataclass(frozen=True)
class _Segment:
    """Output columns [out_start, out_end) of a line came from input columns [src_start, src_end)."""

    out_start: int
    out_end: int
    src_start: int
    src_end: int
    verbatim: bool


@dataclass(frozen=True)
class _LineDirective:
    """From source line `start` on, lines are numbered from `line` (in `file`, when it names one)."""

    start: int
    line: int
    file: str | None


@dataclass
class SourceMap:
    """Maps 1-based (line, column) positions of preprocessed text back to the user's text, and lines
    to the numbering (and file) that `#line` directives give them."""

    segments: dict[int, list[_Segment]] = field(default_factory=dict)
    directives: list[_LineDirective] = field(default_factory=list)  # in source order

    def located(self, span: Span) -> Span:
        """`span` (in source lines) as the `#line` directives before it number it."""
        directive = next((d for d in reversed(self.directives) if d.start <= span.line), None)
        if directive is None:
            return span
        offset = directive.start - directive.line
        return Span(
            span.line - offset, span.column, span.end_line - offset, span.end_column, directive.file, offset
        )

    def column(self, line: int, column: int, end: bool = False) -> int:
        segments = self.segments.get(line)
        if not segments:
            return column
        for seg in segments:
            if seg.out_start <= column < seg.out_end or (end and column == seg.out_end):
                if seg.verbatim:
                    return seg.src_start + (column - seg.out_start)
                return seg.src_end if end else seg.src_start
        last = segments[-1]
        return column + (last.src_end - last.out_end)

    def span(self, line: int, column: int, end_line: int, end_column: int) -> Span:
        columns = Span(line, self.column(line, column), end_line, self.column(end_line, end_column, end=True))
        return self.located(columns)


@dataclass
class Preprocessed:
    text: str
    source_map: SourceMap
    macros: dict[str, Macro]


def blank_comments(source: str) -> str:
    """Replace `//` and `/* */` comments by spaces, keeping newlines and string literals."""
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if starts_literal(source, i):
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(source[i:j])
            i = j
        elif source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", source[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Preprocessor:
    def __init__(self, sink: DiagnosticSink, defines: Mapping[str, object] | None = None) -> None:
        self.sink = sink
        self.macros: dict[str, Macro] = {}
        self._budget = _Budget("")
        for name, value in (defines or {}).items():
            # A Macro value (an earlier notebook cell's function-like macro) is kept whole.
            self.macros[name] = value if isinstance(value, Macro) else Macro(name, _define_text(value))

    # ------------------------------------------------------------ directives

    def run(self, source: str) -> Preprocessed:
        # CRLF and CR line ends become LF first: a `\\` continuation or a `//` comment ends where the line does
        lines = blank_comments("\n".join(source_lines(source))).split("\n")
        source_map = SourceMap()
        out: list[str] = []
        # Each frame: (this branch active, some branch taken, parent active, line of #if)
        stack: list[tuple[bool, bool, bool, int]] = []
        active = True
        i = 0
        while i < len(lines):
            line_no = i + 1
            line = lines[i]
            match = _DIRECTIVE.match(line)
            if match is None:
                out.append(self._expand_line(line, line_no, source_map) if active else "")
                i += 1
                continue
            # A directive may continue over several lines with a trailing backslash.
            text = match.group(2)
            consumed = 1
            while text.endswith("\\") and i + consumed < len(lines):
                text = text[:-1] + " " + lines[i + consumed]
                consumed += 1
            out.extend([""] * consumed)
            i += consumed
            directive = match.group(1)
            column = line.index("#") + 1
            span = source_map.located(Span(line_no, column, line_no, len(line.rstrip()) + 1))
            if directive in ("if", "ifdef", "ifndef"):
                taken = active and self._condition(directive, text.strip(), span)
                stack.append((taken, taken, active, line_no))
                active = taken
            elif directive in ("elif", "else"):
                if not stack:
                    self.sink.error(f"'#{directive}' without a matching '#if'", span)
                    continue
                _, taken_before, parent, start = stack.pop()
                branch = parent and not taken_before
                if branch and directive == "elif":
                    branch = self._condition("if", text.strip(), span)
                stack.append((branch, taken_before or branch, parent, start))
                active = branch
            elif directive == "endif":
                if not stack:
                    self.sink.error("'#endif' without a matching '#if'", span)
                    continue
                active = stack.pop()[2]
            elif not active:
                continue
            elif directive == "define":
                self._define(text, span)
            elif directive == "undef":
                self.macros.pop(text.strip(), None)
            elif directive == "error":
                self.sink.error(f"#error {text.strip()}", span)
            elif directive == "warning":
                self.sink.warning(f"#warning {text.strip()}", span)
            elif directive == "line":
                self._line(text, line_no + consumed, span, source_map)
            # include and pragma belong to the C++ host toolchain: ignored.
        for _, _, _, start in stack:
            self.sink.error(
                "unterminated '#if': no matching '#endif'", source_map.located(Span(start, 1, start, 2))
            )
        return Preprocessed("\n".join(out), source_map, self.macros)

    def _line(self, text: str, next_line: int, span: Span, source_map: SourceMap) -> None:
        """`#line N` numbers the next line N; `#line N "file"` also names its file (as in C)."""
        match = re.fullmatch(r'\s*(\d+)(?:\s+"([^"\\]*)")?\s*', text)
        if match is None or int(match.group(1)) == 0:
            self.sink.error(
                "'#line' takes a line number from 1 and, optionally, a file name: #line 40 \"kernel.co\"",
                source_map.located(span),
            )
            return
        previous = source_map.directives[-1].file if source_map.directives else None
        file = match.group(2) if match.group(2) is not None else previous
        source_map.directives.append(_LineDirective(next_line, int(match.group(1)), file))

    def _define(self, text: str, span: Span) -> None:
        match = re.match(r"\s*([A-Za-z_]\w*)(\(([^)]*)\))?\s?(.*)$", text, re.DOTALL)
        if match is None:
            self.sink.error("'#define' needs a macro name", span)
            return
        name, has_params, params, body = match.group(1), match.group(2), match.group(3), match.group(4)
        if has_params is None:
            self.macros[name] = Macro(name, body.strip())
            return
        names = tuple(p.strip() for p in params.split(",")) if params.strip() else ()
        if any(not re.fullmatch(r"[A-Za-z_]\w*", p) for p in names):
            self.sink.error(f"bad parameter list in the definition of macro '{name}'", span)
            return
        self.macros[name] = Macro(name, body.strip(), names)

    def _condition(self, directive: str, text: str, span: Span) -> bool:
        if directive in ("ifdef", "ifndef"):
            defined = text.split()[0] in self.macros if text else False
            if not text:
                self.sink.error(f"'#{directive}' needs a macro name", span)
            return defined if directive == "ifdef" else not defined
        text = re.sub(
            r"\bdefined\s*(\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))",
            lambda m: "1" if (m.group(2) or m.group(3)) in self.macros else "0",
            text,
        )
        try:
            self._budget = _Budget("the condition")
            expanded, _ = self._expand(text, frozenset(), 0)
            return _ConditionEvaluator(expanded).evaluate() != 0
        except _MacroError as error:
            self.sink.error(f"in '#{directive}': {error}", span)
            return False

    # ------------------------------------------------------------- expansion

    def _expand_line(self, line: str, line_no: int, source_map: SourceMap) -> str:
        if not any(m.group("ident") in self.macros for m in _TOKEN.finditer(line) if m.group("ident")):
            return line
        out: list[str] = []
        segments: list[_Segment] = []
        out_col = 1
        pos = 0
        while pos < len(line):
            match = _TOKEN.match(line, pos)
            assert match is not None
            ident = match.group("ident")
            end = match.end()
            piece = match.group(0)
            verbatim = True
            if ident in self.macros:
                try:
                    self._budget = _Budget(f"macro '{ident}'")
                    piece, end = self._expand_invocation(line, pos, end, frozenset(), 0)
                    verbatim = False
                except _MacroError as error:
                    self.sink.error(str(error), source_map.located(Span(line_no, pos + 1, line_no, end + 1)))
            out.append(piece)
            segments.append(_Segment(out_col, out_col + len(piece), pos + 1, end + 1, verbatim))
            out_col += len(piece)
            pos = end
        source_map.segments[line_no] = segments
        return "".join(out)

    def _expand(self, text: str, hidden: frozenset[str], depth: int) -> tuple[str, int]:
        """Expand every macro in `text`; returns the text and the length consumed."""
        out: list[str] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            assert match is not None
            ident = match.group("ident")
            if ident in self.macros and ident not in hidden:
                piece, pos = self._expand_invocation(text, pos, match.end(), hidden, depth)
                out.append(piece)
            else:
                out.append(match.group(0))
                self._budget.spend(len(match.group(0)))
                pos = match.end()
        return "".join(out), pos

    def _expand_invocation(
        self, text: str, start: int, name_end: int, hidden: frozenset[str], depth: int
    ) -> tuple[str, int]:
        name = text[start:name_end]
        macro = self.macros[name]
        if depth > _MAX_EXPANSION_DEPTH:
            raise _MacroError(f"macro '{name}' expands too deeply (is it recursive?)")
        self._budget.spend(1)  # an expansion to nothing costs too: `#define A1 A0 A0` of an empty A0
        end = name_end
        body = macro.body
        if macro.params is not None:
            args_start = name_end
            while args_start < len(text) and text[args_start] in " \t":
                args_start += 1
            if args_start >= len(text) or text[args_start] != "(":
                return name, name_end  # a function-like macro name without arguments is not expanded
            args, end = _split_arguments(text, args_start, name)
            if args == [""] and not macro.params:
                args = []
            if len(args) != len(macro.params):
                raise _MacroError(
                    f"macro '{name}' takes {len(macro.params)} argument(s) but {len(args)} were given"
                )
            expanded_args = {
                p: self._expand(a, hidden, depth + 1)[0].strip() for p, a in zip(macro.params, args)
            }
            body = re.sub(r"\s*##\s*", "\x00", body)
            body = re.sub(r"[A-Za-z_]\w*", lambda m: expanded_args.get(m.group(0), m.group(0)), body)
            body = body.replace("\x00", "")
        expanded, _ = self._expand(body, hidden | {name}, depth + 1)
        return expanded, end


class _MacroError(Exception):
    pass


class _Budget:
    """What is left of `MAX_EXPANSION_SIZE` for one use of a macro (or one condition): each token that
    an expansion emits spends its length and each expansion one, so a macro that doubles twenty times
    over stops in a fraction of a second instead of growing for minutes."""

    def __init__(self, outermost: str) -> None:
        self.outermost = outermost  # what the message names: `macro 'NAME'` or `the condition`
        self.left = MAX_EXPANSION_SIZE

    def spend(self, characters: int) -> None:
        self.left -= characters
        if self.left < 0:
            raise _MacroError(f"{self.outermost} expands to more than {MAX_EXPANSION_SIZE:,} characters")


def _split_arguments(text: str, open_paren: int, name: str) -> tuple[list[str], int]:
    depth = 0
    args: list[str] = []
    current: list[str] = []
    pos = open_paren
    while pos < len(text):
        c = text[pos]
        if c == "(":
            depth += 1
            if depth > 1:
                current.append(c)
        elif c == ")":
            depth -= 1
            if depth == 0:
                args.append("".join(current))
                return args, pos + 1
            current.append(c)
        elif c == "," and depth == 1:
            args.append("".join(current))
            current = []
        else:
            current.append(c)
        pos += 1
    raise _MacroError(f"unterminated argument list of macro '{name}'")


def _define_text(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


class _ConditionEvaluator:
    """Evaluates the integer constant expression of an `#if` (unknown names are 0, as in C), in the
    64-bit arithmetic of C's intmax_t with semantics/cint.py's rules; what C leaves undefined (a
    shift by 64, a division by zero) and a literal of more than 64 bits are errors."""

    _BINARY = (
        ("||",),
        ("&&",),
        ("|",),
        ("^",),
        ("&",),
        ("==", "!="),
        ("<=", ">=", "<", ">"),
        ("<<", ">>"),
        ("+", "-"),
        ("*", "/", "%"),
    )
    _PRECEDENCE = {op: level for level, ops in enumerate(_BINARY) for op in ops}

    def __init__(self, text: str) -> None:
        self.tokens = re.findall(r"0[xX][0-9a-fA-F]+|\d+|[A-Za-z_]\w*|\|\||&&|==|!=|<=|>=|<<|>>|\S", text)
        self.pos = 0
        self.depth = 0  # parentheses, unary operators and `?:` open around the current token

    def evaluate(self) -> int:
        value = self._ternary()
        if self.pos != len(self.tokens):
            raise _MacroError(f"unexpected '{self.tokens[self.pos]}' in the condition")
        return value

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _nested(self, evaluate: Callable[[], int]) -> int:
        """`evaluate()` one level deeper: a bounded depth keeps the evaluator off Python's recursion limit."""
        self.depth += 1
        if self.depth > MAX_CONDITION_NESTING:
            raise _MacroError(
                f"the condition nests parentheses and operators more than {MAX_CONDITION_NESTING} deep"
            )
        try:
            return evaluate()
        finally:
            self.depth -= 1

    def _ternary(self) -> int:
        condition = self._binary(0)
        if self._peek() == "?":
            self.pos += 1
            then = self._nested(self._ternary)
            if self._peek() != ":":
                raise _MacroError("expected ':' in the condition")
            self.pos += 1
            otherwise = self._nested(self._ternary)
            return then if condition else otherwise
        return condition

    def _binary(self, lowest: int) -> int:
        """Operators of precedence `lowest` and tighter, by precedence climbing (depth: the levels, not the terms)."""
        left = self._unary()
        while (op := self._peek()) in self._PRECEDENCE and self._PRECEDENCE[op] >= lowest:
            self.pos += 1
            left = _apply(op, left, self._binary(self._PRECEDENCE[op] + 1))
        return left

    def _unary(self) -> int:
        token = self._peek()
        if token is None:
            raise _MacroError("the condition ends too early")
        self.pos += 1
        if token in ("-", "+", "!", "~"):
            value = cint.unary(token, self._nested(self._unary))
            assert value is not None
            return cint.wrap(value, cint.INTMAX_BITS)
        if token == "(":
            value = self._nested(self._ternary)
            if self._peek() != ")":
                raise _MacroError("expected ')' in the condition")
            self.pos += 1
            return value
        if token[0].isdigit():
            return _condition_literal(token)
        if re.fullmatch(r"[A-Za-z_]\w*", token):
            return 0
        raise _MacroError(f"unexpected '{token}' in the condition")


def _condition_literal(token: str) -> int:
    """A number of an `#if`: one that no 64-bit integer holds is an error (C's uintmax_t is the widest)."""
    hexadecimal = token[:2].lower() == "0x"
    digits = token[2:] if hexadecimal else token
    value = None
    if len(digits.lstrip("0")) <= 20:  # no longer than 2**64: `int` of a 4301-digit string would refuse
        value = int(digits, 16 if hexadecimal else 10)
    if value is None or not cint.fits(value, cint.INTMAX_BITS, signed=False):
        raise _MacroError(f"the number '{abbreviated(token)}' in the condition does not fit in 64 bits")
    return cint.wrap(value, cint.INTMAX_BITS)


def _apply(op: str, a: int, b: int) -> int:
    undefined = cint.undefined(op, b, cint.INTMAX_BITS)
    if undefined is not None:
        raise _MacroError(f"{undefined} in the condition")
    value = cint.arithmetic(op, a, b, cint.INTMAX_BITS)
    if value is None:
        truth = cint.logical(op, a, b)
        assert truth is not None, op
        return int(truth)
    return cint.wrap(value, cint.INTMAX_BITS)


def parse_define(text: str) -> tuple[str, object]:
    """`NAME=VALUE` or `NAME` (as for a C compiler's -D: value 1); integer values become ints.
    Raises ValueError for anything else."""
    name, sep, value = text.partition("=")
    if not name.isidentifier():
        raise ValueError(f"'{text}' is not NAME or NAME=VALUE")
    if not sep:
        return name, 1
    try:
        return name, int(value, 0)
    except ValueError:
        return name, value


def preprocess(
    source: str, sink: DiagnosticSink, defines: Mapping[str, object] | None = None
) -> Preprocessed:
    return Preprocessor(sink, defines).run(source)
