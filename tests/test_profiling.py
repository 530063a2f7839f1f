"""Profiles, PTX and SASS mapped back to Choreo, on reports recorded on an H200 (tests/profiling/README.md).

The recorded run is the warp-specialized GEMM of bench/gemm_ws.co at 4096³ with cuBLAS after it,
so the numbers checked here are ncu's own: each derived value is compared with another page or
metric of the same report that ncu computed independently (the details page a person reads,
ncu's per-second and peak-per-second metrics, the sample count of the raw page). Where a tool
(nvcc, nvdisasm) is absent the tests that need it say so and skip; the GPU tests are at the end.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import itertools
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from IPython.core.error import UsageError
from pygments.token import Comment, Keyword

import choreo_kernel as ck
from choreo_kernel.compiler.cuda import HEADER, header_text, lower_program
from choreo_kernel.compiler.cuda.plan import Launch
from choreo_kernel.compiler.driver import analyze
from choreo_kernel.kernel import profile as shown
from choreo_kernel.kernel.assembly_lexer import PtxLexer, SassLexer
from choreo_kernel.kernel.sweep import sweep_table
from choreo_kernel.kernel.tuning import parse_profile_line, profile_report_path
from choreo_kernel.profiling import assembly, call, ncu, report, roofline, tools
from choreo_kernel.profiling.lines import SourceMap
from choreo_kernel.profiling.profile import Profile, combine, lower_is_better, metric_name
from choreo_kernel.runtime.cuda import complete_elf, nvrtc_options
from choreo_kernel.tuning.point import MetricProbe, Point
from choreo_kernel.tuning.sweep import Sweep
from choreo_kernel.tuning.timing import SIM_DEVICE, Timing, device_named

RECORDED = Path(__file__).parent / "profiling"
GEMM = "gemm_ws_kernel"
CUBLAS = "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_TNT"
NVCC = tools.find_tool("nvcc")
NVDISASM = tools.find_tool("nvdisasm")


def recorded(name: str) -> str:
    path = RECORDED / name
    return gzip.decompress(path.read_bytes()).decode() if name.endswith(".gz") else path.read_text()


def launches() -> dict[str, ncu.KernelMetrics]:
    return {launch.name: launch for launch in ncu.parse_raw_page(recorded("raw.csv"))}


def details(kernel_id: int, metric: str) -> float:
    """A number from ncu's details page, the one Nsight shows a person, in its own unit."""
    for row in csv.DictReader(recorded("details.csv").splitlines()):
        if row["ID"] == str(kernel_id) and row["Metric Name"] == metric:
            return float(row["Metric Value"].replace(",", ""))
    raise KeyError(metric)


def source_map() -> SourceMap:
    return SourceMap(recorded("gemm_ws.cu"), recorded("gemm_ws.co"))


def choreo_line(text: str) -> int:
    """The line of gemm_ws.co that holds `text`."""
    return next(n for n, line in enumerate(recorded("gemm_ws.co").split("\n"), 1) if text in line)


# ---------------------------------------------------------------------------- ncu's CSV pages


@pytest.mark.parametrize(
    ("unit", "scale"),
    [
        ("us", 1e-6),
        ("nsecond", 1e-9),
        ("msecond", 1e-3),
        ("second", 1.0),
        ("Kbyte", 1e3),
        ("Mbyte", 1e6),
        ("Tbyte/s", 1e12),
        ("Kbyte/cycle", 1e3),
        ("Kbyte/block", 1e3),
        ("Ghz", 1e9),
        ("sector", 1.0),  # not s-ector
        ("%", 1.0),
        ("register/thread", 1.0),
        ("inst/cycle", 1.0),
        ("", 1.0),
    ],
)
def test_units_scale_to_base_units(unit: str, scale: float) -> None:
    assert ncu.unit_scale(unit) == pytest.approx(scale)


def test_the_raw_page_reads_into_base_units_with_separators_removed() -> None:
    gemm = launches()[GEMM]
    assert gemm.id == 7
    assert gemm.number("gpu__time_duration.sum") == pytest.approx(details(7, "Duration") * 1e-6)
    assert gemm.number("sm__ops_path_tensor_src_fp16.sum") == 2 * 4096**3  # "137,438,953,472"
    assert gemm.values["device__attribute_display_name"] == "NVIDIA H200"  # text stays text
    assert gemm.number("device__attribute_display_name") is None
    # Two independent metrics of ncu's agree once both are in bytes and seconds.
    moved = gemm.number("dram__bytes_read.sum") + gemm.number("dram__bytes_write.sum")
    per_second = gemm.number("dram__bytes.sum.per_second")
    assert moved / gemm.number("gpu__time_duration.sum") == pytest.approx(per_second, rel=1e-4)


def test_the_launch_shares_its_shared_memory_with_the_lowering() -> None:
    """ncu's dynamic shared memory per block is what the launch plan asked for, to the byte."""
    plan = lower_program(analyze(recorded("gemm_ws.co"))).plans["gemm_ws"]
    (launch,) = [step for step in plan.steps if isinstance(step, Launch)]
    assert launches()[GEMM].number("launch__shared_mem_per_block_dynamic") == launch.shared_bytes


def test_the_source_page_keeps_each_kernel_once_and_all_its_samples() -> None:
    page = ncu.parse_source_page(recorded("source_sass.csv.gz"))
    assert list(page) == ["cupy_copy__float32_float16", GEMM]  # ncu printed the copy twice
    assert len(page["cupy_copy__float32_float16"]) == 48
    gemm = page[GEMM]
    assert len(gemm) == 1248
    assert sum(i.samples for i in gemm) == launches()[GEMM].number(report.SAMPLES) == 19589
    # The stall columns split each instruction's samples; the "(Not Issued)" ones are left out.
    assert all(sum(i.stalls.values()) == i.samples for i in gemm)
    depbar = max(gemm, key=lambda i: i.samples)
    assert depbar.text == "WARPGROUP.DEPBAR.LE gsb0, 0x0" and depbar.stalls["stall_barrier"] == 10757


def test_csv_rows_skip_the_lines_ncu_mixes_in() -> None:
    text = '==PROF== Connected to process 1\n"a","b"\n==WARNING== something\n"1","2"\n'
    assert ncu.csv_rows(text) == [["a", "b"], ["1", "2"]]


# ---------------------------------------------------------------------------- one launch


def test_the_table_shows_what_ncu_s_details_page_shows() -> None:
    gemm = report.KernelProfile(launches()[GEMM])
    assert gemm.sm_percent == pytest.approx(details(7, "Compute (SM) Throughput"), abs=0.01)
    assert gemm.l2_percent == pytest.approx(details(7, "L2 Cache Throughput"), abs=0.01)
    assert gemm.dram_percent == pytest.approx(details(7, "DRAM Throughput"), abs=0.01)
    assert gemm.occupancy_percent == pytest.approx(details(7, "Achieved Occupancy"), abs=0.01)
    assert gemm.registers == details(7, "Registers Per Thread")
    assert gemm.shared_bytes == pytest.approx(details(7, "Dynamic Shared Memory Per Block") * 1e3, abs=10)
    assert gemm.seconds == pytest.approx(details(7, "Duration") * 1e-6)
    cublas = report.KernelProfile(launches()[CUBLAS])
    assert cublas.tensor_percent > gemm.tensor_percent > 75  # cuBLAS keeps the tensor pipe busier


def test_top_stalls_are_shares_of_the_samples_without_issuing() -> None:
    gemm = report.KernelProfile(launches()[GEMM])
    top = gemm.top_stalls(4)
    assert [reason.key for reason, _ in top] == ["barrier", "long_scoreboard", "wait", "dispatch_stall"]
    assert top[0][1] == pytest.approx(10812 / 19589)
    # "selected" (issuing, 1695 samples) outnumbers dispatch stalls (508) but is not a stall.
    assert dict((reason.key, n) for reason, n in gemm.stalls)["selected"] == 1695
    cublas = report.KernelProfile(launches()[CUBLAS])
    assert "warpgroup_arrive" in [reason.key for reason, _ in cublas.top_stalls()]  # no source-page column


def test_a_launch_without_warp_sampling_has_no_stalls() -> None:
    bare = ncu.KernelMetrics(1, "k", {"gpu__time_duration.sum": 1e-6})
    assert report.KernelProfile(bare).top_stalls() == []
    assert report.KernelProfile(bare).registers is None and report.KernelProfile(bare).shared_bytes is None


# ---------------------------------------------------------------------------- roofline


def test_the_roofline_point_agrees_with_ncu_s_own_rates_and_peaks() -> None:
    gemm = launches()[GEMM]
    point = roofline.roofline_point(gemm)
    assert point is not None and point.roof == "f16 tensor cores"
    assert point.achieved == pytest.approx(
        gemm.number("sm__ops_path_tensor_src_fp16.sum.per_second"), rel=1e-6
    )
    peak = "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained_elapsed.per_second"
    assert point.peak_flops == pytest.approx(gemm.number(peak), rel=1e-4)
    assert point.peak_bandwidth == pytest.approx(device_named("NVIDIA H200").peak_bytes, rel=0.01)
    assert point.intensity == pytest.approx(2 * 4096**3 / (174339072 + 28565504))
    assert point.bound == "compute" and point.intensity > point.ridge
    # Dense f16 HGMMA work over its peak is how busy the tensor pipe was.
    assert point.share_of_roof * 100 == pytest.approx(report.KernelProfile(gemm).tensor_percent, abs=0.1)


def test_a_memory_bound_point_sits_under_the_bandwidth_roof() -> None:
    values = {
        roofline.SM_CLOCK: 1e9,
        roofline.DRAM_CLOCK: 2e9,
        roofline.DRAM_PEAK: 1000.0,  # 2 TB/s
        roofline.DURATION: 1e-3,
        "dram__bytes_read.sum": 1e9,
        "dram__bytes_write.sum": 0.0,
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e9,  # 2e9 FLOP
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": 10000.0,  # 20 TFLOP/s
    }
    point = roofline.roofline_point(ncu.KernelMetrics(1, "k", values))
    assert point is not None and point.roof == "f32 CUDA cores"
    assert (point.intensity, point.peak_flops, point.peak_bandwidth) == (2.0, 2e13, 2e12)
    assert point.bound == "DRAM bandwidth" and point.attainable == 4e12
    assert point.share_of_roof == pytest.approx(2e12 / 4e12)


def test_no_floating_point_work_means_no_roofline_point() -> None:
    assert roofline.roofline_point(launches()["cupy_copy__float32_float16"]) is None


def test_the_roofline_plot_is_a_png_of_both_launches() -> None:
    points = [(name, roofline.roofline_point(launches()[name])) for name in (GEMM, CUBLAS)]
    png = roofline.plot_png([(name, point) for name, point in points if point])
    width, height = struct.unpack(">II", png[16:24])
    assert png.startswith(b"\x89PNG") and (width, height) == (640, 400)


def test_every_metric_asked_for_is_one_the_h200_reported() -> None:
    """A misspelt metric makes ncu refuse the whole profile, so the names are checked against the recording."""
    reported = set(recorded("metric_names.txt").split())
    asked = {name.split(".")[0] for name in report.METRICS}
    assert asked <= reported, asked - reported
    full_set = (
        recorded("sets.txt").split("full", 1)[1].split("nvlink", 1)[0].replace("\n", "").replace(" ", "")
    )
    assert all(section in full_set for section in report.SECTIONS)


# ---------------------------------------------------------------------------- Choreo lines


@pytest.mark.parametrize("emitted", ["recorded", "emitted now"])
def test_cuda_lines_map_to_the_statement_comment_above_them(emitted: str) -> None:
    """On the CUDA of the recorded run, and on what the lowering emits today (its comments carry the map)."""
    text = recorded("gemm_ws.cu") if emitted == "recorded" else ck.compile(recorded("gemm_ws.co")).cuda_source
    lines, cuda = SourceMap(text, recorded("gemm_ws.co")), text.split("\n")

    def at(fragment: str) -> int | None:
        return lines.choreo_line(next(n for n, text in enumerate(cuda, 1) if fragment in text))

    assert at("wgmma_wait_group<0>") == choreo_line("wait op;")
    assert at("mbarrier_arrive_expect_tx") == choreo_line("trigger full.at(k) after la, ra;")
    assert at("tma_load(ls") == choreo_line("la = tma.load")  # a trailing "// line N" of its own
    assert at("tma_load(rs") == choreo_line("ra = tma.load")
    assert at("store_accumulator") == choreo_line("mma.store acc")
    assert at("__global__") is None  # the kernel's own set-up
    if emitted == "emitted now":  # the kernel's prologue and epilogue of the bounded waits, since recorded
        assert at("choreo::block_starts(status)") is None and at("choreo::block_ends()") is None
    assert at('"+f"(acc[0])') is None  # inside a generated wgmma wrapper
    assert lines.choreo_line(0) is None and lines.choreo_line(10_000) is None
    assert lines.text(choreo_line("wait op;")) == "wait op;"


def test_sass_locations_are_the_outermost_frame_of_each_inlining_chain() -> None:
    listing = assembly.parse_sass(recorded("gemm_ws.sass.gz"))
    code = [line for line in listing[GEMM] if line.offset is not None]
    assert len(code) == 1248 and [line.offset for line in code] == list(range(0, 1248 * 16, 16))
    by_offset = {line.offset: line for line in code}
    assert by_offset[0xFB0].code == "WARPGROUP.DEPBAR.LE gsb0, 0x0 ;"
    assert (by_offset[0xFB0].location.line, Path(by_offset[0xFB0].location.file).name) == (119, "choreo.cu")
    # F2FP: to_f16 in store_pair in store_accumulator (three frames), called at line 125 of choreo.cu.
    assert by_offset[0x1060].code.startswith("F2FP.F16.F32.PACK_AB")
    assert by_offset[0x1060].location.line == 125


def test_the_samples_of_each_instruction_land_on_its_choreo_line() -> None:
    page = ncu.parse_source_page(recorded("source_sass.csv.gz"))
    sass = assembly.parse_sass(recorded("gemm_ws.sass.gz"))
    lines = report.line_samples(page[GEMM], sass[GEMM], source_map())
    assert sum(line.samples for line in lines) == 19589  # nothing lost or counted twice
    by_line = {line.line: line for line in lines}
    first, second = lines[0], lines[1]
    assert (first.line, first.text, first.samples) == (choreo_line("wait op;"), "wait op;", 10777)
    assert first.top_stalls()[0] == ("barrier", 10757)
    assert second.line == choreo_line("mma.store acc") and second.top_stalls()[0][0] == "long_scoreboard"
    # Both mbarrier waits spend their samples polling (long scoreboard), not at the MMA.
    for wait in ("wait full.at(k);", "wait empty.at(k);"):
        assert by_line[choreo_line(wait)].top_stalls()[0][0] == "long_scoreboard"
    assert by_line[None].samples < 0.01 * 19589  # the kernel's set-up


def test_samples_of_another_build_are_refused() -> None:
    page = ncu.parse_source_page(recorded("source_sass.csv.gz"))[GEMM]
    sass = assembly.parse_sass(recorded("gemm_ws.sass.gz"))[GEMM]
    with pytest.raises(report.ListingMismatch, match="1247 instructions"):
        report.line_samples(page[1:], sass, source_map())
    swapped = [page[1], page[0], *page[2:]]
    swapped = [
        ncu.SampledInstruction(original.address, moved.text, moved.samples, moved.stalls)
        for original, moved in zip(page, swapped)
    ]
    with pytest.raises(report.ListingMismatch, match="at offset 0x0"):
        report.line_samples(swapped, sass, source_map())


def test_ptx_locations_follow_inlined_at_to_the_emitted_cuda() -> None:
    listing = assembly.parse_ptx(recorded("gemm_ws.ptx.gz"))
    assert list(listing) == [GEMM]
    lines = source_map()
    marked: dict[str, set[int | None]] = {}
    for line in listing[GEMM]:
        if line.location is not None:
            opcode = line.text.split()[0]
            marked.setdefault(opcode, set()).add(assembly.choreo_line_of(line.location, lines))
    assert marked["wgmma.wait_group.sync.aligned"] == {choreo_line("wait op;")}
    assert marked["wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"] == {choreo_line("op = mma.row.row")}
    # try_wait sits two frames deep (event_wait -> mbarrier_try_wait_parity), at both waits on events.
    waits = {choreo_line("wait empty.at(k);"), choreo_line("wait full.at(k);")}
    assert marked["mbarrier.try_wait.parity.acquire.cta.shared::cta.b64"] == waits
    text = "\n".join(line.text for line in listing[GEMM])
    assert ".loc" not in text and ".file" not in text and ".debug" not in text


def test_annotation_marks_each_change_of_choreo_line_once() -> None:
    sass = assembly.parse_sass(recorded("gemm_ws.sass.gz"))[GEMM]
    out = assembly.annotate(sass, source_map())
    marks = [line for line in out if line.startswith("// ")]
    assert len(out) == len(sass) + len(marks)
    assert all(a != b for a, b in itertools.pairwise(marks))
    mma = f"// line {choreo_line('op = mma.row.row')}: op = mma.row.row.async acc"
    hgmma = next(i for i, line in enumerate(out) if "HGMMA.64x256x16.F32" in line)
    assert next(line for line in reversed(out[:hgmma]) if line.startswith("// ")).startswith(mma)
    assert out[1] == "// (kernel set-up or end: no Choreo statement)"


def test_every_instruction_is_highlighted_as_an_instruction() -> None:
    """Each line's first word (after a predicate and nvdisasm's offset) lexes as an opcode."""
    sass = "\n".join(assembly.annotate(assembly.parse_sass(recorded("gemm_ws.sass.gz"))[GEMM], source_map()))
    ptx = "\n".join(assembly.annotate(assembly.parse_ptx(recorded("gemm_ws.ptx.gz"))[GEMM], source_map()))
    for lexer, text, is_instruction in (
        (SassLexer(), sass, lambda line: "/*" in line),
        (
            PtxLexer(),
            ptx,
            lambda line: line.strip().endswith(";") and not line.strip().startswith((".", "//")),
        ),
    ):
        lines = [line for line in text.split("\n") if is_instruction(line)]
        assert lines
        for line in lines:
            kinds = [kind for kind, value in lexer.get_tokens(line) if value.strip() and kind is not Comment]
            assert kinds[0] in (Keyword, Keyword.Pseudo), line
        marks = [value for kind, value in lexer.get_tokens(text) if kind is Comment.Special]
        assert any(mark.startswith("// line ") for mark in marks)


# ---------------------------------------------------------------------------- the cubin


def test_a_cubin_from_cupy_is_one_byte_short_and_made_whole() -> None:
    short = gzip.decompress((RECORDED / "gemm_ws.cubin.gz").read_bytes())
    whole = complete_elf(short)
    assert whole == short + b"\0"
    program_headers = struct.unpack_from("<Q", whole, 0x20)[0]
    entry, count = struct.unpack_from("<HH", whole, 0x36)
    assert program_headers + entry * count == len(whole)
    assert complete_elf(whole) == whole  # a complete one (a fixed CuPy) is left alone
    assert complete_elf(b"not an ELF") == b"not an ELF"
    assert complete_elf(short[:-16]) == short[:-16]  # cut by more than CuPy cuts: not ours to guess


@pytest.mark.skipif(
    NVDISASM is None, reason="nvdisasm is not installed here (pip install nvidia-cuda-nvdisasm)"
)
def test_nvdisasm_refuses_the_short_cubin_and_reads_the_whole_one(tmp_path: Path) -> None:
    short = gzip.decompress((RECORDED / "gemm_ws.cubin.gz").read_bytes())
    (tmp_path / "short.cubin").write_bytes(short)
    refused = subprocess.run(
        [str(NVDISASM), "-c", str(tmp_path / "short.cubin")], capture_output=True, text=True
    )
    assert refused.returncode != 0 and "invalid ELF" in refused.stderr
    listing = assembly.parse_sass(assembly.sass_of(complete_elf(short)))
    assert len([line for line in listing[GEMM] if line.offset is not None]) == 1248


# ---------------------------------------------------------------------------- building listings here


@pytest.mark.skipif(
    NVCC is None, reason="nvcc is not installed here, so there is no PTX to read without a GPU"
)
def test_nvcc_gives_ptx_marked_with_choreo_lines() -> None:
    module = ck.compile(recorded("gemm_ws.co"), target="sim")
    text = assembly.annotated_listing("ptx", module.cuda_source, module.source, on_gpu=False)
    assert text.startswith("// PTX from nvcc")
    mma = text.index("wgmma.mma_async.sync.aligned.m64n256k16")
    assert text.rfind("// line ", 0, mma) == text.rfind(f"// line {choreo_line('op = mma.row.row')}:", 0, mma)


@pytest.mark.skipif(
    NVCC is None or NVDISASM is None, reason="needs nvcc and nvdisasm to read SASS without a GPU"
)
def test_nvcc_and_nvdisasm_give_sass_marked_with_choreo_lines() -> None:
    module = ck.compile(recorded("gemm_ws.co"), target="sim")
    text = assembly.annotated_listing("sass", module.cuda_source, module.source, on_gpu=False)
    depbar = text.index("WARPGROUP.DEPBAR")
    assert text.rfind("// line ", 0, depbar) == text.rfind(
        f"// line {choreo_line('wait op;')}: wait op;", 0, depbar
    )


@pytest.mark.skipif(NVCC is None or NVDISASM is None, reason="needs nvcc and nvdisasm to compare two builds")
def test_line_info_changes_no_instruction(tmp_path: Path) -> None:
    """-lineinfo, which every cuda build now has, adds a line table and leaves the code alone."""
    (tmp_path / "choreo.cu").write_text(recorded("gemm_ws.cu"))
    (tmp_path / HEADER).write_text(header_text())
    options = nvrtc_options("sm_90a")
    listings = []
    for index, flags in enumerate((options, [option for option in options if option != "-lineinfo"])):
        cubin = tmp_path / f"{index}.cubin"
        subprocess.run(
            [str(NVCC), *flags, "-cubin", "-o", str(cubin), str(tmp_path / "choreo.cu")], check=True
        )
        listings.append(
            subprocess.run([str(NVDISASM), "-c", str(cubin)], capture_output=True, check=True).stdout
        )
    assert "-lineinfo" in options and listings[0] == listings[1]


def test_a_missing_tool_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "find_tool", lambda name: None)
    with pytest.raises(tools.ToolMissing) as missing:
        assembly.sass_of(b"")
    message = str(missing.value)
    assert "\n" not in message and message.startswith("--sass needs nvdisasm")
    assert "pip install nvidia-cuda-nvdisasm" in message
    from choreo_kernel.kernel.display import assembly_bundle

    bundle = assembly_bundle(ck.compile(recorded("gemm_ws.co"), target="sim"), "ptx")
    assert bundle == {"text/plain": bundle["text/plain"]} and "--ptx needs nvcc" in bundle["text/plain"]


def test_without_ncu_a_profile_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "find_tool", lambda name: None)
    saved = call.Call("", {}, "cell[1]", "f", (), {})
    with pytest.raises(tools.ToolMissing) as missing:
        call.record(saved, ["f_kernel"], Path("f.ncu-rep"), report.METRICS)
    assert str(missing.value).startswith("%profile needs ncu, which is not on PATH")
    assert "Nsight Compute" in str(missing.value) and "\n" not in str(missing.value)


def test_tools_are_found_in_the_cuda_toolkit_when_not_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "ncu"
    tool.write_text("#!/bin/sh\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert tools.find_tool("ncu") is None  # not executable
    tool.chmod(0o755)
    assert tools.find_tool("ncu") == tool


# ---------------------------------------------------------------------------- running ncu


def test_the_kernel_filter_matches_exactly_the_function_s_kernels() -> None:
    pattern = ncu.kernel_filter(["gemm_ws_kernel", "gemm_ws_kernel_2"]).removeprefix("regex:")
    assert re.fullmatch(pattern, "gemm_ws_kernel") and re.fullmatch(pattern, "gemm_ws_kernel_2")
    assert not re.fullmatch(pattern, "gemm_ws_kernel_3") and not re.fullmatch(pattern, "xgemm_ws_kernel")


def test_a_failure_names_the_child_s_error_before_ncu_s() -> None:
    output = "==PROF== Connected\n==ERROR== The application returned an error code (1).\n"
    assert call.failure_reason(output) == "==ERROR== The application returned an error code (1)."
    output += call.CHILD_ERROR + "gemm_ws(): parameter 'lhs' has 2 dimensions\n"
    assert call.failure_reason(output) == "gemm_ws(): parameter 'lhs' has 2 dimensions"
    assert call.failure_reason("") == "no output"


FAKE_NCU = """\
#!{python}
# Stands in for ncu: records its arguments, then runs the application it was given.
import subprocess, sys
open({log!r}, "w").write("\\n".join(sys.argv[1:]))
app = sys.argv[sys.argv.index("--source-folders") + 2:]
status = subprocess.run(app).returncode
sys.exit(status if {passes_status} else 0)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="a script stands in for ncu")
@pytest.mark.parametrize("passes_status", [True, False], ids=["ncu passes the status on", "ncu swallows it"])
def test_the_call_goes_to_a_child_process_under_ncu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passes_status: bool
) -> None:
    """The saved call reaches the child, which compiles it for cuda; without CuPy it fails in one line."""
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is here: the child would run the call (the GPU tests cover that)")
    log = tmp_path / "ncu-arguments"
    fake = tmp_path / "bin" / "ncu"
    fake.parent.mkdir()
    fake.write_text(FAKE_NCU.format(python=sys.executable, log=str(log), passes_status=passes_status))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    source = recorded("gemm_ws.co")
    a = np.zeros((256, 64), np.float16)
    saved = call.Call(
        source, {"STAGES": 2}, "cell[3]", "gemm_ws", (a, a, np.zeros((256, 256), np.float16)), {}
    )
    with pytest.raises(call.ProfileFailed) as failed:
        call.record(saved, ["gemm_ws_kernel"], tmp_path / "gemm.ncu-rep", report.METRICS, report.SECTIONS)
    assert "target 'cuda' needs CuPy" in str(failed.value)
    arguments = log.read_text().split("\n")
    assert arguments[arguments.index("--export") + 1] == str(tmp_path / "gemm.ncu-rep")
    assert arguments[arguments.index("--kernel-name") + 1] == "regex:^(gemm_ws_kernel)$"
    assert arguments[arguments.index("--metrics") + 1].split(",") == list(report.METRICS)
    assert [arguments[i + 1] for i, word in enumerate(arguments) if word == "--section"] == list(
        report.SECTIONS
    )
    assert arguments[-3:-1] == ["-m", "choreo_kernel.profiling.child"]


def test_the_child_reports_an_error_in_one_line(tmp_path: Path) -> None:
    spec = tmp_path / call.SPEC
    spec.write_bytes(
        __import__("pickle").dumps(call.Call("__co__ void f() {\n  x = ;\n}", {}, "cell[9]", "f", (), {}))
    )
    done = subprocess.run(
        [sys.executable, "-m", "choreo_kernel.profiling.child", str(spec)], capture_output=True, text=True
    )
    assert done.returncode == 1 and not (tmp_path / call.RESULT).exists()
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(call.CHILD_ERROR + "cell[9]:2:")  # the diagnostic, squeezed onto one line


# ---------------------------------------------------------------------------- what %profile shows


def recorded_profile() -> Profile:
    kernels = [report.KernelProfile(launches()[name]) for name in (GEMM, CUBLAS)]
    page = ncu.parse_source_page(recorded("source_sass.csv.gz"))
    sass = assembly.parse_sass(recorded("gemm_ws.sass.gz"))
    lines = {GEMM: report.line_samples(page[GEMM], sass[GEMM], source_map())}
    return Profile("gemm_ws(a, b, c)", Path("/work/gemm_ws.ncu-rep"), kernels, lines)


def test_the_profile_table_has_one_row_per_launch() -> None:
    title, header, _rule, gemm, cublas = shown.kernels_bundle(recorded_profile())["text/plain"].splitlines()
    assert title.startswith("profile of gemm_ws(a, b, c)")
    assert header.split()[:3] == ["kernel", "time", "SM"]
    assert gemm.split()[:9] == [GEMM, "246", "µs", "80%", "80%", "46%", "17%", "14%", "168"]
    assert gemm.endswith("barrier 55%, long scoreboard 21%, wait 10%")
    assert cublas.split()[0] == CUBLAS and "warpgroup arrive" in cublas


def test_the_stall_reasons_shown_are_explained() -> None:
    meanings = shown.stall_meanings(recorded_profile()).splitlines()
    assert meanings[0] == "  barrier: " + next(r.meaning for r in report.STALL_REASONS if r.key == "barrier")
    assert len(meanings) == len({line.split(":")[0] for line in meanings}) >= 4  # each once


def test_the_roofline_says_where_its_roofs_come_from() -> None:
    gemm = recorded_profile().kernels[0]
    text = shown.roofline_text(gemm, gemm.roofline)
    assert text.startswith(f"{GEMM}: 559 TFLOP/s at 677 FLOP per DRAM byte, compute-bound: 80% of its roof")
    assert "f16 tensor cores 702 TFLOP/s, DRAM 4.81 TB/s" in text and "1.30 GHz SM clock" in text
    assert "the datasheet's 989 TFLOP/s is at the boost clock" in text


def test_the_lines_table_lists_the_busiest_choreo_lines_first() -> None:
    profile = recorded_profile()
    lines = profile.lines[GEMM]
    _title, _header, _rule, *rows = shown.lines_bundle(GEMM, lines, 19589)["text/plain"].splitlines()
    assert len(rows) == shown.LINES_SHOWN
    assert rows[0].split() == [
        str(choreo_line("wait op;")),
        "wait",
        "op;",
        "55.0%",
        "barrier",
        "55%",
    ]  # not "wait 0%"
    assert shown.report_line(profile).startswith(
        "full report: /work/gemm_ws.ncu-rep (open it in Nsight Compute"
    )


# ---------------------------------------------------------------------------- %profile's line, %sweep --metric


def test_profile_options_come_before_the_call() -> None:
    options = parse_profile_line("--source -D BN=128 -DSTAGES=2 -o best gemm_ws(a, b, c)")
    assert (options.expression, options.source, options.defines, options.report) == (
        "gemm_ws(a, b, c)",
        True,
        {"BN": 128, "STAGES": 2},
        "best",
    )
    assert parse_profile_line("f(x, -1)").expression == "f(x, -1)"
    for bad, message in (
        ("--sauce f(x)", "not an option"),
        ("-o", "needs a value"),
        ("--source", "FUNC(ARGS)"),
    ):
        with pytest.raises(UsageError, match=re.escape(message)):
            parse_profile_line(bad)


def test_the_report_is_saved_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert profile_report_path(None, "gemm_ws", {}) == tmp_path / "gemm_ws.ncu-rep"
    assert (
        profile_report_path(None, "gemm_ws", {"BN": 128, "STAGES": 2})
        == tmp_path / "gemm_ws_BN128_STAGES2.ncu-rep"
    )
    assert profile_report_path("runs/best.ncu-rep", "f", {}) == tmp_path / "runs" / "best.ncu-rep"
    assert profile_report_path("best", "f", {}) == tmp_path / "best.ncu-rep"


def test_metric_names_and_which_way_is_better() -> None:
    assert metric_name("sm__throughput") == "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    assert metric_name("gpu__time_duration") == "gpu__time_duration.sum"
    assert metric_name("dram__bytes_read.sum") == "dram__bytes_read.sum"
    assert lower_is_better("gpu__time_duration.sum") and lower_is_better("sm__cycles_elapsed.max")
    assert not lower_is_better("sm__throughput.avg.pct_of_peak_sustained_elapsed")


def test_a_metric_of_several_launches_is_a_sum_or_a_time_weighted_share() -> None:
    def launch(seconds: float, share: float, count: float) -> ncu.KernelMetrics:
        return ncu.KernelMetrics(0, "k", {"gpu__time_duration.sum": seconds, "x.pct": share, "y.sum": count})

    both = [launch(1.0, 90.0, 3.0), launch(3.0, 10.0, 4.0)]
    assert combine(both, "x.pct") == pytest.approx(30.0)
    assert combine(both, "y.sum") == 7.0
    with pytest.raises(call.ProfileFailed, match=re.escape("did not report z.sum")):
        combine(both, "z.sum")


def test_a_sweep_ranked_by_a_metric_picks_its_best_point() -> None:
    def point(value: int, metric: float, difference: str | None = None) -> Point:
        timing = Timing("f()", [1e-3 * value], SIM_DEVICE)
        return Point({"N": value}, timing, difference=difference, metric=metric)

    points = [point(1, 50.0), point(2, 80.0), point(3, 95.0, difference="1 of 4 values differ")]
    highest = Sweep(
        "cell[1]", points, metric=MetricProbe("sm__throughput.avg.pct", False, lambda module: 0.0)
    )
    assert highest.best is points[1]  # the highest that agrees with the first point
    lowest = Sweep("cell[1]", points, metric=MetricProbe("gpu__time_duration.sum", True, lambda module: 0.0))
    assert lowest.best is points[0]
    assert Sweep("cell[1]", points).best is None  # sim times rank nothing without a metric
    _title, header, _rule, *rows = sweep_table(highest)["text/plain"].splitlines()
    assert "sm__throughput.avg.pct" in header.split()
    assert rows[1].split()[-2:] == ["80", "matches"]


def test_the_no_gpu_message_is_one_line() -> None:
    assert "\n" not in shown.NO_GPU and "Nsight Compute" in shown.NO_GPU and "sim backend" in shown.NO_GPU
