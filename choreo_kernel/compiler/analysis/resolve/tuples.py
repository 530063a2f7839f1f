"""Bounded ituples and index lists: the variables a `with`, `foreach` or `parallel` binds, and the index
lists of views, where a tuple stands for all its elements.

`with index = {x, y} in [4, 8]` binds `x` and `y` (bounded integers) and `index` (a bounded ituple of
both); `with index in [4, 8]` binds only `index`, whose elements are anonymous; `foreach i in a.span`
binds `i` to one bounded element per dimension of `a`. A one-dimensional extent binds a bounded
integer, as `with x in 128` does. In an index list (`chunkat(index)`, `.at(index, p)`,
`subspan(tile, 9)`, `view([b, 3])`) a bounded ituple, an ituple or a shape is spliced in element by
element; every rule on index lists checks the spliced list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.resolve.base import ResolverBase
from choreo_kernel.compiler.analysis.scope import Scope
from choreo_kernel.compiler.analysis.values import (
    INT_TYPES,
    UNKNOWN,
    Bounded,
    BoundedTuple,
    Data,
    Dim,
    FutureInfo,
    ITuple,
    Scalar,
    Shape,
    Symbol,
    Unknown,
    Value,
)
from choreo_kernel.compiler.printer import expression


@dataclass(frozen=True)
class IndexItem:
    """One entry of a spliced index list: the expression it comes from and its value (for an element of
    a tuple, the tuple's expression and the element's value)."""

    expr: ast.Expr
    value: Value
    dim: Dim | None = None  # for an element of a spliced ituple or shape: the element

    @property
    def is_whole(self) -> bool:
        """`_` in `chunkat(_, k)`: the whole dimension."""
        return isinstance(self.expr, ast.Name) and self.expr.id == "_"


class TupleRules(ResolverBase):
    """Bounded ituples bound by `with`, `foreach` and `parallel`, and index lists with tuples spliced in."""

    # ------------------------------------------------------------------ binding

    def _bound_variables(
        self, variables: ast.BoundVars, bounds: tuple[Dim, ...], declaration: ast.Node, origin: str
    ) -> list[Symbol]:
        """The symbols that `variables` bind over `bounds`: one bounded integer per braced name, a bounded
        ituple for the group name (`index = {x, y}`) or for a lone name over several bounds."""
        names = variables.names
        for name in (*names, *((variables.group,) if variables.group else ())):
            if name.id == "_":
                self.error(
                    f"_ is not allowed as a {origin} variable: '_' can only be used in chunkat, where it "
                    "keeps a whole dimension",
                    name.span,
                )
        if not variables.braced and len(names) == 1 and len(bounds) > 1:
            name = names[0]
            self.info.anonymous_tuples.add(id(variables))
            return [Symbol(name.id, BoundedTuple(bounds), name.span, declaration=declaration, origin=origin)]
        if len(names) != len(bounds):
            self.error(
                f"{len(names)} variable(s) for an extent of rank {len(bounds)}: the matched names must match the "
                "mdspan's rank (one name per dimension, or a single unbraced name for a bounded ituple of them)",
                variables.span,
            )
        symbols = [
            Symbol(name.id, Bounded(bound), name.span, declaration=declaration, origin=origin)
            for name, bound in zip(names, bounds)
        ]
        group = variables.group
        if group is not None:
            elements = tuple(name.id for name in names)
            value = BoundedTuple(tuple(bounds[: len(names)]), elements)
            symbols.append(Symbol(group.id, value, group.span, declaration=declaration, origin=origin))
        return symbols

    def _extent_bounds(self, extent: ast.Expr) -> tuple[Dim, ...]:
        """The bounds of `in [a, b]`, `in shape`, `in tuple` or `in n`."""
        if isinstance(extent, ast.ListLiteral):
            bounds = self._shape_dims(extent.items)
        else:
            value = self._expr(extent)
            if isinstance(value, Shape):
                bounds = value.dims
            elif isinstance(value, ITuple):
                bounds = value.items
            else:
                bounds = (self._dim_of(extent, value),)
        self._check_extents(bounds, extent, "a bound")
        return bounds

    def _check_extents(self, dims: tuple[Dim, ...], where: ast.Expr, what: str, first: int = 0) -> None:
        """Extents (and bounds) known at compile time must be positive; `first` is the position of the
        first of `dims`."""
        for position, dim in enumerate(dims, first):
            if dim == 0:
                self.error(
                    f"the mdspan size of dimension {position} is deduced as 0 (a zero value) from "
                    f"'{expression(where)}': {what} must be positive",
                    where.span,
                )
            elif isinstance(dim, int) and dim < 0:
                self.error(
                    f"the mdspan size {dim} of dimension {position} is invalid: {what} must be positive",
                    where.span,
                )

    def _rebound_elements(self, symbol: Symbol, name: ast.Name, loop: ast.Stmt) -> list[Symbol]:
        """`foreach index` over a bounded ituple: the loop's own symbols for the tuple and for each of its
        named elements, which take the loop's values inside it."""
        value = symbol.value
        rebound = [Symbol(name.id, value, name.span, declaration=loop, origin="foreach")]
        if isinstance(value, BoundedTuple) and value.elements is not None:
            for element, bound in zip(value.elements, value.bounds):
                rebound.append(Symbol(element, Bounded(bound), name.span, declaration=loop, origin="foreach"))
        return rebound

    def _check_rotation_kinds(self, call: ast.Call) -> None:
        """`swap`/`rotate` trade futures that stand for the same kind of copy: a synchronous one is
        complete where it stands and an async one is pending, so traded they would be waited wrongly."""
        kinds: list[tuple[ast.Name, FutureInfo]] = []
        for arg in call.args:
            symbol = self._symbol_of_name(arg)
            info = symbol.future if symbol is not None else None
            if isinstance(arg, ast.Name) and info is not None and info.kind != "placeholder":
                kinds.append((arg, info))
        for name, info in kinds[1:]:
            first, first_info = kinds[0]
            if info.is_async != first_info.is_async:
                sync, pending = (first, name) if info.is_async else (name, first)
                self.error(
                    f"swapping futures of different types is forbidden: '{sync.id}' is the future of a sync copy "
                    f"and '{pending.id}' of an async one; rotate/swap futures that are all async or all sync",
                    name.span,
                )

    def _check_rotation_scopes(self, call: ast.Call) -> None:
        """`swap`/`rotate` trade the futures of one scope: across scopes one future (and the buffer its
        copy landed in) would outlive the scope it was made in."""
        scopes: list[tuple[ast.Name, Scope]] = []
        for arg in call.args:
            symbol = self._symbol_of_name(arg)
            scope: Scope | None = self.scope
            while scope is not None and symbol is not None and scope.symbols.get(symbol.name) is not symbol:
                scope = scope.parent
            if scope is not None and isinstance(arg, ast.Name):
                scopes.append((arg, scope))
        for name, scope in scopes[1:]:
            first, first_scope = scopes[0]
            if scope is not first_scope:
                self.error(
                    f"swapping values defined in different scopes is forbidden: '{first.id}' and '{name.id}' are "
                    "declared in different scopes, so one would leave the scope its copy belongs to; declare "
                    "both in one scope (a placeholder 'dma.any' where the other is)",
                    name.span,
                )
                return

    def _check_immutable_parts(self, name: str, value: ast.Expr) -> None:
        """Shapes and ituples are immutable, so nothing that can change may make them."""
        for node in ast.walk_expr(value):
            if not isinstance(node, ast.Name):
                continue
            symbol = self.info.symbol_of.get(id(node))
            if symbol is not None and symbol.mutable:
                self.error(
                    f"mdspan/ituple '{name}' cannot be initialized with mutable values: '{node.id}' is mutable, "
                    "and a shape or an ituple never changes once made",
                    node.span,
                )
                return

    # ------------------------------------------------------------------ index lists

    def _index_items(self, args: Sequence[ast.Expr]) -> list[IndexItem]:
        """The arguments of a view method, evaluated once, with tuples and shapes spliced in."""
        items: list[IndexItem] = []
        for arg in args:
            if isinstance(arg, ast.Name) and arg.id == "_":
                items.append(IndexItem(arg, UNKNOWN))
                continue
            value = self._expr(arg)
            if isinstance(value, BoundedTuple):
                items.extend(IndexItem(arg, Bounded(bound)) for bound in value.bounds)
            elif isinstance(value, ITuple | Shape):
                dims = value.items if isinstance(value, ITuple) else value.dims
                items.extend(IndexItem(arg, _integer(dim), dim) for dim in dims)
            else:
                items.append(IndexItem(arg, value))
        return items

    def _items_match_rank(self, data: Data, items: Sequence[IndexItem], expr: ast.Expr, method: str) -> bool:
        if len(items) == len(data.dims):
            return True
        self.error(
            f"'.{method}' takes {len(data.dims)} index(es) for {len(data.dims)}-dimensional data "
            f"{data.describe()}, got {len(items)}",
            expr.span,
        )
        return False

    def _integer_item(self, item: IndexItem, what: str) -> Value:
        """An entry that must be an integer (an index, an offset, an extent)."""
        value = item.value
        if isinstance(value, Scalar) and value.type not in INT_TYPES and value.type != "bool":
            self.error(f"{what} must be an integer, got {value.type}", item.expr.span)
        elif not isinstance(value, (Scalar, Bounded, Unknown)):
            self.error(f"{what} must be an integer, got {value.describe()}", item.expr.span)
        return value

    def _item_dim(self, item: IndexItem, what: str) -> Dim:
        """An entry as a dimension: its value when known, else the text of its expression."""
        if item.dim is not None:
            return item.dim
        value = self._integer_item(item, what)
        if not isinstance(value, Scalar | Bounded):
            return "?"
        return self._dim_of(item.expr, value)

    def _check_item_index(self, item: IndexItem, extent: Dim, what: str) -> None:
        value = self._integer_item(item, "an index")
        const = value.const if isinstance(value, Scalar) else None
        if isinstance(const, int) and isinstance(extent, int) and not 0 <= const < extent:
            self.error(f"index {const} is out of range for {what} (extent {extent})", item.expr.span)


def _integer(dim: Dim) -> Scalar:
    return Scalar("s32", dim if isinstance(dim, int) else None)
