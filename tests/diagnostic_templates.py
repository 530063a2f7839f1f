"""Every diagnostic message the compiler can emit, read from its source as templates.

A template is a message with its variable parts as wildcards: `'{…}' is not declared{…}`.
They are found where messages are made: the first argument of a sink call (`.error`,
`.warning`, `.target_rule`, `.hopper_rule`); the strings a function returns when its result
is such an argument (`sink.error(_unwaited_read(...), ...)`, `sink.error(*_describe(...))`);
and the messages of the preprocessor's `_MacroError`, which become diagnostics where they are
caught. tests/test_docs.py checks that the diagnostics page shows each of them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

COMPILER = Path(__file__).resolve().parent.parent / "choreo_kernel" / "compiler"
SINK_METHODS = {"error", "warning", "target_rule", "hopper_rule"}
WILDCARD = "{…}"


@dataclass(frozen=True)
class Template:
    text: str  # the message with WILDCARD for each variable part
    where: str  # file:line in the compiler

    @property
    def pattern(self) -> re.Pattern[str]:
        """The whole message, or its end after a `: ` (a message wrapped by another: `in '#if': ...`)."""
        parts = [re.escape(part) for part in self.text.split(WILDCARD)]
        return re.compile("(?:^|: )" + "(.+?)".join(parts) + "$", re.DOTALL)

    def matches(self, message: str) -> bool:
        return self.pattern.search(message) is not None


def _text(node: ast.AST) -> str | None:
    """The template of a string expression, or None when it is not one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(value.value if isinstance(value, ast.Constant) else WILDCARD for value in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        if left is None and right is None:
            return None
        return (WILDCARD if left is None else left) + (WILDCARD if right is None else right)
    return None


def _message_argument(call: ast.Call) -> ast.AST | None:
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in SINK_METHODS:
        return None
    arguments = call.args[1:] if call.func.attr == "target_rule" else call.args
    return arguments[0] if arguments else None


def _called_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Starred):
        node = node.value
    if isinstance(node, ast.Call):
        function = node.func
        return function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)
    return None


def _returned_texts(function: ast.FunctionDef) -> list[tuple[str, int]]:
    """The strings `function` returns as a message: returned directly, first in a tuple, or by name."""
    named: dict[str, list[tuple[str, int]]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            text = _text(node.value)
            if text is not None:
                named.setdefault(node.targets[0].id, []).append((text, node.lineno))
    found = []
    for node in ast.walk(function):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        value = node.value.elts[0] if isinstance(node.value, ast.Tuple) else node.value
        text = _text(value)
        if text is not None:
            found.append((text, node.lineno))
        elif isinstance(value, ast.Name):
            found.extend(named.get(value.id, []))
    return found


def templates() -> list[Template]:
    found: dict[str, Template] = {}

    def add(text: str, path: Path, line: int) -> None:
        found.setdefault(text, Template(text, f"{path.relative_to(COMPILER.parent.parent)}:{line}"))

    for path in sorted(COMPILER.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        builders: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            argument = _message_argument(node)
            if argument is not None:
                text = _text(argument)
                if text is not None:
                    add(text, path, node.lineno)
                elif (name := _called_name(argument)) is not None:
                    builders.add(name)
            elif _called_name(node) == "_MacroError" and node.args and (text := _text(node.args[0])):
                add(text, path, node.lineno)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in builders:
                for text, line in _returned_texts(node):
                    add(text, path, line)
    return list(found.values())
