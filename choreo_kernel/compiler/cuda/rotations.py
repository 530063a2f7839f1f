"""Futures that `swap` and `rotate` move between names keep their buffers.

In `l0 = ... => shared; l1 = dma.any; foreach k(1:) { l1 = ... => shared; wait l0; ...; swap l0, l1; }`
the copy of each iteration must land in the buffer that `l1` holds after the last swap (the one
that `l0` was just done with), not in the statement's own buffer, which `l0` may still be reading:
that is what makes the pattern double buffering. So a copy assigned to a rotated future lands
in the buffer the future holds, and in the statement's own buffer only while the future holds
none (a placeholder, the first time round). A TMA future carries its mbarrier and phase the same
way (`choreo::TmaFuture`), so that a wait after a swap waits on the load that filled its buffer.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.flow import is_rotation
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Symbol
from choreo_kernel.compiler.cuda import cexpr, elements
from choreo_kernel.compiler.cuda.views import FutureValue, LoweringError, View, element_count

if TYPE_CHECKING:
    from choreo_kernel.compiler.cuda.context import KernelContext


def rotation_groups(info: FunctionInfo, kernel: ast.Parallel) -> dict[Symbol, frozenset[Symbol]]:
    """Each future that a `swap` or `rotate` of the kernel moves, with every future whose buffers it can
    come to hold (those it is rotated with, directly or through others)."""
    groups: dict[Symbol, frozenset[Symbol]] = {}
    for stmt in ast.walk_statements(kernel):
        if isinstance(stmt, ast.ExprStmt) and isinstance(stmt.expr, ast.Call) and is_rotation(stmt.expr):
            members = frozenset(
                info.symbol_of[id(arg)] for arg in stmt.expr.args if id(arg) in info.symbol_of
            )
            merged = members.union(*(groups.get(member, frozenset()) for member in members))
            groups.update(dict.fromkeys(merged, merged))
    return groups


def held_variable(context: KernelContext, stmt: ast.OperationStmt, future: Symbol) -> str | None:
    """The C variable of `future` where it exists before `stmt` (None where `stmt` declares it)."""
    existing = context.bindings.get(future)
    if future.declaration is stmt or not isinstance(existing, FutureValue) or existing.variable is None:
        return None
    return existing.variable.text


def held_buffer(context: KernelContext, stmt: ast.OperationStmt, future: Symbol, own: View) -> View:
    """Where a copy assigned to the rotated `future` lands: the buffer it holds, else `own`."""
    group = context.rotated[future]
    total = element_count(own.dims).value
    if context.rotated_sizes.setdefault(group, total) != total:
        raise LoweringError(
            f"'{future.name}' is rotated by swap/rotate, so each copy assigned to it lands in the buffer it "
            f"holds; this copy is of {total} elements and one into a future it is rotated with of "
            f"{context.rotated_sizes[group]}: rotate futures of one size",
            stmt,
        )
    variable = held_variable(context, stmt, future)
    if variable is None:
        return own
    target = context.names.fresh(f"{future.name}_target")
    c_type = elements.c_type(own.elem)
    context.out.line(
        f"{c_type}* const {target} = {variable}.data ? {variable}.data : {own.pointer.text};  "
        f"// '{future.name}' is rotated: the buffer it holds (this statement's own the first time)"
    )
    return replace(own, pointer=cexpr.name(target))
