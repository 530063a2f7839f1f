"""The layout of the shared buffers that TMA and WGMMA use (language.md 12.6): swizzled rows.

The layout is decided here, once per buffer, and every writer (a DMA or TMA copy, a padded
copy, an element store, mma.store) and reader (an element load, a WGMMA descriptor) addresses
the buffer through it (views.View.start, .start_after and .element, copies.region), so no tile
is staged into another layout before an MMA; only `mma.load` of a global tile copies it into
shared memory, since WGMMA reads no global memory (wgmma.Mma._stage). Writes by threads are
fenced into the async proxy (fence.proxy.async) before the barrier that hands them over. A TMA or DMA copy or `mma.load` may name the
swizzle with `.swiz<N>`; a WGMMA operand keeps it where its rows are a multiple of it, and
otherwise gets the widest swizzle its rows are a multiple of (semantics/swizzle.py): 128 bytes
for a row of 64 halves, 32 for a row of 16. Rows wider than the swizzle lie in panels
(views.Panels). An operand that is a copy's `=> shared` destination (`f.data`) is keyed by the
copy's future, which names that destination. A warp's operand (mma.sync, cuda/warp_mma.py) stays
plain.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES, BufferArray, Data, Fragment, Future, Symbol
from choreo_kernel.compiler.semantics.levels import Level, Storage
from choreo_kernel.compiler.semantics.swizzle import operand_swizzle


def shared_swizzles(info: FunctionInfo, kernel: ast.Parallel) -> dict[Symbol, int]:
    """The swizzle of each shared buffer that TMA or WGMMA uses (language.md 12.6): the one a copy or
    mma.load names with .swiz<N>, or, for a WGMMA operand, the one semantics/swizzle.py chooses."""
    named: dict[Symbol, int] = {}
    operands: set[Symbol] = set()
    for stmt in ast.walk_statements(kernel):
        if not isinstance(stmt, ast.OperationStmt) or stmt.operation.family not in ("dma", "tma", "mma"):
            continue
        operation = stmt.operation
        swizzle = operation.template_args.get("swiz")
        if swizzle is not None:
            for expr in (*operation.args, operation.destination):
                symbol = _buffer(info, expr)
                if symbol is not None:
                    named[symbol] = int(swizzle)
        if (
            operation.family == "mma"
            and operation.qualifiers[0] in ("row", "col")
            and _on_warpgroup(info, stmt)
        ):
            # A and B: a sparse MMA's metadata and a scaled MMA's scales are read as plain bytes and floats
            operands.update(s for s in (_buffer(info, arg) for arg in operation.args[1:3]) if s is not None)
    chosen = dict(named)
    for symbol in operands:
        value = _data(info, symbol)
        if isinstance(value, Data) and value.dims and isinstance(value.dims[-1], int):
            row_bytes = value.dims[-1] * ELEMENT_BYTES[value.elem]
            chosen[symbol] = operand_swizzle(row_bytes, named.get(symbol))
    return chosen


def _on_warpgroup(info: FunctionInfo, stmt: ast.OperationStmt) -> bool:
    """A WGMMA reads its shared operands swizzled; a warp's mma.sync (cuda/warp_mma.py) reads plain rows."""
    context = info.context_of.get(id(stmt))
    return context is None or Level.WARPGROUP in context.level_kinds


def _buffer(info: FunctionInfo, expr: ast.Expr | None) -> Symbol | None:
    """The shared buffer at the root of a view, through an mma.load fragment."""
    root = ast.root_name(expr)
    symbol = info.symbol_of.get(id(root)) if root is not None else None
    if (
        symbol is not None
        and isinstance(symbol.value, Fragment)
        and isinstance(symbol.declaration, ast.OperationStmt)
    ):
        return _buffer(info, symbol.declaration.operation.args[0])
    if symbol is not None and (data := _data(info, symbol)) is not None and data.storage == Storage.SHARED:
        return symbol
    return None


def _data(info: FunctionInfo, symbol: Symbol) -> Data | None:
    """What a buffer holds, or the `=> shared` destination a copy's future names."""
    value = symbol.value.element if isinstance(symbol.value, BufferArray) else symbol.value
    if isinstance(value, Future) and isinstance(symbol.declaration, ast.OperationStmt):
        operation = info.operations.get(id(symbol.declaration))
        allocated = id(symbol.declaration.operation) in info.allocates
        return operation.destination if operation is not None and allocated else None
    return value if isinstance(value, Data) else None
