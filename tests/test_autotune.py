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


def test_the_cluster_shape_is_tuned_as_a_define(tmp_path: Path) -> None:
    """bench/gemm_ws.co's -D CLUSTER: clusters of 4 do not tile a grid of 2 blocks along M, so that point
    fails at the call; clusters of 1 and 2 both compute the product, and one of them is chosen."""
    source = (Path(__file__).resolve().parent.parent / "bench" / "gemm_ws.co").read_text(encoding="utf-8")
    grid = {"CLUSTER": [4, 1, 2], "BN": [128], "STAGES": [2]}
    tuned = ck.autotune(source, "gemm_ws", grid, target="sim", cache_dir=tmp_path, repeats=1)
    rng = np.random.default_rng(3)
    lhs = rng.random((256, 64), dtype=np.float32).astype(np.float16)
    rhs = rng.random((128, 64), dtype=np.float32).astype(np.float16)
    out = np.zeros((256, 128), np.float16)
    tuned(lhs, rhs, out)
    np.testing.assert_allclose(out, lhs.astype(np.float32) @ rhs.astype(np.float32).T, rtol=1e-2, atol=1e-2)
    ((key, sweep),) = tuned.sweeps.items()
    assert [point.error is not None for point in sweep.points] == [True, False, False]
    assert "not a multiple of its clusters' 4" in str(sweep.points[0].error)
    assert tuned.choices[key]["CLUSTER"] in (1, 2)


class FakeDeviceArray:
    """Counts its copies to the host, as CuPy's `.get()` would make them."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.copies = 0

    def get(self) -> np.ndarray:
        self.copies += 1
        return self.values


def test_what_a_call_writes_is_copied_to_the_host_only_when_checked() -> None:
    """The timed runs of a point return WrittenArguments: a copy of the output inside them would be
    timed with the kernel (a 128 MB copy outweighs an 8192³ GEMM) and rank the points by it."""
    from choreo_kernel.tuning.autotune import WrittenArguments

    out = FakeDeviceArray(np.arange(6, dtype=np.float32).reshape(2, 3))
    for _ in range(5):  # what the timed runs return
        written = WrittenArguments([out])
    assert out.copies == 0
    np.testing.assert_array_equal(np.array(written, copy=True), np.arange(6, dtype=np.float32))
    assert out.copies == 1


def test_a_known_shape_goes_straight_to_its_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the first call of a shape, a call looks up neither the choice nor the build: one dict lookup
    by the key, then the build's function."""
    tuned = ck.autotune(SOURCE, "scaled", {"TILE": [16, 32]}, target="sim", cache_dir=tmp_path, repeats=1)
    x = np.arange(64, dtype=np.float32)
    tuned(x)
    assert tuned.choice([x]) == next(iter(tuned.choices.values()))  # the public lookup answers as before
    looked_up: list[object] = []
    monkeypatch.setattr(tuned, "_choice", lambda key, args: looked_up.append(key))
    monkeypatch.setattr(tuned, "_module", lambda defines: looked_up.append(defines))
    np.testing.assert_array_equal(tuned(x), x * 2)
    np.testing.assert_array_equal(tuned(np.ones(64, np.float32)), np.full(64, 2, np.float32))
    assert looked_up == []
