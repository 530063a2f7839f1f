"""Host-level values: the statements outside every `parallel` that give a name a value.

The host plan computes a host-level scalar where its statement stands, so a `mutable` scalar that
changes between two launches (`mutable int offset = 0; parallel ...; offset += 64; parallel ...`)
reaches each kernel with the value it has when that kernel is launched: kernels receive host
scalars by value, as arguments. A compound assignment or `++` is the plain assignment it stands for
(`offset += 64` is `offset = offset + 64`). A name given a view or a shape (`l = lhs.span_as(6, 64)`)
is another name for the same data: the kernels that use it address the buffer it names.
"""

from __future__ import annotations

from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Symbol


@dataclass(frozen=True)
class HostUpdate:
    """A host-level statement that gives `symbol` the value of `value`; `declares` for its first value."""

    symbol: Symbol | None  # None for a declaration nothing refers to
    value: ast.Expr
    declares: bool


def host_update(stmt: ast.Stmt, info: FunctionInfo) -> HostUpdate | None:
    """What a host-level declaration, assignment or `++` of a name gives it; None for other statements."""
    if isinstance(stmt, ast.ScalarDecl) and stmt.init is not None and stmt.storage is None:
        return HostUpdate(info.declared(stmt, stmt.name), stmt.init, True)
    if isinstance(stmt, ast.Assign) and isinstance(stmt.target, ast.Name):
        target = stmt.target
        if id(target) not in info.symbol_of:  # `x = ...;` declares x
            return HostUpdate(info.declared(stmt, target.id), stmt.value, True) if stmt.op == "=" else None
        value = stmt.value if stmt.op == "=" else ast.Binary(stmt.span, stmt.op[:-1], target, stmt.value)
        return HostUpdate(info.symbol_of[id(target)], value, False)
    if isinstance(stmt, ast.ExprStmt) and isinstance(stmt.expr, ast.IncDec):
        operand = stmt.expr.operand
        if isinstance(operand, ast.Name) and id(operand) in info.symbol_of:
            one = ast.IntLiteral(stmt.span, 1)
            value = ast.Binary(stmt.span, stmt.expr.op[0], operand, one)
            return HostUpdate(info.symbol_of[id(operand)], value, False)
    return None
