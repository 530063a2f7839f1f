"""bench/attention.co, FlashAttention forward in Choreo, against NumPy: o and the log-sum-exp.

On the sim at small sizes (two heads of 256 rows, so each block streams two K/V tiles through the
ring and the causal kernel masks a diagonal tile), for both head dims, causal or not, fp16 and
bf16; on the GPU (marked `gpu`) at a size with more tiles than ring slots, against NumPy and the sim.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import choreo_kernel as ck

SOURCE = (Path(__file__).resolve().parent.parent / "bench" / "attention.co").read_text(encoding="utf-8")
TYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
TOLERANCE = {"f16": 2e-3, "bf16": 2e-2}  # max |o - reference| for inputs of unit variance


def inputs(heads: int, rows: int, dim: int, elem: str, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((heads * rows, dim)).astype(TYPES[elem]) for _ in range(3)]


def reference(q: Any, k: Any, v: Any, heads: int, causal: bool) -> tuple[np.ndarray, np.ndarray]:
    """o [heads * rows, dim] and the natural log-sum-exp [heads, rows], in f64."""
    q64, k64, v64 = (np.asarray(x, dtype=np.float64).reshape(heads, -1, x.shape[-1]) for x in (q, k, v))
    rows, dim = q64.shape[1], q64.shape[2]
    scores = q64 @ k64.transpose(0, 2, 1) / np.sqrt(dim)
    if causal:
        scores = np.where(np.tril(np.ones((rows, rows), dtype=bool)), scores, -np.inf)
    top = scores.max(-1, keepdims=True)
    weights = np.exp(scores - top)
    total = weights.sum(-1, keepdims=True)
    return (weights / total @ v64).reshape(heads * rows, dim), (top + np.log(total))[..., 0]


def run(
    target: str, dim: int, causal: bool, elem: str, heads: int, rows: int
) -> tuple[Any, Any, list[np.ndarray]]:
    module = ck.compile(SOURCE, {"HEAD_DIM": dim, "CAUSAL": int(causal), "ELEM": elem}, target=target)
    q, k, v = inputs(heads, rows, dim, elem)
    o = np.full((heads * rows, dim), np.nan, dtype=TYPES[elem])
    lse = np.full((heads, rows), np.nan, dtype=np.float32)
    module.attention(q, k, v, o, lse)
    return o, lse, [q, k, v]


def check(o: Any, lse: Any, q: Any, k: Any, v: Any, heads: int, causal: bool, elem: str) -> None:
    expected_o, expected_lse = reference(q, k, v, heads, causal)
    assert not np.isnan(np.asarray(o, dtype=np.float32)).any(), "o is not fully written"
    assert np.abs(np.asarray(o, dtype=np.float64) - expected_o).max() <= TOLERANCE[elem]
    assert np.abs(np.asarray(lse, dtype=np.float64) - expected_lse).max() <= 1e-4


@pytest.mark.parametrize(
    ("dim", "causal", "elem"),
    [(64, False, "f16"), (128, True, "f16"), (64, True, "bf16"), (128, False, "bf16")],
)
def test_attention_matches_numpy_on_the_sim(dim: int, causal: bool, elem: str) -> None:
    o, lse, (q, k, v) = run("sim", dim, causal, elem, heads=2, rows=256)
    check(o, lse, q, k, v, 2, causal, elem)


def test_a_causal_kernel_ignores_the_keys_after_each_query() -> None:
    """Changing the last key and value changes no row of the causal output but the last 128 (its block)."""
    module = ck.compile(SOURCE, {"HEAD_DIM": 64, "CAUSAL": 1}, target="sim")
    q, k, v = inputs(1, 256, 64, "f16")
    outputs = []
    for scale in (1, 3):
        k[-1] *= scale
        v[-1] *= scale
        o = np.zeros((256, 64), np.float16)
        module.attention(q, k, v, o, np.zeros((1, 256), np.float32))
        outputs.append(o.astype(np.float32))
    assert np.array_equal(outputs[0][:255], outputs[1][:255])
    assert not np.array_equal(outputs[0][255], outputs[1][255])


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("dim", "causal", "elem"),
    [(d, c, e) for d in (64, 128) for c in (False, True) for e in ("f16", "bf16")],
)
def test_attention_matches_numpy_and_the_sim_on_the_gpu(dim: int, causal: bool, elem: str) -> None:
    o, lse, (q, k, v) = run("cuda", dim, causal, elem, heads=2, rows=384)
    check(o, lse, q, k, v, 2, causal, elem)
    sim_o, sim_lse, _ = run("sim", dim, causal, elem, heads=2, rows=384)
    assert np.abs(np.asarray(o, np.float32) - np.asarray(sim_o, np.float32)).max() <= TOLERANCE[elem]
    assert np.abs(np.asarray(lse) - np.asarray(sim_lse)).max() <= 1e-4
