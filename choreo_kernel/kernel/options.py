"""The options line of a Choreo cell: `%%choreo --graph --cuda --target sim -D TILE_K=64`.

A bad option is a diagnostic on the header line itself, rendered like any other error,
so the user sees the caret under the word to fix.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field

from choreo_kernel.cli import parse_define
from choreo_kernel.compiler.diagnostics import ERROR, ChoreoError, Diagnostic, Span
from choreo_kernel.kernel.cells import Cell

TARGETS = ("auto", "sim", "cuda")
FLAGS = ("--graph", "--cuda", "--target", "-D")
FLAGS_WITH_VALUES = ("--target", "-D")
USAGE = "the options are --graph, --cuda, --target auto|sim|cuda and -D NAME[=VALUE]"


@dataclass(frozen=True)
class CellOptions:
    graph: bool = False  # show each function's dependency graph
    cuda: bool = False  # show the emitted CUDA C++
    target: str = "auto"
    defines: dict[str, object] = field(default_factory=dict)


def parse_options(cell: Cell, filename: str) -> CellOptions:
    """The options of `cell`; `ChoreoError` pointing into the header line when one is wrong."""
    words = [(match.group(), match.start()) for match in re.finditer(r"\S+", cell.options)]
    problems: list[Diagnostic] = []

    def problem(message: str, word: str, start: int) -> None:
        column = cell.options_column + start
        span = Span(cell.header_line, column, cell.header_line, column + len(word))
        problems.append(Diagnostic(ERROR, message, span))

    graph = cuda = False
    target = "auto"
    defines: dict[str, object] = {}
    index = 0
    while index < len(words):
        word, start = words[index]
        index += 1
        flag, offset = _split_flag(word)
        if flag == "--graph":
            graph = True
        elif flag == "--cuda":
            cuda = True
        elif flag in FLAGS_WITH_VALUES:
            if offset:
                value, value_start = word[offset:], start + offset
            elif index < len(words):
                value, value_start = words[index]
                index += 1
            else:
                problem(f"'{flag}' needs a value; {USAGE}", word, start)
                continue
            if flag == "-D":
                try:
                    define_name, define_value = parse_define(value)
                    defines[define_name] = define_value
                except argparse.ArgumentTypeError:
                    problem(f"'-D {value}' is not -D NAME or -D NAME=VALUE", value, value_start)
            elif value in TARGETS:
                target = value
            else:
                problem(f"unknown target '{value}'; the targets are {', '.join(TARGETS)}", value, value_start)
        else:
            problem(f"unknown option '{word}'; {USAGE}", word, start)
    if problems:
        raise ChoreoError(problems, cell.text, filename)
    return CellOptions(graph, cuda, target, defines)


def _split_flag(word: str) -> tuple[str, int]:
    """The flag of `word` and where a value written into it starts (`--target=sim`, `-DN=4`), or 0."""
    if word.startswith("--target="):
        return "--target", len("--target=")
    if word.startswith("-D") and len(word) > 2:
        return "-D", 2
    return word, 0
