"""The statement walk shared by the forward flow passes: asyncflow's futures and the graph's hand-offs.

Both follow a function in program order with a state of their own. Branches start from the
state before them and join after; loops are walked twice, so that what one trip leaves meets
the top of the body, and are taken to run at least once (a future made before a loop and
consumed in it is not pending on a zero-trip path); scopes that neither branch nor repeat
(parallel, with, blocks) pass the state straight through. What the state holds, how two states
join and what each simple statement does to it belong to the pass; what a swap or rotation does
to the futures is the same for both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Generic, TypeVar

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.resolve import FUTURE_BUILTINS, FunctionInfo
from choreo_kernel.compiler.analysis.values import Symbol

FlowState = TypeVar("FlowState")
Held = TypeVar("Held")


class ForwardFlow(ABC, Generic[FlowState]):
    """A pass over structured control flow; subclasses say what simple statements do."""

    @abstractmethod
    def _simple(self, stmt: ast.Stmt, state: FlowState) -> FlowState:
        """The effect of a statement with no statements inside (an operation, wait, declaration...)."""

    @abstractmethod
    def _copy(self, state: FlowState) -> FlowState:
        """A state a branch may change without changing `state`."""

    @abstractmethod
    def _join(self, a: FlowState, b: FlowState) -> FlowState:
        """The state after two paths meet."""

    def _condition(self, stmt: ast.If | ast.While, condition: ast.Expr, state: FlowState) -> None:
        """`if` and `while` read their condition before the body runs; by default that changes nothing."""

    def _async_path(self, stmt: ast.InThreads, state: FlowState) -> FlowState:
        """An `inthreads.async` body; by default its state flows on like any other scope's."""
        return self._body(stmt.body, state)

    def _block(self, statements: Sequence[ast.Stmt], state: FlowState) -> FlowState:
        for stmt in statements:
            state = self._statement(stmt, state)
        return state

    def _body(self, body: ast.Stmt, state: FlowState) -> FlowState:
        return self._block(body.body if isinstance(body, ast.Block) else (body,), state)

    def _statement(self, stmt: ast.Stmt, state: FlowState) -> FlowState:
        if isinstance(stmt, ast.If):
            self._condition(stmt, stmt.condition, state)
            then = self._body(stmt.then, self._copy(state))
            otherwise = self._body(stmt.otherwise, self._copy(state)) if stmt.otherwise is not None else state
            return self._join(then, otherwise)
        if isinstance(stmt, (ast.Foreach, ast.ForeachRange, ast.While)):
            if isinstance(stmt, ast.While):
                self._condition(stmt, stmt.condition, state)
            first = self._body(stmt.body, self._copy(state))
            second = self._body(stmt.body, self._join(state, first))
            return self._join(first, second)
        if isinstance(stmt, ast.InThreads) and stmt.is_async:
            return self._async_path(stmt, state)
        if isinstance(stmt, (ast.Parallel, ast.InThreads, ast.With)):
            return self._body(stmt.body, state)
        if isinstance(stmt, ast.Block):
            return self._block(stmt.body, state)
        if isinstance(stmt, ast.Unsupported) and stmt.inner is not None:
            return self._statement(stmt.inner, state)
        return self._simple(stmt, state)


def is_rotation(call: ast.Call) -> bool:
    """`swap(a, b)` and `rotate(a, b, c)` move futures between names."""
    return isinstance(call.callee, ast.Name) and call.callee.id in FUTURE_BUILTINS


def rotate_futures(info: FunctionInfo, call: ast.Call, futures: dict[Symbol, frozenset[Held]]) -> None:
    """A rotation's effect: each future variable takes what the next one held, the last the first's.

    Nothing moves unless every argument names a future (the resolver reports the others).
    """
    symbols = [info.future_named(arg) for arg in call.args]
    named = [symbol for symbol in symbols if symbol is not None]
    if len(named) < 2 or len(named) < len(symbols):
        return
    held = [futures.get(symbol, frozenset()) for symbol in named]
    for symbol, value in zip(named, held[1:] + held[:1]):
        futures[symbol] = value
