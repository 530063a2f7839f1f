"""Data movement: dma and tma copies, their operands, modifiers, swizzles and `after` clauses.

Besides copying elements in order, a dma copy can permute dimensions (`dma.transp<...>`), pad
the source with a value (`dma.pad<...>`), or copy into a larger tile, whose other elements
become zero (as Croqtile's predicated copies do); the resolver records which in
`FunctionInfo.transfers`, and both backends read it.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.resolve.base import ResolverBase
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import (
    UNKNOWN,
    Bounded,
    Data,
    Dim,
    Future,
    FutureInfo,
    Scalar,
    StorageKeyword,
    Tiling,
    Transfer,
    Unknown,
    Value,
    Window,
    fold,
    known_count_mismatch,
    known_mismatch,
    shape_text,
)
from choreo_kernel.compiler.printer import expression, operation_name
from choreo_kernel.compiler.semantics import sparsity
from choreo_kernel.compiler.semantics.levels import Storage

Operands = tuple[Data | Unknown, Data | StorageKeyword | Unknown]


class CopyRules(ResolverBase):
    """Data movement: dma and tma copies, their operands, modifiers, swizzles and `after` clauses."""

    def _after(self, operation: ast.Operation) -> None:
        for item in operation.after:
            value = self._expr(item)
            if not isinstance(value, (Future, Unknown)):
                self.error(
                    f"'after' orders a copy after a future; '{expression(item)}' is {value.describe()}",
                    item.span,
                )
            self.info.value_of[id(item)] = value

    def _copy_operands(self, operation: ast.Operation) -> Operands | None:
        """The source and the destination of `SRC => DST` (a storage keyword where the copy allocates)."""
        if len(operation.args) != 1 or operation.destination is None:
            self.error(f"'{operation.text}' copies one source to one destination: SRC => DST", operation.span)
            for arg in operation.args:
                self._expr(arg)
            return None
        source = _as_data(self._expr(operation.args[0]))
        if isinstance(source, Future) and source.is_data:
            source = self._future_data(operation.args[0]) or UNKNOWN
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
            destination = _as_data(self._expr(destination_expr))
        if not isinstance(source, (Data, Unknown)):
            self.error(
                f"the source of a copy must be spanned data, got {source.describe()}", operation.args[0].span
            )
            return None
        if not isinstance(destination, (Data, StorageKeyword, Unknown)):
            self.error(
                f"the destination of a copy must be spanned data or 'shared'/'local', got {destination.describe()}",
                destination_expr.span,
            )
            return None
        if isinstance(source, Data) and isinstance(destination, Data) and source.elem != destination.elem:
            self.error(
                f"element types differ across '=>': the source is {source.elem}, "
                f"the destination is {destination.elem}",
                operation.span,
            )
            return None
        return source, destination

    def _landing(self, operation: ast.Operation, operands: Operands, larger: bool) -> Data | None:
        """The destination of a copy that moves the source's elements in order; where `larger` allows it,
        one with the source's rank and larger extents is zero-filled around the source."""
        source, destination = operands
        if not isinstance(source, Data):
            return None
        if isinstance(destination, StorageKeyword):
            return Data(source.elem, source.dims, destination.storage, "")
        if not isinstance(destination, Data):
            return None
        if larger and _encloses(destination.dims, source.dims):
            zeros: tuple[ast.Expr | int, ...] = (0,) * len(source.dims)
            self.info.transfers[id(operation)] = Transfer(low=zeros)
        elif known_count_mismatch(source.dims, destination.dims):
            self.error(
                f"shapes differ across '=>': the source is {shape_text(source.dims)}, "
                f"the destination is {shape_text(destination.dims)}",
                operation.span,
            )
        return destination

    def _modifiers(self, operation: ast.Operation) -> None:
        """The L2 hints of a TMA load, checked as Croqtile checks them: only on `tma.load`, at most one,
        after `.async` and before `.swiz<N>`."""
        qualifiers = operation.qualifiers
        hints = [q for q in qualifiers if q in ast.L2_HINTS]
        if not hints:
            return
        name = operation_name(operation)
        if operation.family != "tma" or operation.words != ["load"]:
            self.error(
                f"TMA L2 eviction modifiers are only valid on 'tma.load' (global to shared); '{name}' is not one",
                operation.op_span,
            )
        elif len(hints) > 1:
            self.error(
                f"only one TMA eviction modifier is allowed on a load; '{name}' has {len(hints)}",
                operation.op_span,
            )
        elif "swiz" in qualifiers and qualifiers.index("swiz") < qualifiers.index(hints[0]):
            self.error(
                f"TMA eviction modifier must precede '.swiz': write tma.load.async.{hints[0]}.swiz<N>",
                operation.op_span,
            )
        elif "async" in qualifiers and qualifiers.index("async") > qualifiers.index(hints[0]):
            self.error(
                f"'.async' comes right after the operation, before the eviction modifier: tma.load.async.{hints[0]}",
                operation.op_span,
            )

    def _sparse_copy(self, operation: ast.Operation) -> None:
        """`dma.copy.sp<2:4>`: Croqtile compresses a tile while copying it; this compiler takes packed
        operands and their metadata from the host (semantics/sparsity.py)."""
        pattern = operation.template_args.get("sp", "").replace(" ", "")
        kept, _, group = pattern.partition(":")
        if (kept, group) != tuple(str(n) for n in sparsity.PATTERN):
            self.error(
                f"Only 2:4 structured sparsity is supported; got {pattern or 'no pattern'}: write dma.copy.sp<2:4>",
                operation.op_span,
            )
            return
        self.error(
            "'dma.copy.sp<2:4>' (compressing a tile while it is copied) is not supported: pass the packed operand "
            "and its metadata (choreo_kernel.compiler.semantics.sparsity.compress) and use mma.row.row.sp",
            operation.op_span,
        )

    def _dma(self, stmt: ast.OperationStmt, context: Context) -> FutureInfo | None:
        operation = stmt.operation
        words = operation.words
        if words == ["any"]:
            return FutureInfo(operation, stmt, "placeholder", False)
        if words == ["copy", "sp"]:
            self._sparse_copy(operation)
            return None
        if words not in (["copy"], ["pad"], ["transp"]) or (
            "swiz" in operation.qualifiers and words != ["copy"]
        ):
            self._unknown_operation(
                operation,
                "expected dma.copy (.swiz<N>), dma.pad<...>, dma.transp<...>, with .async, or dma.any",
            )
            return None
        self._modifiers(operation)
        swizzle = self._swizzle(operation)
        self._after(operation)
        operands = self._copy_operands(operation)
        destination: Data | None = None
        if operands is not None:
            self._check_allocation_in_parallel(operation, operands, context)
            if words == ["pad"]:
                destination = self._pad(operation, operands)
            elif words == ["transp"]:
                destination = self._transpose(operation, operands)
            else:
                destination = self._landing(operation, operands, larger=True)
                if (
                    swizzle is not None
                    and isinstance(destination, Data)
                    and destination.storage == Storage.SHARED
                ):
                    self.swizzle_of[destination.root] = (swizzle, operation.op_span)
        source = operands[0] if operands else None
        if (
            operation.is_async
            and isinstance(source, Data)
            and isinstance(destination, Data)
            and source.storage == destination.storage == Storage.GLOBAL
        ):
            self.hopper_rule(
                "an async copy from global to global memory is not possible on CUDA", operation.span
            )
        return FutureInfo(operation, stmt, "dma", operation.is_async, destination)

    def _check_allocation_in_parallel(
        self, operation: ast.Operation, operands: Operands, context: Context
    ) -> None:
        """`=> local` and `=> shared` make a buffer of the memory a thread or a block owns, which exists
        only inside a parallel."""
        destination = operands[1]
        if (
            isinstance(destination, StorageKeyword)
            and destination.storage in (Storage.LOCAL, Storage.SHARED)
            and not context.in_parallel
        ):
            storage = destination.storage
            owner = "a thread" if storage == Storage.LOCAL else "a block"
            self.error(
                f"'{storage}' cannot be a DMA destination outside every parallel: {storage} memory belongs to "
                f"{owner} and exists only inside a parallel; move the copy into one, or copy into a global buffer",
                operation.destination.span if operation.destination is not None else operation.span,
            )

    def _pad(self, operation: ast.Operation, operands: Operands) -> Data | None:
        """`dma.pad<{low...}, {high...}, {mid...}, value> src => dst`: the source at `low` in a destination
        `low + high` larger, the rest `value`. Interior padding (`mid`) must be 0, as on Croqtile's CUDA."""
        source, destination = operands
        config = operation.config
        if _unparsed(operation, "pad"):
            return None
        lists = [item.items for item in config[:3] if isinstance(item, ast.TupleLiteral)]
        if len(config) != 4 or len(lists) != 3:
            self.error(
                "dma.pad is written dma.pad<{low...}, {high...}, {mid...}, value>: the padding before and after the "
                "source in each dimension, the interior padding (all 0) and the padding value",
                operation.op_span,
            )
            return None
        low, high, mid = lists
        for item in (*low, *high, *mid):
            value = self._int_expr(item, "a padding")
            const = value.const if isinstance(value, Scalar) else None
            if isinstance(const, int) and const < 0:
                self.error(f"a padding must not be negative, got {const}", item.span)
        fill = self._expr(config[3])
        if not isinstance(fill, (Scalar, Bounded, Unknown)):
            self.error(f"the padding value must be a scalar, got {fill.describe()}", config[3].span)
        for item in mid:
            if not (isinstance(item, ast.IntLiteral) and item.value == 0):
                self.error(
                    "dma.pad's third list is the interior padding (pad_mid), which is not supported (as on "
                    "Croqtile's CUDA backend): write 0 for every dimension",
                    item.span,
                )
                return None
        if len({len(low), len(high), len(mid)}) != 1:
            self.error(
                f"dma.pad's lists have different lengths: {len(low)} (low), {len(high)} (high), {len(mid)} (mid)",
                operation.op_span,
            )
            return None
        if not isinstance(source, Data):
            return None
        if len(low) != len(source.dims):
            self.error(
                f"dma.pad<...> pads {len(low)} dimension(s), but the source {source.describe()} has "
                f"{len(source.dims)}: a rank mismatch",
                operation.op_span,
            )
            return None
        dims = tuple(
            fold("+", fold("+", dim, self._dim(before)), self._dim(after))
            for dim, before, after in zip(source.dims, low, high)
        )
        self.info.transfers[id(operation)] = Transfer(low=tuple(low), high=tuple(high), fill=config[3])
        return self._made(operation, source, dims, destination)

    def _transpose(self, operation: ast.Operation, operands: Operands) -> Data | None:
        """`dma.transp<p0, p1, ...> src => dst`: destination dimension k is source dimension p_k."""
        source, destination = operands
        if _unparsed(operation, "transp"):
            return None
        permutation = [item.value for item in operation.config if isinstance(item, ast.IntLiteral)]
        if not operation.config or len(permutation) != len(operation.config):
            self.error(
                "dma.transp is written dma.transp<p0, p1, ...> with integer literals: destination dimension k is "
                "source dimension p_k",
                operation.op_span,
            )
            return None
        if not isinstance(source, Data):
            return None
        layout = ", ".join(str(p) for p in permutation)
        if len(permutation) != len(source.dims):
            self.error(
                f"dma.transp<{layout}> permutes {len(permutation)} dimension(s), but the source "
                f"{source.describe()} has {len(source.dims)}: a rank mismatch",
                operation.op_span,
            )
            return None
        if sorted(permutation) != list(range(len(permutation))):
            self.error(
                f"dma.transp<{layout}>: the transpose layout is invalid; it must list each dimension "
                f"0..{len(permutation) - 1} once",
                operation.op_span,
            )
            return None
        self.info.transfers[id(operation)] = Transfer(permutation=tuple(permutation))
        dims = tuple(source.dims[p] for p in permutation)
        return self._made(operation, source, dims, destination)

    def _made(
        self, operation: ast.Operation, source: Data, dims: tuple[Dim, ...], destination: Value
    ) -> Data | None:
        """The destination of a pad or a transpose that makes `dims` from `source`."""
        if isinstance(destination, StorageKeyword):
            return Data(source.elem, dims, destination.storage, "")
        if not isinstance(destination, Data):
            return None
        if known_mismatch(dims, destination.dims):
            self.error(
                f"{operation_name(operation)} of {source.describe()} makes {shape_text(dims)}, but the "
                f"destination is {destination.describe()}",
                operation.span,
            )
        return destination

    def _tma(self, stmt: ast.OperationStmt, context: Context) -> FutureInfo | None:
        operation = stmt.operation
        words = operation.words
        if words == ["any"]:
            return FutureInfo(operation, stmt, "placeholder", False)
        if words == ["store"]:
            self.error(
                "'tma.store' is not an operation (Croqtile removed it: there it is a syntax error); store a "
                "shared tile to global memory with 'tma.copy SRC => DST'",
                operation.op_span,
            )
            return None
        if words not in (["load"], ["copy"]):
            self._unknown_operation(
                operation, "expected tma.load, tma.copy (with .async, .evict_first/.evict_last and .swiz<N>)"
            )
            return None
        for word, argument in operation.template_args.items():
            if word == "async":
                self.error(
                    f"binding an event inside the operation ('.async<{argument}>') is not part of the language (in "
                    "Croqtile it is a syntax error); "
                    f"name the future and write 'trigger {argument} after f;'",
                    operation.op_span,
                )
        self._modifiers(operation)
        swizzle = self._swizzle(operation)
        self._after(operation)
        operands = self._copy_operands(operation)
        kind = "tma-load"
        destination: Data | None = None
        if operands is not None:
            source, _ = operands
            destination = self._landing(operation, operands, larger=False)
            if isinstance(source, Data) and isinstance(destination, Data):
                if source.storage == Storage.SHARED and destination.storage == Storage.GLOBAL:
                    kind = "tma-store"
                elif not (source.storage == Storage.GLOBAL and destination.storage == Storage.SHARED):
                    self.hopper_rule(
                        f"'{operation.text}' needs global-to-shared operands (or shared-to-global for tma.copy), but "
                        f"this copies {source.storage} to {destination.storage}",
                        operation.span,
                    )
                if swizzle is not None and destination.storage == Storage.SHARED:
                    self.swizzle_of[destination.root] = (swizzle, operation.op_span)
                if words == ["load"] and kind == "tma-store":
                    self.error(
                        "'tma.load' copies global to shared; use 'tma.copy' to store shared data",
                        operation.span,
                    )
        return FutureInfo(operation, stmt, kind, operation.is_async, destination)


def _unparsed(operation: ast.Operation, word: str) -> bool:
    """The `<...>` of the operation did not parse (the parser reported the syntax error)."""
    return not operation.config and bool(operation.template_args.get(word, "").strip())


def _as_data(value: Value) -> Value:
    """A tiling or a window used as data is its first tile (`x.subspan(a, b)`) or window (`x.view(a, b)`)."""
    if isinstance(value, Tiling):
        return value.tile()
    if isinstance(value, Window):
        return value.window()
    return value


def _encloses(outer: tuple[Dim, ...], inner: tuple[Dim, ...]) -> bool:
    """Same rank, and each extent of `inner` the same as that of `outer`, smaller, or symbolic where
    `outer`'s is a number (a tail tile, `x.view(TM, 64)` into a [128, 64] tile, as Croqtile's predicated
    copies take it), one of them not the same: a copy of `inner` into `outer` fills a corner of it. (Where
    the extents turn out equal at run time the corner is the whole tile.)"""
    if len(outer) != len(inner):
        return False
    larger = False
    for big, small in zip(outer, inner):
        if big == small:
            continue
        if not isinstance(big, int) or (isinstance(small, int) and small > big):
            return False
        larger = True
    return larger
