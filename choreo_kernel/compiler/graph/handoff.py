"""Buffer hand-offs: which operation wrote the data a statement reads, and how the reader knows it landed.

A path learns that an asynchronous write completed by waiting its future, by
waiting an event that publishes it (`trigger E after f` on the writer's path,
or a direct `trigger E` after the writer's path waited `f`), or by ordering an
operation `after f`.  The walk follows each path in program order with what
it may have issued, what may still be in flight and what it has observed;
branches join (a write pending on one branch is pending), loops are walked
until what a trip leaves meets the reads at the top of the body (analysis/flow.py), and an
`inthreads.async` body starts from the state around it and does not flow back.
What an event publishes is only known once every path is walked, so the walk
repeats until those sets stop growing.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.flow import ForwardFlow, is_rotation, rotate_futures
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Event, Future, Symbol
from choreo_kernel.compiler.diagnostics import Span
from choreo_kernel.compiler.printer import expression, expressions

IN_ORDER = "in order"  # a synchronous write, read later on the same path

Operations = frozenset[ast.OperationStmt]


@dataclass(frozen=True)
class Write:
    """What one operation writes: a buffer (or accumulator), and the physical slot when written `tile[slot]`."""

    statement: ast.OperationStmt
    symbol: (
        Symbol | None
    )  # None: a destination the compiler allocates (`=> shared`), reached through the future
    slot: str | None
    is_async: bool
    path: ast.InThreads | None


@dataclass(frozen=True)
class HandOff:
    """Data written by `writer` and read by `reader`; `via` says how the reader knows it landed (None: it does not)."""

    writer: ast.OperationStmt
    reader: ast.Stmt
    data: str  # as the reader names it: `ls[slot]`, `cur.data`, `acc`
    span: Span
    via: str | None
    writer_is_async: bool
    same_path: bool


@dataclass(frozen=True)
class _Access:
    symbol: Symbol
    slot: str | None
    expr: ast.Expr


@dataclass
class _State:
    futures: dict[Symbol, Operations] = field(default_factory=dict)  # which operations a future may hold
    reached: Operations = frozenset()  # writers this path may have issued
    pending: Operations = frozenset()  # async writers that may still be in flight
    observed: dict[ast.OperationStmt, str] = field(default_factory=dict)  # writer -> how it was observed

    def copy(self) -> _State:
        return _State(dict(self.futures), self.reached, self.pending, dict(self.observed))


def find_handoffs(info: FunctionInfo) -> list[HandOff]:
    return _HandOffs(info).run()


class _HandOffs(ForwardFlow[_State]):
    def __init__(self, info: FunctionInfo) -> None:
        self.info = info
        self.writes: dict[int, Write] = {}  # id(OperationStmt) -> what it writes
        self.writers_of: dict[Symbol, list[Write]] = {}
        self.published: dict[Symbol, Operations] = {}  # event -> writers whose completion it publishes
        self.found: dict[tuple[int, int, str], HandOff] = {}
        self.triggered: set[Symbol] = set()  # events some statement triggers
        self.ordered_after: dict[
            ast.OperationStmt, dict[ast.OperationStmt, str]
        ] = {}  # `after`, transitively
        for stmt in ast.walk_statements(info.function.body):
            self._collect(stmt)

    def run(self) -> list[HandOff]:
        while True:
            before = dict(self.published)
            self.found = {}
            self._walk(self.info.function.body.body, _State())
            if self.published == before:
                return list(self.found.values())

    # ------------------------------------------------------------------ whole-function facts

    def _collect(self, stmt: ast.Stmt) -> None:
        if isinstance(stmt, ast.Trigger):
            self.triggered |= {
                event for event in map(self.info.event_named, stmt.targets) if event is not None
            }
        if isinstance(stmt, ast.OperationStmt):
            write = self._write_of(stmt)
            if write is not None:
                self.writes[id(stmt)] = write
                if write.symbol is not None:
                    self.writers_of.setdefault(write.symbol, []).append(write)

    def _write_of(self, stmt: ast.OperationStmt) -> Write | None:
        operation = stmt.operation
        target = written_expr(operation)
        if target is None:
            return None
        root, slot = _root_and_slot(target)
        symbol = self.info.symbol_of.get(id(root)) if root is not None else None
        context = self.info.context_of.get(id(stmt))
        path = context.path if context is not None else None
        return Write(stmt, symbol, slot, operation.is_async, path)

    # ------------------------------------------------------------------ flow

    def _simple(self, stmt: ast.Stmt, state: _State) -> _State:
        if isinstance(stmt, ast.OperationStmt):
            return self._operation(stmt, state)
        if isinstance(stmt, ast.Wait):
            return self._wait(stmt, state)
        if isinstance(stmt, ast.Trigger):
            self._trigger(stmt, state)
            return state
        if isinstance(stmt, ast.ExprStmt) and isinstance(stmt.expr, ast.Call) and is_rotation(stmt.expr):
            rotate_futures(self.info, stmt.expr, state.futures, frozenset())
            return state
        self._reads(stmt, _read_positions(stmt), state)
        return state

    def _condition(self, stmt: ast.If | ast.While, condition: ast.Expr, state: _State) -> None:
        self._reads(stmt, (condition,), state)

    def _async_path(self, stmt: ast.InThreads, state: _State) -> _State:
        self._body(stmt.body, state.copy())  # an independent path: nothing flows back
        return state

    def _copy(self, state: _State) -> _State:
        return state.copy()

    def _key(self, state: _State) -> Hashable:
        return (
            frozenset(state.futures.items()),
            state.reached,
            state.pending,
            frozenset(state.observed.items()),
        )

    def _join(self, a: _State, b: _State) -> _State:
        """A write pending on either path is pending; one observed on either keeps the first way seen."""
        futures = dict(a.futures)
        for symbol, operations in b.futures.items():
            futures[symbol] = futures.get(symbol, frozenset()) | operations
        observed = dict(a.observed)
        for writer, how in b.observed.items():
            observed.setdefault(writer, how)
        return _State(futures, a.reached | b.reached, a.pending | b.pending, observed)

    def _operation(self, stmt: ast.OperationStmt, state: _State) -> _State:
        self._reads(stmt, _operation_reads(stmt.operation), state, self._ordered(stmt, state))
        write = self.writes.get(id(stmt))
        if write is not None:
            state.reached |= {stmt}
            if write.is_async:
                state.pending |= {stmt}
            else:
                state.pending -= {stmt}
                state.observed.setdefault(stmt, IN_ORDER)
        symbol = self.info.futures.get(id(stmt))
        if symbol is not None:
            state.futures[symbol] = frozenset({stmt}) if write is not None else frozenset()
        return state

    def _ordered(self, stmt: ast.OperationStmt, state: _State) -> dict[ast.OperationStmt, str]:
        """The operations `stmt` starts after, and how: those its `after` clause names, and (`after` is
        transitive) whatever those started after in turn."""
        ordered: dict[ast.OperationStmt, str] = {}
        for item in stmt.operation.after:
            symbol = self.info.future_named(item)
            for producer in state.futures.get(symbol, frozenset()) if symbol is not None else ():
                how = f"after {expression(item)}"
                ordered.setdefault(producer, how)
                for earlier in self.ordered_after.get(producer, {}):
                    ordered.setdefault(earlier, f"{how}, which starts after it")
        self.ordered_after[stmt] = {**self.ordered_after.get(stmt, {}), **ordered}
        return ordered

    def _wait(self, stmt: ast.Wait, state: _State) -> _State:
        for target in stmt.targets:
            future = self.info.future_named(target)
            if future is not None:
                self._observe(state, state.futures.get(future, frozenset()), f"wait {future.name}")
            event = self.info.event_named(target)
            if event is None:
                continue
            if event in self.triggered or (isinstance(event.value, Event) and event.value.ready):
                self._observe(state, self.published.get(event, frozenset()), f"event {event.name}")
            else:  # a certain deadlock, reported by asyncflow: nothing after this wait runs
                everything = frozenset(write.statement for write in self.writes.values())
                self._observe(state, everything, f"unreachable: 'wait {event.name}' never returns")
        return state

    def _observe(self, state: _State, writers: Operations, how: str) -> None:
        state.pending -= writers
        for writer in writers:
            state.observed.setdefault(writer, how)

    def _trigger(self, stmt: ast.Trigger, state: _State) -> None:
        published: Operations = frozenset() if stmt.after else frozenset(state.observed)
        for item in stmt.after:
            future = self.info.future_named(item)
            if future is not None:
                held = state.futures.get(future, frozenset())
                published |= held
                # Only a TMA load completes an event by itself; binding anything else is reported by
                # asyncflow, and from here on it counts as waited so that one mistake is one error.
                rejected = {w for w in held if self._kind(w) != "tma-load"}
                self._observe(state, frozenset(rejected), f"trigger after {future.name}")
        for target in stmt.targets:
            event = self.info.event_named(target)
            if event is not None:
                self.published[event] = self.published.get(event, frozenset()) | published

    # ------------------------------------------------------------------ reads

    def _reads(
        self,
        stmt: ast.Stmt,
        exprs: Sequence[ast.Expr],
        state: _State,
        ordered: dict[ast.OperationStmt, str] | None = None,
    ) -> None:
        context = self.info.context_of.get(id(stmt))
        path = context.path if context is not None else None
        for expr in exprs:
            for access in self._accesses(expr):
                if isinstance(access.symbol.value, Future):
                    held = sorted(
                        state.futures.get(access.symbol, ()), key=lambda p: (p.span.line, p.span.column)
                    )
                    writes = [self.writes[id(p)] for p in held if id(p) in self.writes]
                else:
                    writes = self.writers_of.get(access.symbol, [])
                for write in writes:
                    self._hand_off(write, stmt, access, path, state, ordered or {})

    def _hand_off(
        self,
        write: Write,
        reader: ast.Stmt,
        access: _Access,
        path: ast.InThreads | None,
        state: _State,
        ordered: dict[ast.OperationStmt, str],
    ) -> None:
        writer = write.statement
        same_path = writer in state.reached
        if same_path:
            if writer in ordered:
                via: str | None = ordered[writer]
            elif writer in state.pending:
                if not _same_slot(write.slot, access.slot):
                    return  # a write of another slot still in flight: not what this reads
                via = None
            else:
                via = state.observed.get(writer, IN_ORDER)
        elif path is not None and write.path is not None and write.path is not path:
            via = state.observed.get(writer)
        else:
            return
        text = expression(access.expr)
        key = (id(writer), id(reader), text)
        if key not in self.found or via is None:  # one edge per datum; a read not waited for wins
            self.found[key] = HandOff(writer, reader, text, access.expr.span, via, write.is_async, same_path)

    def _accesses(self, expr: ast.Expr) -> Iterator[_Access]:
        """Reads of written buffers and of data futures in `expr`; `x.span` reads a shape, not data."""
        nodes = list(ast.walk_expr(expr))
        shapes = {
            id(inner)
            for node in nodes
            if isinstance(node, (ast.Member, ast.Method)) and node.name == "span"
            for inner in ast.walk_expr(node.value)
        }
        parent_of = {
            id(node.value): node for node in nodes if isinstance(node, (ast.Index, ast.Member, ast.Method))
        }
        for node in nodes:
            symbol = self.info.symbol_of.get(id(node)) if isinstance(node, ast.Name) else None
            if symbol is None or id(node) in shapes:
                continue
            parent = parent_of.get(id(node))
            if isinstance(symbol.value, Future) and symbol.value.is_data:
                is_data = isinstance(parent, (ast.Member, ast.Method)) and parent.name in ("data", "at")
                yield _Access(symbol, None, parent if is_data and parent is not None else node)
            elif symbol in self.writers_of:
                if isinstance(parent, ast.Index):
                    yield _Access(symbol, expressions(parent.indices), parent)
                else:
                    yield _Access(symbol, None, node)

    # ------------------------------------------------------------------ names

    def _kind(self, stmt: ast.OperationStmt) -> str:
        info = self.info.operations.get(id(stmt))
        return info.kind if info is not None else ""


def written_expr(operation: ast.Operation) -> ast.Expr | None:
    """What an operation writes: a copy's destination, an MMA's accumulator, where mma.store stores."""
    words = operation.words
    if operation.family in ("dma", "tma") and words != ["any"]:
        return operation.destination
    if operation.family == "mma" and words[:1] in (["row"], ["col"]) and operation.args:
        return operation.args[0]
    if operation.family == "mma" and words[:1] == ["store"] and len(operation.args) == 2:
        return operation.args[1]
    return None


def _root_and_slot(expr: ast.Expr) -> tuple[ast.Name | None, str | None]:
    """`ls[slot].subspan(64, 64).at(0, 0)` -> (`ls`, "slot")."""
    slot = None
    while isinstance(expr, (ast.Method, ast.Member, ast.Index)):
        if isinstance(expr, ast.Index) and isinstance(expr.value, ast.Name):
            slot = expressions(expr.indices)
        expr = expr.value
    return (expr, slot) if isinstance(expr, ast.Name) else (None, None)


def _same_slot(written: str | None, read: str | None) -> bool:
    """Two slot texts may name the same buffer unless both are given and differ."""
    return written is None or read is None or written == read


def _operation_reads(operation: ast.Operation) -> tuple[ast.Expr, ...]:
    """The operands an operation reads: a copy's source, an MMA's A and B (and a sparse one's metadata, a
    scaled one's scales; the accumulator is updated in place, and chained WGMMAs on one accumulator are
    ordered by the hardware), mma.scale's scales, what mma.store stores."""
    words = operation.words
    if operation.family != "mma":
        return operation.args
    if words[:1] in (["row"], ["col"], ["scale"]):
        return operation.args[1:]
    if words[:1] in (["store"], ["load"]):
        return operation.args[:1]
    return ()


def _read_positions(stmt: ast.Stmt) -> tuple[ast.Expr, ...]:
    if isinstance(stmt, ast.Assign):
        return (stmt.value,) if stmt.op == "=" else (stmt.value, stmt.target)
    if isinstance(stmt, ast.ScalarDecl):
        return (stmt.init,) if stmt.init is not None else ()
    if isinstance(stmt, ast.Return):
        return (stmt.value,) if stmt.value is not None else ()
    if isinstance(stmt, ast.ExprStmt):
        return (stmt.expr,)
    return ()
