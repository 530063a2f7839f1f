"""The Pygments lexer `choreo`, and its agreement with the JupyterLab extension's CodeMirror mode.

Both highlighters sort Choreo into the kinds of `choreo_kernel.lexer.TOKEN_KINDS`; the
last test runs the CodeMirror mode under Node.js (labextension/tokenize.mjs) over the
same sources and compares the kinds character by character, so that a cell looks the
same in the editor and in an exported notebook.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from corpus import CONFORMANCE
from pygments import lexers
from pygments.token import Error

from choreo_kernel.lexer import ChoreoLexer, token_kind

ROOT = Path(__file__).parent.parent
LABEXTENSION = ROOT / "labextension"
VALID = sorted((CONFORMANCE / "valid").glob("*.co"))
HOST_CODE = Path(__file__).parent / "rules" / "syntax_ok_host_code.co"
# The backend's own programs with the newer words: barriers, yield, assert, print, narrow types, hints.
NEWER_WORDS = [
    Path(__file__).parent / "cuda" / name
    for name in ("narrow_integers.co", "kernel_hints.co", "yield_leaves_kernel.co", "assert_holds.co")
]

# A cell that uses every kind, and the words whose context decides their kind.
PROGRAM = """\
%%choreo --graph -D TILE=64
#define TILE 64
#define SQR(v) \\
    ((v) * (v))   // squared
/* a
   block comment */
__co__ f32 [M, N] scale(global f16 [M, N] a, f32 s) {
  f32 [M, N] out {0.0f};
  parallel {bm, bn} by [M / TILE, N / TILE] : block {
    shared f16 [TILE, TILE] tile;
    shared event full, empty = ready;
    mutable int block = 0x1u;
    parallel.async t by 128 : thread, w by 1 : group-4 {
      f = dma.copy.async a.chunkat(bm, bn) => tile;
      l = tma.load.async.swiz<128> a.subspan(TILE, TILE).at(bm, bn) => shared;
      acc = mma.fill.f32 0.0f;
      mma.row.col acc, tile, tile;
      wait f;
      trigger full after l;
      sync.shared;
      if (true) { println("done", 1.5e3f, 'x'); }
      out.at(bm # bn, t) = a.at(bm, t) * s + block;
    }
  }
  return out;
}
"""


def kinds_of(source: str) -> list[tuple[str, str | None]]:
    """(text, kind) of each token that is not whitespace."""
    return [(text, token_kind(ttype)) for ttype, text in ChoreoLexer().get_tokens(source) if text.strip()]


@pytest.mark.parametrize("path", [*VALID, HOST_CODE], ids=lambda path: path.name)
def test_corpus_lexes_without_error_tokens(path: Path) -> None:
    tokens = ChoreoLexer().get_tokens(path.read_text(encoding="utf-8"))
    errors = [text for ttype, text in tokens if ttype in Error]
    assert not errors, f"{path.name}: error tokens {errors}"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("%%choreo --graph -D TILE=64", "meta"),
        ("#define", "meta"),
        ("// squared", "comment"),
        ("/* a\n   block comment */", "comment"),
        ("__co__", "keyword"),
        ("parallel", "keyword"),
        ("parallel.async", "keyword"),
        ("by", "keyword"),
        ("wait", "keyword"),
        ("trigger", "keyword"),
        ("after", "keyword"),
        ("println", "keyword"),
        ("return", "keyword"),
        ("global", "storage"),
        ("shared", "storage"),
        ("mutable", "storage"),
        ("f32", "type"),
        ("f16", "type"),
        ("int", "type"),
        ("event", "type"),
        ("ready", "constant"),
        ("true", "constant"),
        ("dma.copy.async", "operation"),
        ("tma.load.async.swiz<128>", "operation"),
        ("mma.fill.f32", "operation"),
        ("mma.row.col", "operation"),
        ("sync.shared", "operation"),
        ("group-4", "level"),
        ("thread", "level"),
        ("chunkat", "member"),
        ("0.0f", "number"),
        ("0x1u", "number"),
        ("1.5e3f", "number"),
        ('"done"', "string"),
        ("'x'", "string"),
        ("=>", "operator"),
        ("#", "operator"),
        ("{", "punctuation"),
    ],
)
def test_token_kinds_in_a_representative_program(text: str, kind: str) -> None:
    found = {found_kind for token, found_kind in kinds_of(PROGRAM) if token == text}
    assert found == {kind}, f"{text!r} lexed as {found or 'nothing'}"


def test_context_decides_levels_and_ready() -> None:
    """`block` is a level only after `:`, elsewhere a name; `ready` a constant only after `=`."""
    tokens = kinds_of(PROGRAM)
    assert ("block", "level") in tokens
    assert ("block", None) in tokens  # `mutable int block = ...` and `... + block`
    assert kinds_of("ready = 1;")[0] == ("ready", None)
    assert kinds_of("x.wait(1);")[1:3] == [(".", "punctuation"), ("wait", "member")]


def test_python_cell_is_python() -> None:
    tokens = kinds_of("%%python\nimport numpy as np  # one shared namespace\n")
    assert tokens[0] == ("%%python\n", "meta")
    assert ("# one shared namespace", "comment") in tokens
    assert ("#", "operator") not in tokens


def test_lexer_is_found_by_name_file_and_mime_type() -> None:
    registered = {entry.name: entry.value for entry in entry_points(group="pygments.lexers")}
    assert registered.get("choreo") == "choreo_kernel.lexer:ChoreoLexer", (
        "the pygments.lexers entry point is missing: reinstall the package (pip install -e .)"
    )
    assert isinstance(lexers.get_lexer_by_name("choreo"), ChoreoLexer)
    assert isinstance(lexers.get_lexer_for_filename("gemm.co"), ChoreoLexer)
    assert isinstance(lexers.get_lexer_for_mimetype("text/x-choreo"), ChoreoLexer)


def codemirror_kinds(source: str) -> list[str | None]:
    """The CodeMirror mode's kind for each character of `source` (None: no kind)."""
    result = subprocess.run(
        ["node", "tokenize.mjs"], cwd=LABEXTENSION, input=source, capture_output=True, text=True, check=True
    )
    per_character: list[str | None] = [None] * len(source)
    for start, end, kind in json.loads(result.stdout):
        per_character[start:end] = [kind] * (end - start)
    return per_character


def pygments_kinds(source: str) -> list[str | None]:
    """The Pygments lexer's kind for each character of `source` (None: no kind)."""
    per_character: list[str | None] = [None] * len(source)
    for start, ttype, text in ChoreoLexer().get_tokens_unprocessed(source):
        per_character[start : start + len(text)] = [token_kind(ttype)] * len(text)
    return per_character


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(PROGRAM, id="representative"),
        *(
            pytest.param(path.read_text(encoding="utf-8"), id=path.name)
            for path in [*VALID, HOST_CODE, *NEWER_WORDS]
        ),
    ],
)
def test_codemirror_mode_agrees_with_pygments(source: str) -> None:
    if shutil.which("node") is None:
        pytest.skip("needs Node.js to run the CodeMirror mode")
    if not (LABEXTENSION / "lib" / "mode.js").exists() or not (LABEXTENSION / "node_modules").exists():
        pytest.skip("the JupyterLab extension is not built (cd labextension && npm ci && npm run build)")
    differences = [
        f"{line}:{column}: {source.splitlines()[line - 1].strip()!r}: {char!r} is {mirror} in CodeMirror, {pygments} in Pygments"
        for (line, column, char, mirror, pygments) in _positions(
            source, codemirror_kinds(source), pygments_kinds(source)
        )
        if mirror != pygments
    ]
    assert not differences, "\n".join(differences[:20])


def _positions(
    source: str, mirror: list[str | None], pygments: list[str | None]
) -> list[tuple[int, int, str, str | None, str | None]]:
    """(line, column, character, CodeMirror kind, Pygments kind) of each character that is not whitespace."""
    found = []
    line, column = 1, 1
    for index, char in enumerate(source):
        if not char.isspace():
            found.append((line, column, char, mirror[index], pygments[index]))
        line, column = (line + 1, 1) if char == "\n" else (line, column + 1)
    return found
