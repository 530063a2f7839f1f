"""Register-level compute: `frag` declarations, `apply`, row reductions, `copy` and whole-fragment `__to`.

A fragment (`frag f32[64] m {-inf};`, `frag f16[64, 128] p;`) and an MMA accumulator hold their
elements in the registers of one warpgroup or one warp: a `group-4` or `group` scope, or a `thread`
scope of 128 or 32 threads (semantics/launch.py, `register_owner`). Their elements are
read and written only inside `apply {i, j} in x.span`, at exactly the apply's own indices: `x.at(i, j)`
for a fragment of the spanned shape, `m.at(i)` for a row vector of its rows. That keeps every element
with the thread that owns it on CUDA (the accumulator layout of WGMMA), while the program still sees
logical (i, j) indices on every backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.resolve.tuples import TupleRules
from choreo_kernel.compiler.analysis.resolve.warp_mma import off_its_warps
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import (
    UNKNOWN,
    Accumulator,
    Data,
    Dim,
    Fragment,
    Scalar,
    Shape,
    Symbol,
    Unknown,
    Value,
    known_mismatch,
    shape_text,
)
from choreo_kernel.compiler.diagnostics import Note, Span
from choreo_kernel.compiler.printer import expression
from choreo_kernel.compiler.semantics.launch import register_owner
from choreo_kernel.compiler.semantics.levels import Storage

FRAGMENT_TYPES = ("f32", "f16", "bf16", "f8_e4m3", "f8_e5m2")
EIGHT_BIT = ("f8_e4m3", "f8_e5m2")  # in WGMMA's 8-bit A layout (k32), not the accumulator layout
CONVERSIONS = ("f32", "f16", "bf16")  # what an accumulator converts into in its own registers
UPDATES = ("+=", "-=", "*=", "/=")
USAGES = {"copy": "copy(DST, SRC)", "all_reduce_sum": "all_reduce_sum(ROWS)"}
APPLY_STATEMENTS = (ast.Assign, ast.If, ast.Block, ast.ScalarDecl, ast.Empty)


@dataclass(frozen=True)
class _ApplyScope:
    names: tuple[str, ...]
    shape: tuple[Dim, ...]
    locals: set[str]


class FragmentRules(TupleRules):
    """`frag` buffers, `apply`, `reduce_max` / `reduce_sum`, `copy` and `__to<T>(fragment)`."""

    _applies: tuple[_ApplyScope, ...] = ()

    def _fragment_decl(self, stmt: ast.BufferDecl, context: Context) -> None:
        dims = self._shape_dims(stmt.shape)
        if not context.in_block:
            self.error(
                f"fragment '{stmt.name}' lives in the registers of one warpgroup: declare it inside a "
                "parallel, in the 'group-4' scope that uses it",
                stmt.span,
            )
        if stmt.elem_type not in FRAGMENT_TYPES:
            self.error(
                f"a fragment holds {', '.join(FRAGMENT_TYPES)} elements, not {stmt.elem_type}", stmt.span
            )
        if stmt.array_dims:
            self.error(f"fragment '{stmt.name}' cannot be an array of fragments", stmt.array_dims[0].span)
        owner = register_owner(context)
        if owner.misfit is not None:
            self.error(
                f"fragment '{stmt.name}' is held by the threads of one warpgroup (128) or one warp (32), and this "
                f"'thread' scope has {owner.misfit}: declare it in a 'parallel t by 128 : thread' (or 'by 32'), "
                "or in a 'group-4' or 'group' scope",
                stmt.span,
            )
        self._check_fragment_shape(dims, stmt.name, stmt.span, owner.tile_rows, stmt.elem_type in EIGHT_BIT)
        if stmt.init is not None:
            if len(stmt.init) != 1:
                self.error(f"fragment '{stmt.name}' is filled with one value: '{{v}}'", stmt.span)
            for item in stmt.init:
                self._expr(item)
        self.info.storage_of[id(stmt)] = Storage.LOCAL
        value = Fragment(Data(stmt.elem_type, dims, Storage.LOCAL, stmt.name), registers=True)
        self._declare(
            Symbol(stmt.name, value, stmt.name_span, declaration=stmt, origin="buffer"), stmt.name_span
        )

    def _check_fragment_shape(
        self, dims: tuple[Dim, ...], name: str, span: Span, tile_rows: int, eight_bit: bool
    ) -> None:
        if len(dims) not in (1, 2):
            self.error(
                f"fragment '{name}' is a row vector [M] or a tile [M, N], not {shape_text(dims)}", span
            )
            return
        if eight_bit:
            self._check_eight_bit_shape(dims, name, span, tile_rows)
            return
        rows_ok = not isinstance(dims[0], int) or dims[0] % tile_rows == 0
        columns = dims[1] if len(dims) == 2 else 16
        columns_ok = not isinstance(columns, int) or (columns % 16 == 0 and columns <= 256)
        if not (rows_ok and columns_ok):
            layout = "WGMMA" if tile_rows == 64 else "mma.sync (a warp's)"
            self.hopper_rule(
                f"fragment '{name}' is {shape_text(dims)}; its registers follow the {layout} accumulator layout: "
                f"a multiple of {tile_rows} rows, and a multiple of 16 columns up to 256",
                span,
            )
        if not all(isinstance(d, int) for d in dims):
            self.error(f"fragment '{name}' needs a shape known at compile time (use a #define)", span)

    def _check_eight_bit_shape(self, dims: tuple[Dim, ...], name: str, span: Span, tile_rows: int) -> None:
        """An 8-bit fragment is an A operand from registers: a tile in WGMMA's k32 layout (4 elements a register)."""
        if len(dims) != 2:
            self.error(
                f"an 8-bit fragment is an MMA's A operand, a tile [M, K]; '{name}' is {shape_text(dims)}",
                span,
            )
            return
        rows, columns = dims
        if not all(isinstance(d, int) for d in dims):
            self.error(f"fragment '{name}' needs a shape known at compile time (use a #define)", span)
        elif rows % tile_rows or columns % 32:
            self.hopper_rule(
                f"fragment '{name}' is {shape_text(dims)}; an 8-bit fragment follows WGMMA's k32 layout of A: "
                f"a multiple of {tile_rows} rows and of 32 columns",
                span,
            )

    # ------------------------------------------------------------------ shapes of register values

    def register_shape(self, expr: ast.Expr, value: Value) -> tuple[Dim, ...] | None:
        """The logical shape of an accumulator (from its first MMA) or a register fragment; None otherwise."""
        if isinstance(value, Fragment) and value.registers:
            return value.data.dims
        if isinstance(value, Accumulator):
            symbol = self._symbol_of_name(expr)
            if symbol is None:
                return None
            # An apply may come before the accumulator's first MMA in the source (a loop's rescaling):
            # its shape is then symbolic here, and the lowering takes it from that MMA.
            return symbol.accumulator_shape or (f"rows of {symbol.name}", f"columns of {symbol.name}")
        return None

    def _register_member(
        self, base: Value, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        shape = self.register_shape(expr.value, base)
        if name == "span" and args is None:
            return Shape(shape) if shape is not None else UNKNOWN
        if name == "at" and args is not None:
            return self._register_element(base, shape, expr, args)
        self.error(f"{base.describe()} has no member '.{name}'", expr.name_span)
        return UNKNOWN

    def _register_element(
        self,
        base: Value,
        shape: tuple[Dim, ...] | None,
        expr: ast.Member | ast.Method,
        args: tuple[ast.Expr, ...],
    ) -> Value:
        for arg in args:
            self._expr(arg)
        elem = (
            base.elem
            if isinstance(base, Accumulator)
            else base.data.elem
            if isinstance(base, Fragment)
            else "f32"
        )
        name = expression(expr.value)
        if not self._applies:
            self.error(
                f"the elements of '{name}' live in registers: read and write them inside "
                f"'apply {{i, j}} in {name}.span'",
                expr.span,
            )
            return Scalar(elem)
        scope = self._applies[-1]
        if not scope.shape or all(d == "?" for d in scope.shape):
            return Scalar(elem)  # the apply itself is wrong, and reported
        written = tuple(arg.id if isinstance(arg, ast.Name) else "" for arg in args)
        if shape is not None and len(shape) == 2:
            wanted = scope.names[:2]
            fits = len(scope.shape) == 2 and not known_mismatch(shape, scope.shape)
        else:
            wanted = scope.names[:1]
            fits = shape is None or not known_mismatch(shape[:1], scope.shape[:1])
        if written != wanted or any(n in scope.locals for n in written):
            self.error(
                f"inside 'apply', '{name}' is indexed by the apply's own indices: '{name}.at({', '.join(wanted)})' "
                "(each thread holds only its own elements)",
                expr.span,
            )
        elif not fits:
            self.error(
                f"'{name}' is {shape_text(shape or ())}, but this apply spans {shape_text(scope.shape)}: "
                "a tile must have the spanned shape, a row vector its rows",
                expr.span,
            )
        return Scalar(elem)

    def _converted(self, value: Value, expr: ast.Cast) -> Value:
        """`__to<f16>(acc)`: the whole accumulator or fragment, converted element by element."""
        shape = self.register_shape(expr.operand, value)
        if expr.type_name not in CONVERSIONS:
            self.error(
                f"a fragment converts into {', '.join(CONVERSIONS)} in its registers, not {expr.type_name} (an 8-bit "
                "fragment, WGMMA's k32 A layout, places elements in other threads: fill it with 'mma.load')",
                expr.span,
            )
            return UNKNOWN
        if shape is None:
            return UNKNOWN
        if _element_type(value) in EIGHT_BIT:
            self.error(
                f"'{expression(expr.operand)}' is an 8-bit fragment, in WGMMA's k32 A layout, which other "
                "fragments do not share: it is not converted",
                expr.span,
            )
            return UNKNOWN
        return Fragment(Data(expr.type_name, shape, Storage.LOCAL, expression(expr.operand)), registers=True)

    # ------------------------------------------------------------------ apply

    def _stmt_Apply(self, stmt: ast.Apply, context: Context) -> None:
        if self._applies:
            self.error("'apply' does not nest: one apply visits every element already", stmt.span)
        target = stmt.target
        value = self._expr(target.value) if isinstance(target, ast.Member) and target.name == "span" else None
        shape = self.register_shape(target.value, value) if isinstance(target, ast.Member) and value else None
        if shape is None:
            if value is None or not isinstance(value, Unknown):
                self.error(
                    f"'apply' walks the elements of an accumulator or a fragment: 'apply {{i, j}} in acc.span', "
                    f"got '{expression(target)}'",
                    target.span,
                )
            shape = ("?",) * len(stmt.variables.names)
        if isinstance(target, ast.Member):
            self.error_with_note(
                off_its_warps(self.info, target.value, context, "visit the elements of"), target.value.span
            )
        names = tuple(name.id for name in stmt.variables.names)
        symbols = self._bound_variables(stmt.variables, tuple(shape), stmt, "apply")
        self._check_apply_body(stmt.body)
        if len(names) == 2:
            self._row_sums(stmt, names[0])
        scope = _ApplyScope(names, tuple(shape) if len(names) == len(shape) else (), set())
        self._applies = (*self._applies, scope)

        def declare() -> None:
            for symbol in symbols:
                self._declare(symbol, symbol.span)

        try:
            self._body(stmt.body, context, declare)
        finally:
            self._applies = self._applies[:-1]

    def _check_apply_body(self, body: ast.Stmt) -> None:
        """An apply's body is element-wise: assignments, conditions and local scalars, nothing asynchronous."""
        if isinstance(body, (ast.Apply, ast.FragmentOp)):
            return  # reported where they are resolved
        if not isinstance(body, APPLY_STATEMENTS):
            self.error(
                "the body of 'apply' computes element by element: assignments, 'if' and scalar declarations, "
                f"not '{type(body).__name__.lower()}' statements",
                body.span,
            )
            return
        inner: tuple[ast.Stmt | None, ...] = ()
        if isinstance(body, ast.Block):
            inner = body.body
        elif isinstance(body, ast.If):
            inner = (body.then, body.otherwise)
        for stmt in inner:
            if stmt is not None:
                self._check_apply_body(stmt)

    def register_update(self, stmt: ast.Assign, symbol: Symbol, value: Value, context: Context) -> bool:
        """`acc += bias;` (or -=, *=, /=): the scalar combined into every element of an accumulator or a
        fragment, as `apply {i, j} in acc.span acc.at(i, j) += bias;` would. False: not such a statement."""
        registers = symbol.value
        if stmt.op not in UPDATES or not (
            isinstance(registers, Accumulator) or (isinstance(registers, Fragment) and registers.registers)
        ):
            return False
        if not isinstance(value, (Scalar, Unknown)):
            self.error(
                f"'{symbol.name} {stmt.op} ...' combines one scalar into every element of '{symbol.name}'; "
                f"'{expression(stmt.value)}' is {value.describe()}",
                stmt.value.span,
            )
        self.error_with_note(off_its_warps(self.info, stmt.target, context, "update"), stmt.target.span)
        self.info.register_updates.add(id(stmt))
        return True

    def _row_sums(self, stmt: ast.Apply, row: str) -> None:
        """An apply over a tile writes a row vector only as a sum over the row: `v.at(i) += x.at(i, j)`.

        Its value is then each row's total, as if the body ran for j = 0, 1, ... in turn; on CUDA the
        lanes that share a row add their partial sums (cuda/fragments.py). Any other write of a row
        vector would mean one element per lane, not one value per row."""
        sums: list[ast.Expr] = []
        for assign in _assignments(stmt.body):
            target = assign.target
            if not (
                isinstance(target, ast.Method) and target.name == "at" and isinstance(target.value, ast.Name)
            ):
                continue
            symbol = self.scope.lookup(target.value.id)
            value = symbol.value if symbol is not None else None
            if not (isinstance(value, Fragment) and value.registers and len(value.data.dims) == 1):
                continue
            name = target.value.id
            if _sums_into(assign, name, row):
                sums.append(target.value)
                continue
            self.error(
                f"in an apply over a tile, the row vector '{name}' takes each row's sum: write "
                f"'{name}.at({row}) += EXPR;' (EXPR not reading '{name}'), or use 'reduce_sum' / 'reduce_max' "
                "for a whole row",
                assign.span,
            )
        if sums:
            self.info.row_sums[id(stmt)] = tuple(sums)

    def apply_assigns(self, stmt: ast.Assign) -> bool:
        """Inside an apply, an assignment writes an element or declares a scalar local to the element."""
        if not self._applies or not isinstance(stmt.target, ast.Name):
            return True
        scope = self._applies[-1]
        symbol = self.scope.lookup(stmt.target.id)
        if symbol is None:
            scope.locals.add(stmt.target.id)
            return True
        if stmt.target.id in scope.locals:
            return True
        self.error(
            f"'apply' computes each element on its own: it cannot assign '{stmt.target.id}', declared outside it "
            "(write to an element, or declare a scalar inside the apply)",
            stmt.target.span,
            Note(f"'{stmt.target.id}' is declared here", symbol.span),
        )
        return False

    # ------------------------------------------------------------------ reductions and copies

    def _stmt_FragmentOp(self, stmt: ast.FragmentOp, context: Context) -> None:
        values = [self._expr(arg) for arg in stmt.args]
        if self._applies:
            self.error(f"'{stmt.name}' works on whole fragments: call it outside 'apply'", stmt.name_span)
        owner = register_owner(context)
        if owner.level is None and owner.misfit is None:
            self.error(
                f"'{stmt.name}' works on the registers of a warpgroup or a warp: call it inside a 'group-4' or "
                "a 'group' scope, or a 'thread' scope of 128 or 32 threads",
                stmt.span,
            )
        elif owner.level is None:
            self.error(
                f"'{stmt.name}' works on the registers of a warpgroup (128 threads) or a warp (32), and this "
                f"'thread' scope has {owner.misfit}: use 'parallel t by 128 : thread' (or 'by 32'), or a "
                "'group-4' or 'group' scope",
                stmt.span,
            )
        usage = USAGES.get(stmt.name, f"{stmt.name}(ROWS, TILE, 1)")
        arity = usage.count(",") + 1
        if len(stmt.args) != arity:
            self.error(f"'{stmt.name}' takes {arity} argument{'s' if arity > 1 else ''}: {usage}", stmt.span)
            return
        if stmt.name == "all_reduce_sum":
            self._all_reduce_sum(stmt)
            return
        shapes = [self.register_shape(arg, value) for arg, value in zip(stmt.args[:2], values[:2])]
        for arg, value, shape in zip(stmt.args[:2], values[:2], shapes):
            if shape is None and not isinstance(value, Unknown):
                self.error(
                    f"'{stmt.name}' works on accumulators and fragments; '{expression(arg)}' is {value.describe()}",
                    arg.span,
                )
                return
        dst, src = shapes
        if dst is None or src is None:
            return
        if isinstance(stmt.args[0], ast.Cast):
            self.error(
                f"'{stmt.name}' writes into a fragment or an accumulator, not a converted value",
                stmt.args[0].span,
            )
        if stmt.name == "copy":
            kinds = {
                _element_type(value) in EIGHT_BIT for value in values[:2] if not isinstance(value, Unknown)
            }
            if len(kinds) == 2 and not isinstance(stmt.args[1], ast.Cast):
                self.error(
                    "'copy' between an 8-bit fragment (WGMMA's k32 A layout) and another fragment: their "
                    "threads hold different elements; copy 8-bit fragments into 8-bit ones",
                    stmt.span,
                )
            if known_mismatch(dst, src):
                self.error(
                    f"'copy' of {shape_text(src)} into {shape_text(dst)}: the shapes must agree", stmt.span
                )
            return
        dim = stmt.args[2]
        if not (isinstance(dim, ast.IntLiteral) and dim.value == 1):
            self.error(f"'{stmt.name}' reduces along dimension 1 (each row's columns): write 1", dim.span)
        if len(src) != 2 or len(dst) != 1 or known_mismatch(dst[:1], src[:1]):
            self.error(
                f"'{stmt.name}' reduces a tile [M, N] into a row vector [M]; got {shape_text(src)} into {shape_text(dst)}",
                stmt.span,
            )

    def _all_reduce_sum(self, stmt: ast.FragmentOp) -> None:
        """`all_reduce_sum(v)`: Croqtile adds the partial sums that the lanes sharing a row hold after an
        apply summed into `v`. Here that apply already leaves each row's total (`_row_sums`), so the
        statement only confirms it; its operand must be a row vector some apply summed into."""
        symbol = self._symbol_of_name(stmt.args[0])
        summed = symbol is not None and any(
            self.info.symbol_of.get(id(expr)) is symbol
            for exprs in self.info.row_sums.values()
            for expr in exprs
        )
        if not summed:
            self.error(
                f"all_reduce_sum requires a replicated 1D fragment layout: '{expression(stmt.args[0])}' must be a "
                "row vector that an apply over a tile summed into first ('apply {i, j} in acc.span "
                f"{expression(stmt.args[0])}.at(i) += acc.at(i, j);')",
                stmt.args[0].span,
            )


def _element_type(value: Value) -> str | None:
    if isinstance(value, Fragment):
        return value.data.elem
    if isinstance(value, Accumulator):
        return value.elem
    return None


def _assignments(body: ast.Stmt | None) -> list[ast.Assign]:
    if isinstance(body, ast.Assign):
        return [body]
    if isinstance(body, ast.Block):
        return [assign for stmt in body.body for assign in _assignments(stmt)]
    if isinstance(body, ast.If):
        return _assignments(body.then) + _assignments(body.otherwise)
    return []


def _sums_into(assign: ast.Assign, name: str, row: str) -> bool:
    """`v.at(i) += E` or `v.at(i) = v.at(i) + E` (or `E + v.at(i)`), E not reading v, i the apply's row."""
    target = assign.target
    if not (isinstance(target, ast.Method) and len(target.args) == 1):
        return False
    if not (isinstance(target.args[0], ast.Name) and target.args[0].id == row):
        return False
    if assign.op == "+=":
        addend: ast.Expr | None = assign.value
    elif assign.op == "=" and isinstance(assign.value, ast.Binary) and assign.value.op == "+":
        left, right = assign.value.left, assign.value.right
        addend = (
            right
            if expression(left) == expression(target)
            else left
            if expression(right) == expression(target)
            else None
        )
    else:
        addend = None
    return addend is not None and not _reads(addend, name)


def _reads(expr: ast.Expr, name: str) -> bool:
    return any(isinstance(node, ast.Name) and node.id == name for node in ast.walk_expr(expr))
