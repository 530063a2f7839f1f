"""Barriers, fences, named barriers, `yield`, `assert`, `print`, `while (event)`, cooperative launches and
the hints of kernels and loops: what each lowers to, what the sim does with it, and the errors that
name what went wrong. What they compute is checked by tests/cuda/*.co on the sim and on the GPU;
the rules that reject them, by tests/rules/*.co."""

from __future__ import annotations

import numpy as np
import pytest
from programs import TUPLE_PRINTS

import choreo_kernel as ck
from choreo_kernel.compiler import ast, printer
from choreo_kernel.compiler.cuda.plan import WaitSite
from choreo_kernel.compiler.diagnostics import DiagnosticSink, Span
from choreo_kernel.compiler.parser import parse
from choreo_kernel.compiler.preprocess import SourceMap
from choreo_kernel.runtime.reports import site_failure


def _statements(body: str) -> list[ast.Stmt]:
    sink = DiagnosticSink()
    program = parse(f"__co__ void f() {{\n{body}\n}}\n", SourceMap(), sink)
    assert not sink.diagnostics, [str(d) for d in sink.diagnostics]
    return list(program.functions[0].body.body)


def _errors(source: str, target: str = "cuda") -> list[ck.Diagnostic]:
    return [d for d in ck.check(source, target=target) if d.severity == "error"]


# ------------------------------------------------------------------ parsing and printing


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("sync.barrier : block;", ast.Barrier),
        ("sync.barrier : device;", ast.Barrier),
        ("sync.fence : block<shared>;", ast.Fence),
        ("__bar_sync(1, 256);", ast.NamedBarrier),
        ("__bar_arrive(2, 128);", ast.NamedBarrier),
        ("yield;", ast.Yield),
        ('assert(M > 8, "M is \\"large\\"");', ast.Assert),
        ('println("a", 1);', ast.Print),
        ('print!("a");', ast.Print),
    ],
)
def test_each_statement_parses_and_prints_back_as_written(text: str, kind: type[ast.Stmt]) -> None:
    (stmt,) = _statements(text)
    assert isinstance(stmt, kind)
    assert printer.statement(stmt) == text


def test_a_level_of_a_parallel_takes_cooperative_and_attributes_attach_to_the_parallel() -> None:
    (stmt,) = _statements("[[launch_bounds(_, 2)]]\n[[maxnreg(64)]]\nparallel b by 4 : block<cooperative> {}")
    assert isinstance(stmt, ast.Parallel)
    assert stmt.clauses[0].cooperative
    assert [(a.name, len(a.args)) for a in stmt.attributes] == [("launch_bounds", 2), ("maxnreg", 1)]
    assert printer.statement(stmt).startswith(
        "[[launch_bounds(_, 2)]] [[maxnreg(64)]] parallel b by 4 : block<cooperative>"
    )


def test_another_statement_s_attribute_is_left_with_a_warning() -> None:
    source = "__co__ void f() {\n  [[schedule(k_tiles(1, 0))]]\n  int x = 1;\n}\n"
    diagnostics = ck.check(source, target="sim")
    assert [(d.severity, d.line) for d in diagnostics] == [("warning", 2)]
    assert "ignored" in diagnostics[0].message


def test_a_loop_hint_is_kept_on_the_loop() -> None:
    (loop,) = _statements("foreach k in [8] : unroll(2) {}")
    assert isinstance(loop, ast.Foreach) and loop.hint is not None
    assert (loop.hint.name, printer.expressions(loop.hint.args)) == ("unroll", "2")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[[launch_bounds(128)]]\nint x = 1;", ["launch_bounds", "kernel", "parallel"]),
        ("parallel b by 2 : block<shared> {}", ["cooperative"]),
        ("sync.barrier;", ["sync.barrier", "level"]),
    ],
)
def test_misplaced_syntax_is_a_located_error(text: str, words: list[str]) -> None:
    sink = DiagnosticSink()
    parse(f"__co__ void f() {{\n{text}\n}}\n", SourceMap(), sink)
    assert sink.diagnostics and sink.diagnostics[0].line >= 2
    assert all(word in sink.diagnostics[0].message for word in words), sink.diagnostics[0].message


# ------------------------------------------------------------------ print


PRINTS = """
__co__ void show(s32 [2, 3] x, int n) {
  println("n=", n, " span ", x.span, " tuple ", {n, 4}, " f ", 0.25f, " b ", n > 1);
  parallel p by 2 : block, t by 3 : thread {
    println("p", p, " t", t, " x", x.at(p, t));
  }
  parallel p by 2 : block {
    print("block ", p, "; ");
  }
  println("");
}
"""


def test_print_on_the_sim_writes_what_printf_would(capsys: pytest.CaptureFixture[str]) -> None:
    module = ck.compile(PRINTS, target="sim")
    module.show(np.arange(6, dtype=np.int32).reshape(2, 3), 5)
    lines = capsys.readouterr().out.split("\n")
    assert lines[0] == "n=5 span [2, 3] tuple {5, 4} f 0.250000 b true"
    assert lines[1:7] == [f"p{p} t{t} x{3 * p + t}" for p in range(2) for t in range(3)]
    assert lines[7] == "block 0; block 1; "  # a block-level print runs once per block


def test_print_lowers_to_printf_once_per_instance_of_its_level() -> None:
    cuda = ck.compile(PRINTS, target="cuda").cuda_source
    assert 'printf("p%lld t%lld x%lld\\n", static_cast<long long>(p), static_cast<long long>(t)' in cuda
    assert 'if (threadIdx.x == 0) printf("block %lld; ", static_cast<long long>(p));' in cuda


def test_print_at_host_level_is_a_step_of_the_host_plan() -> None:
    plan = ck.compile(PRINTS, target="cuda").cuda_plan("show")
    assert plan is not None
    assert [type(step).__name__ for step in plan.steps] == ["HostPrint", "Launch", "Launch", "HostPrint"]
    assert all(not launch.cooperative for launch in plan.launches) and all(
        launch.prints for launch in plan.launches
    )


def test_compile_time_print_shows_what_the_compiler_knows(capsys: pytest.CaptureFixture[str]) -> None:
    source = """
__co__ void f(f32 [N, 64] x, int n) {
  s : [4, 8];
  println!("rows ", x.span, ", cols ", x.span(1), ", ", s, " elements ", |s|, ", n ", n);
  parallel p by 2 : block {
    print!("p ", p, "\\n");
  }
}
"""
    ck.compile(source, target="sim")
    assert capsys.readouterr().out == (
        "rows [N, 64], cols 64, [4, 8] elements 32, n <run-time value>\np <run-time value>\n"
    )
    ck.compile(source, target="sim")  # the same build again: it does not compile again, nor print
    assert capsys.readouterr().out == ""


# ------------------------------------------------------------------ assert


def test_a_failed_assert_in_a_kernel_is_a_located_error_on_the_sim() -> None:
    source = """__co__ f32 [64] f(f32 [64] x) {
  f32 [64] y;
  parallel p by 2 : block, t by 32 : thread {
    assert(x.at(p # t) >= 0.0f, "inputs are not negative");
    y.at(p # t) = x.at(p # t);
  }
  return y;
}
"""
    module = ck.compile(source, target="sim")
    x = np.ones(64, np.float32)
    np.testing.assert_array_equal(module.f(x), x)
    x[40] = -1
    with pytest.raises(ck.ChoreoError) as raised:
        module.f(x)
    (error,) = raised.value.diagnostics
    assert (error.line, "assertion failed: inputs are not negative") == (4, error.message.split(": ", 1)[1])
    assert "block (1)" in error.message  # element 40 is block 1's


def test_a_failed_assert_at_host_level_stops_the_call_before_the_kernels() -> None:
    source = """__co__ f32 [N] f(f32 [N] x) {
  assert(N % 32 == 0, "N is a multiple of 32");
  f32 [N] y;
  parallel p by N / 32 : block, t by 32 : thread {
    y.at(p # t) = x.at(p # t);
  }
  return y;
}
"""
    module = ck.compile(source, target="sim")
    assert module.f(np.ones(64, np.float32)).shape == (64,)
    with pytest.raises(ck.ChoreoError, match="N is a multiple of 32") as raised:
        module.f(np.ones(48, np.float32))
    assert raised.value.diagnostics[0].line == 2
    plan = ck.compile(source, target="cuda").cuda_plan("f")
    assert plan is not None and type(plan.steps[0]).__name__ == "HostCheck"


def test_a_device_assert_reports_through_the_launch_status() -> None:
    source = """__co__ void f(f32 [64] x) {
  parallel p by 2 : block, t by 32 : thread {
    assert(x.at(p # t) > 0.0f, "positive");
  }
}
"""
    module = ck.compile(source, target="cuda")
    assert "if (!(x[(p * 32 + t)] > 0.0f)) choreo::assertion_fails(status, 0);" in module.cuda_source
    plan = module.cuda_plan("f")
    assert plan is not None
    (site,) = plan.wait_sites
    assert (site.kind, site.message, site.line) == ("assert", "positive", 3)


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("assert", ["assertion failed", "positive"]),
        ("barrier", ["grid barrier", "line 3", "every block"]),
        ("spin", ["loop on event 'full'", "line 3", "pending"]),
        ("event", ["wait on event 'full'", "line 3", "never completed"]),
    ],
)
def test_a_reported_site_names_what_gave_up(kind: str, words: list[str]) -> None:
    site = WaitSite("full", 3, 'assert(x > 0, "positive")', kind, "positive", Span(3, 5, 3, 30))
    source = '\n\n    assert(x > 0, "positive");\n'
    error = site_failure("f", site, 2.0, source, "k.co")
    assert all(word in str(error) for word in words), str(error)
    if kind == "assert":
        assert error.diagnostics[0].line == 3 and "k.co:3:5" in str(error)


# ------------------------------------------------------------------ yield


def test_yield_lowers_to_return_and_is_refused_with_a_warpgroup_barrier_on_cuda() -> None:
    source = """__co__ void f(global f32 [128] x) {
  parallel p by 1 : block, t by 128 : thread {
    if (x.at(t) < 0.0f) {
      yield;
    }
    x.at(t) = 1.0f;
  }
}
"""
    assert "return;  // this thread leaves the kernel" in ck.compile(source, target="cuda").cuda_source
    barrier = source.replace("    x.at(t) = 1.0f;", "    sync.barrier : group-4;\n    x.at(t) = 1.0f;")
    (error,) = _errors(barrier)
    assert error.line == 4 and "yield" in error.message and "hang" in error.message
    assert not _errors(
        barrier, target="sim"
    )  # the sim counts a thread that left out, as CUDA's __syncthreads


def test_yield_inside_a_loop_leaves_the_loop_and_the_kernel_on_the_sim() -> None:
    source = """__co__ void f(global s32 [32] count) {
  parallel p by 1 : block, t by 32 : thread {
    foreach k in [10] {
      if (k == t) {
        yield;
      }
      count.at(t) = count.at(t) + 1;
    }
    count.at(t) = count.at(t) + 100;
  }
}
"""
    count = np.zeros(32, np.int32)
    ck.compile(source, target="sim").f(count)
    expected = np.where(np.arange(32) < 10, np.arange(32), 110)  # thread t counts k < t, then leaves
    np.testing.assert_array_equal(count, expected)


# ------------------------------------------------------------------ barriers


def test_a_grid_barrier_that_one_block_skips_is_a_deadlock_on_the_sim() -> None:
    source = """__co__ s32 [2] f() {
  s32 [2] a;
  parallel b by 2 : block<cooperative> {
    if (b == 0) {
      sync.barrier : block;
    }
    a.at(b) = b;
  }
  return a;
}
"""
    with pytest.raises(ck.ChoreoError, match="deadlock") as raised:
        ck.compile(source, target="sim").f()
    assert "grid barrier" in str(raised.value) and "1 of its 2 arrivals" in str(raised.value)


def test_a_cooperative_kernel_syncs_its_grid_through_a_barrier_parameter() -> None:
    source = """__co__ s32 [2] f() {
  s32 [2] a;
  parallel b by 2 : block<cooperative> {
    a.at(b) = b;
    sync.barrier : block;
  }
  parallel b by 2 : block {
    sync.barrier : block;
  }
  return a;
}
"""
    module = ck.compile(source, target="cuda")
    plan = module.cuda_plan("f")
    assert plan is not None
    first, second = plan.launches
    assert first.cooperative and not second.cooperative
    assert [p.kind for p in first.parameters][-2:] == ["grid_barrier", "status"]
    assert "grid_barrier" not in [p.kind for p in second.parameters]
    assert module.cuda_source.count("choreo::grid_sync(") == 1  # the second kernel's is __syncthreads


def test_a_warpgroup_barrier_stands_in_an_inthreads_only_where_it_picks_whole_warpgroups_on_cuda() -> None:
    """`inthreads (g == 1)` picks a whole warpgroup: its barrier is reached by every thread it waits for;
    `inthreads (t < 64)` picks half of each, whose other half would never arrive."""
    source = """__co__ void f(global f32 [256] x) {
  parallel p by 1 : block {
    parallel g by 2 : group-4, t by 128 : thread {
      inthreads (PICK) {
        x.at(g # t) = 1.0f;
        sync.barrier : group-4;
      }
    }
  }
}
"""
    whole = ck.compile(source.replace("PICK", "g == 1"), target="cuda").cuda_source
    assert (
        "choreo::named_barrier_sync(1 + threadIdx.x / 128, 128);  // this warpgroup's threads meet" in whole
    )
    (error,) = _errors(source.replace("PICK", "t < 64"))
    assert error.line == 6 and "picks some threads" in error.message


def test_a_named_barrier_that_never_fills_is_a_deadlock_naming_it() -> None:
    source = """__co__ void f(f32 [128] x) {
  parallel p by 1 : block {
    parallel g by 2 : group-4, t by 128 : thread {
      inthreads.async (g == 0) {
        __bar_sync(9, 256);
      }
    }
  }
}
"""
    with pytest.raises(ck.ChoreoError, match="deadlock") as raised:
        ck.compile(source, target="sim").f(np.zeros(128, np.float32))
    assert "named barrier 9" in str(raised.value) and "128 of its 256" in str(raised.value)


def test_a_named_barrier_may_not_take_a_warpgroup_barrier_id_on_cuda() -> None:
    source = """__co__ void f(global f32 [256] x) {
  parallel p by 1 : block {
    shared f32 [256] tile;
    parallel g by 2 : group-4, t by 128 : thread {
      tile.at(g # t) = x.at(g # t);
      sync.barrier : group-4;
      __bar_sync(2, 256);
    }
  }
}
"""
    (error,) = _errors(source)
    assert error.line == 7 and "named barrier 2" in error.message and "from 3 to 15" in error.message


def test_a_while_on_an_event_nobody_triggers_is_a_deadlock_on_the_sim() -> None:
    source = """__co__ void f() {
  parallel p by 1 : block {
    shared event full;
    parallel t by 32 : thread {
      while (full) {
      }
    }
  }
}
"""
    with pytest.raises(ck.ChoreoError, match="deadlock") as raised:
        ck.compile(source, target="sim").f()
    assert "line 5" in str(raised.value) and "'full'" in str(raised.value)


# ------------------------------------------------------------------ hints


def test_kernel_and_loop_hints_are_lowered() -> None:
    source = """__co__ void f(global f32 [4, 128] x) {
  [[launch_bounds(256, 2)]]
  parallel p by 4 : block, t by 128 : thread {
    foreach k in [8] : unroll(4) {
      x.at(p, t) = x.at(p, t) + 1.0f;
    }
    foreach k in [2] : unroll {
      x.at(p, t) = x.at(p, t) * 2.0f;
    }
  }
  [[maxnreg(40)]]
  parallel p by 4 : block, t by 128 : thread {
    x.at(p, t) = 0.0f;
  }
}
"""
    cuda = ck.compile(source, target="cuda").cuda_source
    assert "__global__ void __launch_bounds__(256, 2) f_kernel(" in cuda
    assert "__global__ void __maxnreg__(40) f_kernel_2(" in cuda
    assert "#pragma unroll 4\n  for (int k = 0; k < 8; ++k) {" in cuda
    assert "#pragma unroll\n  for (int k = 0; k < 2; ++k) {" in cuda  # a sibling loop keeps the name k


def test_both_register_limits_warn_that_launch_bounds_is_not_applied() -> None:
    source = (
        "__co__ void f() {\n  [[launch_bounds(128)]]\n  [[maxnreg(64)]]\n  parallel p by 1 : block {}\n}\n"
    )
    warnings = [d for d in ck.check(source) if d.severity == "warning"]
    assert [w.line for w in warnings] == [2] and "not applied" in warnings[0].message
    assert "__maxnreg__(64)" in ck.compile(source, target="cuda").cuda_source


def test_a_bounded_ituple_prints_its_elements_current_values(capsys: pytest.CaptureFixture[str]) -> None:
    ck.compile(TUPLE_PRINTS, target="sim").tuples(np.zeros(4, np.int32))
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["with {0, 0}"] + [f"foreach {{{i}, {j}}}" for i in range(2) for j in range(3)]
    cuda = ck.compile(TUPLE_PRINTS, target="cuda").cuda_source
    assert 'printf("foreach {%lld, %lld}\\n"' in cuda
