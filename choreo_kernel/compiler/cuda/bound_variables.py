"""The variables a `with`, `foreach` or `parallel` binds, as C integers: one per element, and the bounded
ituple of them (`index` of `with index = {x, y} in [4, 8]`) as the list of those integers.

A named element keeps its source name; the anonymous elements of a lone name over several bounds
(`with index in [4, 8]`, `foreach i in a.span`) are `index_0`, `index_1`... A `foreach` over a bounded
ituple loops over its elements outermost first, reusing their C names, so the tuple and every element
read the loop's values inside it (the loop variables shadow the `with`'s).
"""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.values import BoundedTuple
from choreo_kernel.compiler.cuda import cexpr
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.context import KernelContext
from choreo_kernel.compiler.cuda.views import IndexTuple, LoweringError, Operand


class BoundVariables(KernelContext):
    """Binds the element variables and bounded ituples of `with`, `foreach` and `parallel`."""

    def element_names(self, variables: ast.BoundVars, count: int, in_next_block: bool = False) -> list[str]:
        """The C name of each of the `count` elements that `variables` bind (declared here, or by the head
        of the block about to open): fresh where a visible C variable has the name already."""
        if id(variables) in self.info.anonymous_tuples:
            base = variables.names[0].id
            return [self.names.fresh(f"{base}_{position}") for position in range(count)]
        return [self.names.local(name.id, in_next_block) for name in variables.names[:count]]

    def bind_elements(self, declaration: ast.Node, variables: ast.BoundVars, elements: list[Operand]) -> None:
        """Bind the symbols that `declaration` made for `variables` to their elements' values."""
        if id(variables) in self.info.anonymous_tuples:
            self._bind_symbol(declaration, variables.names[0].id, IndexTuple(tuple(elements)))
            return
        for name, element in zip(variables.names, elements):
            self._bind_symbol(declaration, name.id, element)
        if variables.group is not None:
            self._bind_symbol(declaration, variables.group.id, IndexTuple(tuple(elements)))

    def bind_group(self, declaration: ast.Node, variables: ast.BoundVars, values: list[Operand]) -> None:
        """`q = {q0, q1} by [2, 2]`: `q` is the bounded ituple of its variables (as they are bound, where
        they are)."""
        assert variables.group is not None
        elements = []
        for name, value in zip(variables.names, values):
            symbol = self.expressions.declared(declaration, name.id)
            bound = self.bindings.get(symbol) if symbol is not None else None
            elements.append(bound if isinstance(bound, Operand) else value)
        self._bind_symbol(declaration, variables.group.id, IndexTuple(tuple(elements)))

    def _bind_symbol(self, declaration: ast.Node, name: str, value: Operand | IndexTuple) -> None:
        symbol = self.expressions.declared(declaration, name)
        if symbol is not None:
            self.bindings[symbol] = value

    def loop_heads(
        self, declaration: ast.Node, variables: ast.BoundVars, counts: tuple[CExpr, ...]
    ) -> list[str]:
        """`foreach` over `variables` with `counts`: the `for` heads, outermost first, with the loop's
        variables bound."""
        names = self.element_names(variables, len(counts), in_next_block=True)
        elements = [Operand(cexpr.name(name), "s32", count) for name, count in zip(names, counts)]
        self.bind_elements(declaration, variables, elements)
        return [_head(name, count) for name, count in zip(names, counts)]

    def tuple_loop_heads(self, loop: ast.ForeachRange, item: ast.RangeItem, outer: IndexTuple) -> list[str]:
        """`foreach index` over a bounded ituple: one loop per element, reusing the element's C name, with
        the loop's own symbols for the tuple and its named elements bound to the loop variables."""
        heads: list[str] = []
        elements: list[Operand] = []
        for element in outer.items:
            if element.bound is None:
                raise LoweringError(f"'{item.name.id}' is not a bounded ituple", item)
            heads.append(_head(element.expr.text, element.bound))
            elements.append(Operand(element.expr, "s32", element.bound))
        self._bind_symbol(loop, item.name.id, IndexTuple(tuple(elements)))
        value = self.expressions.symbol(item.name).value
        named = value.elements if isinstance(value, BoundedTuple) else None
        for name, element in zip(named or (), elements):
            self._bind_symbol(loop, name, element)
        return heads


def _head(name: str, count: CExpr) -> str:
    return f"for (int {name} = 0; {name} < {count.text}; ++{name})"
