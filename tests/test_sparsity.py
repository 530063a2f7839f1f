"""2:4 sparsity metadata and block scaling (compiler/semantics/sparsity.py): the layout by hand,
and what the CUDA lowering makes of the sparse and scaled forms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import choreo_kernel as ck
from choreo_kernel.compiler.semantics import sparsity

CUDA_PROGRAMS = Path(__file__).parent / "cuda"


def test_metadata_layout_by_hand() -> None:
    # groups [1, 0, 0, 2] (positions 0, 3: nibble 0b1100) and [0, 3, 4, 0] (1, 2: 0b1001)
    dense = np.array([[1, 0, 0, 2, 0, 3, 4, 0]], dtype=np.float32)
    packed, metadata = sparsity.compress(dense)
    assert packed.tolist() == [[1, 2, 3, 4]]
    assert metadata.tolist() == [[0x9C]]
    assert sparsity.decompress(packed, metadata).tolist() == dense.tolist()


def test_a_group_with_one_non_zero_keeps_a_zero() -> None:
    dense = np.array([[0, 0, 5, 0, 0, 0, 0, 0]], dtype=np.float32)
    packed, metadata = sparsity.compress(dense)
    assert sparsity.decompress(packed, metadata).tolist() == dense.tolist()


def test_round_trip_of_random_2to4_operands() -> None:
    rng = np.random.default_rng(3)
    keep = np.argsort(rng.random((16, 8, 4)), axis=-1)[..., :2]
    dense = np.zeros((16, 8, 4), dtype=np.float32)
    np.put_along_axis(dense, keep, rng.uniform(1, 2, (16, 8, 2)).astype(np.float32), axis=-1)
    dense = dense.reshape(16, 32)
    packed, metadata = sparsity.compress(dense)
    assert packed.shape == (16, 16) and metadata.shape == (16, 4)
    assert np.array_equal(sparsity.decompress(packed, metadata), dense)


def test_metadata_naming_a_position_twice_is_refused() -> None:
    with pytest.raises(ValueError, match=r"row 0, group 1 \(byte 0\) gives positions 1 and 1"):
        sparsity.decompress(np.ones((1, 4), np.float32), np.array([[0x54]], np.uint8))


def test_the_sim_reports_undefined_metadata() -> None:
    source = (CUDA_PROGRAMS / "gemm_sparse_f16.co").read_text()
    module = ck.compile(source, target="sim", filename="gemm_sparse_f16.co")
    lhs, rhs = np.ones((64, 32), np.float16), np.ones((64, 64), np.float16)
    with pytest.raises(ck.ChoreoError, match="distinct and increasing"):
        module.function("gemm_sparse_f16")(lhs, np.zeros((64, 8), np.uint8), rhs)


def test_compress_refuses_a_dense_group() -> None:
    with pytest.raises(ValueError, match="not 2:4 sparse"):
        sparsity.compress(np.ones((1, 8), dtype=np.float32))


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        (
            "gemm_sparse_f16.co",
            ["wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16", "wgmma_sparse_metadata<false>"],
        ),
        (
            "gemm_sparse_fp8.co",
            ["wgmma.mma_async.sp.sync.aligned.m64n64k64.f32.e4m3.e4m3", "wgmma_sparse_metadata<true>"],
        ),
        ("gemm_fp8_block_scaled.co", ["acc_partial", "choreo::scale_accumulator<64, 1>"]),
        (
            "gemm_fp8_block_scale_after.co",
            ["acc_partial", "choreo::fill_accumulator(acc_partial, 0.0f);  // the next"],
        ),
    ],
)
def test_the_cuda_lowering_uses_the_sparse_and_scaled_forms(program: str, expected: list[str]) -> None:
    source = ck.compile((CUDA_PROGRAMS / program).read_text(), target="cuda", filename=program).cuda_source
    for text in expected:
        assert text in source


@pytest.mark.parametrize("program", ["gemm_sparse_f16.co", "gemm_sparse_fp8.co"])
def test_the_metadata_tile_keeps_plain_rows(program: str) -> None:
    """The metadata register is gathered byte by byte from row-major rows: its shared tile gets no WGMMA
    swizzle (A and B do), or the copy into it would scramble the bytes."""
    source = ck.compile((CUDA_PROGRAMS / program).read_text(), target="cuda", filename=program).cuda_source
    declaration = next(line for line in source.splitlines() if "unsigned char* const ms = " in line)
    assert "swizzled" not in declaration
    # plain rows of 8 (f16) or 16 (fp8) bytes, a padded copy since M and K are arguments (tail tiles)
    assert (
        "choreo::region(ms, {64, 8}, {8, 1})" in source or "choreo::region(ms, {64, 16}, {16, 1})" in source
    )
