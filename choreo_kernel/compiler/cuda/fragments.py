"""Register fragments on CUDA: `frag` buffers, `apply`, `reduce_max` / `reduce_sum`, `copy`, `__to<T>(acc)`.

A [64 * t, N] fragment or accumulator is spread over the 128 threads of its warpgroup in WGMMA's
accumulator layout (choreo_runtime.cuh, "register fragments"): each thread holds t * N / 2 elements,
16-bit ones packed two to a register. A row vector [64 * t] holds the 2 * t rows a thread's quad owns.
`apply {i, j} in x.span` becomes a fully unrolled loop over the thread's own registers, with i and j
the logical row and column of each; the analysis made sure that the body touches no other element
(resolve/fragments.py), so no thread needs another's registers. A row reduction combines a thread's
columns as a balanced tree (short dependency chains) and then the quad's 4 lanes with two shuffles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.cuda import cexpr, elements
from choreo_kernel.compiler.cuda.context import KernelContext
from choreo_kernel.compiler.cuda.views import AccumulatorRegisters, LoweringError, Operand, RowRegisters
from choreo_kernel.compiler.printer import expression
from choreo_kernel.compiler.semantics.launch import register_owner
from choreo_kernel.compiler.semantics.levels import Storage

Registers = AccumulatorRegisters | RowRegisters
REDUCTIONS = {"reduce_max": "choreo::MaxOf", "reduce_sum": "choreo::SumOf"}


@dataclass(frozen=True)
class _Visit:
    """One apply's loop: the C variable of the register visited, and the tile shape (None for rows)."""

    register: str
    columns: int | None
    rows: int
    layout: str = "fragment"  # the runtime's functions of the tile's layout: fragment_row, fragment8_row, ...


class Fragments:
    """Lowers the register-level statements of one kernel."""

    def __init__(self, emitter: KernelContext) -> None:
        self.emitter = emitter
        self.visit: _Visit | None = None
        emitter.expressions.register_element = self.element
        emitter.register_operand = self.register_operand

    # ------------------------------------------------------------------ declarations

    def declare(self, stmt: ast.BufferDecl) -> Registers:
        emitter = self.emitter
        dims = [emitter.expressions.constant(d, f"a dimension of fragment '{stmt.name}'") for d in stmt.shape]
        name = emitter.names.local(stmt.name)
        tile_rows = register_owner(emitter.info.context_of[id(stmt)]).tile_rows  # 16: a warp's, mma.sync's
        registers: Registers
        if len(dims) == 1:
            registers = RowRegisters(cexpr.name(name), dims[0], tile_rows)
            layout = f"rows {_row_text(tile_rows)} of each {tile_rows}-row tile"
        else:
            registers = AccumulatorRegisters(cexpr.name(name), stmt.elem_type, dims[0], dims[1], tile_rows)
            layout = (
                "WGMMA's 8-bit A layout (k32)"
                if registers.eight_bit
                else "the WGMMA accumulator layout"
                if tile_rows == 64
                else "the mma.sync accumulator layout"
            )
        emitter.out.source(stmt)
        emitter.out.line(
            f"{registers.c_type} {name}[{registers.registers}];  // {stmt.elem_type} {dims}: {layout}, per thread"
        )
        if stmt.init is not None:
            value = emitter.expressions.operand(stmt.init[0])
            fill = elements.convert(value.expr, value.type, "f32")
            emitter.out.line(f"choreo::fill_fragment{_packed_template(registers)}({name}, {fill.text});")
        return registers

    # ------------------------------------------------------------------ apply

    def apply(self, stmt: ast.Apply, bind: Callable[[list[Operand]], None], body: Callable[[], None]) -> None:
        emitter, out = self.emitter, self.emitter.out
        if self.visit is not None:
            raise LoweringError("'apply' does not nest", stmt)
        target = stmt.target.value if isinstance(stmt.target, ast.Member) else stmt.target
        registers = emitter.expressions.value(target)
        if not isinstance(registers, (AccumulatorRegisters, RowRegisters)):
            raise LoweringError("'apply' walks the elements of an accumulator or a fragment", stmt.target)
        out.source(stmt)
        register = emitter.names.fresh(f"{emitter.names.source(_text(target))}_element")
        skip = ""
        if isinstance(registers, AccumulatorRegisters):
            columns = registers.columns
            count = registers.elements
            tile_rows = registers.tile_rows  # 16: a warp's accumulator (cuda/warp_mma.py)
            columns_text = (
                "columns (lane % 4) * 4 .. + 3 of each 16-column half of each 32-column slice (WGMMA's 8-bit A)"
                if registers.eight_bit
                else "columns (lane % 4) * 2 and + 1 of each 8-column group"
            )
            out.line(
                f"// each thread visits its {count} elements of the {registers.rows}x{columns} tile: rows "
                f"{_row_text(tile_rows)} of each {tile_rows}-row tile, {columns_text}"
            )
            layout = _layout(registers)
            row = cexpr.raw(f"choreo::{layout}_row<{columns}, {tile_rows}>({register})")
            column = cexpr.raw(f"choreo::{layout}_column<{columns}>({register})")
            bound = [
                Operand(row, "s32", cexpr.const(registers.rows)),
                Operand(column, "s32", cexpr.const(columns)),
            ]
            visit = _Visit(register, columns, registers.rows, layout)
            if registers.rows % tile_rows:  # an 8-row tile (mma.sync m8n8) fills the top half of a fragment
                skip = f"if ({row.text} >= {registers.rows}) continue;  // not the tile's: the fragment's padding rows"
        else:
            count = registers.registers
            out.line(
                f"// each thread visits its {count} rows ({_row_text(registers.tile_rows)} of each "
                f"{registers.tile_rows}-row tile), as its quad does"
            )
            row = cexpr.raw(f"choreo::vector_row<{registers.tile_rows}>({register})")
            bound = [Operand(row, "s32", cexpr.const(registers.rows))]
            visit = _Visit(register, None, registers.rows)
        sums = self._row_sums_started(stmt)
        out.line("#pragma unroll")
        with out.block(f"for (int {register} = 0; {register} < {count}; ++{register})"):
            if skip:
                out.line(skip)
            bind(bound)
            self.visit = visit
            try:
                body()
            finally:
                self.visit = None
        for rows, start in sums:
            out.line(
                f"// each row's sum: the partial sums of the 4 lanes of its quad (shfl.xor 1, 2), after {start}"
            )
            out.line(f"choreo::sum_quads({rows.name.text}, {start});")

    def _row_sums_started(self, stmt: ast.Apply) -> list[tuple[RowRegisters, str]]:
        """The row vectors this apply sums rows into (resolve/fragments.py), each set aside and zeroed so
        that every lane sums only its own columns."""
        emitter, out = self.emitter, self.emitter.out
        sums = []
        for expr in emitter.info.row_sums.get(id(stmt), ()):
            rows = emitter.expressions.value(expr)
            if not isinstance(rows, RowRegisters):
                raise LoweringError("an apply sums rows into a row vector fragment", expr)
            start = emitter.names.fresh(f"{emitter.names.source(_text(expr))}_before")
            out.line(
                f"// '{expression(expr)}' sums each row: its value before the apply, then each lane from 0"
            )
            out.line(f"float {start}[{rows.registers}];")
            out.line(f"choreo::copy_fragment({start}, {rows.name.text});")
            out.line(f"choreo::fill_fragment({rows.name.text}, 0.0f);")
            sums.append((rows, start))
        return sums

    def element(self, base: Registers, expr: ast.Method) -> Operand:
        """`acc.at(i, j)` / `m.at(i)` inside an apply: the register of this thread's current element."""
        visit = self.visit
        if visit is None:
            raise LoweringError("the elements of a fragment are read and written inside 'apply'", expr)
        if isinstance(base, RowRegisters):
            if base.rows != visit.rows:
                raise LoweringError(
                    f"a row vector of {base.rows} rows in an apply over {visit.rows} rows", expr
                )
            index = (
                cexpr.raw(visit.register)
                if visit.columns is None
                else cexpr.raw(f"choreo::{visit.layout}_row_register<{visit.columns}>({visit.register})")
            )
            return Operand(cexpr.raw(f"{base.name.text}[{index.text}]"), "f32", storage=Storage.LOCAL)
        if visit.columns != base.columns or base.rows != visit.rows or _layout(base) != visit.layout:
            raise LoweringError(f"a {base.rows}x{base.columns} tile in an apply over another shape", expr)
        if base.elem in ("f32", "s32"):
            return Operand(cexpr.raw(f"{base.name.text}[{visit.register}]"), base.elem, storage=Storage.LOCAL)
        c_type = elements.c_type(base.elem)
        access = f"choreo::packed_element<{c_type}>({base.name.text}, {visit.register})"
        return Operand(cexpr.raw(access), base.elem, storage=Storage.LOCAL)

    # ------------------------------------------------------------------ whole fragments

    def update(self, stmt: ast.Assign) -> None:
        """`acc += bias;`: every element of the thread's registers, whatever their layout."""
        emitter, out = self.emitter, self.emitter.out
        registers = self._registers(stmt.target)
        scalar = emitter.expressions.operand(stmt.value)
        out.source(stmt)
        if isinstance(registers, RowRegisters):
            count, elem = registers.registers, "f32"
        else:
            count, elem = registers.elements, registers.elem
        name = emitter.names.fresh(f"{emitter.names.source(_text(stmt.target))}_element")
        operator = stmt.op[:-1]
        if elem in ("f32", "s32"):
            value = elements.convert(scalar.expr, scalar.type, elem)
            update = f"{registers.name.text}[{name}] {stmt.op} {value.text};"
        else:  # 16-bit (8-bit) elements packed two (four) to a register: computed in f32, rounded back
            value = elements.convert(scalar.expr, scalar.type, "f32")
            element = f"choreo::packed_element<{elements.c_type(elem)}>({registers.name.text}, {name})"
            update = f"{element} = choreo::to_{elem}(choreo::to_f32({element}) {operator} {value.text});"
        out.line("#pragma unroll")
        with out.block(f"for (int {name} = 0; {name} < {count}; ++{name})"):
            out.line(update)

    def operation(self, stmt: ast.FragmentOp) -> None:
        out = self.emitter.out
        out.source(stmt)
        if stmt.name == "all_reduce_sum":
            out.line(
                "// each row's total is already in every lane of its quad: the apply that summed it added them"
            )
            return
        if stmt.name == "copy":
            target = self._registers(stmt.args[0])
            out.line(self.convert(target, stmt.args[1]))
            return
        rows, tile = self._registers(stmt.args[0]), self._registers(stmt.args[1])
        if (
            not isinstance(rows, RowRegisters)
            or not isinstance(tile, AccumulatorRegisters)
            or tile.elem != "f32"
            or rows.tile_rows != tile.tile_rows
        ):
            raise LoweringError(f"'{stmt.name}' reduces an f32 tile into a row vector on CUDA", stmt)
        out.line(
            "// each row's N / 4 columns in this thread as a balanced tree, then the 4 lanes of its quad"
            " (shfl.xor 1, 2)"
        )
        out.line(
            f"choreo::reduce_rows<{REDUCTIONS[stmt.name]}, {tile.columns}, {tile.tiles}>"
            f"({rows.name.text}, {tile.name.text});"
        )

    def convert(self, target: Registers, source: ast.Expr) -> str:
        """`target = source` over whole fragments, where `source` may be `__to<T>(acc)`."""
        if isinstance(source, ast.Cast):
            source = source.operand
        value = self._registers(source)
        if type(value) is not type(target) or value.rows != target.rows:
            raise LoweringError("'copy' needs fragments of the same shape", source)
        if isinstance(target, AccumulatorRegisters) and isinstance(value, AccumulatorRegisters):
            if target.columns != value.columns:
                raise LoweringError("'copy' needs fragments of the same shape", source)
            if target.c_type != value.c_type:
                packed = target if target.c_type == "unsigned" else value
                return (
                    f"choreo::convert_fragment<{elements.c_type(packed.elem)}>"
                    f"({target.name.text}, {value.name.text});"
                )
            if target.elem != value.elem:
                raise LoweringError(f"'copy' of {value.elem} into {target.elem}: convert through f32", source)
        return f"choreo::copy_fragment({target.name.text}, {value.name.text});"

    def register_operand(self, expr: ast.Expr) -> AccumulatorRegisters | None:
        """WGMMA's A from registers: a 16-bit or 8-bit fragment, or `__to<f16>(acc)` converted here into a new one."""
        emitter = self.emitter
        if isinstance(expr, ast.Cast):
            value = emitter.expressions.value(expr.operand)
            if not isinstance(value, AccumulatorRegisters):
                return None
            name = emitter.names.fresh(f"{emitter.names.source(_text(expr.operand))}_{expr.type_name}")
            converted = AccumulatorRegisters(cexpr.name(name), expr.type_name, value.rows, value.columns)
            emitter.out.line(f"{converted.c_type} {name}[{converted.registers}];  // {expression(expr)}")
            emitter.out.line(self.convert(converted, expr))
            return converted
        value = emitter.expressions.value(expr)
        if isinstance(value, AccumulatorRegisters) and value.elem in ("f16", "bf16", "f8_e4m3", "f8_e5m2"):
            return value
        return None

    def _registers(self, expr: ast.Expr) -> Registers:
        value = self.emitter.expressions.value(expr)
        if not isinstance(value, (AccumulatorRegisters, RowRegisters)):
            raise LoweringError("an accumulator or a fragment is needed here", expr)
        return value


def _packed_template(registers: Registers) -> str:
    if isinstance(registers, AccumulatorRegisters) and registers.c_type == "unsigned":
        return f"<{elements.c_type(registers.elem)}>"
    return ""


def _layout(registers: AccumulatorRegisters) -> str:
    """The runtime's name of a tile's register layout: the accumulator's, or WGMMA's 8-bit A (k32)."""
    return "fragment8" if registers.eight_bit else "fragment"


def _row_text(tile_rows: int) -> str:
    return "warp * 16 + lane / 4 and + 8" if tile_rows == 64 else "lane / 4 and + 8"


def _text(expr: ast.Expr) -> str:
    return expr.id if isinstance(expr, ast.Name) else "fragment"
