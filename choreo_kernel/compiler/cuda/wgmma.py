"""WGMMA: the `mma` statements on Hopper warpgroups, as wgmma.mma_async on shared-memory operands.

An accumulator lives in the registers of each thread of its warpgroup: `rows / 64` fragments of
an m64nN instruction (language.md 12.5), N being the accumulator's columns. `mma.row.row acc, a, b`
becomes, for each 64 rows of `a` and each K step of the instruction (every step reads 32 bytes of
each row: k16 for 16-bit types, k8 for tf32, k32 for 8-bit types), one `wgmma.mma_async` whose
operands are descriptors of the swizzled shared tiles (the layout cuda/swizzles.py gives the buffer:
rows of one swizzle, or panels one swizzle wide where the rows are wider, which a K step crosses
and an MN-major descriptor steps over by its leading byte offset); the statement's instructions form one
commit group. A tile is K-major when its rows run along K (`a` of `row`, `b` of `row`: the
prototype's "TN" GEMM) and MN-major otherwise (`b` of `mma.row.col` is [K, N]), which WGMMA reads
transposed (16-bit types only).

Completion (futures.md): a synchronous mma waits for its own group at once, except that
consecutive synchronous MMAs of one block share the wait of the last (language.md 12.4: nothing
between them can tell), so the tensor cores do not drain between them; `wait op` waits with
`wgmma.wait_group N`, N being the fewest async MMA groups that the path can have committed after
`op`'s group when it reaches the wait, over every way of getting there (loops included): groups
complete in order, so those N may keep running. `wait_depths` derives N by walking the kernel
(analysis/flow.py's walk, as the futures rules walk it).

An MMA right after an async MMA into the same accumulator (a K that spans two swizzle panels)
accumulates after it in the tensor cores' order: it is not fenced in between (`_chained`). The
register work between an MMA's issue and its wait is pinned before the wait (`_pin_register_work`),
or nvcc may sink it past the wait and lose the overlap with the MMA.

`mma.load` names its tile for the MMA that uses it: the operand stays in shared memory and is
read by descriptor (the tile must not change before that MMA, as in any WGMMA program); a global
tile is first copied into a shared tile of the warpgroup (`_stage`).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field, replace

from choreo_kernel.compiler import ast, printer
from choreo_kernel.compiler.analysis.device_checks import own_expressions
from choreo_kernel.compiler.analysis.flow import ForwardFlow, is_rotation, rotate_futures
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES, Symbol
from choreo_kernel.compiler.cuda import cexpr, copies, elements
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.context import KernelContext
from choreo_kernel.compiler.cuda.threads import unit_group
from choreo_kernel.compiler.cuda.views import (
    AccumulatorRegisters,
    LoweringError,
    RowRegisters,
    View,
    accumulator_dims,
    buffer,
)
from choreo_kernel.compiler.cuda.wgmma_registers import load_registers, store
from choreo_kernel.compiler.semantics import sparsity
from choreo_kernel.compiler.semantics.levels import Level, Storage
from choreo_kernel.compiler.semantics.swizzle import operand_swizzle

PTX_TYPES = {"f16": "f16", "bf16": "bf16", "tf32": "tf32", "f8_e4m3": "e4m3", "f8_e5m2": "e5m2"}
STEP_BYTES = 32  # each K step of a wgmma reads 32 bytes of every operand row
REGISTERS_PER_LINE = 8
MAX_WAIT_DEPTH = 7  # deeper than any real pipeline: wait_group 7 is as good as no wait


@dataclass(frozen=True)
class Instruction:
    """One form of wgmma.mma_async: m64nNkK, the accumulator and operand types, which operands are MN-major."""

    n: int
    accumulator: str  # f32 or f16
    operand: str  # the Choreo element type of A and B
    a_mn_major: bool
    b_mn_major: bool
    a_registers: bool = False  # A from registers (RS): a 16-bit fragment (accumulator layout) or an 8-bit one
    sparse: bool = False  # `.sp`: A packed 2:4 (32 bytes of K / 2 per row), with a metadata register

    @property
    def k(self) -> int:
        """The dense K of one instruction: what 32 bytes of each A row hold (twice that when packed 2:4)."""
        return STEP_BYTES // ELEMENT_BYTES[self.operand] * (2 if self.sparse else 1)

    @property
    def registers(self) -> int:
        return self.n // 2 if self.accumulator == "f32" else self.n // 4

    @property
    def ptx(self) -> str:
        kind = PTX_TYPES[self.operand]
        sp = ".sp" if self.sparse else ""
        return f"wgmma.mma_async{sp}.sync.aligned.m64n{self.n}k{self.k}.{self.accumulator}.{kind}.{kind}"

    @property
    def name(self) -> str:
        majors = ("_a_mmajor" if self.a_mn_major else "") + ("_b_nmajor" if self.b_mn_major else "")
        majors += "_rs" if self.a_registers else ""
        majors += "_sp" if self.sparse else ""
        return f"wgmma_m64n{self.n}k{self.k}_{self.accumulator}_{PTX_TYPES[self.operand]}{majors}"


def wrapper(instruction: Instruction) -> str:
    """The device function for one wgmma form: its asm lists every accumulator register, so it is generated."""
    count = instruction.registers
    c_type = "float" if instruction.accumulator == "f32" else "unsigned"
    constraint = "+f" if instruction.accumulator == "f32" else "+r"
    registers = [f"%{i}" for i in range(count)]
    register_lines = [
        ", ".join(registers[i : i + REGISTERS_PER_LINE * 2]) for i in range(0, count, REGISTERS_PER_LINE * 2)
    ]
    rs = instruction.a_registers
    a_count = 4 if rs else 1  # RS: A's m64k16 slice is 4 registers of packed pairs per thread
    sixteen_bit = ELEMENT_BYTES[instruction.operand] == 2  # only .f16 / .bf16 take the transpose immediates
    transposes = (
        ""
        if not sixteen_bit
        else f", {int(instruction.b_mn_major)}"
        if rs
        else f", {int(instruction.a_mn_major)}, {int(instruction.b_mn_major)}"
    )
    a_major = "M-major: [K, M]" if instruction.a_mn_major else "K-major: [M, K]"
    b_major = "N-major: [K, N]" if instruction.b_mn_major else "K-major: [N, K]"
    a_text = (
        (
            "A from 4 registers of each thread (the accumulator layout, f16 pairs)"
            if sixteen_bit
            else "A from 4 registers of each thread (WGMMA's 8-bit k32 layout, 4 elements each)"
        )
        if rs
        else f"A ({a_major}) from shared memory through its descriptor"
    )
    a_operand = "{" + ", ".join(f"%{count + i}" for i in range(a_count)) + "}" if rs else f"%{count}"
    sparse = instruction.sparse  # the metadata register, then sparsity selector 0 (semantics/sparsity.py)
    flag = count + a_count + 1 + sparse
    metadata = f", %{count + a_count + 1}, 0" if sparse else ""
    if sparse:
        a_text = (
            "A (K-major, packed 2:4: [M, K / 2], metadata in e) from shared memory through its descriptor"
        )
    lines = [
        f"// {instruction.ptx}: acc ({count} {c_type} registers per thread) += A * B,",
        f"// {a_text}, B ({b_major}) from shared memory through its descriptor.",
        f"CHOREO_DEVICE void {instruction.name}({c_type}* acc, "
        f"{'const unsigned* a' if rs else 'unsigned long long a'}, unsigned long long b"
        f"{', unsigned e' if sparse else ''}) {{",
        "  asm volatile(",
        '      "{\\n.reg .pred accumulate;\\n"',
        f'      "setp.ne.b32 accumulate, %{flag}, 0;\\n"',
        f'      "{instruction.ptx} "',
        '      "{"',
        *(
            f'      "{line}{", " if index < len(register_lines) - 1 else ""}"'
            for index, line in enumerate(register_lines)
        ),
        f'      "}}, {a_operand}, %{count + a_count}{metadata}, accumulate, 1, 1{transposes};\\n}}\\n"',
    ]
    outputs = [f'"{constraint}"(acc[{i}])' for i in range(count)]
    output_lines = [
        ", ".join(outputs[i : i + REGISTERS_PER_LINE]) for i in range(0, count, REGISTERS_PER_LINE)
    ]
    lines.append(f"      : {output_lines[0]}{',' if len(output_lines) > 1 else ''}")
    lines.extend(
        f"        {line}{',' if index < len(output_lines) - 2 else ''}"
        for index, line in enumerate(output_lines[1:])
    )
    a_inputs = ", ".join(f'"r"(a[{i}])' for i in range(a_count)) if rs else '"l"(a)'
    e_input = '"r"(e), ' if sparse else ""
    lines.append(f'      : {a_inputs}, "l"(b), {e_input}"r"(1));')
    lines.append("}")
    return "\n".join(lines)


@dataclass
class Mma:
    """The MMA statements of one kernel, and the wgmma forms they use."""

    emitter: KernelContext
    instructions: dict[str, Instruction] = field(default_factory=dict)
    async_issues: dict[Symbol, AccumulatorRegisters] = field(
        default_factory=dict
    )  # in-flight futures: their accumulator
    depths: dict[tuple[int, Symbol], int] = field(default_factory=dict)
    operands: dict[Symbol, AccumulatorRegisters] = field(default_factory=dict)  # in-flight A registers
    pinned: set[int] = field(default_factory=set)  # the waits whose register work is pinned before them
    partials: dict[str, AccumulatorRegisters] = field(default_factory=dict)  # block scaling, by accumulator

    def __post_init__(self) -> None:
        self.depths = wait_depths(self.emitter.kernel, self.emitter.info)

    def operation(self, stmt: ast.OperationStmt) -> None:
        words = stmt.operation.words
        if words[0] == "fill":
            self._fill(stmt)
        elif words[0] == "load":
            self._load(stmt)
        elif words[0] == "store":
            self._store(stmt)
        elif words[0] == "scale":
            self._scale(stmt)
        else:
            self._execute(stmt, words[0] == "col", words[1] == "col")

    # ------------------------------------------------------------------ accumulators

    def _fill(self, stmt: ast.OperationStmt) -> None:
        emitter = self.emitter
        args = stmt.operation.args
        if stmt.result is None:
            accumulator = self._accumulator(args[0])
            value = emitter.expressions.operand(args[1])
        else:
            symbol = emitter.info.symbol_of.get(id(stmt.result))
            if symbol is None:
                return  # an accumulator nothing uses
            rows, columns = accumulator_dims(symbol, stmt)
            if rows % 64:
                raise LoweringError(
                    f"a WGMMA accumulator has a multiple of 64 rows per warpgroup, not {rows}", stmt
                )
            owner = emitter.info.mma_owners.get(symbol)  # the type the analysis decided (untyped: A's)
            name = emitter.names.local(symbol.name)
            accumulator = AccumulatorRegisters(
                cexpr.name(name), owner.accumulator if owner is not None else "f32", rows, columns
            )
            emitter.out.line(
                f"{accumulator.c_type} {name}[{accumulator.registers}];  "
                f"// {rows}x{columns} {accumulator.elem}: {accumulator.tiles} m64n{columns} fragment(s) per warpgroup"
            )
            emitter.bindings[symbol] = accumulator
            if self._has_mma_scale(symbol.name):
                self._declare_partial(accumulator)
            value = emitter.expressions.operand(args[0])
        fill = elements.convert(value.expr, value.type, "f32")
        emitter.out.line(f"choreo::fill_accumulator({accumulator.name.text}, {fill.text});")
        # Pins the fill here: moved next to the accumulator's first MMA, it could land while another
        # MMA is running, which makes ptxas serialize them (C7514).
        emitter.out.line(f"choreo::wgmma_fence_operand({accumulator.name.text});")

    def _has_mma_scale(self, name: str) -> bool:
        """Whether an `mma.scale` adds a partial product into the accumulator `name` (sparsity.py)."""
        scales = set(self.emitter.info.scaled_partials.values())
        return any(
            id(stmt) in scales and printer.expression(stmt.operation.args[0]) == name
            for stmt in ast.walk_statements(self.emitter.kernel)
            if isinstance(stmt, ast.OperationStmt)
        )

    def _declare_partial(self, accumulator: AccumulatorRegisters) -> AccumulatorRegisters:
        """The registers of the unscaled product of a block-scaled K block, zeroed."""
        name = self.emitter.names.fresh(f"{accumulator.name.text}_partial")
        partial = replace(accumulator, name=cexpr.name(name))
        self.emitter.out.line(
            f"{partial.c_type} {name}[{partial.registers}];  // the unscaled product of one K block (block scaling)"
        )
        self.emitter.out.line(f"choreo::fill_accumulator({name}, 0.0f);")
        self.partials[accumulator.name.text] = partial
        return partial

    def _scale(self, stmt: ast.OperationStmt) -> None:
        """`mma.scale acc, sa, sb`: the partial of the MMAs before it, scaled into acc, then zeroed."""
        accumulator = self._accumulator(stmt.operation.args[0])
        partial = self.partials.get(accumulator.name.text)
        if partial is None:
            raise LoweringError(
                "'mma.scale' needs the accumulator's partial product (an MMA before it)", stmt
            )
        self._add_scaled(accumulator, partial, stmt.operation.args[1], stmt.operation.args[2])
        self.emitter.out.line(
            f"choreo::fill_accumulator({partial.name.text}, 0.0f);  // the next K block's partial"
        )

    def _add_scaled(
        self,
        accumulator: AccumulatorRegisters,
        partial: AccumulatorRegisters,
        rows: ast.Expr,
        column: ast.Expr,
    ) -> None:
        emitter = self.emitter
        scales = emitter.expressions.view(rows)
        if scales.elem != "f32":
            raise LoweringError("the row scales of a block-scaled MMA are f32", rows)
        row_stride = next(
            (st for d, st in zip(scales.dims, scales.strides) if d.value != 1), scales.strides[0]
        )
        value = emitter.expressions.operand(column)
        column_scale = elements.convert(value.expr, value.type, "f32")
        emitter.out.line(
            f"choreo::scale_accumulator<{accumulator.columns}, {accumulator.tiles}>({accumulator.name.text}, "
            f"{partial.name.text}, {scales.start.text}, {row_stride.text}, {column_scale.text});"
        )

    def _accumulator(self, expr: ast.Expr) -> AccumulatorRegisters:
        value = self.emitter.expressions.value(expr)
        if not isinstance(value, AccumulatorRegisters):
            raise LoweringError("an accumulator (from mma.fill) is needed here", expr)
        return value

    def _load(self, stmt: ast.OperationStmt) -> None:
        """`f = mma.load tile`: the fragment is the tile itself, read by descriptor where it is used;
        `mma.load tile, x` loads the tile into the registers of fragment x (wgmma_registers.py)."""
        if len(stmt.operation.args) == 2:
            load_registers(self.emitter, stmt)
            return
        view = self.emitter.expressions.view(stmt.operation.args[0])  # its layout: cuda/swizzles.py
        if view.storage == Storage.GLOBAL:
            view = self._stage(stmt, view)
        symbol = self.emitter.info.symbol_of.get(id(stmt.result)) if stmt.result is not None else None
        if symbol is not None:
            self.emitter.bindings[symbol] = view
        self.emitter.out.line(
            "// the fragment stays in shared memory: the MMA that uses it reads it by descriptor"
        )

    def _stage(self, stmt: ast.OperationStmt, tile: View) -> View:
        """`mma.load` of a global tile: WGMMA reads shared memory only, so the warpgroup copies the tile into
        a shared tile of its own (one per warpgroup of the block), in the layout an operand of its rows gets
        (semantics/swizzle.py). It first waits for its earlier MMAs, which may still read the previous
        contents, and after the copy fences its writes for the tensor cores and synchronizes."""
        emitter, out = self.emitter, self.emitter.out
        dims = [d.value for d in tile.dims]
        warpgroups = (emitter.threads.block_threads or 0) // 128
        if len(dims) != 2 or None in dims or not warpgroups:
            raise LoweringError(
                "'mma.load' of a global tile copies it into shared memory, which needs a 2-D tile of a size and a "
                "block of a thread count known at compile time",
                stmt,
            )
        rows, columns = int(dims[0] or 0), int(dims[1] or 0)
        named = stmt.operation.template_args.get("swiz")
        swizzle = operand_swizzle(
            columns * ELEMENT_BYTES[tile.elem], int(named) if named is not None else None
        )
        base = stmt.result.id if stmt.result is not None else f"load_line{stmt.span.line}"
        name = emitter.names.fresh(f"{base}_staged")
        out.line(
            f"// WGMMA reads shared memory: '{tile.root}' is copied into a shared tile of this warpgroup"
        )
        out.line(emitter.shared_buffer(name, tile.elem, (cexpr.const(warpgroups), *tile.dims), swizzle, stmt))
        staged = buffer(tile.elem, cexpr.name(name), tile.dims, Storage.SHARED, name, swizzle)
        staged = replace(
            staged, offset=cexpr.multiply(cexpr.raw("threadIdx.x / 128"), cexpr.const(rows * columns))
        )
        group = unit_group(Level.WARPGROUP)
        out.line("choreo::wgmma_wait_group<0>();  // no earlier MMA still reads the previous contents")
        out.line(copies.copy_call("copy", tile, staged, group, stmt))
        out.line("choreo::fence_proxy_async_shared();  // these writes are seen by the tensor cores")
        out.line(str(group.barrier()))
        return staged

    def _store(self, stmt: ast.OperationStmt) -> None:
        store(self.emitter, self._accumulator(stmt.operation.args[0]), stmt)

    # ------------------------------------------------------------------ the MMA itself

    def _execute(self, stmt: ast.OperationStmt, a_mn_major: bool, b_mn_major: bool) -> None:
        emitter, out = self.emitter, self.emitter.out
        args = stmt.operation.args
        accumulator = self._accumulator(args[0])
        registers = emitter.register_operand(args[1])  # RS: A from a fragment (cuda/fragments.py)
        b = emitter.expressions.view(args[2])
        a = b if registers is not None else emitter.expressions.view(args[1])
        if registers is not None:
            if a_mn_major:
                raise LoweringError("an A operand from registers is [M, K]: 'mma.row.*'", stmt)
            rows, k = registers.rows, registers.columns
            a = replace(b, elem=registers.elem)
        else:
            rows, k = self._extents(a, a_mn_major, "a", args[1])
        sparse = sparsity.is_sparse(stmt.operation)
        if sparse:
            if registers is not None:
                raise LoweringError("a 2:4 sparse A is read from shared memory, not from registers", stmt)
            k *= 2  # packed A holds K / 2 columns
        columns, k_b = self._extents(b, b_mn_major, "b", args[2])
        if (rows, columns) != (accumulator.rows, accumulator.columns) or k != k_b:
            raise LoweringError(
                f"this MMA is {rows}x{columns} with K {k} and {k_b}; the accumulator is "
                f"{accumulator.rows}x{accumulator.columns}",
                stmt,
            )
        if a.elem not in PTX_TYPES:
            raise LoweringError(
                f"WGMMA in this lowering takes {', '.join(PTX_TYPES)} operands, not {a.elem}", stmt
            )
        instruction = Instruction(
            columns, accumulator.elem, a.elem, a_mn_major, b_mn_major, registers is not None, sparse
        )
        if k % instruction.k:
            raise LoweringError(
                f"K = {k} is not a multiple of the instruction's K step {instruction.k}", stmt
            )
        if (a_mn_major and rows > 64) or ((a_mn_major or b_mn_major) and ELEMENT_BYTES[a.elem] != 2):
            raise LoweringError(
                "an MN-major (transposed) WGMMA operand needs a 16-bit element type and one 64-row tile", stmt
            )
        self.instructions[instruction.name] = instruction
        steps, tiles = k // instruction.k, rows // 64
        step = self.emitter.names.fresh("k_step") if steps > 1 else None
        tile = self.emitter.names.fresh("m_tile") if tiles > 1 else None
        a_start = _advance(a, a_mn_major, step, instruction.k // (2 if sparse else 1), tile)
        b_start = _advance(b, b_mn_major, step, instruction.k, None)
        scaled = sparsity.is_scaled(stmt.operation)
        partial = (
            self.partials.get(accumulator.name.text) if id(stmt) in emitter.info.scaled_partials else None
        )
        if scaled:
            out.line(
                f"// {printer.operation(stmt.operation)}: the product into a zeroed partial, then scaled"
            )
            partial = self._declare_partial(accumulator)
        destination = partial or accumulator
        target = destination.name
        if tile is not None:
            target = cexpr.add(
                target, cexpr.multiply(cexpr.name(tile), cexpr.const(accumulator.registers // tiles))
            )
        a_operand = _descriptor(a, a_start, a_mn_major)
        if registers is not None:  # 4 registers per K step, K / 4 (8 bits: K / 8) per 64-row tile
            a_operand = _register_slice(registers, step, tile).text
        loops = [loop for loop in ((tile, tiles), (step, steps)) if loop[0] is not None]
        metadata = ""
        if sparse:  # gathered before the fence: a register written after it makes ptxas add one (C7519)
            source_name = args[3].id if isinstance(args[3], ast.Name) else "metadata"
            gathered = self.emitter.names.fresh(f"{source_name}_registers")
            index = cexpr.add(
                cexpr.multiply(cexpr.name(tile), cexpr.const(steps)) if tile is not None else cexpr.const(0),
                cexpr.name(step) if step is not None else cexpr.const(0),
            )
            out.line(f"unsigned {gathered}[{steps * tiles}];  // each instruction's metadata register")
            gather = self._metadata(stmt, args[3], rows, k, instruction, step, tile)
            self._loops(loops, f"{gathered}[{index.text}] = {gather};")
            metadata = f", {gathered}[{index.text}]"
        call = f"choreo::{instruction.name}({target.text}, {a_operand}, {_descriptor(b, b_start, b_mn_major)}{metadata});"
        name = destination.name.text
        if self._chained(stmt):
            out.line(f"// chained after the MMA in flight into '{name}': the tensor cores run them in order")
        else:
            out.line(f"choreo::wgmma_fence_operand({name});")
        if registers is not None:
            out.line(f"choreo::wgmma_fence_operand({registers.name.text});  // A, from registers")
        out.line(
            "choreo::wgmma_fence();  // the accumulator and the operand tiles are ready for the tensor cores"
        )
        self._loops(loops, call)
        out.line("choreo::wgmma_commit_group();")
        if scaled:
            out.line("choreo::wgmma_wait_group<0>();  // the partial is read at once")
            out.line(f"choreo::wgmma_fence_operand({name});")
            self._add_scaled(accumulator, destination, args[3], args[4])
            return
        symbol = emitter.info.symbol_of.get(id(stmt.result)) if stmt.result is not None else None
        if stmt.operation.is_async and symbol is not None:
            # Nothing may touch the accumulator until the wait (not even the operand fence, whose
            # register moves would make ptxas serialize the pipeline: C7514).
            self.async_issues[symbol] = accumulator
            if registers is not None:
                self.operands[symbol] = registers
            return
        if self._batched(stmt):
            out.line("// waited with the synchronous MMA that follows (docs: choreo docs mma)")
            return
        out.line(
            "choreo::wgmma_wait_group<0>();  // a synchronous MMA is complete at the end of its statement"
        )
        out.line(f"choreo::wgmma_fence_operand({name});")

    def _chained(self, stmt: ast.OperationStmt) -> bool:
        """Whether the previous statement of the block is an async MMA into the same accumulator: this
        one accumulates after it, and fencing the registers in flight would serialize them (C7514)."""
        position = self.emitter.positions.get(id(stmt))
        if position is None or position[1] == 0:
            return False
        previous = position[0].body[position[1] - 1]
        return (
            isinstance(previous, ast.OperationStmt)
            and _is_mma_exec(previous)
            and previous.operation.is_async
            and self._accumulator(previous.operation.args[0]).name
            == self._accumulator(stmt.operation.args[0]).name
        )

    def _metadata(
        self,
        stmt: ast.OperationStmt,
        expr: ast.Expr,
        rows: int,
        k: int,
        instruction: Instruction,
        step: str | None,
        tile: str | None,
    ) -> str:
        """The metadata register of one sparse instruction: its K / 8 bytes of each of its 64 rows."""
        view = self.emitter.expressions.view(expr)
        dims = [d.value for d in view.dims]
        if view.elem != "u8" or dims != [rows, sparsity.metadata_columns(k)] or view.strides[1].value != 1:
            raise LoweringError(
                f"the 2:4 metadata of this MMA is a u8 [{rows}, {sparsity.metadata_columns(k)}] tile with "
                f"contiguous rows, not {view.elem} {dims}",
                expr,
            )
        start, row_stride = view.start, view.strides[0]
        if step is not None:
            start = cexpr.add(
                start, cexpr.multiply(cexpr.name(step), cexpr.const(sparsity.metadata_columns(instruction.k)))
            )
        if tile is not None:
            start = cexpr.add(start, cexpr.multiply(cexpr.name(tile), cexpr.const(64), row_stride))
        eight_bit = "true" if ELEMENT_BYTES[instruction.operand] == 1 else "false"
        return (
            f"choreo::wgmma_sparse_metadata<{eight_bit}>("
            f"reinterpret_cast<const unsigned char*>({start.text}), {row_stride.text})"
        )

    def _batched(self, stmt: ast.OperationStmt) -> bool:
        """Whether the next statement of the block is a synchronous MMA too, which waits for both."""
        position = self.emitter.positions.get(id(stmt))
        if position is None or position[1] + 1 >= len(position[0].body):
            return False
        following = position[0].body[position[1] + 1]
        return (
            isinstance(following, ast.OperationStmt)
            and _is_mma_exec(following)
            and not following.operation.is_async
        )

    def _loops(self, loops: list[tuple[str | None, int]], call: str) -> None:
        out = self.emitter.out
        if not loops:
            out.line(call)
            return
        variable, count = loops[0]
        out.line("#pragma unroll")
        with out.block(f"for (int {variable} = 0; {variable} < {count}; ++{variable})"):
            self._loops(loops[1:], call)

    def _extents(self, view: View, mn_major: bool, which: str, expr: ast.Expr) -> tuple[int, int]:
        """(M or N, K) of an operand tile, after checking that WGMMA can read its layout: a tile of a
        shared buffer's rows, swizzled, each row one swizzle or panels of one (cuda/swizzles.py decides)."""
        dims = [d.value for d in view.dims]
        if len(dims) != 2 or None in dims:
            raise LoweringError(f"operand {which} of an MMA is a 2-D tile of known size", expr)
        element_bytes = ELEMENT_BYTES[view.elem]
        row_elements = view.panels.width if view.panels is not None else view.strides[0].value
        buffer_row = view.panels.columns if view.panels is not None else view.strides[0].value
        if (
            view.storage != Storage.SHARED
            or not view.swizzle
            or view.strides[1].value != 1
            or view.strides[0].value != buffer_row
            or (row_elements or 0) * element_bytes != view.swizzle
        ):
            raise LoweringError(
                f"operand {which} ('{view.root}') must be a tile of a shared buffer whose rows WGMMA can read: "
                "rows of a multiple of 32 bytes (the compiler swizzles them), not a reshaped or strided view",
                expr,
            )
        first, second = int(dims[0] or 0), int(dims[1] or 0)
        panel = view.swizzle // element_bytes
        if mn_major and second % panel:  # an MN-major instruction reads whole swizzle rows of M or N
            raise LoweringError(
                f"operand {which} ('{view.root}') is MN-major and {second} elements wide, which is not whole "
                f"{view.swizzle}-byte rows of its swizzle; use a buffer of that width",
                expr,
            )
        return (second, first) if mn_major else (first, second)

    # ------------------------------------------------------------------ waits

    def waits(self, symbol: Symbol) -> bool:
        return symbol in self.async_issues

    def wait(self, symbol: Symbol, stmt: ast.Wait) -> None:
        accumulator = self.async_issues[symbol]
        if id(stmt) not in self.pinned:
            self.pinned.add(id(stmt))
            self._pin_register_work(stmt)
        depth = min(self.depths.get((id(stmt), symbol), 0), MAX_WAIT_DEPTH)
        note = (
            f"{depth} later MMA group(s) may still run"
            if depth
            else "no MMA group of this path is still running"
        )
        self.emitter.out.line(f"choreo::wgmma_wait_group<{depth}>();  // '{symbol.name}' is complete; {note}")
        self.emitter.out.line(f"choreo::wgmma_fence_operand({accumulator.name.text});")

    def _pin_register_work(self, stmt: ast.Wait) -> None:
        """Keep the register work between the last MMA and this wait before the wait: nvcc may sink
        arithmetic past an asm wait that it does not depend on, and the softmax that should overlap an
        MMA in flight then runs after that MMA is done. An empty asm that reads and writes each
        fragment this work touches (none that an MMA of this wait reads or writes) holds it here."""
        position = self.emitter.positions.get(id(stmt))
        if position is None:
            return
        waited = {self.emitter.info.future_named(target) for target in stmt.targets}
        busy = {id(self.async_issues[s]) for s in waited if s in self.async_issues}
        busy |= {id(self.operands[s]) for s in waited if s in self.operands}
        pinned: dict[str, AccumulatorRegisters | RowRegisters] = {}
        block, index = position
        for earlier in reversed(block.body[:index]):
            if (isinstance(earlier, ast.OperationStmt) and _is_mma_exec(earlier)) or isinstance(
                earlier, ast.Wait
            ):
                break
            for registers in self._fragments_in(earlier):
                if id(registers) not in busy:
                    pinned.setdefault(registers.name.text, registers)
        if pinned:
            names = ", ".join(sorted(pinned))
            self.emitter.out.line(f"// the register work above ({names}) stays before this wait")
            for name in sorted(pinned):
                self.emitter.out.line(f"choreo::wgmma_fence_operand({name});")

    def _fragments_in(self, stmt: ast.Stmt) -> list[AccumulatorRegisters | RowRegisters]:
        """The register fragments that a statement names, declared outside it (so in scope after it)."""
        declared = {s.name for s in ast.walk_statements(stmt) if isinstance(s, ast.BufferDecl)}
        found = []
        for expr in (e for nested in ast.walk_statements(stmt) for e in own_expressions(nested)):
            for node in ast.walk_expr(expr):
                if not isinstance(node, ast.Name) or node.id in declared:
                    continue
                symbol = self.emitter.info.symbol_of.get(id(node))
                value = self.emitter.bindings.get(symbol) if symbol is not None else None
                if isinstance(value, (AccumulatorRegisters, RowRegisters)):
                    found.append(value)
        return found

    def rotate(self, symbols: list[Symbol]) -> bool:
        """`swap`/`rotate` of MMA futures: their groups trade names, which only the compiler tracks."""
        if not symbols or not all(symbol in self.async_issues for symbol in symbols):
            return False
        accumulators = [self.async_issues[symbol] for symbol in symbols]
        for symbol, accumulator in zip(symbols, accumulators[1:] + accumulators[:1]):
            self.async_issues[symbol] = accumulator
        return True

    def wrappers(self) -> dict[str, str]:
        """The device function of each wgmma form this kernel uses, by name."""
        return {name: wrapper(instruction) for name, instruction in self.instructions.items()}


def _advance(view: View, mn_major: bool, step: str | None, k: int, tile: str | None) -> CExpr:
    """The first element that one instruction reads: K steps move along rows (MN-major) or columns, which
    in a buffer in panels cross into the next panel (the view's layout places the element)."""
    delta = cexpr.ZERO
    stride = view.strides[0]
    if step is not None:
        k_offset = cexpr.multiply(cexpr.name(step), cexpr.const(k))
        delta = cexpr.add(delta, cexpr.multiply(k_offset, stride) if mn_major else k_offset)
    if tile is not None:
        delta = cexpr.add(delta, cexpr.multiply(cexpr.name(tile), cexpr.const(64), stride))
    return view.start_after(delta)


def _descriptor(view: View, start: CExpr, mn_major: bool) -> str:
    """The descriptor of an operand tile from its first element; an MN-major tile wider than one panel
    names the bytes between panels (a K-major instruction reads 32 bytes of K, within one panel)."""
    panel_bytes = f", {view.panels.stride * ELEMENT_BYTES[view.elem]}" if mn_major and view.panels else ""
    return f"choreo::wgmma_descriptor<{view.swizzle}>({start.text}{panel_bytes})"


def _register_slice(registers: AccumulatorRegisters, step: str | None, tile: str | None) -> CExpr:
    """The first of the 4 registers that one instruction (m64k16, or m64k32 for 8 bits) reads of an A fragment."""
    start = registers.name
    if tile is not None:
        per_tile = registers.registers // registers.tiles
        start = cexpr.add(start, cexpr.multiply(cexpr.name(tile), cexpr.const(per_tile)))
    if step is not None:
        start = cexpr.add(start, cexpr.multiply(cexpr.name(step), cexpr.const(4)))
    return start


def _is_mma_exec(stmt: ast.Stmt) -> bool:
    if not isinstance(stmt, ast.OperationStmt) or stmt.operation.family != "mma":
        return False
    words = [q for q in stmt.operation.qualifiers if q != "async"]
    return words[:1] in (["row"], ["col"])


# The fewest MMA groups committed after each in-flight future's group, per future; DONE once it is
# known complete (a wait for it or for a later group, or a synchronous MMA, which waits for all).
Groups = dict[Symbol, int]
DONE = 1 << 20


def wait_depths(kernel: ast.Parallel, info: FunctionInfo) -> dict[tuple[int, Symbol], int]:
    """For each `wait` of an MMA future (by statement and future): the wgmma.wait_group depth."""
    walk = _WaitDepths(info)
    walk._walk((kernel,), {})
    return walk.depths


class _WaitDepths(ForwardFlow[Groups]):
    """The fewest MMA groups each in-flight future can have after it on the way to each wait."""

    loops_run_at_least_once = False  # a wait after a loop may be reached without a trip through it

    def __init__(self, info: FunctionInfo) -> None:
        self.info = info
        self.depths: dict[tuple[int, Symbol], int] = {}

    def _copy(self, state: Groups) -> Groups:
        return dict(state)

    def _join(self, a: Groups, b: Groups) -> Groups:
        return {s: min(a.get(s, DONE), b.get(s, DONE)) for s in a.keys() | b.keys()}

    def _key(self, state: Groups) -> Hashable:
        return frozenset(state.items())

    def _inthreads(self, stmt: ast.InThreads, state: Groups) -> Groups:
        return self._join(self._body(stmt.body, self._copy(state)), state)  # threads that skip it too

    def _simple(self, stmt: ast.Stmt, groups: Groups) -> Groups:
        if isinstance(stmt, ast.OperationStmt) and _is_mma_exec(stmt):
            if not stmt.operation.is_async:
                return dict.fromkeys(groups, DONE)
            groups = {s: min(count + 1, DONE) for s, count in groups.items()}
            issued = self.info.future_named(stmt.result) if stmt.result is not None else None
            if issued is not None:
                groups[issued] = 0
            return groups
        if isinstance(stmt, ast.Wait):
            for target in stmt.targets:
                symbol = self.info.future_named(target)
                if symbol is None or symbol not in groups:
                    continue
                depth = groups[symbol]
                self.depths[(id(stmt), symbol)] = min(self.depths.get((id(stmt), symbol), DONE), depth)
                groups = {s: DONE if count >= depth else count for s, count in groups.items()}
            return groups
        if isinstance(stmt, ast.ExprStmt) and isinstance(stmt.expr, ast.Call) and is_rotation(stmt.expr):
            rotate_futures(self.info, stmt.expr, groups, DONE)
        return groups
