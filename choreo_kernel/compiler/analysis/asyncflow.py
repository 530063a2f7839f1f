"""The futures and events rules of futures.md and events.md, one function per rule.

Futures are checked flow-sensitively: each future variable carries the set of
states it may be in on some path (pending, used by `after`, waited,
published to an event, synchronous, placeholder), so a second wait on the
same dynamic instance is caught on any path, while a swap/rotation pipeline
that waits one symbol at several sites stays clean.  Loops are walked twice
so loop-carried mistakes (a future overwritten before it was consumed) show.
Events are checked over the whole function: who triggers them, how rings are
indexed, and whether a ring's order restarts while its events live on.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.flow import ForwardFlow, is_rotation, rotate_futures
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Event, FutureInfo, Symbol
from choreo_kernel.compiler.diagnostics import DiagnosticSink, Note
from choreo_kernel.compiler.printer import expression, expressions
from choreo_kernel.compiler.semantics.evaluate import constant, constant_count
from choreo_kernel.compiler.semantics.levels import Storage

PENDING = "pending"  # issued, not yet consumed
USED = "used"  # issued and named in an `after` clause: consumed for the never-consumed rule
WAITED = "waited"
PUBLISHED = "published"
SYNCHRONOUS = "synchronous"
PLACEHOLDER = "placeholder"


@dataclass(frozen=True)
class Fact:
    """One state a future variable may be in, and the statements that put it there."""

    status: str
    producer: ast.OperationStmt
    by: ast.Stmt | None = None
    event: str | None = None


State = dict[Symbol, frozenset[Fact]]


@dataclass(frozen=True)
class EventUse:
    event: Symbol
    form: str  # "plain", "index", "at"
    expr: ast.Expr
    statement: ast.Stmt
    is_trigger: bool
    loops: tuple[ast.Stmt, ...]


class AsyncFlow(ForwardFlow[State]):
    def __init__(self, info: FunctionInfo, sink: DiagnosticSink, target: str) -> None:
        self.info = info
        self.sink = sink
        self.target = target
        self.loops_at: dict[int, tuple[ast.Stmt, ...]] = {}
        self.event_uses: list[EventUse] = []
        self.constant_resets: list[tuple[Symbol, tuple[ast.Stmt, ...]]] = []

    def run(self) -> None:
        body = self.info.function.body
        self._collect(body, ())
        self._check_events()
        self._walk(body.body, {})

    # ------------------------------------------------------ whole-function facts

    def _collect(self, stmt: ast.Stmt, loops: tuple[ast.Stmt, ...]) -> None:
        self.loops_at[id(stmt)] = loops
        if isinstance(stmt, (ast.Wait, ast.Trigger)):
            for target in stmt.targets:
                use = self._event_use(target, stmt, isinstance(stmt, ast.Trigger), loops)
                if use is not None:
                    self.event_uses.append(use)
        if isinstance(stmt, ast.Assign) and isinstance(stmt.target, ast.Name):
            symbol = self.info.symbol_of.get(id(stmt.target))
            resets = stmt.op == "=" and constant(stmt.value) is not None  # `n += 1` counts on
            if symbol is not None and symbol.mutable and resets:
                self.constant_resets.append((symbol, loops))
        inner = (*loops, stmt) if isinstance(stmt, (ast.Foreach, ast.ForeachRange, ast.While)) else loops
        for child in ast.child_statements(stmt):
            self._collect(child, inner)

    def _event_use(
        self, expr: ast.Expr, stmt: ast.Stmt, is_trigger: bool, loops: tuple[ast.Stmt, ...]
    ) -> EventUse | None:
        symbol = self.info.event_named(expr)
        if symbol is None:
            return None
        inner = expr.value if isinstance(expr, ast.Method) and expr.name == "at" else expr
        form = "index" if isinstance(inner, ast.Index) else "at" if inner is not expr else "plain"
        return EventUse(symbol, form, expr, stmt, is_trigger, loops)

    def _check_events(self) -> None:
        triggered = {use.event for use in self.event_uses if use.is_trigger}
        for event in self.info.events:
            self._check_arrival_count(event)
        ring_events = {use.event for use in self.event_uses if use.form == "at"}
        for use in self.event_uses:
            event = use.event
            assert isinstance(event.value, Event)
            if not use.is_trigger:
                self._check_deadlock(use, event in triggered)
            if use.form == "at":
                self._check_ring_use(use)
            elif use.form == "index" and event in ring_events and not self._triggers_a_slot(use, event.value):
                # events.md: `event[index]` is physical indexing, not an alias of `.at(order)`, whose phase is
                # (order / N) % 2: a wait by slot would track a phase of its own. A trigger names no phase,
                # so it may release a slot, one whose index is below N (not a logical order).
                self.sink.error(
                    f"'{expression(use.expr)}' indexes a physical slot of '{event.name}', but '{event.name}' is a "
                    f"ring used with '.at(order)' elsewhere: '[i]' is a physical slot and '.at(order)' a logical "
                    f"order (slot order % N, phase (order / N) % 2); write '{event.name}.at(...)' here too",
                    use.expr.span,
                )
            elif use.form == "plain" and event.value.dims:
                self.sink.error(
                    f"'{event.name}' is an event array: name one event, '{event.name}[i]' or '{event.name}.at(order)'",
                    use.expr.span,
                )

    def _triggers_a_slot(self, use: EventUse, event: Event) -> bool:
        """Whether `trigger ring[i]` names a slot: i is below the ring's N by its form (a constant, a variable
        bounded by N or less, `x % N`, or a name given such a value)."""
        slots = event.dims[0] if len(event.dims) == 1 else None
        inner = use.expr.value if isinstance(use.expr, ast.Method) else use.expr
        if not use.is_trigger or not isinstance(slots, int) or not isinstance(inner, ast.Index):
            return False
        return len(inner.indices) == 1 and self._below(inner.indices[0], slots)

    def _below(self, expr: ast.Expr, slots: int) -> bool:
        value = constant(expr)
        if isinstance(value, int):
            return 0 <= value < slots
        if isinstance(expr, ast.Binary) and expr.op == "%":
            divisor = constant(expr.right)
            return isinstance(divisor, int) and 0 < divisor <= slots
        symbol = self.info.symbol_of.get(id(expr)) if isinstance(expr, ast.Name) else None
        if symbol is None:
            return False
        bound = getattr(symbol.value, "bound", None)
        if isinstance(bound, int) and bound <= slots:
            return True
        declaration = symbol.declaration
        return (
            not symbol.mutable
            and isinstance(declaration, ast.Assign)
            and declaration.value is not expr
            and self._below(declaration.value, slots)
        )

    def _check_arrival_count(self, event: Symbol) -> None:
        """`event<N>` states the arrival count; warn when it differs from the count derived from the scopes."""
        arrivals = self.info.arrivals.get(event)
        if arrivals is None or arrivals.stated is None or not arrivals.direct:
            return
        derived = arrivals.derived
        if derived is not None and derived != arrivals.stated:
            who = (
                "threads trigger it"
                if all(site.unit == 1 for site in arrivals.sites)
                else "instances trigger it"
            )
            self.sink.warning(
                f"event '{event.name}' states {arrivals.stated} arrivals (event<{arrivals.stated}>), but {derived} "
                f"{who} directly; the stated count wins",
                event.span,
            )

    def _check_deadlock(self, use: EventUse, triggered: bool) -> None:
        """A wait on an event that no path ever triggers, and that is not `= ready`, never returns."""
        event = use.event
        assert isinstance(event.value, Event)
        if triggered or event.value.ready:
            return
        self.sink.error(
            f"certain deadlock: '{event.name}' is never triggered by any path and is not '= ready', "
            "so this wait blocks forever",
            use.statement.span,
            Note(f"'{event.name}' is declared here", event.span),
        )

    def _check_ring_use(self, use: EventUse) -> None:
        """`.at(order)` needs a one-dimensional event array and an order that keeps its phase."""
        event = use.event
        assert isinstance(event.value, Event) and isinstance(use.expr, ast.Method)
        dims = event.value.dims
        if not dims:
            self.sink.error(
                f"'.at(order)' on '{event.name}', which is a single event, not an event array: '.at' selects "
                f"a generation of a ring 'event {event.name}[N]'; wait on '{event.name}' itself instead",
                use.expr.span,
            )
            return
        if len(dims) > 1:
            self.sink.error(
                f"'{event.name}' has {len(dims)} dimensions, but a cyclic event ring used with '.at(order)' "
                "is one-dimensional",
                use.expr.span,
            )
            return
        if len(use.expr.args) != 1:
            self.sink.error("'.at(order)' on an event ring takes one order", use.expr.span)
            return
        order = use.expr.args[0]
        size = dims[0]
        if isinstance(order, ast.Binary) and order.op == "%" and constant(order.right) == size:
            self.sink.error(
                f"'{expression(use.expr)}' reduces the order modulo the ring size {size}, which discards the "
                f"phase: pass the order itself (slot and phase are derived from it) or keep it modulo "
                f"{2 * size} (2N)",
                order.span,
            )
            return
        self._check_restart(use, order, size)

    def _check_restart(self, use: EventUse, order: ast.Expr, size: object) -> None:
        """An order that restarts from zero while the ring's events persist desynchronizes the phases."""
        event = use.event
        declared_in = set(map(id, self.loops_at.get(id(event.declaration), ())))
        ordered_by = self._loops_ordering(order, set())
        for name, loop in self._restarting_sources(order, declared_in, size, set()):
            if id(loop) in ordered_by:
                continue  # the order also counts the restarting loop (it * n + k): it keeps growing
            line = loop.span.line
            self.sink.error(
                f"the order of ring '{event.name}' restarts: '{name}' starts again from zero on every "
                f"iteration of the loop at line {line}, while the events of '{event.name}' live on, so the "
                f"slot phases desynchronize and the GPU deadlocks; order by a value that keeps growing "
                f"(for example 'outer * count + {name}')",
                use.expr.span,
            )
            return

    def _restarting_sources(
        self, expr: ast.Expr, declared_in: set[int], size: object, seen: set[int]
    ) -> Iterator[tuple[str, ast.Stmt]]:
        for node in ast.walk_expr(expr):
            if not isinstance(node, ast.Name):
                continue
            symbol = self.info.symbol_of.get(id(node))
            if symbol is None or id(symbol) in seen:
                continue
            seen.add(id(symbol))
            declaration = symbol.declaration
            if symbol.origin == "foreach" and isinstance(declaration, ast.Stmt):
                outer = self._restarting_loop(declaration, declared_in)
                if outer is not None and not _trip_is_multiple(declaration, size):
                    yield symbol.name, outer
            elif symbol.mutable and isinstance(declaration, ast.Stmt):
                outer = self._restarting_loop(declaration, declared_in)
                if outer is not None:
                    yield symbol.name, outer
                for reset_symbol, loops in self.constant_resets:
                    if reset_symbol is symbol:
                        restarting = [loop for loop in loops if id(loop) not in declared_in]
                        if restarting:
                            yield symbol.name, restarting[-1]
            elif isinstance(declaration, (ast.ScalarDecl, ast.Assign)):
                init = declaration.init if isinstance(declaration, ast.ScalarDecl) else declaration.value
                if init is not None:
                    yield from self._restarting_sources(init, declared_in, size, seen)

    def _loops_ordering(self, expr: ast.Expr, seen: set[int]) -> set[int]:
        """The loops whose variables (directly or through aliases) appear in an order expression."""
        loops: set[int] = set()
        for node in ast.walk_expr(expr):
            symbol = self.info.symbol_of.get(id(node)) if isinstance(node, ast.Name) else None
            if symbol is None or id(symbol) in seen:
                continue
            seen.add(id(symbol))
            declaration = symbol.declaration
            if symbol.origin == "foreach" and isinstance(declaration, ast.Stmt):
                loops.add(id(declaration))
            elif isinstance(declaration, (ast.ScalarDecl, ast.Assign)) and not symbol.mutable:
                init = declaration.init if isinstance(declaration, ast.ScalarDecl) else declaration.value
                if init is not None:
                    loops |= self._loops_ordering(init, seen)
        return loops

    def _restarting_loop(self, stmt: ast.Stmt, declared_in: set[int]) -> ast.Stmt | None:
        """The innermost loop around `stmt` that lies inside the ring's lifetime and may run twice."""
        for loop in reversed(self.loops_at.get(id(stmt), ())):
            if id(loop) in declared_in:
                return None
            trips = _trip_count(loop)
            if trips is None or trips > 1:
                return loop
        return None

    # ------------------------------------------------------------ future flow

    def _block(self, statements: Sequence[ast.Stmt], state: State) -> State:
        """A scope: the futures it declares and leaves unconsumed are reported as it ends."""
        state = dict(state)
        before = set(state)
        state = super()._block(statements, state)
        for symbol in [s for s in state if s not in before]:
            self._report_unconsumed(state.pop(symbol))
        return state

    def _simple(self, stmt: ast.Stmt, state: State) -> State:
        if isinstance(stmt, ast.OperationStmt):
            return self._operation(stmt, state)
        if isinstance(stmt, ast.Wait):
            for target in stmt.targets:
                symbol = self.info.future_named(target)
                if symbol is not None:
                    state[symbol] = self._wait(symbol, stmt, target, state.get(symbol, frozenset()))
            return state
        if isinstance(stmt, ast.Trigger):
            return self._trigger(stmt, state)
        if isinstance(stmt, ast.ExprStmt) and isinstance(stmt.expr, ast.Call) and is_rotation(stmt.expr):
            rotate_futures(self.info, stmt.expr, state, frozenset())  # the futures move with their states
        return state

    def _copy(self, state: State) -> State:
        return dict(state)

    def _key(self, state: State) -> Hashable:
        return frozenset(state.items())

    def _join(self, a: State, b: State) -> State:
        joined = dict(a)
        for symbol, facts in b.items():
            joined[symbol] = joined.get(symbol, frozenset()) | facts
        return joined

    def _operation(self, stmt: ast.OperationStmt, state: State) -> State:
        operation = stmt.operation
        info = self.info.operations.get(id(stmt))
        for item in operation.after:
            symbol = self.info.future_named(item)
            if symbol is not None:
                state[symbol] = frozenset(
                    Fact(USED, f.producer) if f.status == PENDING else f
                    for f in state.get(symbol, frozenset())
                )
        if info is None or info.kind not in ("dma", "tma-load", "tma-store", "mma", "placeholder"):
            return state
        if stmt.result is None:
            self._check_named(stmt, info)
            return state
        symbol = self.info.futures.get(id(stmt))
        if symbol is None:
            return state
        self._report_unconsumed(state.get(symbol, frozenset()))
        status = PLACEHOLDER if info.kind == "placeholder" else PENDING if info.is_async else SYNCHRONOUS
        state[symbol] = frozenset({Fact(status, stmt)})
        return state

    def _check_named(self, stmt: ast.OperationStmt, info: FutureInfo) -> None:
        """Async work must be named: an unnamed future can never be waited or bound."""
        if info.is_async and info.kind != "placeholder":
            self.sink.error(
                f"the future of this '{stmt.operation.text}' has no name: an async operation without a named "
                "future is forbidden, since it can never be waited or bound to an event and nothing can safely "
                f"read its result: name it ('f = {stmt.operation.text} ...; wait f;') or drop '.async'",
                stmt.span,
            )

    def _report_unconsumed(self, facts: frozenset[Fact]) -> None:
        """Every async future must be consumed: waited, bound with `trigger ... after`, or rotated."""
        for fact in facts:
            if fact.status != PENDING:
                continue
            name = fact.producer.result.id if fact.producer.result else "?"
            self.sink.error(
                f"the future '{name}' of this '{fact.producer.operation.text}' is never consumed: wait it "
                f"('wait {name};'), bind it to an event ('trigger E after {name};') or rotate it with swap",
                fact.producer.span,
            )

    def _wait(
        self, symbol: Symbol, stmt: ast.Stmt, target: ast.Expr, facts: frozenset[Fact]
    ) -> frozenset[Fact]:
        """A dynamic future instance is waited once; a published future is waited through its event.

        After a reported mistake the future counts as waited, so no second error follows from it.
        """
        for fact in sorted(facts, key=lambda f: f.by.span.line if f.by else 0):
            if fact.status == SYNCHRONOUS:
                self.sink.error(
                    f"'{symbol.name}' is the future of a synchronous '{fact.producer.operation.text}', which has "
                    "completed by the end of its statement: there is nothing to wait for",
                    target.span,
                    Note(f"'{symbol.name}' is made here", fact.producer.span),
                )
                break
            if fact.status == WAITED and fact.by is not None:
                self.sink.error(
                    f"future '{symbol.name}' was already waited at line {fact.by.span.line}; a dynamic future "
                    "instance is waited once (to share one completion, publish an event and wait on it)",
                    target.span,
                    Note(f"'{symbol.name}' was first waited here", fact.by.span),
                )
                break
            if fact.status == PUBLISHED and fact.by is not None:
                self.sink.error(
                    f"future '{symbol.name}' was published to event '{fact.event}' at line {fact.by.span.line}; "
                    f"wait on the event ('wait {fact.event};') instead of the future",
                    target.span,
                    Note("the future is published here", fact.by.span),
                )
                break
        return frozenset(Fact(WAITED, f.producer, stmt) for f in facts)

    def _trigger(self, stmt: ast.Trigger, state: State) -> State:
        if not stmt.after:
            return state
        names = expressions(stmt.targets)
        if len(stmt.targets) > 1:
            self.sink.error(
                f"'trigger {names} after ...' binds several events; a future is published once: bind one event "
                "and let every consumer wait on it",
                stmt.span,
            )
        for target in stmt.targets:
            use = self._event_use(target, stmt, True, ())
            if (
                use is not None
                and isinstance(use.event.value, Event)
                and use.event.value.storage != Storage.SHARED
            ):
                self.sink.error(
                    f"'trigger {expression(target)} after ...': '{use.event.name}' is a {use.event.value.storage} "
                    "event, but an operation's completion can only be bound to one shared event",
                    target.span,
                )
        event = expression(stmt.targets[0])
        for item in stmt.after:
            symbol = self.info.future_named(item)
            if symbol is None:
                continue
            facts = state.get(symbol, frozenset())
            self._check_bindable(symbol, item, facts, stmt, event)
            state[symbol] = frozenset(Fact(PUBLISHED, f.producer, stmt, event) for f in facts)
        return state

    def _check_bindable(
        self, symbol: Symbol, item: ast.Expr, facts: frozenset[Fact], stmt: ast.Trigger, event: str
    ) -> None:
        """`trigger E after F` needs an operation that completes on an event by itself: a TMA load."""
        name = symbol.name
        instead = f"write 'wait {name}; trigger {event};' instead"
        for fact in facts:
            info = self.info.operations.get(id(fact.producer))
            kind = info.kind if info else ""
            if fact.status == WAITED and fact.by is not None:
                self.sink.error(
                    f"future '{name}' was already waited at line {fact.by.span.line}, so nothing is left to bind: "
                    f"write 'trigger {event};'",
                    item.span,
                    Note(f"'{name}' is waited here", fact.by.span),
                )
            elif fact.status == PUBLISHED and fact.by is not None:
                self.sink.error(
                    f"future '{name}' was already bound to event '{fact.event}' at line {fact.by.span.line}; a "
                    f"future is published once: let every consumer wait on '{fact.event}'",
                    item.span,
                    Note(f"'{name}' is bound here", fact.by.span),
                )
            elif fact.status == SYNCHRONOUS:
                self.sink.error(
                    f"'{name}' is the future of a synchronous operation, complete at the end of its statement: "
                    f"write 'trigger {event};'",
                    item.span,
                )
            elif kind == "mma":
                self.sink.error(
                    f"'trigger {event} after {name}': '{name}' is an MMA operation future, and WGMMA has no "
                    f"native completion event; {instead}",
                    stmt.span,
                )
            elif kind == "tma-store":
                self.sink.error(
                    f"'trigger {event} after {name}': '{name}' is a TMA store future (shared to global), which "
                    f"has no mbarrier completion; only global-to-shared TMA loads can complete an event; {instead}",
                    stmt.span,
                )
            elif kind == "dma":
                self.sink.target_rule(
                    self.target,
                    f"'trigger {event} after {name}': '{name}' is a plain async copy (dma.copy), which has no "
                    f"native completion event on CUDA; {instead}",
                    stmt.span,
                )
            elif kind == "placeholder":
                self.sink.error(
                    f"'{name}' is a placeholder future (dma.any); it has no operation to bind", item.span
                )
            else:
                continue
            return


def _trip_count(loop: ast.Stmt) -> int | None:
    if isinstance(loop, ast.Foreach):
        return constant_count(loop.extent)
    return None


def _trip_is_multiple(loop: ast.Stmt, size: object) -> bool:
    """A restart is harmless when the loop always runs a multiple of 2N iterations."""
    trips = _trip_count(loop)
    return isinstance(trips, int) and isinstance(size, int) and trips > 0 and trips % (2 * size) == 0
