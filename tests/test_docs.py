"""The docs (docs/): they build with Sphinx without a warning, every Choreo example in them is
checked by the compiler, and the diagnostics pages show every diagnostic the compiler has.

An example is any ```choreo block of any page, found anew on every run, so a new page or a new
example is checked without touching this file. A block is a whole program. A line that should
get a diagnostic ends with a comment naming it, `// error: TEXT` or `// warning: TEXT` (TEXT a
part of the message; several, one after another, for several diagnostics on the line), and
every diagnostic must be named so: an example without such comments
compiles clean. A first line `// target: sim` checks the block for the sim target (the default
is cuda, as for `choreo check`), and `// a notebook cell` checks it as a cell, where text
outside the functions is an error rather than C++ host code.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from diagnostic_templates import Template, templates

import choreo_kernel as ck
from choreo_kernel import docs
from choreo_kernel.compiler.driver import analyze

DOCS = Path(__file__).resolve().parent.parent / "docs"
# ```choreo, or ```{code-block} choreo with `:option:` lines (`:force:` for a bad character).
_BLOCK = re.compile(
    r"^(?P<fence>`{3,})(?:\{code-block\} )?choreo[ \t]*\n(?:[ \t]*:[\w-]+:[^\n]*\n)*(?P<code>.*?)^(?P=fence)[ \t]*$",
    re.DOTALL | re.MULTILINE,
)
_EXPECTED = re.compile(r"//\s*(?P<severity>error|warning):\s*(?P<text>.+?)\s*(?=//|$)")
_TARGET = re.compile(r"^//\s*target:\s*(?P<target>\w+)")
CELL_MARK = "// a notebook cell"


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # of the block's first code line in the page
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(DOCS)}:{self.line}"

    @property
    def target(self) -> str:
        match = _TARGET.match(self.code)
        return match.group("target") if match else "cuda"

    def expected(self) -> set[tuple[int, str, str]]:
        """(line, severity, text) for each `// error: TEXT` or `// warning: TEXT` comment."""
        found = set()
        for number, line in enumerate(self.code.splitlines(), 1):
            for match in _EXPECTED.finditer(line):
                found.add((number, match.group("severity"), match.group("text")))
        return found


def examples() -> list[Example]:
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("code")) + 1
            found.append(Example(page, line, match.group("code")))
    return found


EXAMPLES = examples()


def diagnostics_of(example: Example) -> list[ck.Diagnostic]:
    cell = example.code.startswith(CELL_MARK)
    return analyze(example.code, target=example.target, host_code=not cell).diagnostics


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
def test_example_gives_the_diagnostics_it_names(example: Example) -> None:
    diagnostics = diagnostics_of(example)
    shown = "\n".join(d.render(example.code, example.name) for d in diagnostics) or "no diagnostics"
    for line, severity, text in example.expected():
        assert any(d.line == line and d.severity == severity and text in d.message for d in diagnostics), (
            f"{example.name}: line {line} should get the {severity} '{text}'; the compiler says:\n{shown}"
        )
    for diagnostic in diagnostics:
        named = any(
            line == diagnostic.line and severity == diagnostic.severity and text in diagnostic.message
            for line, severity, text in example.expected()
        )
        assert named, f"{example.name}: a diagnostic the example does not name:\n{shown}"


def test_the_docs_have_examples_of_both_kinds() -> None:
    """The collection itself: an empty match would pass every test above."""
    bad = [example for example in EXAMPLES if example.expected()]
    assert len(bad) >= 100 and len(EXAMPLES) - len(bad) >= 100


DIAGNOSTICS_PAGES = sorted((DOCS / "reference").glob("diagnostics*.md"))
# Listed on the pages without a bad example, and why.
UNDEMONSTRATED = {
    # A macro is not expanded inside its own expansion, so the limit of 64 nested expansions
    # takes 65 macro calls nested in one another: an example would be one unreadable line.
    "macro '{…}' expands too deeply (is it recursive?)",
}


def test_every_compiler_diagnostic_has_a_bad_example_on_the_diagnostics_pages() -> None:
    messages = [
        diagnostic.message
        for example in EXAMPLES
        if example.page in DIAGNOSTICS_PAGES
        for diagnostic in diagnostics_of(example)
    ]
    pages = "".join(page.read_text(encoding="utf-8") for page in DIAGNOSTICS_PAGES)
    missing: list[Template] = [
        template
        for template in templates()
        if not any(template.matches(message) for message in messages)
        and not (template.text in UNDEMONSTRATED and template.text.replace("{…}", "…") in pages)
    ]
    listed = "\n".join(f"  {template.where}: {template.text}" for template in missing)
    assert not missing, f"these diagnostics have no example on docs/reference/diagnostics-*.md:\n{listed}"


@pytest.mark.skipif(
    importlib.util.find_spec("sphinx") is None, reason="needs Sphinx (pip install -e '.[docs]')"
)
@pytest.mark.skipif(
    importlib.util.find_spec("myst_parser") is None, reason="needs myst-parser (pip install -e '.[docs]')"
)
def test_the_docs_build_without_a_warning(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", DOCS, tmp_path / "html"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "html" / "reference" / "futures.html").is_file()


def test_every_page_is_found_by_its_name_and_shows_as_plain_markdown() -> None:
    on_disk = {page.stem for page in DOCS.rglob("*.md")}
    assert set(docs.pages()) == on_disk, "a page is in no toctree, or two pages share a name"
    for name in docs.pages():
        text = docs.markdown(name)
        assert "```{" not in text and "](" not in text.replace("](http", ""), name
    with pytest.raises(docs.UnknownPage, match="the pages are: index"):
        docs.page("nonsense")


def choreo_docs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "choreo_kernel", "docs", *args], capture_output=True, text=True, timeout=60
    )


def test_choreo_docs_lists_the_pages_and_prints_one() -> None:
    listing = choreo_docs()
    assert listing.returncode == 0, listing.stderr
    assert "- `events`: Events\n" in listing.stdout and "- `diagnostics-futures`: Futures\n" in listing.stdout
    page = choreo_docs("events")
    assert page.returncode == 0 and page.stdout.startswith("# Events\n")
    assert "(`%docs futures`)" in page.stdout  # a link to another page says how to read it
    unknown = choreo_docs("nonsense")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.startswith("choreo: error: no docs page 'nonsense'; the pages are: index, ")
