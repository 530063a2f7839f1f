"""A kernel's threads in CUDA terms: block variables on the grid, everything below on threadIdx.x.

Who runs what is the launch model's (semantics/launch.py): the block size, the thread
variables, the instances of each level and which threads reach or issue a statement. This
module renders those decisions as CUDA: a thread variable is `(threadIdx.x / stride) % extent`,
an instance's threads cooperate through its rank and synchronize with its barrier, and the
thread that issues an operation for its instance is picked by a condition on its rank.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import Symbol
from choreo_kernel.compiler.cuda import cexpr
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.views import LoweringError
from choreo_kernel.compiler.semantics.launch import Factor, KernelLaunch, inner_parallels
from choreo_kernel.compiler.semantics.levels import WARPGROUP_THREADS, Level

THREAD_INDEX = cexpr.name("threadIdx.x")
GRID_AXES = ("x", "y", "z")
BLOCK_LEADER = cexpr.raw("threadIdx.x == 0", 9)


@dataclass(frozen=True)
class Group:
    """The threads that run one instance of a level together: they cooperate on its copies."""

    level: Level
    rank: CExpr  # this thread's place in the instance
    threads: CExpr
    leader: CExpr  # the condition that picks one thread of the instance

    def barrier(self) -> str | None:
        """The statement that synchronizes the instance, or None for a single thread."""
        if self.level == Level.BLOCK:
            return "__syncthreads();"
        if self.level == Level.WARPGROUP:
            return "choreo::named_barrier_sync(1 + threadIdx.x / 128, 128);  // this warpgroup's barrier"
        if self.level == Level.WARP:
            return "__syncwarp();"
        return None


THREAD_GROUP = Group(Level.THREAD, cexpr.ZERO, cexpr.ONE, cexpr.raw("true"))
BLOCK_DIM = cexpr.name("blockDim.x")


@dataclass(frozen=True)
class LoweredVariable:
    """A variable below the block level, as CUDA computes it in each thread."""

    symbol: Symbol | None  # None when nothing refers to it
    value: CExpr  # `(threadIdx.x / stride) % extent`
    extent: CExpr  # its bound


def unit_group(level: Level) -> Group:
    """An instance of a warpgroup or warp level: consecutive threads, the first of them its leader."""
    size = cexpr.const(level.unit or 1)
    rank = cexpr.binary("%", THREAD_INDEX, size)
    return Group(level, rank, size, cexpr.binary("==", rank, cexpr.ZERO))


class KernelThreads:
    """The launch of one kernel (an outermost `parallel`), as the CUDA lowering addresses it.

    Where the arguments give the block size (`parallel t by N`), the host computes it at each call
    and checks it against the hardware's limit; each thread variable divides and reduces
    `threadIdx.x` by the counts' values (`render` lowers a count's expression). Such a kernel has no
    fixed units to issue TMA copies, MMAs or event arrivals from, so those need a fixed block size.
    """

    def __init__(self, info: FunctionInfo, kernel: ast.Parallel, render: Callable[[ast.Expr], CExpr]) -> None:
        self.info = info
        self.kernel = kernel
        self.render = render
        self.launch: KernelLaunch = info.launches.launch(kernel)
        self.block_threads: int | None = self.launch.threads if self.launch.is_static else None
        if self.block_threads is None:
            _check_symbolic(info, kernel, self.launch)
        self.block_clauses = kernel.clauses[: self.launch.first_inner]

    # ------------------------------------------------------------------ grid

    def grid(self) -> list[tuple[Symbol | None, ast.Expr]]:
        """Each block variable with the count it iterates, outermost first (blockIdx.x first)."""
        entries: list[tuple[Symbol | None, ast.Expr]] = []
        for clause in self.block_clauses:
            counts = clause.count.items if isinstance(clause.count, ast.ListLiteral) else (clause.count,)
            names = clause.variables.names if clause.variables is not None else ()
            for index, count in enumerate(counts):
                name = names[index].id if index < len(names) else ""
                entries.append((self.info.declared(self.kernel, name), count))
        if len(entries) > len(GRID_AXES):
            raise LoweringError(
                "the CUDA backend maps at most three block variables to blockIdx", self.kernel
            )
        return entries

    # ------------------------------------------------------------------ threads

    def variables(self, clause: ast.ParallelClause) -> list[LoweredVariable]:
        """The thread variables of a clause below the block level (none for a block clause):
        `(threadIdx.x / stride) % extent`, without the `%` where the variable spans the block."""
        if self.block_threads is None:
            lowered = []
            for symbolic in self.launch.symbolic_variables(clause):
                extent = self._factor(symbolic.extent)
                stride = cexpr.multiply(*(self._factor(f) for f in symbolic.stride))
                quotient = cexpr.binary("/", THREAD_INDEX, stride)
                value = quotient if symbolic.spans_block else cexpr.binary("%", quotient, extent)
                lowered.append(LoweredVariable(symbolic.symbol, value, extent))
            return lowered
        result = []
        for variable in self.launch.clause_variables(clause):
            quotient = cexpr.binary("/", THREAD_INDEX, cexpr.const(variable.stride))
            if variable.stride * variable.extent < self.block_threads:
                quotient = cexpr.binary("%", quotient, cexpr.const(variable.extent))
            result.append(LoweredVariable(variable.symbol, quotient, cexpr.const(variable.extent)))
        return result

    def _factor(self, factor: Factor) -> CExpr:
        return cexpr.const(factor) if isinstance(factor, int) else self.render(factor)

    def static_block_threads(self) -> int:
        """The block size, where an operation needs it fixed (`_check_symbolic` keeps those out)."""
        if self.block_threads is None:
            raise LoweringError(
                "this needs the block size at compile time on CUDA (use a #define)", self.kernel
            )
        return self.block_threads

    def group(self, context: Context) -> Group:
        """The instance of the innermost level around a statement: who cooperates on its copies."""
        level = context.levels[-1].level if context.levels else Level.BLOCK
        if level == Level.THREAD:
            return THREAD_GROUP
        if level in (Level.WARPGROUP, Level.WARP):
            return unit_group(level)
        return Group(Level.BLOCK, THREAD_INDEX, BLOCK_DIM, BLOCK_LEADER)

    def issuing_size(self, context: Context) -> int:
        """Threads per instance of the level whose instances each issue a TMA copy (12.2)."""
        return self.launch.issuing_unit(context, "tma")

    def issuing_group(self, context: Context) -> Group:
        size = self.issuing_size(context)
        if size == self.static_block_threads():
            return Group(Level.BLOCK, THREAD_INDEX, cexpr.const(size), BLOCK_LEADER)
        return unit_group(Level.WARPGROUP if size == WARPGROUP_THREADS else Level.WARP)

    def instance(self, context: Context) -> CExpr:
        """Which instance of the issuing level this thread belongs to (0 for a block)."""
        size = self.issuing_size(context)
        return (
            cexpr.ZERO
            if size == self.static_block_threads()
            else cexpr.binary("/", THREAD_INDEX, cexpr.const(size))
        )

    def elected(self, context: Context) -> CExpr | None:
        """The condition that picks the thread issuing an operation for its instance among those that
        reach a statement; None when each instance reaches it with that one thread already."""
        threads = self.launch.reach(context)
        issuers = self.launch.issuers(context, "tma")
        if threads is None or issuers is None:
            return self.issuing_group(context).leader
        if issuers == threads:
            return None
        size = self.issuing_size(context)
        ranks = {thread % size for thread in issuers}
        if len(ranks) != 1:
            raise LoweringError(
                "the threads that reach this statement differ from one instance to the next, so the CUDA "
                "backend cannot elect the thread that issues it; select whole instances with inthreads"
            )
        rank = cexpr.const(ranks.pop())
        if size == self.static_block_threads():
            return cexpr.binary("==", THREAD_INDEX, rank)
        return cexpr.binary("==", self.issuing_group(context).rank, rank)

    def covers_instances(self, context: Context) -> bool:
        """Whether every thread of each issuing instance that reaches a statement reaches it."""
        return self.launch.covers_instances(context, "tma")

    def threads_reaching(self, context: Context) -> frozenset[int] | None:
        return self.launch.reach(context)


# What a kernel whose block size the arguments give cannot have on CUDA: each needs fixed units.
_NEEDS_FIXED_UNITS = {
    ast.EventDecl: "events (their arrival counts)",
    ast.Trigger: "event triggers (their arrival counts)",
}


def _check_symbolic(info: FunctionInfo, kernel: ast.Parallel, launch: KernelLaunch) -> None:
    """A block size the arguments give lowers where nothing needs fixed units: no TMA copies, MMAs,
    events or independent paths. Warp and warpgroup levels have fixed units (32 and 128 threads)
    whose count may be symbolic: their ranks and barriers need no block size."""
    sized_by = launch.symbolic_clause() or kernel

    def refuse(what: str, node: ast.Node) -> LoweringError:
        return LoweringError(
            f"this kernel's block size depends on the arguments (line {sized_by.span.line}), and the CUDA backend "
            f"needs it at compile time for {what}: use a #define for the thread count",
            node,
        )

    for stmt in ast.walk_statements(kernel):
        if isinstance(stmt, ast.Parallel):
            siblings = list(inner_parallels(stmt.body))
            for sibling in siblings[1:]:
                if str(launch.size_of(sibling, 0)) != str(launch.size_of(siblings[0], 0)):
                    raise refuse(
                        f"sibling parallels of different thread counts ({launch.size_of(siblings[0], 0)} at "
                        f"line {siblings[0].span.line}, {launch.size_of(sibling, 0)} here)",
                        sibling,
                    )
        elif isinstance(stmt, ast.OperationStmt) and stmt.operation.family in ("tma", "mma"):
            raise refuse(f"'{stmt.operation.family}' operations", stmt)
        elif isinstance(stmt, ast.InThreads) and stmt.is_async:
            raise refuse("independent paths (inthreads.async)", stmt)
        elif type(stmt) in _NEEDS_FIXED_UNITS:
            raise refuse(_NEEDS_FIXED_UNITS[type(stmt)], stmt)
