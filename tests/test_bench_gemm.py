"""bench/gemm.py's GEMMs that take any shape (gemm_ws.co, gemm_ws_persistent.co) are correct on sim for
sizes that are no multiple of their tiles, in each operand type the bench times (the persistent one
also with its last wave split by stream-K); their CUDA lowers.
The 2:4 sparse one (gemm_ws_sparse.co) matches NumPy on sim and lowers to sparse WGMMA."""

from __future__ import annotations

import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import choreo_kernel as ck
from choreo_kernel.compiler.cuda import inline_header
from choreo_kernel.compiler.semantics import sparsity
from choreo_kernel.profiling.tools import find_tool

BENCH = Path(__file__).resolve().parent.parent / "bench"
TYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f8_e4m3": ml_dtypes.float8_e4m3fn}
CASES = [
    ("gemm_ws", "f16", {"BN": 128, "STAGES": 2}, (200, 136, 72)),
    ("gemm_ws", "f8_e4m3", {"BN": 128, "STAGES": 2, "BK": 128}, (136, 136, 144)),
    ("gemm_ws", "f16", {"BN": 128, "STAGES": 2, "CLUSTER": 2}, (200, 136, 72)),  # rhs multicast in clusters
    ("gemm_ws_persistent", "bf16", {"BN": 128, "STAGES": 3, "BLOCKS": 3}, (300, 264, 136)),
    ("gemm_ws_persistent", "f16", {"BN": 128, "STAGES": 3, "BLOCKS": 3, "TMA_STORE": 1}, (300, 264, 136)),
    # 256x128 tiles: each consumer warpgroup multiplies 128 rows (two m64 fragments)
    ("gemm_ws", "f16", {"BM": 256, "BN": 128, "STAGES": 2}, (300, 136, 72)),
    ("gemm_ws", "f16", {"BM": 256, "BN": 128, "STAGES": 2, "CLUSTER": 2}, (800, 136, 72)),
    # tiles walked in groups of tile rows; the last group has fewer rows (5 tile rows, groups of 2)
    ("gemm_ws_persistent", "f16", {"BN": 128, "STAGES": 3, "BLOCKS": 3, "GROUP_M": 2}, (520, 264, 136)),
    (
        "gemm_ws_persistent",
        "f16",
        {"BM": 256, "BN": 128, "STAGES": 2, "BLOCKS": 3, "GROUP_M": 2},
        (600, 264, 72),
    ),
    # clusters of two blocks on pairs of tile rows; 3 tile rows: the last pair's second tile is past M
    ("gemm_ws_persistent", "f16", {"BN": 128, "STAGES": 3, "BLOCKS": 4, "CLUSTER": 2}, (300, 264, 136)),
    (
        "gemm_ws_persistent",
        "f16",
        {"BN": 128, "STAGES": 3, "BLOCKS": 4, "CLUSTER": 2, "GROUP_M": 2},
        (700, 264, 72),
    ),
    (
        "gemm_ws_persistent",
        "f16",
        {"BN": 128, "STAGES": 2, "BLOCKS": 4, "CLUSTER": 2, "TMA_STORE": 1},
        (300, 264, 72),
    ),
    # the two consumer warpgroups take whole tiles in turns, each from its own ring
    ("gemm_ws_persistent", "f16", {"STAGES": 2, "BLOCKS": 3, "PINGPONG": 1}, (300, 264, 136)),
    ("gemm_ws_persistent", "bf16", {"STAGES": 2, "BLOCKS": 2, "PINGPONG": 1, "GROUP_M": 2}, (300, 400, 72)),
    ("gemm_ws_persistent", "f16", {"STAGES": 2, "BLOCKS": 4, "PINGPONG": 1, "CLUSTER": 2}, (300, 264, 136)),
    ("gemm_ws_persistent", "f8_e4m3", {"BK": 128, "STAGES": 2, "BLOCKS": 2, "PINGPONG": 1}, (136, 264, 144)),
    ("gemm_ws", "f8_e4m3", {"BK": 128, "BM": 256, "STAGES": 2, "CLUSTER": 2}, (300, 136, 144)),
    # one stage's MMAs in flight while the next one's are issued; K = 136 is 3 stages, run as 4 (the last
    # one wholly past K: TMA's zeros), K = 72 as 2 (the loop over pairs runs no iteration)
    ("gemm_ws_persistent", "f16", {"BN": 128, "STAGES": 3, "BLOCKS": 3, "IN_FLIGHT": 1}, (300, 264, 136)),
    (
        "gemm_ws_persistent",
        "bf16",
        {"BN": 128, "STAGES": 2, "BLOCKS": 4, "CLUSTER": 2, "TMA_STORE": 1, "IN_FLIGHT": 1},
        (300, 264, 72),
    ),
    (
        "gemm_ws_persistent",
        "f16",
        {"BM": 256, "BN": 128, "STAGES": 3, "BLOCKS": 3, "GROUP_M": 2, "TMA_STORE": 1, "IN_FLIGHT": 1},
        (600, 264, 328),
    ),
    ("gemm_ws_persistent", "f8_e4m3", {"BK": 128, "STAGES": 2, "BLOCKS": 2, "IN_FLIGHT": 1}, (136, 264, 400)),
    # stream-K: the 9 tiles of 300x264 (3 x 3 at 128x128) on 5 blocks are one whole wave and 4 tail
    # tiles, whose 4 x 3 stages (K = 136: 3 stages, the last one past K) make runs of 2 and 3 stages:
    # every tail tile is split between two blocks, one block's run spans two tiles
    ("gemm_ws_persistent", "f16", {"BN": 128, "STAGES": 3, "BLOCKS": 5, "STREAMK": 1}, (300, 264, 136)),
    # 4 blocks: one tail tile (R divides BLOCKS), 3 stages for 4 blocks: one block has an empty run
    ("gemm_ws_persistent", "f16", {"BN": 128, "STAGES": 2, "BLOCKS": 4, "STREAMK": 1}, (300, 264, 136)),
    # the epilogue through TMA, tiles in groups of rows; K = 520 (9 stages, the last one partial): runs of
    # 7 and 8 stages, not a multiple of any piece count
    (
        "gemm_ws_persistent",
        "bf16",
        {"BN": 128, "STAGES": 3, "BLOCKS": 5, "STREAMK": 1, "TMA_STORE": 1, "GROUP_M": 2},
        (300, 264, 520),
    ),
    # 256x128 tiles, and fewer tiles (4) than blocks: no whole wave, every tile in the tail
    (
        "gemm_ws_persistent",
        "f16",
        {"BM": 256, "BN": 128, "STAGES": 2, "BLOCKS": 5, "STREAMK": 1},
        (400, 200, 264),
    ),
    ("gemm_ws_persistent", "f8_e4m3", {"BK": 128, "STAGES": 2, "BLOCKS": 5, "STREAMK": 1}, (136, 264, 400)),
]


def _compile(program: str, defines: dict[str, object], target: str) -> ck.Module:
    source = (BENCH / f"{program}.co").read_text(encoding="utf-8")
    return ck.compile(source, defines, target=target, filename=f"{program}.co")


@pytest.mark.parametrize(("program", "element", "defines", "shape"), CASES, ids=lambda v: str(v))
def test_tails_are_written_and_match_numpy(
    program: str, element: str, defines: dict[str, object], shape: tuple[int, int, int]
) -> None:
    m, n, k = shape
    rng = np.random.default_rng(16)
    lhs = (rng.random((m, k), dtype=np.float32) * 2 - 1).astype(TYPES[element])
    rhs = (rng.random((n, k), dtype=np.float32) * 2 - 1).astype(TYPES[element])
    out = np.full((m, n), np.nan, np.float16)
    module = _compile(program, {**defines, "ELEM": element}, "sim")
    module.function(program)(lhs, rhs, out)
    assert not np.isnan(out).any()
    expected = lhs.astype(np.float32) @ rhs.astype(np.float32).T
    assert np.abs(out.astype(np.float32) - expected).max() <= 1e-2 * np.abs(expected).max()


def _sparse_operands(m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A 2:4 sparse f16 lhs (packed, metadata, dense) and an f16 rhs."""
    rng = np.random.default_rng(24)
    keep = np.argsort(rng.random((m, k // 4, 4)), axis=-1)[..., :2]
    dense = np.zeros((m, k // 4, 4), np.float16)
    np.put_along_axis(dense, keep, (rng.random((m, k // 4, 2)) * 2 - 1).astype(np.float16), axis=-1)
    dense = dense.reshape(m, k)
    packed, metadata = sparsity.compress(dense)
    return packed, metadata, dense, (rng.random((n, k), dtype=np.float32) * 2 - 1).astype(np.float16)


def test_the_sparse_gemm_matches_numpy_on_sim() -> None:
    m, n, k = 128, 128, 128
    packed, metadata, dense, rhs = _sparse_operands(m, n, k)
    out = np.full((m, n), np.nan, np.float16)
    _compile("gemm_ws_sparse", {"BN": 128, "STAGES": 2}, "sim").function("gemm_ws_sparse")(
        packed, metadata, rhs, out
    )
    expected = dense.astype(np.float32) @ rhs.astype(np.float32).T
    assert np.abs(out.astype(np.float32) - expected).max() <= 1e-2 * np.abs(expected).max()


def test_the_sparse_gemm_lowers_to_sparse_wgmma() -> None:
    source = _compile("gemm_ws_sparse", {}, "cuda").cuda_source
    assert "wgmma.mma_async.sp.sync.aligned.m64n256k32.f32.f16.f16" in source
    assert "choreo::wgmma_sparse_metadata<false>(" in source


@pytest.mark.parametrize("program", ["gemm_ws", "gemm_ws_persistent"])
def test_the_epilogue_stores_masked(program: str) -> None:
    source = _compile(program, {}, "cuda").cuda_source
    assert "store_accumulator<256, 1, 0>(acc, " in source and "M - row * 64, N - " in source


def test_a_store_drained_a_tile_later_is_a_bulk_wait() -> None:
    """The TMA-store epilogue waits the previous tile's store (a future named before, in the source,
    the store that binds it) with the bulk-copy wait, not with cp.async's."""
    source = _compile("gemm_ws_persistent", {"STAGES": 3, "TMA_STORE": 1}, "cuda").cuda_source
    wait = source.index(": wait stored;")  # the first: the previous tile's, in the loop
    assert "choreo::bulk_wait_group();" in source[wait : wait + 200]
    assert "cp_async_wait" not in source and "choreo::tma_store(&out_tma" in source


class _DeviceBits:
    """What a device array of bf16 bits looks like to the signature check (no GPU needed)."""

    __cuda_array_interface__: dict[str, object] = {}

    def __init__(self, dtype: object, shape: tuple[int, ...]) -> None:
        self.dtype = np.dtype(dtype)  # type: ignore[call-overload]
        self.shape = shape


def test_a_device_array_of_bits_passes_for_a_type_cupy_lacks() -> None:
    """bench/gemm.py hands the bf16 and FP8 kernels PyTorch's tensors as their bits (CuPy has no such
    dtypes); a host array must still have its own dtype."""
    from choreo_kernel.compiler.driver import analyze
    from choreo_kernel.runtime.signature import bind_arguments

    source = "__co__ void f(bf16 [4] a, f8_e4m3 [4] b) { }"
    function = analyze(source, target="cuda").functions["f"].function
    bind_arguments(function, [_DeviceBits(np.uint16, (4,)), _DeviceBits(np.uint8, (4,))])
    with pytest.raises(ck.ChoreoError, match="element type bf16, got uint16"):
        bind_arguments(function, [np.zeros(4, np.uint16), _DeviceBits(np.uint8, (4,))])
    with pytest.raises(ck.ChoreoError, match="element type f8_e4m3, got uint16"):
        bind_arguments(function, [_DeviceBits(np.uint16, (4,)), _DeviceBits(np.uint16, (4,))])


@pytest.mark.gpu
@pytest.mark.parametrize("element", ["bf16", "f8_e4m3"])
def test_bench_gemm_takes_device_bits_and_tails_on_the_gpu(element: str) -> None:
    """As bench/gemm.py calls it: device arrays of the operands' bits, a shape with tails, against NumPy."""
    import cupy  # type: ignore[import-not-found]

    m, n, k = 200, 264, 272
    rng = np.random.default_rng(16)
    lhs = (rng.random((m, k), dtype=np.float32) * 2 - 1).astype(TYPES[element])
    rhs = (rng.random((n, k), dtype=np.float32) * 2 - 1).astype(TYPES[element])
    bits = np.uint16 if element == "bf16" else np.uint8
    out = cupy.full((m, n), cupy.nan, dtype=cupy.float16)
    defines = {"ELEM": element, **({"BK": 128} if element == "f8_e4m3" else {})}
    gemm = _compile("gemm_ws", defines, "cuda").function("gemm_ws")
    gemm(cupy.asarray(lhs.view(bits)), cupy.asarray(rhs.view(bits)), out)
    expected = lhs.astype(np.float32) @ rhs.astype(np.float32).T
    result = out.get().astype(np.float32)
    assert np.abs(result - expected).max() <= 1e-2 * np.abs(expected).max()


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("defines", "shape"),
    [
        # 16 x 17 tiles of 128x256: 2 whole waves of 132 and 8 tail tiles, whose 8 x 5 stages leave most
        # blocks an empty run
        ({"GROUP_M": 8, "TMA_STORE": 1}, (2000, 4104, 264)),
        # 72 tiles, all in the tail: 129 stages each, runs of 70 or 71, every tile in two or three pieces
        ({"GROUP_M": 8}, (1000, 2056, 8200)),
        ({"GROUP_M": 8, "BM": 256, "TMA_STORE": 1}, (1000, 2056, 8200)),
    ],
    ids=str,
)
def test_the_stream_k_gemm_matches_numpy_on_the_gpu(
    defines: dict[str, object], shape: tuple[int, int, int]
) -> None:
    """The stream-K tail on the GPU's 132 blocks, where the pieces of a tile run at once in different
    blocks and the last to finish sums them: every element written once and right, whatever the order."""
    import cupy  # type: ignore[import-not-found]

    m, n, k = shape
    rng = np.random.default_rng(16)
    lhs = (rng.random((m, k), dtype=np.float32) * 2 - 1).astype(np.float16)
    rhs = (rng.random((n, k), dtype=np.float32) * 2 - 1).astype(np.float16)
    gemm = _compile("gemm_ws_persistent", {**defines, "STREAMK": 1}, "cuda").function("gemm_ws_persistent")
    expected = lhs.astype(np.float32) @ rhs.astype(np.float32).T
    for _ in range(3):  # the blocks' order differs from call to call
        out = cupy.full((m, n), cupy.nan, dtype=cupy.float16)
        gemm(cupy.asarray(lhs), cupy.asarray(rhs), out)
        got = cupy.asnumpy(out).astype(np.float32)
        assert np.abs(got - expected).max() <= 1e-2 * np.abs(expected).max()


@pytest.mark.gpu
def test_the_sparse_gemm_matches_numpy_on_the_gpu() -> None:
    """bench/gemm.py's f16_sp kernel, as it calls it (device arrays), against NumPy."""
    import cupy  # type: ignore[import-not-found]

    m, n, k = 256, 512, 256
    packed, metadata, dense, rhs = _sparse_operands(m, n, k)
    out = cupy.full((m, n), cupy.nan, dtype=cupy.float16)
    gemm = _compile("gemm_ws_sparse", {}, "cuda").function("gemm_ws_sparse")
    gemm(cupy.asarray(packed), cupy.asarray(metadata), cupy.asarray(rhs), out)
    expected = dense.astype(np.float32) @ rhs.astype(np.float32).T
    got = cupy.asnumpy(out).astype(np.float32)
    assert np.abs(got - expected).max() <= 1e-2 * np.abs(expected).max()


NVCC, NVDISASM = find_tool("nvcc"), find_tool("nvdisasm")
BUILDS = [  # the bench's sizes of the define combinations above; cluster barriers: after each event
    # array's init, and before the exit
    ("gemm_ws", {"BN": 256, "STAGES": 4, "CLUSTER": 2}, 3),
    ("gemm_ws", {"BM": 256, "BN": 128, "STAGES": 4, "CLUSTER": 2}, 3),
    ("gemm_ws_persistent", {"BM": 256, "BN": 128, "STAGES": 4, "CLUSTER": 2, "GROUP_M": 8}, 3),
    ("gemm_ws_persistent", {"BN": 256, "STAGES": 3, "TMA_STORE": 1, "CLUSTER": 2, "GROUP_M": 8}, 3),
    ("gemm_ws_persistent", {"BN": 128, "STAGES": 3, "PINGPONG": 1, "CLUSTER": 2, "GROUP_M": 8}, 5),
]


def _build_without_spills(program: str, defines: dict[str, object], tmp_path: Path) -> None:
    """Builds the program's CUDA for sm_90a into tmp_path/gemm.cubin: no error, no spill."""
    unit = tmp_path / "gemm.cu"
    unit.write_text(inline_header(_compile(program, defines, "cuda").cuda_source), encoding="utf-8")
    built = subprocess.run(
        [str(NVCC), "-arch=sm_90a", "-cubin", "-Xptxas", "-v", "-o", str(tmp_path / "gemm.cubin"), str(unit)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    assert " 0 bytes spill stores" in built.stderr and " 0 bytes spill loads" in built.stderr, built.stderr


@pytest.mark.skipif(NVCC is None, reason="needs nvcc (no GPU needed)")
@pytest.mark.parametrize(
    "defines",
    [{"GROUP_M": 8, "TMA_STORE": 1}, {"GROUP_M": 8, "BM": 256, "TMA_STORE": 1}, {"GROUP_M": 8}],
    ids=str,
)
def test_the_stream_k_tail_builds_without_spills(defines: dict[str, object], tmp_path: Path) -> None:
    """bench/gemm.py's stream-K builds (the bench's BLOCKS and tiles): the tail's pieces add into a
    workspace slot, count their stages with one atomic per warpgroup, and the finishing piece sums."""
    _build_without_spills("gemm_ws_persistent", {**defines, "STREAMK": 1}, tmp_path)
    source = _compile("gemm_ws_persistent", {**defines, "STREAMK": 1}, "cuda").cuda_source
    assert "atomicAdd(&(arrived[tail_tile * 2 + wg - 1])" in source


@pytest.mark.skipif(NVCC is None or NVDISASM is None, reason="needs nvcc and nvdisasm (no GPU needed)")
@pytest.mark.parametrize(("program", "defines", "cluster_barriers"), BUILDS, ids=lambda v: str(v))
def test_cluster_releases_build_without_a_gpu_wide_fence(
    program: str, defines: dict[str, object], cluster_barriers: int, tmp_path: Path
) -> None:
    """The cluster variants build for sm_90a without spills, and the consumers' remote arrivals
    (trigger.cluster, every stage) are not preceded by MEMBAR.ALL.GPU, which ptxas emits for a
    cluster-scope release and which halved the cluster GEMM's speed; the cluster barriers keep theirs."""
    _build_without_spills(program, defines, tmp_path)
    sass = subprocess.run(
        [str(NVDISASM), "-c", str(tmp_path / "gemm.cubin")], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    arrivals = [i for i, line in enumerate(sass) if "SYNCS.ARRIVE.TRANS64.RED" in line]
    assert arrivals
    for at in arrivals:
        assert not any("MEMBAR" in line for line in sass[at - 4 : at]), "\n".join(sass[at - 4 : at + 1])
    assert sum("UCGABAR_ARV" in line for line in sass) == cluster_barriers
