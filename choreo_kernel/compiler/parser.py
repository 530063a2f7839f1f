"""Parsing: source text to `ast.Program`, with located syntax errors.

The preprocessed text is split into its `__co__` functions (the rest is host
code, see hostcode.py); each function is parsed on its own, so a syntax error
in one does not hide the diagnostics of the others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import lark
from lark import Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.diagnostics import DiagnosticSink, Note, Span
from choreo_kernel.compiler.hostcode import function_regions, isolate
from choreo_kernel.compiler.preprocess import SourceMap, blank_comments

TYPE_ALIASES = {"int": "s32", "float": "f32", "f8": "f8_e4m3"}

_OPERATION_PART = re.compile(r"([A-Za-z_]\w*)(?:<([^<>]*)>)?")

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
    "$END": "the end of the input",
}
_EXPRESSION_STARTS = {"NAME", "INT", "FLOAT", "LPAR"}


@cache
def _parser() -> lark.Lark:
    grammar = resources.files("choreo_kernel.compiler").joinpath("grammar.lark").read_text()
    return lark.Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        start="function",
        propagate_positions=True,
        maybe_placeholders=True,
    )


def parse(text: str, source_map: SourceMap, sink: DiagnosticSink, host_code: bool = True) -> ast.Program:
    """Parse the preprocessed `text` into a program; syntax errors go to `sink`."""
    regions = function_regions(text)
    if not host_code:
        _reject_stray_text(text, regions, source_map, sink)
    functions = []
    builder = _AstBuilder(source_map, sink)
    for region in regions:
        isolated = isolate(text, region)
        try:
            tree = _parser().parse(isolated)
        except UnexpectedInput as error:
            sink.error(*_describe_syntax_error(error, isolated, source_map))
            continue
        functions.append(builder.transform(tree))
    end_line = text.count("\n") + 1
    return ast.Program(Span(1, 1, end_line, 1), tuple(functions))


def _reject_stray_text(text: str, regions: list[Any], source_map: SourceMap, sink: DiagnosticSink) -> None:
    """In a notebook cell everything is Choreo: text outside functions is an error, not host code."""
    pos = 0
    for region in [*regions, None]:
        end = region.start if region else len(text)
        stray = re.search(r"\S", text[pos:end])
        if stray:
            offset = pos + stray.start()
            line = text.count("\n", 0, offset) + 1
            column = offset - (text.rfind("\n", 0, offset) + 1) + 1
            sink.error(
                "expected a '__co__' function or a preprocessor line; a Choreo cell holds no other code",
                source_map.span(line, column, line, column + 1),
            )
            return
        pos = region.end if region else end


def _describe_syntax_error(
    error: UnexpectedInput, text: str, source_map: SourceMap
) -> tuple[str, Span] | tuple[str, Span, Note]:
    if isinstance(error, UnexpectedToken):
        token = error.token
        accepted = error.accepts or error.expected
        expected = _describe_expected(accepted)
        if token.type == "$END":
            found = "the end of the input"
        else:
            found = f"'{token.value}'"
        line = token.line or error.line
        column = token.column or error.column
        end_column = (token.end_column or column + 1) if token.type != "$END" else column + 1
        message = f"syntax error: expected {expected}, found {found}"
        at_token = source_map.span(line, column, line, end_column)
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
        expected = _describe_expected(error.expected)
        return f"syntax error: expected {expected}, found the end of the input", Span(1, 1, 1, 2)
    return f"syntax error: {error}", Span(error.line, error.column, error.line, error.column + 1)


def _end_of_previous_line(text: str, token: Token) -> tuple[int, int] | None:
    """(line, column) just after the last token before `token`, when that token is on an earlier line."""
    start = getattr(token, "start_pos", None)
    if start is None:
        return None
    before = blank_comments(text[:start]).rstrip()
    if not before or "\n" not in text[len(before) : start]:
        return None
    return before.count("\n") + 1, len(before) - before.rfind("\n")


def _describe_expected(names: Iterable[str]) -> str:
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
    terminals = {t.name: t for t in _parser().terminals}
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


class _StorageWord(str):
    pass


class _TypeWord(str):
    pass


@v_args(meta=True)
class _AstBuilder(Transformer[Token, Any]):
    """Builds AST nodes from the parse tree, one method per grammar rule or alias."""

    def __init__(self, source_map: SourceMap, sink: DiagnosticSink) -> None:
        super().__init__()
        self.source_map = source_map
        self.sink = sink

    # --------------------------------------------------------------- helpers

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

    # ------------------------------------------------------------- functions

    def function(self, meta: Any, children: list[Any]) -> ast.Function:
        return_type, name, params, body = children
        return ast.Function(
            self._span(meta), str(name), self._token_span(name), return_type, params or (), body
        )

    def params(self, meta: Any, children: list[Any]) -> tuple[ast.Param, ...]:
        return tuple(children)

    def void_return(self, meta: Any, children: list[Any]) -> ast.TypeRef:
        return ast.TypeRef(self._span(meta), "void")

    def auto_return(self, meta: Any, children: list[Any]) -> ast.TypeRef:
        return ast.TypeRef(self._span(meta), "auto")

    def typed_return(self, meta: Any, children: list[Any]) -> ast.TypeRef:
        type_name, shape = children
        return ast.TypeRef(self._span(meta), type_name, shape)

    def param(self, meta: Any, children: list[Any]) -> ast.Param:
        is_global, type_name, shape, name = children
        type_ref = ast.TypeRef(self._span(meta), type_name, shape)
        return ast.Param(self._span(meta), type_ref, str(name), self._token_span(name), is_global is not None)

    def type_name(self, meta: Any, children: list[Any]) -> str:
        word = str(children[0])
        return _TypeWord(TYPE_ALIASES.get(word, word))

    def shape(self, meta: Any, children: list[Any]) -> tuple[ast.Expr, ...]:
        return tuple(children)

    def any_dim(self, meta: Any, children: list[Any]) -> ast.AnyDim:
        return ast.AnyDim(self._span(meta))

    # ---------------------------------------------------------- declarations

    def storage(self, meta: Any, children: list[Any]) -> str:
        return _StorageWord(children[0])

    def buffer_decl(self, meta: Any, children: list[Any]) -> list[ast.BufferDecl]:
        storage, type_name, shape, *declarators = children
        return [
            ast.BufferDecl(self._span(meta), storage, type_name, shape, name, name_span, array_dims, init)
            for name, name_span, array_dims, init in declarators
        ]

    def buffer_declarator(self, meta: Any, children: list[Any]) -> tuple[Any, ...]:
        name, array_dims, init = children
        return str(name), self._token_span(name), array_dims, init

    def array_dims(self, meta: Any, children: list[Any]) -> tuple[ast.Expr, ...]:
        return tuple(children)

    def buffer_init(self, meta: Any, children: list[Any]) -> tuple[ast.Expr, ...]:
        return children[0] or ()

    def scalar_decl(self, meta: Any, children: list[Any]) -> list[ast.ScalarDecl]:
        mutable = any(isinstance(c, Token) and c.type == "MUTABLE" for c in children)
        storage = next((c for c in children if isinstance(c, _StorageWord)), None)
        type_name = next((c for c in children if isinstance(c, _TypeWord)), None)
        declarators = [c for c in children if isinstance(c, tuple)]
        return [
            ast.ScalarDecl(self._span(meta), mutable, type_name, name, name_span, init, storage)
            for name, name_span, init in declarators
        ]

    def scalar_declarator(self, meta: Any, children: list[Any]) -> tuple[Any, ...]:
        name, init = children
        return str(name), self._token_span(name), init

    def event_decl(self, meta: Any, children: list[Any]) -> list[ast.EventDecl]:
        storage, arrivals, *declarators = children
        return [
            ast.EventDecl(self._span(meta), storage, name, name_span, dims, ready, arrivals)
            for name, name_span, dims, ready in declarators
        ]

    def arrivals(self, meta: Any, children: list[Any]) -> int:
        return _parse_int(children[0])[0]

    def event_declarator(self, meta: Any, children: list[Any]) -> tuple[Any, ...]:
        name, dims, ready = children
        return str(name), self._token_span(name), dims, ready is not None

    def shape_decl(self, meta: Any, children: list[Any]) -> ast.ShapeDecl:
        rank, name, value = children
        return ast.ShapeDecl(self._span(meta), str(name), self._token_span(name), value, rank)

    def mdspan_type(self, meta: Any, children: list[Any]) -> int | None:
        return _parse_int(children[0])[0] if children[0] is not None else None

    def tuple_decl(self, meta: Any, children: list[Any]) -> ast.TupleDecl:
        size, name, value = children
        size_value = _parse_int(size)[0] if size is not None else None
        return ast.TupleDecl(self._span(meta), str(name), self._token_span(name), value, size_value)

    # ------------------------------------------------------------ statements

    def block(self, meta: Any, children: list[Any]) -> ast.Block:
        return ast.Block(self._span(meta), tuple(_flatten(children)))

    def empty_stmt(self, meta: Any, children: list[Any]) -> ast.Empty:
        return ast.Empty(self._span(meta))

    def attributed(self, meta: Any, children: list[Any]) -> ast.Stmt:
        _, inner = children
        inner_stmt = _as_statement(inner, self._span(meta))
        return ast.Unsupported(self._span(meta), "attribute", inner_stmt)

    def parallel(self, meta: Any, children: list[Any]) -> ast.Parallel:
        keyword, *clauses, body = children
        body = _as_statement(body, self._span(meta))
        return ast.Parallel(self._span(meta), str(keyword).endswith(".async"), tuple(clauses), body)

    def parallel_clause(self, meta: Any, children: list[Any]) -> ast.ParallelClause:
        variables, count, level = children
        level_span = self._token_span(level) if level is not None else None
        return ast.ParallelClause(
            self._span(meta), variables, count, str(level) if level is not None else None, level_span
        )

    def single_var(self, meta: Any, children: list[Any]) -> ast.BoundVars:
        return ast.BoundVars(self._span(meta), (self._name(children[0]),))

    def var_list(self, meta: Any, children: list[Any]) -> ast.BoundVars:
        return ast.BoundVars(self._span(meta), tuple(self._name(c) for c in children), braced=True)

    def named_var_list(self, meta: Any, children: list[Any]) -> ast.BoundVars:
        group, *names = children
        return ast.BoundVars(self._span(meta), tuple(self._name(c) for c in names), self._name(group), True)

    def foreach(self, meta: Any, children: list[Any]) -> ast.Stmt:
        head, suffix, body = children
        span = self._span(meta)
        body = _as_statement(body, span)
        if head[0] == "in":
            loop: ast.Stmt = ast.Foreach(span, head[1], head[2], body)
        else:
            loop = ast.ForeachRange(span, head[1], body)
        return loop if suffix is None else ast.Unsupported(span, "hint", loop)

    def foreach_in(self, meta: Any, children: list[Any]) -> tuple[Any, ...]:
        return "in", children[0], children[1]

    def foreach_ranges(self, meta: Any, children: list[Any]) -> tuple[Any, ...]:
        return "ranges", tuple(children)

    def foreach_suffix(self, meta: Any, children: list[Any]) -> ast.Expr:
        return children[0]

    def whole_range(self, meta: Any, children: list[Any]) -> ast.RangeItem:
        return ast.RangeItem(self._span(meta), self._name(children[0]))

    def sliced_range(self, meta: Any, children: list[Any]) -> ast.RangeItem:
        name, start, stop, step = children
        return ast.RangeItem(self._span(meta), self._name(name), start, stop, step, sliced=True)

    def step(self, meta: Any, children: list[Any]) -> ast.Expr | None:
        return children[0]

    def with_stmt(self, meta: Any, children: list[Any]) -> ast.With:
        *bindings, where, body = children
        span = self._span(meta)
        return ast.With(span, tuple(bindings), _as_statement(body, span), where)

    def with_binding(self, meta: Any, children: list[Any]) -> ast.WithBinding:
        return ast.WithBinding(self._span(meta), children[0], children[1])

    def where_clause(self, meta: Any, children: list[Any]) -> tuple[ast.Name, ast.Name]:
        return self._name(children[0]), self._name(children[1])

    def if_stmt(self, meta: Any, children: list[Any]) -> ast.If:
        condition, then, otherwise = children
        span = self._span(meta)
        return ast.If(
            span,
            condition,
            _as_statement(then, span),
            _as_statement(otherwise, span) if otherwise is not None else None,
        )

    def while_stmt(self, meta: Any, children: list[Any]) -> ast.While:
        span = self._span(meta)
        return ast.While(span, children[0], _as_statement(children[1], span))

    def inthreads(self, meta: Any, children: list[Any]) -> ast.InThreads:
        keyword, condition, body = children
        span = self._span(meta)
        return ast.InThreads(span, str(keyword).endswith(".async"), condition, _as_statement(body, span))

    def operation_stmt(self, meta: Any, children: list[Any]) -> ast.OperationStmt:
        return ast.OperationStmt(self._span(meta), children[0])

    def operation(self, meta: Any, children: list[Any]) -> ast.Operation:
        token, operands, after = children
        args, destination = operands if operands is not None else ((), None)
        family, *rest = [m for m in _OPERATION_PART.finditer(str(token))]
        template_args = {m.group(1): m.group(2) for m in rest if m.group(2) is not None}
        return ast.Operation(
            self._span(meta),
            family.group(1),
            tuple(m.group(1) for m in rest),
            template_args,
            args,
            destination,
            after or (),
            self._token_span(token),
        )

    def operands(self, meta: Any, children: list[Any]) -> tuple[tuple[ast.Expr, ...], ast.Expr | None]:
        args, _, destination = children
        return args, destination

    def after_clause(self, meta: Any, children: list[Any]) -> tuple[ast.Expr, ...]:
        return children[0]

    def wait_stmt(self, meta: Any, children: list[Any]) -> ast.Wait:
        return ast.Wait(self._span(meta), children[0])

    def trigger_stmt(self, meta: Any, children: list[Any]) -> ast.Trigger:
        return ast.Trigger(self._span(meta), children[0], children[1] or ())

    def sync_stmt(self, meta: Any, children: list[Any]) -> ast.Sync:
        return ast.Sync(self._span(meta), str(children[0]).split(".", 1)[1])

    def assign_stmt(self, meta: Any, children: list[Any]) -> ast.Stmt:
        target, op, value = children
        span = self._span(meta)
        if isinstance(value, ast.Operation):
            if str(op) != "=" or not isinstance(target, ast.Name):
                self.sink.error(
                    f"the future of '{value.text}' can only be named with '=' and a plain name", target.span
                )
            return ast.OperationStmt(span, value, target if isinstance(target, ast.Name) else None)
        return ast.Assign(span, target, str(op), value)

    def expr_stmt(self, meta: Any, children: list[Any]) -> ast.ExprStmt:
        return ast.ExprStmt(self._span(meta), children[0])

    def return_stmt(self, meta: Any, children: list[Any]) -> ast.Return:
        return ast.Return(self._span(meta), children[0])

    def break_stmt(self, meta: Any, children: list[Any]) -> ast.Break:
        return ast.Break(self._span(meta))

    def continue_stmt(self, meta: Any, children: list[Any]) -> ast.Continue:
        return ast.Continue(self._span(meta))

    def call_stmt(self, meta: Any, children: list[Any]) -> ast.Unsupported:
        return ast.Unsupported(self._span(meta), "call")

    def print_stmt(self, meta: Any, children: list[Any]) -> ast.Unsupported:
        return ast.Unsupported(self._span(meta), "print")

    # ----------------------------------------------------------- expressions

    def expr_list(self, meta: Any, children: list[Any]) -> tuple[ast.Expr, ...]:
        return tuple(children)

    def ternary(self, meta: Any, children: list[Any]) -> ast.Ternary:
        return ast.Ternary(self._span(meta), *children)

    def binary(self, meta: Any, children: list[Any]) -> ast.Binary:
        left, op, right = children
        return ast.Binary(self._span(meta), str(op), left, right)

    def unary(self, meta: Any, children: list[Any]) -> ast.Unary:
        op, operand = children
        return ast.Unary(self._span(meta), str(op), operand)

    def prefix_incdec(self, meta: Any, children: list[Any]) -> ast.IncDec:
        op, operand = children
        return ast.IncDec(self._span(meta), str(op), operand, prefix=True)

    def postfix_incdec(self, meta: Any, children: list[Any]) -> ast.IncDec:
        operand, op = children
        return ast.IncDec(self._span(meta), str(op), operand, prefix=False)

    def cast(self, meta: Any, children: list[Any]) -> ast.Cast:
        return ast.Cast(self._span(meta), children[0], children[1])

    cast_call = cast
    cast_to = cast

    def member(self, meta: Any, children: list[Any]) -> ast.Member:
        value, name = children
        return ast.Member(self._span(meta), value, str(name), self._token_span(name))

    def method(self, meta: Any, children: list[Any]) -> ast.Method:
        value, name, args = children
        return ast.Method(self._span(meta), value, str(name), self._token_span(name), args or ())

    def call(self, meta: Any, children: list[Any]) -> ast.Call:
        callee, args = children
        return ast.Call(self._span(meta), callee, args or ())

    def index(self, meta: Any, children: list[Any]) -> ast.Index:
        value, indices = children
        return ast.Index(self._span(meta), value, indices)

    def name(self, meta: Any, children: list[Any]) -> ast.Name:
        return self._name(children[0])

    def int_literal(self, meta: Any, children: list[Any]) -> ast.IntLiteral:
        value, unsigned = _parse_int(children[0])
        return ast.IntLiteral(self._span(meta), value, unsigned)

    def float_literal(self, meta: Any, children: list[Any]) -> ast.FloatLiteral:
        text = str(children[0])
        single = text[-1] in "fF"
        return ast.FloatLiteral(self._span(meta), float(text.rstrip("fF")), single)

    def true_literal(self, meta: Any, children: list[Any]) -> ast.BoolLiteral:
        return ast.BoolLiteral(self._span(meta), True)

    def false_literal(self, meta: Any, children: list[Any]) -> ast.BoolLiteral:
        return ast.BoolLiteral(self._span(meta), False)

    def string_literal(self, meta: Any, children: list[Any]) -> ast.StringLiteral:
        text = "".join(str(c)[1:-1] for c in children)
        return ast.StringLiteral(self._span(meta), text)

    def paren(self, meta: Any, children: list[Any]) -> ast.Paren:
        return ast.Paren(self._span(meta), children[0])

    def tuple_literal(self, meta: Any, children: list[Any]) -> ast.TupleLiteral:
        return ast.TupleLiteral(self._span(meta), children[0])

    def list_literal(self, meta: Any, children: list[Any]) -> ast.ListLiteral:
        return ast.ListLiteral(self._span(meta), children[0])

    def element_count(self, meta: Any, children: list[Any]) -> ast.ElementCount:
        return ast.ElementCount(self._span(meta), children[1])

    def type_size(self, meta: Any, children: list[Any]) -> ast.TypeSize:
        return ast.TypeSize(self._span(meta), children[1])


def _parse_int(token: Token) -> tuple[int, bool]:
    text = str(token)
    digits = text.rstrip("uUlL")
    unsigned = "u" in text[len(digits) :].lower()
    return int(digits, 16 if digits[:2].lower() == "0x" else 10), unsigned


def _flatten(items: Iterable[Any]) -> Iterable[ast.Stmt]:
    for item in items:
        if isinstance(item, list):
            yield from item
        else:
            yield item


def _as_statement(body: Any, span: Span) -> ast.Stmt:
    """A braceless body that declares several names becomes a block of them."""
    if isinstance(body, list):
        return ast.Block(span, tuple(body))
    assert isinstance(body, ast.Stmt)
    return body
