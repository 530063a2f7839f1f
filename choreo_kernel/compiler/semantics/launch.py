"""Who runs what: a kernel launch's block size, its thread numbering, and which threads reach
and issue each statement (language.md 4.1 and 12.2).

One outermost `parallel` is one kernel launch. Its block variables index the grid; every level
below the block shares one thread index, row-major over the variables (the last the fastest):
a variable is `(thread / stride) % extent`, its stride the number of threads each of its values
spans. A level's unit is the threads of one of its instances: 128 for a warpgroup, the product
of the counts inside it for a block.

Statements run per thread where they sit in the innermost level, and once per instance of the
enclosing level where parallels nested in its body make the threads ("between levels"). A
`dma` operation runs once per instance of its innermost level, its threads cooperating; a
`tma` operation (and a `trigger ... after`) once per instance of the innermost level above
`thread`, issued by one thread of it; an `mma` once per warpgroup.

Fragments and accumulators are held by the threads of one warpgroup or one warp together, in that
level's register layout (`register_owner`): the `group-4` or `group` scope around them, or a `thread`
scope of exactly 128 or 32 threads, whose threads are then one aligned warpgroup or warp.

A `cluster` level around a kernel (`parallel {c} by [2] : cluster { parallel ... : block }`)
groups consecutive blocks of its grid (along blockIdx.x first) into thread-block clusters: the
blocks of one cluster run together and may address one another's shared memory (multicast TMA
loads, `trigger.cluster`). Its counts are compile-time constants; its variables are the block's
rank in its cluster. The kernel is the block-level parallel inside it (`Structure.kernels`).

This module decides all of that once, in the compiler core, from the analysis: the analysis
checks, the graph, the CUDA lowering, the sim and the kernel's summary read it. Counts below
the block that are known at compile time make a static launch; the sim binds symbolic counts
with the values of a call (`FunctionLaunches.bind`), through the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.scope import Context, LevelScope
from choreo_kernel.compiler.analysis.values import Dim, Symbol, fold, product
from choreo_kernel.compiler.semantics.evaluate import HostValue, Lookup, NotEvaluable, evaluate
from choreo_kernel.compiler.semantics.levels import (
    MAX_THREADS_PER_BLOCK,
    REGISTER_TILE_ROWS,
    WARP_THREADS,
    WARPGROUP_THREADS,
    Level,
    register_level,
)

PORTABLE_CLUSTER_BLOCKS = 8  # blocks per cluster every sm_90 launch accepts
MAX_CLUSTER_BLOCKS = 16  # with the non-portable cluster size opt-in
GRID_LEVELS = (Level.CLUSTER, Level.BLOCK)  # levels that make blocks, not threads

Counts = Callable[[ast.ParallelClause], tuple[Dim, ...]]
Factor = int | ast.Expr  # a count: its number where it is known, else the expression that gives it at a call
Family = str  # "dma", "tma" (and `trigger ... after`), "mma"
MAX_ENUMERATED_THREADS = 1024  # threads whose predicates are evaluated one by one


def inner_parallels(stmt: ast.Stmt) -> Iterator[ast.Parallel]:
    """The parallel statements nested in `stmt` that are not inside another nested parallel."""
    if isinstance(stmt, ast.Parallel):
        yield stmt
        return
    for child in ast.child_statements(stmt):
        yield from inner_parallels(child)


@dataclass(frozen=True)
class RegisterOwner:
    """The threads that hold a fragment together at a statement: one instance of `level`, whose register
    layout (WGMMA's for a warpgroup, mma.sync's for a warp) places its elements. `level` is None where no
    such threads enclose the statement; `misfit` is then the size of a `thread` scope that is neither."""

    level: Level | None
    from_threads: bool = False  # decided by a `thread` scope's size, not by a group level
    misfit: Dim | None = None

    @property
    def tile_rows(self) -> int:
        """Rows of one tile of the layout: 64 for a warpgroup's, 16 for a warp's."""
        return REGISTER_TILE_ROWS[self.level or Level.WARPGROUP]


THREAD_SCOPE_OWNERS = {WARPGROUP_THREADS: Level.WARPGROUP, WARP_THREADS: Level.WARP}


def register_owner(context: Context) -> RegisterOwner:
    """Who holds a fragment at a statement: the `group-4` (or else `group`) scope around it; without one,
    a `thread` scope of 128 threads is a warpgroup and one of 32 a warp. Threads are numbered innermost, so
    the threads of one instance of a `thread` scope are consecutive and start at a multiple of their count:
    exactly one aligned warpgroup or warp, with the same registers and operations as a group scope."""
    level = register_level(context.level_kinds)
    if level is not None:
        return RegisterOwner(level)
    threads = [scope.count for scope in context.levels if scope.level == Level.THREAD]
    if not threads:
        return RegisterOwner(None)
    count = product(tuple(threads))
    owner = THREAD_SCOPE_OWNERS.get(count) if isinstance(count, int) else None
    if owner is not None:
        return RegisterOwner(owner, from_threads=True)
    return RegisterOwner(None, misfit=count)


@dataclass(frozen=True)
class ThreadVariable:
    """A variable below the block level: `(thread / stride) % extent`."""

    name: str  # "" for a count without a variable
    symbol: Symbol | None  # None when nothing refers to it
    extent: int
    stride: int

    def at(self, thread: int) -> int:
        return (thread // self.stride) % self.extent


@dataclass(frozen=True)
class SymbolicVariable:
    """A variable below the block level of a launch whose block size the arguments give:
    `(thread / stride) % extent`, with the stride the product of its factors."""

    name: str
    symbol: Symbol | None
    extent: Factor
    stride: tuple[Factor, ...]
    spans_block: bool  # its values cover the whole block: no `% extent` needed


def count_items(clause: ast.ParallelClause) -> tuple[ast.Expr, ...]:
    """The count expressions of a clause, one per variable: `[a, b]` or one expression."""
    return clause.count.items if isinstance(clause.count, ast.ListLiteral) else (clause.count,)


def check_block_threads(threads: int, kernel: ast.Parallel) -> str | None:
    """Why a block of `threads` threads cannot be launched (for a size the arguments give), or None."""
    if threads <= 0:
        return f"the parallel at line {kernel.span.line} makes a block of {threads} threads"
    if threads > MAX_THREADS_PER_BLOCK:
        return (
            f"the parallel at line {kernel.span.line} makes a block of {threads} threads: at most "
            f"{MAX_THREADS_PER_BLOCK} threads per block"
        )
    return None


@dataclass(frozen=True)
class ClusterShape:
    """A kernel's thread-block clusters: blocks per cluster along x, y, z (compile-time)."""

    parallel: ast.Parallel  # the `: cluster` parallel around the kernel
    dims: tuple[int, int, int]

    @property
    def blocks(self) -> int:
        return self.dims[0] * self.dims[1] * self.dims[2]

    def rank(self, index3: tuple[int, int, int]) -> int:
        """A block's rank in its cluster (%cluster_ctarank), from its blockIdx."""
        x, y, z = (index % dim for index, dim in zip(index3, self.dims))
        return x + self.dims[0] * (y + self.dims[1] * z)


def is_cluster(stmt: ast.Stmt, levels_of: dict[int, tuple[Level, ...]]) -> bool:
    """Whether `stmt` is a `: cluster` parallel (around a kernel)."""
    return isinstance(stmt, ast.Parallel) and Level.CLUSTER in levels_of.get(id(stmt), ())


def cluster_problem(dims: tuple[int, ...] | None, grid: list[int], kernel: ast.Parallel) -> str | None:
    """Why a grid of `grid` blocks does not divide into clusters of `dims` (at a call), or None."""
    if dims is None:
        return None
    for axis, (size, dim) in enumerate(zip((*grid, 1, 1, 1), dims)):
        if size % dim:
            return (
                f"the parallel at line {kernel.span.line} has {size} blocks along grid axis {'xyz'[axis]}, not a "
                f"multiple of its clusters' {dim}: a grid is made of whole clusters"
            )
    return None


class Structure:
    """Static facts about a function's parallel statements: which clause belongs to which parallel,
    which parallel is nested in which, and the levels the analysis gave each clause."""

    def __init__(self, levels_of: dict[int, tuple[Level, ...]], body: ast.Stmt) -> None:
        self.levels_of = levels_of
        self.owner: dict[int, tuple[ast.Parallel, int]] = {}  # id(clause) -> its parallel, its position
        self.nested: dict[int, ast.Parallel | None] = {}  # id(parallel) -> the first parallel inside it
        self.kernels: list[ast.Parallel] = []  # the outermost block-level parallels, in source order
        self.cluster_of: dict[int, ast.Parallel] = {}  # id(kernel) -> the cluster parallel around it
        for stmt in ast.walk_statements(body):
            if isinstance(stmt, ast.Parallel):
                for position, clause in enumerate(stmt.clauses):
                    self.owner[id(clause)] = (stmt, position)
                self.nested[id(stmt)] = next(inner_parallels(stmt.body), None)
        for stmt in body_statements(body):
            for outer in inner_parallels(stmt):
                kernel = self.kernel_at(outer)
                if kernel is not None:
                    self.kernels.append(kernel)
                    if kernel is not outer:
                        self.cluster_of[id(kernel)] = outer

    def kernel_at(self, stmt: ast.Parallel) -> ast.Parallel | None:
        """The kernel an outermost parallel launches: itself, or the parallel inside a cluster."""
        if not is_cluster(stmt, self.levels_of):
            return stmt
        return self.nested.get(id(stmt))

    def first_below_block(self, stmt: ast.Parallel) -> int:
        """The position of the first clause of `stmt` that is not a block level."""
        levels = self.levels_of[id(stmt)]
        return next((i for i, level in enumerate(levels) if level != Level.BLOCK), len(levels))

    def kernel_of(self, context: Context) -> ast.Parallel | None:
        """The kernel (outermost block-level parallel) a statement belongs to; None at host level (and
        directly in a cluster's body)."""
        levels = [scope for scope in context.levels if scope.level != Level.CLUSTER]
        if not levels:
            return None
        return self.owner[id(levels[0].clause)][0]


def body_statements(body: ast.Stmt) -> tuple[ast.Stmt, ...]:
    return body.body if isinstance(body, ast.Block) else (body,)


class KernelLaunch:
    """One kernel: the threads of a block, how they are numbered, and who runs each statement."""

    def __init__(
        self,
        structure: Structure,
        kernel: ast.Parallel,
        counts: Counts,
        declared: Callable[[object, str], Symbol | None],
        symbol_of: dict[int, Symbol],
    ) -> None:
        self.structure = structure
        self.kernel = kernel
        self.counts = counts
        self._declared = declared
        self._symbol_of = symbol_of
        self._sizes: dict[tuple[int, int], Dim] = {}
        self._reach: dict[tuple[tuple[int, ...], tuple[int, ...]], frozenset[int] | None] = {}
        self.first_inner = structure.first_below_block(kernel)
        self.block_size = self.size_of(kernel, self.first_inner)
        self.cluster = self._cluster_shape()

    def _cluster_shape(self) -> ClusterShape | None:
        """The clusters of this kernel's grid; None without a cluster level (or with a count that is
        not a compile-time constant, which the analysis reports)."""
        parallel = self.structure.cluster_of.get(id(self.kernel))
        if parallel is None:
            return None
        counts = self.counts(parallel.clauses[0])
        if not all(isinstance(count, int) and count > 0 for count in counts) or len(counts) > 3:
            return None
        dims = (*(int(count) for count in counts), 1, 1, 1)[:3]
        return ClusterShape(parallel, (dims[0], dims[1], dims[2]))

    @property
    def is_static(self) -> bool:
        """Whether the block size is known: every count below the block is a compile-time constant."""
        return isinstance(self.block_size, int)

    @property
    def threads(self) -> int:
        """Threads per block, for a static launch (or one the sim bound)."""
        return _known(self.block_size, self.kernel)

    def symbolic_clause(self) -> ast.ParallelClause | None:
        """The first clause below the block level whose count is not a compile-time constant."""
        for stmt in ast.walk_statements(self.kernel):
            if isinstance(stmt, ast.Parallel):
                for clause, level in zip(stmt.clauses, self.structure.levels_of[id(stmt)]):
                    if level != Level.BLOCK and not all(isinstance(c, int) for c in self.counts(clause)):
                        return clause
        return None

    # ------------------------------------------------------------------ sizes

    def size_of(self, stmt: ast.Parallel, start: int) -> Dim:
        """Threads that clauses `start`.. of `stmt`, and the parallels nested inside it, make: a number,
        or the text of a size that depends on the arguments."""
        key = (id(stmt), start)
        if key not in self._sizes:
            total = self._inner(stmt)
            levels = self.structure.levels_of[id(stmt)]
            for clause, level in zip(stmt.clauses[start:], levels[start:]):
                if level not in GRID_LEVELS:
                    total = fold("*", total, product(self.counts(clause)))
            self._sizes[key] = total
        return self._sizes[key]

    def _inner(self, stmt: ast.Parallel) -> Dim:
        nested = self.structure.nested[id(stmt)]
        if nested is not None:
            return self.size_of(nested, 0)
        return self.structure.levels_of[id(stmt)][-1].unit or 1

    def size(self, stmt: ast.Parallel, start: int) -> int:
        return _known(self.size_of(stmt, start), stmt)

    def inner(self, stmt: ast.Parallel) -> int:
        """Threads in one instance of the innermost level of `stmt`."""
        return _known(self._inner(stmt), stmt)

    def unit(self, scope: LevelScope) -> int:
        """Threads per instance of a level that encloses a statement."""
        stmt, position = self.structure.owner[id(scope.clause)]
        return self.size(stmt, position + 1)

    def body_unit(self, stmt: ast.Parallel) -> int:
        """Threads per execution of a statement in the body of `stmt`: 1 where each thread runs it,
        one instance of the innermost level where parallels nested in the body make the threads."""
        return self.inner(stmt) if self.structure.nested[id(stmt)] is not None else 1

    def execution_unit(self, context: Context) -> int:
        """Threads per execution of a statement: 1 where each thread runs it, more between levels."""
        if not context.levels:
            return self.threads
        stmt, _ = self.structure.owner[id(context.levels[-1].clause)]
        return self.body_unit(stmt)

    def issuing_unit(self, context: Context, family: Family) -> int:
        """Threads per instance of the level that runs a dma, tma or mma operation (12.2)."""
        levels = context.levels
        if not levels:
            return self.threads
        if family == "dma":
            return self.unit(levels[-1])
        if family == "mma":
            warpgroups = [scope for scope in levels if scope.level == Level.WARPGROUP]
            if warpgroups:
                return self.unit(warpgroups[-1])
        above_thread = [scope for scope in levels if scope.level != Level.THREAD]
        return self.unit(above_thread[-1]) if above_thread else self.threads

    def register_unit(self, context: Context) -> int:
        """Threads per instance that hold one copy of a fragment at a statement (`register_owner`)."""
        owner = register_owner(context)
        if owner.from_threads and owner.level is not None:
            return owner.level.unit or 1
        return self.issuing_unit(context, "mma")

    # ------------------------------------------------------------------ thread variables

    def variables(self, stmt: ast.Parallel, start: int, stop: int | None = None) -> list[ThreadVariable]:
        """The variables of the sub-block clauses start..stop of `stmt`, outermost first."""
        result: list[ThreadVariable] = []
        for position in range(start, len(stmt.clauses) if stop is None else stop):
            if self.structure.levels_of[id(stmt)][position] in GRID_LEVELS:
                continue
            clause = stmt.clauses[position]
            names = clause.variables.names if clause.variables else ()
            stride = self.size(stmt, position + 1)
            clause_variables: list[ThreadVariable] = []
            for index, extent in reversed(list(enumerate(self.counts(clause)))):
                name = names[index].id if index < len(names) else ""
                symbol = self._declared(stmt, name) if name else None
                count = _known(extent, clause)
                clause_variables.insert(0, ThreadVariable(name, symbol, count, stride))
                stride *= count
            result.extend(clause_variables)
        return result

    def clause_variables(self, clause: ast.ParallelClause) -> list[ThreadVariable]:
        stmt, position = self.structure.owner[id(clause)]
        return self.variables(stmt, position, position + 1)

    # ------------------------------------------------------------------ sizes the arguments give

    def size_factors(self, stmt: ast.Parallel, start: int) -> tuple[Factor, ...]:
        """`size_of(stmt, start)` as factors: the count of each variable of clauses start.., then those of
        the first nested parallel, or the unit of the innermost level. A count the arguments give is its
        expression (which the host evaluates at a call, the CUDA lowering renders)."""
        factors: list[Factor] = []
        for clause in stmt.clauses[start:]:
            factors.extend(self._clause_factors(clause))
        nested = self.structure.nested[id(stmt)]
        if nested is not None:
            factors.extend(self.size_factors(nested, 0))
        elif self.structure.levels_of[id(stmt)][-1].unit not in (None, 1):
            factors.append(self.structure.levels_of[id(stmt)][-1].unit or 1)
        return tuple(factors)

    def block_factors(self) -> tuple[Factor, ...]:
        """The factors of the block size: the threads below the kernel's block level."""
        return self.size_factors(self.kernel, self.first_inner)

    def _clause_factors(self, clause: ast.ParallelClause) -> tuple[Factor, ...]:
        counts, items = self.counts(clause), count_items(clause)
        if len(counts) != len(items) and not all(isinstance(count, int) for count in counts):
            raise UnknownSize(
                clause
            )  # a shape whose dimensions the arguments give, spliced in: no expressions
        if len(counts) != len(items):
            return tuple(int(count) for count in counts)
        return tuple(count if isinstance(count, int) else item for count, item in zip(counts, items))

    def symbolic_variables(self, clause: ast.ParallelClause) -> list[SymbolicVariable]:
        """The variables of a sub-block clause, outermost first, for a launch whose block size the
        arguments give (`variables` for static ones)."""
        stmt, position = self.structure.owner[id(clause)]
        if self.structure.levels_of[id(stmt)][position] in GRID_LEVELS:
            return []
        names = clause.variables.names if clause.variables else ()
        stride = list(self.size_factors(stmt, position + 1))
        factors = self._clause_factors(clause)
        outermost = stmt is self.kernel and position == self.first_inner
        result: list[SymbolicVariable] = []
        for index in reversed(range(len(factors))):
            name = names[index].id if index < len(names) else ""
            symbol = self._declared(stmt, name) if name else None
            spans = outermost and index == 0
            result.insert(0, SymbolicVariable(name, symbol, factors[index], tuple(stride), spans))
            stride.append(factors[index])
        return result

    # ------------------------------------------------------------------ who reaches, who issues

    def reach(self, context: Context, lookup: Lookup | None = None) -> frozenset[int] | None:
        """The threads of a block whose levels and `inthreads` predicates reach a statement; None when
        that depends on something unknown here (a block index, a value that `lookup` cannot give)."""
        key = (tuple(id(scope.clause) for scope in context.levels), tuple(map(id, context.predicates)))
        if lookup is None and key in self._reach:
            return self._reach[key]
        reached = self._evaluate_reach(context, lookup)
        if lookup is None:
            self._reach[key] = reached
        return reached

    def _evaluate_reach(self, context: Context, lookup: Lookup | None) -> frozenset[int] | None:
        if not self.is_static:
            return None
        if not context.predicates:
            return frozenset(range(self.threads))
        if self.threads > MAX_ENUMERATED_THREADS:
            return None
        variables = [v for scope in context.levels for v in self.clause_variables(scope.clause)]
        reached: set[int] = set()
        for thread in range(self.threads):
            values = {v.symbol: v.at(thread) for v in variables if v.symbol is not None}

            def value_of(name: ast.Name, values: dict[Symbol, int] = values) -> HostValue:
                symbol = self._symbol_of.get(id(name))
                if symbol is not None and symbol in values:
                    return values[symbol]
                if lookup is None:
                    raise NotEvaluable(name)
                return lookup(name)

            try:
                if all(evaluate(predicate, value_of) for predicate in context.predicates):
                    reached.add(thread)
            except (NotEvaluable, ArithmeticError):
                return None
        return frozenset(reached)

    def issuers(self, context: Context, family: Family) -> frozenset[int] | None:
        """The thread that issues an operation for each instance of its level: the first that reaches it."""
        threads = self.reach(context)
        if threads is None:
            return None
        unit = self.issuing_unit(context, family)
        first: dict[int, int] = {}
        for thread in sorted(threads):
            first.setdefault(thread // unit, thread)
        return frozenset(first.values())

    def covers_instances(self, context: Context, family: Family) -> bool:
        """Whether every thread of each issuing instance that reaches a statement reaches it (only then
        may the instance synchronize there)."""
        return self.covers_units(context, self.issuing_unit(context, family))

    def covers_units(self, context: Context, unit: int) -> bool:
        """Whether the threads that reach a statement are whole aligned runs of `unit` threads (whole
        warps, whole warpgroups): only then may each run meet at a barrier of its own there."""
        threads = self.reach(context)
        if threads is None:
            return False
        return all(
            thread in threads
            for first in {t // unit * unit for t in threads}
            for thread in range(first, first + unit)
        )


class FunctionLaunches:
    """The launches of one function, with the counts the analysis knows (numbers where they are
    compile-time constants, the text of symbolic sizes elsewhere), and the means to bind symbolic
    counts with the values of a call."""

    def __init__(
        self,
        function: ast.Function,
        levels_of: dict[int, tuple[Level, ...]],
        counts_of: dict[int, tuple[Dim, ...]],
        declared: Callable[[object, str], Symbol | None],
        symbol_of: dict[int, Symbol],
    ) -> None:
        self.structure = Structure(levels_of, function.body)
        self._declared = declared
        self._symbol_of = symbol_of
        self.kernels = {
            id(kernel): self.bind(kernel, lambda clause: counts_of.get(id(clause), ("?",)))
            for kernel in self.structure.kernels
        }

    def bind(self, kernel: ast.Parallel, counts: Counts) -> KernelLaunch:
        """The launch of `kernel` with its counts given by `counts` (the sim's, from a call's values)."""
        return KernelLaunch(self.structure, kernel, counts, self._declared, self._symbol_of)

    def of(self, context: Context) -> KernelLaunch | None:
        """The launch of the kernel a statement belongs to; None at host level."""
        kernel = self.structure.kernel_of(context)
        return self.kernels[id(kernel)] if kernel is not None else None

    def launch(self, kernel: ast.Parallel) -> KernelLaunch:
        return self.kernels[id(kernel)]


class UnknownSize(Exception):
    """A size the launch has only as text (`N / 4`) where a number is needed."""

    def __init__(self, node: ast.Node) -> None:
        super().__init__("a thread count below the block level is not known at compile time")
        self.node = node


def _known(size: Dim, node: ast.Node) -> int:
    if not isinstance(size, int):
        raise UnknownSize(node)
    return size
