"""The tuning magics: `%bench`, `%sweep`, `%resources`, `%profile` and `--ptx/--sass`, through a real
`choreo` kernel on sim.

The parts with no kernel in them (device peaks, the timing line, grids, result comparison,
tables) are tested directly, and the profiles' parsing in test_profiling.py on recorded
reports; `%resources`, `%profile` and `--sass` on a GPU are `gpu` tests.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from kernel_driver import KernelDriver, ok
from programs import SCALED_ADD

from choreo_kernel.kernel.profile import NO_GPU
from choreo_kernel.kernel.resources import KernelResources, resources_bundle
from choreo_kernel.kernel.tables import table_bundle
from choreo_kernel.kernel.tuning import parse_grid
from choreo_kernel.profiling.tools import find_tool
from choreo_kernel.tuning.point import Point, difference
from choreo_kernel.tuning.sweep import Sweep, grid_points
from choreo_kernel.tuning.timing import (
    BYTES,
    FLOPS,
    SIM_DEVICE,
    Device,
    Timing,
    Work,
    device_named,
    format_seconds,
)

DATA = "%%python\nimport numpy as np\na = np.ones((32, 32), np.float32)\nb = np.ones((32, 32), np.float32)"


@pytest.fixture(scope="module")
def kernel() -> Iterator[KernelDriver]:
    with KernelDriver("choreo") as driver:
        for cell in ("%%choreo --target sim\n" + SCALED_ADD, DATA):
            assert driver.run(cell).status == "ok"
        yield driver


def test_bench_on_sim_gives_a_median_and_a_rate(kernel: KernelDriver) -> None:
    line = ok(kernel.run("%bench add(a, b) -n 4")).stream()
    assert line.startswith("add(a, b): median ") and "over 4 runs" in line
    assert "wall clock, sim backend (CPU)" in line
    assert "GB/s" in line and "% of peak" not in line  # bytes of a, b and the result; no known peak
    line = ok(kernel.run("%%python\nFLOP = 2 * 32 * 32\n%bench add(a, b) --flops FLOP -n 2")).stream()
    assert "FLOP/s" in line
    seconds = ok(
        kernel.run("%%python\nprint(len(_bench.seconds), _bench.work.unit, _bench.rate > 0)")
    ).stream()
    assert seconds == "2 FLOP True\n"


def test_bench_reports_a_bad_line_as_usage(kernel: KernelDriver) -> None:
    run = kernel.run("%bench")
    assert run.status == "error" and run.reply["ename"] == "UsageError"
    run = kernel.run("%bench add(a, b) --flops 1 --bytes 1")
    assert "not both" in run.reply["evalue"]


def test_sweep_on_sim_shows_progress_a_table_and_a_plot_and_ranks_nothing(kernel: KernelDriver) -> None:
    run = ok(kernel.run("%sweep SCALE=1,1,2 -n 2 -- add(a, b)"))
    updates = [m["content"]["data"] for m in run.outputs if m["msg_type"] == "update_display_data"]
    texts = [update["text/plain"] for update in updates]
    assert "sweep of cell[1]: 2/3 done · SCALE=2: running add(a, b)" in texts
    assert any(text.startswith("sweep of cell[1]: 3/3 done · SCALE=2: median ") for text in texts)
    assert any("<progress value='3' max='3'>" in update.get("text/html", "") for update in updates)
    assert texts[-1].startswith("sweep of cell[1]: 3 points in ")
    progress, table, plot = run.displays()
    assert progress["text/plain"] == "sweep of cell[1]: 0/3 done · starting"
    assert texts[0] == "sweep of cell[1]: 0/3 done · starting in this process"
    title, header, _rule, *rows = table["text/plain"].splitlines()
    assert title == "sweep of cell[1]" and header.split()[:2] == ["SCALE", "median"]
    assert rows[0].split()[0] == "1" and rows[0].endswith("reference")
    assert rows[1].endswith("matches")
    assert rows[2].startswith("! 2") and "DIFFERS: 1024 of 1024 values" in rows[2]
    assert "<table>" in table["text/html"] and "color:#b91c1c" in table["text/html"]
    assert base64.b64decode(plot["image/png"]).startswith(b"\x89PNG")
    # CPU times of the interpreter say nothing about a GPU: no best point, no #define to paste.
    out = run.stream()
    assert out.startswith("not ranked: on the sim backend") and "best" not in out.replace(
        "the best point", ""
    )
    assert "#define" not in out
    # The cell's own build is back: SCALE 1.
    assert ok(
        kernel.run("%%python\nprint(add(a, b)[0, 0], _sweep.points[2].difference is not None, _sweep.best)")
    ).stream() == ("2.0 True None\n")


def sweep_of(device: Device, medians: list[float], differs: int | None = None) -> Sweep:
    sweep = Sweep("cell[1]")
    for index, median in enumerate(medians):
        point = Point({"BN": 64 * (index + 1)}, Timing("gemm()", [median], device))
        point.difference = "1 of 4 values differ" if index == differs else None
        sweep.points.append(point)
    return sweep


def test_on_a_gpu_the_best_point_is_the_fastest_that_agrees() -> None:
    gpu = device_named("NVIDIA H200")
    assert sweep_of(gpu, [3.0, 1.0, 2.0]).best.defines == {"BN": 128}
    assert sweep_of(gpu, [3.0, 1.0, 2.0], differs=1).best.defines == {"BN": 192}
    assert sweep_of(gpu, [3.0, 1.0, 2.0]).defines_text() == "#define BN 128"
    # The same timings on sim rank nothing.
    on_sim = sweep_of(SIM_DEVICE, [3.0, 1.0, 2.0])
    assert not on_sim.ranked and on_sim.best is None and on_sim.defines_text() == ""


def test_sweep_refuses_names_the_cell_does_not_take(kernel: KernelDriver) -> None:
    run = kernel.run("%sweep TILE=1,2 -- add(a, b)")
    assert run.reply["ename"] == "UsageError" and "does not use TILE" in run.reply["evalue"]
    ok(kernel.run("%%choreo --target sim\n#define SCALE 3\n" + SCALED_ADD.split("#endif\n")[1]))
    run = kernel.run("%sweep SCALE=1,2 -- add(a, b)")
    assert "defines SCALE itself" in run.reply["evalue"] and "#ifndef SCALE" in run.reply["evalue"]
    ok(kernel.run("%%choreo --target sim\n" + SCALED_ADD))


def test_a_point_that_fails_is_marked_and_the_sweep_goes_on(kernel: KernelDriver) -> None:
    run = ok(kernel.run("%sweep SCALE=1,a.b -n 1 -- add(a, b)"))
    failed = run.displays()[1]["text/plain"].splitlines()[4]
    assert failed.startswith("! a.b") and "error:" in failed
    assert run.stream().startswith("not ranked")


def autotuning_kernel(cache: Path) -> KernelDriver:
    """A kernel of its own (earlier cells' macros reach later cells), keeping its choices in `cache`."""
    driver = KernelDriver("choreo")
    setup = f"%%python\nimport os\nos.environ['CHOREO_CACHE_DIR'] = {str(cache)!r}"
    for cell in ("%%choreo --target sim\n" + SCALED_ADD, DATA, setup):
        ok(driver.run(cell))
    return driver


def test_autotune_dispatches_each_shape_to_its_choice_and_remembers_it_across_kernels(tmp_path: Path) -> None:
    with autotuning_kernel(tmp_path) as kernel:
        out = ok(kernel.run("%autotune add SCALE=2,1 -n 1")).stream()
        assert out == "add now calls its best build per shape, over SCALE=2,1\n"
        # The first call of a shape tunes: progress, the sweep, the choice; SCALE=1 differs from the
        # first point, so it is never chosen: the call runs the SCALE=2 build, not the cell's SCALE 1.
        run = ok(kernel.run("%%python\nfirst = add(a, b)\nprint(first[0, 0])"))
        progress, table, _plot = run.displays()
        assert progress["text/plain"].startswith("autotune of add for 32x32 float32, 32x32 float32: 0/2 done")
        assert "DIFFERS" in table["text/plain"].splitlines()[4]
        assert run.stream().endswith("add: SCALE=2 for 32x32 float32, 32x32 float32\n3.0\n")
        again = ok(kernel.run("%%python\nprint(add(a, b)[0, 0])"))  # remembered: no tuning shown
        assert again.displays() == [] and again.stream() == "3.0\n"
        choices = ok(kernel.run("%autotune add")).displays()[0]["text/plain"]
        assert "32x32 float32, 32x32 float32  SCALE=2  tuned here" in choices and str(tmp_path) in choices
        # Running the cell again puts the plain function back.
        ok(kernel.run("%%choreo --target sim\n" + SCALED_ADD))
        assert ok(kernel.run("%%python\nprint(add(a, b)[0, 0])")).stream() == "2.0\n"
    # Another kernel (a restart) reads the choice from disk instead of tuning again.
    with autotuning_kernel(tmp_path) as fresh:
        ok(fresh.run("%autotune add SCALE=2,1 -n 1"))
        reused = ok(fresh.run("%%python\nprint(add(a, b)[0, 0])"))
        assert reused.displays() == [] and reused.stream() == "3.0\n"
        assert "SCALE=2  on disk" in ok(fresh.run("%autotune add")).displays()[0]["text/plain"]


def test_autotune_reports_bad_lines_as_usage(kernel: KernelDriver) -> None:
    for line, message in [
        ("%autotune", "%autotune FUNC NAME=v1,v2"),
        ("%autotune add", "'add' is not autotuned"),
        ("%autotune nothing SCALE=1,2", "'nothing' is not a function of a Choreo cell"),
        ("%autotune add TILE=1,2", "does not use TILE"),
    ]:
        run = kernel.run(line)
        assert run.reply["ename"] == "UsageError" and message in run.reply["evalue"], line


def test_resources_on_sim_says_it_needs_cuda(kernel: KernelDriver) -> None:
    out = ok(kernel.run("%resources add")).stream()
    assert "need the cuda target" in out and "add was compiled for sim" in out
    assert "256 threads/block" in out
    run = kernel.run("%resources nothing")
    assert run.reply["ename"] == "UsageError" and "add" in run.reply["evalue"]


def test_load_ext_brings_the_tuning_magics_to_a_python_kernel() -> None:
    with KernelDriver("python3") as driver:
        ok(driver.run("%load_ext choreo_kernel"))
        ok(driver.run("%%choreo --target sim\n" + SCALED_ADD))
        ok(driver.run(DATA.removeprefix("%%python\n")))
        assert "median" in ok(driver.run("%bench add(a, b) -n 1")).stream()


@pytest.mark.gpu
def test_resources_on_cuda_reads_the_binary() -> None:
    with KernelDriver("choreo") as driver:
        ok(driver.run("%%choreo --target cuda\n" + SCALED_ADD))
        (table,) = ok(driver.run("%resources add")).displays()
        assert "registers/thread" in table["text/plain"] and "add_kernel" in table["text/plain"]
        out = ok(
            driver.run("%%python\nk, = _resources\nprint(k.threads, k.registers > 0, 0 < k.occupancy <= 1)")
        )
        assert out.stream() == "256 True True\n"


def test_profile_on_sim_says_in_one_line_that_it_needs_a_gpu(kernel: KernelDriver) -> None:
    assert ok(kernel.run("%profile add(a, b)")).stream() == NO_GPU + "\n"
    assert ok(kernel.run("%%python\nprint(_profile)")).stream() == "None\n"
    assert ok(kernel.run("%profile -D SCALE=2 --source add(a, b)")).stream() == NO_GPU + "\n"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("%profile np.sum(a)", "one call of a compiled Choreo function"),
        ("%profile add(*[a, b])", "without * or **"),
        ("%profile --fast add(a, b)", "--fast is not an option of %profile"),
        ("%profile -D TILE=4 add(a, b)", "does not use TILE"),
        ("%sweep SCALE=1,2 --metric sm__throughput -- add(a, b)", "sim backend"),
        ("%sweep SCALE=1,2 --metric sm__throughput -- np.sum(a)", "one call of a compiled Choreo function"),
        ("%sweep SCALE=1,2 --metric sm__throughput --gpus 1 -- add(a, b)", "without --cluster or --gpus"),
        ("%sweep SCALE=1 --metric=gpu__time_duration --cluster tcp://x:1 -- add(a, b)", "without --cluster"),
    ],
)
def test_profile_and_sweep_metric_report_bad_lines_as_usage(
    kernel: KernelDriver, line: str, message: str
) -> None:
    run = kernel.run(line)
    assert run.status == "error" and run.reply["ename"] == "UsageError"
    assert message in run.reply["evalue"]


def test_sweep_metric_profiles_a_function_of_the_swept_cell() -> None:
    """A function of an earlier cell has one build at every point: its metric could not rank them."""
    twice = SCALED_ADD.replace("add(", "twice(")
    with KernelDriver("choreo") as driver:
        for cell in ("%%choreo --target sim\n" + SCALED_ADD, "%%choreo --target sim\n" + twice, DATA):
            ok(driver.run(cell))
        run = driver.run("%sweep SCALE=1,2 --metric sm__throughput -- add(a, b)")
        assert run.reply["ename"] == "UsageError"
        assert "add was compiled by an earlier cell" in run.reply["evalue"]
        run = driver.run("%sweep SCALE=1,2 --metric sm__throughput -- twice(a, b)")
        assert run.reply["ename"] == "UsageError" and "sim backend" in run.reply["evalue"]


TOOLS = find_tool("nvcc") is not None and find_tool("nvdisasm") is not None


@pytest.mark.skipif(
    not TOOLS, reason="needs nvcc and nvdisasm (pip install nvidia-cuda-nvdisasm) without a GPU"
)
def test_ptx_and_sass_of_a_cell_are_marked_with_its_lines(kernel: KernelDriver) -> None:
    run = ok(kernel.run("%%choreo --target sim --ptx --sass\n" + SCALED_ADD, timeout=180))
    _summary, ptx, sass = run.displays()
    statement = (
        "// line 9: out.chunkat(i, j).at(x, y) = a.chunkat(i, j).at(x, y) * SCALE + b.chunkat(i, j).at(x, y);"
    )
    for bundle, heading, instruction in (
        (ptx, "// PTX from nvcc", "st.global.f32"),
        (sass, "// SASS", "STG.E"),
    ):
        text = bundle["text/plain"]
        assert text.startswith(heading) and "add_kernel" in text
        at = text.index(instruction)
        assert text.rfind("// line ", 0, at) == text.rfind(statement, 0, at) > 0
        assert "<span" in bundle["text/html"]


GEMM = (Path(__file__).resolve().parent.parent / "bench" / "gemm_ws.co").read_text()  # tutorials 04 and 05's
GEMM_DATA = """%%python
import cupy
M = N = K = 4096
a = cupy.random.random((M, K), dtype=cupy.float32).astype(cupy.float16)
b = cupy.random.random((N, K), dtype=cupy.float32).astype(cupy.float16)
c = cupy.zeros((M, N), dtype=cupy.float16)
"""
PROFILE_TIMEOUT = 900  # ncu replays the GEMM a dozen times, after starting a process for it


@pytest.mark.gpu
def test_profile_of_the_gemm_shows_the_tensor_pipe_its_stalls_and_its_lines(tmp_path: Path) -> None:
    with KernelDriver("choreo") as driver:
        ok(driver.run(f"%%python\nimport os\nos.chdir({str(tmp_path)!r})"))
        ok(driver.run("%%choreo --target cuda\n" + GEMM))
        ok(driver.run(GEMM_DATA))
        run = ok(driver.run("%profile --source gemm_ws(a, b, c)", timeout=PROFILE_TIMEOUT))
        table, _roofline, lines = run.displays()
        row = next(line for line in table["text/plain"].splitlines() if "gemm_ws_kernel" in line)
        assert "barrier" in row or "long scoreboard" in row, row
        assert "what the stall reasons mean:" in run.stream() and "compute-bound" in run.stream()
        assert f"full report: {tmp_path / 'gemm_ws.ncu-rep'}" in run.stream()
        waits = ("wait op;", "wait full.at(k);", "wait empty.at(k);", "op = mma.row.row.async")
        assert any(wait in line for line in lines["text/plain"].splitlines()[3:6] for wait in waits), lines
        facts = ok(
            driver.run(
                "%%python\n(k,) = _profile.kernels\n"
                "print(round(k.tensor_percent), [r.key for r, _ in k.top_stalls()], k.roofline.bound, "
                "_profile.report.exists())"
            )
        ).stream()
        tensor, *rest = facts.split(maxsplit=1)
        assert int(tensor) > 50 and rest[0].endswith("compute True\n"), facts  # the tensor pipe is the bound
        print(f"%profile of gemm_ws at 4096³: {row}\n{facts}")  # for bench/NOTES.md (pytest -s)


@pytest.mark.gpu
def test_sass_of_a_cuda_cell_is_the_loaded_cubin_marked_with_choreo_lines() -> None:
    with KernelDriver("choreo") as driver:
        run = ok(driver.run("%%choreo --target cuda --ptx --sass\n" + GEMM, timeout=180))
        _summary, ptx, sass = run.displays()
        assert ptx["text/plain"].startswith("// PTX from NVRTC")
        text = sass["text/plain"]
        assert text.startswith("// SASS: nvdisasm of the cubin the cuda target loads")
        hgmma = text.index("HGMMA.64x256x16.F32")
        mma_line = next(line.strip() for line in GEMM.splitlines() if "op = mma.row.row.async" in line)
        assert text[text.rfind("// line ", 0, hgmma) :].split("\n")[0].endswith(mma_line)


@pytest.mark.gpu
def test_sweep_ranks_by_a_profiled_metric() -> None:
    with KernelDriver("choreo") as driver:
        ok(driver.run("%%choreo --target cuda\n" + GEMM))
        ok(driver.run(GEMM_DATA))
        run = ok(
            driver.run(
                "%sweep STAGES=2,4 --metric sm__throughput -n 3 -- gemm_ws(a, b, c)", timeout=PROFILE_TIMEOUT
            )
        )
        table = run.displays()[1]["text/plain"]
        assert "sm__throughput.avg.pct_of_peak_sustained_elapsed" in table
        facts = ok(
            driver.run(
                "%%python\nm = [p.metric for p in _sweep.points]\nprint(all(0 < v <= 100 for v in m), _sweep.best.metric == max(m))"
            )
        ).stream()
        assert facts == "True True\n", table


# ---------------------------------------------------------------------------- without a kernel


def test_devices_are_matched_by_name_most_specific_first() -> None:
    assert (device_named("NVIDIA H200").peak_flops, device_named("NVIDIA H200").peak_bytes) == (
        989e12,
        4.8e12,
    )
    assert device_named("NVIDIA H100 PCIe").peak_flops == 756e12
    assert device_named("NVIDIA H100 80GB HBM3").peak_bytes == 3.35e12
    assert device_named("NVIDIA GH200 480GB").peak_flops is None  # not an H200
    assert device_named("NVIDIA GeForce RTX 4090").peak_flops is None


def test_timing_line_has_median_spread_rate_and_share_of_peak() -> None:
    h200 = device_named("NVIDIA H200")
    timing = Timing("gemm(a, b)", [2e-3, 1e-3, 3e-3], h200, Work(989e9, FLOPS))
    assert timing.median == 2e-3 and timing.rate == pytest.approx(494.5e12)
    assert str(timing) == (
        "gemm(a, b): median 2 ms over 3 runs (min 1 ms, max 3 ms; CUDA events, NVIDIA H200)"
        " · 494.5 TFLOP/s · 50% of peak"
    )
    copy = Timing("copy(x)", [1e-3], SIM_DEVICE, Work(4e6, BYTES))
    assert copy.rate_text() == "4 GB/s" and copy.percent_of_peak is None and "wall clock" in str(copy)
    assert Timing("f()", [1e-3], SIM_DEVICE).rate is None


def test_format_seconds_picks_the_unit() -> None:
    assert [format_seconds(s) for s in (2.5, 0.0123, 4.56e-5, 7e-9)] == [
        "2.5 s",
        "12.3 ms",
        "45.6 µs",
        "7 ns",
    ]


def test_grid_parsing_and_order() -> None:
    grid = parse_grid("BN=128,256 STAGES=2,3 MODE=fast")
    assert grid == {"BN": [128, 256], "STAGES": [2, 3], "MODE": ["fast"]}
    assert [tuple(p.values()) for p in grid_points(grid)] == [
        (128, 2, "fast"),
        (128, 3, "fast"),
        (256, 2, "fast"),
        (256, 3, "fast"),
    ]


def test_difference_uses_the_tolerance_and_counts_nan() -> None:
    reference = np.ones(4, np.float32)
    assert difference(reference + 1e-4, reference, 1e-3, 1e-3) is None
    assert difference(np.array([1, np.nan, 1, 3], np.float32), reference, 1e-3, 1e-3) == (
        "2 of 4 values differ from the first point's"
    )
    assert "shape (2,)" in (difference(reference[:2], reference, 1e-3, 1e-3) or "")


def test_tables_flag_rows_in_text_and_html() -> None:
    bundle = table_bundle(["a", "bb"], [["1", "x"], ["22", "y"]], {1}, "title")
    assert bundle["text/plain"] == "title\n  a   bb\n  --  --\n  1   x\n! 22  y"
    assert bundle["text/html"].count("<tr") == 3 and "color:#b91c1c" in bundle["text/html"]


def test_resources_table_flags_spills() -> None:
    kernels = [
        KernelResources("gemm_kernel", 384, 168, 0, 147456, 0, 1, 64),
        KernelResources("spill_kernel", 128, 255, 1024, 0, 64, 3, 64),
    ]
    assert kernels[0].occupancy == pytest.approx(12 / 64)
    text = resources_bundle("gemm", kernels)["text/plain"].splitlines()
    assert text[3].split()[:3] == ["gemm_kernel", "384", "168"] and "144 KiB" in text[3] and "19%" in text[3]
    assert text[4].startswith("! spill_kernel") and "64 B" in text[4]
