"""Matrix operations: operand shapes, accumulator shape, and what WGMMA on sm_90a can run.

`mma.row.row acc, a, b` is acc += a * b^T with a [M, K] and b [N, K];
`mma.row.col` takes b as [K, N]; a `col` first qualifier takes a as [K, M]
(language.md 9).  On Hopper the operation runs on one warpgroup (a `group-4`
scope) with M a multiple of 64, N a multiple of 8 up to 256 and K a multiple
of 16 (16-bit types) or 32 (8-bit types).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import (
    ELEMENT_BYTES,
    Accumulator,
    BufferArray,
    Data,
    Dim,
    Fragment,
    FutureInfo,
    Symbol,
    Tiling,
    Unknown,
    shape_text,
)
from choreo_kernel.compiler.diagnostics import Note
from choreo_kernel.compiler.semantics.levels import Level

if TYPE_CHECKING:
    from choreo_kernel.compiler.analysis.resolve import Resolver

WGMMA_TYPES = {"f16": 16, "bf16": 16, "tf32": 8, "f8_e4m3": 32, "f8_e5m2": 32, "s8": 32, "u8": 32}


def check_exec(
    resolver: Resolver, stmt: ast.OperationStmt, a_layout: str, b_layout: str, context: Context
) -> FutureInfo | None:
    operation = stmt.operation
    if len(operation.args) != 3:
        resolver.error(f"'{operation.text}' takes an accumulator and two operands: ACC, A, B", operation.span)
        for arg in operation.args:
            resolver._expr(arg)
        return None
    acc_expr, a_expr, b_expr = operation.args
    accumulator = resolver._expr(acc_expr)
    a = _operand(resolver, a_expr)
    b = _operand(resolver, b_expr)
    symbol = resolver._symbol_of_name(acc_expr)
    accumulator_name = acc_expr.id if isinstance(acc_expr, ast.Name) else None
    info = FutureInfo(operation, stmt, "mma", operation.is_async, accumulator=accumulator_name)
    if not isinstance(accumulator, (Accumulator, Unknown)):
        resolver.error(
            f"the first operand of '{operation.text}' must be an accumulator (from mma.fill), "
            f"got {accumulator.describe()}",
            acc_expr.span,
        )
        return info
    if Level.WARPGROUP not in context.level_kinds:
        resolver.hopper_rule(
            f"'{operation.text}' must run on a warpgroup: on target cuda (sm_90a, WGMMA) put it inside a "
            "'group-4' scope (for example 'parallel wg by 1 : group-4 { ... }')",
            operation.op_span,
        )
    if a is None or b is None:
        return info
    if len(a.dims) != 2 or len(b.dims) != 2:
        resolver.error(
            f"'{operation.text}' needs two-dimensional operands, got a {shape_text(a.dims)} and b {shape_text(b.dims)}",
            operation.span,
        )
        return info
    m, k_a = (a.dims[0], a.dims[1]) if a_layout == "row" else (a.dims[1], a.dims[0])
    n, k_b = (b.dims[0], b.dims[1]) if b_layout == "row" else (b.dims[1], b.dims[0])
    if isinstance(k_a, int) and isinstance(k_b, int) and k_a != k_b:
        resolver.error(
            f"'{operation.text}': the K extents of the operands differ: a is {shape_text(a.dims)} (K = {k_a}), "
            f"b is {shape_text(b.dims)} (K = {k_b})",
            operation.span,
        )
        return info
    if a.elem != b.elem:
        resolver.error(
            f"'{operation.text}': operand types differ: a is {a.elem}, b is {b.elem}", operation.span
        )
        return info
    _check_hopper_shape(resolver, operation, a.elem, m, n, k_a, accumulator, context)
    for name, operand in (("a", a), ("b", b)):
        _check_swizzle(resolver, operand, operation)
        rows = operand.dims[0]
        if isinstance(rows, int) and rows % 8 != 0:
            resolver.hopper_rule(
                f"operand {name} of '{operation.text}' ({operand.root}) has {rows} rows; a WGMMA operand tile "
                "needs a multiple of 8 rows",
                operation.span,
            )
    if symbol is not None and isinstance(accumulator, Accumulator):
        _infer_accumulator(resolver, symbol, (m, n), operation, acc_expr)
        _check_accumulator_owner(resolver, symbol, operation, context)
    return info


def _check_swizzle(resolver: Resolver, operand: Data, operation: ast.Operation) -> None:
    """A swizzle wider than the buffer's rows gives a layout that WGMMA cannot read (12.6)."""
    written = resolver.swizzle_of.get(operand.root)
    symbol = resolver.scope.lookup(operand.root)
    if written is None or symbol is None:
        return
    buffer = symbol.value.element if isinstance(symbol.value, BufferArray) else symbol.value
    if not isinstance(buffer, Data) or not buffer.dims or not isinstance(buffer.dims[-1], int):
        return
    swizzle, span = written
    row_bytes = buffer.dims[-1] * ELEMENT_BYTES.get(buffer.elem, 2)
    if swizzle > row_bytes:
        resolver.hopper_rule(
            f"WGMMA cannot read '{operand.root}': its rows are {row_bytes} bytes but it was loaded with a "
            f"{swizzle}-byte swizzle; use .swiz<{_widest_swizzle(row_bytes)}> "
            "or let the compiler choose",
            operation.span,
            Note(f"'{operand.root}' is written with .swiz<{swizzle}> here", span),
            Note(f"'{operand.root}' is declared here", symbol.span),
        )


def _widest_swizzle(row_bytes: int) -> int:
    return max((s for s in (32, 64, 128) if s <= row_bytes), default=32)


def _operand(resolver: Resolver, expr: ast.Expr) -> Data | None:
    value = resolver._expr(expr)
    if isinstance(value, Tiling):
        value = value.tile()
    if isinstance(value, Fragment):
        return value.data
    if isinstance(value, Data):
        if value.storage not in ("shared",):
            resolver.hopper_rule(
                f"an MMA operand is a shared-memory tile or an mma.load fragment; '{value.root}' is {value.storage}",
                expr.span,
            )
        return value
    if not isinstance(value, Unknown):
        resolver.error(
            f"an MMA operand must be a tile or an mma.load fragment, got {value.describe()}", expr.span
        )
    return None


def _check_hopper_shape(
    resolver: Resolver,
    operation: ast.Operation,
    elem: str,
    m: Dim,
    n: Dim,
    k: Dim,
    accumulator: object,
    context: Context,
) -> None:
    if elem not in WGMMA_TYPES:
        resolver.hopper_rule(
            f"WGMMA on target cuda (sm_90a) takes f16, bf16, tf32, f8 or 8-bit integer operands, not {elem}",
            operation.span,
        )
        return
    k_unit = WGMMA_TYPES[elem]
    problems = []
    if isinstance(m, int) and m % 64 != 0:
        problems.append(f"M a multiple of 64 per warpgroup (got {m})")
    if isinstance(n, int) and (n % 8 != 0 or not 8 <= n <= 256):
        problems.append(f"N a multiple of 8 from 8 to 256 (got {n})")
    if isinstance(k, int) and k % k_unit != 0:
        problems.append(f"K a multiple of {k_unit} for {elem} (got {k})")
    if problems:
        resolver.hopper_rule(
            f"the MMA shape m{m}n{n}k{k} cannot run on target cuda (sm_90a): WGMMA needs "
            + ", ".join(problems),
            operation.span,
        )
    if isinstance(accumulator, Accumulator) and accumulator.elem == "f16" and elem != "f16":
        resolver.hopper_rule(f"an f16 accumulator needs f16 operands, got {elem}", operation.span)


def _infer_accumulator(
    resolver: Resolver, symbol: Symbol, shape: tuple[Dim, Dim], operation: ast.Operation, acc_expr: ast.Expr
) -> None:
    """The accumulator's shape is taken from its first use; later uses must agree."""
    existing = symbol.accumulator_shape
    if existing is None:
        symbol.accumulator_shape = shape
        return
    if any(isinstance(x, int) and isinstance(y, int) and x != y for x, y in zip(existing, shape)):
        resolver.error(
            f"accumulator '{symbol.name}' is {shape_text(existing)} from its first use, "
            f"but this MMA produces {shape_text(shape)}",
            acc_expr.span,
        )


def _check_accumulator_owner(
    resolver: Resolver, symbol: Symbol, operation: ast.Operation, context: Context
) -> None:
    """An accumulator declared above the warpgroup level must serve exactly one warpgroup (12.5)."""
    declaration = getattr(symbol, "declaration", None)
    declared_context = resolver.info.context_of.get(id(declaration))
    if declared_context is None or Level.WARPGROUP in declared_context.level_kinds:
        return
    for scope in context.levels:
        if scope.level == Level.WARPGROUP and isinstance(scope.count, int) and scope.count > 1:
            resolver.error(
                f"accumulator '{symbol.name}' is declared outside the warpgroup scope, but "
                f"{scope.count} warpgroups run this MMA: declare it inside the 'group-4' scope, one per warpgroup",
                operation.span,
                Note("the accumulator is declared here", symbol.span),
            )
            return
