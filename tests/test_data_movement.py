"""Views of data and data movement beyond tiles: strided views, `.sqz()`, buffer arrays of several
dimensions, dma.pad / dma.transp, copies into a larger tile, L2 hints, and shared memory sized when a
kernel is launched.

The programs of tests/cuda (view_*, copy_*, dma_*, tma_rank*, shared_sized_at_launch, buffer_array_2d)
run on the sim against NumPy in test_sim.py and on the GPU in test_gpu.py; tests/rules holds one
program per diagnostic. Here: the sim's strided views against NumPy's for random views, what the
analysis decides once for both backends, the host's sizing of shared memory, and the parser.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

import choreo_kernel as ck
from choreo_kernel.compiler import ast
from choreo_kernel.compiler.cuda.cexpr import evaluate
from choreo_kernel.compiler.cuda.emit import emit_program
from choreo_kernel.compiler.cuda.plan import Launch
from choreo_kernel.compiler.driver import analyze
from choreo_kernel.compiler.graph import build_graph
from choreo_kernel.compiler.printer import expression

CUDA_PROGRAMS = Path(__file__).parent / "cuda"

STRIDED = """
__co__ f32 [{e0}, {e1}] picked(f32 [{rows}, {cols}] x) {{
  f32 [{e0}, {e1}] out;
  parallel p by 1 : block {{
    w = dma.copy x.view({e0}, {e1} : {s0}, {s1}).from({o0}, {o1}) => shared;
    dma.copy w.data => out;
  }}
  return out;
}}
"""


@st.composite
def strided_views(draw: st.DrawFn) -> dict[str, int]:
    """A strided view that lies inside a [rows, cols] array: extents, strides and offsets."""
    rows, cols = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    size = rows * cols
    e0, e1 = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    s0, s1 = draw(st.integers(0, size)), draw(st.integers(0, size))
    reach = (e0 - 1) * s0 + (e1 - 1) * s1
    if reach >= size:
        s0, s1 = 0, 1 if e1 <= size else 0
        reach = (e1 - 1) * s1
    o0 = draw(st.integers(0, max(0, (size - 1 - reach) // max(s0, 1)))) if s0 else 0
    room = size - 1 - reach - o0 * s0
    o1 = draw(st.integers(0, room // s1)) if s1 else 0
    return {"rows": rows, "cols": cols, "e0": e0, "e1": e1, "s0": s0, "s1": s1, "o0": o0, "o1": o1}


@settings(max_examples=30, deadline=None)
@given(strided_views())
def test_a_strided_view_reads_what_numpy_strides_read(view: dict[str, int]) -> None:
    """Element (i, j) of `x.view(e0, e1 : s0, s1).from(o0, o1)` is x's element o0*s0 + o1*s1 + i*s0 + j*s1."""
    module = ck.compile(STRIDED.format(**view), target="sim")
    x = np.arange(view["rows"] * view["cols"], dtype=np.float32).reshape(view["rows"], view["cols"])
    start = view["o0"] * view["s0"] + view["o1"] * view["s1"]
    itemsize = x.itemsize
    expected = as_strided(
        x.reshape(-1)[start:], (view["e0"], view["e1"]), (view["s0"] * itemsize, view["s1"] * itemsize)
    )
    np.testing.assert_array_equal(module.picked(x), expected)


def test_a_strided_view_past_the_data_is_an_error_on_the_sim_too() -> None:
    """Where the analysis cannot tell (the offset is a parameter), the sim stops at the view."""
    source = """
__co__ f32 [8, 8] picked(f32 [64, 64] x, int o) {
  f32 [8, 8] out;
  parallel p by 1 : block {
    w = dma.copy x.view(8, 8 : 512, 1).from(o, 0) => shared;
    dma.copy w.data => out;
  }
  return out;
}
"""
    module = ck.compile(source, target="sim")
    x = np.zeros((64, 64), np.float32)
    assert module.picked(x, 0).shape == (8, 8)
    with pytest.raises(ck.ChoreoError, match=r"5:.*reaches element 4103 of a buffer of 4096"):
        module.picked(x, 1)


def test_sqz_keeps_the_strides_of_the_other_dimensions() -> None:
    """The analysis drops the extent-1 dimensions and keeps the strides the backends then read."""
    source = """
__co__ void f(f32 [9, 10, 8] a) {
  parallel p by 1 : block {
    head = a.subspan(9, 1, 8).at(0, p, 0).sqz();
    dma.copy head => shared;
  }
}
"""
    analysis = analyze(source, target="sim")
    assert not analysis.has_errors
    info = analysis.functions["f"]
    (copy,) = [i for i in info.operations.values() if i.destination is not None]
    assert copy.destination.dims == (9, 8)
    head = next(s for s in info.symbol_of.values() if s.name == "head")
    assert head.value.dims == (9, 8) and head.value.strides == (80, 1)


@pytest.mark.parametrize(
    ("view", "warned"),
    [
        (
            "input2.chunkat(p, q, i).span_as([4, 8])",
            "is applied to non-contiguous data [1, 4, 8] (strides [2048, 128, 1])",
        ),
        (
            "input2.chunkat(p, q, _).span_as([1, 512])",
            None,
        ),  # an extent-1 dimension does not break contiguity
        ("input2.chunkat(p, _, _).span_as([2048])", None),
    ],
)
def test_span_as_of_non_contiguous_data_is_a_warning(view: str, warned: str | None) -> None:
    source = f"""
__co__ void f(s32 [2, 16, 128] input2) {{
  parallel p by 2, q by 4 {{
    foreach i in [16] {{
      dma.copy {view} => local;
    }}
  }}
}}
"""
    diagnostics = ck.check(source, target="sim")
    assert not [d for d in diagnostics if d.severity == "error"]
    messages = [d.message for d in diagnostics if d.severity == "warning"]
    if warned is None:
        assert messages == []
    else:
        assert len(messages) == 1 and warned in messages[0]


def test_span_as_of_non_contiguous_data_takes_the_elements_stored_from_its_first() -> None:
    """As in Croqtile: the reshape of a strided tile reads the contiguous elements from its first one."""
    source = """
__co__ f32 [2, 4] flat(f32 [4, 8] x) {
  f32 [2, 4] out;
  parallel p by 1 : block {
    dma.copy x.subspan(2, 4).at(1, 1).span_as([2, 4]) => out;
  }
  return out;
}
"""
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = ck.compile(source, target="sim").flat(x)
    np.testing.assert_array_equal(out, x.reshape(-1)[20:28].reshape(2, 4))


def test_the_analysis_records_pads_transposes_and_larger_tiles_for_both_backends() -> None:
    source = """
__co__ void f(f32 [4, 6] a, f32 [13, 32] b, f32 v) {
  parallel p by 1 : block {
    dma.pad<{1, 2}, {3, 0}, {0, 0}, v> a => shared;
    dma.transp<1, 0> a => shared;
    shared f32 [16, 32] wide;
    dma.copy b => wide;
    shared f32 [8, 52] same_count;
    dma.copy b.subspan(13, 32).at(0, 0).span_as([416]) => same_count;
  }
}
"""
    analysis = analyze(source, target="sim")
    assert not analysis.has_errors, [str(d) for d in analysis.diagnostics]
    info = analysis.functions["f"]
    copies = [s for s in ast.walk_statements(info.function.body) if isinstance(s, ast.OperationStmt)]
    pad, transpose, wide, same = (info.transfers.get(id(s.operation)) for s in copies)
    assert pad is not None and pad.low is not None
    assert [e if isinstance(e, int) else expression(e) for e in pad.low] == ["1", "2"]
    assert info.operations[id(copies[0])].destination.dims == (8, 8)
    assert transpose is not None and transpose.permutation == (1, 0)
    assert info.operations[id(copies[1])].destination.dims == (6, 4)
    assert wide is not None and wide.low == (0, 0) and wide.fill is None  # the rest becomes zero
    assert same is None  # same element count: a reshaping copy, nothing to fill


def test_a_copy_into_a_smaller_tile_is_still_an_error() -> None:
    source = """
__co__ void f(f32 [16, 32] b) {
  parallel p by 1 : block {
    shared f32 [13, 32] narrow;
    dma.copy b => narrow;
  }
}
"""
    (error,) = [d for d in ck.check(source) if d.severity == "error"]
    assert "shapes differ" in error.message and error.line == 5


def test_the_graph_shows_pads_and_hinted_loads_as_operations() -> None:
    analysis = analyze((CUDA_PROGRAMS / "dma_pad_tiles.co").read_text())
    titles = [n.title for n in build_graph(analysis, "padded").nodes_of("operation")]
    assert titles[0] == "dma.pad<{1, 2}, {1, 2}, {0, 0}, v>"
    analysis = analyze((CUDA_PROGRAMS / "tma_rank5_scale.co").read_text())
    graph = build_graph(analysis, "scale")
    (load,) = [n for n in graph.nodes_of("operation") if n.title.startswith("tma.load")]
    assert load.title == "tma.load.async.evict_first"
    assert any(graph.node(e.target).kind == "wait" for e in graph.edges if e.source == load.id)


# ------------------------------------------------------------------ shared memory sized at launch


def launches_of(source: str, function: str) -> list[Launch]:
    analysis = analyze(source)
    assert not analysis.has_errors, [str(d) for d in analysis.diagnostics]
    assert analysis.lowered is not None
    return list(analysis.lowered.plans[function].launches)


@pytest.mark.parametrize("m", [1, 3, 5, 64])
def test_the_host_sizes_shared_memory_from_the_arguments(m: int) -> None:
    """Three buffers of M * 4 * 32 s32 (each rounded up to 128 bytes) after the fixed 128 bytes."""
    (launch,) = launches_of((CUDA_PROGRAMS / "shared_sized_at_launch.co").read_text(), "summed")
    assert launch.shared_bytes == 128
    each = -(-(m * 4 * 32 * 4) // 128) * 128
    assert launch.shared_bytes_for({"M": m}) == 128 + 3 * each


def test_shared_memory_can_be_sized_by_a_scalar_parameter() -> None:
    source = """
__co__ void f(f16 [64, 64] x, int rows) {
  parallel p by 1 : block {
    shared f16 [8, 8] fixed;
    t = dma.copy x.subspan(rows, 64).at(0, 0) => shared;
  }
}
"""
    (launch,) = launches_of(source, "f")
    names = [p.name for p in launch.parameters if p.kind == "scalar"]
    assert names == ["rows"]
    assert launch.shared_bytes_for({"rows": 3}) == 128 + 384  # 3 * 64 halves, rounded up to 128 bytes
    assert launch.shared_bytes_for({"rows": 5}) == 128 + 640
    assert launch.dynamic_shared is not None


def test_a_fixed_size_tile_keeps_a_fixed_arena() -> None:
    source = (CUDA_PROGRAMS / "dma_pad_tiles.co").read_text()
    (launch,) = launches_of(source, "padded")
    assert launch.dynamic_shared is None and launch.shared_bytes_for({}) == 8 * 10 * 4


@pytest.mark.parametrize("m", [1, 16])
def test_a_local_tile_sized_by_the_arguments_is_global_scratch_sized_at_launch(m: int) -> None:
    """`=> local` of an [M, 1] f32 tile: each thread of the grid gets a slice of 4 * M bytes."""
    source = """
__co__ void f(f32 [M, 8] x) {
  parallel p by 1 : block, t by 8 : thread {
    l = dma.copy x.chunkat(_, t) => local;
  }
}
"""
    (launch,) = launches_of(source, "f")
    (scratch,) = [parameter for parameter in launch.parameters if parameter.kind == "scratch"]
    assert scratch.size is not None and evaluate(scratch.size, {"M": m}) == 4 * m
    assert "choreo::grid_thread()" in emit_program(analyze(source))


def test_a_local_buffer_sized_inside_the_kernel_is_refused() -> None:
    source = """
__co__ void f(f32 [M, 8] x) {
  parallel p by 1 : block, t by 8 : thread {
    foreach k in [M] {
      local f32 [k] grow;
    }
  }
}
"""
    (error,) = [d for d in ck.check(source) if d.severity == "error"]
    assert (
        "local buffer 'grow' must be an integer fixed before the thread runs, but it is a bounded value ('k' is bounded"
        in error.message
    )
    assert "or a value the arguments give" in error.message and (error.line, error.column) == (5, 18)


# ------------------------------------------------------------------ parsing


def test_strided_view_arguments_parse_and_print_back() -> None:
    analysis = analyze(STRIDED.format(rows=8, cols=8, e0=2, e1=3, s0=16, s1=2, o0=1, o1=0), target="sim")
    (stmt,) = [
        s for s in ast.walk_statements(analysis.program.functions[0].body) if isinstance(s, ast.OperationStmt)
    ][:1]
    view = stmt.operation.args[0]
    assert isinstance(view, ast.Method) and isinstance(view.value, ast.Method)
    assert [expression(s) for s in view.value.strides] == ["16", "2"]
    assert expression(view) == "x.view(2, 3 : 16, 2).from(1, 0)"


def test_pad_configuration_is_parsed_with_spans_in_the_users_source() -> None:
    source = "__co__ void f(f32 [4, 4] a) {\n  parallel p by 1 {\n    dma.pad<{1, 1}, {2, 2}, {0, 0}, 3.5f> a => local;\n  }\n}\n"
    analysis = analyze(source, target="sim")
    (stmt,) = [
        s for s in ast.walk_statements(analysis.program.functions[0].body) if isinstance(s, ast.OperationStmt)
    ]
    assert len(stmt.operation.config) == 4
    high, value = stmt.operation.config[1], stmt.operation.config[3]
    assert isinstance(high, ast.TupleLiteral) and [expression(i) for i in high.items] == ["2", "2"]
    assert isinstance(value, ast.FloatLiteral) and value.value == 3.5
    assert (value.span.line, value.span.column) == (3, source.splitlines()[2].index("3.5f") + 1)


def test_a_syntax_error_in_a_pad_configuration_points_into_it() -> None:
    source = "__co__ void f(f32 [4, 4] a) {\n  parallel p by 1 {\n    dma.pad<{1, 1}, {2, 2} {0, 0}, 0> a => local;\n  }\n}\n"
    error = next(d for d in ck.check(source) if d.severity == "error")
    assert error.message.startswith("syntax error")
    assert (error.line, error.column) == (3, source.splitlines()[2].index("{0, 0}") + 1)


@pytest.mark.parametrize(("shape", "tiles"), [((10, 7), (3, 4)), ((10, 6), (8, 4))])
def test_a_modspan_without_at_is_where_the_whole_tiles_end_on_the_sim(
    shape: tuple[int, int], tiles: tuple[int, int]
) -> None:
    """Without `.at`, a modspan is the tail after the last whole tile, not the tile at the origin."""
    rows, cols = shape[0] % tiles[0], shape[1] % tiles[1]
    source = f"""
__co__ s32 [{rows}, {cols}] tail(s32 [{shape[0]}, {shape[1]}] a) {{
  s32 [{rows}, {cols}] out;
  parallel p by 1 : block {{
    dma.copy a.modspan({tiles[0]}, {tiles[1]}) => out;
  }}
  return out;
}}
"""
    a = np.arange(shape[0] * shape[1], dtype=np.int32).reshape(shape)
    np.testing.assert_array_equal(
        ck.compile(source, target="sim").tail(a), a[shape[0] - rows :, shape[1] - cols :]
    )


# The copy's destination has as many rows as `rows` says: only the run can tell whether it fits.
ROWS_FROM_AN_ARGUMENT = """\
__co__ void store_rows(s32 [4, 64] src, global s32 [8, 64] out, int rows) {
  parallel p by 1 : block {
    shared s32 [4, 64] tile;
    dma.copy src => tile;
    dma.copy tile => out.view(rows, _).from(0, 0);
  }
}
"""


def test_a_copy_whose_shapes_differ_only_when_it_runs_is_checked_on_cuda_as_on_the_sim() -> None:
    text = emit_program(analyze(ROWS_FROM_AN_ARGUMENT, target="cuda"))
    assert "if (256 != rows * 64) choreo::assertion_fails(status, 0);\n  else choreo::copy(" in text
    assert text.count("assertion_fails(") == 1  # the first copy's shapes agree at compile time
    module = ck.compile(ROWS_FROM_AN_ARGUMENT, target="sim")
    src = np.arange(256, dtype=np.int32).reshape(4, 64)
    out = np.full((8, 64), -1, np.int32)
    with pytest.raises(ck.ChoreoError, match=r"5:5: .*a copy of shape \[4, 64\] does not fit .*\[3, 64\]"):
        module.store_rows(src, out, 3)
    module.store_rows(src, out, 4)
    np.testing.assert_array_equal(out[:4], src)
    assert (out[4:] == -1).all()


@pytest.mark.parametrize(("n", "elements"), [(8, 2), (10, 3), (1, 1)])
def test_a_local_buffer_sized_with_cdiv_is_sized_at_launch_as_the_device_rounds(
    n: int, elements: int
) -> None:
    source = """
__co__ void f(f32 [N] x) {
  parallel p by 1 : block, t by 4 : thread {
    local f32 [cdiv(N, 4)] part;
    part.at(0) = x.at(t);
  }
}
"""
    (launch,) = launches_of(source, "f")
    (scratch,) = [parameter for parameter in launch.parameters if parameter.kind == "scratch"]
    assert scratch.size is not None and evaluate(scratch.size, {"N": n}) == 4 * elements


CDIV_CHUNKS = """
__co__ void chunks(f32 [M, K] a, f32 [N, K] b) {
  int TILE = 64;
  int tiles = cdiv(N, TILE);
  parallel {p, q} by [tiles, cdiv(K, 32)] : block {
    x = dma.copy b.chunkat(p, q) => shared;
    y = dma.copy a.chunkat(p, q) => shared;
    z = dma.copy b.chunkat(p, _) => shared;
  }
}
"""


def test_a_chunkat_by_a_cdiv_bound_cuts_tiles_of_its_divisor() -> None:
    """`#p` = cdiv(N, 64) (through a name) tiles b's N by 64, `#q` = cdiv(K, 32) K by 32: [64, 32]
    tiles known when compiling; a's M is another dimension, which `#p` splits as any bound does."""
    analysis = analyze(CDIV_CHUNKS, target="sim")
    assert not [d for d in analysis.diagnostics if d.severity == "error"]
    info = analysis.functions["chunks"]
    shapes = {
        symbol.name: info.operations[id(stmt)].destination.dims
        for stmt in ast.walk_statements(info.function.body)
        if isinstance(stmt, ast.OperationStmt) and (symbol := info.futures.get(id(stmt))) is not None
    }
    assert shapes == {"x": (64, 32), "y": ("M / ((N + 64 - 1) / 64)", 32), "z": (64, "K")}
    assert set(info.ceil_chunks.values()) == {(64, 32), (None, 32), (64, None)}


WHOLE_OR_TAIL_TILES = """\
__co__ f32 [2, 32, 64] tiles(f32 [64, 64] x, f32 [R, 64] y) {
  f32 [2, 32, 64] out;
  parallel p by 1 : block {
    foreach k in [2] {
      shared f32 [32, 64] a;
      dma.copy x.subspan(32, 64).at(k, 0) => a;
      dma.copy a => out.at(k);
      dma.copy x.subspan(32, 64).at(k #- 1, 0) => a;
      dma.copy y.subspan(32, 64).at(k, 0) => a;
    }
  }
  return out;
}
"""


def test_only_a_tile_that_may_reach_past_the_end_is_cut_to_what_exists_on_cuda() -> None:
    """Tile k of a [64, 64] array in tiles of 32 with #k = 2 lies inside it: a plain copy. With a bound
    changed by `#-` (the value still counts to 1) or rows from an argument, it may be a tail tile: the
    copy reads the corner inside the array and zeros the rest."""
    text = emit_program(analyze(WHOLE_OR_TAIL_TILES, target="cuda"))
    assert text.count("choreo::copy_padded<false>(") == 2
    assert "{min(32, max(R - k * 32, 0)), 64}" in text
    assert "choreo::copy(choreo::tile(a, 32, 64, 64), choreo::tile(x + k * 32 * 64, 32, 64, 64)" in text
    y = np.arange(40 * 64, dtype=np.float32).reshape(40, 64)
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    out = ck.compile(WHOLE_OR_TAIL_TILES, target="sim").tiles(x, y)
    np.testing.assert_array_equal(out, x.reshape(2, 32, 64))


SWIZZLED_ROWS_OUT = """\
__co__ auto rows_out(f16 [70, 64] x) {
  f16 [x.span] out {0.0f};
  parallel m by cdiv(70, 64) : block
  parallel t by 128 : thread {
    shared f16 [64, 64] tile;
    rows = (64 < 70 - m * 64) ? 64 : 70 - m * 64;
    dma.copy.swiz<128> x.view(rows, 64).from(m * 64, 0) => tile;
    dma.copy tile.subspan(rows, 64) => out.view(rows, 64).from(m * 64, 0);
  }
  return out;
}
"""


def test_a_runtime_subspan_of_a_swizzled_tile_is_read_in_its_layout_on_cuda() -> None:
    """`tile.subspan(rows, 64)` of a swizzled shared tile may end before the tile does: the copy out moves
    the rows it has, read through the swizzle (as a region, row-major, it read the wrong elements)."""
    text = emit_program(analyze(SWIZZLED_ROWS_OUT, target="cuda"))
    line = next(line for line in text.splitlines() if "=> out.view" not in line and "tile, min(rows" in line)
    assert "choreo::tile(tile, min(rows, max(64, 0)), 64, 64, 128)" in line
    x = np.arange(70 * 64, dtype=np.float16).reshape(70, 64)
    np.testing.assert_array_equal(ck.compile(SWIZZLED_ROWS_OUT, target="sim").rows_out(x), x)
