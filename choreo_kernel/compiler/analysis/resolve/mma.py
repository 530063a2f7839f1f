"""Matrix operations: operand shapes, accumulator shape, and what WGMMA on sm_90a can run.

`mma.row.row acc, a, b` is acc += a * b^T with a [M, K] and b [N, K];
`mma.row.col` takes b as [K, N]; a `col` first qualifier takes a as [K, M]
(language.md 9).  On Hopper the operation runs on one warpgroup (a `group-4`
scope) with M a multiple of 64, N a multiple of 8 up to 256 and K a multiple
of 16 (16-bit types) or 32 (8-bit types).  The `.sp` (2:4 sparse A, with metadata) and `.scale`
(block-scaled) forms, and `mma.scale`, are described in semantics/sparsity.py."""

from __future__ import annotations

from choreo_kernel.compiler import ast, printer
from choreo_kernel.compiler.analysis.resolve.warp_mma import WarpMmaRules, loads_a_tile, off_its_warps
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import (
    ELEMENT_BYTES,
    SUB_BYTE_BITS,
    UNKNOWN,
    Accumulator,
    BufferArray,
    Data,
    Dim,
    Fragment,
    Future,
    FutureInfo,
    Scalar,
    Symbol,
    Tiling,
    Unknown,
    known_mismatch,
    shape_text,
)
from choreo_kernel.compiler.diagnostics import Note
from choreo_kernel.compiler.semantics import sparsity
from choreo_kernel.compiler.semantics.levels import Level, Storage, register_level
from choreo_kernel.compiler.semantics.swizzle import operand_swizzle

F16_ACCUMULATED = ("f16", "f8_e4m3", "f8_e5m2")  # the operands WGMMA accumulates in f16 (PTX ISA 9.7.15.5)
WGMMA_TYPES = {"f16": 16, "bf16": 16, "tf32": 8, "f8_e4m3": 32, "f8_e5m2": 32, "s8": 32, "u8": 32}


class MmaRules(WarpMmaRules):
    """The mma statements: fill, load, store and the multiply itself."""

    def _mma(self, stmt: ast.OperationStmt, context: Context) -> FutureInfo | Accumulator | Fragment | None:
        operation = stmt.operation
        words = [q for q in operation.qualifiers if q not in ("async",)]
        args = operation.args
        self._note_multiplied(words, args)
        if words and words[0] == "fill":
            return self._mma_fill(stmt, words, context)
        if words and words[0] == "load":
            self._swizzle(operation)
            if len(args) == 2 and stmt.result is None:
                self._mma_load_into(operation, context)
                return None
            if len(args) != 1:
                self.error(
                    "'mma.load' takes one operand tile ('x = mma.load TILE;'), or a tile and the fragment to load "
                    "it into ('mma.load TILE, X;')",
                    operation.span,
                )
                return None
            value = self._expr(args[0])
            if isinstance(value, Tiling):
                value = value.tile()
            if isinstance(value, Future) and value.is_data:  # `mma.load.frag lhs_s` of a copy's future
                value = self._future_data(args[0]) or UNKNOWN
            if not isinstance(value, (Data, Unknown)):
                self.error(f"'mma.load' loads spanned data, got {value.describe()}", args[0].span)
                return None
            return Fragment(value) if isinstance(value, Data) else None
        if words and words[0] == "store":
            self._mma_store(stmt, words[1:], context)
            return None
        forms: tuple[list[str], ...] = (
            [],
            ["sp"],
            ["scale"],
        )  # dense, 2:4 sparse A, block-scaled (semantics/sparsity.py)
        if (
            len(words) >= 2
            and words[0] in ("row", "col")
            and words[1] in ("row", "col")
            and words[2:] in forms
        ):
            return self._mma_exec(stmt, words[0], words[1], context)
        if words == ["scale"]:
            self._mma_scale(stmt)
            return None
        if words and words[0] in ("commit", "wait"):
            self.error(
                f"'{operation.text}' is not part of the language: the compiler derives WGMMA commit groups "
                "and wait depths from the futures you wait (the docs' futures page: choreo docs futures)",
                operation.op_span,
            )
            return None
        self._unknown_operation(
            operation,
            "expected mma.fill, mma.load, mma.row.row, mma.row.col, mma.col.row, mma.col.col (each also with "
            ".sp or .scale), mma.scale or mma.store",
        )
        return None

    def _mma_load_into(self, operation: ast.Operation, context: Context) -> None:
        """`mma.load TILE, X`: the tile into the registers of fragment X (WGMMA's A from registers), so both
        have one shape and X is a warpgroup's `frag`."""
        source, target = operation.args
        tile = self._expr(source)
        if isinstance(tile, Tiling):
            tile = tile.tile()
        if isinstance(tile, Future) and tile.is_data:  # `mma.load lhs_s, x` of a copy's future
            tile = self._future_data(source) or UNKNOWN
        fragment = self._expr(target)
        if not isinstance(tile, (Data, Unknown)):
            self.error(f"'mma.load' loads spanned data, got {tile.describe()}", source.span)
            return
        if not isinstance(fragment, Unknown) and not (isinstance(fragment, Fragment) and fragment.registers):
            self.error(
                f"'mma.load TILE, X;' loads into a fragment X declared with 'frag'; this is {fragment.describe()}",
                target.span,
            )
            return
        if Level.WARPGROUP not in context.level_kinds:
            self.hopper_rule(
                "'mma.load TILE, X;' loads a warpgroup's fragment: put it inside the 'group-4' scope of the MMA "
                "that reads X",
                operation.op_span,
            )
        if (
            isinstance(tile, Data)
            and isinstance(fragment, Fragment)
            and known_mismatch(tile.dims, fragment.data.dims)
        ):
            self.error(
                f"'mma.load' of {shape_text(tile.dims)} data into fragment '{fragment.data.root}' of "
                f"{shape_text(fragment.data.dims)}: load a tile of the fragment's shape",
                operation.span,
            )

    def _mma_fill(self, stmt: ast.OperationStmt, words: list[str], context: Context) -> Accumulator | None:
        operation = stmt.operation
        elem = words[1] if len(words) > 1 else "f32"
        if elem not in ("f32", "f16", "s32"):
            self.error(f"an accumulator is f32 or f16, not '{elem}'", operation.op_span)
            elem = "f32"
        if stmt.result is not None:
            if len(operation.args) != 1:
                self.error("'acc = mma.fill.f32 VALUE;' takes one value", operation.span)
            for arg in operation.args:
                self._note_fill_value(stmt, arg, self._expr(arg))
            return Accumulator(elem)
        if len(operation.args) != 2:
            self.error("'mma.fill ACC, VALUE;' takes an accumulator and a value", operation.span)
            return None
        accumulator = self._expr(operation.args[0])
        self._note_fill_value(stmt, operation.args[1], self._expr(operation.args[1]))
        if not isinstance(accumulator, (Accumulator, Unknown)):
            self.error(
                f"'mma.fill' re-initializes an accumulator; this is {accumulator.describe()}",
                operation.args[0].span,
            )
        return None

    def _mma_store(self, stmt: ast.OperationStmt, words: list[str], context: Context) -> None:
        operation = stmt.operation
        if words not in ([], ["mask"], ["transp"]):
            self._unknown_operation(operation, "expected mma.store, mma.store.mask or mma.store.transp")
            return
        if words == ["mask"]:
            if len(operation.args) not in (3, 4):
                self.error(
                    "'mma.store.mask ACC, DST, ROWS[, COLUMNS];' takes an accumulator, a destination and how many "
                    "of its rows (and columns) to write",
                    operation.span,
                )
                return
            for count in operation.args[2:]:
                self._int_expr(count, "a count of rows or columns")
        elif len(operation.args) != 2:
            self.error("'mma.store ACC, DST;' takes an accumulator and a destination", operation.span)
            return
        accumulator = self._expr(operation.args[0])
        destination = self._expr(operation.args[1])
        if isinstance(destination, Tiling):
            destination = destination.tile()
        if not isinstance(accumulator, (Accumulator, Unknown)):
            self.error(
                f"'mma.store' stores an accumulator; this is {accumulator.describe()}", operation.args[0].span
            )
            return
        if not isinstance(destination, (Data, Unknown)):
            self.error(
                f"'mma.store' writes spanned data; this is {destination.describe()}", operation.args[1].span
            )
            return
        symbol = self._symbol_of_name(operation.args[0])
        self.error_with_note(
            off_its_warps(self.info, operation.args[0], context, "store"), operation.args[0].span
        )
        if isinstance(destination, Data):
            if destination.storage == Storage.LOCAL:
                self.error("'mma.store' writes shared or global memory, not local", operation.args[1].span)
            shape = symbol.accumulator_shape if symbol is not None else None
            if shape is not None and words == ["transp"]:
                shape = tuple(reversed(shape))
            if shape is not None and known_mismatch(shape, destination.dims):
                self.error(
                    f"'mma.store' of a {shape_text(shape)} accumulator into {shape_text(destination.dims)} data",
                    operation.span,
                )
            elif (
                shape is not None
                and not words
                and _run_time_window(operation.args[1], destination.dims, shape)
            ):
                self.sink.warning(
                    f"'mma.store' of a {shape_text(shape)} accumulator into a {shape_text(destination.dims)} window "
                    "whose extents are known only at run time: it writes the elements inside the window (implicit "
                    "masking); 'mma.store.mask ACC, DST, ROWS, COLUMNS;' says so explicitly",
                    operation.args[1].span,
                )

    def _mma_exec(
        self, stmt: ast.OperationStmt, a_layout: str, b_layout: str, context: Context
    ) -> FutureInfo | None:
        operation = stmt.operation
        form, extra = _FORMS[
            "sp" if sparsity.is_sparse(operation) else "scale" if sparsity.is_scaled(operation) else ""
        ]
        if len(operation.args) != 3 + len(extra):
            self.error(f"'{operation.text}' takes {form}", operation.span)
            for arg in operation.args:
                self._expr(arg)
            return None
        acc_expr, a_expr, b_expr = operation.args[:3]
        accumulator = self._expr(acc_expr)
        a = self._operand(a_expr)
        b = self._operand(b_expr)
        symbol = self._symbol_of_name(acc_expr)
        accumulator_name = acc_expr.id if isinstance(acc_expr, ast.Name) else None
        info = FutureInfo(operation, stmt, "mma", operation.is_async, accumulator=accumulator_name)
        if isinstance(accumulator, Fragment) and symbol is not None and loads_a_tile(symbol):
            loaded = self._loaded_accumulator(symbol, accumulator, acc_expr)
            if loaded is None:
                return info
            accumulator = loaded
        if not isinstance(accumulator, (Accumulator, Unknown)):
            self.error(
                f"the first operand of '{operation.text}' must be an accumulator (from mma.fill), "
                f"got {accumulator.describe()}",
                acc_expr.span,
            )
            return info
        on_warp = register_level(context.level_kinds) == Level.WARP
        if register_level(context.level_kinds) is None:
            self.hopper_rule(
                f"'{operation.text}' must run on a warp or a warpgroup: on target cuda (sm_90a) put it inside a "
                "'group' scope (mma.sync) or a 'group-4' scope (WGMMA; for example 'parallel wg by 1 : group-4 { ... }')",
                operation.op_span,
            )
        if a is None or b is None:
            return info
        if len(a.dims) != 2 or len(b.dims) != 2:
            self.error(
                f"'{operation.text}' needs two-dimensional operands, got a {shape_text(a.dims)} and b {shape_text(b.dims)}",
                operation.span,
            )
            return info
        m, k_a = (a.dims[0], a.dims[1]) if a_layout == "row" else (a.dims[1], a.dims[0])
        n, k_b = (b.dims[0], b.dims[1]) if b_layout == "row" else (b.dims[1], b.dims[0])
        if sparsity.is_sparse(operation):
            if a_layout != "row":
                self.error(
                    f"'{operation.text}': a 2:4 sparse A is packed along K: write mma.row.*.sp",
                    operation.span,
                )
                return info
            k_a = k_a * 2 if isinstance(k_a, int) else k_a  # packed A holds K / 2 columns
            if not self._check_metadata(operation, m, k_a):
                return info
        if sparsity.is_scaled(operation):
            self._check_synchronous(operation)
            self._check_scales(operation, operation.args[3], operation.args[4], m)
        if isinstance(k_a, int) and isinstance(k_b, int) and k_a != k_b:
            self.error(
                f"'{operation.text}': the K extents of the operands differ: a is {shape_text(a.dims)} (K = {k_a}), "
                f"b is {shape_text(b.dims)} (K = {k_b})",
                operation.span,
            )
            return info
        if a.elem != b.elem:
            self.error(
                f"'{operation.text}': operand types differ: a is {a.elem}, b is {b.elem}", operation.span
            )
            return info
        accumulated = self._record_owner(symbol, a.elem, context, operation.span)
        if on_warp:
            self._check_warp_tile(operation, a.elem, m, n, k_a, accumulated)
            if symbol is not None and isinstance(accumulator, Accumulator):
                self._infer_accumulator(symbol, (m, n), operation, acc_expr)
            return info
        if symbol is not None and isinstance(symbol.declaration, ast.AccumulatorArrayDecl):
            self.hopper_rule(
                f"accumulator array '{symbol.name}' holds a warp's accumulators (mma.sync): multiply into its "
                "elements in a 'group' scope, or give a warpgroup its accumulator with 'acc = mma.fill ...;'",
                acc_expr.span,
            )
            return info
        self._check_hopper_shape(operation, a.elem, m, n, k_a, accumulator, context)
        for name, operand in (("a", a), ("b", b)):
            self._check_swizzle(operand, operation)
            rows = operand.dims[0]
            if isinstance(rows, int) and rows % 8 != 0:
                self.hopper_rule(
                    f"operand {name} of '{operation.text}' ({operand.root}) has {rows} rows; a WGMMA operand tile "
                    "needs a multiple of 8 rows",
                    operation.span,
                )
        if symbol is not None and isinstance(accumulator, Accumulator):
            self._infer_accumulator(symbol, (m, n), operation, acc_expr)
            self._check_accumulator_owner(symbol, operation, context)
        return info

    def _check_metadata(self, operation: ast.Operation, m: Dim, k: Dim) -> bool:
        """The metadata of a 2:4 sparse A: an mma.load of u8 [M, K / 8] (semantics/sparsity.py); whether it is."""
        expr = operation.args[3]
        value = self._expr(expr)
        if isinstance(value, Future) and value.is_data:
            value = self._future_data(expr) or UNKNOWN
        if isinstance(value, Tiling):
            value = value.tile()
        if isinstance(value, Unknown):
            return True
        if not isinstance(value, Fragment):
            self.error(
                "sparse WGMMA metadata must be loaded into a register with mma.load before use: write "
                f"'e = mma.load {_text(expr)};' and pass 'e'",
                expr.span,
            )
            return False
        data = value.data
        columns: Dim = sparsity.metadata_columns(k) if isinstance(k, int) else "K / 8"
        if data.elem != "u8" or len(data.dims) != 2 or known_mismatch(data.dims, (m, columns)):
            expected = f"u8 [{m}, {columns}]"
            self.error(
                f"the 2:4 metadata of this MMA is {expected} (one byte per 8 dense K elements of each row), "
                f"got {data.describe()}",
                expr.span,
            )
            return False
        return True

    def _check_scales(
        self, operation: ast.Operation, row_scales: ast.Expr, column_scale: ast.Expr, m: Dim
    ) -> None:
        """`.scale ACC, A, B, SA, SB` and `mma.scale ACC, SA, SB`: SA one f32 per row, SB one f32."""
        rows = self._expr(row_scales)
        if isinstance(rows, Tiling):
            rows = rows.tile()
        if isinstance(rows, Data):
            extent = [d for d in rows.dims if d != 1] or [1]
            fits = rows.elem == "f32" and len(extent) == 1 and not known_mismatch((extent[0],), (m,))
        else:
            fits = isinstance(rows, Unknown)
        if not fits:
            self.error(
                f"the row scales of '{operation.text}' are f32 data [{m}, 1], one per accumulator row (for example "
                f"'scale_lhs.subspan({m}, 1).at(block_m, k)'), got {rows.describe()}",
                row_scales.span,
            )
        column = self._expr(column_scale)
        if isinstance(column, Data) and all(d == 1 for d in column.dims):
            return
        if not isinstance(column, (Scalar, Unknown)):
            self.error(
                f"the column scale of '{operation.text}' is one f32 (for example 'scale_rhs.at(block_n, k)'), "
                f"got {column.describe()}",
                column_scale.span,
            )

    def _check_synchronous(self, operation: ast.Operation) -> None:
        if operation.is_async:
            self.error(
                f"'{operation.text}' adds the scaled partial product to the accumulator before the statement "
                "ends, so it is synchronous: drop .async",
                operation.op_span,
            )

    def _mma_scale(self, stmt: ast.OperationStmt) -> None:
        """`mma.scale ACC, SA, SB`: adds the partial product of the plain MMAs before it (sparsity.py)."""
        operation = stmt.operation
        if len(operation.args) != 3:
            self.error(
                "'mma.scale ACC, SA, SB;' takes an accumulator, its row scales and one column scale",
                operation.span,
            )
            return
        self._check_synchronous(operation)
        acc_expr = operation.args[0]
        accumulator = self._expr(acc_expr)
        if not isinstance(accumulator, (Accumulator, Unknown)):
            self.error(f"'mma.scale' scales an accumulator; this is {accumulator.describe()}", acc_expr.span)
            return
        if id(stmt) not in self.info.scaled_partials.values():
            self.error(
                f"'mma.scale' adds the partial product of the plain MMAs on '{_text(acc_expr)}' before it in its "
                "block; there is none: put it after the K block's 'mma.row.row' statements, in the same block",
                operation.span,
            )
        symbol = self._symbol_of_name(acc_expr)
        shape = symbol.accumulator_shape if symbol is not None else None
        self._check_scales(operation, operation.args[1], operation.args[2], shape[0] if shape else "M")

    def _check_swizzle(self, operand: Data, operation: ast.Operation) -> None:
        """A `.swiz<N>` that the buffer's rows are not a multiple of gives a layout WGMMA cannot read, so the
        CUDA lowering lays the buffer out with another swizzle (semantics/swizzle.py); this says so."""
        written = self.swizzle_of.get(operand.root)
        symbol = self.scope.lookup(operand.root)
        if written is None or symbol is None or self.target != "cuda":
            return
        buffer = symbol.value.element if isinstance(symbol.value, BufferArray) else symbol.value
        if not isinstance(buffer, Data) or not buffer.dims or not isinstance(buffer.dims[-1], int):
            return
        swizzle, span = written
        row_bytes = buffer.dims[-1] * ELEMENT_BYTES.get(buffer.elem, 2)
        chosen = operand_swizzle(row_bytes, swizzle)
        if chosen != swizzle:
            self.sink.warning(
                f"WGMMA cannot read '{operand.root}' with .swiz<{swizzle}>: its rows are {row_bytes} bytes, so the "
                f"compiler lays it out with a {chosen}-byte swizzle; write .swiz<{chosen}> or leave the choice to it",
                operation.span,
                Note(f"'{operand.root}' is written with .swiz<{swizzle}> here", span),
                Note(f"'{operand.root}' is declared here", symbol.span),
            )

    def _operand(self, expr: ast.Expr) -> Data | None:
        value = self._expr(expr)
        if isinstance(value, Tiling):
            value = value.tile()
        if isinstance(value, Future) and value.is_data:  # `mma.row.row acc, q_s, k_s` with q_s = dma.copy ...
            data = self._future_data(expr)
            value = data if data is not None else UNKNOWN
        if isinstance(value, Fragment):
            return value.data
        if isinstance(value, Data):
            if value.storage != Storage.SHARED:
                self.hopper_rule(
                    f"an MMA operand is a shared-memory tile or an mma.load fragment; '{value.root}' is {value.storage}",
                    expr.span,
                )
            return value
        if not isinstance(value, Unknown):
            self.error(
                f"an MMA operand must be a tile or an mma.load fragment, got {value.describe()}", expr.span
            )
        return None

    def _check_hopper_shape(
        self,
        operation: ast.Operation,
        elem: str,
        m: Dim,
        n: Dim,
        k: Dim,
        accumulator: object,
        context: Context,
    ) -> None:
        if elem in SUB_BYTE_BITS:
            self.hopper_rule(
                f"Hopper has no MMA instruction for {elem} operands (WGMMA takes f16, bf16, tf32, f8 and 8-bit "
                "integers; fp6, fp4 and the narrower integers need sm_100's tcgen05): convert the tiles to f16, "
                "bf16 or f8 first",
                operation.span,
            )
            return
        if elem not in WGMMA_TYPES:
            self.hopper_rule(
                f"WGMMA on target cuda (sm_90a) takes f16, bf16, tf32, f8 or 8-bit integer operands, not {elem}",
                operation.span,
            )
            return
        k_unit = WGMMA_TYPES[elem]
        if sparsity.is_sparse(operation):
            if elem == "tf32":
                self.hopper_rule(
                    "2:4 sparse WGMMA takes f16, bf16, f8 or 8-bit integer operands: tf32's sparse form is 1:2, "
                    "which Choreo does not express",
                    operation.span,
                )
                return
            k_unit *= 2  # one sparse instruction covers twice the dense K of a dense one
        problems = []
        if isinstance(m, int) and m % 64 != 0:
            problems.append(f"M a multiple of 64 per warpgroup (got {m})")
        if isinstance(n, int) and (n % 8 != 0 or not 8 <= n <= 256):
            problems.append(f"N a multiple of 8 from 8 to 256 (got {n})")
        if isinstance(k, int) and k % k_unit != 0:
            problems.append(f"K a multiple of {k_unit} for {elem} (got {k})")
        if problems:
            self.hopper_rule(
                f"the MMA shape m{m}n{n}k{k} cannot run on target cuda (sm_90a): WGMMA needs "
                + ", ".join(problems),
                operation.span,
            )
        if isinstance(accumulator, Accumulator) and accumulator.elem == "f16" and elem not in F16_ACCUMULATED:
            self.hopper_rule(f"an f16 accumulator needs f16 or f8 operands, got {elem}", operation.span)

    def _infer_accumulator(
        self, symbol: Symbol, shape: tuple[Dim, Dim], operation: ast.Operation, acc_expr: ast.Expr
    ) -> None:
        """The accumulator's shape is taken from its first use; later uses must agree."""
        existing = symbol.accumulator_shape
        if existing is None:
            symbol.accumulator_shape = shape
            return
        if any(isinstance(x, int) and isinstance(y, int) and x != y for x, y in zip(existing, shape)):
            self.error(
                f"accumulator '{symbol.name}' is {shape_text(existing)} from its first use, "
                f"but this MMA produces {shape_text(shape)}",
                acc_expr.span,
            )

    def _check_accumulator_owner(self, symbol: Symbol, operation: ast.Operation, context: Context) -> None:
        """An accumulator declared above the warpgroup level must serve exactly one warpgroup (12.5)."""
        declaration = getattr(symbol, "declaration", None)
        declared_context = self.info.context_of.get(id(declaration))
        if declared_context is None or Level.WARPGROUP in declared_context.level_kinds:
            return
        for scope in context.levels:
            if scope.level == Level.WARPGROUP and isinstance(scope.count, int) and scope.count > 1:
                self.error(
                    f"accumulator '{symbol.name}' is declared outside the warpgroup scope, but "
                    f"{scope.count} warpgroups run this MMA: declare it inside the 'group-4' scope, one per warpgroup",
                    operation.span,
                    Note("the accumulator is declared here", symbol.span),
                )
                return


_FORMS = {
    "": ("an accumulator and two operands: ACC, A, B", ()),
    "sp": (
        "an accumulator, a packed 2:4 sparse A, B and A's metadata: ACC, A, B, E (E = mma.load of the metadata)",
        ("e",),
    ),
    "scale": ("an accumulator, two operands and their scales: ACC, A, B, SA, SB", ("sa", "sb")),
}


def _text(expr: ast.Expr) -> str:
    return printer.expression(expr)


def _run_time_window(expr: ast.Expr, dims: tuple[Dim, ...], shape: tuple[Dim, ...]) -> bool:
    """Whether an mma.store destination is a `.view(...).from(...)` window that may be smaller than the
    accumulator: an extent of it is known only at run time, where the accumulator's is a constant."""
    return (
        isinstance(expr, ast.Method)
        and expr.name == "from"
        and any(not isinstance(d, int) and isinstance(e, int) for d, e in zip(dims, shape))
    )
