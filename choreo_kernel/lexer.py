"""Pygments lexer for Choreo, registered as `choreo` (architecture.md 3.3).

Pygments highlights Choreo wherever Jupyter renders it without an editor: the
kernel's `language_info.pygments_lexer`, nbconvert's HTML and PDF exports, Sphinx
docs, and `pygmentize -l choreo`. The JupyterLab extension's CodeMirror mode
(labextension/src/mode.ts) sorts the same text into the same kinds, so a cell
looks the same in the editor and in an export; `TOKEN_KINDS` is the shared list.

The rules follow the terminals of compiler/grammar.lark. Two places where the
grammar decides by position are decided here by what comes just before a word:
a parallel level (`block`, `group-4`, ...) only after `:`, and `ready` only
after `=`. The C++ host code that a `.co` file may hold around its functions
lexes with the same C-like rules, and a notebook cell that starts with `%%python`
is handed to Pygments' Python lexer.
"""

from __future__ import annotations

from typing import ClassVar

from pygments.lexer import RegexLexer, bygroups, include, using, words
from pygments.lexers.python import PythonLexer
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Whitespace,
    _TokenType,
)

from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES
from choreo_kernel.compiler.parser import TYPE_ALIASES

__all__ = ["TOKEN_KINDS", "ChoreoLexer", "token_kind"]

# The kinds that both highlighters know, each with its Pygments token type. The
# CodeMirror mode names its tokens `choreo-<kind>` and styles them with the
# CSS class `cm-choreo-<kind>`. A kind's subtypes count as the kind (Number.Float
# is a number).
TOKEN_KINDS: dict[str, _TokenType] = {
    "keyword": Keyword,  # __co__ parallel foreach with if wait trigger after return ...
    "storage": Keyword.Declaration,  # global shared local frag mutable
    "type": Keyword.Type,  # f16 bf16 f32 s32 ... void auto event mdspan ituple
    "constant": Keyword.Constant,  # true false, and ready in `event e = ready`
    "operation": Name.Builtin,  # dma.copy.async  tma.load.swiz<128>  mma.row.col  sync.shared
    "level": Name.Label,  # block group-4 group thread cluster, after `:`
    "member": Name.Attribute,  # .chunkat .at .span .data .subspan
    "number": Number,
    "string": String,
    "comment": Comment,
    "meta": Comment.Preproc,  # preprocessor lines, and magics such as %%choreo --graph
    "operator": Operator,
    "punctuation": Punctuation,
}


def token_kind(token_type: _TokenType) -> str | None:
    """The kind of a Pygments token type: the most specific entry of TOKEN_KINDS, or None (names, spaces)."""
    kinds = [kind for kind, kind_type in TOKEN_KINDS.items() if token_type in kind_type]
    return max(kinds, key=lambda kind: len(TOKEN_KINDS[kind]), default=None)


def _words(text: str) -> tuple[str, ...]:
    """The words of `text`: long word lists read better as one string than one quoted word a line."""
    return tuple(text.split())


_KEYWORDS = _words(
    "__co__ __to __asm__ asm volatile after assert break by call continue else foreach if in return trigger "
    "wait where while with yield"
)
_STORAGE = _words("global shared local frag mutable")
_ELEMENT_TYPES = (*ELEMENT_BYTES, *TYPE_ALIASES)  # the compiler's, aliases (`int`, `f8`) included
_OTHER_TYPES = _words("void auto event mdspan ituple stream")
_DIRECTIVES = _words("define undef ifdef ifndef if elif else endif include pragma error warning line")

# A word the rules single out is whole: `shared_tile` stays a name. A word right
# after a `.` never reaches them, as the member rule takes `.wait` and `.dma` first.
_WORD_END = r"(?!\w)"


class ChoreoLexer(RegexLexer):
    """Choreo source: `.co` files and notebook cells of the `choreo` kernel."""

    name = "Choreo"
    aliases: ClassVar[list[str]] = ["choreo"]
    filenames: ClassVar[list[str]] = ["*.co"]
    mimetypes: ClassVar[list[str]] = ["text/x-choreo"]

    tokens: ClassVar[dict] = {
        "root": [
            # A `%%python` cell is Python from its second line on (architecture.md 3.3).
            (r"\A(%%python\b[^\n]*\n?)((?s:.*))", bygroups(Comment.Preproc, using(PythonLexer))),
            # Cell and line magics, at the start of a line: `%%choreo --graph -D TILE_K=64`.
            (r"^%%?[A-Za-z_][\w-]*[^\n]*", Comment.Preproc),
            (words(_DIRECTIVES, prefix=r"^[ \t]*#[ \t]*", suffix=r"\b"), Comment.Preproc, "directive"),
            include("code"),
        ],
        "directive": [
            (r"\n", Whitespace, "#pop"),
            (r"\\\n", Comment.Preproc),
            (r"//[^\n]*", Comment.Single),
            (r"/\*(.|\n)*?\*/", Comment.Multiline),
            (r"[^\n\\/]+|[\\/]", Comment.Preproc),
        ],
        "code": [
            (r"\s+", Whitespace),
            (r"//[^\n]*", Comment.Single),
            (r"/\*(.|\n)*?\*/", Comment.Multiline),
            (r'"([^"\\\n]|\\.)*"', String),
            (r"'([^'\\\n]|\\.)'", String.Char),
            # One token for the whole operation, qualifiers and template argument included.
            (
                r"(?:dma|tma|mma)(?:\.[A-Za-z_]\w*(?:<[^<>;\n]*>)?)+|sync\.[A-Za-z_]\w*",
                Name.Builtin,
            ),
            (r"(?:parallel|inthreads)(?:\.async)?(?![\w.])|trigger\.cluster(?![\w.])", Keyword),
            (r"(?:print|println)!?(?=\s*\()", Keyword),
            (words(_KEYWORDS, suffix=_WORD_END), Keyword),
            (words(_STORAGE, suffix=_WORD_END), Keyword.Declaration),
            (words(_ELEMENT_TYPES + _OTHER_TYPES, suffix=_WORD_END), Keyword.Type),
            (words(("true", "false"), suffix=_WORD_END), Keyword.Constant),
            (r"(=)(\s*)(ready)" + _WORD_END, bygroups(Operator, Whitespace, Keyword.Constant)),
            (
                r"(:)(\s*)(block|group-\d+|group|thread|cluster)(?![\w-])",
                bygroups(Punctuation, Whitespace, Name.Label),
            ),
            (r"((?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)[fF]?|\d+[fF]", Number.Float),
            (r"0[xX][0-9a-fA-F]+[uUlL]*", Number.Hex),
            (r"\d+(?:'\d+)*[uUlL]*", Number.Integer),  # C++14 digit separators, for host code
            (r"(\.)([A-Za-z_]\w*)", bygroups(Punctuation, Name.Attribute)),
            (r"[A-Za-z_]\w*", Name),
            (r"=>|<->|::|->|<<=|>>=|\+\+|--|&&|\|\||[-+*/%&|^=!<>]=|<<|>>|[-+*/%&|^~!<>=?#]", Operator),
            (r"[()\[\]{},;:.\\]", Punctuation),
        ],
    }
