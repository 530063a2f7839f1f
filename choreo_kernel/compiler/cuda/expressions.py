"""Choreo expressions to CUDA expressions: scalars with their types, views as subscripts, shapes.

Names resolve through the front end's symbol table (`FunctionInfo.symbol_of`) to what the
lowering bound them to when it emitted their declaration (a register, a kernel parameter,
a shared buffer, a loop variable with its bound), so scoping follows the front end exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.builtins import ATOMIC_BUILTINS
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.resolve.selection import SELECT
from choreo_kernel.compiler.analysis.values import ELEMENT_BYTES, Symbol
from choreo_kernel.compiler.cuda import cexpr, elements
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.device_calls import DeviceCallExpressions
from choreo_kernel.compiler.cuda.selection import FactorCheck, lower_select
from choreo_kernel.compiler.cuda.views import (
    AccumulatorArray,
    AccumulatorRegisters,
    BufferSlots,
    FutureValue,
    IndexTuple,
    Lowered,
    LoweringError,
    Operand,
    RowRegisters,
    ShapeValue,
    TilingView,
    View,
    WindowView,
    element_count,
)
from choreo_kernel.compiler.semantics import cint
from choreo_kernel.compiler.semantics.math import MATH_FUNCTIONS

_COMPARISON = ("==", "!=", "<", ">", "<=", ">=", "&&", "||")


class Expressions(DeviceCallExpressions):
    """Compiles expressions against the bindings the emitter has made so far."""

    def __init__(self, info: FunctionInfo, bindings: dict[Symbol, Lowered]) -> None:
        self.info = info
        self.bindings = bindings
        self.check_select: FactorCheck | None = None  # how a kernel checks a select factor at run time
        # `x.at(i, j)` of a register fragment inside an apply (set by cuda/fragments.py)
        self.register_element: Callable[[AccumulatorRegisters | RowRegisters, ast.Method], Operand] | None = (
            None
        )
        self._declared: dict[tuple[int, str], Symbol] = {}  # (id(declaring node), name) -> symbol
        for symbol in (*info.symbol_of.values(), *info.events):
            self._declared.setdefault((id(symbol.declaration), symbol.name), symbol)

    # ------------------------------------------------------------------ entry points

    def symbol(self, name: ast.Name) -> Symbol:
        symbol = self.info.symbol_of.get(id(name))
        if symbol is None:
            raise LoweringError(f"'{name.id}' has no declaration the CUDA lowering can see", name)
        return symbol

    def declared(self, declaration: object, name: str) -> Symbol | None:
        """The symbol that `declaration` made for `name`; None when nothing ever refers to it."""
        return self._declared.get((id(declaration), name))

    def declared_by(self, stmt: ast.Stmt) -> Symbol | None:
        """The symbol a declaration statement made (`x = ...` declares `x`); None when nothing refers to it."""
        name = getattr(stmt, "name", None)
        if name is None and isinstance(stmt, ast.Assign) and isinstance(stmt.target, ast.Name):
            name = stmt.target.id
        return self.declared(stmt, name or "")

    def value(self, expr: ast.Expr) -> Lowered:
        handler = getattr(self, f"_{type(expr).__name__}")  # one per expression kind (tests/test_passes.py)
        value: Lowered = handler(expr)
        return value

    def operand(self, expr: ast.Expr) -> Operand:
        value = self.value(expr)
        if not isinstance(value, Operand):
            raise LoweringError("a scalar value is needed here", expr)
        return value

    def integer(self, expr: ast.Expr) -> CExpr:
        return self.operand(expr).expr

    def constant(self, expr: ast.Expr, what: str) -> int:
        value = self.integer(expr).value
        if value is None:
            raise LoweringError(
                f"{what} must be known at compile time for the CUDA backend (use a #define)", expr
            )
        return value

    def view(self, expr: ast.Expr) -> View:
        return self._as_view(self.value(expr), expr)

    def dims(self, items: Sequence[ast.Expr]) -> tuple[CExpr, ...]:
        """Dimensions listed in a shape; an item that is a shape (`a.span`) adds all of its dimensions."""
        dims: list[CExpr] = []
        for item in items:
            value = self.value(item)
            if isinstance(value, ShapeValue | View):
                dims.extend(value.dims)
            elif isinstance(value, IndexTuple):  # the values of a bounded ituple's elements
                dims.extend(element.expr for element in value.items)
            else:
                dims.append(self.operand(item).expr)
        return tuple(dims)

    def indices(self, args: Sequence[ast.Expr]) -> list[Operand | None]:
        """The entries of a view's index list, a bounded ituple, an ituple or a shape spliced in element by
        element; None for `_` (a whole dimension)."""
        entries: list[Operand | None] = []
        for arg in args:
            if isinstance(arg, ast.Name) and arg.id == "_":
                entries.append(None)
                continue
            value = self.value(arg)
            if isinstance(value, IndexTuple):
                entries.extend(value.items)
            elif isinstance(value, ShapeValue):
                entries.extend(Operand(dim, "s32") for dim in value.dims)
            elif isinstance(value, Operand):
                entries.append(value)
            else:
                raise LoweringError("an index must be an integer", arg)
        return entries

    def integers(self, args: Sequence[ast.Expr]) -> tuple[CExpr, ...]:
        """An index, offset or extent list, tuples spliced in."""
        return tuple(entry.expr for entry in self._operands(args))

    def _operands(self, args: Sequence[ast.Expr]) -> tuple[Operand, ...]:
        entries = self.indices(args)
        if any(entry is None for entry in entries):
            raise LoweringError("'_' keeps a whole dimension only in chunkat", args[0])
        return tuple(entry for entry in entries if entry is not None)

    def counts(self, count: ast.Expr) -> tuple[CExpr, ...]:
        """The counts of a `parallel`/`foreach`/`with`: `[a, b]`, a shape, or one integer."""
        items = count.items if isinstance(count, ast.ListLiteral) else (count,)
        return self.dims(items)

    # ------------------------------------------------------------------ names and literals

    def _Name(self, expr: ast.Name) -> Lowered:
        symbol = self.symbol(expr)
        value = self.bindings.get(symbol)
        if value is None:
            raise LoweringError(f"'{expr.id}' is not available inside this kernel", expr)
        return value

    def _IntLiteral(self, expr: ast.IntLiteral) -> Lowered:
        literal = (
            cint.literal_type(expr.value, expr.unsigned, expr.long) or "s64"
        )  # the analysis rejects wider ones
        if literal == "s32":
            return Operand(cexpr.const(expr.value), literal)
        suffix = {"u32": "u", "u64": "ull", "s64": "ll"}[literal]
        return Operand(cexpr.raw(f"{expr.value}{suffix}"), literal)

    def _FloatLiteral(self, expr: ast.FloatLiteral) -> Lowered:
        if expr.value == float("inf"):  # `inf` (NVRTC has no math.h INFINITY)
            return Operand(cexpr.raw("choreo::infinity()"), "f32")
        text = repr(expr.value)
        return Operand(cexpr.raw(f"{text}f"), "f32") if expr.single else Operand(cexpr.raw(text), "f64")

    def _BoolLiteral(self, expr: ast.BoolLiteral) -> Lowered:
        return Operand(cexpr.raw("true" if expr.value else "false"), "bool")

    def _StringLiteral(self, expr: ast.StringLiteral) -> Lowered:
        raise LoweringError("a string is only a value in a print statement", expr)

    def _AnyDim(self, expr: ast.AnyDim) -> Lowered:
        raise LoweringError("'?' (any size) is only allowed in parameter shapes", expr)

    def _Paren(self, expr: ast.Paren) -> Lowered:
        value = self.value(expr.inner)
        if isinstance(value, Operand):
            return Operand(cexpr.parenthesized(value.expr), value.type, value.bound)
        return value

    def _TypeSize(self, expr: ast.TypeSize) -> Lowered:
        return Operand(cexpr.const(ELEMENT_BYTES[expr.type_name]), "s32")

    def _TupleLiteral(self, expr: ast.TupleLiteral) -> Lowered:
        return ShapeValue(self.dims(expr.items))

    def _ListLiteral(self, expr: ast.ListLiteral) -> Lowered:
        return ShapeValue(self.dims(expr.items))

    def _ElementCount(self, expr: ast.ElementCount) -> Lowered:
        value = self.value(expr.operand)
        if isinstance(value, ShapeValue | View):
            return Operand(element_count(value.dims), "s32")
        raise LoweringError("'|x|' needs a shape", expr)

    # ------------------------------------------------------------------ arithmetic

    def _Binary(self, expr: ast.Binary) -> Lowered:
        if expr.op == "#":
            return self._compose(expr)
        if expr.op in ("#-", "#+"):
            bounded, moved = self.operand(expr.left), self.integer(expr.right)
            if bounded.bound is None:
                raise LoweringError(f"'{expr.op}' changes the bound of a bounded value", expr)
            return Operand(bounded.expr, "s32", cexpr.binary(expr.op[1], bounded.bound, moved))
        left, right = self.value(expr.left), self.value(expr.right)
        if isinstance(left, ShapeValue) or isinstance(right, ShapeValue):
            return self._shape_arithmetic(expr, left, right)
        if not isinstance(left, Operand) or not isinstance(right, Operand):
            raise LoweringError(f"'{expr.op}' needs scalar operands", expr)
        left_expr, left_type = elements.widen(left.expr, left.type)
        right_expr, right_type = elements.widen(right.expr, right.type)
        if expr.op in _COMPARISON:
            result = "bool"
        elif expr.op in ("<<", ">>"):
            result = elements.arithmetic_type(left_type, left_type)
        else:
            result = elements.arithmetic_type(left_type, right_type)
        return Operand(cexpr.binary(expr.op, left_expr, right_expr), result, left.bound or right.bound)

    def _compose(self, expr: ast.Binary) -> Operand:
        """`a # b`: value `a * #b + b`, bound `#a * #b` (language.md 3.4)."""
        left, right = self.operand(expr.left), self.operand(expr.right)
        if left.bound is None or right.bound is None:
            raise LoweringError("'#' composes two bounded values", expr)
        value = cexpr.add(cexpr.multiply(left.expr, right.bound), right.expr)
        return Operand(cexpr.parenthesized(value), "s32", cexpr.multiply(left.bound, right.bound))

    def _shape_arithmetic(self, expr: ast.Binary, left: Lowered, right: Lowered) -> ShapeValue:
        def items(value: Lowered, size: int) -> tuple[CExpr, ...]:
            if isinstance(value, ShapeValue):
                return value.dims
            if isinstance(value, Operand):
                return (value.expr,) * size
            raise LoweringError(f"'{expr.op}' on a shape needs a shape or an integer", expr)

        shape = left if isinstance(left, ShapeValue) else right
        size = len(shape.dims) if isinstance(shape, ShapeValue) else 0
        pairs = zip(items(left, size), items(right, size))
        return ShapeValue(tuple(cexpr.binary(expr.op, a, b) for a, b in pairs))

    def _Unary(self, expr: ast.Unary) -> Lowered:
        if expr.op == "#":
            tuple_value = self.value(expr.operand)
            if isinstance(tuple_value, IndexTuple):  # the bounds of a bounded ituple, a shape
                return ShapeValue(tuple(_bound(item, expr) for item in tuple_value.items))
            operand = self.operand(expr.operand)
            if operand.bound is None:
                raise LoweringError("'#' gives the bound of a bounded value", expr)
            return Operand(operand.bound, "s32")
        operand = self.operand(expr.operand)
        value, element = elements.widen(operand.expr, operand.type)
        if expr.op == "!":
            return Operand(cexpr.unary("!", value), "bool")
        if expr.op in ("-", "~", "+"):
            return Operand(cexpr.unary(expr.op, value) if expr.op != "+" else value, element)
        raise LoweringError(f"the CUDA lowering has no '{expr.op}' operator", expr)

    def _IncDec(self, expr: ast.IncDec) -> Lowered:
        operand = self.operand(expr.operand)
        text = f"{expr.op}{operand.expr.text}" if expr.prefix else f"{operand.expr.text}{expr.op}"
        return Operand(cexpr.raw(text, cexpr.UNARY, pure=False), operand.type)

    def _Ternary(self, expr: ast.Ternary) -> Lowered:
        condition = self.operand(expr.condition)
        then, otherwise = self.operand(expr.then), self.operand(expr.otherwise)
        then_expr, then_type = elements.widen(then.expr, then.type)
        otherwise_expr, otherwise_type = elements.widen(otherwise.expr, otherwise.type)
        result = (
            "bool"
            if then_type == otherwise_type == "bool"
            else elements.arithmetic_type(then_type, otherwise_type)
        )
        return Operand(cexpr.ternary(condition.expr, then_expr, otherwise_expr), result)

    def _Cast(self, expr: ast.Cast) -> Lowered:
        operand = self.operand(expr.operand)
        target = expr.type_name
        if target in elements.STORED_AS_BITS:
            return Operand(elements.convert(operand.expr, operand.type, target), target)
        value, _ = elements.widen(operand.expr, operand.type)
        return Operand(cexpr.call(f"static_cast<{elements.c_type(target)}>", value), target)

    # ------------------------------------------------------------------ calls

    def _Call(self, expr: ast.Call) -> Lowered:
        callee = expr.callee
        if isinstance(callee, ast.Name) and id(callee) not in self.info.symbol_of:
            return self._builtin(callee.id, expr)
        target = self.value(callee)
        if isinstance(target, ShapeValue):
            return Operand(self._dimension(target.dims, expr.args, expr), "s32")
        if isinstance(target, IndexTuple):  # index(k): element k
            position = self.constant(expr.args[0], "an element index") if len(expr.args) == 1 else -1
            if len(expr.args) != 1 or not -len(target.items) <= position < len(target.items):
                raise LoweringError(
                    "an element of a bounded ituple is selected with one index in range", expr
                )
            return target.items[position]
        if isinstance(target, Operand) and target.bound is not None and len(expr.args) == 1:
            # j(k): the value k of a with-variable's range; j(-1) is #j - 1 (language.md 12.8).
            index = self.integer(expr.args[0])
            if index.value is not None:
                value = cexpr.add(target.bound, index) if index.value < 0 else index
                return Operand(value, "s32", target.bound)
            negative = cexpr.binary("<", index, cexpr.ZERO)
            return Operand(
                cexpr.ternary(negative, cexpr.add(target.bound, index), index), "s32", target.bound
            )
        raise LoweringError("this call has no CUDA lowering", expr)

    def _builtin(self, name: str, expr: ast.Call) -> Lowered:
        if name in ATOMIC_BUILTINS:
            return self._atomic(name, expr)
        if name == SELECT:
            views = [self.view(arg) for arg in expr.args[1:]]
            checked = id(expr) in self.info.checked_selects
            return lower_select(expr, self.integer(expr.args[0]), views, checked, self.check_select)
        args = [self.operand(arg) for arg in expr.args]
        if name == "cdiv" and len(args) == 2:
            a, b = args[0].expr, args[1].expr
            if a.value is not None and b.value is not None and b.value > 0:
                return Operand(cexpr.const(cint.cdiv(a.value, b.value)), "s32")
            quotient = cexpr.call("choreo::cdiv", a, b)
            if a.term is not None and b.term is not None:  # for the host, as the header computes it
                quotient = replace(quotient, term=("/", ("+", a.term, ("-", b.term, 1)), b.term))
            return Operand(quotient, "s32")
        function = MATH_FUNCTIONS.get(name)
        if function is None or len(args) != function.arity:
            raise LoweringError(f"'{name}' has no CUDA lowering", expr)
        widened = [elements.widen(arg.expr, arg.type) for arg in args]
        types = [element for _, element in widened]
        device = f"choreo::math::{function.device}"
        if function.result == "floating":  # computed in double where an argument is one, else in float
            result = "f64" if "f64" in types else "f32"
            values = [
                value if element == result else cexpr.call(f"static_cast<{elements.c_type(result)}>", value)
                for value, element in widened
            ]
            return Operand(cexpr.call(device, *values), result)
        result = types[0] if len(types) == 1 else elements.arithmetic_type(*types)
        known = [value.value for value, _ in widened]
        if function.result == "integer" and all(v is not None for v in known) and known[1] != 0:
            return Operand(cexpr.const(function.reference(None, *known)), result)
        return Operand(cexpr.call(device, *(value for value, _ in widened)), result)

    def _dimension(self, dims: tuple[CExpr, ...], args: tuple[ast.Expr, ...], expr: ast.Expr) -> CExpr:
        if len(args) != 1:
            raise LoweringError("a dimension is selected with one index", expr)
        index = self.constant(args[0], "a dimension index")
        if not -len(dims) <= index < len(dims):
            raise LoweringError(f"dimension {index} is out of range", expr)
        return dims[index]

    # ------------------------------------------------------------------ members and views

    def _Member(self, expr: ast.Member) -> Lowered:
        base = self.value(expr.value)
        if expr.name == "span":
            if isinstance(base, ShapeValue):
                return base
            return ShapeValue(self._as_view(base, expr).dims)
        if expr.name == "data" and isinstance(base, FutureValue):
            return self._future_data(base, expr)
        if expr.name == "data":
            return self._as_view(base, expr)
        raise LoweringError(f"'.{expr.name}' has no CUDA lowering here", expr)

    def _Method(self, expr: ast.Method) -> Lowered:
        base = self.value(expr.value)
        name, args = expr.name, expr.args
        if isinstance(base, AccumulatorRegisters | RowRegisters) and name == "at" and self.register_element:
            return self.register_element(base, expr)  # inside an apply (cuda/fragments.py)
        if isinstance(base, TilingView):
            if name == "step":
                return TilingView(base.view, base.extents, self.integers(args), base.tail)
            if name == "at":
                indices = self._operands(args)
                bounds = tuple(
                    index.bound if self._below_its_bound(arg) else None for arg, index in zip(args, indices)
                )
                return base.at(tuple(i.expr for i in indices), bounds if len(indices) == len(args) else ())
            base = base.tile()
        if isinstance(base, WindowView) and name == "from":
            return base.at(self.integers(args))
        if name == "span" and isinstance(base, ShapeValue):
            return Operand(self._dimension(base.dims, args, expr), "s32")
        if name == "span_as" and isinstance(base, BufferSlots):  # from the sub-array's first buffer
            return base.element.reshaped(self.dims(args))
        view = self._as_view(base, expr)
        if name == "span":
            return Operand(self._dimension(view.dims, args, expr), "s32")
        if name == "chunkat":
            return self._chunkat(view, args, self.info.ceil_chunks.get(id(expr)))
        if name in ("subspan", "chunk"):
            sizes = self._extents(view, args)
            if name == "chunk":
                sizes = tuple(cexpr.binary("/", dim, size) for dim, size in zip(view.dims, sizes))
            return TilingView(view, sizes, sizes)
        if name == "at":
            return self._at(view, args)
        if name == "modspan":  # the tail that whole tiles leave (resolve/views.py)
            sizes = self.integers(args)
            extents = tuple(cexpr.binary("%", dim, size) for dim, size in zip(view.dims, sizes))
            tail = tuple(cexpr.binary("/", dim, size) for dim, size in zip(view.dims, sizes))
            return TilingView(view, extents, sizes, tail)
        if name == "view":
            return WindowView(view, self._extents(view, args), self.integers(expr.strides))
        if name == "span_as":
            return view.reshaped(self.dims(args))
        if name == "sqz":
            return view.squeezed()
        raise LoweringError(f"'.{name}' has no CUDA lowering", expr)

    def _below_its_bound(self, arg: ast.Expr) -> bool:
        """A parallel, foreach or with variable itself, whose value is below its bound (arithmetic on one
        keeps the bound, not the range: `#(k + 1)` is `#k`)."""
        symbol = self.info.symbol_of.get(id(arg)) if isinstance(arg, ast.Name) else None
        return symbol is not None and symbol.origin in ("parallel", "foreach", "with")

    def _extents(self, view: View, args: tuple[ast.Expr, ...]) -> tuple[CExpr, ...]:
        """Extents of a tile or window, tuples spliced in; `_` keeps the view's dimension whole."""
        entries = self.indices(args)
        dims = (*view.dims, *(cexpr.ZERO,) * len(entries))
        return tuple(dim if entry is None else entry.expr for entry, dim in zip(entries, dims))

    def _as_view(self, value: Lowered, expr: ast.Expr) -> View:
        if isinstance(value, View):
            return value
        if isinstance(value, TilingView):
            return value.tile()
        if isinstance(value, WindowView):
            return value.window()
        if isinstance(value, FutureValue):
            return self._future_data(value, expr)
        if isinstance(value, BufferSlots):
            raise LoweringError("index every dimension of the buffer array to get one buffer", expr)
        raise LoweringError("spanned data is needed here", expr)

    def _future_data(self, future: FutureValue, expr: ast.Expr) -> View:
        if future.data is None:
            raise LoweringError(
                "this future has no data yet: no copy with a destination was assigned to it", expr
            )
        return future.data

    def _chunkat(self, view: View, args: tuple[ast.Expr, ...], tiles: tuple[int | None, ...] | None) -> View:
        """Tile `args` of the split of each dimension by its index's bound, or, where the analysis found the
        bound to be cdiv(dimension, t) (`tiles`), of the tiles of t that cover it (TMA fills the tail)."""
        indices: list[CExpr] = []
        extents: list[CExpr] = []
        for position, (index, dim) in enumerate(zip(self.indices(args), view.dims)):
            if index is None:
                indices.append(cexpr.ZERO)
                extents.append(dim)
                continue
            indices.append(index.expr)
            tile = tiles[position] if tiles is not None else None
            extents.append(
                cexpr.const(tile) if tile is not None else cexpr.binary("/", dim, _bound(index, args[0]))
            )
        cut = view.shifted(tuple(indices), tuple(extents), tuple(extents))
        return replace(cut, tiled=True) if tiles is not None else cut

    def _at(self, view: View, args: tuple[ast.Expr, ...]) -> Lowered:
        indices = self.integers(args)
        if len(indices) < len(view.dims):
            return view.drop_leading(indices)
        return Operand(view.element(indices), view.elem, storage=view.storage, swizzled=bool(view.swizzle))

    def _Index(self, expr: ast.Index) -> Lowered:
        base = self.value(expr.value)
        if id(expr) in self.info.spans_derived:  # `c : x [(0), 1]` derives from x.span
            base = ShapeValue(self._as_view(base, expr).dims)
        if isinstance(base, BufferSlots):
            return base.slot(tuple(self.integer(i) for i in expr.indices))
        if isinstance(base, AccumulatorArray):  # `mc[0][i]`: one of a warp's accumulators
            return base.at(tuple(self.integer(i) for i in expr.indices))
        if isinstance(base, ShapeValue):
            return ShapeValue(tuple(self._derived_dim(base, item) for item in expr.indices))
        if isinstance(base, View):
            return self._at(base, expr.indices)
        raise LoweringError("this cannot be indexed with [...] in the CUDA lowering", expr)

    def _derived_dim(self, base: ShapeValue, item: ast.Expr) -> CExpr:
        """In `s[(0) / 2, (1)]`, `(i)` names dimension i of `s`."""
        if isinstance(item, ast.Paren) and isinstance(item.inner, ast.IntLiteral):
            return base.dims[item.inner.value]
        if isinstance(item, ast.Binary):
            return cexpr.binary(
                item.op, self._derived_dim(base, item.left), self._derived_dim(base, item.right)
            )
        return self.integer(item)


def _bound(index: Operand, node: ast.Node) -> CExpr:
    if index.bound is None:
        raise LoweringError("a chunkat index must be a bounded value", node)
    return index.bound
