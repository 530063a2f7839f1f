"""Warp specialization: the roles of a block's `inthreads.async` paths, and the registers each gets.

A producer path (TMA copies, no MMA) needs few registers; consumer paths (WGMMA accumulators)
need many. When a block of three or more warpgroups splits into such paths, the kernel is
compiled with `__launch_bounds__(threads, 1)` (one block per SM, every thread capped at an equal
share of the register file) and each path starts by resizing its warpgroups' registers with
setmaxnreg (sm_90a): the producer gives back what the consumers then take.

A path that only issues TMA loads bound to events and waits on events runs on one elected
thread per instance: the other threads would only wait alongside it, which nothing observes.
"""

from __future__ import annotations

from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.builtins import is_device_effect
from choreo_kernel.compiler.analysis.device_checks import own_expressions
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Symbol
from choreo_kernel.compiler.cuda.threads import KernelThreads
from choreo_kernel.compiler.semantics.levels import WARPGROUP_THREADS as WARPGROUP

REGISTER_FILE = 65536  # 32-bit registers per SM
PRODUCER_REGISTERS = 40  # CUTLASS's producer warpgroup: 40 + 2 x 232 with two consumers
LEAN_PRODUCER_REGISTERS = 32  # FlashAttention-3's with three consumers: 32 + 3 x 160 (40 leaves them 152)
CONSUMER_FLOOR = 160  # what a consumer of three gets from a lean producer: the accumulators of FA3's D = 64
MAX_REGISTERS = 256
MIN_WARPGROUPS = 3  # with two, the cap at launch (256 threads: 255 registers) already gives consumers all


@dataclass(frozen=True)
class Role:
    """What a path's warpgroups do with their registers at its start: `setmaxnreg_dec<40>` or `_inc<232>`."""

    kind: str  # "producer" or "consumer"
    registers: int

    @property
    def call(self) -> str:
        action = "dec" if self.kind == "producer" else "inc"
        return f"choreo::setmaxnreg_{action}<{self.registers}>();"


def plan_roles(info: FunctionInfo, kernel: ast.Parallel, kernel_threads: KernelThreads) -> dict[int, Role]:
    """The role of each `inthreads.async` path (by id) that resizes its registers; empty when none does."""
    threads = kernel_threads.block_threads
    if threads is None or threads < MIN_WARPGROUPS * WARPGROUP or threads % WARPGROUP:
        return {}
    paths: dict[int, tuple[str, frozenset[int]]] = {}
    for stmt in ast.walk_statements(kernel):
        if not isinstance(stmt, ast.InThreads) or not stmt.is_async:
            continue
        context = info.context_of[id(stmt)]
        if context.loops:
            return {}  # setmaxnreg once per path, not per iteration
        reached = kernel_threads.threads_reaching(
            context.enter(predicates=(*context.predicates, stmt.condition))
        )
        kind = _kind(stmt)
        if reached is None or kind is None:
            return {}
        warpgroups = frozenset(t // WARPGROUP for t in reached)
        if len(reached) != len(warpgroups) * WARPGROUP:
            return {}  # roles are whole warpgroups
        paths[id(stmt)] = (kind, warpgroups)
    taken = [w for _, warpgroups in paths.values() for w in warpgroups]
    if len(taken) != len(set(taken)):
        return {}
    producers = sum(len(w) for kind, w in paths.values() if kind == "producer")
    consumers = sum(len(w) for kind, w in paths.values() if kind == "consumer")
    if not producers or not consumers:
        return {}
    idle = threads // WARPGROUP - producers - consumers
    at_launch = REGISTER_FILE // threads // 8 * 8

    def consumer_share(producer_registers: int) -> int:
        spare = REGISTER_FILE - WARPGROUP * (producers * producer_registers + idle * at_launch)
        return min(MAX_REGISTERS, spare // (consumers * WARPGROUP) // 8 * 8)

    producer_registers = PRODUCER_REGISTERS
    if consumer_share(producer_registers) < CONSUMER_FLOOR:
        producer_registers = LEAN_PRODUCER_REGISTERS
    roles = {
        "producer": Role("producer", producer_registers),
        "consumer": Role("consumer", consumer_share(producer_registers)),
    }
    return {path: roles[kind] for path, (kind, _) in paths.items()}


def _kind(path: ast.InThreads) -> str | None:
    families = {s.operation.family for s in ast.walk_statements(path) if isinstance(s, ast.OperationStmt)}
    if "mma" in families:
        return "consumer"
    if "tma" in families:
        return "producer"
    return None


def elected_paths(info: FunctionInfo, kernel: ast.Parallel) -> frozenset[int]:
    """The `inthreads.async` paths (by id) that run on one elected thread per instance: those that only
    issue TMA loads bound to events, trigger them, wait on events and count."""
    bound = {
        info.symbol_of[id(future)]
        for stmt in ast.walk_statements(kernel)
        if isinstance(stmt, ast.Trigger)
        for future in stmt.after
        if id(future) in info.symbol_of
    }
    return frozenset(
        id(stmt)
        for stmt in ast.walk_statements(kernel)
        if isinstance(stmt, ast.InThreads) and stmt.is_async and issue_only(stmt.body, info, bound)
    )


def issue_only(stmt: ast.Stmt, info: FunctionInfo, bound: set[Symbol]) -> bool:
    """Whether a path only issues TMA loads bound to events, triggers them, waits on events and counts."""
    if any(is_device_effect(node) for expr in own_expressions(stmt) for node in ast.walk_expr(expr)):
        return False  # each thread of the path calls a device function (or does its atomic)
    if isinstance(stmt, ast.Block | ast.Foreach | ast.ForeachRange | ast.If | ast.With):
        return all(issue_only(child, info, bound) for child in ast.child_statements(stmt))
    if isinstance(stmt, ast.Empty | ast.Break | ast.Continue | ast.ScalarDecl):
        return not (isinstance(stmt, ast.ScalarDecl) and stmt.storage is not None)
    if isinstance(stmt, ast.Assign):
        return isinstance(stmt.target, ast.Name)
    if isinstance(stmt, ast.Wait):
        return all(info.event_named(target) is not None for target in stmt.targets)
    if isinstance(stmt, ast.Trigger):
        return bool(stmt.after)
    if isinstance(stmt, ast.OperationStmt):
        symbol = info.symbol_of.get(id(stmt.result)) if stmt.result is not None else None
        return stmt.operation.family == "tma" and symbol in bound
    return False
