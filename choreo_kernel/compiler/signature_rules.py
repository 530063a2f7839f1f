"""The AST builder's rules for function signatures: parameters of every form Croqtile takes (`f32 [N] &out`,
`f32 mdspan<2> a`, an unnamed `bool`, `stream s`), `parallel<s>`, and the small forms that share
their tokens (`t {(1), (0)}`, `swap a, b;`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lark import Token, v_args

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.builder_base import BuilderBase, parse_int


@v_args(meta=True)
class SignatureRules(BuilderBase):
    """Parameters, stream bindings, tuple derivations and word statements."""

    def params(self, meta: Any, children: list[Any]) -> tuple[ast.Param, ...]:
        """The parameters in order; an unnamed one (`bool`) gets a name from its position, which no
        source can spell (nothing may refer to it) and the emitted kernel can use."""
        return tuple(
            param if param.named else replace(param, name=f"unnamed_param_{index}")
            for index, param in enumerate(children)
        )

    def _signature_param(
        self,
        meta: Any,
        is_global: Token | None,
        type_name: str,
        shape: Any,
        name: Token | None,
        by_reference: bool,
    ) -> ast.Param:
        type_ref = ast.TypeRef(self._span(meta), type_name, shape)
        if name is None:
            return ast.Param(
                self._span(meta), type_ref, "", self._span(meta), is_global is not None, by_reference, False
            )
        return ast.Param(
            self._span(meta), type_ref, str(name), self._token_span(name), is_global is not None, by_reference
        )

    def shaped_param(self, meta: Any, children: list[Any]) -> ast.Param:
        """`f32 mdspan<2> a`, `f32 mdspan[M, N] &b`."""
        is_global, type_name, shape, amp, name = children
        return self._signature_param(meta, is_global, type_name, shape, name, amp is not None)

    def shaped_ref_param(self, meta: Any, children: list[Any]) -> ast.Param:
        """`f32 [N] &out`: the caller's array, written back."""
        is_global, type_name, shape, _amp, name = children
        return self._signature_param(meta, is_global, type_name, shape, name, True)

    def unnamed_shaped_param(self, meta: Any, children: list[Any]) -> ast.Param:
        is_global, type_name, shape = children
        return self._signature_param(meta, is_global, type_name, shape, None, False)

    def scalar_ref_param(self, meta: Any, children: list[Any]) -> ast.Param:
        is_global, type_name, _amp, name = children
        return self._signature_param(meta, is_global, type_name, None, name, True)

    def unnamed_param(self, meta: Any, children: list[Any]) -> ast.Param:
        is_global, type_name = children
        return self._signature_param(meta, is_global, type_name, None, None, False)

    def stream_param(self, meta: Any, children: list[Any]) -> ast.Param:
        """`stream s`: the CUDA stream the caller passes, for `parallel<s>`."""
        _keyword, name = children
        return self._signature_param(meta, None, ast.STREAM_TYPE, None, name, False)

    def any_rank(self, meta: Any, children: list[Any]) -> tuple[ast.Expr, ...]:
        """`mdspan<2>`: two dimensions of any size, each bound from the argument."""
        rank = parse_int(children[0])[0]
        return tuple(ast.AnyDim(self._span(meta)) for _ in range(rank))

    def keyword_shape(self, meta: Any, children: list[Any]) -> tuple[ast.Expr, ...]:
        return tuple(children[0])

    def unbounded_dim(self, meta: Any, children: list[Any]) -> ast.AnyDim:
        return ast.AnyDim(self._span(meta), unbounded=True)

    def stream_binding(self, meta: Any, children: list[Any]) -> ast.Name:
        return self._name(children[0])

    def tuple_derivation(self, meta: Any, children: list[Any]) -> ast.Index:
        """`t {(2), (0), 5}`: an ituple made from the elements of `t`."""
        name, indices = children
        return ast.Index(self._span(meta), self._name(name), tuple(indices), braced=True)

    def word_stmt(self, meta: Any, children: list[Any]) -> ast.ExprStmt:
        """`swap a, b;`: the same statement as `swap(a, b);`."""
        word, *names = children
        callee = self._name(word)
        return ast.ExprStmt(
            self._span(meta), ast.Call(self._span(meta), callee, tuple(map(self._name, names)))
        )
