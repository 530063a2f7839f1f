"""Host-level control flow in the CUDA host plan, read without a GPU: a `foreach` at host level is a
loop of steps whose kernels take the index as an argument, `device(cpu)` code is element writes on the
host, `sync.global` a wait; the host's element writes give what the sim gives."""

from __future__ import annotations

import numpy as np
import pytest

import choreo_kernel as ck
from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.device_checks import own_expressions
from choreo_kernel.compiler.cuda.plan import (
    HostBuffer,
    HostIf,
    HostLoop,
    HostPrint,
    HostScalar,
    HostStore,
    HostSync,
    Launch,
    Step,
)
from choreo_kernel.compiler.driver import analyze
from choreo_kernel.compiler.semantics.evaluate import NotEvaluable, evaluate, shape
from choreo_kernel.runtime.host_steps import host_lookup, loop_indices, store_element

SOURCE = """
__co__ void phases(f32 [8] &a, f32 [8] &b) {
  parallel.async by 1 : device(cpu) {
    foreach i in [8]
      a.at(i) = a.at(i) * 2.0f + 1.0f;
  }
  parallel.async by 1 : device(gpu) {
    foreach r in 2 {
      parallel t by 4 : block
        b.at(r * 4 + t) = b.at(r * 4 + t) + a.at(0);
    }
  }
  sync.global;
}
"""


def _kinds(steps: tuple[Step, ...]) -> list[object]:
    return [
        (type(step).__name__, _kinds(step.body)) if isinstance(step, HostLoop) else type(step).__name__
        for step in steps
    ]


def test_device_parts_and_host_loops_are_steps_in_program_order() -> None:
    analysis = analyze(SOURCE, target="cuda")
    assert not [d for d in analysis.diagnostics if d.severity == "error"]
    assert analysis.lowered is not None
    plan = analysis.lowered.plans["phases"]
    assert _kinds(plan.steps) == [("HostLoop", ["HostStore"]), ("HostLoop", ["Launch"]), "HostSync"]
    assert plan.written == {"a", "b"}  # the host writes a, the kernel b: both go back to the caller


def test_a_kernel_inside_a_host_loop_takes_the_index_as_an_argument() -> None:
    analysis = analyze(SOURCE, target="cuda")
    assert analysis.lowered is not None
    (launch,) = analysis.lowered.plans["phases"].launches
    assert isinstance(launch, Launch)
    assert [p.name for p in launch.parameters if p.kind == "scalar"] == ["r"]


def test_the_hosts_element_writes_give_what_the_sim_gives() -> None:
    analysis = analyze(SOURCE, target="cuda")
    assert analysis.lowered is not None
    loop = analysis.lowered.plans["phases"].steps[0]
    assert isinstance(loop, HostLoop)
    (store,) = loop.body
    assert isinstance(store, HostStore)
    info = analysis.functions["phases"]
    a = np.linspace(-1, 1, 8, dtype=np.float32)
    values: dict[object, object] = {}

    def lookup(name: ast.Name) -> object:
        symbol = info.symbol_of[id(name)]
        return a if symbol.name == "a" else values[symbol]

    for (index,) in loop_indices(loop.statement, lambda e: evaluate(e, lookup)):
        values[loop.variables[0]] = index
        store_element(store.statement, lambda e: evaluate(e, lookup))
    on_sim = np.linspace(-1, 1, 8, dtype=np.float32)
    ck.compile(SOURCE, target="sim").phases(on_sim, np.zeros(8, np.float32))
    np.testing.assert_array_equal(a, on_sim)


def test_sync_global_is_a_wait_of_the_host() -> None:
    analysis = analyze(SOURCE, target="cuda")
    assert analysis.lowered is not None
    assert isinstance(analysis.lowered.plans["phases"].steps[-1], HostSync)


BRANCHES = """
__co__ void pick(s32 [8] &out, s32 mode, s32 [2, 3] lhs) {
  ituple<3> b = {1, mode, 3};
  with idx in [b] {
    println(111, idx);
    if (mode > 2) {
      parallel t by 8 : block
        out.at(t) = mode;
    } else {
      parallel t by 8 : block
        out.at(t) = 0;
    }
  }
}
"""


def test_a_host_if_holds_the_steps_of_each_branch_and_a_with_its_zeros() -> None:
    analysis = analyze(BRANCHES, target="cuda")
    assert not [d for d in analysis.diagnostics if d.severity == "error"]
    assert analysis.lowered is not None
    plan = analysis.lowered.plans["pick"]
    with_value, printed, branch = plan.steps
    assert isinstance(with_value, HostScalar) and with_value.symbol.name == "idx"
    assert evaluate(with_value.value, lambda name: None) == (0, 0, 0)  # printed as {0, 0, 0}, as on the sim
    assert isinstance(printed, HostPrint)
    assert isinstance(branch, HostIf)
    assert [len(branch.then), len(branch.otherwise)] == [1, 1]
    (then,), (otherwise,) = branch.then, branch.otherwise
    assert isinstance(then, Launch) and isinstance(otherwise, Launch)
    assert [then.kernel, otherwise.kernel] == ["pick_kernel", "pick_kernel_2"]  # in source order
    assert len(plan.launches) == 2


def test_host_element_access_to_an_array_kept_as_bits_is_a_located_error() -> None:
    source = """
__co__ void twice(bf16 [4] &x, f32 [4] &y) {
  foreach i in [4] {
    y.at(i) = y.at(i) * 2.0f;
    x.at(i) = x.at(i) * 2.0f;
  }
}
"""
    analysis = analyze(source, target="cuda")
    errors = [d for d in analysis.diagnostics if d.severity == "error"]
    assert [(d.line, d.column) for d in errors] == [(5, 5)], errors
    assert "'x' holds bf16" in errors[0].message


HOST_NAMES = """
__co__ f32 [6, 64] rows(f32 [384] a) {
  int WIDTH = 64;
  l = a.span_as([6, WIDTH]);
  f32 [l.span] out;
  parallel r by 6 : block {
    parallel c by WIDTH : thread
      out.at(r, c) = l.at(r, c) * 2.0f;
  }
  return out;
}
"""


def test_the_host_reads_an_int_constant_and_the_shape_of_a_view_named_at_host_level() -> None:
    """The sizes of the host plan: `out`'s shape is that of the host-level view `l`, the threads of the
    inner parallel the host-level `int WIDTH`; an argument comes from the values, a kernel's own
    variable is not the host's to read."""
    analysis = analyze(HOST_NAMES, target="cuda")
    assert not [d for d in analysis.diagnostics if d.severity == "error"]
    assert analysis.lowered is not None
    info = analysis.functions["rows"]
    names = {
        node.id: node
        for stmt in ast.walk_statements(info.function.body)
        for expr in own_expressions(stmt)
        for node in ast.walk_expr(expr)
        if isinstance(node, ast.Name)
    }
    argument = np.arange(384, dtype=np.float32)
    lookup = host_lookup(info, {info.symbol_of[id(names["a"])]: argument})
    buffer = analysis.lowered.plans["rows"].steps[0]
    assert isinstance(buffer, HostBuffer) and buffer.symbol.name == "out"
    assert shape(buffer.shape, lookup) == (6, 64)
    assert evaluate(names["a"], lookup) is argument
    assert evaluate(names["WIDTH"], lookup) == 64
    assert evaluate(names["l"], lookup) == (6, 64)
    with pytest.raises(NotEvaluable):
        evaluate(names["r"], lookup)
