"""Barriers, fences, named barriers, `yield`, `assert`, `print` and `while (event)` inside a kernel.

Every wait these add is bounded like an event wait (a grid barrier of a cooperative launch, a
`while (event)` spin) and a failed `assert` is recorded in the launch's status, not trapped: the host
raises the error, naming the statement, and the process's GPU stays usable. `yield` is a `return`;
since a thread that has returned never arrives at a warp or warpgroup barrier (only the block-wide
`__syncthreads` counts it out), a kernel that has both is refused.
"""

from __future__ import annotations

from choreo_kernel.compiler import ast, printer
from choreo_kernel.compiler.analysis.values import Scalar
from choreo_kernel.compiler.cuda import cexpr, elements
from choreo_kernel.compiler.cuda.cexpr import CExpr
from choreo_kernel.compiler.cuda.context import KernelContext
from choreo_kernel.compiler.cuda.plan import WaitSite
from choreo_kernel.compiler.cuda.threads import THREAD_INDEX
from choreo_kernel.compiler.cuda.views import IndexTuple, LoweringError, Operand, ShapeValue, View
from choreo_kernel.compiler.semantics.levels import WARP_THREADS, WARPGROUP_THREADS, Level
from choreo_kernel.compiler.semantics.printing import BOOLEAN, FLOATING, UNSIGNED, Piece, c_format

# Lines of a kernel that a thread which has returned would hold up forever.
_COUNTED_BARRIERS = ("choreo::named_barrier_", "__syncwarp", "mbarrier_arrive_warp")


class ControlStatements(KernelContext):
    """The lowering of barriers, fences, `yield`, `assert`, `print` and event predicates."""

    def _site(self, stmt: ast.Stmt, kind: str, event: str = "", message: str = "") -> int:
        """The index of a new reporting site for `stmt` in the function's table (plan.WaitSite)."""
        self.events.wait_sites.append(
            WaitSite(event, stmt.span.line, printer.statement(stmt), kind, message, stmt.span)
        )
        return len(self.events.wait_sites) - 1

    # ------------------------------------------------------------------ barriers and fences

    def _Barrier(self, stmt: ast.Barrier, tail: bool) -> None:
        context = self.info.context_of[id(stmt)]
        if stmt.level in ("block", "device") and context.cooperative:
            self.out.source(stmt, "every block of the cooperative launch meets")
            self.syncs_grid = True
            site = self._site(stmt, "barrier")
            self.out.line(f"choreo::grid_sync({self.grid_barrier}, {self.status}, {site});")
            return
        self.out.source(stmt)
        if self._divergent(stmt) and not self._meets_whole(stmt):
            raise LoweringError(
                f"'sync.barrier : {stmt.level}' inside an 'inthreads' that picks some threads: the others "
                "would never arrive; put the barrier where every thread of the level runs",
                stmt,
            )
        if stmt.level == "block":
            self.out.line("__syncthreads();")
        elif stmt.level == "group-4":
            if self.threads.static_block_threads() % WARPGROUP_THREADS:
                raise LoweringError(
                    f"'sync.barrier : group-4' needs whole warpgroups; this block has {self.threads.static_block_threads()} threads",
                    stmt,
                )
            self.out.line(
                f"choreo::named_barrier_sync(1 + {THREAD_INDEX.text} / {WARPGROUP_THREADS}, {WARPGROUP_THREADS});  "
                "// this warpgroup's threads meet"
            )
        else:
            self.out.line("__syncwarp();  // this warp's threads meet")

    def _meets_whole(self, stmt: ast.Barrier) -> bool:
        """A warp or warpgroup barrier inside an `inthreads` that picks whole warps or warpgroups (`wg > 0`):
        each one that runs it meets at a barrier of its own, which all its threads reach."""
        unit = {"group-4": WARPGROUP_THREADS, "group": WARP_THREADS}.get(stmt.level)
        return unit is not None and self.threads.launch.covers_units(self.info.context_of[id(stmt)], unit)

    def _Fence(self, stmt: ast.Fence, tail: bool) -> None:
        self.out.source(stmt)
        if stmt.level in ("block", "device"):
            self.out.line("__threadfence();  // membar.gl: ordered for every thread of the device")
        else:
            self.out.line("__threadfence_block();  // membar.cta: ordered for the threads of this block")

    def _NamedBarrier(self, stmt: ast.NamedBarrier, tail: bool) -> None:
        self.out.source(stmt)
        barrier = self.expressions.integer(stmt.barrier)
        count = self.expressions.integer(stmt.count)
        self.named_barriers.append((stmt, barrier.value))
        function = "named_barrier_sync" if stmt.waits else "named_barrier_arrive"
        self.out.line(f"choreo::{function}({barrier.text}, {count.text});")

    # ------------------------------------------------------------------ yield, assert and print

    def _Yield(self, stmt: ast.Yield, tail: bool) -> None:
        self.out.source(stmt)
        self.yields.append(stmt)
        self.out.line("return;  // this thread leaves the kernel")

    def _Assert(self, stmt: ast.Assert, tail: bool) -> None:
        known = self.info.value_of.get(id(stmt.condition))
        if isinstance(known, Scalar) and isinstance(known.const, int) and known.const:
            self.out.source(stmt, "true at compile time: nothing to check")
            return
        self.out.source(stmt)
        condition = self.expressions.integer(stmt.condition)
        site = self._site(stmt, "assert", message=stmt.message)
        self.out.line(f"if (!({condition.text})) choreo::assertion_fails({self.status}, {site});")

    def _Print(self, stmt: ast.Print, tail: bool) -> None:
        if stmt.compile_time:
            self.out.source(stmt, "printed when the source compiled")
            return
        self.out.source(stmt)
        self.prints = True
        pieces = self.info.print_formats[id(stmt)]
        values = [
            value
            for arg in stmt.args
            if not isinstance(arg, ast.StringLiteral)
            for value in self._printed(arg)
        ]
        kinds = [piece for piece in pieces if piece.values for _ in range(piece.values)]
        arguments = "".join(f", {_printf_argument(piece, value)}" for piece, value in zip(kinds, values))
        call = f"printf({c_format(pieces, stmt.newline)}{arguments});"
        group = self._group(stmt)
        if group.level == Level.THREAD:
            self.out.line(call)
        else:
            self.out.line(f"if ({group.leader.text}) {call}  // once per {group.level} instance")

    def _printed(self, arg: ast.Expr) -> list[Operand]:
        value = self.expressions.value(arg)
        if isinstance(value, ShapeValue | View):
            return [Operand(dim, "s32") for dim in value.dims]
        if isinstance(value, Operand):
            return [value]
        if isinstance(value, IndexTuple):  # a bounded ituple: its elements' current values
            return list(value.items)
        raise LoweringError("print takes strings, scalars, shapes and ituples", arg)

    def unroll_pragma(self, stmt: ast.Foreach | ast.ForeachRange) -> None:
        """`foreach ... : unroll(N)` unrolls its outermost loop N times (`: unroll`, all the way)."""
        if stmt.hint is None or stmt.hint.name != "unroll":
            return
        factor = self.expressions.constant(stmt.hint.args[0], "the unroll factor") if stmt.hint.args else None
        self.out.line(f"#pragma unroll{f' {factor}' if factor is not None else ''}")

    # ------------------------------------------------------------------ while (event)

    def is_event_loop(self, stmt: ast.While) -> bool:
        """`while (e)`, `while (a && b[0])`: a condition on events (the analysis checked it is only that)."""
        return self._first_event(stmt.condition) != ""

    def event_loop_head(self, stmt: ast.While) -> str:
        """The head of `while (e) { ... }`, which spins while the generations the condition names are
        pending, bounded; its clock is declared first, in the block the caller has opened for the loop."""
        self.out.source(stmt, "spins while the event's generation is pending")
        site = self._site(stmt, "spin", self._first_event(stmt.condition))
        start = self.names.local("spin_start")
        self.out.line(f"unsigned long long {start} = 0;  // when the loop first found the generation pending")
        pending = self._pending(stmt.condition)
        return f"while (choreo::spinning({pending.text}, {start}, {self.status}, {site}))"

    def _pending(self, expr: ast.Expr) -> CExpr:
        if isinstance(expr, ast.Paren):
            return cexpr.parenthesized(self._pending(expr.inner))
        if isinstance(expr, ast.Unary) and expr.op == "!":
            return cexpr.unary("!", self._pending(expr.operand))
        if isinstance(expr, ast.Binary) and expr.op in ("&&", "||"):
            return cexpr.binary(expr.op, self._pending(expr.left), self._pending(expr.right))
        return self.events.pending(expr)

    def _first_event(self, expr: ast.Expr) -> str:
        for node in ast.walk_expr(expr):
            symbol = self.info.event_named(node)
            if symbol is not None:
                return symbol.name
        return ""

    # ------------------------------------------------------------------ what the whole kernel must satisfy

    def check_control(self, text: str) -> None:
        """Refuse what the kernel as a whole cannot do: a `yield` where warp or warpgroup barriers follow,
        a named barrier that takes a warpgroup's id."""
        if self.yields and self.threads.launch.cluster is not None:
            raise LoweringError(
                "'yield' in a kernel of thread-block clusters: its blocks meet at a cluster barrier before they exit, "
                "which a thread that has left never reaches; end the thread's work with an 'if' instead",
                self.yields[0],
            )
        if self.yields and any(marker in text for marker in _COUNTED_BARRIERS):
            raise LoweringError(
                "'yield' in a kernel with warp or warpgroup barriers: a thread that has left never arrives "
                "at them, which would hang the GPU; end the thread's work with an 'if' instead",
                self.yields[0],
            )
        warpgroups = (self.threads.block_threads or 0) // WARPGROUP_THREADS
        if f"named_barrier_sync(1 + {THREAD_INDEX.text} / {WARPGROUP_THREADS}" not in text:
            return  # no warpgroup barrier of the lowering's own: every id is the user's
        for stmt, barrier in self.named_barriers:
            if barrier is not None and 1 <= barrier <= warpgroups:
                raise LoweringError(
                    f"named barrier {barrier} is the one this kernel's warpgroup {barrier - 1} synchronizes on; "
                    f"use an id from {warpgroups + 1} to 15",
                    stmt,
                )


def _printf_argument(piece: Piece, value: Operand) -> str:
    if piece.kind == BOOLEAN:
        return f'({value.expr.text} ? "true" : "false")'
    if piece.kind == FLOATING:
        widened, _ = elements.widen(value.expr, value.type)
        return f"static_cast<double>({widened.text})"
    c_type = "unsigned long long" if piece.kind == UNSIGNED else "long long"
    return f"static_cast<{c_type}>({value.expr.text})"
