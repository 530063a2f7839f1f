"""Parsing: source text to `ast.Program`, with located syntax errors.

The preprocessed text is split into its `__co__` functions (the rest is host
code, see hostcode.py); each function is parsed on its own, so a syntax error
in one does not hide the diagnostics of the others.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

import lark
from lark import Token, v_args
from lark.exceptions import UnexpectedInput
from lark.lexer import TerminalDef

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.builder_base import parse_int
from choreo_kernel.compiler.devicecode import blank_regions, device_items
from choreo_kernel.compiler.diagnostics import DiagnosticSink, Span
from choreo_kernel.compiler.hostcode import function_regions, isolate
from choreo_kernel.compiler.preprocess import SourceMap
from choreo_kernel.compiler.signature_rules import SignatureRules
from choreo_kernel.compiler.syntax_errors import MAX_NESTING, describe_syntax_error, too_deep

# `int x` and `bool b` declare immutable scalars; an element type name (`s32 x`, `f32 v`) declares one
# that may be re-assigned, as Croqtile's grammar has it (its fundamental types are mutable).
DEVICE_TARGETS = ("cpu", "gpu")  # where `parallel ... : device(...)` places its body
IMMUTABLE_SCALAR_TYPES = frozenset({"int", "bool"})
TYPE_ALIASES = {
    "int": "s32",
    "float": "f32",
    "double": "f64",
    "half": "f16",
    "bfp16": "bf16",
    "f8": "f8_e4m3",
}

_OPERATION_PART = re.compile(r"([A-Za-z_]\w*)(?:<([^<>]*)>)?")

_ASM_GOTO = "__asm__ goto is not supported (expected '__asm__' or '__asm__ volatile'): Choreo has no labels"
_ASM_GOTO_TEXT = re.compile(r"(?<![\w\"])(__asm__|asm)\s+goto\b")


@cache
def _parser() -> lark.Lark:
    grammar = resources.files("choreo_kernel.compiler").joinpath("grammar.lark").read_text()
    return lark.Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        start=["function", "expr_list"],
        propagate_positions=True,
        maybe_placeholders=True,
    )


@cache
def _terminals() -> dict[str, TerminalDef]:
    return {terminal.name: terminal for terminal in _parser().terminals}


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
            tree = _parser().parse(isolated, start="function")
        except UnexpectedInput as error:
            goto = _ASM_GOTO_TEXT.search(text, region.start, region.end)
            if goto is not None:  # its labels are what the parser trips on: name the cause
                sink.error(_ASM_GOTO, _offset_span(text, goto.start(), goto.end(), source_map))
            else:
                sink.error(*describe_syntax_error(error, isolated, source_map, _terminals()))
            continue
        deep = too_deep(tree)
        if deep is not None:  # every pass recurses on the tree: past this, Python's stack would not hold it
            sink.error(
                f"this nests statements and operators more than {MAX_NESTING} levels deep, which the compiler "
                "does not take: give parts of it names (a variable for part of a long expression, a function "
                "or fewer levels for the statements)",
                builder._span(deep.meta),
            )
            continue
        functions.append(builder.transform(tree))
    end_line = text.count("\n") + 1
    return ast.Program(Span(1, 1, end_line, 1), tuple(functions))


def _offset_span(text: str, start: int, end: int, source_map: SourceMap) -> Span:
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    return source_map.span(line, column, line, column + (end - start))


def _reject_stray_text(text: str, regions: list[Any], source_map: SourceMap, sink: DiagnosticSink) -> None:
    """In a notebook cell everything is Choreo or device code (`__device__` functions, `__cok__` blocks)
    for later cells to call: other text outside functions is an error, not host code."""
    host = blank_regions(text, regions)
    stray = re.search(r"\S", blank_regions(host, device_items(host)))
    if stray:
        offset = stray.start()
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        sink.error(
            "expected a '__co__' function, a '__device__' function or a preprocessor line; a Choreo cell "
            "holds no other code",
            source_map.span(line, column, line, column + 1),
        )


CONFIGURED = ("pad", "transp")  # operations whose template arguments are expressions


class _ShiftedMap:
    """Positions in a piece of a token (parsed on its own, from line 1 column 1) mapped to the user's source."""

    def __init__(self, source_map: SourceMap, line: int, column_offset: int) -> None:
        self.source_map = source_map
        self.line = line
        self.column_offset = column_offset

    def span(self, line: int, column: int, end_line: int, end_column: int) -> Span:
        return self.source_map.span(
            self.line, column + self.column_offset, self.line, end_column + self.column_offset
        )


class _StorageWord(str):
    pass


@dataclass(frozen=True)
class _AsmWord:
    """An item of an inline assembly section without an expression: a clobber ("memory") when
    `quoted`, else a label (of `asm goto`) or a named operand missing its expression."""

    text: str
    span: Span
    quoted: bool


class _TypeWord(str):
    """An element type's canonical name; `written` is the word in the source (`int` for s32)."""

    written: str


@v_args(meta=True)
class _AstBuilder(SignatureRules):
    """Builds AST nodes from the parse tree, one method per grammar rule or alias."""

    def __init__(self, source_map: SourceMap, sink: DiagnosticSink) -> None:
        super().__init__(source_map, sink)
        self.device_parallels: list[tuple[Span, str]] = []  # each device(...) parallel built so far

    # ------------------------------------------------------------- functions

    def function(self, meta: Any, children: list[Any]) -> ast.Function:
        return_type, name, params, body = children
        return ast.Function(
            self._span(meta), str(name), self._token_span(name), return_type, params or (), body
        )

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
        type_word = _TypeWord(TYPE_ALIASES.get(word, word))
        type_word.written = word
        return type_word

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

    def accumulator_array_decl(self, meta: Any, children: list[Any]) -> ast.AccumulatorArrayDecl:
        _, elem, name, dims, init = children
        return ast.AccumulatorArrayDecl(
            self._span(meta),
            str(elem) if elem is not None else None,
            str(name),
            self._token_span(name),
            dims,
            init,
        )

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
        element_typed = type_name is not None and type_name.written not in IMMUTABLE_SCALAR_TYPES
        return [
            ast.ScalarDecl(
                self._span(meta), mutable, type_name, name, name_span, init, storage, element_typed
            )
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
        return parse_int(children[0])[0]

    def event_declarator(self, meta: Any, children: list[Any]) -> tuple[Any, ...]:
        name, dims, ready = children
        return str(name), self._token_span(name), dims, ready is not None

    def shape_decl(self, meta: Any, children: list[Any]) -> ast.ShapeDecl:
        rank, name, value = children
        return ast.ShapeDecl(self._span(meta), str(name), self._token_span(name), value, rank)

    def mdspan_type(self, meta: Any, children: list[Any]) -> int | None:
        return parse_int(children[0])[0] if children[0] is not None else None

    def tuple_decl(self, meta: Any, children: list[Any]) -> ast.TupleDecl:
        size, name, value = children
        size_value = parse_int(size)[0] if size is not None else None
        return ast.TupleDecl(self._span(meta), str(name), self._token_span(name), value, size_value)

    # ------------------------------------------------------------ statements

    def block(self, meta: Any, children: list[Any]) -> ast.Block:
        return ast.Block(self._span(meta), tuple(_flatten(children)))

    def empty_stmt(self, meta: Any, children: list[Any]) -> ast.Empty:
        return ast.Empty(self._span(meta))

    def attributed(self, meta: Any, children: list[Any]) -> ast.Stmt:
        items, inner = children
        span = self._span(meta)
        inner_stmt = _as_statement(inner, span)
        attributes = tuple(filter(None, (self._attribute(item) for item in items)))
        if isinstance(inner_stmt, ast.Parallel):
            return replace(inner_stmt, attributes=(*attributes, *inner_stmt.attributes))
        kernel = [a.name for a in attributes if a.name in ("launch_bounds", "maxnreg")]
        if kernel:
            self.sink.error(
                f"[[{kernel[0]}]] applies to a kernel: write it on the line before its block-level 'parallel'",
                span,
            )
            return inner_stmt
        return ast.Unsupported(
            span, "attribute", inner_stmt, attributes
        )  # another statement's hint: left, with a warning

    def _attribute(self, expr: ast.Expr) -> ast.Attribute | None:
        """`name(args)` or `name` of an attribute list or a loop hint."""
        if isinstance(expr, ast.Call) and isinstance(expr.callee, ast.Name):
            return ast.Attribute(expr.span, expr.callee.id, expr.args)
        if isinstance(expr, ast.Name):
            return ast.Attribute(expr.span, expr.id)
        self.sink.error("an attribute is a name with its arguments, as in launch_bounds(256)", expr.span)
        return None

    def parallel(self, meta: Any, children: list[Any]) -> ast.Parallel:
        keyword, stream, *clauses, body = children
        body = _as_statement(body, self._span(meta))
        span = self._span(meta)
        for inner, target in self.device_parallels:  # the children are built: any inside lie in `span`
            if (span.line, span.column) < (inner.line, inner.column) and (
                inner.end_line,
                inner.end_column,
            ) <= (
                span.end_line,
                span.end_column,
            ):
                self.sink.error(
                    f"a device({target}) parallel places work on the host or the GPU: expected it at host "
                    "level (outside every parallel)",
                    inner,
                )
        return ast.Parallel(
            self._span(meta), str(keyword).endswith(".async"), tuple(clauses), body, stream=stream
        )

    def device_parallel(self, meta: Any, children: list[Any]) -> list[ast.Stmt]:
        """`parallel[.async] by 1 : device(cpu|gpu) { ... }`: Croqtile's heterogeneous target places the
        body on the host (`cpu`: host-level code) or on the GPU (`gpu`: its block-level parallels are
        the kernels). Both run the body once where it stands, in order, so the body takes the place of
        the statement: one semantics for the sim and CUDA (an `.async` one is done by the next
        `sync.global`, and running it there already is one of the orders the program allows)."""
        _, count, _, target, body = children
        if str(target) not in DEVICE_TARGETS:
            self.sink.error(
                f"unknown device target '{target}': expected device(cpu) or device(gpu)",
                self._token_span(target),
            )
        if not (isinstance(count, ast.IntLiteral) and count.value == 1):
            self.sink.error(
                f"a device({target}) parallel runs its body once: expected 'by 1' (the parallels inside it "
                "say how many run)",
                count.span,
            )
        self.device_parallels.append((self._span(meta), str(target)))
        statement = _as_statement(body, self._span(meta))
        return list(statement.body) if isinstance(statement, ast.Block) else [statement]

    def parallel_clause(self, meta: Any, children: list[Any]) -> ast.ParallelClause:
        variables, count, level, qualifier = children
        level_span = self._token_span(level) if level is not None else None
        cooperative = qualifier is not None and _qualifier(qualifier) == "cooperative"
        if qualifier is not None and not cooperative:
            self.sink.error(
                f"'{level}{qualifier}': a parallel level takes <cooperative> only",
                self._token_span(qualifier),
            )
        return ast.ParallelClause(
            self._span(meta),
            variables,
            count,
            str(level) if level is not None else None,
            level_span,
            cooperative,
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
        hint = self._attribute(suffix) if suffix is not None else None
        if head[0] == "in":
            return ast.Foreach(span, head[1], head[2], body, hint)
        return ast.ForeachRange(span, head[1], body, hint)

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

    def where_clause(self, meta: Any, children: list[Any]) -> tuple[tuple[ast.Name, ast.Name], ...]:
        names = [self._name(child) for child in children]
        return tuple(zip(names[::2], names[1::2]))

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
        config = next(
            (self._config(token, m) for m in rest if m.group(1) in CONFIGURED and m.group(2) is not None), ()
        )
        return ast.Operation(
            self._span(meta),
            family.group(1),
            tuple(m.group(1) for m in rest),
            template_args,
            args,
            destination,
            after or (),
            self._token_span(token),
            config,
        )

    def _config(self, token: Token, part: re.Match[str]) -> tuple[ast.Expr, ...]:
        """The expressions between the `<...>` of `dma.pad<{1, 1}, {0, 0}, {0, 0}, v>`, with spans in the
        user's source (the operation token holds them as text)."""
        assert token.line is not None and token.column is not None
        if not part.group(2).strip():
            return ()  # `dma.pad<>`: the analysis says what goes between the brackets
        shifted = _ShiftedMap(self.source_map, token.line, token.column + part.start(2) - 1)
        try:
            tree = _parser().parse(part.group(2), start="expr_list")
        except UnexpectedInput as error:
            self.sink.error(*describe_syntax_error(error, part.group(2), shifted, _terminals()))  # type: ignore[arg-type]
            return ()
        config: tuple[ast.Expr, ...] = _AstBuilder(shifted, self.sink).transform(tree)  # type: ignore[arg-type]
        return config

    def operands(self, meta: Any, children: list[Any]) -> tuple[tuple[ast.Expr, ...], ast.Expr | None]:
        args, _, destination = children
        return args, destination

    def after_clause(self, meta: Any, children: list[Any]) -> tuple[ast.Expr, ...]:
        return children[0]

    def wait_stmt(self, meta: Any, children: list[Any]) -> ast.Wait:
        return ast.Wait(self._span(meta), children[0])

    def trigger_stmt(self, meta: Any, children: list[Any]) -> ast.Trigger:
        keyword, targets, after = children
        return ast.Trigger(self._span(meta), targets, after or (), str(keyword).endswith(".cluster"))

    def sync_stmt(self, meta: Any, children: list[Any]) -> ast.Stmt:
        keyword, level, qualifier = children
        span = self._span(meta)
        kind = str(keyword).split(".", 1)[1]
        storage = _qualifier(qualifier) if qualifier is not None else None
        if kind == "barrier" and level is not None and storage is None:
            return ast.Barrier(span, str(level), self._token_span(level))
        if kind == "fence" and level is not None and storage != "cooperative":
            return ast.Fence(span, str(level), storage)
        if kind in ("barrier", "fence"):
            self.sink.error(
                f"'sync.{kind}' names the level it applies to: 'sync.{kind} : block;'"
                + (" (a fence takes <shared> or <global>)" if kind == "fence" else ""),
                span,
            )
            return ast.Empty(span)
        if level is not None or qualifier is not None:
            self.sink.error(f"'sync.{kind}' takes no level", span)
        return ast.Sync(span, kind)

    def assign_stmt(self, meta: Any, children: list[Any]) -> ast.Stmt:
        target, op, value = children
        span = self._span(meta)
        while isinstance(target, ast.Paren):  # `(r) = e` stores to r, as in C: every pass sees the lvalue
            target = target.inner
        if isinstance(value, ast.Operation):
            if str(op) != "=" or not isinstance(target, ast.Name):
                self.sink.error(
                    f"the future of '{value.text}' can only be named with '=' and a plain name", target.span
                )
            return ast.OperationStmt(span, value, target if isinstance(target, ast.Name) else None)
        return ast.Assign(span, target, str(op), value)

    def expr_stmt(self, meta: Any, children: list[Any]) -> ast.Stmt:
        expr = children[0]
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.callee, ast.Name)
            and expr.callee.id in ast.FRAGMENT_OPS
        ):
            return ast.FragmentOp(self._span(meta), expr.callee.id, expr.callee.span, expr.args)
        return ast.ExprStmt(self._span(meta), expr)

    def apply_stmt(self, meta: Any, children: list[Any]) -> ast.Apply:
        variables, target, body = children
        span = self._span(meta)
        return ast.Apply(span, variables, target, _as_statement(body, span))

    def return_stmt(self, meta: Any, children: list[Any]) -> ast.Return:
        return ast.Return(self._span(meta), children[0])

    def break_stmt(self, meta: Any, children: list[Any]) -> ast.Break:
        return ast.Break(self._span(meta))

    def continue_stmt(self, meta: Any, children: list[Any]) -> ast.Continue:
        return ast.Continue(self._span(meta))

    def print_stmt(self, meta: Any, children: list[Any]) -> ast.Print:
        keyword, args = children
        word = str(keyword)
        return ast.Print(self._span(meta), args or (), word.rstrip("!") == "println", word.endswith("!"))

    def named_barrier_stmt(self, meta: Any, children: list[Any]) -> ast.NamedBarrier:
        keyword, barrier, count = children
        return ast.NamedBarrier(self._span(meta), str(keyword) == "__bar_sync", barrier, count)

    def yield_stmt(self, meta: Any, children: list[Any]) -> ast.Yield:
        return ast.Yield(self._span(meta))

    def assert_stmt(self, meta: Any, children: list[Any]) -> ast.Assert:
        condition, *strings = children
        return ast.Assert(self._span(meta), condition, "".join(_unescape(str(s)[1:-1]) for s in strings))

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

    def foreign_cast(self, meta: Any, children: list[Any]) -> ast.ForeignCast:
        c_type, operand = children
        return ast.ForeignCast(self._span(meta), _unescape(str(c_type)[1:-1]), operand)

    def member(self, meta: Any, children: list[Any]) -> ast.Member:
        value, name = children
        return ast.Member(self._span(meta), value, str(name), self._token_span(name))

    def method(self, meta: Any, children: list[Any]) -> ast.Method:
        value, name, args = children
        return ast.Method(self._span(meta), value, str(name), self._token_span(name), args or ())

    def strided_method(self, meta: Any, children: list[Any]) -> ast.Method:
        value, name, args, strides = children
        return ast.Method(self._span(meta), value, str(name), self._token_span(name), args, strides)

    def call(self, meta: Any, children: list[Any]) -> ast.Call:
        callee, args = children
        return ast.Call(self._span(meta), callee, args or ())

    def index(self, meta: Any, children: list[Any]) -> ast.Index:
        value, indices = children
        return ast.Index(self._span(meta), value, indices)

    def name(self, meta: Any, children: list[Any]) -> ast.Name | ast.FloatLiteral:
        if children[0] == "inf":  # `-inf` is the negation of this float infinity
            return ast.FloatLiteral(self._span(meta), math.inf, True)
        return self._name(children[0])

    def int_literal(self, meta: Any, children: list[Any]) -> ast.IntLiteral:
        value, unsigned = parse_int(children[0])
        text = str(children[0])
        long = "ll" in text.lower()
        return ast.IntLiteral(self._span(meta), value, unsigned, long, text)

    def float_literal(self, meta: Any, children: list[Any]) -> ast.FloatLiteral:
        text = str(children[0])
        single = text[-1] in "fF"
        return ast.FloatLiteral(self._span(meta), float(text.rstrip("fF")), single)

    def true_literal(self, meta: Any, children: list[Any]) -> ast.BoolLiteral:
        return ast.BoolLiteral(self._span(meta), True)

    def false_literal(self, meta: Any, children: list[Any]) -> ast.BoolLiteral:
        return ast.BoolLiteral(self._span(meta), False)

    def string_literal(self, meta: Any, children: list[Any]) -> ast.StringLiteral:
        text = "".join(_unescape(str(c)[1:-1]) for c in children)
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

    # ------------------------------------------------- device code: call, inline assembly

    def device_call(self, meta: Any, children: list[Any]) -> ast.DeviceCall:
        (callee, callee_span), template_args, args = children
        return ast.DeviceCall(self._span(meta), callee, callee_span, template_args, args or ())

    def qualified_name(self, meta: Any, children: list[Any]) -> tuple[str, Span]:
        return "::".join(map(str, children)), self._span(meta)

    def template_args(self, meta: Any, children: list[Any]) -> tuple[ast.TemplateArg, ...]:
        opening, *items, closing = children
        if str(opening) != "<" or str(closing) != ">":
            wrong = opening if str(opening) != "<" else closing
            self.sink.error(
                f"syntax error: template arguments are written between '<' and '>', found '{wrong}'",
                self._token_span(wrong),
            )
        return tuple(
            item if isinstance(item, ast.TemplateArg) else ast.TemplateArg(item.span, expr=item)
            for item in items
            if item is not None
        )

    def template_type(self, meta: Any, children: list[Any]) -> ast.TemplateArg:
        return ast.TemplateArg(self._span(meta), text=str(children[0]), is_type=True)

    def template_name(self, meta: Any, children: list[Any]) -> ast.TemplateArg:
        return ast.TemplateArg(self._span(meta), text="::".join(map(str, children)))

    def asm_stmt(self, meta: Any, children: list[Any]) -> ast.Asm:
        _, qualifier, *rest = children
        span = self._span(meta)
        template = "".join(str(item)[1:-1] for item in rest if isinstance(item, Token))
        sections: list[list[Any]] = [item for item in rest if isinstance(item, list)]
        if qualifier is not None and str(qualifier) == "goto":
            self.sink.error(_ASM_GOTO, self._token_span(qualifier))
            sections = sections[:3]  # the fourth lists its labels
        elif len(sections) > 3:
            self.sink.error(
                "invalid __asm__ syntax: expected at most three ':' sections after the template "
                "(outputs : inputs : clobbers)",
                span,
            )
        outputs, inputs, clobbers = [*sections, [], [], []][:3]
        return ast.Asm(
            span,
            template,
            qualifier is not None and str(qualifier) == "volatile",
            self._asm_operands(outputs, "an output"),
            self._asm_operands(inputs, "an input"),
            self._asm_clobbers(clobbers),
        )

    def _asm_operands(self, items: list[Any], what: str) -> tuple[ast.AsmOperand, ...]:
        for item in items:
            if isinstance(item, _AsmWord):
                self.sink.error(
                    f'invalid __asm__ syntax: {what} operand is written "constraint"(expression)', item.span
                )
        return tuple(item for item in items if isinstance(item, ast.AsmOperand))

    def _asm_clobbers(self, items: list[Any]) -> tuple[str, ...]:
        for item in items:
            if not isinstance(item, _AsmWord) or not item.quoted:
                self.sink.error(
                    'invalid __asm__ syntax: the clobbers are strings such as "memory"', item.span
                )
        return tuple(item.text for item in items if isinstance(item, _AsmWord) and item.quoted)

    def asm_section(self, meta: Any, children: list[Any]) -> list[Any]:
        return [child for child in children if child is not None]

    def asm_operand(self, meta: Any, children: list[Any]) -> ast.AsmOperand | _AsmWord:
        name, constraint, expr = children
        text = str(constraint)[1:-1]
        if expr is None:
            return _AsmWord(text, self._span(meta), quoted=name is None)
        return ast.AsmOperand(self._span(meta), text, expr, str(name) if name is not None else None)

    def asm_label(self, meta: Any, children: list[Any]) -> _AsmWord:
        return _AsmWord(str(children[0]), self._span(meta), quoted=False)


def _qualifier(token: Token) -> str:
    """`cooperative` of the token `<cooperative>`."""
    return str(token).strip("<> \t")


def _unescape(text: str) -> str:
    """A string literal's characters: C's escapes `\\n`, `\\t`, `\\"` and `\\\\` as what they stand for."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


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
