"""How much of Croqtile's own test suite choreo-kernel accepts, lowers and builds.

    python bench/peer.py PATH/TO/croqtile/tests [--nvcc] [--jobs N] [--show compile|must-fail|end2end]
                         [--json OUT.json]

Reads the suite where it lies and copies nothing. Each `.co` file (tests/amdgpu is out of scope)
is put in one class from its `// RUN:` lines:
- must-fail: a RUN line starts with `not `, or runs with `2>&1` and CHECKs (CHECK-NOT expects
  nothing) an error message or Croqtile's count of them ("Totally 3 errors have been detected"). Counted as rejected when `ck.check` (target cuda) reports an error,
  and as "the same reason" (`same_reason`) when each CHECKed message is matched by our errors:
  Bison's "syntax error, unexpected X, expecting A or B" by a syntax error of ours that found X
  and expected A and B; a bare "syntax error" by ours saying the construct is not in the grammar;
  a location (`file:line.col: error:`) by an error of ours there; any other message when the
  names the first one quotes (`M', or 'x' that the program has) appear in our errors and its
  words (names, numbers, and words of four or more letters that are not filler, compared by
  stem, so that `exact` meets `exactly`) mostly do. Files that test Croqtile's own command-line
  options or tools, or CHECK what its `-pa=PASS` prints, are left out (listed).
- compile: every other file whose RUN lines run `choreo` for CUDA (the default target, `-t cute`,
  `-arch=sm_*`, `-gs`): check passes (no error), emit writes CUDA, and with --nvcc, nvcc builds an
  sm_90a cubin from it. Preprocessor-only runs (-E), other targets (-t cc, hip) and other tools
  (copp) are left out. Defines on the RUN line (`-DNAME=V`) are applied.
- parse: files whose every RUN line stops Croqtile after parsing (`choreo -e`, which prints the AST):
  counted as parsed when our parser accepts them; they need not be whole programs (a function
  that returns a value may have no `return`).
- front-end: files whose RUN lines stop Croqtile after its analyses (`-i`, `-vn`, `--stop-after`,
  its short form `-sa=PASS`):
  counted when the analysis reports no error; the CUDA lowering's limits do not count there.
- end2end: the compile files under tests/gpu/end2end, reported on their own.
- emit only: compile files whose nvcc build fails only because they call functions that nothing
  defines (`call kernel(x)`, `call mylib::f<...>(...)` with no `kernel` or `mylib` in the file):
  Croqtile's test only reads the CUDA it emits, which would not build either. Found from nvcc's
  errors (each is about such a call, as the kernel reports it: "'kernel' is not defined") and from
  the source (the name appears nowhere but in its calls); the nvcc rate is printed with and
  without them.
Prints the rates and, with --show, every file of a class with its first problem.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from choreo_kernel.compiler.cuda import HEADER, emit_program, header_text  # noqa: E402
from choreo_kernel.compiler.diagnostics import Diagnostic  # noqa: E402
from choreo_kernel.compiler.driver import analyze  # noqa: E402
from choreo_kernel.compiler.program import Analysis  # noqa: E402
from choreo_kernel.runtime.compile_errors import (  # noqa: E402
    NOT_DEFINED,
    NvrtcFailure,
    statement_line,
    user_errors,
)

PARSE_ONLY = re.compile(r"(^|\s)-e(\s|$)")
FRONT_END_ONLY = re.compile(r"(^|\s)(-i|-vn|--stop-after[= ]\S+|-sa=\S+)(\s|$)")
OTHER_TOOLS = re.compile(r"^(copp|true)\b|-t (cc|hip)\b|gfx\d|(^|\s)-E(\s|$)")
# `-pa=PASS` prints what one of Croqtile's passes found (its "Active Threads: ..." lines): its own tooling.
PRINTS_ANALYSIS = re.compile(r"(^|\s)-pa=\S+")
CROQTILE_OPTIONS = ("cli/", "others/input_existance", "lit-self/")
RUN_LINE = re.compile(r"\s*//\s*RUN:(.*)")
POSITIVE_CHECK = re.compile(r"CHECK(?:-NEXT|-SAME|-DAG|-LABEL|-COUNT-\d+)?:(.*)")
SUMMARY = re.compile(r"Totally \d+ errors?|Parsing failed due to syntax errors")
SEVERITY = re.compile(r"\b(error|warning|info):")
BISON = re.compile(r"syntax error, unexpected(?: (?P<found>\S+?))?(?:, expecting (?P<expecting>.+?))?\s*$")
OURS_SYNTAX = re.compile(r"syntax error: expected (?P<expected>.+), found (?P<found>.+?)(?: \(.*)?$")
LOCATION = re.compile(r"(?:(?P<file>[\w.-]+):)?(?P<line>\d+)\.(?P<column>\d+): error:")
# What says that a construct is not in the grammar, as Croqtile's bare "syntax error" does.
NOT_IN_GRAMMAR = re.compile(r"^syntax error|^unknown operation|is not (part of the language|an operation)")
# A name the first message quotes, `M' (Croqtile's symbols) or 'x' where the program has that name and it
# is not a word of the language: ours must name it too.
QUOTED_NAME = re.compile(r"[`'](?P<name>[A-Za-z_]\w*)'")
LANGUAGE_WORD = re.compile(
    r"((b|t)?f|s|u)\d+(_\w+)?|bool|int|float|double|half|local|shared|global|block|thread|group|parallel"
    r"|within|with|foreach|inthreads|unknown|from|to|wait|trigger|swap|rotate|select|dma|tma|mma|auto|void"
)
FILLER = frozenset(
    [
        "error",
        "errors",
        "warning",
        "info",
        "with",
        "that",
        "this",
        "have",
        "been",
        "from",
        "into",
        "which",
        "must",
        "should",
        "cannot",
        "detected",
        "totally",
        "when",
        "only",
        "than",
        "then",
        "there",
        "their",
        "they",
        "them",
        "these",
        "those",
        "will",
        "would",
        "could",
        "does",
        "were",
        "being",
        "used",
    ]
)


@dataclass
class Result:
    path: str
    kind: str  # compile, parse, front-end, must-fail
    checked: bool = False  # compile: no error; must-fail: an error
    emitted: bool = False
    built: bool | None = None  # None: nvcc not run
    same_reason: bool = False
    problem: str = ""  # our first error, or what nvcc said
    expected: str = ""  # must-fail: the CHECKed message
    defines: dict[str, object] = field(default_factory=dict)
    undefined: tuple[str, ...] = ()  # emit only: the functions it calls that nothing defines
    cuda: str = field(default="", repr=False)  # the emitted translation unit, for nvcc
    source: str = field(default="", repr=False)
    analysis: Analysis | None = field(default=None, repr=False)


# What --json writes of a result (the emitted CUDA, the source and the analysis stay out).
FIELDS = (
    "path",
    "kind",
    "checked",
    "emitted",
    "built",
    "same_reason",
    "problem",
    "expected",
    "defines",
    "undefined",
)


def runs(text: str) -> list[str]:
    """The `// RUN:` lines (lit ignores a disabled `// 1RUN:`)."""
    return [match.group(1).strip() for line in text.splitlines() if (match := RUN_LINE.match(line))]


def checked(text: str) -> list[str]:
    """What the positive CHECK lines expect (CHECK-NOT and CHECK-EMPTY lines expect nothing)."""
    return [match.group(1).strip() for line in text.splitlines() if (match := POSITIVE_CHECK.search(line))]


def classify(relative: str, text: str) -> str | None:
    lines = runs(text)
    if not lines or relative.startswith("amdgpu/"):
        return None
    checks = checked(text)
    if any(line.startswith("not ") for line in lines) or (
        any("2>&1" in line for line in lines)
        and any(re.search(r"\berror\b", c, re.I) or SUMMARY.search(c) for c in checks)
    ):
        printing = all(PRINTS_ANALYSIS.search(line) for line in lines)
        return None if relative.startswith(CROQTILE_OPTIONS) or printing else "must-fail"
    if any(OTHER_TOOLS.search(line) for line in lines):
        return None
    if all(PARSE_ONLY.search(line) for line in lines):
        return "parse"
    if all(PARSE_ONLY.search(line) or FRONT_END_ONLY.search(line) for line in lines):
        return "front-end"
    return "compile"


def defines_of(text: str, kind: str = "compile") -> dict[str, object]:
    """The `-D` defines of the RUN lines; for a must-fail file, of the lines whose FileCheck reads the
    plain CHECK lines (the ones judged) when some do and others use a `--check-prefix` of their own."""
    lines = runs(text)
    if kind == "must-fail":
        lines = [line for line in lines if "check-prefix" not in line] or lines
    defines: dict[str, object] = {}
    for line in lines:
        for name, value in re.findall(r"-D(\w+)(?:=(\S+))?", line):
            try:
                defines[name] = int(value, 0) if value else 1
            except ValueError:
                defines[name] = value
    return defines


def expected_messages(text: str) -> list[str]:
    """The CHECKed diagnostics: the lines that name a severity when some do (the others are the
    excerpt and its caret), without Croqtile's closing counts ("Totally 2 errors ...") and without
    FileCheck's patterns (`{{[0-9]+}}`)."""
    lines = [re.sub(r"\{\{.*?\}\}", " ", line) for line in checked(text) if line and not SUMMARY.search(line)]
    messages = [line for line in lines if SEVERITY.search(line)]
    return messages or lines


def stem(word: str) -> str:
    return re.sub(r"(ations?|ing|ed|es|ly|e|s)$", "", word) if len(word) > 5 else word


def significant(text: str) -> set[str]:
    words = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]{3,}|\d+", text.lower()))
    return {stem(word) for word in words if word not in FILLER}


def _bison_token(token: str) -> str:
    """How our syntax errors name a token of Croqtile's Bison messages."""
    token = token.strip().strip('"')
    return {"IDENTIFIER": "a name", "NUM": "an integer"}.get(token, f"'{token}'")


def _same_syntax_error(message: str, errors: list[Diagnostic]) -> bool:
    """Bison's "syntax error, unexpected X, expecting A or B" against ours, "syntax error: expected
    A or B, found X": the same token found, and every token Bison expected among ours."""
    bison = BISON.search(message)
    assert bison is not None
    found, expecting = bison.group("found"), bison.group("expecting")
    for error in errors:
        ours = OURS_SYNTAX.match(error.message)
        if ours is None:
            continue
        if found and found != "IDENTIFIER" and ours.group("found") != _bison_token(found):
            continue
        if found == "IDENTIFIER" and not re.fullmatch(r"'[A-Za-z_]\w*'", ours.group("found")):
            continue
        wanted = [_bison_token(t) for t in re.split(r"\s+or\s+", expecting or "") if t.strip()]
        if all(token in ours.group("expected") for token in wanted):
            return True
    return False


def _at_location(message: str, errors: list[Diagnostic]) -> bool:
    """Croqtile's `file:line.col: error:` against where ours are: the same line (and file), the
    column within our span (Croqtile points at a token's end, we underline the token)."""
    where = LOCATION.search(message)
    assert where is not None
    line, column = int(where.group("line")), int(where.group("column"))
    return any(
        error.line == line
        and error.column <= column <= error.end_column
        and where.group("file") in (None, error.span.file)
        for error in errors
    )


def _names(message: str, source: str) -> set[str]:
    """The names `message` quotes that ours must name too (see QUOTED_NAME)."""
    return {
        name
        for match in QUOTED_NAME.finditer(message)
        if (name := match.group("name"))
        and (match.group(0).startswith("`") or re.search(rf"\b{name}\b", source))
        and not LANGUAGE_WORD.fullmatch(name)
    }


def same_reason(expected: list[str], errors: list[Diagnostic], source: str = "") -> bool:
    """Each CHECKed message is met by our errors (the module's docstring says how)."""
    worded: list[str] = []
    for message in expected:
        text = re.sub(r"^\s*(error|warning|info):\s*", "", message)
        if BISON.search(message):
            if not _same_syntax_error(message, errors):
                return False
        elif LOCATION.search(message):
            if not _at_location(message, errors):
                return False
        elif text.rstrip(".") == "syntax error":
            if not any(NOT_IN_GRAMMAR.search(error.message) for error in errors):
                return False
        else:
            worded.append(message)
    text = " ".join(error.full_message for error in errors)
    names = _names(worded[0], source) if worded else set()
    if not all(re.search(rf"\b{re.escape(name)}\b", text) for name in names):
        return False
    wanted = significant(" ".join(worded))
    if not wanted:
        return True
    return len(wanted & significant(text)) >= max(1, round(0.4 * len(wanted)))


def measure(path: Path, relative: str, kind: str) -> Result:
    text = path.read_text(encoding="utf-8", errors="replace")
    result = Result(relative, kind, defines=defines_of(text, kind))
    try:
        analysis = analyze(text, result.defines or None, "cuda", filename=path.name)
    except Exception as error:  # an internal error is a result too
        result.problem = f"internal error: {type(error).__name__}: {error}"
        return result
    errors = [d for d in analysis.diagnostics if d.severity == "error"]
    if kind == "parse":
        errors = [d for d in errors if d.message.startswith("syntax error")]
    elif kind == "front-end" and analysis.lowered is not None:
        lowering = {id(d) for found in analysis.lowered.errors.values() for d in found}
        errors = [d for d in errors if id(d) not in lowering]
    if kind == "must-fail":
        result.checked = bool(errors)
        expected = expected_messages(text)
        result.expected = " | ".join(expected)
        result.same_reason = result.checked and same_reason(expected, errors, text)
        result.problem = errors[0].message if errors else "accepted"
        return result
    result.checked = not errors
    if errors:
        result.problem = f"{errors[0].line}:{errors[0].column}: {errors[0].message}"
        return result
    if kind != "compile":
        return result
    try:
        result.cuda = emit_program(analysis, self_contained=False)  # as NVRTC compiles it, beside the header
        result.emitted = True
        result.source, result.analysis = text, analysis
    except Exception as error:
        result.problem = f"emit: {error}"
    return result


def defined_in_file(source: str, callee: str) -> bool:
    """Whether the file may define `callee`: its namespaces declared (`namespace mylib`), or its name
    written anywhere but in its calls (with their template arguments) and in comments."""
    *namespaces, name = callee.split("::")
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.DOTALL)
    if any(re.search(rf"\bnamespace\s+{re.escape(part)}\b", text) for part in namespaces):
        return True
    text = re.sub(rf"\bcall\s+{re.escape(callee)}\s*(?:<[^;()]*>)?", " ", text)
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def undefined_calls(result: Result, log: str) -> tuple[str, ...]:
    """The functions `result`'s program calls that nothing defines, when nvcc's errors are all about
    them (every error on the line of such a call), else ()."""
    assert result.analysis is not None and result.analysis.lowered is not None
    lines = result.analysis.lowered.device_lines
    failure = NvrtcFailure(log)
    reported = user_errors(failure, result.cuda, lines, result.source, Path(result.path).name)
    diagnostics = [] if reported is failure else reported.diagnostics
    if not diagnostics or not all(d.message.endswith(NOT_DEFINED) for d in diagnostics):
        return ()
    callees = {d.message.split("'")[1] for d in diagnostics}
    if any(defined_in_file(result.source, callee) for callee in callees):
        return ()
    unit_lines = result.cuda.split("\n")
    called = {d.line for d in diagnostics}
    for match in re.finditer(r"\((\d+)\): (?:catastrophic )?error", log):
        line = int(match.group(1))
        statement = None if lines.locate(line) else statement_line(unit_lines, line)
        if statement is None or statement[0] not in called:
            return ()
    return tuple(sorted(callees))


def build(result: Result, directory: Path, nvcc: str) -> None:
    unit = directory / (re.sub(r"\W", "_", result.path) + ".cu")
    unit.write_text(result.cuda)
    done = subprocess.run(
        [
            nvcc,
            "-gencode=arch=compute_90a,code=sm_90a",
            "-cubin",
            "-o",
            str(unit.with_suffix(".cubin")),
            str(unit),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    result.built = done.returncode == 0
    if not result.built:
        result.undefined = undefined_calls(result, done.stdout + done.stderr)
        first = next(
            (line for line in done.stderr.splitlines() if "error" in line), done.stderr.strip()[:200]
        )
        result.problem = f"nvcc: {first}"
        if result.undefined:
            result.problem = "emit only: calls functions no file defines: " + ", ".join(result.undefined)


def rate(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / max(whole, 1):.0f}%)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", type=Path, help="Croqtile's tests/ folder")
    parser.add_argument("--nvcc", action="store_true", help="also build every emitted program with nvcc")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--show",
        choices=("compile", "must-fail", "end2end", "parse", "front-end"),
        action="append",
        default=[],
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = []
    skipped = []
    for path in sorted(args.tests.rglob("*.co")):
        relative = path.relative_to(args.tests).as_posix()
        kind = classify(relative, path.read_text(encoding="utf-8", errors="replace"))
        if kind is None:
            skipped.append(relative)
            continue
        results.append(measure(path, relative, kind))
    nvcc = shutil.which("nvcc")
    if args.nvcc and nvcc:
        emitted = [r for r in results if r.emitted]
        with tempfile.TemporaryDirectory() as directory, ThreadPoolExecutor(args.jobs) as pool:
            (Path(directory) / HEADER).write_text(header_text())
            list(pool.map(lambda r: build(r, Path(directory), nvcc), emitted))
    compile_results = [r for r in results if r.kind == "compile"]
    must_fail = [r for r in results if r.kind == "must-fail"]
    stopped_early = {kind: [r for r in results if r.kind == kind] for kind in ("parse", "front-end")}
    end2end = [r for r in compile_results if r.path.startswith("gpu/end2end/")]
    print(
        f"{len(results)} programs measured, {len(skipped)} left out (other targets, tools, Croqtile's options)"
    )
    for name, group in (("compile", compile_results), ("end2end", end2end)):
        built = sum(bool(r.built) for r in group)
        emit_only = [r for r in group if r.undefined]
        print(
            f"{name:9} check {rate(sum(r.checked for r in group), len(group))}, "
            f"emit {rate(sum(r.emitted for r in group), len(group))}"
            + (f", nvcc sm_90a {rate(built, len(group))}" if args.nvcc else "")
            + (
                f"; without the {len(emit_only)} emit-only programs {rate(built, len(group) - len(emit_only))}"
                if emit_only
                else ""
            )
        )
        if emit_only:
            names = sorted({callee for r in emit_only for callee in r.undefined})
            print(
                f"{'':9} emit only: calls functions no file defines: {len(emit_only)} programs "
                f"({', '.join(names)}); Croqtile's own output would not build either"
            )
    for name, group in stopped_early.items():
        print(
            f"{name:9} accepted {rate(sum(r.checked for r in group), len(group))} (Croqtile stops there too)"
        )
    print(
        f"must-fail rejected {rate(sum(r.checked for r in must_fail), len(must_fail))}, "
        f"for the reason the test names {rate(sum(r.same_reason for r in must_fail), len(must_fail))}"
    )
    reasons = Counter(re.sub(r"'[^']*'|\d+", "_", r.problem)[:90] for r in compile_results if r.problem)
    print("most common problems:")
    for reason, count in reasons.most_common(15):
        print(f"  {count:4}  {reason}")
    for show in args.show:
        group = {"compile": compile_results, "must-fail": must_fail, "end2end": end2end, **stopped_early}[
            show
        ]
        print(f"\n{show}:")
        for r in group:
            if show in stopped_early:
                ok = r.checked
            else:
                ok = r.same_reason if show == "must-fail" else (r.built if args.nvcc else r.emitted)
            mark = "ok " if ok else "-- "
            extra = f"   expected: {r.expected[:120]}" if show == "must-fail" and not r.same_reason else ""
            print(f"{mark}{r.path}: {r.problem[:140]}{extra}")
    if args.json:
        rows = [{k: getattr(r, k) for k in FIELDS} for r in results]
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
