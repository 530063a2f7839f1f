"""Property: the front end never crashes. Whatever text a notebook cell holds, `ck.check`
returns diagnostics (a `ChoreoError` is tolerated too); any other exception is a bug.

The inputs are the valid corpus programs broken the ways people break code: cut short,
pasted into each other, a token lost or doubled, a character mistyped. They stay close
enough to Choreo to reach deep into the parser and the analyses.
"""

from __future__ import annotations

import contextlib
import re
import signal
from collections.abc import Callable, Iterator

from corpus import load
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import choreo_kernel as ck

PROGRAMS = [program.source for program in load("valid")]
TOKEN = re.compile(r"\w+|[^\w\s]")
# Characters that matter to Choreo's lexer and parser, and a few that must be rejected cleanly.
ALPHABET = st.sampled_from([*"{}()[]<>;:,.=+-*/%#&|^!?~_'\"\\@$ \t\n0123456789abcxyzAZ", "\r", "é", "\u00a0"])
MACRO_NAMES = ["USE_CUBE", "STAGES", "ROWS", "COLS", "BK", "NBLOCKS", "TILE_K", "M"]
SLOW_SECONDS = 10  # one check of a corpus-sized program takes ~10 ms; this is a hang


def _index(draw: st.DrawFn, text: str) -> int:
    return draw(st.integers(0, len(text)))


def truncate(draw: st.DrawFn, source: str) -> str:
    return source[: _index(draw, source)]


def splice(draw: st.DrawFn, source: str) -> str:
    """A random slice of another program pasted at a random place."""
    donor = draw(st.sampled_from(PROGRAMS))
    start = _index(draw, donor)
    piece = donor[start : start + draw(st.integers(0, 200))]
    at = _index(draw, source)
    return source[:at] + piece + source[at:]


def _token_span(draw: st.DrawFn, source: str) -> tuple[int, int] | None:
    tokens = [match.span() for match in TOKEN.finditer(source)]
    return draw(st.sampled_from(tokens)) if tokens else None


def delete_token(draw: st.DrawFn, source: str) -> str:
    span = _token_span(draw, source)
    return source if span is None else source[: span[0]] + source[span[1] :]


def duplicate_token(draw: st.DrawFn, source: str) -> str:
    span = _token_span(draw, source)
    return source if span is None else source[: span[1]] + " " + source[span[0] : span[1]] + source[span[1] :]


def mutate_character(draw: st.DrawFn, source: str) -> str:
    """Replace, insert or delete one character."""
    at = _index(draw, source)
    how = draw(st.sampled_from(["replace", "insert", "delete"]))
    if how == "insert":
        return source[:at] + draw(ALPHABET) + source[at:]
    if how == "delete" or at == len(source):
        return source[:at] + source[at + 1 :]
    return source[:at] + draw(ALPHABET) + source[at + 1 :]


MUTATIONS: list[Callable[[st.DrawFn, str], str]] = [
    truncate,
    splice,
    delete_token,
    duplicate_token,
    mutate_character,
]


@st.composite
def broken_programs(draw: st.DrawFn) -> str:
    source = draw(st.sampled_from(PROGRAMS))
    for _ in range(draw(st.integers(1, 4))):
        source = draw(st.sampled_from(MUTATIONS))(draw, source)
    return source


defines_strategy = st.none() | st.dictionaries(
    st.sampled_from(MACRO_NAMES),
    st.integers(-1, 300) | st.sampled_from(["", "(", "1 +", "ROWS", "0x10", "1.5"]),
    max_size=3,
)


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Fail an example that runs away (a hang in CI would otherwise eat the whole run)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"ck.check ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def assert_checks_cleanly(
    source: str, defines: dict[str, object] | None = None, target: str = "cuda"
) -> None:
    """`ck.check` returns well-formed diagnostics that render; it does not raise."""
    with time_limit(SLOW_SECONDS):
        try:
            diagnostics = ck.check(source, defines, target=target)
        except ck.ChoreoError as err:
            diagnostics = err.diagnostics
    assert isinstance(diagnostics, list)
    for diagnostic in diagnostics:
        assert diagnostic.severity in ("error", "warning"), diagnostic
        assert diagnostic.line >= 1, diagnostic
        assert diagnostic.column >= 1, diagnostic
        assert (diagnostic.end_line, diagnostic.end_column) >= (diagnostic.line, diagnostic.column), (
            diagnostic
        )
        assert diagnostic.message.strip(), diagnostic
        diagnostic.render(source, "<fuzz>")


FUZZ_SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@settings(FUZZ_SETTINGS, max_examples=2000)
@given(broken_programs(), defines_strategy, st.sampled_from(["cuda", "sim"]))
def test_check_never_raises_on_broken_programs(
    source: str, defines: dict[str, object] | None, target: str
) -> None:
    assert_checks_cleanly(source, defines, target)


@settings(FUZZ_SETTINGS, max_examples=300)
@given(st.text(max_size=300))
def test_check_never_raises_on_arbitrary_text(source: str) -> None:
    assert_checks_cleanly(source)
