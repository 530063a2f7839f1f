"""Device code: the C++ functions that `call` reaches, and where each piece of it came from.

A `.co` file's C++ part holds host code (`main`, `#include`s) and device code; only the device
code goes into the translation unit with the kernels (NVRTC compiles no host code). Device code
is the contents of each `__cok__ { ... }` block and each top-level declaration that says
`__device__` or `__constant__` (a function, a function template, or a namespace or struct that
holds one). In a notebook, a `%%cuda` cell is device code as a whole, and a Choreo cell's own
device code defines functions for the cells after it too; a later definition of a name replaces
the earlier one, so running a cell again does not define its functions twice.

Every piece is kept as a `DevicePart`, one per top-level declaration, with the place it came
from, so that a compiler's message about it (nvcc, NVRTC, the sim's host compiler) points at the
user's own line: `render` lays the parts out and returns the map from its lines back to them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from choreo_kernel.compiler.hostcode import Region, skip_literal, starts_literal
from choreo_kernel.compiler.preprocess import blank_comments

_DEVICE_WORD = re.compile(r"(?<![\w])__(device|constant|co_device)__(?![\w])")
_KERNEL_BLOCK = re.compile(r"__cok__\s*\{")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_KEYWORDS = frozenset(
    [
        "template",
        "typename",
        "class",
        "struct",
        "union",
        "namespace",
        "extern",
        "inline",
        "static",
        "const",
        "constexpr",
        "volatile",
        "unsigned",
        "signed",
        "void",
        "int",
        "float",
        "double",
        "char",
        "short",
        "long",
        "bool",
        "auto",
        "return",
        "operator",
    ]
)


@dataclass(frozen=True)
class DevicePart:
    """One top-level declaration of device code: its text, and the line of `origin` it starts on.

    `origin` is the file or notebook cell it was written in (`kernel.co`, `cell[3]`); `name` is
    what it declares (`scale` for `__device__ float scale(float x) {...}`), None for a directive."""

    text: str
    origin: str
    line: int
    name: str | None = None


@dataclass(frozen=True)
class Item:
    """A top-level C++ declaration or directive: text offsets [start, end) and the name it declares."""

    start: int
    end: int
    name: str | None


def top_level_items(text: str) -> list[Item]:
    """The declarations and preprocessor lines at brace depth 0 of `text` (comments are skipped)."""
    code = blank_comments(text)
    items: list[Item] = []
    pos, n = 0, len(code)
    while pos < n:
        if code[pos].isspace():
            pos += 1
            continue
        start = pos
        if code[pos] == "#":
            while pos < n and code[pos] != "\n":
                pos += 2 if code[pos] == "\\" else 1
            items.append(Item(start, min(pos, n), None))
            continue
        pos = _item_end(code, pos)
        items.append(Item(start, pos, declared_name(code[start:pos])))
    return items


def _item_end(code: str, pos: int) -> int:
    """The offset after a declaration: its `;` at depth 0, or the brace that closes its body (and a
    `;` right after it, as after a struct)."""
    depth, n = 0, len(code)
    while pos < n:
        if starts_literal(code, pos):
            pos = skip_literal(code, pos)
            continue
        c = code[pos]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth <= 0:
                follow = pos + 1
                while follow < n and code[follow] in " \t":
                    follow += 1
                return follow + 1 if follow < n and code[follow] == ";" else pos + 1
        elif c == ";" and depth == 0:
            return pos + 1
        pos += 1
    return n


def declared_name(declaration: str) -> str | None:
    """The name a declaration declares: the word before its parameter list, its body or its
    initializer (`f` of `template <int N> __device__ void f(float* x) {...}`, `ns` of a namespace)."""
    text = re.sub(r"^\s*template\s*<[^{};]*?>", " ", declaration)
    stop = re.search(r"[({=\[;]", text)
    words = [
        word
        for word in _IDENTIFIER.findall(text[: stop.start() if stop else len(text)])
        if word not in _KEYWORDS and not (word.startswith("__") and word.endswith("__"))  # __device__...
    ]
    return words[-1] if words else None


def source_parts(text: str, functions: Sequence[Region], origin: str) -> tuple[DevicePart, ...]:
    """The device code of a preprocessed source: what its `__cok__` blocks hold and its top-level
    declarations that say `__device__`; `functions` are its `__co__` functions (skipped)."""
    host = blank_regions(text, functions)
    parts: list[DevicePart] = []
    for item in device_items(host):
        block = _KERNEL_BLOCK.match(host[item.start : item.end])
        if block is not None:
            inner_start = item.start + block.end()
            inner_end = item.end - 1 if host[item.end - 1] == "}" else item.end
            parts.extend(_parts_of(host, inner_start, inner_end, origin))
        else:
            parts.append(_part(host, item, origin))
    return tuple(parts)


def device_items(host: str) -> list[Item]:
    """The top-level items of `host` (a source with its `__co__` functions blanked) that are device code:
    `__cok__` blocks and declarations that say `__device__` or `__constant__`."""
    return [
        item
        for item in top_level_items(host)
        if _KERNEL_BLOCK.match(host[item.start : item.end])
        or (item.name is not None and _DEVICE_WORD.search(host[item.start : item.end]))
    ]


def blank_regions(text: str, regions: Sequence[Region | Item]) -> str:
    """`text` with each region's characters (not its line ends) replaced by spaces."""
    pieces, pos = [], 0
    for region in regions:
        pieces.append(text[pos : region.start])
        pieces.append(re.sub(r"[^\n]", " ", text[region.start : region.end]))
        pos = region.end
    pieces.append(text[pos:])
    return "".join(pieces)


def cell_parts(text: str, origin: str) -> tuple[DevicePart, ...]:
    """The parts of a `%%cuda` cell: all of it is device code."""
    return tuple(_parts_of(text, 0, len(text), origin))


def _parts_of(text: str, start: int, end: int, origin: str) -> list[DevicePart]:
    """The parts of `text[start:end]`, at the lines and columns they have in `text`."""
    inner = re.sub(r"[^\n]", " ", text[:start]) + text[start:end]
    return [_part(inner, item, origin) for item in top_level_items(inner)]


def _part(text: str, item: Item, origin: str) -> DevicePart:
    line_start = text.rfind("\n", 0, item.start) + 1
    line = text.count("\n", 0, item.start) + 1
    return DevicePart(" " * (item.start - line_start) + text[item.start : item.end], origin, line, item.name)


def merged(earlier: Iterable[DevicePart], later: Sequence[DevicePart]) -> tuple[DevicePart, ...]:
    """`earlier` with the parts that `later` defines again replaced: what a notebook keeps after a
    cell. Directives (no name) are kept once."""
    names = {part.name for part in later if part.name is not None}
    kept = [part for part in earlier if part.name not in names]
    texts = {part.text.strip() for part in kept if part.name is None}
    fresh = [part for part in later if part.name is not None or part.text.strip() not in texts]
    return (*kept, *fresh)


# ------------------------------------------------------------------ the translation unit


@dataclass(frozen=True)
class LineMap:
    """Which lines of a translation unit hold which device part: `(first line, part)` in order."""

    entries: tuple[tuple[int, DevicePart], ...] = ()

    def locate(self, line: int) -> tuple[DevicePart, int] | None:
        """The part that line `line` of the unit belongs to, and that line's number in its origin."""
        for first, part in reversed(self.entries):
            if first <= line < first + part.text.count("\n") + 1:
                return part, part.line + line - first
        return None


def render(parts: Sequence[DevicePart], first_line: int) -> tuple[list[str], LineMap]:
    """The lines of `parts` for a translation unit in which they start at line `first_line`, each
    group from one origin headed by a comment naming it; and the map from those lines back."""
    lines: list[str] = []
    entries: list[tuple[int, DevicePart]] = []
    origin = None
    for part in parts:
        if part.origin != origin:
            origin = part.origin
            lines.append(f"// device code from {origin}")
        entries.append((first_line + len(lines), part))
        lines.extend(part.text.split("\n"))
    return lines, LineMap(tuple(entries))
