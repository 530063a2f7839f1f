"""Pygments lexers for the PTX and SASS that `%%choreo --ptx` and `--sass` show.

Pygments' own PTX lexer flags predicates (`@%p1`) and state spaces (`shared::cta`) as errors,
and it has none for SASS, so both are here: the opcode of each instruction (after its predicate,
and after nvdisasm's `/*offset*/`), registers, labels, numbers, and the `// line N:` marks that
name the Choreo line of the instructions below them, which stand out from other comments.
"""

from __future__ import annotations

import re
from typing import ClassVar

from pygments.lexer import RegexLexer, bygroups
from pygments.token import Comment, Keyword, Name, Number, Punctuation, Text, Whitespace

Rule = tuple[str, object]
Rules = ClassVar[dict[str, list[Rule]]]
_MARK = (r"^// line \d+:[^\n]*|^// \([^\n]*\)", Comment.Special)  # a Choreo line, or "(kernel set-up ...)"
_NUMBERS = [(r"-?0[xX][0-9a-fA-F]+", Number.Hex), (r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", Number)]
# A newline alone, so that the next line's indentation is still there for the instruction rule's `^`.
_TAIL = [(r"\n", Whitespace), (r"[ \t]+", Whitespace), (r"[\[\](){},;|+\-!~]", Punctuation), (r".", Text)]


def _rules(label: str, instruction: Rule, operands: list[Rule]) -> dict[str, list[Rule]]:
    """The rules both listings share around their own labels, instruction starts and operands."""
    comments = [_MARK, (r"//[^\n]*", Comment.Single)]
    return {
        "root": [
            *comments,
            (label, Name.Label),
            instruction,
            *operands,
            *_NUMBERS,
            (r"[A-Za-z_]\w*", Name),
            *_TAIL,
        ]
    }


class PtxLexer(RegexLexer):
    name = "PTX (choreo-kernel)"
    aliases: ClassVar[list[str]] = ["choreo-ptx"]
    flags = re.MULTILINE
    tokens: Rules = _rules(
        r"^[ \t]*[$\w]+:",
        (
            r"^([ \t]*)(@!?%\w+[ \t]+)?([a-z][\w]*(?:\.[\w:]+)*)",
            bygroups(Whitespace, Keyword.Pseudo, Keyword),
        ),
        [
            (r"\.[A-Za-z_]\w*", Keyword.Declaration),
            (r"%\w+(?:\.[xyzw])?", Name.Variable),
            (r"\$\w+", Name.Label),
        ],
    )


class SassLexer(RegexLexer):
    name = "SASS (choreo-kernel)"
    aliases: ClassVar[list[str]] = ["choreo-sass"]
    flags = re.MULTILINE
    tokens: Rules = _rules(
        r"^[ \t]*\.?\w+:",
        (
            r"^([ \t]*)(/\*[0-9a-f]+\*/)([ \t]*)(@!?U?P[T\d][ \t]+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)",
            bygroups(Whitespace, Comment, Whitespace, Keyword.Pseudo, Keyword),
        ),
        [
            (r"`\(\.?\w+\)", Name.Label),
            (r"\b(?:U?R\d+|U?RZ|U?P\d|U?PT|SR_\w+|B\d+|gsb\d)\b", Name.Variable),
            (r"\bc\[0x[0-9a-f]+\]", Name.Constant),
        ],
    )
