"""Views of spanned data and the members of futures and events: chunkat, subspan, at, view, span_as, .data, .span."""

from __future__ import annotations

from collections.abc import Sequence

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.resolve.base import ResolverBase
from choreo_kernel.compiler.analysis.values import (
    UNKNOWN,
    Bounded,
    BufferArray,
    Data,
    Dim,
    Event,
    EventSlot,
    Fragment,
    Future,
    Scalar,
    Shape,
    Tiling,
    Unknown,
    Value,
    Window,
    fold,
    known_count_mismatch,
    product,
    shape_text,
)
from choreo_kernel.compiler.printer import expression


class ViewRules(ResolverBase):
    """Views of spanned data and the members of futures and events: chunkat, subspan, at, view, span_as, .data, .span."""

    def _expr_Index(self, expr: ast.Index) -> Value:
        base = self._expr(expr.value)
        if isinstance(base, BufferArray):
            if len(expr.indices) != len(base.counts):
                self.error(
                    f"buffer array '{expression(expr.value)}' has {len(base.counts)} dimension(s), indexed with "
                    f"{len(expr.indices)}",
                    expr.span,
                )
            for index, count in zip(expr.indices, base.counts):
                self._check_index(index, count, f"the slots of '{expression(expr.value)}'")
            return base.element
        if isinstance(base, Event):
            for index, count in zip(expr.indices, base.dims):
                self._check_index(index, count, f"the slots of event '{expression(expr.value)}'")
            if not base.dims:
                self.error(f"'{expression(expr.value)}' is a single event, not an event array", expr.span)
            root = expr.value
            while isinstance(root, ast.Index):
                root = root.value
            slot = EventSlot(expression(root), "index")
            self.info.value_of[id(expr)] = slot
            return slot
        if isinstance(base, Shape):
            return self._derive_shape(base, expr)
        if isinstance(base, Data):
            # x[i][j]: element access, written the C way.
            return self._at(base, expr.indices, expr, expression(expr.value))
        if not isinstance(base, Unknown):
            self.error(f"{base.describe()} cannot be indexed with [...]", expr.span)
        return UNKNOWN

    def _derive_shape(self, base: Shape, expr: ast.Index) -> Value:
        dims: list[Dim] = []
        for item in expr.indices:
            dims.append(self._derive_dim(base, item))
        return Shape(tuple(dims))

    def _derive_dim(self, base: Shape, item: ast.Expr) -> Dim:
        """In `s[(0) / 2, (1)]`, `(i)` names dimension i of `s`."""
        if isinstance(item, ast.Paren) and isinstance(item.inner, ast.IntLiteral):
            index = item.inner.value
            if 0 <= index < len(base.dims):
                return base.dims[index]
            self.error(f"dimension ({index}) is out of range for a rank-{len(base.dims)} shape", item.span)
            return "?"
        if isinstance(item, ast.Binary):
            return fold(item.op, self._derive_dim(base, item.left), self._derive_dim(base, item.right))
        return self._dim_of(item, self._expr(item))

    def _expr_Member(self, expr: ast.Member) -> Value:
        base = self._expr(expr.value)
        return self._member(base, expr.name, expr, None)

    def _expr_Method(self, expr: ast.Method) -> Value:
        base = self._expr(expr.value)
        return self._member(base, expr.name, expr, expr.args)

    def _member(
        self, base: Value, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        if isinstance(base, Unknown):
            for arg in args or ():
                self._expr(arg)
            return UNKNOWN
        if isinstance(base, Future):
            return self._future_member(base, name, expr, args)
        if isinstance(base, Event):
            return self._event_member(base, name, expr, args)
        if isinstance(base, Tiling):
            return self._tiling_member(base, name, expr, args)
        if isinstance(base, Window):
            if name == "from" and args is not None:
                self._rank_check(base.base, args, expr, "from")
                for arg in args:
                    self._int_expr(arg, "an offset")
                return Data(base.base.elem, base.extents, base.base.storage, base.base.root)
            self.error(f"'.view(...)' is followed by '.from(...)', not '.{name}'", expr.name_span)
            return UNKNOWN
        if isinstance(base, Data):
            return self._data_member(base, name, expr, args)
        if isinstance(base, Fragment) and name == "span":
            return Shape(base.data.dims)
        if isinstance(base, Shape) and name == "span":
            return base
        self.error(f"{base.describe()} has no member '.{name}'", expr.name_span)
        return UNKNOWN

    def _future_member(
        self, base: Future, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        symbol = self._symbol_of_name(expr.value)
        if not base.is_data:
            accumulator = symbol.future.accumulator if symbol and symbol.future else None
            use = (
                f"use the accumulator '{accumulator}' instead"
                if accumulator
                else "use its accumulator instead"
            )
            self.error(
                f"'{expression(expr.value)}.{name}': '{expression(expr.value)}' is an MMA operation future, and operation "
                f"futures own no buffer and have no .data or .span; {use}",
                expr.span,
            )
            for arg in args or ():
                self._expr(arg)
            return UNKNOWN
        data = self._future_data(expr.value)
        if data is None:
            return UNKNOWN
        if name == "data":
            return data if args is None else self._data_member(data, "at", expr, args)
        if name == "span":
            return Shape(data.dims) if args is None else self._dimension_of(Shape(data.dims), args, expr.span)
        # f.at(i): a shorthand for f.data.at(i)
        return self._data_member(data, name, expr, args)

    def _event_member(
        self, base: Event, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        if name != "at" or args is None:
            self.error(
                f"an event has no member '.{name}'; events are used with wait and trigger", expr.name_span
            )
            return UNKNOWN
        for arg in args:
            self._int_expr(arg, "a ring order")
        slot = EventSlot(expression(expr.value), "at")
        self.info.value_of[id(expr)] = slot
        return slot

    def _tiling_member(
        self, base: Tiling, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        if name == "step" and args is not None:
            self._rank_check(base.base, args, expr, "step")
            steps = tuple(self._dim_of(arg, self._int_expr(arg, "a step")) for arg in args)
            return Tiling(base.base, base.extents, steps, base.origin_method)
        if name == "at" and args is not None:
            self._rank_check(base.base, args, expr, "at")
            for arg, extent, step, dim in zip(args, base.extents, base.steps, base.base.dims):
                tiles = fold("+", fold("/", fold("-", dim, extent), step), 1)
                self._check_index(arg, tiles, f"the tiles of '{base.base.root}'")
            return base.tile()
        return self._data_member(base.tile(), name, expr, args)

    def _data_member(
        self, data: Data, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        if name == "span":
            if args is None:
                return Shape(data.dims)
            return self._dimension_of(Shape(data.dims), args, expr.span)
        if args is None:
            self.error(f"spanned data has no member '.{name}'", expr.name_span)
            return UNKNOWN
        if name == "chunkat":
            return self._chunkat(data, expr, args)
        if name in ("subspan", "chunk"):
            if not self._rank_check(data, args, expr, name):
                return UNKNOWN
            sizes = tuple(self._dim_of(arg, self._int_expr(arg, "a tile extent")) for arg in args)
            if name == "chunk":
                sizes = tuple(fold("/", dim, count) for dim, count in zip(data.dims, sizes))
            for arg, size, dim in zip(args, sizes, data.dims):
                if isinstance(size, int) and isinstance(dim, int) and not 0 < size <= dim:
                    self.error(f"tile extent {size} does not fit dimension of extent {dim}", arg.span)
            return Tiling(data, sizes, sizes, name)
        if name == "at":
            return self._at(data, args, expr, expression(expr.value))
        if name == "view":
            if not self._rank_check(data, args, expr, name):
                return UNKNOWN
            return Window(
                data, tuple(self._dim_of(arg, self._int_expr(arg, "a window extent")) for arg in args)
            )
        if name == "span_as":
            return self._span_as(data, expr, args)
        self.error(
            f"spanned data has no method '.{name}' (views are chunkat, subspan, step, at, view, from, span_as)",
            expr.name_span,
        )
        return UNKNOWN

    def _chunkat(self, data: Data, expr: ast.Expr, args: Sequence[ast.Expr]) -> Value:
        if not self._rank_check(data, args, expr, "chunkat"):
            return UNKNOWN
        dims: list[Dim] = []
        for arg, dim in zip(args, data.dims):
            if isinstance(arg, ast.Name) and arg.id == "_":
                dims.append(dim)
                continue
            value = self._expr(arg)
            if isinstance(value, Bounded):
                dims.append(fold("/", dim, value.bound))
            elif isinstance(value, Unknown):
                dims.append("?")
            else:
                self.error(
                    "a chunkat index must be a bounded value (a parallel, foreach or with variable, or a '#' "
                    f"composition of them); this is {value.describe()}",
                    arg.span,
                )
                dims.append("?")
        return Data(data.elem, tuple(dims), data.storage, data.root)

    def _at(self, data: Data, args: Sequence[ast.Expr], expr: ast.Expr, name: str) -> Value:
        if len(args) > len(data.dims):
            self.error(
                f"'.at' takes at most {len(data.dims)} index(es) for {len(data.dims)}-dimensional data "
                f"{data.describe()}, got {len(args)}",
                expr.span,
            )
            for arg in args:
                self._expr(arg)
            return UNKNOWN
        for position, (arg, dim) in enumerate(zip(args, data.dims)):
            self._check_index(arg, dim, f"dimension {position} of '{name}'")
        rest = data.dims[len(args) :]
        if not rest:
            return Scalar(data.elem)
        return Data(data.elem, rest, data.storage, data.root)

    def _span_as(self, data: Data, expr: ast.Expr, args: Sequence[ast.Expr]) -> Value:
        dims = self._shape_dims(args)
        if known_count_mismatch(dims, data.dims):
            self.error(
                f"span_as({shape_text(dims)}) has {product(dims)} elements, but the data has "
                f"{product(data.dims)} ({shape_text(data.dims)})",
                expr.span,
            )
            return UNKNOWN
        return Data(data.elem, dims, data.storage, data.root)
