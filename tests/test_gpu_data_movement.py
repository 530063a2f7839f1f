"""Data movement on the GPU beyond what tests/cuda's programs (run by test_gpu.py) show: shared memory
sized at launch for several argument shapes and past what a block has, and strided views of many
shapes against NumPy and the sim. Every test here is marked `gpu`; conftest.py skips them without
CuPy and a GPU.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import choreo_kernel as ck

pytestmark = pytest.mark.gpu

CUDA_PROGRAMS = Path(__file__).parent / "cuda"


def host(value: object) -> np.ndarray:
    return value.get() if hasattr(value, "get") else np.asarray(value)  # type: ignore[no-any-return]


@pytest.mark.parametrize("m", [1, 7, 40, 150])
def test_shared_memory_sized_at_launch_follows_the_arguments(m: int) -> None:
    """M = 40 needs 61,568 bytes (above the 48 KiB default), M = 150 needs 230,528 of the 232,448 a block has."""
    module = ck.compile((CUDA_PROGRAMS / "shared_sized_at_launch.co").read_text(), target="cuda")
    rng = np.random.default_rng(m)
    a = rng.integers(-8, 8, (m, 4, 32)).astype(np.int32)
    b = rng.integers(-8, 8, (m, 4, 32)).astype(np.int32)
    np.testing.assert_array_equal(host(module.summed(a, b)), a + b + 1)


def test_shared_memory_past_a_block_is_an_error_before_the_launch() -> None:
    module = ck.compile((CUDA_PROGRAMS / "shared_sized_at_launch.co").read_text(), target="cuda")
    a = np.zeros((152, 4, 32), np.int32)
    with pytest.raises(ck.ChoreoError, match=r"summed\(\).*line 11 needs 233600 bytes of shared memory"):
        module.summed(a, a)
    small = np.ones((2, 4, 32), np.int32)
    np.testing.assert_array_equal(host(module.summed(small, small)), small * 2 + 1)  # the process goes on


STRIDED = """
__co__ f32 [{e0}, {e1}] picked(f32 [{rows}, {cols}] x) {{
  f32 [{e0}, {e1}] out;
  parallel p by 1 : block {{
    w = dma.copy x.view({e0}, {e1} : {s0}, {s1}).from({o0}, {o1}) => shared;
    parallel {{i, j}} by [{e0}, {e1}] : thread {{
      out.at(i, j) = w.data.at(i, j);
    }}
  }}
  return out;
}}
"""

VIEWS = [
    {
        "rows": 32,
        "cols": 64,
        "e0": 8,
        "e1": 16,
        "s0": 128,
        "s1": 2,
        "o0": 1,
        "o1": 3,
    },  # every other row and column
    {"rows": 16, "cols": 16, "e0": 16, "e1": 16, "s0": 1, "s1": 16, "o0": 0, "o1": 0},  # a transposed view
    {"rows": 8, "cols": 8, "e0": 4, "e1": 4, "s0": 0, "s1": 1, "o0": 0, "o1": 4},  # one row, broadcast
    {
        "rows": 64,
        "cols": 64,
        "e0": 32,
        "e1": 4,
        "s0": 64,
        "s1": 1,
        "o0": 2,
        "o1": 12,
    },  # rows of 16 bytes: vectors
]


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: "x".join(str(v[k]) for k in ("e0", "e1", "s0", "s1")))
def test_strided_views_on_the_gpu_read_what_numpy_strides_read(view: dict[str, int]) -> None:
    source = STRIDED.format(**view)
    x = np.random.default_rng(0).random((view["rows"], view["cols"]), dtype=np.float32)
    start = view["o0"] * view["s0"] + view["o1"] * view["s1"]
    expected = as_strided(x.reshape(-1)[start:], (view["e0"], view["e1"]), (view["s0"] * 4, view["s1"] * 4))
    np.testing.assert_array_equal(host(ck.compile(source, target="cuda").picked(x)), expected)
    np.testing.assert_array_equal(ck.compile(source, target="sim").picked(x), expected)


def test_a_copy_whose_shapes_differ_when_it_runs_raises_and_writes_nothing_past_its_view() -> None:
    from test_data_movement import ROWS_FROM_AN_ARGUMENT

    module = ck.compile(ROWS_FROM_AN_ARGUMENT, target="cuda")
    src = np.arange(256, dtype=np.int32).reshape(4, 64)
    import cupy

    out = cupy.full((8, 64), -1, cupy.int32)
    with pytest.raises(
        ck.ChoreoError, match=r"line 5 .*a copy of shape \[4, 64\] does not fit .*\[rows, 64\]"
    ):
        module.store_rows(src, out, 3)
    assert (out.get() == -1).all()  # neither the 3 rows of the view nor the row past it
    module.store_rows(src, out, 4)  # and the GPU is usable after the error
    np.testing.assert_array_equal(out.get()[:4], src)
    assert (out.get()[4:] == -1).all()


TAIL_ROUND_TRIP = """
__co__ s32 [{tiles}, 8, 4] round_trip(s32 [R, C] x, global s32 [2, R, C] y) {{
  s32 [{tiles}, 8, 4] out;
  parallel {{i, j}} by [cdiv(R, 8) + 1, cdiv(C, 4)] : block {{
    shared s32 [8, 4] tile;
    into = y.at(0);
    dma.copy x.subspan(8, 4).at(i, j) => tile;
    dma.copy tile => out.at(i * cdiv(C, 4) + j);
    dma.copy tile => into.subspan(8, 4).at(i, j);
  }}
  return out;
}}
"""


@pytest.mark.parametrize(("rows", "cols"), [(70, 40), (5, 3), (8, 4), (17, 1), (1, 9), (16, 13)])
def test_tail_tiles_read_zeros_and_write_only_what_exists_as_on_the_sim(rows: int, cols: int) -> None:
    """Tiles of 8 x 4 of an R x C array, short in the rows, the columns, both or neither, and a row of
    tiles wholly past the end: each comes out whole with zeros past the array, and the copy back into
    the first of two heads of y writes that head only (the second keeps its values), on CUDA as on the
    sim and as NumPy says."""
    tall, wide = -(-rows // 8), -(-cols // 4)
    source = TAIL_ROUND_TRIP.format(tiles=(tall + 1) * wide)
    rng = np.random.default_rng(rows * 100 + cols)
    x = rng.integers(1, 100, (rows, cols)).astype(np.int32)
    y = rng.integers(-100, -1, (2, rows, cols)).astype(np.int32)
    padded = np.pad(x, ((0, (tall + 1) * 8 - rows), (0, wide * 4 - cols)))
    expected = padded.reshape(tall + 1, 8, wide, 4).transpose(0, 2, 1, 3).reshape(-1, 8, 4)
    results = {}
    for target in ("sim", "cuda"):
        written = y.copy()
        results[target] = host(ck.compile(source, target=target).round_trip(x, written)), written
    for target, (tiles, written) in results.items():
        np.testing.assert_array_equal(tiles, expected, err_msg=target)
        np.testing.assert_array_equal(written, np.stack([x, y[1]]), err_msg=target)
