"""The shared layout of WGMMA operands (compiler/cuda/swizzles.py, views.Panels): decided once per
buffer and followed by every copy, element access and descriptor. The programs themselves run in
tests/cuda/wgmma_*.co (sim vs NumPy in test_sim.py, nvcc in test_cuda_compile.py, GPU in test_gpu.py);
these check the layout's arithmetic and what the lowering emits for it."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_corpus import CUDA_PROGRAMS

from choreo_kernel.compiler.cuda import cexpr, emit_program
from choreo_kernel.compiler.cuda.views import Panels, panels_of
from choreo_kernel.compiler.driver import analyze
from choreo_kernel.compiler.semantics.swizzle import operand_swizzle


def emitted(name: str) -> str:
    path = CUDA_PROGRAMS / name
    return emit_program(analyze(path.read_text(encoding="utf-8"), filename=name), self_contained=True)


@pytest.mark.parametrize(
    ("row_bytes", "named", "chosen"),
    [
        (32, None, 32),
        (64, None, 64),
        (256, None, 128),
        (96, None, 32),
        (32, 128, 32),
        (256, 64, 64),
        (192, 128, 64),
    ],
)
def test_an_operand_keeps_a_swizzle_its_rows_are_a_multiple_of_and_else_gets_the_widest_such(
    row_bytes: int, named: int | None, chosen: int
) -> None:
    assert operand_swizzle(row_bytes, named) == chosen


def test_panels_place_each_element_where_tma_writes_its_boxes() -> None:
    """Two buffers of 16 rows of 128 halves in 128-byte panels: panel p holds columns 64p.. of every
    row, one panel after the other, the second buffer after the first (a buffer array)."""
    panels = Panels(rows=16, columns=128, width=64)
    logical = np.arange(2 * 16 * 128).reshape(2, 16, 128)
    expected = logical.reshape(2, 16, 2, 64).transpose(0, 2, 1, 3).ravel()  # slot, panel, row, column
    placed = np.empty_like(expected)
    for offset in range(logical.size):
        placed[panels.offset(cexpr.const(offset)).value] = offset
    assert (placed == expected).all()
    assert panels.first(cexpr.const(5 * 128 + 70)).value == 6


def test_only_rows_wider_than_the_swizzle_lie_in_panels() -> None:
    assert panels_of(2, (64, 64), 128) is None  # one swizzle per row: plain swizzled rows
    assert panels_of(2, (64, 128), 128) == Panels(64, 128, 64)
    assert panels_of(2, (64, 128), 64) == Panels(64, 128, 32)
    assert panels_of(2, (4, 128), 128) is None  # not a multiple of 8 rows: no panel starts on the pattern


def test_k_steps_of_a_wide_tile_cross_panels_through_the_layout() -> None:
    cuda = emitted("wgmma_dma_wide_k.co")
    # cp.async into panels; M, N and K are arguments, so the tiles may be tail tiles, zeros past the end
    assert "choreo::copy_padded<true>(choreo::tile(ls, 128, 128, 64, 128, 8192, 0)" in cuda
    assert "choreo::copy_padded<false>(choreo::tile(rs, 64, 128, 64, 128, 4096, 0)" in cuda
    assert (
        "choreo::wgmma_descriptor<128>(ls + choreo::panel_offset(k_step * 16 + m_tile * 64 * 128, 128, 128, 64))"
        in cuda
    )


def test_an_n_major_operand_in_two_panels_names_the_bytes_between_them() -> None:
    cuda = emitted("wgmma_mn_major_panels.co")
    assert "wgmma_m64n128k16_f32_f16_b_nmajor" in cuda
    assert ", 4096));" in cuda  # 32 rows of 128 bytes per panel


def test_element_stores_go_through_the_swizzle_and_are_fenced_for_the_tensor_cores() -> None:
    cuda = emitted("wgmma_thread_filled_rows32.co")
    assert cuda.count("choreo::swizzled_element<32>(") == 2
    assert cuda.count("choreo::fence_proxy_async_shared(); }") == 2
    assert "choreo::wgmma_descriptor<32>(ls)" in cuda


def test_a_swizzle_the_rows_do_not_fit_is_replaced_for_every_writer_and_reader() -> None:
    path = CUDA_PROGRAMS / "wgmma_mismatched_swizzle.co"
    source = path.read_text(encoding="utf-8")
    warnings = [d.message for d in analyze(source, filename=path.name).diagnostics]
    assert len(warnings) == 2  # 'ls', written by TMA, and 'rs', by a dma copy
    assert all(
        "with .swiz<128>: its rows are 64 bytes, so the compiler lays it out with a 64-byte" in w
        for w in warnings
    )
    assert not analyze(source, target="sim", filename=path.name).diagnostics  # the sim has no layouts
    cuda = emitted("wgmma_mismatched_swizzle.co")
    assert cuda.count("64-byte swizzled layout, for TMA and WGMMA") == 2
    assert "choreo::copy(choreo::tile(rs, 64, 32, 32, 64)" in cuda
    assert "wgmma_descriptor<128>" not in cuda


def test_an_mma_load_of_a_global_tile_stages_it_in_a_shared_tile_per_warpgroup() -> None:
    cuda = emitted("wgmma_load_from_global.co")
    assert cuda.count("choreo::wgmma_wait_group<0>();  // no earlier MMA still reads") == 2
    assert "choreo::copy(choreo::tile(a_staged + threadIdx.x / 128 * 1024, 64, 16, 16, 32)" in cuda
    copy, fence = (
        cuda.index("choreo::copy(choreo::tile(b_staged"),
        cuda.index("fence_proxy_async_shared();", cuda.index("b_staged +")),
    )
    barrier = cuda.index("named_barrier_sync(1 + threadIdx.x / 128, 128)", fence)
    assert copy < fence < barrier < cuda.index("choreo::wgmma_descriptor<32>(a_staged")


def test_mma_store_into_panels_places_each_element_and_fences_for_the_next_mma() -> None:
    cuda = emitted("wgmma_store_into_panels.co")
    store = cuda.index("choreo::store_accumulator_stmatrix_swizzled128<128, 1>(acc, s, 4096);")
    fence = cuda.index("choreo::fence_proxy_async_shared();", store)
    assert store < fence < cuda.index("__syncthreads();", fence) < cuda.index("wgmma_descriptor<128>(s + ")


def test_a_store_into_a_staging_tile_at_a_panel_start_takes_one_base_address_per_thread() -> None:
    """Each warpgroup's rows of a swizzled staging tile in panels (a GEMM's epilogue before its TMA store):
    the stmatrix form whose addresses are a per-thread base XOR a constant (ptxas spilled the general
    form's 16 hoisted addresses); a tile that starts inside a panel keeps the general store."""
    cuda = emitted("wgmma_store_staged_for_tma.co")
    staged = "choreo::panel_offset(g * 64 * 192, 128, 192, 64)"
    assert f"choreo::store_accumulator_stmatrix_swizzled128<192, 1>(acc, tile + {staged}, 8192);" in cuda
    inside = """
__co__ f16 [128, 192] staged(f16 [128, 16] a, f16 [32, 16] b) {
  f16 [128, 192] out;
  parallel p by 1 : block {
    sa = dma.copy a => shared;
    sb = dma.copy b => shared;
    shared f16 [128, 192] tile;
    parallel g by 2 : group-4 {
      acc = mma.fill.f32 0.0f;
      mma.row.row acc, sa.data.subspan(64, 16).at(g, 0), sb.data;
      mma.store acc, tile.subspan(64, 32).at(g, 1);
      tma.copy.swiz<128> tile.subspan(64, 192).at(g, 0) => out.subspan(64, 192).at(g, 0);
    }
  }
  return out;
}
"""
    cuda = emit_program(analyze(inside, filename="inside.co"), self_contained=True)
    assert "choreo::store_accumulator_stmatrix<32, 1, 128>(acc, tile + " in cuda


def test_a_tma_box_of_some_rows_of_a_tile_in_panels_finds_its_second_panel_a_panel_away() -> None:
    """A warpgroup's 64 rows of a 128-row tile: its second box is in the second panel, 128 rows of 64
    halves (8192 elements) after its first, not 64 rows after (the box's own size)."""
    cuda = emitted("tma_store_rows_of_panels.co")
    first = "tile + choreo::panel_offset(g * 64 * 128, 128, 128, 64)"
    assert f"choreo::tma_store(&out_tma, {first}, 0, (b * 2 + g) * 64);" in cuda
    assert f"choreo::tma_store(&out_tma, {first} + 8192, 64, (b * 2 + g) * 64);" in cuda


def test_a_whole_shared_16_bit_tile_is_stored_with_stmatrix_and_a_transposed_one_with_its_trans_form() -> (
    None
):
    assert "choreo::store_accumulator_stmatrix<128, 1, 0, true>(acc, out_s, 64);" in emitted(
        "wgmma_store_transposed.co"
    )
    assert "choreo::store_accumulator_stmatrix<152, 1, 0>(acc, out_s, 152);" in emitted(
        "wgmma_store_shared_bf16.co"
    )


def test_a_store_into_global_memory_or_a_masked_one_writes_each_threads_elements() -> None:
    assert "choreo::store_accumulator<128, 1, 0>(acc, out" in emitted("gemm_f16_accumulator.co")
