"""The docs that ship with the package, page by page, for `choreo docs` and the `%docs` magic.

The pages are the MyST Markdown sources of the Sphinx docs (docs/ of the checkout; a wheel
carries them as choreo_kernel/docs). A page is named by its file name without `.md`
(`levels`, `futures`, `diagnostics-events`); `markdown` gives its text as plain Markdown, with
the Sphinx-only parts (toctrees, link targets) turned into what any Markdown viewer shows and
links to other pages turned into the `%docs NAME` to read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_TOCTREE = re.compile(r"^```\{toctree\}\n(?P<body>.*?)^```\n", re.DOTALL | re.MULTILINE)
_TARGET = re.compile(r"^\([\w-]+\)=\n", re.MULTILINE)
_PAGE_LINK = re.compile(r"\[(?P<text>[^\]]+)\]\((?P<path>[\w./-]+)\.md(?:#(?P<anchor>[\w-]+))?\)")
_IMAGE = re.compile(r"!\[(?P<text>[^\]]*)\]\([^)]*\)")
_CODE_BLOCK = re.compile(
    r"^(?P<fence>`{3,})\{code-block\} (?P<language>\w+)\n(?:[ \t]*:[\w-]+:[^\n]*\n)*", re.MULTILINE
)


class UnknownPage(LookupError):
    """No page has the name asked for; the message lists the names there are."""


@dataclass(frozen=True)
class Page:
    name: str
    title: str
    path: Path


def docs_directory() -> Path:
    """Where the pages are: in the installed package (a wheel), else in this checkout's docs/."""
    for directory in (_PACKAGE / "docs", _PACKAGE.parent / "docs"):
        if (directory / "index.md").is_file():
            return directory
    raise FileNotFoundError("the docs are not installed with this copy of choreo-kernel")


@cache
def pages() -> dict[str, Page]:
    """Every page in reading order: the toctrees of index.md, depth first."""
    root = docs_directory()
    found: dict[str, Page] = {}

    def visit(path: Path) -> None:
        text = path.read_text(encoding="utf-8")
        page = Page(path.stem, _title(text, path), path)
        found.setdefault(page.name, page)
        for entry in _toctree_entries(text):
            visit((path.parent / entry).with_suffix(".md").resolve())

    visit(root / "index.md")
    return found


def page(name: str) -> Page:
    known = pages()
    if name not in known:
        raise UnknownPage(f"no docs page '{name}'; the pages are: {', '.join(known)}")
    return known[name]


def markdown(name: str) -> str:
    """Page `name` as plain Markdown: a toctree becomes a list of its pages, links to pages say `%docs`."""
    current = page(name)
    text = _TARGET.sub("", current.path.read_text(encoding="utf-8"))

    def listing(match: re.Match[str]) -> str:
        entries = [pages()[Path(entry).stem] for entry in _entries(match.group("body"))]
        return "".join(f"- {entry.title}: `%docs {entry.name}`\n" for entry in entries)

    def link(match: re.Match[str]) -> str:
        return f"{match.group('text')} (`%docs {Path(match.group('path')).name}`)"

    # A picture's file is next to the page, where a notebook or a terminal cannot show it.
    text = _IMAGE.sub(lambda match: f"(A picture in the HTML docs: {match.group('text')}.)", text)
    text = _CODE_BLOCK.sub(lambda match: f"{match.group('fence')}{match.group('language')}\n", text)
    return _PAGE_LINK.sub(link, _TOCTREE.sub(listing, text))


def contents() -> str:
    """The list of pages, as Markdown."""
    return "".join(f"- `{entry.name}`: {entry.title}\n" for entry in pages().values())


def _title(text: str, path: Path) -> str:
    heading = re.search(r"^# (.+)$", text, re.MULTILINE)
    return heading.group(1).strip() if heading else path.stem


def _toctree_entries(text: str) -> list[str]:
    return [entry for match in _TOCTREE.finditer(text) for entry in _entries(match.group("body"))]


def _entries(body: str) -> list[str]:
    """The documents a toctree lists, without its `:option:` lines."""
    return [line.strip() for line in body.splitlines() if line.strip() and not line.lstrip().startswith(":")]
