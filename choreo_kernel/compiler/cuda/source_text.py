"""Choreo source text of statements, for the `// line N: ...` comments of the emitted CUDA.

The lowering sees the syntax tree, not the user's text, so each comment is printed back from
the tree: the same statement with macros expanded. Expressions print as everywhere else
(`compiler.source_text`); `expression` is re-exported for the lowering's own messages.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.source_text import expression, expressions, operation_name

__all__ = ["expression", "operation", "statement"]


def _variables(variables: ast.BoundVars) -> str:
    names = ", ".join(name.id for name in variables.names)
    text = f"{{{names}}}" if variables.braced else names
    return f"{variables.group.id} = {text}" if variables.group is not None else text


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
    if isinstance(stmt, (ast.If, ast.While, ast.InThreads)):
        return f"{_conditional_keyword(stmt)} ({expression(stmt.condition)})"
    return _simple(stmt) + ";"


def _conditional_keyword(stmt: ast.If | ast.While | ast.InThreads) -> str:
    if isinstance(stmt, ast.InThreads):
        return "inthreads.async" if stmt.is_async else "inthreads"
    return "if" if isinstance(stmt, ast.If) else "while"


def _simple(stmt: ast.Stmt) -> str:
    if isinstance(stmt, ast.BufferDecl):
        head = f"{stmt.storage + ' ' if stmt.storage else ''}{stmt.elem_type} [{expressions(stmt.shape)}] {stmt.name}"
        head += "".join(f"[{expression(d)}]" for d in stmt.array_dims)
        return head + (f" {{{expressions(stmt.init)}}}" if stmt.init is not None else "")
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
    if isinstance(stmt, (ast.ShapeDecl, ast.TupleDecl)):
        binder = ":" if isinstance(stmt, ast.ShapeDecl) else "="
        return f"{stmt.name} {binder} {expression(stmt.value)}"
    if isinstance(stmt, ast.OperationStmt):
        prefix = f"{stmt.result.id} = " if stmt.result is not None else ""
        return prefix + operation(stmt.operation)
    if isinstance(stmt, ast.Wait):
        return f"wait {expressions(stmt.targets)}"
    if isinstance(stmt, ast.Trigger):
        after = f" after {expressions(stmt.after)}" if stmt.after else ""
        return f"trigger {expressions(stmt.targets)}{after}"
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
