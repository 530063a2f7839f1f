"""What every rule of the AST builder uses: source spans of tree nodes and tokens, names, integer literals."""

from __future__ import annotations

from typing import Any

from lark import Token, Transformer

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.diagnostics import DiagnosticSink, Span
from choreo_kernel.compiler.preprocess import SourceMap


class BuilderBase(Transformer[Token, Any]):
    """The AST builder's state (the map back to the user's source, the diagnostics) and its helpers."""

    def __init__(self, source_map: SourceMap, sink: DiagnosticSink) -> None:
        super().__init__()
        self.source_map = source_map
        self.sink = sink

    def _span(self, meta: Any) -> Span:
        if getattr(meta, "empty", False):
            return Span(1, 1, 1, 1)
        return self.source_map.span(meta.line, meta.column, meta.end_line, meta.end_column)

    def _token_span(self, token: Token) -> Span:
        assert token.line is not None and token.column is not None
        end_line = token.end_line or token.line
        end_column = token.end_column or token.column + len(token.value)
        return self.source_map.span(token.line, token.column, end_line, end_column)

    def _name(self, token: Token) -> ast.Name:
        return ast.Name(self._token_span(token), str(token))


def parse_int(token: Token) -> tuple[int, bool]:
    """The value and signedness of an integer literal; past 20 digits only that it is wider than 64 bits
    matters (the analysis reports it), and `int` would refuse a decimal string of 4,301 digits."""
    text = str(token)
    digits = text.rstrip("uUlL")
    unsigned = "u" in text[len(digits) :].lower()
    hexadecimal = digits[:2].lower() == "0x"
    if len(digits.lstrip("0")) > 20 and not hexadecimal:
        return 1 << 64, unsigned  # a value that no 64-bit type holds
    return int(digits, 16 if hexadecimal else 10), unsigned
