"""A kernel's threads in CUDA terms: block variables on the grid, everything below on threadIdx.x.

Who runs what is the launch model's (semantics/launch.py): the block size, the thread
variables, the instances of each level and which threads reach or issue a statement. This
module renders those decisions as CUDA: a thread variable is `(threadIdx.x / stride) % extent`,
an instance's threads cooperate through its rank and synchronize with its barrier, and the
thread that issues an operation for its instance is picked by a condition on its rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.scope import Context
from choreo_kernel.compiler.analysis.values import Symbol
from choreo_kernel.compiler.cuda import cexpr
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.views import LoweringError
from choreo_kernel.compiler.semantics.launch import KernelLaunch, ThreadVariable
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


def unit_group(level: Level) -> Group:
    """An instance of a warpgroup or warp level: consecutive threads, the first of them its leader."""
    size = cexpr.const(level.unit or 1)
    rank = cexpr.binary("%", THREAD_INDEX, size)
    return Group(level, rank, size, cexpr.binary("==", rank, cexpr.ZERO))


class KernelThreads:
    """The launch of one kernel (an outermost `parallel`), as the CUDA lowering addresses it."""

    def __init__(self, info: FunctionInfo, kernel: ast.Parallel) -> None:
        self.info = info
        self.kernel = kernel
        self.launch: KernelLaunch = info.launches.launch(kernel)
        if not self.launch.is_static:
            raise LoweringError(
                "the CUDA backend needs the thread counts below the block level at compile time (use a #define)",
                self.launch.symbolic_clause() or kernel,
            )
        self.block_threads = self.launch.threads
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

    def variables(self, clause: ast.ParallelClause) -> list[ThreadVariable]:
        """The thread variables of a clause below the block level (none for a block clause)."""
        return self.launch.clause_variables(clause)

    def value(self, variable: ThreadVariable) -> CExpr:
        """`(threadIdx.x / stride) % extent`, without the `%` where the variable spans the block."""
        quotient = cexpr.binary("/", THREAD_INDEX, cexpr.const(variable.stride))
        if variable.stride * variable.extent >= self.block_threads:
            return quotient
        return cexpr.binary("%", quotient, cexpr.const(variable.extent))

    def group(self, context: Context) -> Group:
        """The instance of the innermost level around a statement: who cooperates on its copies."""
        level = context.levels[-1].level if context.levels else Level.BLOCK
        if level == Level.THREAD:
            return THREAD_GROUP
        if level in (Level.WARPGROUP, Level.WARP):
            return unit_group(level)
        return Group(Level.BLOCK, THREAD_INDEX, cexpr.name("blockDim.x"), BLOCK_LEADER)

    def issuing_size(self, context: Context) -> int:
        """Threads per instance of the level whose instances each issue a TMA copy (12.2)."""
        return self.launch.issuing_unit(context, "tma")

    def issuing_group(self, context: Context) -> Group:
        size = self.issuing_size(context)
        if size == self.block_threads:
            return Group(Level.BLOCK, THREAD_INDEX, cexpr.const(size), BLOCK_LEADER)
        return unit_group(Level.WARPGROUP if size == WARPGROUP_THREADS else Level.WARP)

    def instance(self, context: Context) -> CExpr:
        """Which instance of the issuing level this thread belongs to (0 for a block)."""
        size = self.issuing_size(context)
        return (
            cexpr.ZERO if size == self.block_threads else cexpr.binary("/", THREAD_INDEX, cexpr.const(size))
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
        if size == self.block_threads:
            return cexpr.binary("==", THREAD_INDEX, rank)
        return cexpr.binary("==", self.issuing_group(context).rank, rank)

    def covers_instances(self, context: Context) -> bool:
        """Whether every thread of each issuing instance that reaches a statement reaches it."""
        return self.launch.covers_instances(context, "tma")

    def threads_reaching(self, context: Context) -> frozenset[int] | None:
        return self.launch.reach(context)
