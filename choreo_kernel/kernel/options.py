"""The options line of a Choreo cell: `%%choreo --graph --cuda --ptx --sass --target sim -D TILE_K=64`.

A bad option is a diagnostic on the header line itself, rendered like any other error,
so the user sees the caret under the word to fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from choreo_kernel.compiler.diagnostics import ERROR, ChoreoError, Diagnostic, Span
from choreo_kernel.compiler.preprocess import parse_define
from choreo_kernel.kernel.cells import Cell

TARGETS = ("auto", "sim", "cuda")
USAGE = "the options are --graph, --cuda, --ptx, --sass, --target auto|sim|cuda and -D NAME[=VALUE]"
SHOWN = ("--graph", "--cuda", "--ptx", "--sass")  # what a cell can show besides its summary
FLAGS = (*SHOWN, "--target", "-D")  # what Tab offers after %%choreo
FLAGS_WITH_VALUES = ("--target", "-D")


@dataclass(frozen=True)
class CellOptions:
    graph: bool = False  # show each function's dependency graph
    cuda: bool = False  # show the emitted CUDA C++
    ptx: bool = False  # show the kernels' PTX, marked with Choreo lines
    sass: bool = False  # show the kernels' SASS, marked with Choreo lines
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

    shown: set[str] = set()
    target = "auto"
    defines: dict[str, object] = {}
    index = 0
    while index < len(words):
        word, start = words[index]
        index += 1
        flag, offset = _split_flag(word)
        if flag in SHOWN:
            shown.add(flag)
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
                except ValueError:
                    problem(f"'-D {value}' is not -D NAME or -D NAME=VALUE", value, value_start)
            elif value in TARGETS:
                target = value
            else:
                problem(f"unknown target '{value}'; the targets are {', '.join(TARGETS)}", value, value_start)
        else:
            problem(f"unknown option '{word}'; {USAGE}", word, start)
    if problems:
        raise ChoreoError(problems, cell.text, filename)
    graph, cuda, ptx, sass = (flag in shown for flag in SHOWN)
    return CellOptions(graph, cuda, ptx, sass, target, defines)


def _split_flag(word: str) -> tuple[str, int]:
    """The flag of `word` and where a value written into it starts (`--target=sim`, `-DN=4`), or 0."""
    if word.startswith("--target="):
        return "--target", len("--target=")
    if word.startswith("-D") and len(word) > 2:
        return "-D", 2
    return word, 0
