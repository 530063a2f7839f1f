"""Names, types, shapes, levels and storage: the first analysis pass over a function.

It walks the function once, in source order, with a scope chain and the
`Context` of each statement (parallel levels, async path, loops).  It gives
every name its `Symbol`, every expression its `Value` (the type and shape of
data, the bound of bounded integers), and reports what is wrong with them.
The futures/events rules, which need the whole function, are asyncflow.py's."""

from __future__ import annotations

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.cluster_checks import check_clusters
from choreo_kernel.compiler.analysis.device_checks import check_device_code
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.launch_checks import check_launches
from choreo_kernel.compiler.analysis.resolve.base import type_ref_text
from choreo_kernel.compiler.analysis.resolve.copies import CopyRules
from choreo_kernel.compiler.analysis.resolve.expressions import ExpressionRules
from choreo_kernel.compiler.analysis.resolve.mma import MmaRules
from choreo_kernel.compiler.analysis.resolve.statements import StatementRules
from choreo_kernel.compiler.analysis.resolve.views import ViewRules
from choreo_kernel.compiler.analysis.scope import Context, Scope
from choreo_kernel.compiler.analysis.values import (
    Accumulator,
    Data,
    Fragment,
    Future,
    FutureInfo,
    Scalar,
    Stream,
    Symbol,
    Value,
)
from choreo_kernel.compiler.diagnostics import Span
from choreo_kernel.compiler.semantics.arrivals import event_arrivals, trigger_sites
from choreo_kernel.compiler.semantics.launch import FunctionLaunches
from choreo_kernel.compiler.semantics.levels import Storage


class Resolver(StatementRules, CopyRules, MmaRules, ViewRules, ExpressionRules):
    """Resolves one function: every name its Symbol, every expression its Value, and the launch model."""

    def function(self, function: ast.Function) -> FunctionInfo:
        self.info = FunctionInfo(function)
        self.scope = Scope()
        self.swizzle_of: dict[str, tuple[int, Span]] = {}  # shared buffer -> swizzle a copy wrote it with
        self.return_type = function.return_type
        self.saw_return = False
        self.written = ast.written_names(function.body)
        for param in function.params:
            self._param(param)
        self.badly_nested: set[int] = set()  # id(kernel) of kernels whose levels do not nest
        self.multiplied = set()
        self.fill_values = []
        self._statements(function.body.body, Context())
        self._check_placeholders_used()
        self._launches()
        self._check_accumulators_multiplied(function)
        self._check_fill_conversions()
        check_device_code(self.info, self.sink, self.target)
        if function.return_type.name not in ("void", "auto") and not self.saw_return:
            self.error(
                f"function '{function.name}' returns {type_ref_text(function.return_type)} "
                "but has no 'return' statement",
                function.name_span,
            )
        return self.info

    def _check_placeholders_used(self) -> None:
        """A `dma.any` placeholder is there to be filled by a copy or traded by `swap`/`rotate`; one that
        no statement names again does nothing and is most likely a name mistyped elsewhere."""
        uses: dict[int, int] = {}
        for symbol in self.info.symbol_of.values():
            uses[id(symbol)] = uses.get(id(symbol), 0) + 1
        for stmt_id, symbol in self.info.futures.items():
            info = self.info.operations.get(stmt_id)
            if info is not None and info.kind == "placeholder" and uses.get(id(symbol), 0) <= 1:
                self.error(
                    f"the placeholder '{symbol.name}' (dma.any) is defined but never used: remove it, or fill "
                    f"it with a copy ('{symbol.name} = dma.copy.async ...;') and rotate it with swap",
                    info.statement.span,
                )

    def _launches(self) -> None:
        """The launch model of the function, its size checks, and the arrivals of its events."""
        info = self.info
        info.launches = FunctionLaunches(
            info.function, info.levels_of, info.counts_of, info.declared, info.symbol_of
        )
        check_launches(info.launches, self.badly_nested, self.sink)
        check_clusters(info, self.sink)
        for event, triggers in trigger_sites(info.function.body, info.event_named).items():
            launch = info.launches.of(info.context_of[id(triggers[0])])
            if launch is not None and launch.is_static and id(launch.kernel) not in self.badly_nested:
                info.arrivals[event] = event_arrivals(event, triggers, info.context_of, launch)

    def _param(self, param: ast.Param) -> None:
        ref = param.type
        self._check_reference(param)
        self._check_unbounded(param)
        if param.is_stream:
            value: Value = Stream()
        elif ref.shape is None:
            value = Scalar(ref.name)
        else:
            dims = []
            for dim in ref.shape:
                if isinstance(dim, ast.Name) and self.scope.lookup(dim.id) is None:
                    self._declare(Symbol(dim.id, Scalar("s32", dim.id), dim.span, origin="dim"), dim.span)
                dims.append(self._dim(dim) if not isinstance(dim, ast.AnyDim) else "?")
                self._check_extents((dims[-1],), dim, "an extent", len(dims) - 1)
            value = Data(ref.name, tuple(dims), Storage.GLOBAL, param.name)
        self._declare(
            Symbol(param.name, value, param.name_span, origin="param", declaration=param), param.name_span
        )

    def _stmt_OperationStmt(self, stmt: ast.OperationStmt, context: Context) -> None:
        operation = stmt.operation
        handler = {"dma": self._dma, "tma": self._tma, "mma": self._mma}[operation.family]
        info = handler(stmt, context)
        if isinstance(info, FutureInfo):
            self.info.operations[id(stmt)] = info
        if stmt.result is None or info is None:
            return
        if isinstance(info, (Accumulator, Fragment)):
            self._bind_result(stmt.result, info, stmt)
            return
        future = Future(is_data=info.kind != "mma")
        existing = self.scope.lookup(stmt.result.id)
        if existing is not None and isinstance(existing.value, Future):
            self.info.symbol_of[id(stmt.result)] = existing
            existing.future = info
            self.info.futures[id(stmt)] = existing
            return
        symbol = self._bind_result(stmt.result, future, stmt)
        symbol.future = info
        self.info.futures[id(stmt)] = symbol

    def _bind_result(self, name: ast.Name, value: Value, stmt: ast.OperationStmt) -> Symbol:
        existing = self.scope.lookup(name.id)
        if existing is not None and existing.mutable:
            self.info.symbol_of[id(name)] = existing
            return existing
        symbol = Symbol(name.id, value, name.span, declaration=stmt, origin="operation")
        declared = self._declare(symbol, name.span)
        self.info.symbol_of[id(name)] = declared
        return declared
