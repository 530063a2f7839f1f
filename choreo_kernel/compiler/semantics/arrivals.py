"""How many arrivals complete one generation of an event (language.md 8 and 12.2).

An arrival is one execution of a trigger of the event: a direct `trigger E` arrives once for
each thread that runs it (once per instance where it sits between levels), a `trigger E after
F...` once for each instance of the level that issues the bound TMA loads (its arrival lands
when they complete). A generation completes when every thread or instance whose parallel
levels and `inthreads` predicates reach some trigger of the event has arrived: the union over
the trigger sites, so a trigger in each branch of an `if` counts its threads once. A
data-dependent `if` around a trigger does not reduce the count. A `trigger.cluster` arrives on
the event in every block of its cluster, so each block's event counts the arrivals of all of
them. `event<N>` states the count
instead (the analysis warns when it differs from the derived one).

The CUDA lowering turns the count into an mbarrier's expected arrivals, the sim counts
executions against it: both read it from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import Symbol
from choreo_kernel.compiler.semantics.evaluate import Lookup
from choreo_kernel.compiler.semantics.launch import KernelLaunch

Arrival = tuple[bool, int, int, int]  # (bound by `after`, threads per arrival, which thread or instance,
# which block of the cluster it comes from: 0 for this block's own triggers)


@dataclass(frozen=True)
class TriggerSite:
    """One trigger statement of an event, and the threads that reach it."""

    statement: ast.Trigger
    context: Context
    unit: int  # threads per arrival: 1 for a thread, or the threads of one instance
    threads: frozenset[int] | None  # the threads of the block that reach it; None when unknown
    blocks: int = 1  # the blocks whose triggers land here: the cluster's, for `trigger.cluster`

    @property
    def bound(self) -> bool:
        return bool(self.statement.after)

    @property
    def arrivals(self) -> frozenset[Arrival] | None:
        if self.threads is None:
            return None
        return frozenset(
            (self.bound, self.unit, thread // self.unit, block)
            for thread in self.threads
            for block in range(self.blocks)
        )


@dataclass(frozen=True)
class EventArrivals:
    """The trigger sites of one event and the arrivals that complete each of its generations."""

    event: Symbol
    sites: tuple[TriggerSite, ...]
    stated: int | None  # `event<N>`

    @cached_property
    def derived(self) -> int | None:
        """The count the parallel scopes give; None when some site's threads are not known here."""
        arrivals: set[Arrival] = set()
        for site in self.sites:
            reached = site.arrivals
            if reached is None:
                return None
            arrivals |= reached
        return len(arrivals)

    @property
    def count(self) -> int | None:
        """Arrivals per generation: the stated count where there is one, else the derived one."""
        return self.stated if self.stated is not None else self.derived

    @property
    def direct(self) -> tuple[TriggerSite, ...]:
        return tuple(site for site in self.sites if not site.bound)

    @property
    def bound(self) -> tuple[TriggerSite, ...]:
        return tuple(site for site in self.sites if site.bound)


def trigger_sites(
    body: ast.Stmt, event_named: Callable[[ast.Expr], Symbol | None]
) -> dict[Symbol, list[ast.Trigger]]:
    """Each event's trigger statements, in source order (`event_named` maps an operand to its event)."""
    sites: dict[Symbol, list[ast.Trigger]] = {}
    for stmt in ast.walk_statements(body):
        if not isinstance(stmt, ast.Trigger):
            continue
        for target in stmt.targets:
            symbol = event_named(target)
            if symbol is not None and stmt not in sites.setdefault(symbol, []):
                sites[symbol].append(stmt)
    return sites


def event_arrivals(
    event: Symbol,
    triggers: list[ast.Trigger],
    contexts: dict[int, Context],
    launch: KernelLaunch,
    lookup: Lookup | None = None,
) -> EventArrivals:
    """The arrivals of `event` in `launch`; `lookup` gives values the predicates need beyond the
    thread variables (the sim's, at run time)."""
    declaration = event.declaration
    stated = declaration.arrival_count if isinstance(declaration, ast.EventDecl) else None
    sites = []
    for trigger in triggers:
        context = contexts[id(trigger)]
        unit = launch.issuing_unit(context, "tma") if trigger.after else launch.execution_unit(context)
        blocks = launch.cluster.blocks if trigger.cluster and launch.cluster is not None else 1
        sites.append(TriggerSite(trigger, context, unit, launch.reach(context, lookup), blocks))
    return EventArrivals(event, tuple(sites), stated)
