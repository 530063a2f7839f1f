"""How many arrivals complete one generation of an event (language.md 8 and 12.2).

The count comes from every trigger of the event: the threads that reach a direct
`trigger E`, plus the instances that execute a `trigger E after F`, as their parallel
levels and `inthreads` predicates select them (a data-dependent `if` does not reduce it).
The sim evaluates the predicates over all threads of the block when the event is
declared, and counts in the same execution units it uses when the triggers run, so the
derived count and the arrivals agree by construction.  `event<N>` overrides it.
"""

from __future__ import annotations

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.resolve import FunctionInfo
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.runtime.sim.expressions import Evaluator
from choreo_kernel.runtime.sim.frames import Frame, PerThread, Scope


def trigger_sites(info: FunctionInfo) -> dict[int, list[ast.Trigger]]:
    """id(EventDecl) -> the trigger statements that name that event."""
    sites: dict[int, list[ast.Trigger]] = {}
    for stmt in ast.walk_statements(info.function.body):
        if not isinstance(stmt, ast.Trigger):
            continue
        for target in stmt.targets:
            root = target.value if isinstance(target, ast.Method) else target
            while isinstance(root, ast.Index):
                root = root.value
            symbol = info.symbol_of.get(id(root))
            if symbol is not None and isinstance(symbol.declaration, ast.EventDecl):
                listed = sites.setdefault(id(symbol.declaration), [])
                if stmt not in listed:
                    listed.append(stmt)
    return sites


def expected_arrivals(
    sites: list[ast.Trigger], info: FunctionInfo, evaluator: Evaluator, frame: Frame
) -> int:
    """The arrivals per generation for an event declared in `frame`, from its trigger sites."""
    block = frame.block
    arrivals: set[tuple[bool, int, int]] = set()  # (after?, unit, instance)
    for trigger in sites:
        context = info.context_of[id(trigger)]
        reached = _reached(context, info, evaluator, frame)
        if trigger.after:
            unit = block.layout.operation_unit(context, "tma", block.threads)
        else:
            unit = block.layout.execution_unit(context, block.threads)
        arrivals.update((bool(trigger.after), unit, int(group)) for group in np.unique(reached // unit))
    return len(arrivals)


def _reached(context: Context, info: FunctionInfo, evaluator: Evaluator, frame: Frame) -> np.ndarray:
    """The threads of the block whose levels and inthreads predicates reach a statement."""
    block = frame.block
    everyone = np.arange(block.threads)
    scope = Scope(frame.scope, everyone)
    for level in context.levels:
        if level.name == "block":
            continue
        stmt, position = block.layout.structure.owner[id(level.clause)]
        for name, values, bound in block.layout.variables(stmt, position, block.threads, position + 1):
            scope.names[name] = PerThread(values, bound)
    probe = Frame(scope, everyone, frame.task, block)
    for predicate in context.predicates:
        probe = probe.narrow(evaluator.selected(predicate, probe))
    return probe.lanes
