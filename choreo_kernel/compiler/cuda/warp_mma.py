"""Warp-level MMA: the `mma` statements of a `group` scope (no `group-4` around it), as mma.sync.

`mma.row.col acc, a, b` on one warp becomes, for each 16 (or 8) rows of the tile, each K step of the
instruction (semantics/mma_shapes.py: m16n8k16 or k8 for 16-bit operands, m16n8k32 or k16 for 8-bit
integers, m8n8k4 and m8n8k16 for 8-row tiles) and each 8 columns, one `mma.sync.aligned` whose A and B
registers each lane loads from the operand tiles (shared or global memory) with plain loads, into the
fragment layout that choreo_runtime.cuh ("warp-level MMA") describes lane by lane. The accumulator is
the WGMMA one of a warpgroup of one warp with 16-row tiles (AccumulatorRegisters with tile_rows 16; an
8-row tile uses the top half of one), declared where the source declares it: above the warps, every
lane holds its own copy, which is its warp's.

`mma.load` names its tile for the MMA that uses it, as on a warpgroup: that MMA loads the
registers, so the tile must not change in between (the sim reads it at the load).
An mma.sync is synchronous: each lane's registers hold the result when it returns, so the future of
an `.async` one is complete when issued, and its `wait` emits nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.resolve.warp_mma import on_warp
from choreo_kernel.compiler.analysis.values import Symbol
from choreo_kernel.compiler.cuda import cexpr, elements
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.context import KernelContext
from choreo_kernel.compiler.cuda.views import (
    AccumulatorArray,
    AccumulatorRegisters,
    LoweringError,
    View,
    accumulator_dims,
)
from choreo_kernel.compiler.semantics.levels import Level, register_level
from choreo_kernel.compiler.semantics.mma_shapes import (
    WARP_MMA,
    WARP_TILE_ROWS,
    WarpInstruction,
    warp_instruction,
)

STORE_TYPES = ("f32", "f16", "bf16", "s32")  # what mma.store converts a warp's accumulator into


def wrapper_name(instruction: WarpInstruction, accumulator: str) -> str:
    return f"mma_sync_{instruction.shape}_{accumulator}_{instruction.kind}"


def wrapper(instruction: WarpInstruction, accumulator: str) -> str:
    """The device function of one mma.sync form: D = A * B + D on this lane's registers (of m8n8k4, moved
    into the rows its quad pairs hold and back, choreo_runtime.cuh)."""
    count = instruction.c_registers(accumulator)
    a_count, b_count = instruction.a_registers, instruction.b_registers
    c_type = {"f32": "float", "s32": "int"}.get(accumulator, "unsigned")
    constraint = "+f" if accumulator == "f32" else "+r"
    d = ", ".join(f"%{i}" for i in range(count))
    a = ", ".join(f"%{count + i}" for i in range(a_count))
    b = ", ".join(f"%{count + a_count + i}" for i in range(b_count))
    outputs = ", ".join(f'"{constraint}"(acc[{i}])' for i in range(count))
    inputs = ", ".join([*(f'"r"(a[{i}])' for i in range(a_count)), *(f'"r"(b[{i}])' for i in range(b_count))])
    head = [
        f"// {instruction.ptx(accumulator)}: acc ({count} {c_type} registers of this lane) += A * B,",
        f"// A in {a_count} registers, B in {b_count} (the layouts of the 'warp-level MMA' section).",
        f"CHOREO_DEVICE void {wrapper_name(instruction, accumulator)}({c_type}* fragment, "
        f"const unsigned (&a)[{a_count}], const unsigned (&b)[{b_count}]) {{",
    ]
    if instruction.quad_pairs:
        head += [f"  unsigned acc[{count}];", "  to_quad_pair_rows(acc, fragment[0]);"]
    else:
        head.append(f"  {c_type}* acc = fragment;")
    tail = ["  fragment[0] = from_quad_pair_rows(acc);"] if instruction.quad_pairs else []
    return "\n".join(
        [
            *head,
            f'  asm volatile("{instruction.ptx(accumulator)} {{{d}}}, {{{a}}}, {{{b}}}, {{{d}}};"',
            f"               : {outputs}",
            f"               : {inputs});",
            *tail,
            "}",
        ]
    )


@dataclass
class WarpMma:
    """The warp-level MMA statements of one kernel, and the mma.sync forms they use."""

    emitter: KernelContext
    forms: dict[str, tuple[WarpInstruction, str]] = field(default_factory=dict)
    issued: set[Symbol] = field(default_factory=set)  # futures of `.async` MMAs: complete when issued

    def handles(self, stmt: ast.OperationStmt) -> bool:
        """Whether `stmt` is a warp's: its accumulator's MMAs run on warps, or it loads an operand there."""
        words = stmt.operation.words
        if words[0] == "load":
            context = self.emitter.info.context_of.get(id(stmt))
            levels = context.level_kinds if context is not None else ()
            return register_level(levels) == Level.WARP
        if words[0] == "fill" and stmt.result is not None:
            symbol = self.emitter.info.declared(stmt, stmt.result.id)
            return symbol is not None and on_warp(self.emitter.info.mma_owners.get(symbol))
        value = self.emitter.expressions.value(stmt.operation.args[0])
        return isinstance(value, AccumulatorRegisters) and value.tile_rows == WARP_TILE_ROWS

    def operation(self, stmt: ast.OperationStmt) -> None:
        words = stmt.operation.words
        if words[0] == "fill":
            self._fill(stmt)
        elif words[0] == "load":
            self._load(stmt)
        elif words[0] == "store":
            self._store(stmt, "transp" in words)
        else:
            self._execute(stmt, words[0] == "col", words[1] == "col")

    def waits(self, symbol: Symbol) -> bool:
        """Whether `symbol` is the future of a warp's `.async` MMA, which `wait` finds complete."""
        return symbol in self.issued

    def wrappers(self) -> dict[str, str]:
        return {name: wrapper(*form) for name, form in self.forms.items()}

    # ------------------------------------------------------------------ accumulators

    def _fill(self, stmt: ast.OperationStmt) -> None:
        emitter = self.emitter
        args = stmt.operation.args
        if stmt.result is None:
            accumulator = self._accumulator(args[0])
            value = emitter.expressions.operand(args[1])
        else:
            symbol = emitter.info.declared(stmt, stmt.result.id)
            assert symbol is not None  # handles() found its owner
            accumulator = self._declare(symbol, emitter.info.mma_owners[symbol].accumulator, stmt)
            value = emitter.expressions.operand(args[0])
        fill = elements.convert(value.expr, value.type, "f32")
        emitter.out.line(f"choreo::fill_accumulator({accumulator.name.text}, {fill.text});")

    def declare_array(self, stmt: ast.AccumulatorArrayDecl) -> None:
        """`frag mc[2][3] {0.0};`: a warp's accumulators, one flat C array of their registers, each filled."""
        emitter = self.emitter
        symbol = emitter.info.declared(stmt, stmt.name)
        owner = emitter.info.mma_owners.get(symbol) if symbol is not None else None
        # the analysis rejects an array that no warp's MMA multiplies into
        assert symbol is not None and owner is not None and on_warp(owner)
        counts = tuple(emitter.expressions.constant(d, "the size of an accumulator array") for d in stmt.dims)
        slots = math.prod(counts)
        element = self._declare(symbol, owner.accumulator, stmt, slots)
        emitter.bindings[symbol] = AccumulatorArray(element, counts)
        value = emitter.expressions.operand(stmt.init[0]) if stmt.init else None
        fill = elements.convert(value.expr, value.type, "f32").text if value is not None else "0.0f"
        slot = emitter.names.fresh("slot")
        emitter.out.line(
            f"for (int {slot} = 0; {slot} < {slots}; ++{slot}) "
            f"choreo::fill_accumulator({element.name.text}[{slot}], {fill});"
        )

    def _declare(self, symbol: Symbol, elem: str, stmt: ast.Stmt, slots: int = 0) -> AccumulatorRegisters:
        """The registers of a warp's accumulator (of `slots` of them: an array's), declared where the source
        declares it."""
        emitter = self.emitter
        rows, columns = accumulator_dims(symbol, stmt)
        name = emitter.names.local(symbol.name)
        accumulator = AccumulatorRegisters(cexpr.name(name), elem, rows, columns, WARP_TILE_ROWS)
        halves = ", the top half of each" if rows < WARP_TILE_ROWS else ""
        array, each = (f"[{slots}]", f"{slots} accumulators of ") if slots else ("", "")
        emitter.out.line(
            f"{accumulator.c_type} {name}{array}[{accumulator.registers}];  // {each}{rows}x{columns} {elem}: "
            f"{accumulator.tiles * columns // 8} m16n8 fragment(s) per warp{halves}, each lane its own registers"
        )
        emitter.bindings[symbol] = accumulator
        return accumulator

    def _accumulator(self, expr: ast.Expr) -> AccumulatorRegisters:
        value = self.emitter.expressions.value(expr)
        if not isinstance(value, AccumulatorRegisters) or value.tile_rows != WARP_TILE_ROWS:
            raise LoweringError("a warp's accumulator (from mma.fill) is needed here", expr)
        return value

    def _load(self, stmt: ast.OperationStmt) -> None:
        view = self.emitter.expressions.view(stmt.operation.args[0])
        if view.swizzle:
            raise LoweringError(
                f"'{view.root}' is swizzled (a TMA/WGMMA layout); a warp's MMA reads plain row-major tiles",
                stmt,
            )
        symbol = self.emitter.info.symbol_of.get(id(stmt.result)) if stmt.result is not None else None
        if symbol is None and stmt.result is not None:
            symbol = self.emitter.info.declared(stmt, stmt.result.id)
        if symbol is not None and id(stmt) in self.emitter.info.loaded_accumulators:
            self._load_accumulator(symbol, view, stmt)
            return
        if symbol is not None:
            self.emitter.bindings[symbol] = view
        self.emitter.out.line("// the MMA that uses this tile loads each lane's registers from it")

    def _load_accumulator(self, symbol: Symbol, view: View, stmt: ast.OperationStmt) -> None:
        """`acc = mma.load TILE;` that an MMA accumulates into: registers that start from the tile (C)."""
        accumulator = self._declare(symbol, view.elem, stmt)
        dims = [d.value for d in view.dims]
        if dims != [accumulator.rows, accumulator.columns]:
            raise LoweringError(
                f"'{symbol.name}' loads a plain {accumulator.rows}x{accumulator.columns} tile as its accumulator",
                stmt,
            )
        rows, columns = view.strides[0], view.strides[1]
        self.emitter.out.line(
            f"choreo::load_warp_accumulator<{accumulator.rows}, {accumulator.columns}>({accumulator.name.text}, "
            f"{view.start.text}, {rows.text}, {columns.text});  // each lane its elements of the tile"
        )

    def _store(self, stmt: ast.OperationStmt, transposed: bool) -> None:
        emitter = self.emitter
        accumulator = self._accumulator(stmt.operation.args[0])
        destination = emitter.expressions.view(stmt.operation.args[1])
        emitter.note_written(stmt.operation.args[1])
        dims = [d.value for d in destination.dims]
        shape = (
            [accumulator.columns, accumulator.rows] if transposed else [accumulator.rows, accumulator.columns]
        )
        if dims != shape or destination.swizzle:
            raise LoweringError(
                f"'{' '.join(stmt.operation.words)}' writes a {accumulator.rows}x{accumulator.columns} accumulator "
                f"into a plain {shape[0]}x{shape[1]} tile",
                stmt,
            )
        if destination.elem not in STORE_TYPES:
            raise LoweringError(
                f"'mma.store' converts into {', '.join(STORE_TYPES)}, not {destination.elem}", stmt
            )
        rows, columns = destination.strides[0], destination.strides[1]
        if transposed:
            rows, columns = columns, rows
            emitter.out.line("// transposed: element (i, j) of the accumulator goes to (j, i) of the tile")
        emitter.out.line(
            f"choreo::store_warp_accumulator<{accumulator.rows}, {accumulator.columns}>({accumulator.name.text}, "
            f"{destination.start.text}, {rows.text}, {columns.text});"
        )

    # ------------------------------------------------------------------ the MMA itself

    def _execute(self, stmt: ast.OperationStmt, a_transposed: bool, b_col: bool) -> None:
        emitter, out = self.emitter, self.emitter.out
        args = stmt.operation.args
        accumulator = self._accumulator(args[0])
        a, b = emitter.expressions.view(args[1]), emitter.expressions.view(args[2])
        # (m, k) of A and (k, n) of B as element strides: `col` A is [K, M], `row` B is [N, K].
        a_m, a_k = _strides(a, a_transposed, args[1])
        b_k, b_n = _strides(b, not b_col, args[2])
        m = _extent(a, 1 if a_transposed else 0)
        k = _extent(a, 0 if a_transposed else 1)
        n = _extent(b, 1 if b_col else 0)
        rows = 8 if m == 8 else WARP_TILE_ROWS  # an 8-row tile takes the m8n8 forms
        instruction = warp_instruction(a.elem, k, accumulator.elem, rows)
        if instruction is None or b.elem != a.elem:
            raise LoweringError(
                f"a warp's MMA takes {', '.join(WARP_MMA)} operands of one type in a tile of the mma.sync forms; "
                f"here m{m}n{n}k{k} of {a.elem}, {b.elem} into {accumulator.elem}",
                stmt,
            )
        if (m, n) != (accumulator.rows, accumulator.columns):
            raise LoweringError(
                f"this MMA is m{m}n{n}k{k}; the accumulator is {accumulator.rows}x{accumulator.columns}", stmt
            )
        name = wrapper_name(instruction, accumulator.elem)
        self.forms[name] = (instruction, accumulator.elem)
        per_fragment = 2 if accumulator.elem == "f16" else 4  # registers of one (padded) m16n8 fragment
        tiles, steps, groups = m // instruction.m, k // instruction.k, n // 8
        out.line(
            f"// {instruction.ptx(accumulator.elem)}: {tiles} x {groups} fragment(s) of {instruction.m}x8, "
            f"{steps} K step(s) of {instruction.k}"
        )
        m_tile, k_step, n_tile = (emitter.names.fresh(word) for word in ("m_tile", "k_step", "n_tile"))
        a_regs, b_regs = emitter.names.fresh("a_registers"), emitter.names.fresh("b_registers")
        a_start = _offset(a.start, (m_tile, instruction.m, a_m), (k_step, instruction.k, a_k))
        b_start = _offset(b.start, (k_step, instruction.k, b_k), (n_tile, 8, b_n))
        fragment = f"{accumulator.name.text} + ({m_tile} * {groups} + {n_tile}) * {per_fragment}"
        if instruction.quad_pairs:
            load_a, load_b = "choreo::load_quad_pair_a", "choreo::load_quad_pair_b"
            a_text = "A: row lane % 4 + 4 * (lane / 16), each quad pair the whole 8x4 tile"
            b_text = "B: column lane % 4 + 4 * (lane / 16)"
        else:
            load_a, load_b = f"choreo::load_mma_a<{instruction.k}>", f"choreo::load_mma_b<{instruction.k}>"
            a_text = "A: rows lane / 4" + (" and + 8" if instruction.m == 16 else "") + ", K by lane % 4"
            b_text = "B: column lane / 4, K rows by lane % 4"
        out.line("#pragma unroll")
        with out.block(f"for (int {m_tile} = 0; {m_tile} < {tiles}; ++{m_tile})"):
            out.line("#pragma unroll")
            with out.block(f"for (int {k_step} = 0; {k_step} < {steps}; ++{k_step})"):
                out.line(f"unsigned {a_regs}[{instruction.a_registers}];  // {a_text}")
                out.line(f"{load_a}({a_regs}, {a_start.text}, {a_m.text}, {a_k.text});")
                out.line("#pragma unroll")
                with out.block(f"for (int {n_tile} = 0; {n_tile} < {groups}; ++{n_tile})"):
                    out.line(f"unsigned {b_regs}[{instruction.b_registers}];  // {b_text}")
                    out.line(f"{load_b}({b_regs}, {b_start.text}, {b_k.text}, {b_n.text});")
                    out.line(f"choreo::{name}({fragment}, {a_regs}, {b_regs});")
        future = emitter.info.futures.get(id(stmt))
        if future is not None:
            self.issued.add(future)


def _strides(view: View, transposed: bool, expr: ast.Expr) -> tuple[CExpr, CExpr]:
    """The element strides of an operand's (first, second) logical dimensions; `transposed` swaps them."""
    if len(view.dims) != 2 or view.swizzle:
        raise LoweringError(f"a warp's MMA operand ('{view.root}') is a plain 2-D tile", expr)
    first, second = view.strides
    return (second, first) if transposed else (first, second)


def _extent(view: View, axis: int) -> int:
    value = view.dims[axis].value
    if value is None:
        raise LoweringError(f"a warp's MMA operand ('{view.root}') needs a size known at compile time")
    return int(value)


def _offset(start: CExpr, *steps: tuple[str, int, CExpr]) -> CExpr:
    """`start` moved by `index * size` elements along each (index, size, stride)."""
    terms = [cexpr.multiply(cexpr.name(index), cexpr.const(size), stride) for index, size, stride in steps]
    return cexpr.add(start, *terms)
