"""The statement walk shared by the forward flow passes: asyncflow's futures, the graph's hand-offs
and the CUDA lowering's WGMMA wait depths.

Each follows a function in program order with a state of its own. Branches start from the state
before them and join after; a loop's body starts from the state before the loop joined with what
a trip through the body leaves, until that stops changing (a few trips), and loops are taken to
run at least once (a future made before a loop and consumed in it is not pending on a zero-trip
path, unless the pass says otherwise); scopes that neither branch nor repeat (parallel, with,
blocks) pass the state straight through. A loop entered again with a state it has already seen
gives the state it gave then, so nested loops cost what their bodies cost, not a power of the
depth. What the state holds, how two states join and what each statement with no statements
inside does belong to the pass; what a swap or rotation does to the futures is the same for all.

Every kind of statement has a case here: `LEAVES` are the kinds with no statements inside, which
go to the pass's `_simple`; the others have a handler of their own (tests/test_passes.py checks
that every statement kind of the syntax tree is one or the other).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.builtins import FUTURE_BUILTINS
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Symbol

FlowState = TypeVar("FlowState")
Held = TypeVar("Held")

LEAVES: frozenset[type[ast.Stmt]] = frozenset(
    {
        ast.Apply,  # element-wise register work: nothing asynchronous inside (resolve/fragments.py)
        ast.FragmentOp,
        ast.Asm,
        ast.Assign,
        ast.Break,
        ast.BufferDecl,
        ast.AccumulatorArrayDecl,
        ast.Continue,
        ast.Empty,
        ast.EventDecl,
        ast.ExprStmt,
        ast.OperationStmt,
        ast.Return,
        ast.ScalarDecl,
        ast.ShapeDecl,
        ast.Sync,
        ast.Trigger,
        ast.TupleDecl,
        ast.Unsupported,
        ast.Wait,
        ast.Barrier,
        ast.Fence,
        ast.NamedBarrier,
        ast.Yield,
        ast.Assert,
        ast.Print,
    }
)
MAX_LOOP_TRIPS = 8  # trips through a loop body before its entry state is taken as settled


class ForwardFlow(ABC, Generic[FlowState]):
    """A pass over structured control flow; subclasses say what simple statements do."""

    loops_run_at_least_once = True

    @abstractmethod
    def _simple(self, stmt: ast.Stmt, state: FlowState) -> FlowState:
        """The effect of a statement with no statements inside (an operation, wait, declaration...)."""

    @abstractmethod
    def _copy(self, state: FlowState) -> FlowState:
        """A state a branch may change without changing `state`."""

    @abstractmethod
    def _join(self, a: FlowState, b: FlowState) -> FlowState:
        """The state after two paths meet."""

    @abstractmethod
    def _key(self, state: FlowState) -> Hashable:
        """A value equal for equal states: a loop stops when its entry state's key repeats."""

    def _condition(self, stmt: ast.If | ast.While, condition: ast.Expr, state: FlowState) -> None:
        """`if` and `while` read their condition before the body runs; by default that changes nothing."""

    def _async_path(self, stmt: ast.InThreads, state: FlowState) -> FlowState:
        """An `inthreads.async` body; by default its state flows on like any other scope's."""
        return self._body(stmt.body, state)

    # ------------------------------------------------------------------ the walk

    def _walk(self, statements: Sequence[ast.Stmt], state: FlowState) -> FlowState:
        """A walk of a whole function body, with the loops' remembered results of any earlier walk dropped."""
        self._loop_results: dict[tuple[int, Hashable], FlowState] = {}
        return self._block(statements, state)

    def _block(self, statements: Sequence[ast.Stmt], state: FlowState) -> FlowState:
        for stmt in statements:
            state = self._statement(stmt, state)
        return state

    def _body(self, body: ast.Stmt, state: FlowState) -> FlowState:
        return self._block(body.body if isinstance(body, ast.Block) else (body,), state)

    def _statement(self, stmt: ast.Stmt, state: FlowState) -> FlowState:
        kind = type(stmt)
        if kind in LEAVES:
            if isinstance(stmt, ast.Unsupported) and stmt.inner is not None:
                return self._statement(stmt.inner, state)
            return self._simple(stmt, state)
        handler: Callable[[ast.Stmt, FlowState], FlowState] = getattr(self, COMPOUND[kind])
        return handler(stmt, state)

    def _if(self, stmt: ast.If, state: FlowState) -> FlowState:
        self._condition(stmt, stmt.condition, state)
        then = self._body(stmt.then, self._copy(state))
        otherwise = self._body(stmt.otherwise, self._copy(state)) if stmt.otherwise is not None else state
        return self._join(then, otherwise)

    def _loop(self, stmt: ast.Foreach | ast.ForeachRange | ast.While, state: FlowState) -> FlowState:
        if isinstance(stmt, ast.While):
            self._condition(stmt, stmt.condition, state)
        key = (id(stmt), self._key(state))
        if key in self._loop_results:
            return self._copy(self._loop_results[key])
        entry = state
        after = self._body(stmt.body, self._copy(entry))
        for _ in range(MAX_LOOP_TRIPS):
            widened = self._join(state, after)
            if self._key(widened) == self._key(entry):
                break
            entry = widened
            after = self._join(after, self._body(stmt.body, self._copy(entry)))
        result = after if self.loops_run_at_least_once else self._join(state, after)
        self._loop_results[key] = self._copy(result)
        return result

    def _inthreads(self, stmt: ast.InThreads, state: FlowState) -> FlowState:
        if stmt.is_async:
            return self._async_path(stmt, state)
        return self._body(stmt.body, state)

    def _scope(self, stmt: ast.Parallel | ast.With, state: FlowState) -> FlowState:
        return self._body(stmt.body, state)

    def _nested_block(self, stmt: ast.Block, state: FlowState) -> FlowState:
        return self._block(stmt.body, state)


# The statements with statements inside, and the method of ForwardFlow (which a pass may override) for each.
COMPOUND: dict[type[ast.Stmt], str] = {
    ast.If: "_if",
    ast.Foreach: "_loop",
    ast.ForeachRange: "_loop",
    ast.While: "_loop",
    ast.InThreads: "_inthreads",
    ast.Parallel: "_scope",
    ast.With: "_scope",
    ast.Block: "_nested_block",
}


def is_rotation(call: ast.Call) -> bool:
    """`swap(a, b)` and `rotate(a, b, c)` move futures between names."""
    return isinstance(call.callee, ast.Name) and call.callee.id in FUTURE_BUILTINS


def rotate_futures(info: FunctionInfo, call: ast.Call, futures: dict[Symbol, Held], unset: Held) -> None:
    """A rotation's effect: each future variable takes what the next one held (`unset` where it held
    nothing), the last the first's. Nothing moves unless every argument names a future (the
    resolver reports the others)."""
    symbols = [info.future_named(arg) for arg in call.args]
    named = [symbol for symbol in symbols if symbol is not None]
    if len(named) < 2 or len(named) < len(symbols):
        return
    held = [futures.get(symbol, unset) for symbol in named]
    for symbol, value in zip(named, held[1:] + held[:1]):
        futures[symbol] = value
