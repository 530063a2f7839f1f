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

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.flow import is_rotation
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Symbol
from choreo_kernel.compiler.cuda import cexpr, elements
from choreo_kernel.compiler.cuda.views import FutureValue, Lowered, LoweringError, View, element_count
from choreo_kernel.compiler.cuda.writer import CodeWriter, Names


class Emitting(Protocol):
    """What a kernel's lowering gives this module: where it writes, its names, its bindings."""

    out: CodeWriter
    names: Names
    bindings: dict[Symbol, Lowered]


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


def held_variable(bindings: Mapping[Symbol, Lowered], stmt: ast.OperationStmt, future: Symbol) -> str | None:
    """The C variable of `future` where it exists before `stmt` (None where `stmt` declares it)."""
    existing = bindings.get(future)
    if future.declaration is stmt or not isinstance(existing, FutureValue) or existing.variable is None:
        return None
    return existing.variable.text


@dataclass
class Rotations:
    """The rotated futures of one kernel, and the size of the buffers each group of them shares."""

    groups: dict[Symbol, frozenset[Symbol]]
    sizes: dict[frozenset[Symbol], int | None] = field(default_factory=dict)

    def held_buffer(self, context: Emitting, stmt: ast.OperationStmt, future: Symbol, own: View) -> View:
        """Where a copy assigned to the rotated `future` lands: the buffer it holds, else `own`."""
        group = self.groups[future]
        total = element_count(own.dims).value
        if self.sizes.setdefault(group, total) != total:
            raise LoweringError(
                f"'{future.name}' is rotated by swap/rotate, so each copy assigned to it lands in the buffer it "
                f"holds; this copy is of {total} elements and one into a future it is rotated with of "
                f"{self.sizes[group]}: rotate futures of one size",
                stmt,
            )
        variable = held_variable(context.bindings, stmt, future)
        if variable is None:
            return own
        target = context.names.fresh(f"{future.name}_target")
        context.out.line(
            f"{elements.c_type(own.elem)}* const {target} = {variable}.data ? {variable}.data : {own.pointer.text};  "
            f"// '{future.name}' is rotated: the buffer it holds (this statement's own the first time)"
        )
        return replace(own, pointer=cexpr.name(target))
