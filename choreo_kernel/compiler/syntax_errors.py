"""Syntax errors in the user's words: what the parser expected and what it found, at the right place."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import TerminalDef

from choreo_kernel.compiler.diagnostics import Note, Span
from choreo_kernel.compiler.preprocess import SourceMap, blank_comments

# What a user calls the tokens a syntax error expected.
_TOKEN_WORDS = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "ELEM_TYPE": "a type",
    "LEVEL": "a level (block, group-4, group, thread)",
    "OPERATION": "an operation (dma.copy, tma.load, mma...)",
    "ASSIGN_OP": "'='",
    "ARROW": "'=>'",
    "EVENT_INIT": "'= ready'",
    "BOUND_OP": "'#+' or '#-'",
    "$END": "the end of the input",
}
_EXPRESSION_STARTS = {"NAME", "INT", "FLOAT", "LPAR"}
# A declaration that starts right but goes on wrong has a message of its own: (the text before the
# token, the tokens (as written) that are the mistake there, the message with the declared name for {name}); and
# a construct of Croqtile's that this compiler does not have, which the grammar cannot read.
_DECLARATION_MISTAKES = (
    (
        re.compile(r"\bituple(?:\s*<\s*\d+\s*>)?\s+(?P<name>[A-Za-z_]\w*)\s*$"),
        {":"},
        "an ituple must be initialized with '=', not ':' (write 'ituple {name} = {{7, 8}};')",
    ),
    (
        re.compile(r"\bituple(?:\s*<\s*\d+\s*>)?\s+(?P<name>[A-Za-z_]\w*)\s*$"),
        {";", ","},
        "an ituple must be initialized: '{name}' has no value (write 'ituple {name} = {{7, 8}};')",
    ),
    (
        re.compile(r"\bituple(?:\s*<\s*\d+\s*>)?\s+(?P<name>[A-Za-z_]\w*)\s*$"),
        {"["},
        "no ituple array is allowed: an ituple already holds several values; give their count in its"
        " type (write 'ituple<2> {name} = {{7, 8}};')",
    ),
    (
        re.compile(r"\.(?P<at>(?P<name>map|remap))\s*<[^<>;]*>\s*\([^();]*$"),
        {",", ")"},
        "explicit memory mapping ('.{name}<...>(...)') is not supported by this target: copy the data where"
        " it is needed with 'dma.copy SRC => local;' (or '=> shared')",
    ),
    (
        re.compile(r"\bmdspan(?:\s*<\s*\d+\s*>)?\s+(?P<name>[A-Za-z_]\w*)\s*$"),
        {"="},
        "an mdspan must be initialized with ':', not '=' (write 'mdspan {name} : [7, 8];')",
    ),
)
# The deepest syntax tree the passes take (C asks compilers for 127 nested blocks and 63 parentheses).
MAX_NESTING = 128


def too_deep(tree: Tree[Token]) -> Tree[Token] | None:
    """The first node nested deeper than `MAX_NESTING` (each operator of `1 + 1 + ...` is one level),
    found without recursion."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            return node
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))
    return None


def describe_syntax_error(
    error: UnexpectedInput, text: str, source_map: SourceMap, terminals: Mapping[str, TerminalDef]
) -> tuple[str, Span] | tuple[str, Span, Note]:
    """A syntax error as the user reads it: the tokens that could have come, in words, and the one found; a
    missing ';' at the end of the line before (`terminals`: the grammar's, by name)."""
    if isinstance(error, UnexpectedToken):
        token = error.token
        accepted = error.accepts or error.expected
        expected = _describe_expected(accepted, terminals)
        if token.type == "$END":
            found = "the end of the input"
        else:
            found = f"'{token.value}'"
        line = token.line or error.line
        column = token.column or error.column
        end_column = (token.end_column or column + 1) if token.type != "$END" else column + 1
        previous = error.token_history[-1] if error.token_history else None
        hint = ""
        if (
            previous is not None
            and previous.type == "ELEM_TYPE"
            and token.type in ("DOT", "ASSIGN_OP", "LSQB")
        ):
            hint = f" ('{previous}' is an element type, so it cannot name a variable)"
        message = f"syntax error: expected {expected}, found {found}{hint}"
        at_token = source_map.span(line, column, line, end_column)
        mistake = _declaration_mistake(text, token)
        if mistake is not None:
            message, start = mistake
            if start is None:
                return f"syntax error: {message}", at_token
            line_start = text.rfind("\n", 0, start) + 1
            at = (text.count("\n", 0, start) + 1, start - line_start + 1)
            return f"syntax error: {message}", source_map.span(*at, line, end_column)
        missing_semicolon = "SEMICOLON" in accepted and token.type != "$END"
        after = _end_of_previous_line(text, token) if missing_semicolon else None
        if after is not None:  # a missing ';' belongs to the line before, as rustc shows it
            return (
                message,
                source_map.span(*after, after[0], after[1] + 1),
                Note(f"{found} is here", at_token),
            )
        return message, at_token
    if isinstance(error, UnexpectedCharacters):
        return (
            f"syntax error: unexpected character '{error.char}'",
            source_map.span(error.line, error.column, error.line, error.column + 1),
        )
    if isinstance(error, UnexpectedEOF):
        expected = _describe_expected(error.expected, terminals)
        return f"syntax error: expected {expected}, found the end of the input", Span(1, 1, 1, 2)
    return f"syntax error: {error}", Span(error.line, error.column, error.line, error.column + 1)


def _declaration_mistake(text: str, token: Token) -> tuple[str, int | None] | None:
    """The message of `_DECLARATION_MISTAKES` that the text before `token` and `token` make, if any, and
    where in `text` the construct starts when the message belongs there (a pattern's group `at`)."""
    start = getattr(token, "start_pos", None)
    if start is None:
        return None
    offset = max(0, start - 200)
    before = text[offset:start]
    for pattern, tokens, message in _DECLARATION_MISTAKES:
        declared = pattern.search(before)
        if declared is not None and token.value in tokens:
            at = offset + declared.start("at") if "at" in pattern.groupindex else None
            return message.format(name=declared.group("name")), at
    return None


def _end_of_previous_line(text: str, token: Token) -> tuple[int, int] | None:
    """(line, column) just after the last token before `token`, when that token is on an earlier line."""
    start = getattr(token, "start_pos", None)
    if start is None:
        return None
    head = text[:start]
    skipped = len(head) - len(head.lstrip())  # the blank lines that put the function where it is
    before = (head[:skipped] + blank_comments(head[skipped:])).rstrip()
    if not before or "\n" not in text[len(before) : start]:
        return None
    return before.count("\n") + 1, len(before) - before.rfind("\n")


def _describe_expected(names: Iterable[str], terminals: Mapping[str, TerminalDef]) -> str:
    names = set(names)
    words: list[str] = []
    if _EXPRESSION_STARTS <= names:
        words.append("an expression")
        names -= {
            "NAME",
            "INT",
            "FLOAT",
            "STRING",
            "LPAR",
            "LSQB",
            "LBRACE",
            "TRUE",
            "FALSE",
            "ADD_OP",
            "BANG",
            "TILDE",
            "HASH",
            "AMP",
            "VBAR",
            "INCDEC",
            "ELEM_TYPE",
            "__TO",
        }
    for name in sorted(names):
        if name in _TOKEN_WORDS:
            words.append(_TOKEN_WORDS[name])
        elif name in terminals and terminals[name].pattern.type == "str":
            words.append(f"'{terminals[name].pattern.value}'")
        elif name in terminals:
            words.append(name.lower().replace("_", " "))
    if not words:
        return "something else"
    if len(words) > 6:
        words = [*words[:6], "..."]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
