"""What a call may cost the sim (issue 17 item 7): a loop, a grid or a buffer sized for a GPU stops with a
located error at once instead of running for hours or ending in a MemoryError, and an integer literal
of any width computes as C types it."""

from __future__ import annotations

import time

import numpy as np
import pytest

import choreo_kernel as ck

HUGE_LOOP = """\
__co__ void loop(f32 [4] a) {
  parallel q by 1 : block {
    foreach k in [1000000000] {
    }
  }
}"""
HUGE_GRID = """\
__co__ void grid(f32 [4] a) {
  parallel p by 1000000000 : block {
  }
}"""
HUGE_BUFFER = """\
__co__ void big(f32 [4] a) {
  f32 [100000, 100000] scratch;
  parallel t by 4 : thread {
    a.at(t) = 1.0f;
  }
}"""


@pytest.mark.parametrize(
    ("source", "line", "words"),
    [
        (HUGE_LOOP, 3, "loop iterations"),
        (HUGE_GRID, 2, "loop iterations and blocks"),
        (HUGE_BUFFER, 2, "buffer 'scratch' would take 37.3 GiB"),
    ],
    ids=["loop", "grid", "buffer"],
)
def test_a_call_too_big_for_the_sim_stops_at_once_where_it_asks(source: str, line: int, words: str) -> None:
    function = ck.compile(source, target="sim").function(source.split("void ")[1].split("(")[0])
    start = time.perf_counter()
    with pytest.raises(ck.ChoreoError) as raised:
        function(np.zeros(4, np.float32))
    assert time.perf_counter() - start < 5
    message = str(raised.value)
    assert f"<source>:{line}:" in message and words in message and "cuda target" in message


def test_a_wide_literal_is_a_64_bit_integer_as_in_c() -> None:
    source = """\
__co__ s64 [4] shifted(s32 [4] x) {
  s64 [4] y;
  parallel t by 4 : thread {
    y.at(t) = x.at(t) + 4294967296;
  }
  return y;
}"""
    x = np.array([-2, 0, 1, 7], np.int32)
    np.testing.assert_array_equal(ck.compile(source, target="sim").shifted(x), x.astype(np.int64) + 2**32)


def test_a_literal_wider_than_64_bits_is_a_check_error() -> None:
    source = "__co__ void z(s64 [4] a) {\n  parallel t by 4 : thread {\n    a.at(t) = 99999999999999999999;\n  }\n}"
    (error,) = [d for d in ck.check(source, target="sim") if d.severity == "error"]
    assert (error.line, error.column) == (3, 15) and "does not fit in 64 bits" in error.message
