"""Parallel levels as a CUDA launch: block variables on the grid, everything below on threadIdx.x.

Block indices map to blockIdx, the first variable on x (language.md 4.1). Below the block,
all levels share threadIdx.x row-major, the last variable fastest: a variable is
`(threadIdx.x / stride) % extent`, its stride the number of threads that each of its values
spans. Thread counts below the block are compile-time constants here, which is also what
lets the lowering enumerate which threads reach a statement (event arrival counts).
"""

from __future__ import annotations

from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.levels import inner_parallels
from choreo_kernel.compiler.analysis.resolve import FunctionInfo
from choreo_kernel.compiler.analysis.scope import THREADS_PER_UNIT, Context
from choreo_kernel.compiler.analysis.values import Symbol
from choreo_kernel.compiler.cuda import cexpr
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.expressions import Expressions
from choreo_kernel.compiler.cuda.views import LoweringError
from choreo_kernel.compiler.semantics import evaluate as host

THREAD_INDEX = cexpr.name("threadIdx.x")
GRID_AXES = ("x", "y", "z")
WARPGROUP = THREADS_PER_UNIT["group-4"]
WARP = THREADS_PER_UNIT["group"]
BLOCK_LEADER = cexpr.raw("threadIdx.x == 0", 9)


@dataclass(frozen=True)
class ThreadVariable:
    """A variable below the block level: `(threadIdx.x / stride) % extent`."""

    symbol: Symbol | None
    extent: int
    stride: int

    def value(self, block_threads: int) -> CExpr:
        quotient = cexpr.binary("/", THREAD_INDEX, cexpr.const(self.stride))
        if self.stride * self.extent >= block_threads:
            return quotient
        return cexpr.binary("%", quotient, cexpr.const(self.extent))

    def at(self, thread: int) -> int:
        return (thread // self.stride) % self.extent


@dataclass(frozen=True)
class Group:
    """The threads that run one instance of a level together: they cooperate on its copies."""

    level: str
    rank: CExpr  # this thread's place in the instance
    threads: CExpr
    leader: CExpr  # the condition that picks one thread of the instance

    def barrier(self) -> str | None:
        """The statement that synchronizes the instance, or None for a single thread."""
        if self.level == "block":
            return "__syncthreads();"
        if self.level == "group-4":
            return "choreo::named_barrier_sync(1 + threadIdx.x / 128, 128);  // this warpgroup's barrier"
        if self.level == "group":
            return "__syncwarp();"
        return None


THREAD_GROUP = Group("thread", cexpr.ZERO, cexpr.ONE, cexpr.raw("true"))


def unit_group(level: str) -> Group:
    """An instance of a warpgroup or warp level: consecutive threads, the first of them its leader."""
    size = cexpr.const(THREADS_PER_UNIT[level])
    rank = cexpr.binary("%", THREAD_INDEX, size)
    return Group(level, rank, size, cexpr.binary("==", rank, cexpr.ZERO))


class KernelLayout:
    """The launch shape of one kernel (an outermost `parallel`) and the thread variables inside it."""

    def __init__(self, info: FunctionInfo, kernel: ast.Parallel, expressions: Expressions) -> None:
        self.info = info
        self.kernel = kernel
        self.expressions = expressions
        levels = info.levels_of[id(kernel)]
        self.block_clauses = [c for c, level in zip(kernel.clauses, levels) if level == "block"]
        first_inner = len(self.block_clauses)
        self.threads = self._threads_from(kernel, first_inner)
        self.variables: dict[int, list[ThreadVariable]] = {}  # id(ParallelClause) -> its variables
        for stmt in _parallels(kernel):
            self._lay_out(stmt)

    # ------------------------------------------------------------------ grid

    def grid(self) -> list[tuple[Symbol | None, ast.Expr]]:
        """Each block variable with the count it iterates, outermost first (blockIdx.x first)."""
        entries: list[tuple[Symbol | None, ast.Expr]] = []
        for clause in self.block_clauses:
            counts = clause.count.items if isinstance(clause.count, ast.ListLiteral) else (clause.count,)
            names = clause.variables.names if clause.variables is not None else ()
            for index, count in enumerate(counts):
                name = names[index].id if index < len(names) else ""
                entries.append((self.expressions.declared(self.kernel, name), count))
        if len(entries) > len(GRID_AXES):
            raise LoweringError(
                "the CUDA backend maps at most three block variables to blockIdx", self.kernel
            )
        return entries

    # ------------------------------------------------------------------ threads

    def _counts(self, clause: ast.ParallelClause) -> list[int]:
        return [_positive(dim.value, clause) for dim in self.expressions.counts(clause.count)]

    def _threads_from(self, stmt: ast.Parallel, index: int) -> int:
        """Threads per instance of the levels of `stmt` from clause `index` on (and the parallels inside)."""
        levels = self.info.levels_of[id(stmt)]
        if index < len(stmt.clauses):
            total = 1
            for count in self._counts(stmt.clauses[index]):
                total *= count
            return total * self._threads_from(stmt, index + 1)
        nested = (
            next(inner_parallels(stmt.body), None) if not isinstance(stmt.body, ast.Parallel) else stmt.body
        )
        if nested is not None:
            return self._threads_from(nested, 0)
        return THREADS_PER_UNIT.get(levels[-1], 1)

    def _lay_out(self, stmt: ast.Parallel) -> None:
        levels = self.info.levels_of[id(stmt)]
        for index, (clause, level) in enumerate(zip(stmt.clauses, levels)):
            if level == "block":
                continue
            stride = self._threads_from(stmt, index + 1)
            names = clause.variables.names if clause.variables is not None else ()
            variables: list[ThreadVariable] = []
            for position, extent in reversed(list(enumerate(self._counts(clause)))):
                name = names[position].id if position < len(names) else ""
                variables.insert(0, ThreadVariable(self.expressions.declared(stmt, name), extent, stride))
                stride *= extent
            self.variables[id(clause)] = variables

    def group(self, context: Context) -> Group:
        """The instance of the innermost level around a statement: who cooperates on its copies."""
        level = context.levels[-1].name if context.levels else "block"
        if level == "thread":
            return THREAD_GROUP
        if level in ("group-4", "group"):
            return unit_group(level)
        return Group("block", THREAD_INDEX, cexpr.name("blockDim.x"), BLOCK_LEADER)

    def issuing_size(self, context: Context) -> int:
        """Threads per instance of the innermost level above `thread` around a statement: the level
        whose instances each issue a TMA copy or run an MMA (language.md 12.2)."""
        for level in reversed(context.levels):
            if level.name in ("group-4", "group"):
                return THREADS_PER_UNIT[level.name]
            if level.name == "block":
                break
        return self.threads

    def issuing_group(self, context: Context) -> Group:
        size = self.issuing_size(context)
        if size == self.threads:
            return Group("block", THREAD_INDEX, cexpr.const(size), BLOCK_LEADER)
        return unit_group("group-4" if size == WARPGROUP else "group")

    def instance(self, context: Context) -> CExpr:
        """Which instance of the issuing level this thread belongs to (0 for a block)."""
        size = self.issuing_size(context)
        return cexpr.ZERO if size == self.threads else cexpr.binary("/", THREAD_INDEX, cexpr.const(size))

    def elected(self, context: Context) -> CExpr | None:
        """The condition that picks one thread per issuing instance among those that reach a statement;
        None when each instance that reaches it does so with a single thread already."""
        group = self.issuing_group(context)
        size = self.issuing_size(context)
        threads = self.threads_reaching(context)
        if threads is None:
            return group.leader
        first: dict[int, int] = {}
        counts: dict[int, int] = {}
        for thread in sorted(threads):
            first.setdefault(thread // size, thread)
            counts[thread // size] = counts.get(thread // size, 0) + 1
        if all(count == 1 for count in counts.values()):
            return None
        ranks = {thread % size for thread in first.values()}
        if len(ranks) != 1:
            raise LoweringError(
                "the threads that reach this statement differ from one instance to the next, so the CUDA "
                "backend cannot elect the thread that issues it; select whole instances with inthreads"
            )
        rank = cexpr.const(ranks.pop())
        if size == self.threads:
            return cexpr.binary("==", THREAD_INDEX, rank)
        return cexpr.binary("==", group.rank, rank)

    def covers_instances(self, context: Context) -> bool:
        """Whether every thread of each issuing instance that reaches a statement reaches it: only then
        may the instance synchronize there."""
        size = self.issuing_size(context)
        threads = self.threads_reaching(context)
        if threads is None:
            return False
        return all(
            thread in threads
            for first in {t // size * size for t in threads}
            for thread in range(first, first + size)
        )

    def threads_reaching(self, context: Context) -> frozenset[int] | None:
        """The threads (threadIdx.x) whose levels and inthreads predicates reach a statement, if decidable."""
        variables = [v for level in context.levels for v in self.variables.get(id(level.clause), [])]
        reached: set[int] = set()
        for thread in range(self.threads):
            values = {v.symbol: v.at(thread) for v in variables if v.symbol is not None}

            def lookup(name: ast.Name, values: dict[Symbol, int] = values) -> int:
                symbol = self.info.symbol_of.get(id(name))
                if symbol is None or symbol not in values:
                    raise host.NotEvaluable(name)
                return values[symbol]

            try:
                if all(host.evaluate(predicate, lookup) for predicate in context.predicates):
                    reached.add(thread)
            except (host.NotEvaluable, ZeroDivisionError):
                return None
        return frozenset(reached)


def _positive(value: int | None, clause: ast.ParallelClause) -> int:
    if value is None:
        raise LoweringError(
            "the CUDA backend needs the thread counts below the block level at compile time (use a #define)",
            clause,
        )
    return value


def _parallels(stmt: ast.Stmt) -> list[ast.Parallel]:
    found = [stmt] if isinstance(stmt, ast.Parallel) else []
    for child in ast.child_statements(stmt):
        found.extend(_parallels(child))
    return found
