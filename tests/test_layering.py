"""The package's layering, read off its import statements (every one: module level, inside functions,
under TYPE_CHECKING): the compiler core stands alone, the kernel does not reach into the CLI, and no
module imports itself through others."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "choreo_kernel"
CORE = "choreo_kernel.compiler"
OUTSIDE_THE_CORE = (
    "choreo_kernel.runtime",
    "choreo_kernel.kernel",
    "choreo_kernel.cli",
    "choreo_kernel.module",
)
MAX_LINES = 800


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """The package's modules that module `name` imports (`from pkg import sub` names the submodule)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parents, *([base] if base else [])])
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: imports_of(name) for name in MODULES}


def test_the_compiler_core_imports_nothing_outside_it() -> None:
    offending = {
        name: sorted(d for d in deps if d == "choreo_kernel" or d.startswith(OUTSIDE_THE_CORE))
        for name, deps in GRAPH.items()
        if name.startswith(CORE)
    }
    assert not {name: deps for name, deps in offending.items() if deps}


def test_the_kernel_does_not_import_the_cli() -> None:
    assert not [
        name
        for name, deps in GRAPH.items()
        if name.startswith("choreo_kernel.kernel") and "choreo_kernel.cli" in deps
    ]


def _cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(GRAPH):
        if root in index:
            continue
        work = [(root, iter(sorted(GRAPH[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(GRAPH[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def test_no_import_cycles() -> None:
    assert _cycles() == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    GRAPH["choreo_kernel.compiler.ast"] = GRAPH["choreo_kernel.compiler.ast"] | {
        "choreo_kernel.compiler.driver"
    }
    try:
        assert any("choreo_kernel.compiler.ast" in component for component in _cycles())
    finally:
        GRAPH["choreo_kernel.compiler.ast"] = imports_of("choreo_kernel.compiler.ast")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_stay_small(name: str) -> None:
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines; split it along its jobs"
