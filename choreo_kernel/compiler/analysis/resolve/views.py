"""Views of spanned data and the members of futures and events: chunkat, subspan, at, view, span_as, .data, .span."""

from __future__ import annotations

from collections.abc import Sequence

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.resolve.tuples import IndexItem, TupleRules
from choreo_kernel.compiler.analysis.values import (
    UNKNOWN,
    Accumulator,
    AccumulatorArray,
    Bounded,
    BufferArray,
    Data,
    Dim,
    Event,
    EventSlot,
    Fragment,
    Future,
    ITuple,
    Scalar,
    Shape,
    Tiling,
    Unknown,
    Value,
    Window,
    ceil_tiles,
    fold,
    known_count_mismatch,
    product,
    shape_text,
)
from choreo_kernel.compiler.printer import expression


class ViewRules(TupleRules):
    """Views of spanned data and the members of futures and events: chunkat, subspan, at, view, span_as, .data, .span."""

    def _expr_Index(self, expr: ast.Index) -> Value:
        base = self._expr(expr.value)
        if isinstance(base, BufferArray):
            return self._slots(base, expr)
        if isinstance(base, AccumulatorArray):
            return self._accumulator_of(base, expr)
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
        if isinstance(base, ITuple):  # `t[(1), (0)]`, `t {(1), (0)}`: a permutation, as for shapes
            return ITuple(tuple(self._derive_dim(Shape(base.items), item) for item in expr.indices))
        if expr.braced:
            if not isinstance(base, Unknown):
                self.error(
                    f"'{expression(expr.value)} {{...}}' derives an ituple from an ituple; "
                    f"'{expression(expr.value)}' is {base.describe()}",
                    expr.span,
                )
            return UNKNOWN
        if isinstance(base, Data):
            # x[i][j]: element access, written the C way.
            return self._at(base, expr.indices, expr, expression(expr.value))
        if not isinstance(base, Unknown):
            self.error(f"{base.describe()} cannot be indexed with [...]", expr.span)
        return UNKNOWN

    def _accumulator_of(self, base: AccumulatorArray, expr: ast.Index) -> Value:
        """`mc[i][j]` (or `mc[i, j]`) of an accumulator array: one accumulator; fewer indices, a sub-array."""
        name = expression(_array_root(expr.value))
        if len(expr.indices) > len(base.counts):
            self.error(
                f"accumulator array '{name}' has {len(base.counts)} dimension(s), indexed with {len(expr.indices)}",
                expr.span,
            )
            return UNKNOWN
        for index, count in zip(expr.indices, base.counts):
            self._check_index(index, count, f"accumulator array '{name}'")
        rest = base.counts[len(expr.indices) :]
        return AccumulatorArray(base.elem, rest) if rest else Accumulator(base.elem)

    def _slots(self, base: BufferArray, expr: ast.Index) -> Value:
        """`stage[i]`, `b[i][j]` or `b[i, j]`: one buffer of the array, or with fewer indices than its
        dimensions the sub-array they select."""
        name = expression(_array_root(expr.value))
        if len(expr.indices) > len(base.counts):
            self.error(
                f"buffer array '{name}' has {len(base.counts)} dimension(s), indexed with {len(expr.indices)}",
                expr.span,
            )
        for index, count in zip(expr.indices, base.counts):
            self._check_index(index, count, f"the slots of '{name}'")
        rest = base.counts[len(expr.indices) :]
        return BufferArray(base.element, rest) if rest else base.element

    def _shape_value(self, expr: ast.Expr) -> Value:
        """What a shape declaration's value makes. After `c :`, `x [(0), 1]` derives from the shape of
        data `x` (its span) as Croqtile has it, where elsewhere `x[i][j]` would be an element."""
        if isinstance(expr, ast.Index) and not expr.braced:
            base = self._expr(expr.value)
            if isinstance(base, Data):
                self.info.spans_derived.add(id(expr))
                return self._derive_shape(Shape(base.dims), expr)
        return self._expr(expr)

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
        if isinstance(expr, ast.Method) and expr.strides and name != "view":
            self.error(
                f"only '.view(...)' takes strides after ':' (as in x.view(16, 8 : 64, 2)); '.{name}' does not",
                expr.strides[0].span,
            )
            return UNKNOWN
        if isinstance(base, BufferArray) and name == "span_as" and args is not None:
            dims = self._shape_dims(args)
            return self._span_as(self._slots_storage(base, dims), expr, dims)
        if isinstance(base, BufferArray):
            self.error(
                f"'{expression(expr.value)}' selects several buffers of a buffer array, not one: index every "
                f"dimension of the array ({len(base.counts)} more index(es)) before '.{name}'",
                expr.span,
            )
            return UNKNOWN
        if isinstance(base, Future):
            return self._future_member(base, name, expr, args)
        if isinstance(base, Event):
            return self._event_member(base, name, expr, args)
        if isinstance(base, Tiling):
            return self._tiling_member(base, name, expr, args)
        if isinstance(base, Window):
            if name == "from" and args is not None:
                return self._from(base, expr, args)
            return self._data_member(base.window(), name, expr, args)
        if isinstance(base, Data):
            return self._data_member(base, name, expr, args)
        if isinstance(base, Accumulator) or (isinstance(base, Fragment) and base.registers):
            return self._register_member(base, name, expr, args)  # resolve/fragments.py
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
            items = self._index_items(args)
            self._items_match_rank(base.base, items, expr, "step")
            steps = tuple(self._item_dim(item, "a step") for item in items)
            return Tiling(base.base, base.extents, steps, base.origin_method)
        if name == "at" and args is not None:
            items = self._index_items(args)
            self._items_match_rank(base.base, items, expr, "at")
            tiled = f"'{base.base.root}'" if base.base.root else "this view"
            for position, (item, extent, step, dim) in enumerate(
                zip(items, base.extents, base.steps, base.base.dims)
            ):
                # a subspan's last tile may be a tail tile (views.md): the tiles that start inside the data
                reach = 1 if base.origin_method == "subspan" else extent
                tiles = fold("+", fold("/", fold("-", dim, reach), step), 1)
                self._check_item_index(item, tiles, f"dimension {position} of the tiles of {tiled}")
            return base.tile()
        return self._data_member(base.tile(), name, expr, args)

    def _data_member(
        self, data: Data, name: str, expr: ast.Member | ast.Method, args: tuple[ast.Expr, ...] | None
    ) -> Value:
        if name == "span":
            if args is None:
                return Shape(data.dims)
            return self._dimension_of(Shape(data.dims), args, expr.span)
        if name == "data" and args is None:
            return data  # the data itself, as a device call's argument writes it (`a.data`)
        if args is None:
            self.error(f"spanned data has no member '.{name}'", expr.name_span)
            return UNKNOWN
        if name == "chunkat":
            return self._chunkat(data, expr, args)
        if name in ("subspan", "chunk"):
            items = self._index_items(args)
            if not self._items_match_rank(data, items, expr, name):
                return UNKNOWN
            sizes = self._extents(data, items, "a tile extent")
            if name == "chunk":
                sizes = tuple(fold("/", dim, count) for dim, count in zip(data.dims, sizes))
            for position, (item, size, dim) in enumerate(zip(items, sizes, data.dims)):
                if isinstance(size, int) and isinstance(dim, int) and not 0 < size <= dim:
                    self.error(_tile_too_large(name, size, position, dim), item.expr.span)
            return Tiling(data, sizes, sizes, name)
        if name == "at":
            return self._at(data, args, expr, expression(expr.value))
        if name == "modspan":
            return self._modspan(data, expr, args)
        if name == "view":
            return self._view(data, expr, args)
        if name == "span_as":
            return self._span_as(data, expr, self._shape_dims(args))
        if name == "sqz":
            return self._squeeze(data, expr, args)
        self.error(
            f"spanned data has no method '.{name}' (views are chunkat, subspan, modspan, step, at, view, from, "
            "span_as, sqz)",
            expr.name_span,
        )
        return UNKNOWN

    def _extents(self, data: Data, items: Sequence[IndexItem], what: str) -> tuple[Dim, ...]:
        """Extents of a tile or window; `_` keeps that dimension of the data whole."""
        return tuple(
            dim if self._is_whole(item) else self._item_dim(item, what) for item, dim in zip(items, data.dims)
        )

    def _is_whole(self, item: IndexItem) -> bool:
        return item.is_whole and self.scope.lookup("_") is None

    def _view(self, data: Data, expr: ast.Expr, args: Sequence[ast.Expr]) -> Value:
        """`x.view(a, b)`: a window of x's strides; `x.view(a, b : sa, sb)`: any extents and element strides
        (of any rank), as the data is laid out in memory."""
        strides = expr.strides if isinstance(expr, ast.Method) else ()
        items = self._index_items(args)
        if not strides:
            if not self._items_match_rank(data, items, expr, "view"):
                return UNKNOWN
            return Window(data, self._extents(data, items, "a window extent"))
        if len(strides) != len(items):
            self.error(
                f"'.view' has {len(items)} extent(s) but {len(strides)} stride(s); give one stride per extent",
                expr.span,
            )
            return UNKNOWN
        if len(items) == len(data.dims):
            extents = self._extents(data, items, "a window extent")
        elif any(self._is_whole(item) for item in items):
            self.error("'_' keeps a dimension whole only where the view has the data's rank", expr.span)
            return UNKNOWN
        else:
            extents = tuple(self._item_dim(item, "a window extent") for item in items)
        written = tuple(self._dim_of(stride, self._int_expr(stride, "a stride")) for stride in strides)
        for stride, dim in zip(strides, written):
            if isinstance(dim, int) and dim < 0:
                self.error(f"a stride must not be negative, got {dim}", stride.span)
        return Window(data, extents, written)

    def _from(self, window: Window, expr: ast.Expr, args: Sequence[ast.Expr]) -> Value:
        """`.from(o0, o1)`: the window starts `o0 * s0 + o1 * s1` elements after the data's first one."""
        base = window.base
        items = self._index_items(args)
        if not self._items_match_rank(window.window(), items, expr, "from"):
            return UNKNOWN
        offsets = [self._integer_item(item, "an offset") for item in items]
        known = [value.const if isinstance(value, Scalar) else None for value in offsets]
        if window.strides is None:
            for item, offset, extent, dim in zip(items, known, window.extents, base.dims):
                if isinstance(offset, int) and not _fits(offset, extent, dim):
                    self.error(
                        f"a window of extent {extent} at offset {offset} does not fit dimension of extent {dim}",
                        item.expr.span,
                    )
            return window.window()
        reach: Dim = 0
        for offset, extent, stride in zip(known, window.extents, window.strides):
            if offset is None:
                reach = "?"
                break
            reach = fold("+", reach, fold("*", fold("+", offset, fold("-", extent, 1)), stride))
        count = product(base.dims)
        if base.contiguous() and isinstance(reach, int) and isinstance(count, int) and reach >= count:
            self.error(
                f"this strided view reaches element {reach} of '{base.root}', which has {count} elements",
                expr.span,
            )
        return window.window()

    def _squeeze(self, data: Data, expr: ast.Expr, args: Sequence[ast.Expr]) -> Value:
        """`.sqz()`: the view without its dimensions of extent 1 (the strides of the others kept), after a
        `.subspan`, `.span_as` or `.view` of the same chain, as in Croqtile."""
        if args:
            self.error("'.sqz()' takes no arguments", expr.span)
        chain = expr.value if isinstance(expr, ast.Method) else expr
        while isinstance(chain, ast.Method) and chain.name not in ("subspan", "span_as", "view"):
            chain = chain.value
        if not isinstance(chain, ast.Method):
            self.error(
                "'.sqz()' drops the extent-1 dimensions that a '.subspan', '.span_as' or '.view' earlier in the "
                "same expression made; it needs one of them before it",
                expr.span,
            )
            return UNKNOWN
        kept = [k for k, dim in enumerate(data.dims) if dim != 1] or [len(data.dims) - 1]
        layout = data.layout
        return data.viewed(tuple(data.dims[k] for k in kept), tuple(layout[k] for k in kept))

    def _modspan(self, data: Data, expr: ast.Expr, args: Sequence[ast.Expr]) -> Value:
        """`x.modspan(a, b)`: what whole tiles of extent a x b leave of `x`, the tail of each dimension
        (extent `dim % a`); `.at(i, j)` places it at element (i * a, j * b), and without `.at` it is where
        the whole tiles end."""
        items = self._index_items(args)
        if not self._items_match_rank(data, items, expr, "modspan"):
            return UNKNOWN
        sizes = tuple(self._item_dim(item, "a tile extent") for item in items)
        extents = []
        for position, (item, size, dim) in enumerate(zip(items, sizes, data.dims)):
            extent = fold("%", dim, size)
            if isinstance(size, int) and isinstance(dim, int) and not 0 < size <= dim:
                self.error(_tile_too_large("modspan", size, position, dim), item.expr.span)
            elif isinstance(extent, int) and extent == 0:
                self.error(
                    f"dimension {position} ({dim}) is a multiple of {size}: whole tiles cover it and modspan "
                    "leaves nothing of it",
                    item.expr.span,
                )
            extents.append(extent)
        return Tiling(data, tuple(extents), sizes, "modspan")

    def _chunkat(self, data: Data, expr: ast.Expr, args: Sequence[ast.Expr]) -> Value:
        items = self._index_items(args)
        if not self._items_match_rank(data, items, expr, "chunkat"):
            return UNKNOWN
        dims: list[Dim] = []
        tiles: list[int | None] = [None] * len(items)
        for position, (item, dim) in enumerate(zip(items, data.dims)):
            value = item.value
            covers = ceil_tiles(value.bound) if isinstance(value, Bounded) else None
            if item.is_whole:
                dims.append(dim)
            elif covers is not None and covers[0] == dim:
                # `#i` is cdiv(dim, t): tiles of t, as subspan(t).at(i); the last one may reach past the end
                tiles[position] = covers[1]
                dims.append(covers[1])
            elif isinstance(value, Bounded):
                if isinstance(value.bound, int) and isinstance(dim, int) and value.bound > dim:
                    self.error(
                        f"tiling factor exceeds data size ({value.bound} > {dim}) in dimension {position}: "
                        f"'.chunkat' cannot cut {dim} elements into {value.bound} tiles",
                        item.expr.span,
                    )
                dims.append(fold("/", dim, value.bound))
            elif isinstance(value, Unknown):
                dims.append("?")
            else:
                self.error(
                    "a chunkat index must be a bounded value (a parallel, foreach or with variable, or a '#' "
                    f"composition of them); this is {value.describe()}",
                    item.expr.span,
                )
                dims.append("?")
        if any(tile is not None for tile in tiles):
            self.info.ceil_chunks[id(expr)] = tuple(tiles)
        return data.viewed(tuple(dims), data.layout)

    def _at(self, data: Data, args: Sequence[ast.Expr], expr: ast.Expr, name: str) -> Value:
        items = self._index_items(args)
        if len(items) > len(data.dims):
            self.error(
                f"'.at' takes at most {len(data.dims)} index(es) for {len(data.dims)}-dimensional data "
                f"{data.describe()}, got {len(items)}",
                expr.span,
            )
            return UNKNOWN
        for position, (item, dim) in enumerate(zip(items, data.dims)):
            self._check_item_index(item, dim, f"dimension {position} of '{name}'")
        rest = data.dims[len(items) :]
        if not rest:
            return Scalar(data.elem)
        return data.viewed(rest, data.layout[len(args) :])

    def _slots_storage(self, slots: BufferArray, dims: tuple[Dim, ...]) -> Data:
        """What `b[i].span_as(...)` reshapes, of a sub-array of buffers: its buffers stored one after
        another, or only the first of them where the new shape holds one buffer's elements (Croqtile reads
        `b[i]` as its first buffer there)."""
        element = slots.element
        one_buffer = not known_count_mismatch(dims, element.dims)
        return element if one_buffer else element.viewed((*slots.counts, *element.dims), None)

    def _span_as(self, data: Data, expr: ast.Expr, dims: tuple[Dim, ...]) -> Value:
        if known_count_mismatch(dims, data.dims):
            self.error(
                f"inconsistent sizes: span_as({shape_text(dims)}) has {product(dims)} elements, but the data has "
                f"{product(data.dims)} ({shape_text(data.dims)})",
                expr.span,
            )
            return UNKNOWN
        contiguous = data.contiguous()
        if contiguous is not True:
            certainty = "is" if contiguous is False else "may be"
            self.sink.warning(
                f"'span_as' {certainty} applied to non-contiguous data {shape_text(data.dims)} (strides "
                f"{shape_text(data.layout)}): it reshapes the {product(dims)} elements stored one after another "
                "from the data's first element, as Croqtile does, which are not the data's own elements",
                expr.span,
            )
        return data.viewed(dims, None)


def _array_root(expr: ast.Expr) -> ast.Expr:
    """`b` of `b[i]`: the buffer array a chain of `[...]` starts from."""
    while isinstance(expr, ast.Index):
        expr = expr.value
    return expr


def _fits(offset: int, extent: Dim, dim: Dim) -> bool:
    """A window of `extent` at `offset` lies inside a dimension of `dim` (or cannot be told yet)."""
    if isinstance(extent, int) and isinstance(dim, int):
        return 0 <= offset <= dim - extent
    return True


def _tile_too_large(method: str, size: int, position: int, dim: int) -> str:
    """`.subspan`, `.chunk` or `.modspan` asks for a tile that a dimension cannot hold."""
    return f"'.{method}' too large for dimension {position}: tile extent {size} does not fit its extent {dim}"
