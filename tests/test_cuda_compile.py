"""The CUDA lowering without a GPU: every valid program builds to an sm_90a cubin with nvcc (TMA and
WGMMA programs included), and the emitted code reads as the source and as the hand-written prototype
of a warp-specialized GEMM (.proto/gemm_proto.py) would.

The nvcc builds run in parallel once per session (they take seconds each); each program's test
then reads its own result, so a failure names the program and shows nvcc's message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest
from corpus import Program
from cuda_corpus import PROGRAMS

from choreo_kernel.compiler.cuda import emit_program
from choreo_kernel.compiler.driver import analyze

ROOT = Path(__file__).resolve().parent.parent
NVCC = shutil.which("nvcc")
NVCC_FLAGS = ("-gencode=arch=compute_90a,code=sm_90a", "-cubin")


def by_name(programs: list[Program]) -> list[object]:
    return [pytest.param(p, id=p.name) for p in programs]


def emitted(program: Program) -> str:
    return emit_program(analyze(program.source, filename=program.name), self_contained=True)


def nvcc(source: str, output: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    unit = output.with_suffix(".cu")
    unit.write_text(source, encoding="utf-8")
    return subprocess.run(
        [str(NVCC), *flags, "-o", str(output), str(unit)], capture_output=True, text=True, timeout=600
    )


@cache
def built() -> dict[str, subprocess.CompletedProcess[str]]:
    """nvcc's result for every program, built in parallel."""
    directory = Path(tempfile.mkdtemp(prefix="choreo-nvcc-"))

    def build(program: Program) -> tuple[str, subprocess.CompletedProcess[str]]:
        return program.name, nvcc(emitted(program), directory / f"{program.path.stem}.cubin", *NVCC_FLAGS)

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return dict(pool.map(build, PROGRAMS))


def test_the_corpus_includes_the_hopper_programs() -> None:
    """Guards the parametrization: the TMA/WGMMA programs are among those built."""
    assert len(PROGRAMS) >= 45
    assert {p.name for p in PROGRAMS} >= {"gemm_rr_sync.co", "ring2_tile_stack.co", "gemm_ws_perf_cuda.co"}


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here, so the emitted CUDA cannot be built")
@pytest.mark.parametrize("program", by_name(PROGRAMS))
def test_emitted_cuda_builds_for_sm_90a(program: Program) -> None:
    result = built()[program.name]
    assert result.returncode == 0, f"nvcc failed on the CUDA emitted for {program.name}:\n{result.stderr}"
    ptxas_warnings = [line for line in result.stderr.splitlines() if "ptxas" in line and "warning" in line]
    assert not ptxas_warnings, "\n".join(ptxas_warnings)  # e.g. C7508: setmaxnreg ignored


def emitted_for(name: str) -> str:
    return emitted(next(p for p in PROGRAMS if p.name == name))


def test_each_statement_is_marked_with_its_source_line() -> None:
    cuda = emitted_for("transpose_views.co")
    assert "// line 12: dma.copy a.view(16, 16).from(bi * 16, bj * 16) => tile;" in cuda
    assert "// line 14: out.subspan(16, 16).at(bj, bi).at(c, r) = tile.at(r, c);" in cuda
    assert "const int bi = blockIdx.x;" in cuda and "const int bj = blockIdx.y;" in cuda


def test_the_header_is_inlined_once_and_holds_the_ptx() -> None:
    cuda = emitted_for("dma_event_explicit.co")
    assert "#include" not in cuda
    assert cuda.count("namespace choreo {") == 1
    kernel = cuda.split("}  // namespace choreo", 1)[1]
    assert "asm" not in kernel, "PTX belongs in the header's named wrappers"


def test_wgmma_forms_are_generated_once_before_the_kernels() -> None:
    cuda = emitted_for("gemm_ws_perf_cuda.co")
    assert cuda.count("CHOREO_DEVICE void wgmma_m64n128k16_f32_f16(float* acc,") == 1
    kernels = cuda.rsplit("}  // namespace choreo", 1)[1]
    assert "asm" not in kernels
    assert '"+f"(acc[63])' in cuda and '"+f"(acc[64])' not in cuda


def test_a_warp_specialized_gemm_lowers_like_the_prototype() -> None:
    cuda = emitted_for("gemm_ws_perf_cuda.co")
    assert "__launch_bounds__(384, 1)" in cuda
    assert "choreo::setmaxnreg_dec<40>();" in cuda and "choreo::setmaxnreg_inc<232>();" in cuda
    # The producer path runs on one thread, and binds both loads to 'full' with one expect_tx.
    assert "if ((threadIdx.x % 128) == 0) {" in cuda
    assert "choreo::mbarrier_arrive_expect_tx(&full[k % 3], 32768);" in cuda
    assert "choreo::tma_load(ls + (k % 3) * 8192, &lhs_tma, &full[k % 3], k * 64, bm * 128);" in cuda
    # Two consumer warpgroups release a slot: one arrival per warp.
    assert "choreo::mbarrier_init(&empty[slot], 8);" in cuda
    assert "choreo::mbarrier_arrive_warp(&empty[k % 3]);" in cuda
    # Four k16 steps of a 64-row slice, committed together, waited right away.
    assert "choreo::wgmma_descriptor<128>(rs + (k % 3) * 8192 + k_step * 16)" in cuda
    assert "choreo::wgmma_wait_group<0>();" in cuda
    assert (
        "choreo::store_accumulator<128, 1, 0>(acc, out + ((bm * 2 + wg - 1) * 64 * N + bn * 128), N, M - (bm * 2 + wg - 1) * 64, N - bn * 128);"
        in cuda
    )


def test_wait_depth_counts_the_mma_groups_issued_after_the_future() -> None:
    cuda = emitted_for("wgmma_two_groups.co")
    assert (
        "choreo::wgmma_wait_group<1>();  // 'first' is complete; 1 later MMA group(s) may still run" in cuda
    )
    assert "choreo::wgmma_wait_group<0>();  // 'second' is complete" in cuda


def test_alternating_accumulators_keep_one_mma_running_across_iterations() -> None:
    cuda = emitted_for("gemm_ws_pipelined.co")
    assert cuda.count("choreo::wgmma_wait_group<1>();") == 3  # 'lo' and 'hi' in the loop, 'lo' after it
    assert cuda.count("choreo::wgmma_wait_group<0>();") == 1  # 'hi' after the loop: nothing left to run


def test_a_future_waited_in_the_next_iteration_leaves_the_later_mma_running() -> None:
    cuda = emitted_for("wgmma_wait_across_iterations.co")
    # `qk` is issued at the end of an iteration and waited in the next, after that iteration's `pv`.
    assert cuda.count("choreo::wgmma_wait_group<1>();  // 'qk' is complete; 1 later MMA group(s)") == 2
    assert cuda.count("choreo::wgmma_wait_group<0>();  // 'pv' is complete") == 2


def test_apply_and_reductions_follow_the_accumulator_layout() -> None:
    cuda = emitted_for("fragments_row_softmax.co")
    assert "choreo::reduce_rows<choreo::MaxOf, 64, 1>(top, s);" in cuda
    assert "choreo::reduce_rows<choreo::SumOf, 64, 1>(total, s);" in cuda
    assert "s[s_element] = -choreo::infinity();" in cuda
    assert "total[choreo::fragment_row_register<64>(s_element_3)]" in cuda
    assert "rows warp * 16 + lane / 4 and + 8 of each 64-row tile" in cuda


def test_an_apply_summing_rows_adds_the_partial_sums_of_each_quad() -> None:
    cuda = emitted_for("fragments_apply_row_sums.co")
    assert "choreo::copy_fragment(total_before, total);" in cuda
    assert "choreo::fill_fragment(total, 0.0f);" in cuda
    assert "choreo::sum_quads(total, total_before);" in cuda


def test_a_scalar_update_of_an_accumulator_visits_every_register() -> None:
    cuda = emitted_for("warp_mma_accumulator_updates.co")
    assert "for (int mc_element = 0; mc_element < 8; ++mc_element)" in cuda
    assert (
        "choreo::to_f32(choreo::packed_element<choreo::f16>(mc, mc_element)) + choreo::to_f32(bias)" in cuda
    )


def test_a_fragment_is_wgmma_operand_a_from_registers() -> None:
    cuda = emitted_for("wgmma_register_operand.co")
    assert "choreo::wgmma_m64n64k16_f32_f16_b_nmajor_rs(o, s_f16 + k_step_2 * 4," in cuda
    assert "choreo::convert_fragment<choreo::f16>(s_f16, s);" in cuda
    assert "choreo::packed_element<choreo::f16>(p, p_element) = choreo::to_f16(" in cuda


def test_an_8_bit_fragment_is_wgmma_operand_a_in_its_k32_layout() -> None:
    cuda = emitted_for("wgmma_f8_register_operand.co")
    assert "unsigned a[8];  // f8_e4m3 [64, 64]: WGMMA's 8-bit A layout (k32), per thread" in cuda
    assert "choreo::load_fragment8<choreo::f8_e4m3, 64, 1, 0>(a, lhs_s.data, 64);" in cuda
    assert "if (choreo::fragment8_column<64>(a_element) >= 32)" in cuda
    assert "choreo::wgmma_m64n64k32_f32_e4m3_rs(acc, a + k_step * 4," in cuda
    assert '"}, {%32, %33, %34, %35}, %36, accumulate, 1, 1;' in cuda  # .e4m3 takes no transpose immediates


def test_a_thread_scope_of_128_holds_fragments_as_a_warpgroup() -> None:
    cuda = emitted_for("thread_scope_fragments.co")
    assert "float tile[32];  // f32 [64, 64]: the WGMMA accumulator layout, per thread" in cuda
    assert "choreo::reduce_rows<choreo::MaxOf, 64, 1>(top, tile);" in cuda
    warp = emitted_for("thread_scope_warp_fragments.co")
    assert "choreo::reduce_rows<choreo::SumOf, 32, 1>(total, tile);" in warp
    assert "choreo::fragment_row<32, 16>(tile_element)" in warp


def test_a_fragment_passed_to_a_device_function_is_the_threads_register_array() -> None:
    cuda = emitted_for("device_call_fragment_registers.co")
    assert "    number_registers(tile, 16);" in cuda
    assert "(add_to_rows(rows, 0.5f), choreo::agree_quads(rows));" in cuda  # a row vector: its quad agrees


def test_a_128_row_accumulator_is_two_m64_fragments() -> None:
    cuda = emitted_for("acc_block_level_m128.co")
    assert "float acc[64];  // 128x64 f32: 2 m64n64 fragment(s) per warpgroup" in cuda
    assert "choreo::wgmma_m64n64k16_f32_f16(acc + m_tile * 32," in cuda
    # no .swiz: the compiler picks the 128-byte swizzle that WGMMA reads (language.md 12.6)
    assert "tile_a = reinterpret_cast<choreo::f16*>(shared_memory + 1024);  // 128-byte swizzled" in cuda


def test_row_col_reads_b_transposed() -> None:
    cuda = emitted_for("gemm_rc.co")
    assert "wgmma_m64n64k16_f32_f16_b_nmajor" in cuda
    assert "accumulate, 1, 1, 0, 1;" in cuda  # imm-trans-b
    assert "b_s + k_step * 16 * 64" in cuda  # K steps move down the rows of a [K, N] tile


def test_event_arrival_counts_follow_the_triggering_threads() -> None:
    cuda = emitted_for("ring_dma_direct.co")
    assert "choreo::mbarrier_init(&full[slot], 1);" in cuda  # one producer thread
    assert "choreo::mbarrier_init(&empty[slot], 4);" in cuda  # a warpgroup of consumers: one arrival per warp
    assert "choreo::mbarrier_arrive_warp(&empty[order % 2]);" in cuda
    assert "((order / 2) & 1) ^ 1" in cuda  # empty is '= ready': its parity is flipped


def test_a_trigger_between_levels_arrives_with_every_thread_of_its_instance() -> None:
    """event<2> counts the two warpgroups whose bodies trigger; the mbarrier counts their 256 threads."""
    assert "choreo::mbarrier_init(&done[0], 256);" in emitted_for("trigger_between_levels.co")


def test_two_bound_triggers_on_two_slots_arrive_once_on_each() -> None:
    assert "choreo::mbarrier_init(&full[slot], 1);" in emitted_for("ring_two_bound_slots.co")


def test_every_event_is_an_mbarrier_whose_waits_are_bounded() -> None:
    """A one-slot ready handoff could be a named barrier, but a bar.sync that is never matched hangs the
    GPU; as an mbarrier its wait gives up and the call raises (the TMA-fed handoff of issue 17, whose
    producer runs on one elected thread, deadlocked as a named barrier of 256 threads)."""
    for name in ("ready_handoff_warps.co", "handoff_tma_scalar_f32.co", "handoff_dma_scalar_f32.co"):
        cuda = emitted_for(name)
        body = cuda[cuda.index("__global__") :]
        assert "choreo::mbarrier_init(&empty[0]" in body, name
        assert "named_barrier_arrive" not in body and "named_barrier_sync(15" not in body, name
    tma = emitted_for("handoff_tma_scalar_f32.co")
    assert "choreo::event_wait(&empty[0], empty_phase & 1, status, 0);" in tma  # the elected producer's wait


def test_a_block_starts_only_if_the_launch_has_not_given_up_and_drains_at_its_end() -> None:
    cuda = emitted_for("handoff_tma_scalar_f32.co")
    body = cuda[cuda.index("__global__") :]
    assert "if (!choreo::block_starts(status)) return;" in body
    assert body.rstrip().endswith("choreo::block_ends();\n}") or "  choreo::block_ends();\n}" in body


def test_post_increment_order_is_evaluated_once() -> None:
    cuda = emitted_for("ring3_counters_dma.co")
    assert "const int full_order = issued++;" in cuda
    assert "choreo::mbarrier_arrive(&full[full_order % 3]);" in cuda


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here, so the emitted CUDA cannot be built")
def test_the_copy_benchmark_moves_16_byte_vectors(tmp_path: Path) -> None:
    source = (ROOT / "bench" / "copy.co").read_text(encoding="utf-8")
    cuda = emit_program(analyze(source, filename="copy.co"), self_contained=True)
    result = nvcc(cuda, tmp_path / "copy.ptx", "-gencode=arch=compute_90a,code=sm_90a", "-ptx")
    assert result.returncode == 0, result.stderr
    ptx = (tmp_path / "copy.ptx").read_text()
    assert "ld.global.v4.u32" in ptx and "st.global.v4.u32" in ptx


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here, so the emitted CUDA cannot be built")
def test_the_sparse_benchmark_builds_without_an_injected_warpgroup_arrive(tmp_path: Path) -> None:
    """Each sparse wgmma's metadata register is gathered before the fence: one written after it makes
    ptxas inject a warpgroup.arrive (C7519) in front of the instruction."""
    source = (ROOT / "bench" / "gemm_ws_sparse.co").read_text(encoding="utf-8")
    cuda = emit_program(analyze(source, filename="gemm_ws_sparse.co"), self_contained=True)
    result = nvcc(cuda, tmp_path / "gemm_ws_sparse.cubin", *NVCC_FLAGS)
    assert result.returncode == 0, result.stderr
    assert "C7519" not in result.stderr + result.stdout


def choreo(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "choreo_kernel", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def test_cli_emit_writes_a_translation_unit(tmp_path: Path) -> None:
    output = tmp_path / "add.cu"
    result = choreo("emit", ROOT / "tests/conformance/valid/add_blocks_threads.co", "-o", output)
    assert result.returncode == 0, result.stderr
    assert 'extern "C" __global__' in output.read_text()


def test_cli_emit_writes_a_tma_wgmma_program(tmp_path: Path) -> None:
    output = tmp_path / "gemm.cu"
    result = choreo("emit", ROOT / "tests/conformance/valid/gemm_rr_sync.co", "-o", output)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "choreo::tma_load(" in output.read_text()


def test_register_work_under_an_mma_is_pinned_before_its_wait() -> None:
    cuda = emitted_for("wgmma_register_work_under_mma.co")
    pinned = cuda.index("// the register work above (s) stays before this wait")
    assert cuda.index("choreo::wgmma_fence_operand(s);", pinned) < cuda.index(
        "choreo::wgmma_wait_group<0>();", pinned
    )
    between = cuda[pinned : cuda.index("choreo::wgmma_wait_group<0>();", pinned)]
    assert "fence_operand(o)" not in between and "fence_operand(p)" not in between  # in flight


def test_an_mma_chained_into_an_accumulator_in_flight_does_not_fence_it() -> None:
    cuda = emitted_for("wgmma_chained_into_one_accumulator.co")
    chained = cuda.index("// chained after the MMA in flight into 'acc'")
    first_commit = cuda.rindex("choreo::wgmma_commit_group();", 0, chained)
    assert "wgmma_fence_operand(acc)" not in cuda[first_commit:chained]
    assert "choreo::wgmma_wait_group<1>();  // 'low' is complete" in cuda
