"""The statement walk shared by the forward flow passes: asyncflow's futures and the graph's hand-offs.

Both follow a function in program order with a state of their own. Branches start from the
state before them and join after; loops are walked twice, so that what one trip leaves meets
the top of the body, and are taken to run at least once (a future made before a loop and
consumed in it is not pending on a zero-trip path); scopes that neither branch nor repeat
(parallel, with, blocks) pass the state straight through. What the state holds, how two states
join and what each simple statement does to it belong to the pass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Generic, TypeVar

from choreo_kernel.compiler import ast

FlowState = TypeVar("FlowState")


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
