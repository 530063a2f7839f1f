"""Every pass has a case for every kind of syntax node, so a new statement or expression kind that one
pass misses fails here rather than reaching a user as an AttributeError, a KeyError, a lowering error
or a comment printed as `;`. The passes dispatch on the node's class, by name or through a table."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest

from choreo_kernel.compiler import ast, printer
from choreo_kernel.compiler.analysis import flow
from choreo_kernel.compiler.analysis.resolve import Resolver
from choreo_kernel.compiler.cuda.expressions import Expressions
from choreo_kernel.compiler.cuda.statements import KernelEmitter
from choreo_kernel.compiler.graph import build
from choreo_kernel.runtime.sim.expressions import Evaluator
from choreo_kernel.runtime.sim.interpreter import Interpreter


def kinds(base: type[ast.Node]) -> list[type[ast.Node]]:
    """The concrete node classes of the syntax tree that derive from `base`."""
    return [
        node
        for node in vars(ast).values()
        if inspect.isclass(node)
        and issubclass(node, base)
        and node is not base
        and node.__module__ == ast.__name__
    ]


STATEMENTS = kinds(ast.Stmt)
EXPRESSIONS = kinds(ast.Expr)


def _method(owner: type, prefix: str) -> Callable[[type], bool]:
    return lambda kind: callable(getattr(owner, f"{prefix}{kind.__name__}", None))


def _table(table: dict[type, str], owner: type) -> Callable[[type], bool]:
    return lambda kind: kind in table and callable(getattr(owner, table[kind], None))


PASSES: dict[str, tuple[list[type[ast.Node]], Callable[[type], bool]]] = {
    "resolver-statements": (STATEMENTS, _method(Resolver, "_stmt_")),
    "resolver-expressions": (EXPRESSIONS, _method(Resolver, "_expr_")),
    "flow-statements": (
        STATEMENTS,
        lambda kind: kind in flow.LEAVES or _table(flow.COMPOUND, flow.ForwardFlow)(kind),
    ),
    "graph-statements": (STATEMENTS, _table(build.STATEMENTS, build.GraphBuilder)),
    "cuda-statements": (STATEMENTS, _method(KernelEmitter, "_")),
    "cuda-expressions": (EXPRESSIONS, _method(Expressions, "_")),
    "sim-statements": (
        STATEMENTS,
        lambda kind: (
            _table(Interpreter.SIMPLE, Interpreter)(kind) or _table(Interpreter.COMPOUND, Interpreter)(kind)
        ),
    ),
    "sim-expressions": (EXPRESSIONS, _table(Evaluator.HANDLERS, Evaluator)),
    "printer-statements": (STATEMENTS, lambda kind: kind in printer.STATEMENTS),
    "printer-expressions": (EXPRESSIONS, lambda kind: kind in printer.EXPRESSIONS),
}
CASES = [
    pytest.param(name, kind, id=f"{name}-{kind.__name__}")
    for name, (all_kinds, _) in PASSES.items()
    for kind in all_kinds
]


def test_the_tree_has_the_node_kinds_the_passes_are_checked_against() -> None:
    assert {ast.Parallel, ast.OperationStmt, ast.Wait, ast.Trigger} <= set(STATEMENTS)
    assert {ast.Name, ast.Method, ast.Binary} <= set(EXPRESSIONS)


@pytest.mark.parametrize(("name", "kind"), CASES)
def test_every_pass_has_a_case_for_every_node_kind(name: str, kind: type[ast.Node]) -> None:
    _, handles = PASSES[name]
    assert handles(kind), f"pass '{name}' has no case for {kind.__name__}"


def test_a_flow_pass_refuses_a_statement_kind_it_does_not_know() -> None:
    """The walk dispatches on the class, with no default branch to hide a missing case."""
    assert not set(flow.LEAVES) & set(flow.COMPOUND)
    assert set(STATEMENTS) == set(flow.LEAVES) | set(flow.COMPOUND)
