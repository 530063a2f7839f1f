"""ck.autotune: the best configuration per shape, chosen once, kept on disk, dispatched to later."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import choreo_kernel as ck

# SCALE multiplies the result, so a point that is "faster" but wrong is caught by the check; TILE
# changes the blocking; TILE=2048 makes a block of too many threads, so that point fails to compile.
SOURCE = """\
#ifndef TILE
#define TILE 16
#endif
#ifndef SCALE
#define SCALE 2
#endif
__co__ f32 [N] scaled(f32 [N] x) {
  f32 [N] y;
  parallel b by N / TILE : block, t by TILE : thread {
    y.at(b * TILE + t) = x.at(b * TILE + t) * SCALE;
  }
  return y;
}
"""


def test_the_first_call_of_a_shape_tunes_and_the_choice_is_remembered_on_disk(tmp_path: Path) -> None:
    tuned = ck.autotune(
        SOURCE, "scaled", {"TILE": [2048, 16, 32]}, target="sim", cache_dir=tmp_path, repeats=2
    )
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(tuned(x), x * 2)
    ((key, sweep),) = tuned.sweeps.items()
    assert [point.error is not None for point in sweep.points] == [True, False, False]
    assert tuned.choices[key]["TILE"] in (16, 32)
    again = ck.autotune(SOURCE, "scaled", {"TILE": [2048, 16, 32]}, target="sim", cache_dir=tmp_path)
    np.testing.assert_array_equal(again(x), x * 2)
    assert again.sweeps == {} and again.choices == tuned.choices  # read from disk, not tuned again
    assert list(tmp_path.glob("autotune/scaled-*.json"))


def test_a_new_shape_is_tuned_on_its_own(tmp_path: Path) -> None:
    tuned = ck.autotune(SOURCE, "scaled", {"TILE": [16, 32]}, target="sim", cache_dir=tmp_path, repeats=1)
    tuned(np.ones(64, np.float32))
    tuned(np.ones(128, np.float32))
    assert len(tuned.sweeps) == 2


def test_a_point_whose_result_differs_from_the_first_is_never_chosen(tmp_path: Path) -> None:
    tuned = ck.autotune(SOURCE, "scaled", {"SCALE": [2, 3]}, target="sim", cache_dir=tmp_path, repeats=1)
    x = np.ones(64, np.float32)
    np.testing.assert_array_equal(tuned(x), x * 2)
    (sweep,) = tuned.sweeps.values()
    assert sweep.points[1].difference is not None


def test_no_point_that_runs_is_an_error_naming_each_point(tmp_path: Path) -> None:
    tuned = ck.autotune(SOURCE, "scaled", {"TILE": [2048, 4096]}, target="sim", cache_dir=tmp_path, repeats=1)
    with pytest.raises(ck.ChoreoError, match=r"TILE=2048: .*TILE=4096: "):
        tuned(np.ones(64, np.float32))


def test_a_define_the_source_does_not_guard_is_refused(tmp_path: Path) -> None:
    fixed = SOURCE.replace("#ifndef SCALE\n#define SCALE 2\n#endif", "#define SCALE 2")
    with pytest.raises(ck.ChoreoError, match="defines SCALE itself"):
        ck.autotune(fixed, "scaled", {"SCALE": [2, 3]}, target="sim", cache_dir=tmp_path)
