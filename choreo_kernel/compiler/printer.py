"""Choreo source text printed back from the syntax tree: one printer for every message, label and comment.

Passes see the tree, not the user's text (macros are expanded by then), so whatever quotes source
to the user (diagnostics, graph labels, the `// line N: ...` comments of the emitted CUDA,
run-time signature errors) prints it from here and so quotes it the same way everywhere.
Parentheses the user wrote are tree nodes (`ast.Paren`), so printing each node plainly keeps the
meaning; spacing is normalized. Every kind of expression and statement has an entry in the
tables below (tests/test_passes.py checks it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from choreo_kernel.compiler import ast


def expression(expr: ast.Expr) -> str:
    """The expression as the user would write it: `full.at(issued++)`, `lhs.subspan(128, 64).at(bm, k)`."""
    return EXPRESSIONS[type(expr)](expr)


def expressions(items: tuple[ast.Expr, ...]) -> str:
    """A comma-separated list, as in arguments, indices and `wait a, b`."""
    return ", ".join(expression(item) for item in items)


def statement(stmt: ast.Stmt) -> str:
    """One line of source for a statement: the whole of a simple one, the head of a compound one."""
    text = STATEMENTS[type(stmt)](stmt)
    return text if type(stmt) in HEADS else text + ";"


def operation_name(operation: ast.Operation) -> str:
    """`tma.load.async.swiz<128>`: the operation's name with its template arguments, without operands."""
    words = [
        f"{word}<{operation.template_args[word]}>" if word in operation.template_args else word
        for word in operation.qualifiers
    ]
    return ".".join((operation.family, *words))


def operation(op: ast.Operation) -> str:
    """An operation with its operands, destination and `after` list."""
    text = operation_name(op)
    if op.args:
        text += " " + expressions(op.args)
    if op.destination is not None:
        text += f" => {expression(op.destination)}"
    if op.after:
        text += f" after {expressions(op.after)}"
    return text


# ------------------------------------------------------------------ expressions


def _int(expr: ast.IntLiteral) -> str:
    return expr.text or (f"{expr.value}u" if expr.unsigned else str(expr.value))


def _float(expr: ast.FloatLiteral) -> str:
    if expr.value == float("inf"):
        return "inf"
    return f"{expr.value!r}f" if expr.single else repr(expr.value)


def _string(text: str) -> str:
    """A string as Choreo (and C) writes it: double quotes, escapes for quotes, backslashes and newlines."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def _incdec(expr: ast.IncDec) -> str:
    operand = expression(expr.operand)
    return f"{expr.op}{operand}" if expr.prefix else f"{operand}{expr.op}"


def _template_arg(arg: ast.TemplateArg) -> str:
    return expression(arg.expr) if arg.expr is not None else arg.text or ""


def _device_call(expr: ast.DeviceCall) -> str:
    template = ""
    if expr.template_args is not None:
        template = "<" + ", ".join(_template_arg(arg) for arg in expr.template_args) + ">"
    return f"call {expr.callee}{template}({expressions(expr.args)})"


def _arguments(expr: ast.Method) -> str:
    """A method's arguments, with the strides of a strided view after a colon: `16, 8 : 64, 2`."""
    if not expr.strides:
        return expressions(expr.args)
    return f"{expressions(expr.args)} : {expressions(expr.strides)}"


EXPRESSIONS: dict[type[ast.Expr], Callable[[Any], str]] = {
    ast.Name: lambda e: e.id,
    ast.IntLiteral: _int,
    ast.FloatLiteral: _float,
    ast.BoolLiteral: lambda e: "true" if e.value else "false",
    ast.StringLiteral: lambda e: _string(e.value),
    ast.Binary: lambda e: f"{expression(e.left)} {e.op} {expression(e.right)}",
    ast.Unary: lambda e: f"{e.op}{expression(e.operand)}",
    ast.IncDec: _incdec,
    ast.Ternary: lambda e: f"{expression(e.condition)} ? {expression(e.then)} : {expression(e.otherwise)}",
    ast.Paren: lambda e: f"({expression(e.inner)})",
    ast.Call: lambda e: f"{expression(e.callee)}({expressions(e.args)})",
    ast.Member: lambda e: f"{expression(e.value)}.{e.name}",
    ast.Method: lambda e: f"{expression(e.value)}.{e.name}({_arguments(e)})",
    ast.Index: lambda e: (
        f"{expression(e.value)} {{{expressions(e.indices)}}}"
        if e.braced
        else f"{expression(e.value)}[{expressions(e.indices)}]"
    ),
    ast.TupleLiteral: lambda e: f"{{{expressions(e.items)}}}",
    ast.ListLiteral: lambda e: f"[{expressions(e.items)}]",
    ast.ElementCount: lambda e: f"|{expression(e.operand)}|",
    ast.TypeSize: lambda e: f"|{e.type_name}|",
    ast.Cast: lambda e: f"({e.type_name}){expression(e.operand)}",
    ast.ForeignCast: lambda e: f'__to<"{e.c_type}">({expression(e.operand)})',
    ast.AnyDim: lambda e: "??" if e.unbounded else "?",
    ast.DeviceCall: lambda e: _device_call(e),
}


# ------------------------------------------------------------------ statements


def _variables(variables: ast.BoundVars) -> str:
    names = ", ".join(name.id for name in variables.names)
    text = f"{{{names}}}" if variables.braced else names
    return f"{variables.group.id} = {text}" if variables.group is not None else text


def _clause(clause: ast.ParallelClause) -> str:
    variables = f"{_variables(clause.variables)} " if clause.variables is not None else ""
    level = f" : {clause.level}{'<cooperative>' * clause.cooperative}" if clause.level else ""
    return f"{variables}by {expression(clause.count)}{level}"


def _range(item: ast.RangeItem) -> str:
    if not item.sliced:
        return item.name.id
    parts = [expression(p) if p is not None else "" for p in (item.start, item.stop)]
    if item.step is not None:
        parts.append(expression(item.step))
    return f"{item.name.id}({':'.join(parts)})"


def _attribute(attribute: ast.Attribute) -> str:
    return f"{attribute.name}({expressions(attribute.args)})" if attribute.args else attribute.name


def _parallel(stmt: ast.Parallel) -> str:
    clauses = ", ".join(_clause(clause) for clause in stmt.clauses)
    attributes = "".join(f"[[{_attribute(attribute)}]] " for attribute in stmt.attributes)
    stream = f"<{stmt.stream.id}>" if stmt.stream is not None else ""
    return f"{attributes}parallel{'.async' if stmt.is_async else ''}{stream} {clauses}"


def _hint(stmt: ast.Foreach | ast.ForeachRange) -> str:
    return f" : {_attribute(stmt.hint)}" if stmt.hint is not None else ""


def _print(stmt: ast.Print) -> str:
    return f"{'println' if stmt.newline else 'print'}{'!' * stmt.compile_time}({expressions(stmt.args)})"


def _fence(stmt: ast.Fence) -> str:
    return f"sync.fence : {stmt.level}{f'<{stmt.storage}>' if stmt.storage else ''}"


def _with(stmt: ast.With) -> str:
    return "with " + ", ".join(f"{_variables(b.variables)} in {expression(b.extent)}" for b in stmt.bindings)


def _inthreads(stmt: ast.InThreads) -> str:
    return f"inthreads{'.async' if stmt.is_async else ''} ({expression(stmt.condition)})"


def _buffer(stmt: ast.BufferDecl) -> str:
    head = f"{stmt.storage + ' ' if stmt.storage else ''}{stmt.elem_type} [{expressions(stmt.shape)}] {stmt.name}"
    head += "".join(f"[{expression(d)}]" for d in stmt.array_dims)
    return head + (f" {{{expressions(stmt.init)}}}" if stmt.init is not None else "")


def _accumulators(stmt: ast.AccumulatorArrayDecl) -> str:
    head = f"frag{'.' + stmt.elem if stmt.elem else ''} {stmt.name}" + "".join(
        f"[{expression(d)}]" for d in stmt.dims
    )
    return head + (f" {{{expressions(stmt.init)}}}" if stmt.init is not None else "")


def _scalar(stmt: ast.ScalarDecl) -> str:
    words = [w for w in ("mutable" if stmt.mutable else "", stmt.storage or "", stmt.type_name or "") if w]
    init = f" = {expression(stmt.init)}" if stmt.init is not None else ""
    return " ".join([*words, stmt.name]) + init


def _event(stmt: ast.EventDecl) -> str:
    count = f"<{stmt.arrival_count}>" if stmt.arrival_count is not None else ""
    dims = "".join(f"[{expression(d)}]" for d in stmt.dims)
    return f"{stmt.storage or 'shared'} event{count} {stmt.name}{dims}{' = ready' if stmt.ready else ''}"


def _operation_statement(stmt: ast.OperationStmt) -> str:
    prefix = f"{stmt.result.id} = " if stmt.result is not None else ""
    return prefix + operation(stmt.operation)


def _trigger(stmt: ast.Trigger) -> str:
    after = f" after {expressions(stmt.after)}" if stmt.after else ""
    keyword = "trigger.cluster" if stmt.cluster else "trigger"
    return f"{keyword} {expressions(stmt.targets)}{after}"


def _return(stmt: ast.Return) -> str:
    return "return" + (f" {expression(stmt.value)}" if stmt.value is not None else "")


def _asm_operand(operand: ast.AsmOperand) -> str:
    name = f"[{operand.name}] " if operand.name is not None else ""
    return f'{name}"{operand.constraint}"({expression(operand.expr)})'


def _asm(stmt: ast.Asm) -> str:
    sections = [
        ", ".join(map(_asm_operand, stmt.outputs)),
        ", ".join(map(_asm_operand, stmt.inputs)),
        ", ".join(f'"{clobber}"' for clobber in stmt.clobbers),
    ]
    while sections and not sections[-1]:
        sections.pop()
    operands = "".join(f" : {section}" if section else " :" for section in sections)
    return f'__asm__{" volatile" if stmt.volatile else ""}("{stmt.template}"{operands})'


STATEMENTS: dict[type[ast.Stmt], Callable[[Any], str]] = {
    ast.Parallel: _parallel,
    ast.Foreach: lambda s: f"foreach {_variables(s.variables)} in {expression(s.extent)}{_hint(s)}",
    ast.ForeachRange: lambda s: "foreach " + ", ".join(_range(item) for item in s.items) + _hint(s),
    ast.With: _with,
    ast.If: lambda s: f"if ({expression(s.condition)})",
    ast.While: lambda s: f"while ({expression(s.condition)})",
    ast.InThreads: _inthreads,
    ast.Block: lambda s: "{ ... }",
    ast.BufferDecl: _buffer,
    ast.AccumulatorArrayDecl: _accumulators,
    ast.ScalarDecl: _scalar,
    ast.EventDecl: _event,
    ast.ShapeDecl: lambda s: f"{s.name} : {expression(s.value)}",
    ast.TupleDecl: lambda s: f"{s.name} = {expression(s.value)}",
    ast.OperationStmt: _operation_statement,
    ast.Wait: lambda s: f"wait {expressions(s.targets)}",
    ast.Trigger: _trigger,
    ast.Sync: lambda s: f"sync.{s.kind}",
    ast.Assign: lambda s: f"{expression(s.target)} {s.op} {expression(s.value)}",
    ast.ExprStmt: lambda s: expression(s.expr),
    ast.Apply: lambda s: f"apply {_variables(s.variables)} in {expression(s.target)}",
    ast.FragmentOp: lambda s: f"{s.name}({expressions(s.args)})",
    ast.Return: _return,
    ast.Break: lambda s: "break",
    ast.Continue: lambda s: "continue",
    ast.Empty: lambda s: "",
    ast.Unsupported: lambda s: s.what,
    ast.Asm: lambda s: _asm(s),
    ast.Barrier: lambda s: f"sync.barrier : {s.level}",
    ast.Fence: _fence,
    ast.NamedBarrier: lambda s: (
        f"__bar_{'sync' if s.waits else 'arrive'}({expression(s.barrier)}, {expression(s.count)})"
    ),
    ast.Yield: lambda s: "yield",
    ast.Assert: lambda s: f"assert({expression(s.condition)}, {_string(s.message)})",
    ast.Print: _print,
}
HEADS = frozenset(
    {
        ast.Parallel,
        ast.Foreach,
        ast.ForeachRange,
        ast.With,
        ast.If,
        ast.While,
        ast.InThreads,
        ast.Block,
        ast.Apply,
    }
)
