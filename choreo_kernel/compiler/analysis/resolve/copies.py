"""Data movement: dma and tma copies, their operands, swizzles and `after` clauses."""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.resolve.base import ResolverBase
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import (
    UNKNOWN,
    Data,
    Future,
    FutureInfo,
    StorageKeyword,
    Tiling,
    Unknown,
    Value,
    known_count_mismatch,
    shape_text,
)
from choreo_kernel.compiler.printer import expression
from choreo_kernel.compiler.semantics.levels import Storage


class CopyRules(ResolverBase):
    """Data movement: dma and tma copies, their operands, swizzles and `after` clauses."""

    def _after(self, operation: ast.Operation) -> None:
        for item in operation.after:
            value = self._expr(item)
            if not isinstance(value, (Future, Unknown)):
                self.error(
                    f"'after' orders a copy after a future; '{expression(item)}' is {value.describe()}",
                    item.span,
                )
            self.info.value_of[id(item)] = value

    def _copy_operands(self, operation: ast.Operation) -> tuple[Value, Value] | None:
        if len(operation.args) != 1 or operation.destination is None:
            self.error(f"'{operation.text}' copies one source to one destination: SRC => DST", operation.span)
            for arg in operation.args:
                self._expr(arg)
            return None
        source = self._expr(operation.args[0])
        destination_expr = operation.destination
        if (
            isinstance(destination_expr, ast.Name)
            and Storage.named(destination_expr.id) is not None
            and self.scope.lookup(destination_expr.id) is None
        ):
            storage = Storage(destination_expr.id)
            self.info.allocates[id(operation)] = storage
            destination: Value = StorageKeyword(storage)
        else:
            destination = self._expr(destination_expr)
        if isinstance(source, Future) and source.is_data:
            source = self._future_data(operation.args[0]) or UNKNOWN
        if isinstance(source, Tiling):
            source = source.tile()
        if isinstance(destination, Tiling):
            destination = destination.tile()
        if not isinstance(source, (Data, Unknown)):
            self.error(
                f"the source of a copy must be spanned data, got {source.describe()}", operation.args[0].span
            )
            return None
        if isinstance(destination, StorageKeyword):
            if isinstance(source, Data):
                destination = Data(source.elem, source.dims, destination.storage, "")
            else:
                return None
        if not isinstance(destination, (Data, Unknown)):
            self.error(
                f"the destination of a copy must be spanned data or 'shared'/'local', got {destination.describe()}",
                destination_expr.span,
            )
            return None
        if isinstance(source, Data) and isinstance(destination, Data):
            if source.elem != destination.elem:
                self.error(
                    f"element types differ across '=>': the source is {source.elem}, "
                    f"the destination is {destination.elem}",
                    operation.span,
                )
            elif known_count_mismatch(source.dims, destination.dims):
                self.error(
                    f"shapes differ across '=>': the source is {shape_text(source.dims)}, "
                    f"the destination is {shape_text(destination.dims)}",
                    operation.span,
                )
        return source, destination

    def _dma(self, stmt: ast.OperationStmt, context: Context) -> FutureInfo | None:
        operation = stmt.operation
        words = [q for q in operation.qualifiers if q != "async"]
        if words == ["any"]:
            return FutureInfo(operation, stmt, "placeholder", False)
        if words != ["copy"] and words != ["copy", "swiz"]:
            self._unknown_operation(operation, "expected dma.copy, dma.copy.async or dma.any")
            return None
        self._swizzle(operation)
        self._after(operation)
        operands = self._copy_operands(operation)
        destination = operands[1] if operands else None
        if operands and operation.is_async:
            source, dest = operands
            if isinstance(dest, Data) and dest.storage == Storage.LOCAL:
                self.hopper_rule(
                    "an async copy cannot write 'local' storage on CUDA; use a synchronous copy",
                    operation.span,
                )
            if (
                isinstance(source, Data)
                and isinstance(dest, Data)
                and source.storage == dest.storage == Storage.GLOBAL
            ):
                self.hopper_rule(
                    "an async copy from global to global memory is not possible on CUDA", operation.span
                )
        return FutureInfo(
            operation, stmt, "dma", operation.is_async, destination if isinstance(destination, Data) else None
        )

    def _tma(self, stmt: ast.OperationStmt, context: Context) -> FutureInfo | None:
        operation = stmt.operation
        words = operation.words
        if words == ["any"]:
            return FutureInfo(operation, stmt, "placeholder", False)
        if words not in (["load"], ["copy"]):
            self._unknown_operation(operation, "expected tma.load, tma.copy (with .async and .swiz<N>)")
            return None
        for word, argument in operation.template_args.items():
            if word == "async":
                self.error(
                    f"binding an event inside the operation ('.async<{argument}>') is not part of the language; "
                    f"name the future and write 'trigger {argument} after f;'",
                    operation.op_span,
                )
        swizzle = self._swizzle(operation)
        self._after(operation)
        operands = self._copy_operands(operation)
        kind = "tma-load"
        destination: Data | None = None
        if operands is not None:
            source, dest = operands
            destination = dest if isinstance(dest, Data) else None
            if isinstance(source, Data) and isinstance(dest, Data):
                if source.storage == Storage.SHARED and dest.storage == Storage.GLOBAL:
                    kind = "tma-store"
                elif not (source.storage == Storage.GLOBAL and dest.storage == Storage.SHARED):
                    self.hopper_rule(
                        f"'{operation.text}' moves global data to shared memory or shared to global; this copies "
                        f"{source.storage} to {dest.storage}",
                        operation.span,
                    )
                if swizzle is not None and dest.storage == Storage.SHARED:
                    self.swizzle_of[dest.root] = (swizzle, operation.op_span)
                if words == ["load"] and kind == "tma-store":
                    self.error(
                        "'tma.load' copies global to shared; use 'tma.copy' to store shared data",
                        operation.span,
                    )
        return FutureInfo(operation, stmt, kind, operation.is_async, destination)
