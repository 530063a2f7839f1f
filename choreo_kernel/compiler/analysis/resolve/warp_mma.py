"""Warp-level matrix operations: an MMA in a `group` scope runs on one warp with mma.sync.

The tiles a warp can multiply are semantics/mma_shapes.py's; this pass checks the program
against them and records each accumulator's owner (the context of its MMAs, and the type it
accumulates in), which the sim and the CUDA lowering read: an accumulator declared above the
warp level (`mc = mma.fill 0.0;` in the block, MMAs in `parallel ... : group`) is one per warp.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo, MmaOwner
from choreo_kernel.compiler.analysis.resolve.base import ResolverBase
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import (
    Accumulator,
    AccumulatorArray,
    Dim,
    Fragment,
    Scalar,
    Symbol,
    Value,
    loses_precision,
)
from choreo_kernel.compiler.diagnostics import Note, Span
from choreo_kernel.compiler.semantics.levels import Level, register_level
from choreo_kernel.compiler.semantics.mma_shapes import default_accumulator, warp_tile_problem

LOADED_ACCUMULATOR_TYPES = ("f32", "f16", "s32")  # what `acc = mma.load TILE;` accumulates in


class WarpMmaRules(ResolverBase):
    """The warp-level (mma.sync) checks of `mma.row.col` and friends."""

    multiplied: set[int]  # id() of the declarations of the accumulators some MMA multiplies into
    fill_values: list[tuple[ast.Stmt, ast.Expr, str]]  # each mma.fill's (or frag array's) value and its type

    def _record_owner(self, symbol: Symbol | None, operand: str, context: Context, span: Span) -> str:
        """The accumulator's type (the fill's, or the default for `operand`), recorded with its owner."""
        accumulator = accumulator_type(symbol, operand)
        if symbol is not None and symbol not in self.info.mma_owners:
            self.info.mma_owners[symbol] = MmaOwner(context, accumulator, span)
        return accumulator

    def _loaded_accumulator(self, symbol: Symbol, tile: Fragment, expr: ast.Expr) -> Accumulator | None:
        """`acc = mma.load TILE;` multiplied into: a warp's accumulator that starts from the tile (C read from
        memory), of its shape and element type; None where it cannot be one (reported once: later uses see
        an accumulator)."""
        declaration = symbol.declaration
        context = self.info.context_of.get(id(declaration))
        elem = tile.data.elem
        symbol.value = Accumulator(elem if elem in LOADED_ACCUMULATOR_TYPES else "f32")
        if context is None or register_level(context.level_kinds) != Level.WARP:
            self.error(
                f"'{symbol.name}' is loaded with mma.load and accumulated into: an accumulator loaded from memory "
                "is a warp's (mma.sync); load it inside the 'group' scope of its MMAs (a warpgroup's starts from "
                "mma.fill)",
                expr.span,
                Note("loaded here", symbol.span),
            )
            return None
        if elem not in LOADED_ACCUMULATOR_TYPES or len(tile.data.dims) != 2:
            self.error(
                f"'{symbol.name}' ({tile.describe()}) is accumulated into: an accumulator loaded with mma.load is "
                f"a 2-D tile of {', '.join(LOADED_ACCUMULATOR_TYPES)} elements",
                expr.span,
                Note("loaded here", symbol.span),
            )
            return None
        dims = tile.data.dims
        symbol.accumulator_shape = (dims[0], dims[1])
        self.info.loaded_accumulators.add(id(declaration))
        return symbol.value

    def _check_warp_tile(
        self, operation: ast.Operation, operand: str, m: Dim, n: Dim, k: Dim, accumulator: str
    ) -> None:
        problem = warp_tile_problem(operand, accumulator, m, n, k)
        if problem is not None:
            self.hopper_rule(problem, operation.span)

    def _note_multiplied(self, words: list[str], args: tuple[ast.Expr, ...]) -> None:
        """Any MMA (even a wrong one, reported on its own) names its accumulator first."""
        root = accumulator_root(args[0]) if args else None
        if words[:1] not in (["fill"], ["load"], ["store"]) and root is not None:
            symbol = self.scope.lookup(root.id)
            if symbol is not None:
                self.multiplied.add(id(symbol.declaration))

    def _stmt_AccumulatorArrayDecl(self, stmt: ast.AccumulatorArrayDecl, context: Context) -> None:
        """`frag mc[2][3] {0.0};`: accumulators of one shape (from their MMAs), each filled with the value."""
        counts = tuple(self._positive_count(d, "accumulator array size") for d in stmt.dims)
        elem = stmt.elem or "f32"  # untyped: the MMAs' operands decide (accumulator_type)
        if elem not in LOADED_ACCUMULATOR_TYPES:
            self.error(f"an accumulator is f32 or f16, not '{elem}'", stmt.span)
        for item in stmt.init or ():
            self._note_fill_value(stmt, item, self._expr(item))
        self._declare(
            Symbol(
                stmt.name,
                AccumulatorArray(elem, counts),
                stmt.name_span,
                declaration=stmt,
                origin="accumulator",
            ),
            stmt.name_span,
        )

    def _note_fill_value(self, stmt: ast.Stmt, expr: ast.Expr, value: Value) -> None:
        """Remember a fill's value type: whether converting it loses precision is known once the accumulator's
        type is (its MMAs decide an untyped one), in `_check_fill_conversions`."""
        zero = isinstance(expr, (ast.FloatLiteral, ast.IntLiteral)) and expr.value == 0  # exact in every type
        if isinstance(value, Scalar) and not zero:
            self.fill_values.append((stmt, expr, value.type))

    def _check_fill_conversions(self) -> None:
        """`mma.fill acc, 1.5f;` into an f16 accumulator converts an f32: a warning, as for any implicit
        narrowing (a literal zero is exact, so it has none)."""
        for stmt, expr, source in self.fill_values:
            typed: str | None = None
            if isinstance(stmt, ast.AccumulatorArrayDecl):
                symbol, typed = self.info.declared(stmt, stmt.name), stmt.elem
            elif isinstance(stmt, ast.OperationStmt) and stmt.result is not None:
                symbol = self.info.declared(stmt, stmt.result.id)
                typed = stmt.operation.words[1] if len(stmt.operation.words) > 1 else None
            else:
                assert isinstance(stmt, ast.OperationStmt)
                symbol = self._symbol_of_name(stmt.operation.args[0])
            owner = self.info.mma_owners.get(symbol) if symbol is not None else None
            target = typed or (owner.accumulator if owner is not None else None)
            if target is not None and loses_precision(source, target):
                self.sink.warning(
                    f"The implicit type conversion may lose precision: '{source}' to '{target}'", expr.span
                )

    def _check_accumulators_multiplied(self, function: ast.Function) -> None:
        """An accumulator takes its shape, so its registers, from the MMAs that use it: one without any
        cannot be laid out in registers on CUDA."""
        for stmt in ast.walk_statements(function.body):
            if isinstance(stmt, ast.AccumulatorArrayDecl):
                name = stmt.name
            elif (
                isinstance(stmt, ast.OperationStmt)
                and stmt.result is not None
                and stmt.operation.family == "mma"
                and stmt.operation.words[:1] == ["fill"]
            ):
                name = stmt.result.id
            else:
                continue
            if id(stmt) not in self.multiplied:
                self.hopper_rule(
                    f"the MMA operation of accumulator '{name}' cannot be executed: no MMA uses it, so "
                    "the MMA information is incomplete (its shape and its registers come from the mma.row/col that "
                    "multiplies into it); remove it, or use it in an MMA (an inner declaration of the same name is "
                    "another accumulator)",
                    stmt.span,
                )


def on_warp(owner: MmaOwner | None) -> bool:
    """Whether an accumulator's MMAs run on warps (mma.sync) rather than warpgroups (WGMMA)."""
    return owner is not None and register_level(owner.context.level_kinds) == Level.WARP


def accumulator_type(symbol: Symbol | None, operand: str) -> str:
    """What `acc = mma.fill[.T] v` accumulates in: T where it is written, else the default for the operands;
    what `acc = mma.load TILE;` does: the tile's type."""
    declaration = symbol.declaration if symbol is not None else None
    if symbol is not None and loads_a_tile(symbol) and isinstance(symbol.value, Accumulator):
        return symbol.value.elem
    if isinstance(declaration, ast.AccumulatorArrayDecl) and declaration.elem is not None:
        return declaration.elem
    if isinstance(declaration, ast.OperationStmt):
        words = declaration.operation.words
        if len(words) > 1 and words[0] == "fill":
            return words[1]
    return default_accumulator(operand)


def loads_a_tile(symbol: Symbol) -> bool:
    """Whether `symbol` is declared by `x = mma.load TILE;`."""
    declaration = symbol.declaration
    return (
        isinstance(declaration, ast.OperationStmt)
        and declaration.operation.family == "mma"
        and declaration.operation.words[:1] == ["load"]
        and len(declaration.operation.args) == 1
    )


def off_its_warps(info: FunctionInfo, expr: ast.Expr, context: Context, what: str) -> tuple[str, Note] | None:
    """An accumulator declared above the warps that multiply into it is one per warp: it is stored and
    its elements are visited inside their `group` scope, where each warp has its own."""
    root = accumulator_root(expr)
    symbol = info.symbol_of.get(id(root)) if root is not None else None
    owner = info.mma_owners.get(symbol) if symbol is not None else None
    if symbol is None or owner is None:
        return None
    if not on_warp(owner) or Level.WARP in context.level_kinds:
        return None
    message = (
        f"accumulator '{symbol.name}' holds one tile per warp (its MMAs run in a 'group' scope): {what} it "
        "inside that scope, where each warp has its own"
    )
    return message, Note("its MMAs run here", owner.span)


def accumulator_root(expr: ast.Expr) -> ast.Name | None:
    """The name an accumulator expression starts from: `mc` of `mc` and of `mc[0][i]` (an accumulator array)."""
    while isinstance(expr, ast.Index):
        expr = expr.value
    return expr if isinstance(expr, ast.Name) else None
