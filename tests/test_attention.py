"""bench/attention.co, FlashAttention forward in Choreo, against NumPy: o and the log-sum-exp.

On the sim at small sizes (two heads of 256 rows, so each block streams two K/V tiles through the
ring and the causal kernel masks a diagonal tile; 200 rows, whose last query and key tiles are
tails), for both head dims, causal or not, fp16 and bf16, with the two consumers as ping-pong paths
(the default) and as one path (PINGPONG=0); on the GPU (marked `gpu`) at sizes with more tiles than ring slots,
S = 1000 among them, against NumPy and the sim. The speed variants (VARIANTS: -D defines that
bench/attention.py times) likewise, on the sim and on the GPU. The persistent kernel (PERSISTENT=1) with
fewer blocks than work items, so each block walks several and its rings and Q slots run on across them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import choreo_kernel as ck
from choreo_kernel.compiler.cuda import inline_header
from choreo_kernel.profiling.tools import find_tool

SOURCE = (Path(__file__).resolve().parent.parent / "bench" / "attention.co").read_text(encoding="utf-8")
TYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
TOLERANCE = {"f16": 2e-3, "bf16": 2e-2}  # max |o - reference| for inputs of unit variance


def inputs(heads: int, rows: int, dim: int, elem: str, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((heads, rows, dim)).astype(TYPES[elem]) for _ in range(3)]


def reference(q: Any, k: Any, v: Any, heads: int, causal: bool) -> tuple[np.ndarray, np.ndarray]:
    """o [heads, rows, dim] and the natural log-sum-exp [heads, rows], in f64."""
    q64, k64, v64 = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    rows, dim = q64.shape[1], q64.shape[2]
    scores = q64 @ k64.transpose(0, 2, 1) / np.sqrt(dim)
    if causal:
        scores = np.where(np.tril(np.ones((rows, rows), dtype=bool)), scores, -np.inf)
    top = scores.max(-1, keepdims=True)
    weights = np.exp(scores - top)
    total = weights.sum(-1, keepdims=True)
    return weights / total @ v64, (top + np.log(total))[..., 0]


def run(
    target: str,
    dim: int,
    causal: bool,
    elem: str,
    heads: int,
    rows: int,
    pingpong: int = 1,
    variant: dict[str, int] | None = None,
) -> tuple[Any, Any, list[np.ndarray]]:
    defines = {"HEAD_DIM": dim, "CAUSAL": int(causal), "ELEM": elem, "PINGPONG": pingpong, **(variant or {})}
    module = ck.compile(SOURCE, defines, target=target)
    q, k, v = inputs(heads, rows, dim, elem)
    o = np.full((heads, rows, dim), np.nan, dtype=TYPES[elem])
    lse = np.full((heads, rows), np.nan, dtype=np.float32)
    module.attention(q, k, v, o, lse)
    return o, lse, [q, k, v]


def check(o: Any, lse: Any, q: Any, k: Any, v: Any, heads: int, causal: bool, elem: str) -> None:
    expected_o, expected_lse = reference(q, k, v, heads, causal)
    assert not np.isnan(np.asarray(o, dtype=np.float32)).any(), "o is not fully written"
    assert np.abs(np.asarray(o, dtype=np.float64) - expected_o).max() <= TOLERANCE[elem]
    assert np.abs(np.asarray(lse, dtype=np.float64) - expected_lse).max() <= 1e-4


@pytest.mark.parametrize(
    ("dim", "causal", "elem", "rows", "pingpong"),
    [
        (64, False, "f16", 256, 1),
        (128, True, "f16", 256, 1),
        (64, True, "bf16", 256, 1),
        (128, False, "bf16", 256, 1),
        (128, False, "f16", 256, 0),
        (64, True, "f16", 384, 0),
    ],
)
def test_attention_matches_numpy_on_the_sim(
    dim: int, causal: bool, elem: str, rows: int, pingpong: int
) -> None:
    o, lse, (q, k, v) = run("sim", dim, causal, elem, heads=2, rows=rows, pingpong=pingpong)
    check(o, lse, q, k, v, 2, causal, elem)


@pytest.mark.parametrize(
    ("dim", "causal", "rows", "pingpong"),
    [(64, False, 200, 1), (128, True, 200, 1), (64, True, 100, 1), (128, False, 200, 0), (64, False, 72, 1)],
)
def test_any_sequence_length_on_the_sim(dim: int, causal: bool, rows: int, pingpong: int) -> None:
    """Tails: a last query tile of fewer than 128 (or 64) rows, a last key tile of fewer than 128 keys;
    o is NaN-poisoned and has no rows past S, so a store past the tail or a missing row both fail."""
    o, lse, (q, k, v) = run("sim", dim, causal, "f16", heads=2, rows=rows, pingpong=pingpong)
    check(o, lse, q, k, v, 2, causal, "f16")


# The speed variants of bench/attention.co (bench/attention.py --variants), each with both head dims, causal
# or not, a tail (S = 200) and both consumer schedules.
VARIANTS = {
    "wide": {"WIDE": 1},
    "wide-tma-store": {"WIDE": 1, "TMA_STORE": 1},
    "wide-branchy-mask": {"WIDE": 1, "MASK_EVERY_TILE": 0},
    "persistent": {"PERSISTENT": 1, "BLOCKS": 3},
}
SHAPES = [
    (128, False, 256, 1),
    (128, True, 200, 0),
    (64, True, 256, 1),
    (128, False, 200, 1),
    (64, False, 200, 0),
]


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize(("dim", "causal", "rows", "pingpong"), SHAPES)
def test_speed_variants_match_numpy_on_the_sim(
    variant: str, dim: int, causal: bool, rows: int, pingpong: int
) -> None:
    defines = VARIANTS[variant]
    o, lse, (q, k, v) = run("sim", dim, causal, "f16", 2, rows, pingpong, defines)
    check(o, lse, q, k, v, 2, causal, "f16")


@pytest.mark.parametrize(
    ("dim", "causal", "heads", "rows", "pingpong", "extra"),
    [
        (64, False, 3, 384, 1, {}),
        (128, True, 3, 384, 0, {}),
        (128, True, 5, 520, 1, {"HEAD_GROUP": 2}),  # sections of 2 heads, the last of 1; tails
        (64, False, 6, 128, 1, {}),  # one key tile an item: a Q slot released an item early is overwritten
        (64, True, 3, 256, 1, {"TMA_STORE": 1}),
        (64, True, 3, 384, 0, {"STAGES": 3}),  # the default at D = 64, causal
        (64, False, 3, 384, 1, {"CONSUMERS": 3}),  # 192-row items, three consumers in turn
        (64, True, 2, 200, 0, {"CONSUMERS": 3}),
        (64, True, 2, 520, 1, {"CONSUMERS": 3, "PERSISTENT": 0}),
        (128, False, 3, 200, 1, {"WIDE": 0}),  # Q in two panels, O stored from registers
    ],
)
def test_a_persistent_kernel_walks_several_items_a_block_on_the_sim(
    dim: int, causal: bool, heads: int, rows: int, pingpong: int, extra: dict[str, int]
) -> None:
    """Two blocks for 4 to 25 work items (query tile, head): the K/V rings, the Q slots and (TMA_STORE)
    the O stores through them run on from one item to the next, for every completion order tried.
    CONSUMERS=3: items of 192 query rows, the third consumer's tail rows masked (S = 200, 520)."""
    defines = {"HEAD_DIM": dim, "CAUSAL": int(causal), "PINGPONG": pingpong, "PERSISTENT": 1, "BLOCKS": 2}
    module = ck.compile(SOURCE, {**defines, **extra}, target="sim")
    q, k, v = inputs(heads, rows, dim, "f16")
    for seed in range(2):
        o = np.full((heads, rows, dim), np.nan, dtype=np.float16)
        lse = np.full((heads, rows), np.nan, dtype=np.float32)
        module.attention(q, k, v, o, lse, seed=seed)
        check(o, lse, q, k, v, heads, causal, "f16")


def test_a_causal_kernel_ignores_the_keys_after_each_query() -> None:
    """Changing the last key and value changes no row of the causal output but the last 128 (its block)."""
    module = ck.compile(SOURCE, {"HEAD_DIM": 64, "CAUSAL": 1}, target="sim")
    q, k, v = inputs(1, 256, 64, "f16")
    outputs = []
    for scale in (1, 3):
        k[0, -1] *= scale
        v[0, -1] *= scale
        o = np.zeros((1, 256, 64), np.float16)
        module.attention(q, k, v, o, np.zeros((1, 256), np.float32))
        outputs.append(o.astype(np.float32))
    assert np.array_equal(outputs[0][0, :255], outputs[1][0, :255])
    assert not np.array_equal(outputs[0][0, 255], outputs[1][0, 255])


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("dim", "causal", "elem", "rows", "pingpong"),
    [(d, c, e, 384, 1) for d in (64, 128) for c in (False, True) for e in ("f16", "bf16")]
    + [
        (d, c, "f16", r, p)
        for d, c, r, p in ((128, False, 1000, 1), (64, True, 1000, 1), (128, True, 520, 0))
    ],
)
def test_attention_matches_numpy_and_the_sim_on_the_gpu(
    dim: int, causal: bool, elem: str, rows: int, pingpong: int
) -> None:
    o, lse, (q, k, v) = run("cuda", dim, causal, elem, heads=2, rows=rows, pingpong=pingpong)
    check(o, lse, q, k, v, 2, causal, elem)
    sim_o, sim_lse, _ = run("sim", dim, causal, elem, heads=2, rows=rows, pingpong=pingpong)
    assert np.abs(np.asarray(o, np.float32) - np.asarray(sim_o, np.float32)).max() <= TOLERANCE[elem]
    assert np.abs(np.asarray(lse) - np.asarray(sim_lse)).max() <= 1e-4


@pytest.mark.gpu
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize(
    ("dim", "causal", "rows", "pingpong"), [(128, False, 1000, 1), (128, True, 520, 0), (64, True, 384, 1)]
)
def test_speed_variants_match_numpy_and_the_sim_on_the_gpu(
    variant: str, dim: int, causal: bool, rows: int, pingpong: int
) -> None:
    defines = VARIANTS[variant]
    o, lse, (q, k, v) = run("cuda", dim, causal, "f16", 2, rows, pingpong, defines)
    check(o, lse, q, k, v, 2, causal, "f16")
    sim_o, sim_lse, _ = run("sim", dim, causal, "f16", 2, rows, pingpong, defines)
    assert np.abs(np.asarray(o, np.float32) - np.asarray(sim_o, np.float32)).max() <= TOLERANCE["f16"]
    assert np.abs(np.asarray(lse) - np.asarray(sim_lse)).max() <= 1e-4


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("dim", "causal", "elem", "heads", "blocks"),
    [
        (128, False, "f16", 24, 132),
        (128, True, "bf16", 24, 132),
        (64, True, "f16", 3, 5),
        (64, False, "bf16", 3, 5),
    ],
)
def test_a_persistent_kernel_matches_numpy_on_the_gpu(
    dim: int, causal: bool, elem: str, heads: int, blocks: int
) -> None:
    """S = 1000 (8 query tiles, tails): 192 work items on 132 blocks, or 24 on 5 (several each), against NumPy."""
    o, lse, (q, k, v) = run(
        "cuda", dim, causal, elem, heads, 1000, 1 - int(causal), {"PERSISTENT": 1, "BLOCKS": blocks}
    )
    check(o, lse, q, k, v, heads, causal, elem)


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("causal", "elem", "persistent"), [(False, "f16", 1), (True, "bf16", 1), (True, "f16", 0)]
)
def test_three_consumers_match_numpy_on_the_gpu(causal: bool, elem: str, persistent: int) -> None:
    """CONSUMERS=3 at D = 64 (BM = 192, FlashAttention-3's head-dim-64 tile), S = 1000: 6 query tiles, the
    last of 40 rows."""
    variant = {"CONSUMERS": 3, "PERSISTENT": persistent, "BLOCKS": 5}
    o, lse, (q, k, v) = run("cuda", 64, causal, elem, 3, 1000, 1, variant)
    check(o, lse, q, k, v, 3, causal, elem)


NVCC, NVDISASM = find_tool("nvcc"), find_tool("nvdisasm")


@pytest.mark.skipif(NVCC is None, reason="needs nvcc (no GPU needed)")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_three_consumers_fit_their_registers(causal: bool, tmp_path: Path) -> None:
    """Four warpgroups share 64K registers a thread slot: the producer keeps 32 and each consumer gets 160
    (40 would leave them 152, where the D = 64 consumer spills), and ptxas spills nothing."""
    defines = {"HEAD_DIM": 64, "CAUSAL": int(causal), "CONSUMERS": 3}
    source = ck.compile(SOURCE, defines, target="cuda").cuda_source
    assert set(re.findall(r"setmaxnreg_(\w+)<(\d+)>", source)) == {("dec", "32"), ("inc", "160")}
    unit = tmp_path / "attention.cu"
    unit.write_text(inline_header(source), encoding="utf-8")
    built = subprocess.run(
        [str(NVCC), "-arch=sm_90a", "-cubin", "-Xptxas", "-v", "-o", str(tmp_path / "a.cubin"), str(unit)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in built.stderr, built.stderr


def longest_chain(sass: list[str], opcode: str) -> int:
    """The most `opcode` instructions in one chain where each reads the register the previous wrote (any
    other writer of a register ends its chain): how serial a reduction is, in program order."""
    depth: dict[str, int] = {}
    longest = 0
    for line in sass:
        found = re.search(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)\s+([^;]*);", line)
        if found is None:
            continue
        registers = re.findall(r"\bR\d+\b", found.group(2))
        if not registers:
            continue
        target, sources = registers[0], registers[1:]
        if found.group(1).split(".")[0] == opcode:
            depth[target] = 1 + max((depth.get(r, 0) for r in sources), default=0)
            longest = max(longest, depth[target])
        else:
            depth[target] = 0
    return longest


@pytest.mark.skipif(NVCC is None or NVDISASM is None, reason="needs nvcc and nvdisasm (no GPU needed)")
@pytest.mark.parametrize("persistent", [0, 1], ids=["grid", "persistent"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_the_softmax_builds_to_short_chains_and_one_ex2_per_element(
    causal: bool, persistent: int, tmp_path: Path
) -> None:
    """The kernel (D = 128, f16), one block per item or persistent, for sm_90a: no spills or local memory;
    each row maximum and sum is a tree (a chain of at most log2(32) + 1 FMNMX/FADD: it was 17 in a serial
    loop, 32 of each thread's columns a row), and __exp2f is a bare MUFU.EX2 (exp2f's subnormal path tests
    x >= -126)."""
    defines = {"HEAD_DIM": 128, "CAUSAL": int(causal), "PERSISTENT": persistent}
    source = ck.compile(SOURCE, defines, target="cuda").cuda_source
    unit = tmp_path / "attention.cu"
    unit.write_text(inline_header(source), encoding="utf-8")
    cubin = tmp_path / "attention.cubin"
    built = subprocess.run(
        [str(NVCC), "-arch=sm_90a", "-cubin", "-Xptxas", "-v", "-o", str(cubin), str(unit)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in built.stderr, built.stderr
    sass = subprocess.run(
        [str(NVDISASM), "-c", str(cubin)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert sum("MUFU.EX2" in line for line in sass) >= 64
    assert not [line for line in sass if "FSETP.GEU.AND" in line and "-126" in line]
    assert longest_chain(sass, "FMNMX") <= 7
    assert longest_chain(sass, "FADD") <= 7
