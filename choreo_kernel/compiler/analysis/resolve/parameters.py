"""Parameters passed by reference and streams (`f32 [N] &out`, `stream s`, `parallel<s>`), and what a
kernel may do with the host's values.

A parameter passed by reference shares the caller's array: what the function writes into it
reaches the caller, as for a `global` one (Croqtile's `&`). Only spanned parameters can be:
scalars are values, a `global` parameter is the caller's array already, and an unnamed one could
never be written. A `stream` parameter holds the CUDA stream the caller passes (a CuPy stream);
`parallel<s>` launches its kernel on it. Only a kernel (an outermost parallel) has a stream of
its own: the levels inside it run in its launch. A host-level `mutable` scalar may change between
launches, but a kernel receives its value as an argument, so no kernel can change it.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.resolve.base import ResolverBase
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import Stream, Unknown


class ParameterRules(ResolverBase):
    """Parameters passed by reference, stream parameters and `parallel<s>`."""

    def _check_unbounded(self, param: ast.Param) -> None:
        """`??`: a dimension nothing states, so the parameter must be the caller's own (global) array."""
        for dim in param.type.shape or ():
            if isinstance(dim, ast.AnyDim) and dim.unbounded and not param.is_global:
                self.error(
                    f"the parameter '{param.name}' with an unbounded dimension ('??') must be global: declare it "
                    f"'global', or give the dimension a name or '?' to bind it from the argument",
                    dim.span,
                )
                return

    def _check_reference(self, param: ast.Param) -> None:
        if not param.by_reference:
            return
        if not param.named:
            self.error(
                "an unnamed parameter cannot be passed by reference: nothing could write it", param.span
            )
        elif param.type.shape is None:
            self.error(
                f"scalar parameter '{param.name}' cannot be passed by reference ('&'): scalars are passed by "
                "value; return the result in a buffer instead",
                param.span,
            )
        elif param.is_global:
            self.error(
                f"parameter '{param.name}' is global, which cannot also be passed by reference ('&'): a global "
                "parameter is the caller's array already; drop the '&'",
                param.name_span,
            )

    def _check_stream_binding(self, stmt: ast.Parallel, context: Context) -> None:
        """`parallel<s>`: `s` names a stream parameter, and the parallel is a kernel of its own."""
        stream = stmt.stream
        if stream is None:
            return
        value = self._expr(stream)
        if not isinstance(value, Stream | Unknown):
            self.error(
                f"'{stream.id}' is not a stream type; parallel<...> requires a stream variable (a 'stream' "
                f"parameter), and '{stream.id}' is {value.describe()}",
                stream.span,
            )
        if context.in_parallel:
            level = next((clause.level for clause in stmt.clauses if clause.level), "an inner")
            self.error(
                f"stream binding is only allowed on block-level parallel; '{level}' level cannot have its "
                "own stream: it runs in the launch of the parallel around it",
                stream.span,
            )
