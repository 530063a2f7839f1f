"""Choreo source text of statements, for the `// line N: ...` comments of the emitted CUDA.

The lowering sees the syntax tree, not the user's text, so each comment is printed back from
the tree: the same statement with macros expanded. Parentheses the user wrote are tree nodes
(`ast.Paren`), so printing each node plainly keeps the meaning.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast


def expression(expr: ast.Expr) -> str:
    """The source text of an expression."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.IntLiteral):
        return f"{expr.value}{'u' if expr.unsigned else ''}"
    if isinstance(expr, ast.FloatLiteral):
        return f"{expr.value!r}{'f' if expr.single else ''}"
    if isinstance(expr, ast.BoolLiteral):
        return "true" if expr.value else "false"
    if isinstance(expr, ast.StringLiteral):
        return repr(expr.value)
    if isinstance(expr, ast.Binary):
        return f"{expression(expr.left)} {expr.op} {expression(expr.right)}"
    if isinstance(expr, ast.Unary):
        return f"{expr.op}{expression(expr.operand)}"
    if isinstance(expr, ast.IncDec):
        operand = expression(expr.operand)
        return f"{expr.op}{operand}" if expr.prefix else f"{operand}{expr.op}"
    if isinstance(expr, ast.Ternary):
        return f"{expression(expr.condition)} ? {expression(expr.then)} : {expression(expr.otherwise)}"
    if isinstance(expr, ast.Paren):
        return f"({expression(expr.inner)})"
    if isinstance(expr, ast.Call):
        return f"{expression(expr.callee)}({_list(expr.args)})"
    if isinstance(expr, ast.Member):
        return f"{expression(expr.value)}.{expr.name}"
    if isinstance(expr, ast.Method):
        return f"{expression(expr.value)}.{expr.name}({_list(expr.args)})"
    if isinstance(expr, ast.Index):
        return f"{expression(expr.value)}[{_list(expr.indices)}]"
    if isinstance(expr, ast.TupleLiteral):
        return f"{{{_list(expr.items)}}}"
    if isinstance(expr, ast.ListLiteral):
        return f"[{_list(expr.items)}]"
    if isinstance(expr, ast.ElementCount):
        return f"|{expression(expr.operand)}|"
    if isinstance(expr, ast.TypeSize):
        return f"|{expr.type_name}|"
    if isinstance(expr, ast.Cast):
        return f"({expr.type_name}){expression(expr.operand)}"
    return "?"


def _list(items: tuple[ast.Expr, ...]) -> str:
    return ", ".join(expression(item) for item in items)


def _variables(variables: ast.BoundVars) -> str:
    names = ", ".join(name.id for name in variables.names)
    text = f"{{{names}}}" if variables.braced else names
    return f"{variables.group.id} = {text}" if variables.group is not None else text


def operation(op: ast.Operation) -> str:
    words = [op.family]
    for qualifier in op.qualifiers:
        argument = op.template_args.get(qualifier)
        words.append(f"{qualifier}<{argument}>" if argument is not None else qualifier)
    text = ".".join(words)
    if op.args:
        text += " " + _list(op.args)
    if op.destination is not None:
        text += f" => {expression(op.destination)}"
    if op.after:
        text += f" after {_list(op.after)}"
    return text


def statement(stmt: ast.Stmt) -> str:
    """One line of source for a statement: the whole of a simple one, the head of a compound one."""
    if isinstance(stmt, ast.Parallel):
        clauses = ", ".join(_clause(clause) for clause in stmt.clauses)
        return f"parallel{'.async' if stmt.is_async else ''} {clauses}"
    if isinstance(stmt, ast.Foreach):
        return f"foreach {_variables(stmt.variables)} in {expression(stmt.extent)}"
    if isinstance(stmt, ast.ForeachRange):
        return "foreach " + ", ".join(_range(item) for item in stmt.items)
    if isinstance(stmt, ast.With):
        bindings = ", ".join(f"{_variables(b.variables)} in {expression(b.extent)}" for b in stmt.bindings)
        return f"with {bindings}"
    if isinstance(stmt, ast.If):
        return f"if ({expression(stmt.condition)})"
    if isinstance(stmt, ast.While):
        return f"while ({expression(stmt.condition)})"
    if isinstance(stmt, ast.InThreads):
        return f"inthreads{'.async' if stmt.is_async else ''} ({expression(stmt.condition)})"
    return _simple(stmt) + ";"


def _simple(stmt: ast.Stmt) -> str:
    if isinstance(stmt, ast.BufferDecl):
        head = (
            f"{stmt.storage + ' ' if stmt.storage else ''}{stmt.elem_type} [{_list(stmt.shape)}] {stmt.name}"
        )
        head += "".join(f"[{expression(d)}]" for d in stmt.array_dims)
        return head + (f" {{{_list(stmt.init)}}}" if stmt.init is not None else "")
    if isinstance(stmt, ast.ScalarDecl):
        words = [
            w for w in ("mutable" if stmt.mutable else "", stmt.storage or "", stmt.type_name or "") if w
        ]
        init = f" = {expression(stmt.init)}" if stmt.init is not None else ""
        return " ".join([*words, stmt.name]) + init
    if isinstance(stmt, ast.EventDecl):
        count = f"<{stmt.arrival_count}>" if stmt.arrival_count is not None else ""
        dims = "".join(f"[{expression(d)}]" for d in stmt.dims)
        return f"{stmt.storage or 'shared'} event{count} {stmt.name}{dims}{' = ready' if stmt.ready else ''}"
    if isinstance(stmt, ast.ShapeDecl):
        return f"{stmt.name} : {expression(stmt.value)}"
    if isinstance(stmt, ast.TupleDecl):
        return f"{stmt.name} = {expression(stmt.value)}"
    if isinstance(stmt, ast.OperationStmt):
        prefix = f"{stmt.result.id} = " if stmt.result is not None else ""
        return prefix + operation(stmt.operation)
    if isinstance(stmt, ast.Wait):
        return f"wait {_list(stmt.targets)}"
    if isinstance(stmt, ast.Trigger):
        after = f" after {_list(stmt.after)}" if stmt.after else ""
        return f"trigger {_list(stmt.targets)}{after}"
    if isinstance(stmt, ast.Sync):
        return f"sync.{stmt.kind}"
    if isinstance(stmt, ast.Assign):
        return f"{expression(stmt.target)} {stmt.op} {expression(stmt.value)}"
    if isinstance(stmt, ast.ExprStmt):
        return expression(stmt.expr)
    if isinstance(stmt, ast.Return):
        return "return" + (f" {expression(stmt.value)}" if stmt.value is not None else "")
    if isinstance(stmt, ast.Break):
        return "break"
    if isinstance(stmt, ast.Continue):
        return "continue"
    if isinstance(stmt, ast.Unsupported):
        return stmt.what
    return ""


def _clause(clause: ast.ParallelClause) -> str:
    variables = f"{_variables(clause.variables)} " if clause.variables is not None else ""
    level = f" : {clause.level}" if clause.level else ""
    return f"{variables}by {expression(clause.count)}{level}"


def _range(item: ast.RangeItem) -> str:
    if not item.sliced:
        return item.name.id
    parts = [expression(p) if p is not None else "" for p in (item.start, item.stop)]
    if item.step is not None:
        parts.append(expression(item.step))
    return f"{item.name.id}({':'.join(parts)})"
