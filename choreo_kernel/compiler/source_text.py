"""Choreo source text printed back from the syntax tree: one printer for every message, label and comment.

Passes see the tree, not the user's text (macros are expanded by then), so whatever quotes an
expression to the user (diagnostics, graph labels, the `// line N:` comments of the emitted CUDA,
run-time signature errors) prints it from here and so quotes it the same way everywhere.
Parentheses the user wrote are tree nodes (`ast.Paren`), so printing each node plainly keeps the
meaning; spacing is normalized.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast


def expression(expr: ast.Expr) -> str:
    """The expression as the user would write it: `full.at(issued++)`, `lhs.subspan(128, 64).at(bm, k)`."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, (ast.IntLiteral, ast.FloatLiteral, ast.BoolLiteral, ast.StringLiteral)):
        return _literal(expr)
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
        return f"{expression(expr.callee)}({expressions(expr.args)})"
    if isinstance(expr, ast.Member):
        return f"{expression(expr.value)}.{expr.name}"
    if isinstance(expr, ast.Method):
        return f"{expression(expr.value)}.{expr.name}({expressions(expr.args)})"
    if isinstance(expr, ast.Index):
        return f"{expression(expr.value)}[{expressions(expr.indices)}]"
    if isinstance(expr, ast.TupleLiteral):
        return f"{{{expressions(expr.items)}}}"
    if isinstance(expr, ast.ListLiteral):
        return f"[{expressions(expr.items)}]"
    if isinstance(expr, ast.ElementCount):
        return f"|{expression(expr.operand)}|"
    if isinstance(expr, ast.TypeSize):
        return f"|{expr.type_name}|"
    if isinstance(expr, ast.Cast):
        return f"({expr.type_name}){expression(expr.operand)}"
    return "?"  # ast.AnyDim, the `?` of a parameter shape


def expressions(items: tuple[ast.Expr, ...]) -> str:
    """A comma-separated list, as in arguments, indices and `wait a, b`."""
    return ", ".join(expression(item) for item in items)


def operation_name(operation: ast.Operation) -> str:
    """`tma.load.async.swiz<128>`: the operation's name with its template arguments, without operands."""
    words = [
        f"{word}<{operation.template_args[word]}>" if word in operation.template_args else word
        for word in operation.qualifiers
    ]
    return ".".join((operation.family, *words))


def _literal(expr: ast.IntLiteral | ast.FloatLiteral | ast.BoolLiteral | ast.StringLiteral) -> str:
    if isinstance(expr, ast.IntLiteral):
        return f"{expr.value}u" if expr.unsigned else str(expr.value)
    if isinstance(expr, ast.FloatLiteral):
        return f"{expr.value!r}f" if expr.single else repr(expr.value)
    if isinstance(expr, ast.BoolLiteral):
        return "true" if expr.value else "false"
    return repr(expr.value)
