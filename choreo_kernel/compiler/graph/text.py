"""Source-like text of expressions and operations, for graph labels.

Labels quote what the user wrote (`full.at(issued++)`, `lhs.subspan(128, 64).at(bm, k)`),
so this printer covers every expression form, where the analysis's message text
only needs the common ones.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast


def expr_source(expr: ast.Expr) -> str:
    """The expression as the user would write it (modulo spacing and redundant parentheses)."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, (ast.IntLiteral, ast.FloatLiteral)):
        return _number(expr)
    if isinstance(expr, ast.BoolLiteral):
        return "true" if expr.value else "false"
    if isinstance(expr, ast.StringLiteral):
        return repr(expr.value)
    if isinstance(expr, ast.Binary):
        return f"{expr_source(expr.left)} {expr.op} {expr_source(expr.right)}"
    if isinstance(expr, ast.Unary):
        return f"{expr.op}{expr_source(expr.operand)}"
    if isinstance(expr, ast.IncDec):
        operand = expr_source(expr.operand)
        return f"{expr.op}{operand}" if expr.prefix else f"{operand}{expr.op}"
    if isinstance(expr, ast.Ternary):
        return f"{expr_source(expr.condition)} ? {expr_source(expr.then)} : {expr_source(expr.otherwise)}"
    if isinstance(expr, ast.Paren):
        return f"({expr_source(expr.inner)})"
    if isinstance(expr, ast.Call):
        return f"{expr_source(expr.callee)}({_items(expr.args)})"
    if isinstance(expr, ast.Member):
        return f"{expr_source(expr.value)}.{expr.name}"
    if isinstance(expr, ast.Method):
        return f"{expr_source(expr.value)}.{expr.name}({_items(expr.args)})"
    if isinstance(expr, ast.Index):
        return f"{expr_source(expr.value)}[{_items(expr.indices)}]"
    if isinstance(expr, ast.TupleLiteral):
        return "{" + _items(expr.items) + "}"
    if isinstance(expr, ast.ListLiteral):
        return f"[{_items(expr.items)}]"
    if isinstance(expr, ast.ElementCount):
        return f"|{expr_source(expr.operand)}|"
    if isinstance(expr, ast.TypeSize):
        return f"|{expr.type_name}|"
    if isinstance(expr, ast.Cast):
        return f"({expr.type_name}){expr_source(expr.operand)}"
    return "?"


def operation_source(operation: ast.Operation) -> str:
    """`tma.load.async.swiz<128>`: the operation's name with its template arguments."""
    words = [
        f"{word}<{operation.template_args[word]}>" if word in operation.template_args else word
        for word in operation.qualifiers
    ]
    return ".".join((operation.family, *words))


def order_value(order: ast.Expr) -> str:
    """The value an event order stands for: `issued++` selects with `issued` (C post-increment)."""
    if isinstance(order, ast.IncDec):
        order = order.operand
    text = expr_source(order)
    return f"({text})" if isinstance(order, (ast.Binary, ast.Ternary)) else text


def _items(items: tuple[ast.Expr, ...]) -> str:
    return ", ".join(expr_source(item) for item in items)


def _number(expr: ast.IntLiteral | ast.FloatLiteral) -> str:
    if isinstance(expr, ast.IntLiteral):
        return f"{expr.value}u" if expr.unsigned else str(expr.value)
    return f"{expr.value!r}f" if expr.single else repr(expr.value)
