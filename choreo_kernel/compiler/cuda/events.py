"""Events as mbarriers with generations (events.md, language.md 8 and 12.1), or as named barriers.

Each event slot is an mbarrier whose phases are the event's generations. Its arrival count
is the number of threads that trigger it directly, read off the thread layout and the
`inthreads` predicates (or `event<N>` instances, when stated), plus one per instance that
executes a `trigger E after f` (whose arrival also carries the bytes of the TMA loads it
binds, tma.py). Where the direct triggers come from whole warps, outside any `if`, each warp
arrives once after a `__syncwarp` and the count is in warps: 8 arrivals instead of 256 for two
consumer warpgroups, with the same meaning. A wait passes once the phase of the awaited
generation's parity has completed:

- `e.at(order)` on `event[N]`: slot `order % N`, parity `(order / N) & 1`;
- plain `e` or `e[i]`: the next generation this path has not yet waited for, counted per
  thread in a bit of `e_phase` (one bit per slot: only the parity is observable);
- `= ready` flips the parity, so generation 0 is complete before any trigger.

Every event is an mbarrier, also the one-slot `= ready` handoffs that the backend may lower to a
named barrier (events.md): a wait on an mbarrier is bounded (it gives up after
CHOREO_WAIT_TIMEOUT_NS and the call raises, with the process's GPU still usable), where a
`bar.sync` that is never matched hangs the GPU and every later call with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from choreo_kernel.compiler import ast, printer
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Event, Symbol
from choreo_kernel.compiler.cuda import cexpr
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.expressions import Expressions
from choreo_kernel.compiler.cuda.plan import WaitSite
from choreo_kernel.compiler.cuda.threads import KernelThreads
from choreo_kernel.compiler.cuda.views import LoweringError
from choreo_kernel.compiler.cuda.writer import CodeWriter
from choreo_kernel.compiler.semantics.arrivals import TriggerSite
from choreo_kernel.compiler.semantics.levels import WARP_THREADS as WARP

MAX_PHASE_SLOTS = 64


@dataclass(frozen=True)
class EventUse:
    statement: ast.Wait | ast.Trigger | ast.While  # a while tests the event: `while (full)`
    target: ast.Expr
    form: str  # "plain", "index", "at"
    conditional: bool  # inside an `if` or `while` of the kernel

    @property
    def is_trigger(self) -> bool:
        return isinstance(self.statement, ast.Trigger)

    @property
    def is_bound(self) -> bool:
        """`trigger E after f`: the arrival comes with the completion of TMA loads."""
        return isinstance(self.statement, ast.Trigger) and bool(self.statement.after)


@dataclass
class EventLowering:
    """How one event of a kernel is lowered."""

    symbol: Symbol
    name: str
    slots: int
    ready: bool
    arrivals: int
    uses: list[EventUse] = field(default_factory=list)
    phase: str | None = None  # the per-thread phase bits, when plain or indexed waits exist
    per_warp: bool = False  # direct triggers arrive once per warp

    @property
    def phase_type(self) -> str:
        return "unsigned" if self.slots <= 32 else "unsigned long long"


class Events:
    """The events of one kernel: their lowering, declarations, waits and triggers."""

    def __init__(
        self,
        info: FunctionInfo,
        kernel: ast.Parallel,
        threads: KernelThreads,
        expressions: Expressions,
        wait_sites: list[WaitSite],
    ) -> None:
        self.info = info
        self.threads = threads
        self.expressions = expressions
        self.by_symbol: dict[Symbol, EventLowering] = {}
        self.wait_sites = wait_sites  # the function's bounded waits; a timeout reports an index into it
        self._uses = _collect_uses(info, kernel)

    # ------------------------------------------------------------------ declaration

    def declare(
        self, stmt: ast.EventDecl, c_name: str, pointer: CExpr, phase_name: str, out: CodeWriter
    ) -> None:
        symbol = _declared_symbol(self.info, stmt)
        event = symbol.value
        assert isinstance(event, Event)
        slots = 1
        for dim in event.dims:
            if not isinstance(dim, int):
                raise LoweringError(f"event array '{stmt.name}' needs a size known at compile time", stmt)
            slots *= dim
        uses = self._uses.get(symbol, [])
        lowering = EventLowering(symbol, c_name, slots, event.ready, 0, uses)
        self.by_symbol[symbol] = lowering
        lowering.arrivals = self._arrivals(lowering, stmt)
        if any(use.form != "at" and not use.is_trigger for use in uses):
            if slots > MAX_PHASE_SLOTS:
                raise LoweringError(f"event '{stmt.name}' has more than {MAX_PHASE_SLOTS} slots", stmt)
            lowering.phase = phase_name
        out.line(f"choreo::mbarrier* const {c_name} = reinterpret_cast<choreo::mbarrier*>({pointer.text});")
        if lowering.phase is not None:
            first = (1 << slots) - 1 if event.ready else 0
            note = (
                "the generation each slot waits for next, mod 2 (generation 0 is ready)"
                if event.ready
                else ("the generation each slot waits for next, mod 2")
            )
            out.line(f"{lowering.phase_type} {lowering.phase} = {hex(first) if first else 0};  // {note}")
        with out.block("if (threadIdx.x == 0)"):
            plural = lowering.arrivals != 1
            count_note = (
                f"{lowering.arrivals} arrival{'s' * plural} complete{'s' * (not plural)} a generation"
            )
            if lowering.per_warp:
                count_note += " (one per triggering warp)"
            if slots == 1:
                out.line(f"choreo::mbarrier_init(&{c_name}[0], {lowering.arrivals});  // {count_note}")
            else:
                with out.block(f"for (int slot = 0; slot < {slots}; ++slot)"):
                    out.line(f"choreo::mbarrier_init(&{c_name}[slot], {lowering.arrivals});  // {count_note}")
            out.line("choreo::fence_mbarrier_init();")
        out.line(self.threads.after_barrier_init())

    def _arrivals(self, lowering: EventLowering, stmt: ast.EventDecl) -> int:
        """The mbarrier's arrivals per generation: the event's arrivals (semantics/arrivals.py) as the
        hardware sees them. The elected thread of each instance that runs a `trigger ... after` arrives
        once; every thread that runs a direct trigger arrives (also where the trigger runs once per
        instance, between levels), or every warp of them at once where whole warps trigger."""
        if not any(use.is_trigger for use in lowering.uses):
            return 1  # never triggered: only `= ready` generation 0 is ever waited for
        arrivals = self.info.arrivals.get(lowering.symbol)
        if arrivals is None or arrivals.count is None:
            raise LoweringError(
                f"which threads trigger event '{stmt.name}' depends on values known only at run time; "
                f"state the arrival count with 'event<N> {stmt.name}'",
                stmt,
            )
        bound = len({arrival for site in arrivals.bound for arrival in site.arrivals or ()})
        if not arrivals.direct:
            return arrivals.count
        if arrivals.stated is not None:
            # `event<N>` counts executions; each execution of a direct trigger is this many threads.
            direct = arrivals.stated - bound
            if direct < 0:
                raise LoweringError(
                    f"event<{arrivals.stated}> '{stmt.name}' is smaller than its {bound} trigger-after arrivals",
                    stmt,
                )
            return bound + direct * arrivals.direct[0].unit
        return bound + self._direct_arrivals(lowering, arrivals.direct)

    def _direct_arrivals(self, lowering: EventLowering, sites: tuple[TriggerSite, ...]) -> int:
        """Threads that arrive directly, or warps where each warp triggers every generation at one site
        with all its threads: the sites' thread sets are whole warps, equal or disjoint, and no `if`
        picks among them."""
        blocks = {site.blocks for site in sites}
        if len(blocks) > 1:
            raise LoweringError(
                f"event '{lowering.symbol.name}' has both 'trigger' and 'trigger.cluster' arrivals; the CUDA "
                "backend counts one kind per event",
                sites[0].statement,
            )
        return blocks.pop() * self._block_arrivals(lowering, sites)

    def _block_arrivals(self, lowering: EventLowering, sites: tuple[TriggerSite, ...]) -> int:
        """The direct arrivals that come from one block."""
        threads = [site.threads or frozenset() for site in sites]
        reached = frozenset().union(*threads)
        distinct = set(threads)
        disjoint = sum(len(site) for site in distinct) == len(reached)
        conditional = any(use.conditional for use in lowering.uses if use.is_trigger and not use.is_bound)
        if disjoint and all(_warp_aligned(site) for site in distinct) and not conditional:
            lowering.per_warp = True
            return len(reached) // WARP
        return len(reached)

    # ------------------------------------------------------------------ waits and triggers

    def wait(self, stmt: ast.Wait, target: ast.Expr, status: str, out: CodeWriter) -> None:
        lowering, form, selector = self._target(target)
        site = len(self.wait_sites)
        self.wait_sites.append(WaitSite(lowering.symbol.name, stmt.span.line, printer.statement(stmt)))
        name = lowering.name
        if form == "at":
            order, setup = self._once(selector, f"{name}_order")
            slot, parity = self._ring(lowering, order)
            lines = [*setup, f"choreo::event_wait(&{name}[{slot.text}], {parity.text}, {status}, {site});"]
        else:
            slot, setup = self._once(selector, f"{name}_slot")
            bit = cexpr.binary("&", cexpr.binary(">>", cexpr.name(lowering.phase or ""), slot), cexpr.ONE)
            mask = cexpr.binary("<<", cexpr.raw("1ull" if lowering.slots > 32 else "1u"), slot)
            lines = [
                *setup,
                f"choreo::event_wait(&{name}[{slot.text}], {bit.text}, {status}, {site});",
                f"{lowering.phase} ^= {mask.text};  // this thread now waits for the next generation",
            ]
        write_once(lines, out)

    def pending(self, target: ast.Expr) -> CExpr:
        """Whether the generation that a wait on `target` would wait for here is still pending (a
        `while (e)` test, which leaves the generation for a later wait); a plain event array is
        pending while any of its slots is."""
        lowering, form, selector = self._target(target)
        if not selector.pure:
            raise LoweringError(
                "a 'while' tests its events on every iteration, so their order cannot change as it is read "
                "('e.at(k++)'): advance the order in the loop's body",
                target,
            )
        name = lowering.name
        if form == "at":
            slot, parity = self._ring(lowering, selector)
        elif form == "plain" and lowering.slots > 1:
            return cexpr.call(
                "choreo::any_pending",
                cexpr.name(name),
                cexpr.const(lowering.slots),
                cexpr.name(lowering.phase or ""),
            )
        else:
            slot = selector
            parity = cexpr.binary("&", cexpr.binary(">>", cexpr.name(lowering.phase or ""), slot), cexpr.ONE)
        test = cexpr.call("choreo::mbarrier_try_wait_parity", cexpr.raw(f"&{name}[{slot.text}]"), parity)
        return cexpr.unary("!", test)

    def trigger(self, target: ast.Expr, out: CodeWriter, cluster: bool = False) -> None:
        """An arrival on the event; `trigger.cluster`: on the event of every block of the cluster."""
        lowering, _, _ = self._target(target)
        address, setup = self.barrier(target)
        arrive = "mbarrier_arrive_warp" if lowering.per_warp else "mbarrier_arrive"
        shape = self.threads.launch.cluster
        if not cluster or shape is None:
            write_once([*setup, f"choreo::{arrive}({address});"], out)
            return
        arrive = arrive.replace("mbarrier_arrive", "mbarrier_arrive_cluster_all")
        write_once(
            [*setup, f"choreo::{arrive}({address}, {shape.blocks});  // this block's and its peers'"], out
        )

    def barrier(self, target: ast.Expr) -> tuple[str, list[str]]:
        """The address of the mbarrier a trigger of `target` arrives on, and the lines that must run
        first (once) to evaluate an order with side effects (`full.at(issued++)`)."""
        lowering, form, selector = self._target(target)
        if form == "at":
            order, setup = self._once(selector, f"{lowering.name}_order")
            slot, _ = self._ring(lowering, order)
        else:
            slot, setup = self._once(selector, f"{lowering.name}_slot")
        return f"&{lowering.name}[{slot.text}]", setup

    def _target(self, target: ast.Expr) -> tuple[EventLowering, str, CExpr]:
        """The event a wait/trigger operand names, its form, and the order (`.at`) or slot it selects."""
        if isinstance(target, ast.Method) and target.name == "at":
            return self._lowering(target.value), "at", self.expressions.integer(target.args[0])
        root, indices = target, list[ast.Expr]()
        while isinstance(root, ast.Index):
            indices = [*root.indices, *indices]
            root = root.value
        lowering = self._lowering(root)
        if not indices:
            return lowering, "plain", cexpr.ZERO
        event = lowering.symbol.value
        assert isinstance(event, Event)
        slot = cexpr.ZERO
        for index, count in zip(indices, event.dims):
            slot = cexpr.add(cexpr.multiply(slot, cexpr.const(int(count))), self.expressions.integer(index))
        return lowering, "index", slot

    def _lowering(self, expr: ast.Expr) -> EventLowering:
        symbol = self.expressions.symbol(expr) if isinstance(expr, ast.Name) else None
        if symbol is None or symbol not in self.by_symbol:
            raise LoweringError("this event is not declared in this kernel", expr)
        return self.by_symbol[symbol]

    def _ring(self, lowering: EventLowering, order: CExpr) -> tuple[CExpr, CExpr]:
        """Slot `order % N` and the parity of generation `order / N`, flipped for a `= ready` ring."""
        size = cexpr.const(lowering.slots)
        slot = cexpr.binary("%", order, size)
        parity = cexpr.binary("&", cexpr.binary("/", order, size), cexpr.ONE)
        if lowering.ready:
            parity = cexpr.binary("^", parity, cexpr.ONE)
        return slot, parity

    def _once(self, value: CExpr, name: str) -> tuple[CExpr, list[str]]:
        """`value` evaluated exactly once (`order++` advances once): a local when it has side effects."""
        if value.pure:
            return value, []
        return cexpr.name(name), [f"const int {name} = {value.text};"]


def write_once(lines: list[str], out: CodeWriter) -> None:
    """Lines that start by evaluating something once into a local (`const int full_order = issued++;`)
    get their own block, so that the name does not clash with the next statement's."""
    if len(lines) == 1 or not lines[0].startswith(("const ", "auto")):
        for line in lines:
            out.line(line)
        return
    with out.block(""):
        for line in lines:
            out.line(line)


def _warp_aligned(threads: frozenset[int]) -> bool:
    return all(
        all(t in threads for t in range(w * WARP, (w + 1) * WARP)) for w in {t // WARP for t in threads}
    )


def _declared_symbol(info: FunctionInfo, stmt: ast.EventDecl) -> Symbol:
    for symbol in info.events:
        if symbol.declaration is stmt:
            return symbol
    raise LoweringError(f"event '{stmt.name}' has no symbol", stmt)


def _collect_uses(info: FunctionInfo, stmt: ast.Stmt) -> dict[Symbol, list[EventUse]]:
    uses: dict[Symbol, list[EventUse]] = {}
    pending: list[tuple[ast.Stmt, bool]] = [(stmt, False)]
    while pending:
        node, conditional = pending.pop()
        targets: tuple[ast.Expr, ...] = ()
        if isinstance(node, ast.Wait | ast.Trigger):
            targets = node.targets
        elif isinstance(node, ast.While):
            targets = tuple(_tested_events(info, node.condition))
        if targets:
            assert isinstance(node, ast.Wait | ast.Trigger | ast.While)
            for target in targets:
                symbol = info.event_named(target)
                if symbol is None:
                    continue
                form, root = "plain", target
                if isinstance(target, ast.Method) and target.name == "at":
                    form, root = "at", target.value
                if isinstance(root, ast.Index):
                    form = "index"
                uses.setdefault(symbol, []).append(EventUse(node, target, form, conditional))
        inner = conditional or isinstance(node, ast.If | ast.While)
        pending.extend((child, inner) for child in ast.child_statements(node))
    return uses


def _tested_events(info: FunctionInfo, condition: ast.Expr) -> list[ast.Expr]:
    """The events a `while` condition tests: the operands of its `!`, `&&` and `||` that name events."""
    if isinstance(condition, ast.Paren):
        return _tested_events(info, condition.inner)
    if isinstance(condition, ast.Unary) and condition.op == "!":
        return _tested_events(info, condition.operand)
    if isinstance(condition, ast.Binary) and condition.op in ("&&", "||"):
        return _tested_events(info, condition.left) + _tested_events(info, condition.right)
    return [condition] if info.event_named(condition) is not None else []
