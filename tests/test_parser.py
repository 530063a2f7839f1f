"""The parser: every corpus program parses, syntax errors say what was expected where,
host code around `__co__` functions is skipped, and the AST has the shape the analysis
relies on (language.md sections 1-10)."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus import CONFORMANCE

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.diagnostics import Diagnostic, DiagnosticSink
from choreo_kernel.compiler.parser import parse
from choreo_kernel.compiler.preprocess import SourceMap, preprocess

SYNTAX_FILES = {"syntax_missing_operand.co", "syntax_unclosed_bracket.co", "syntax_wait_missing_comma.co"}
CORPUS_FILES = sorted(CONFORMANCE.glob("*/*.co"))
RULES_FILES = sorted((Path(__file__).parent / "rules").glob("*.co"))


def parse_source(source: str, host_code: bool = True) -> tuple[ast.Program, list[Diagnostic]]:
    sink = DiagnosticSink()
    pp = preprocess(source, sink)
    program = parse(pp.text, pp.source_map, sink, host_code=host_code)
    return program, sink.diagnostics


def parse_ok(source: str, host_code: bool = True) -> ast.Program:
    program, diagnostics = parse_source(source, host_code)
    assert not diagnostics, [str(d) for d in diagnostics]
    return program


def body_of(statements: str, params: str = "f32 [M, N] x") -> tuple[ast.Stmt, ...]:
    """The statements of a one-function program whose body is `statements`."""
    program = parse_ok(f"__co__ void f({params}) {{\n{statements}\n}}\n")
    return program.functions[0].body.body


def one(statement: str, params: str = "f32 [M, N] x") -> ast.Stmt:
    statements = body_of(statement, params)
    assert len(statements) == 1, statements
    return statements[0]


def expr(text: str) -> ast.Expr:
    """The right-hand side of `probe = TEXT;`."""
    statement = one(f"probe = {text};")
    assert isinstance(statement, ast.Assign)
    return statement.value


def syntax_error(source: str) -> Diagnostic:
    program, diagnostics = parse_source(source)
    assert diagnostics, "expected a syntax error"
    assert program.functions == () or len(diagnostics) >= 1
    return diagnostics[0]


# --------------------------------------------------------------------- the corpus


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_conformance_file_parses(path: Path) -> None:
    program, diagnostics = parse_source(path.read_text(encoding="utf-8"))
    if path.name in SYNTAX_FILES:
        assert len(diagnostics) == 1, [str(d) for d in diagnostics]
        return
    assert not diagnostics, [str(d) for d in diagnostics]
    assert program.functions
    for function in program.functions:
        assert function.span.line >= 1


@pytest.mark.parametrize(
    ("name", "line", "column", "found"),
    [
        ("syntax_missing_operand.co", 9, 63, ";"),
        ("syntax_unclosed_bracket.co", 7, 40, ":"),
        ("syntax_wait_missing_comma.co", 12, 13, "fb"),
    ],
)
def test_conformance_syntax_error_position(name: str, line: int, column: int, found: str) -> None:
    source = (CONFORMANCE / "invalid" / name).read_text(encoding="utf-8")
    error = syntax_error(source)
    assert error.severity == "error"
    assert (error.line, error.column) == (line, column)
    assert "expected" in error.message
    assert f"'{found}'" in error.message
    assert source.splitlines()[line - 1][column - 1 :].startswith(found)


def test_corpus_is_there() -> None:
    assert len(CORPUS_FILES) >= 70
    assert SYNTAX_FILES <= {p.name for p in CORPUS_FILES}
    assert len(RULES_FILES) >= 60


# ------------------------------------------------------------------ syntax errors


SYNTAX_CASES = [
    # (source, line, column, text at the error, words the message must contain)
    ("__co__ void f(f32 [4] x) {\n  if (x.at(0) > 0.0f {\n  }\n}\n", 2, 22, "{", ["expected", "')'"]),
    ("__co__ void f(f32 [4] x) {\n  parallel t by : block { }\n}\n", 2, 17, ":", ["expected", "expression"]),
    (
        "__co__ void f(f32 [4] x) {\n  parallel b by 1 : block {\n    shared event e;\n    trigger e after ;\n  }\n}\n",
        4,
        21,
        ";",
        ["expected"],
    ),
    ("__co__ void f(f32 [4] x) {\n  f32 [4 y;\n}\n", 2, 10, "y", ["expected", "']'"]),
    ("__co__ void f(f32 [4] x) {\n  x.at(0) = (1 + 2;\n}\n", 2, 19, ";", ["expected", "')'"]),
    ("__co__ void f(f32 [4] x) {\n  foreach k in [4 { }\n}\n", 2, 19, "{", ["expected", "']'"]),
    ("__co__ void f(f32 [4] x) {\n  parallel b by 2 : blok { }\n}\n", 2, 21, "blok", ["expected", "level"]),
    ("__co__ f32 [4] (f32 [4] x) { return x; }\n", 1, 16, "(", ["expected", "name"]),
]


@pytest.mark.parametrize(("source", "line", "column", "at", "words"), SYNTAX_CASES)
def test_syntax_error_says_what_was_expected_where(
    source: str, line: int, column: int, at: str, words: list[str]
) -> None:
    error = syntax_error(source)
    assert error.severity == "error"
    assert (error.line, error.column) == (line, column), str(error)
    assert source.splitlines()[line - 1][column - 1 :].startswith(at)
    for word in words:
        assert word in error.message, error.message
    assert error.end_line == line
    assert error.end_column > error.column


def test_a_missing_semicolon_is_reported_after_the_previous_token() -> None:
    """As rustc does: the caret just after `3` (where the `;` goes), a note at the token that showed it."""
    error = syntax_error("__co__ void f(f32 [4] x) {\n  int a = 3  // three\n\n  int b = 4;\n}\n")
    assert "expected" in error.message and "';'" in error.message and "found 'int'" in error.message
    assert (error.line, error.column, error.end_line, error.end_column) == (2, 12, 2, 13)
    (note,) = error.notes
    assert note.span is not None and (note.span.line, note.span.column) == (4, 3)
    # On one line the unexpected token itself is the place to point at.
    same_line = syntax_error("__co__ void f(f32 [4] x) {\n  int a = 3 int b = 4;\n}\n")
    assert (same_line.line, same_line.column) == (2, 13) and not same_line.notes


def test_unexpected_character_is_located() -> None:
    error = syntax_error("__co__ void f(f32 [4] x) {\n  int a = 2 @ 3;\n}\n")
    assert (error.line, error.column) == (2, 13)
    assert "'@'" in error.message


def test_missing_closing_brace_at_end_of_input() -> None:
    error = syntax_error("__co__ void f(f32 [4] x) {\n  parallel t by 4 {\n    x.at(t) = 1.0f;\n")
    assert "expected" in error.message
    assert "end of the input" in error.message
    assert error.line >= 3


def test_syntax_error_in_one_function_keeps_the_others() -> None:
    source = (
        "__co__ void good(f32 [4] x) {\n  parallel t by 4 { x.at(t) = 1.0f; }\n}\n"
        "__co__ void bad(f32 [4] x) {\n  x.at(0) = * 2;\n}\n"
        "__co__ void also_good(f32 [4] x) {\n  return;\n}\n"
    )
    program, diagnostics = parse_source(source)
    assert [f.name for f in program.functions] == ["good", "also_good"]
    assert [(d.line, d.column) for d in diagnostics] == [(5, 13)]


def test_syntax_error_after_host_code_keeps_its_line() -> None:
    source = '#include <cstdio>\nint main() {\n  printf("{");\n  return 0;\n}\n__co__ void f(f32 [4] x) {\n  wait a b;\n}\n'
    error = syntax_error(source)
    assert (error.line, error.column) == (7, 10)


# --------------------------------------------------------------------- host code


CO_FUNCTION = "__co__ f32 [4] scale(f32 [4] x) {\n  f32 [4] y;\n  parallel t by 4\n    y.at(t) = x.at(t) * 2.0f;\n  return y;\n}\n"


def test_host_code_around_functions_is_skipped() -> None:
    source = (
        "#include <cstdio>\n"
        '#include "choreo.h"\n'
        "namespace util { int twice(int v) { return 2 * v; } }\n"
        'static const char* kText = "not { balanced";\n'
        "static const char kOpen = '{';\n"
        "static const char kQuote = '\\'';\n"
        + CO_FUNCTION
        + "template <typename T> struct Box { T v[4]; };\n"
        "int main(int argc, char** argv) {\n"
        '  auto f = [&](int n) { if (n) { std::printf("}}} %d\\n", n); } };\n'
        "  char c = '}';\n"
        "  f(util::twice(argc)); // a comment with { braces\n"
        "  /* and } here */\n"
        "  return c == '{';\n"
        "}\n" + CO_FUNCTION.replace("scale", "scale_again")
    )
    program = parse_ok(source)
    assert [f.name for f in program.functions] == ["scale", "scale_again"]
    assert program.functions[0].name_span.line == 7
    second = source.splitlines().index("__co__ f32 [4] scale_again(f32 [4] x) {") + 1
    assert program.functions[1].span.line == second


def test_cok_block_is_host_code() -> None:
    source = (
        "__cok__ {\n"
        "  __device__ float relu(float v) { return v > 0.0f ? v : 0.0f; }\n"
        "  __device__ int brace() { return '{'; }\n"
        "}\n" + CO_FUNCTION
    )
    program = parse_ok(source)
    assert [f.name for f in program.functions] == ["scale"]


def test_co_keyword_inside_a_host_string_is_not_a_function() -> None:
    program = parse_ok('const char* s = "__co__ void fake() {";\n' + CO_FUNCTION)
    assert [f.name for f in program.functions] == ["scale"]


def test_host_code_false_rejects_stray_text() -> None:
    program, diagnostics = parse_source("int main() { return 0; }\n" + CO_FUNCTION, host_code=False)
    assert len(diagnostics) == 1
    assert (diagnostics[0].line, diagnostics[0].column) == (1, 1)
    assert diagnostics[0].severity == "error"
    assert [f.name for f in program.functions] == ["scale"]


def test_host_code_false_rejects_text_between_functions() -> None:
    source = CO_FUNCTION + "\n  stray_token;\n" + CO_FUNCTION.replace("scale", "other")
    _, diagnostics = parse_source(source, host_code=False)
    line = source.splitlines().index("  stray_token;") + 1
    assert [(d.line, d.column) for d in diagnostics] == [(line, 3)]


def test_host_code_false_accepts_preprocessor_lines_and_comments() -> None:
    source = (
        "#define N 4\n// a comment\n/* another\n one */\n#pragma once\n" + CO_FUNCTION + "\n// trailing\n"
    )
    program = parse_ok(source, host_code=False)
    assert [f.name for f in program.functions] == ["scale"]


def test_empty_source_has_no_functions() -> None:
    assert parse_ok("").functions == ()
    assert parse_ok("// only a comment\n").functions == ()


# ------------------------------------------------------------------- functions


def test_function_signature() -> None:
    program = parse_ok(
        "__co__ f16 [M, N] g(f16 [M, K] a, global f32 [?, 8] out, int n, float alpha, f16 bias) { return a; }"
    )
    function = program.functions[0]
    assert function.name == "g"
    assert function.return_type.name == "f16"
    assert len(function.return_type.shape) == 2
    names = [p.name for p in function.params]
    assert names == ["a", "out", "n", "alpha", "bias"]
    assert [p.is_global for p in function.params] == [False, True, False, False, False]
    assert [p.type.name for p in function.params] == ["f16", "f32", "s32", "f32", "f16"]
    assert isinstance(function.params[1].type.shape[0], ast.AnyDim)
    assert function.params[2].type.shape is None
    assert (function.name_span.line, function.name_span.column) == (1, 19)


@pytest.mark.parametrize("ret", ["void", "auto"])
def test_void_and_auto_returns(ret: str) -> None:
    program = parse_ok(f"__co__ {ret} h(f32 [4] x) {{ return; }}")
    assert program.functions[0].return_type.name == ret


# --------------------------------------------------------------- declarations


def test_buffer_declarations() -> None:
    statements = body_of(
        "f32 [M, N] out {0};\nshared f16 [128, 64] stage[3];\nlocal f32 [8] acc {0.0f};\nf32 [x.span] copy_of_x;"
    )
    out, stage, acc, copy = statements
    assert isinstance(out, ast.BufferDecl)
    assert (out.storage, out.elem_type, out.name) == (None, "f32", "out")
    assert out.init is not None and len(out.init) == 1
    assert isinstance(stage, ast.BufferDecl)
    assert (stage.storage, stage.elem_type, stage.name) == ("shared", "f16", "stage")
    assert len(stage.shape) == 2
    assert [d.value for d in stage.array_dims] == [3]
    assert stage.init is None
    assert isinstance(acc, ast.BufferDecl) and acc.storage == "local"
    assert isinstance(copy, ast.BufferDecl)
    assert isinstance(copy.shape[0], ast.Member) and copy.shape[0].name == "span"


def test_event_declarators_each_get_their_own_initializer() -> None:
    """language.md 8: `= ready` belongs to the declarator it follows."""
    statements = body_of(
        "shared event full[2], empty[2] = ready;\nshared event<2> done;\nshared event grid[1][2];"
    )
    full, empty, done, grid = statements
    assert all(isinstance(s, ast.EventDecl) for s in statements)
    assert (full.name, full.ready, [d.value for d in full.dims]) == ("full", False, [2])
    assert (empty.name, empty.ready, [d.value for d in empty.dims]) == ("empty", True, [2])
    assert (done.name, done.arrival_count, done.dims) == ("done", 2, ())
    assert [d.value for d in grid.dims] == [1, 2]
    assert full.storage == empty.storage == "shared"
    assert (empty.name_span.line, empty.name_span.column) == (2, len("shared event full[2], ") + 1)


def test_scalar_declarations() -> None:
    statements = body_of(
        "int a = 3;\nmutable int k = 0;\nmutable f32 s = 0.0f;\nbool flag = true;\nx2 = 5;\nf16 h = 1.0;"
    )
    a, k, s, flag, x2, h = statements
    assert isinstance(a, ast.ScalarDecl) and (a.mutable, a.type_name, a.name) == (False, "s32", "a")
    assert isinstance(k, ast.ScalarDecl) and (k.mutable, k.type_name) == (True, "s32")
    assert isinstance(s, ast.ScalarDecl) and (s.mutable, s.type_name) == (True, "f32")
    assert isinstance(flag, ast.ScalarDecl) and isinstance(flag.init, ast.BoolLiteral) and flag.init.value
    assert isinstance(x2, ast.Assign) and isinstance(x2.target, ast.Name) and x2.op == "="
    assert isinstance(h, ast.ScalarDecl) and h.type_name == "f16"


def test_shape_and_tuple_declarations() -> None:
    statements = body_of("s : [4, 8];\nmdspan<2> t : [M, N];\nhalved : s / {2, 4};\nituple<3> g = {1, 2, 3};")
    s, t, halved, g = statements
    assert isinstance(s, ast.ShapeDecl) and s.name == "s" and s.rank is None
    assert isinstance(s.value, ast.ListLiteral) and [i.value for i in s.value.items] == [4, 8]
    assert isinstance(t, ast.ShapeDecl) and t.rank == 2
    assert isinstance(halved, ast.ShapeDecl) and isinstance(halved.value, ast.Binary)
    assert isinstance(halved.value.right, ast.TupleLiteral)
    assert isinstance(g, ast.TupleDecl) and g.size == 3 and len(g.value.items) == 3


# ----------------------------------------------------------------- parallelism


def test_parallel_with_braced_variables_and_level() -> None:
    statement = one("parallel {bm, bn} by [M / 128, N / 128] : block { }")
    assert isinstance(statement, ast.Parallel)
    assert not statement.is_async
    assert len(statement.clauses) == 1
    clause = statement.clauses[0]
    assert [n.id for n in clause.variables.names] == ["bm", "bn"]
    assert clause.variables.braced
    assert clause.level == "block"
    assert isinstance(clause.count, ast.ListLiteral) and len(clause.count.items) == 2
    assert clause.level_span is not None and clause.level_span.column == clause.span.end_column - len("block")


def test_parallel_with_several_clauses() -> None:
    statement = one("parallel.async b by 132 : block, wg by 3 : group-4, t by 128 : thread { }")
    assert isinstance(statement, ast.Parallel) and statement.is_async
    assert [c.level for c in statement.clauses] == ["block", "group-4", "thread"]
    assert [c.variables.names[0].id for c in statement.clauses] == ["b", "wg", "t"]
    assert [c.count.value for c in statement.clauses] == [132, 3, 128]


def test_parallel_without_level_and_braceless_body() -> None:
    statement = one("parallel p by 8\n  x.at(p, 0) = 1.0f;")
    assert isinstance(statement, ast.Parallel)
    assert statement.clauses[0].level is None
    assert isinstance(statement.body, ast.Assign)


def test_braceless_nest_of_parallel_and_foreach() -> None:
    statement = one(
        "parallel b by 2 : block\n  parallel t by 32 : thread\n    foreach k in [4]\n      x.at(b, t) += 1.0f;"
    )
    assert isinstance(statement, ast.Parallel)
    inner = statement.body
    assert isinstance(inner, ast.Parallel) and inner.clauses[0].level == "thread"
    loop = inner.body
    assert isinstance(loop, ast.Foreach)
    assert isinstance(loop.body, ast.Assign) and loop.body.op == "+="


def test_inthreads() -> None:
    plain, asynchronous = body_of("inthreads (t < 64) { }\ninthreads.async (wg == 0) { }")
    assert isinstance(plain, ast.InThreads) and not plain.is_async
    assert isinstance(asynchronous, ast.InThreads) and asynchronous.is_async
    assert isinstance(asynchronous.condition, ast.Binary) and asynchronous.condition.op == "=="


def test_sync_statement() -> None:
    statement = one("sync.shared;")
    assert isinstance(statement, ast.Sync) and statement.kind == "shared"


# -------------------------------------------------------------------- loops, control


def test_foreach_forms() -> None:
    simple, pair, braced = body_of(
        "foreach k in [cdiv(K, 64)] { }\nforeach {i, j} in [4, 8] { }\nforeach {order} in [T] { }"
    )
    assert isinstance(simple, ast.Foreach) and [n.id for n in simple.variables.names] == ["k"]
    assert isinstance(simple.extent, ast.ListLiteral) and isinstance(simple.extent.items[0], ast.Call)
    assert isinstance(pair, ast.Foreach) and [n.id for n in pair.variables.names] == ["i", "j"]
    assert isinstance(braced, ast.Foreach) and braced.variables.braced


def test_with_and_ranges() -> None:
    statement = one(
        "with j in 16 {\n  foreach j { }\n  foreach j(1:) { }\n  foreach j(1:-1:2) { }\n  foreach j(2::4) { }\n}"
    )
    assert isinstance(statement, ast.With)
    assert [n.id for n in statement.bindings[0].variables.names] == ["j"]
    whole, start, sliced, stepped = statement.body.body
    for loop in (whole, start, sliced, stepped):
        assert isinstance(loop, ast.ForeachRange)
    assert not whole.items[0].sliced
    assert start.items[0].sliced and start.items[0].start.value == 1 and start.items[0].stop is None
    item = sliced.items[0]
    assert item.start.value == 1 and isinstance(item.stop, ast.Unary) and item.step.value == 2
    assert (
        stepped.items[0].start.value == 2
        and stepped.items[0].stop is None
        and stepped.items[0].step.value == 4
    )


def test_else_if_chain() -> None:
    statement = one("if (a > 0) { }\nelse if (a < 0)\n  b = 1;\nelse { }")
    assert isinstance(statement, ast.If)
    assert isinstance(statement.otherwise, ast.If)
    assert isinstance(statement.otherwise.then, ast.Assign)
    assert isinstance(statement.otherwise.otherwise, ast.Block)


def test_while_break_continue_return() -> None:
    loop, result = body_of("while (k < 10) {\n  k++;\n  if (k == 3) continue;\n  break;\n}\nreturn x;")
    assert isinstance(loop, ast.While)
    step, test, stop = loop.body.body
    assert isinstance(step, ast.ExprStmt) and isinstance(step.expr, ast.IncDec) and not step.expr.prefix
    assert isinstance(test, ast.If) and isinstance(test.then, ast.Continue)
    assert isinstance(stop, ast.Break)
    assert isinstance(result, ast.Return) and isinstance(result.value, ast.Name)


# ------------------------------------------------------------------ operations


def test_tma_load_with_swizzle_and_future() -> None:
    statement = one("f = tma.load.async.swiz<128> a => b;")
    assert isinstance(statement, ast.OperationStmt)
    assert statement.result is not None and statement.result.id == "f"
    op = statement.operation
    assert op.family == "tma"
    assert op.qualifiers == ("load", "async", "swiz")
    assert op.template_args == {"swiz": "128"}
    assert op.is_async and op.text == "tma.load.async.swiz"
    assert [a.id for a in op.args] == ["a"]
    assert isinstance(op.destination, ast.Name) and op.destination.id == "b"
    assert op.after == ()
    assert (op.op_span.line, op.op_span.column) == (2, 5)


def test_dma_copy_with_after_and_views() -> None:
    statement = one("g = dma.copy.async out_s => out.chunkat(i, j) after f, h;")
    op = statement.operation
    assert (op.family, op.qualifiers) == ("dma", ("copy", "async"))
    assert isinstance(op.destination, ast.Method) and op.destination.name == "chunkat"
    assert [a.id for a in op.after] == ["f", "h"]


def test_copy_to_storage_keyword_and_buffer_slot() -> None:
    to_shared, to_slot = body_of(
        "f = dma.copy.async a.chunkat(i, k) => shared;\ntma.copy out_s => out.subspan(128, 128).at(bm, bn);"
    )
    assert (
        isinstance(to_shared.operation.destination, ast.Name)
        and to_shared.operation.destination.id == "shared"
    )
    assert to_slot.result is None and not to_slot.operation.is_async


def test_mma_operations() -> None:
    fill, row, load, store, refill, placeholder = body_of(
        "mc = mma.fill.f32 0.0f;\n"
        "qk = mma.row.col.async mc, a_tile, b_tile;\n"
        "ma = mma.load.swiz<64> lhs_s.chunkat(_, kk);\n"
        "mma.store mc, out_s;\n"
        "mma.fill mc, 0.0f;\n"
        "nxt = dma.any;"
    )
    assert (fill.operation.qualifiers, fill.result.id) == (("fill", "f32"), "mc")
    assert isinstance(fill.operation.args[0], ast.FloatLiteral) and fill.operation.args[0].single
    assert row.operation.qualifiers == ("row", "col", "async") and len(row.operation.args) == 3
    assert load.operation.template_args == {"swiz": "64"}
    assert isinstance(load.operation.args[0], ast.Method)
    assert isinstance(load.operation.args[0].args[0], ast.Name) and load.operation.args[0].args[0].id == "_"
    assert store.result is None and len(store.operation.args) == 2
    assert refill.operation.qualifiers == ("fill",) and len(refill.operation.args) == 2
    assert placeholder.operation.family == "dma" and placeholder.operation.qualifiers == ("any",)
    assert placeholder.operation.args == ()


def test_wait_and_trigger() -> None:
    wait, direct, bound, ring = body_of(
        "wait lhs_load, rhs_load;\ntrigger empty0, empty1;\ntrigger full after la, ra;\ntrigger full.at(order++) after ld;"
    )
    assert isinstance(wait, ast.Wait) and [t.id for t in wait.targets] == ["lhs_load", "rhs_load"]
    assert isinstance(direct, ast.Trigger) and len(direct.targets) == 2 and direct.after == ()
    assert [a.id for a in bound.after] == ["la", "ra"]
    target = ring.targets[0]
    assert isinstance(target, ast.Method) and target.name == "at"
    assert isinstance(target.args[0], ast.IncDec) and not target.args[0].prefix


def test_swap_is_a_call_statement() -> None:
    statement = one("swap(cur, nxt);")
    assert isinstance(statement, ast.ExprStmt) and isinstance(statement.expr, ast.Call)
    assert statement.expr.callee.id == "swap" and len(statement.expr.args) == 2


def test_naming_a_future_needs_a_plain_name() -> None:
    _, diagnostics = parse_source("__co__ void f(f32 [4] x) {\n  x.at(0) = dma.copy.async x => shared;\n}\n")
    assert len(diagnostics) == 1 and diagnostics[0].line == 2


# ------------------------------------------------------------------- expressions


def test_compose_binds_tighter_than_multiplication_and_is_left_associative() -> None:
    """language.md 12.7."""
    value = expr("a # b * 2")
    assert isinstance(value, ast.Binary) and value.op == "*"
    assert isinstance(value.left, ast.Binary) and value.left.op == "#"
    chain = expr("b # w # l")
    assert chain.op == "#" and isinstance(chain.left, ast.Binary) and chain.left.op == "#"
    assert chain.right.id == "l"


def test_bound_of_a_bounded_value() -> None:
    value = expr("#x + 1")
    assert isinstance(value, ast.Binary) and isinstance(value.left, ast.Unary) and value.left.op == "#"


def test_c_precedence() -> None:
    value = expr("a + b * c << 1 & 3 | 4 ^ 5 && d || e")
    assert value.op == "||"
    assert value.left.op == "&&"
    assert value.left.left.op == "|"
    comparison = expr("a < b == c > d")
    assert comparison.op == "=="


def test_ternary_is_right_associative() -> None:
    value = expr("(c > 0) ? 1 : d ? 2 : 3")
    assert isinstance(value, ast.Ternary)
    assert isinstance(value.condition, ast.Paren)
    assert isinstance(value.otherwise, ast.Ternary)


def test_unary_operators() -> None:
    value = expr("-x.at(i) + !b + ~c")
    negation = value.left.left
    assert isinstance(negation, ast.Unary) and negation.op == "-"
    assert isinstance(negation.operand, ast.Method)


def test_increments() -> None:
    pre, post, pre_dec, compound = body_of("++k;\nk++;\n--k;\nk <<= 2;")
    assert pre.expr.prefix and pre.expr.op == "++"
    assert not post.expr.prefix
    assert pre_dec.expr.op == "--"
    assert isinstance(compound, ast.Assign) and compound.op == "<<="


@pytest.mark.parametrize(
    ("text", "value", "unsigned"),
    [("42", 42, False), ("0x2a", 42, False), ("42u", 42, True), ("0XFFu", 255, True), ("7UL", 7, True)],
)
def test_integer_literals(text: str, value: int, unsigned: bool) -> None:
    literal = expr(text)
    assert isinstance(literal, ast.IntLiteral)
    assert (literal.value, literal.unsigned) == (value, unsigned)


@pytest.mark.parametrize(
    ("text", "value", "single"),
    [
        ("1.5", 1.5, False),
        ("1.5f", 1.5, True),
        ("1e-3f", 1e-3, True),
        ("2.5E2", 250.0, False),
        (".5f", 0.5, True),
        ("3f", 3.0, True),
    ],
)
def test_float_literals(text: str, value: float, single: bool) -> None:
    literal = expr(text)
    assert isinstance(literal, ast.FloatLiteral)
    assert literal.value == pytest.approx(value)
    assert literal.single == single


def test_booleans() -> None:
    assert expr("true").value is True
    assert expr("false").value is False


def test_builtin_calls() -> None:
    value = expr("__max(a, __exp(b)) + cdiv(M, 64)")
    call = value.left
    assert isinstance(call, ast.Call) and call.callee.id == "__max"
    assert isinstance(call.args[1], ast.Call) and call.args[1].callee.id == "__exp"
    assert value.right.callee.id == "cdiv"


def test_views_chain() -> None:
    value = expr("a.subspan(16, 16).step(8, 8).at(i, j).at(r, c)")
    names = []
    node = value
    while isinstance(node, ast.Method):
        names.append(node.name)
        node = node.value
    assert names == ["at", "at", "step", "subspan"]
    assert node.id == "a"
    window = expr("x.view(16, 16).from(bi * 16, 0)")
    assert window.name == "from" and window.value.name == "view"


def test_span_members_and_counts() -> None:
    dim = expr("x.span(0)")
    assert isinstance(dim, ast.Method) and dim.name == "span" and dim.args[0].value == 0
    count = expr("|x.span| / 3")
    assert isinstance(count.left, ast.ElementCount)
    assert isinstance(count.left.operand, ast.Member) and count.left.operand.name == "span"
    size = expr("|f32|")
    assert isinstance(size, ast.TypeSize) and size.type_name == "f32"
    data = expr("f.data.at(t)")
    assert data.value.name == "data" and isinstance(data.value, ast.Member)


def test_index_and_slot() -> None:
    value = expr("stage[slot % 2].at(t)")
    assert isinstance(value.value, ast.Index)
    assert value.value.value.id == "stage"
    derived = expr("s[(0) / 2, (1)]")
    assert isinstance(derived, ast.Index) and len(derived.indices) == 2
    assert isinstance(derived.indices[1], ast.Paren)


def test_span_as_and_shape_literal() -> None:
    value = expr("x.span_as([M * N]).at(i)")
    assert value.value.name == "span_as"
    assert isinstance(value.value.args[0], ast.ListLiteral)


def test_casts() -> None:
    prefix, functional = expr("(f32)k"), expr("f16(v)")
    assert isinstance(prefix, ast.Cast) and prefix.type_name == "f32"
    assert isinstance(functional, ast.Cast) and functional.type_name == "f16"


def test_keywords_stay_usable_as_names() -> None:
    """The contextual lexer: words that are keywords elsewhere can name variables."""
    statements = body_of(
        "int data = 1;\nint ready = 2;\nint block = 3;\nint thread = 4;\nint after = 5;\nint f16x = 6;"
    )
    assert [s.name for s in statements] == ["data", "ready", "block", "thread", "after", "f16x"]


# ----------------------------------------------------------------------- spans


def test_spans_point_at_the_users_text() -> None:
    source = "#define W 64\n__co__ void f(f32 [W] x) {\n  parallel t by W : thread {\n    x.at(t) = x.at(t) + 1.0f;\n  }\n}\n"
    program = parse_ok(source)
    function = program.functions[0]
    parallel = function.body.body[0]
    assert (parallel.span.line, parallel.span.column) == (3, 3)
    assert parallel.span.end_line == 5
    clause = parallel.clauses[0]
    assert clause.level_span is not None and (clause.level_span.line, clause.level_span.column) == (3, 21)
    assign = parallel.body.body[0]
    assert (assign.span.line, assign.span.column) == (4, 5)
    rhs = assign.value
    assert (rhs.right.span.line, rhs.right.span.column) == (4, 25)


def test_name_spans_of_declarations() -> None:
    """One node per declarator, each with the span of its own name."""
    statements = body_of("shared f32 [32] alpha, beta;")
    assert all(isinstance(s, ast.BufferDecl) for s in statements)
    assert [s.name for s in statements] == ["alpha", "beta"]
    assert (statements[1].name_span.line, statements[1].name_span.column) == (
        2,
        len("shared f32 [32] alpha, ") + 1,
    )


# ---------------------------------------------------- host code, names and known limits


@pytest.mark.parametrize(("spelling", "element"), [("half", "f16"), ("double", "f64"), ("bfp16", "bf16")])
def test_croqtile_type_spellings_are_element_types(spelling: str, element: str) -> None:
    program = parse_ok(f"__co__ void f({spelling} [4] x, {spelling} s) {{\n  {spelling} v = s;\n}}\n")
    (function,) = program.functions
    assert [param.type.name for param in function.params] == [element, element]
    assert function.body.body[0].type_name == element  # type: ignore[attr-defined]


def test_a_type_spelling_used_as_a_name_says_so() -> None:
    source = "__co__ void f(f32 [4] x) {\n  parallel t by 4 {\n    local f32 [2] half;\n    half.at(0) = x.at(t);\n  }\n}\n"
    sink = DiagnosticSink()
    parse(source, SourceMap(), sink)
    (error,) = sink.diagnostics
    assert (error.line, error.column) == (4, 9)
    assert "'half' is an element type" in error.message


def test_host_digit_separator_does_not_hide_the_next_function() -> None:
    program = parse_ok("int main() { int n = 1'000; return n; }\n" + CO_FUNCTION)
    assert [f.name for f in program.functions] == ["scale"]


@pytest.mark.xfail(reason="function-like macro arguments cannot span lines", strict=True)
def test_macro_arguments_over_several_lines() -> None:
    parse_ok(
        "#define ADD(a, b) ((a) + (b))\n__co__ void f(f32 [4] x) {\n  int q = ADD(1,\n              2);\n}\n"
    )
