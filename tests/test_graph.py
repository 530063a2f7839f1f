"""The future/event dependency graph: its structure, its exports, `choreo graph`, and the checks on it.

The seed pictures are the producer/consumer pipeline of events.md (tests/graph/pipeline_events.co)
and the 1-producer/2-consumer WGMMA GEMM of the conformance corpus; their node and edge counts are
spelled out so that a change to the model shows here first.  tests/graph/*.co also holds one
INVALID program per graph check, each with a VALID near miss, in the corpus header format.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from corpus import CONFORMANCE, Program, error_diagnostics, load, parse_program

import choreo_kernel as ck
from choreo_kernel.compiler.diagnostics import DiagnosticSink
from choreo_kernel.compiler.driver import analyze
from choreo_kernel.compiler.graph import Graph, GraphvizMissing, build_graph
from choreo_kernel.compiler.graph import dot as dot_module
from choreo_kernel.compiler.graph.checks import check_graph

GRAPH_DIR = Path(__file__).parent / "graph"
PIPELINE = GRAPH_DIR / "pipeline_events.co"
GEMM_1P2C = CONFORMANCE / "valid" / "gemm_ws_1p2c.co"
GRAPH_PROGRAMS = [parse_program(path) for path in sorted(GRAPH_DIR.glob("*.co"))]
CHECK_INVALID = [p for p in GRAPH_PROGRAMS if not p.valid]
VALID_PROGRAMS = load("valid") + [p for p in GRAPH_PROGRAMS if p.valid]
DOT_MISSING = dot_module.shutil.which("dot") is None


def graph_of(path: Path, function: str | None = None) -> Graph:
    analysis = analyze(path.read_text(encoding="utf-8"))
    assert not analysis.has_errors, [str(d) for d in analysis.diagnostics]
    return build_graph(analysis, function or next(iter(analysis.functions)))


def kinds(items: list) -> Counter[str]:
    return Counter(item.kind for item in items)


def line_of(path: Path, marker: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    hits = [number for number, line in enumerate(lines, 1) if marker in line]
    assert len(hits) == 1, f"{marker!r} is on lines {hits}"
    return hits[0]


def has(attributes: dict[str, object], **expected: object) -> bool:
    return expected.items() <= attributes.items()


# ------------------------------------------------------------------ structure: the seed examples


def test_pipeline_of_events_md() -> None:
    graph = graph_of(PIPELINE)
    paths = [c for c in graph.clusters if c.kind == "path"]
    assert [(c.title, c.attributes["role"]) for c in paths] == [
        ("inthreads.async (g == 0)", "producer"),
        ("inthreads.async (g == 1)", "consumer"),
    ]
    assert [c.title for c in graph.clusters if c.kind == "loop"] == ["foreach {order} in [tile_count]"] * 2
    events = {n.attributes["name"]: n for n in graph.nodes_of("event")}
    assert has(events["full"].attributes, size=["2"], initial="pending", ring=True)
    assert has(events["empty"].attributes, size=["2"], initial="ready", ring=True)
    # Both rings sit in the scope that holds both paths, between them.
    assert {n.cluster for n in events.values()} == {paths[0].parent}


def test_ring_edges_carry_slot_and_phase() -> None:
    graph = graph_of(PIPELINE)
    ring_edges = graph.edges_of("publishes") + graph.edges_of("waits-on")
    assert len(ring_edges) == 4
    for edge in ring_edges:
        assert edge.attributes["form"] == "at"
        assert edge.attributes["slot"] == "order % 2"
        assert edge.attributes["phase"] == "(order / 2) % 2"


def test_pipeline_hand_off_goes_through_the_event() -> None:
    graph = graph_of(PIPELINE)
    (hand_off,) = graph.edges_of("hand-off")
    assert graph.node(hand_off.source).title == "tma.load.async"
    assert graph.node(hand_off.target).title == "dma.copy"
    assert has(hand_off.attributes, data="tile[slot]", via="event full", synchronized=True, same_path=False)


def test_gemm_one_producer_two_consumers() -> None:
    graph = graph_of(GEMM_1P2C)
    (trigger,) = [n for n in graph.nodes_of("trigger") if n.attributes["bound"]]
    assert trigger.title == "trigger full.at(k) after la, ra"
    bound = [e for e in graph.edges_of("consumed-by") if e.target == trigger.id]
    assert sorted(graph.node(e.source).title for e in bound) == ["la", "ra"]
    futures = {n.title: n.attributes["category"] for n in graph.nodes_of("future")}
    assert futures == {"la": "data", "ra": "data", "op": "operation"}
    handoffs = {(e.attributes["data"], e.attributes["via"]) for e in graph.edges_of("hand-off")}
    assert handoffs == {("ls[slot]", "event full"), ("rs[slot]", "event full"), ("acc", "wait op")}
    loops = [c for c in graph.clusters if c.kind == "loop"]
    assert [c.attributes["extent"] for c in loops] == ["[K / 64]", "[K / 64]"]
    mma = next(n for n in graph.nodes_of("operation") if n.title == "mma.row.row.async")
    assert mma.loops == (loops[1].id,)
    assert mma.path == loops[1].parent


# How many nodes and edges of each kind a program's graph has: (program, nodes, edges).
STRUCTURE = [
    (
        PIPELINE,
        {"event": 2, "wait": 2, "trigger": 2, "operation": 2, "future": 1},
        {"produces": 1, "consumed-by": 1, "publishes": 2, "waits-on": 2, "hand-off": 1, "next": 4},
    ),
    (
        GEMM_1P2C,
        {"event": 2, "wait": 3, "trigger": 2, "operation": 4, "future": 3},
        {"produces": 3, "consumed-by": 3, "publishes": 2, "waits-on": 2, "hand-off": 3, "next": 7},
    ),
    (
        CONFORMANCE / "valid" / "multi_consumer_tma.co",
        {"event": 1, "operation": 1, "future": 1, "trigger": 1, "wait": 2, "read": 2},
        {"produces": 1, "consumed-by": 1, "publishes": 1, "waits-on": 2, "hand-off": 2, "next": 3},
    ),
    (
        CONFORMANCE / "valid" / "double_buffer_swap.co",
        {"operation": 2, "future": 2, "wait": 2, "swap": 1, "read": 2},
        {"produces": 2, "consumed-by": 4, "hand-off": 3, "next": 6},
    ),
    (
        CONFORMANCE / "valid" / "after_chain.co",
        {"operation": 2, "future": 2, "wait": 2, "read": 1},
        {"produces": 2, "consumed-by": 2, "after": 1, "hand-off": 2, "next": 4},
    ),
    (
        CONFORMANCE / "valid" / "dma_event_explicit.co",
        {"event": 1, "operation": 1, "future": 1, "wait": 2, "trigger": 1, "read": 2},
        {"produces": 1, "consumed-by": 1, "publishes": 1, "waits-on": 1, "hand-off": 2, "next": 4},
    ),
]


@pytest.mark.parametrize(
    ("path", "nodes", "edges"), [pytest.param(*case, id=case[0].name) for case in STRUCTURE]
)
def test_program_structure(path: Path, nodes: dict[str, int], edges: dict[str, int]) -> None:
    graph = graph_of(path)
    assert kinds(graph.nodes) == nodes
    assert kinds(graph.edges) == edges


def test_swap_consumes_both_futures() -> None:
    graph = graph_of(CONFORMANCE / "valid" / "double_buffer_swap.co")
    (swap,) = graph.nodes_of("swap")
    assert swap.title == "swap(cur, nxt)"
    sources = [graph.node(e.source).title for e in graph.edges_of("consumed-by") if e.target == swap.id]
    assert sources == ["cur", "nxt"]
    # cur.data is read through whichever copy the rotation left in cur: both copies write it.
    writers = {graph.node(e.source).span.line for e in graph.edges_of("hand-off")}
    assert len(writers) == 2


def test_after_chain_edge() -> None:
    path = CONFORMANCE / "valid" / "after_chain.co"
    graph = graph_of(path)
    (after,) = graph.edges_of("after")
    assert graph.node(after.source).title == "ld"
    assert graph.node(after.target).span.line == line_of(path, "st = dma.copy.async")
    via = {e.attributes["via"] for e in graph.edges_of("hand-off") if e.target == after.target}
    assert via == {"after ld"}


def test_direct_trigger_after_wait_publishes_the_copy() -> None:
    """`wait f; trigger E;` on the writer's path tells E's waiters that the copy landed."""
    graph = graph_of(CONFORMANCE / "valid" / "dma_event_explicit.co")
    assert {e.attributes["via"] for e in graph.edges_of("hand-off")} == {"event loaded"}


def test_post_increment_order_selects_with_the_old_value() -> None:
    graph = graph_of(CONFORMANCE / "valid" / "ring3_order_pp.co")
    publish = next(e for e in graph.edges_of("publishes") if e.attributes["event"] == "full")
    assert has(publish.attributes, order="issued++", slot="issued % 3", phase="(issued / 3) % 2")


def test_nodes_have_their_source_lines() -> None:
    graph = graph_of(GEMM_1P2C)
    wait = next(n for n in graph.nodes_of("wait") if n.title == "wait full.at(k)")
    assert wait.span.line == line_of(GEMM_1P2C, "wait full.at(k);")
    event = next(n for n in graph.nodes_of("event") if n.attributes["name"] == "empty")
    assert event.span.line == line_of(GEMM_1P2C, "shared event empty[2] = ready;")


def test_every_function_of_the_corpus_has_a_graph() -> None:
    for program in VALID_PROGRAMS:
        analysis = analyze(program.source)
        for name in analysis.functions:
            graph = build_graph(analysis, name)
            assert graph.function == name
            json.loads(graph.to_json())
            assert graph.to_dot().startswith(f'digraph "{name}"')


def test_unknown_function_is_named_in_the_error() -> None:
    analysis = analyze(PIPELINE.read_text(encoding="utf-8"))
    with pytest.raises(KeyError, match="pipeline"):
        build_graph(analysis, "nope")


# ------------------------------------------------------------------ exports


def test_dot_is_deterministic_in_one_process() -> None:
    first = graph_of(GEMM_1P2C).to_dot()
    assert first == graph_of(GEMM_1P2C).to_dot()
    assert first.encode() == graph_of(GEMM_1P2C).to_dot().encode()


def test_dot_is_the_same_in_a_fresh_process() -> None:
    script = (
        "import sys; from pathlib import Path; import choreo_kernel as ck; "
        "sys.stdout.write(ck.compile(Path(sys.argv[1]).read_text(), target='sim').graph().to_dot())"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", script, str(GEMM_1P2C)],
            capture_output=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    ]
    assert runs[0] == runs[1] == graph_of(GEMM_1P2C).to_dot().encode()


@pytest.mark.skipif(DOT_MISSING, reason="graphviz 'dot' is not installed")
def test_svg_is_drawn_by_graphviz() -> None:
    svg = graph_of(GEMM_1P2C).to_svg()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "full[2]" in svg and "L31" in svg


def test_without_graphviz_svg_says_why_and_jupyter_gets_the_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dot_module.shutil, "which", lambda name: None)
    graph = graph_of(PIPELINE)
    with pytest.raises(GraphvizMissing, match="graphviz"):
        graph.to_svg()
    assert graph._repr_svg_() is None
    bundle = graph._repr_mimebundle_()
    assert "image/svg+xml" not in bundle
    assert bundle["text/vnd.graphviz"] == graph.to_dot()
    assert "graphviz" in bundle["text/plain"] and graph.to_dot() in bundle["text/plain"]


@pytest.mark.skipif(DOT_MISSING, reason="graphviz 'dot' is not installed")
def test_jupyter_bundle_has_svg_and_dot() -> None:
    graph = graph_of(PIPELINE)
    bundle = graph._repr_mimebundle_()
    assert "<svg" in bundle["image/svg+xml"]
    assert bundle["text/vnd.graphviz"] == graph.to_dot()
    assert graph._repr_svg_() == bundle["image/svg+xml"]


def test_json_has_spans_for_every_node_and_edge() -> None:
    graph = graph_of(GEMM_1P2C)
    data = json.loads(graph.to_json())
    assert data["function"] == "gemm_ws"
    assert len(data["nodes"]) == len(graph.nodes) and len(data["edges"]) == len(graph.edges)
    for item in data["nodes"] + data["edges"] + data["clusters"]:
        span = item["span"]
        assert set(span) == {"line", "column", "end_line", "end_column"}
        assert 1 <= span["line"] <= span["end_line"]
    ids = {node["id"] for node in data["nodes"]}
    assert all(edge["source"] in ids and edge["target"] in ids for edge in data["edges"])
    wait = next(node for node in data["nodes"] if node["title"] == "wait full.at(k)")
    assert wait["span"]["line"] == line_of(GEMM_1P2C, "wait full.at(k);")
    assert wait["kind"] == "wait" and wait["path"] and wait["loops"]


def test_module_graph_of_the_only_function() -> None:
    mod = ck.compile(PIPELINE.read_text(encoding="utf-8"), target="sim")
    assert mod.graph().to_dot() == mod.graph("pipeline").to_dot()
    assert repr(mod.graph()).startswith("<choreo Graph pipeline")


@pytest.mark.parametrize("program", [p for p in VALID_PROGRAMS if p.graph], ids=lambda p: p.name)
def test_graph_header_is_honored(program: Program) -> None:
    """Corpus headers `// GRAPH: fn` and `// GRAPH-MENTIONS: w1 w2` (conformance README)."""
    assert program.graph is not None
    mod = ck.compile(program.source, target="sim", filename=program.name)
    text = mod.graph(program.graph).to_json()
    json.loads(text)
    missing = [word for word in program.graph_mentions if word not in text]
    assert not missing, f"the graph JSON does not mention {missing}"


def test_graph_headers_exist() -> None:
    assert {p.name for p in VALID_PROGRAMS if p.graph} >= {"graph_async_launch.co", "pipeline_events.co"}


# ------------------------------------------------------------------ the CLI


def choreo(*args: str | Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "choreo_kernel", *map(str, args)], capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def test_cli_writes_dot_by_default() -> None:
    result = choreo("graph", GEMM_1P2C)
    assert result.returncode == 0, result.stderr
    assert result.stdout == graph_of(GEMM_1P2C).to_dot()


def test_cli_writes_json_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "gemm.json"
    result = choreo("graph", GEMM_1P2C, "--function", "gemm_ws", "--format", "json", "-o", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert json.loads(out.read_text(encoding="utf-8"))["function"] == "gemm_ws"


@pytest.mark.skipif(DOT_MISSING, reason="graphviz 'dot' is not installed")
def test_cli_writes_svg(tmp_path: Path) -> None:
    out = tmp_path / "pipeline.svg"
    result = choreo("graph", PIPELINE, "--format", "svg", "-o", out)
    assert result.returncode == 0, result.stderr
    assert "<svg" in out.read_text(encoding="utf-8")


def test_cli_svg_without_graphviz_writes_dot_and_says_why(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "choreo_kernel", "graph", str(PIPELINE), "--format", "svg"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": str(tmp_path)},  # no dot there
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('digraph "pipeline"')
    assert "graphviz" in result.stderr and "DOT" in result.stderr


def test_cli_source_with_errors_prints_diagnostics_and_exits_1() -> None:
    invalid = CONFORMANCE / "invalid" / "double_wait.co"
    result = choreo("graph", invalid)
    assert result.returncode == 1
    line = parse_program(invalid).error_line
    assert f"{invalid}:{line}:" in result.stdout and " error: " in result.stdout


@pytest.mark.parametrize(
    ("content", "reason"),
    [(None, "no such file"), (b"", "file is empty"), (b"\xff\xfe__co__", "not valid UTF-8")],
)
def test_cli_bad_file_is_one_line(tmp_path: Path, content: bytes | None, reason: str) -> None:
    path = tmp_path / "bad.co"
    if content is not None:
        path.write_bytes(content)
    result = choreo("graph", path)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"choreo: error: {path}: ") and reason in lines[0]
    assert result.stdout == ""


@pytest.fixture
def two_functions(tmp_path: Path) -> Path:
    """A file with two __co__ functions: the 1p2c GEMM and a renamed copy of the pipeline."""
    gemm = GEMM_1P2C.read_text(encoding="utf-8")
    pipeline = PIPELINE.read_text(encoding="utf-8").replace("pipeline(", "pipeline_again(")
    path = tmp_path / "two.co"
    path.write_text(gemm + "\n" + pipeline, encoding="utf-8")
    return path


def test_cli_draws_every_function_of_a_file(two_functions: Path) -> None:
    analysis = analyze(two_functions.read_text(encoding="utf-8"))
    names = list(analysis.functions)
    assert len(names) == 2
    expected = [build_graph(analysis, name) for name in names]

    dot = choreo("graph", two_functions)
    assert dot.returncode == 0, dot.stderr
    assert dot.stdout == "".join(graph.to_dot() for graph in expected)  # one digraph (page) each

    listed = choreo("graph", two_functions, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == [graph.to_dict() for graph in expected]


@pytest.mark.skipif(DOT_MISSING, reason="graphviz 'dot' is not installed")
def test_cli_svg_of_several_functions_is_one_picture_with_one_page_each(two_functions: Path) -> None:
    from xml.etree import ElementTree

    result = choreo("graph", two_functions, "--format", "svg")
    assert result.returncode == 0, result.stderr
    outer = ElementTree.fromstring(result.stdout)
    svg = "{http://www.w3.org/2000/svg}"
    pages = outer.findall(f"{svg}svg")
    assert [page.find(f"{svg}g/{svg}title").text for page in pages] == ["gemm_ws", "pipeline_again"]
    heights = [float(page.get("height")) for page in pages]
    assert [float(page.get("y")) for page in pages] == [0.0, heights[0]]  # stacked, not overlapping
    assert float(outer.get("height").removesuffix("pt")) == pytest.approx(sum(heights))
    assert float(outer.get("width").removesuffix("pt")) == max(float(page.get("width")) for page in pages)


def test_cli_function_narrows_to_one(two_functions: Path) -> None:
    wrong = choreo("graph", two_functions, "--function", "gemm")
    assert wrong.returncode == 2 and "'gemm'" in wrong.stderr and "gemm_ws, pipeline_again" in wrong.stderr
    named = choreo("graph", two_functions, "--function", "pipeline_again")
    assert named.returncode == 0 and named.stdout.startswith('digraph "pipeline_again"')
    assert named.stdout.count("digraph") == 1
    one = choreo("graph", two_functions, "--function", "gemm_ws", "--format", "json")
    assert json.loads(one.stdout)["function"] == "gemm_ws"  # one graph, not a list


# ------------------------------------------------------------------ the static checks


@pytest.mark.parametrize("program", CHECK_INVALID, ids=lambda p: p.name)
def test_check_reports_on_the_line(program: Program) -> None:
    diagnostics = ck.check(program.source, filename=program.name)
    errors = error_diagnostics(diagnostics)
    shown = "\n".join(d.render(program.source, program.name) for d in diagnostics)
    assert [d.line for d in errors] == [program.error_line], shown
    text = errors[0].full_message.lower()
    assert all(word.lower() in text for word in program.error_keywords), shown


@pytest.mark.parametrize("program", VALID_PROGRAMS, ids=lambda p: p.name)
def test_valid_program_passes_the_graph_checks(program: Program) -> None:
    analysis = analyze(program.source)
    for name in analysis.functions:
        sink = DiagnosticSink()
        check_graph(build_graph(analysis, name), sink)
        assert not sink.diagnostics, [str(d) for d in sink.diagnostics]


def test_near_misses_exist_for_each_check() -> None:
    names = {p.name for p in GRAPH_PROGRAMS if p.valid}
    assert {"read_after_wait_ok.co", "read_other_path_after_event_ok.co", "ring_balanced_ok.co"} <= names


def test_read_not_waited_shows_in_red() -> None:
    program = next(p for p in CHECK_INVALID if p.name == "read_before_wait.co")
    analysis = analyze(program.source)
    graph = build_graph(analysis, "doubled")
    (edge,) = graph.edges_of("hand-off")
    assert edge.attributes["synchronized"] is False and edge.span.line == program.error_line
    assert "read before it landed" in graph.to_dot()


def test_plain_event_with_one_trigger_per_iteration_is_balanced() -> None:
    """The near miss of ring_triggered_twice.co: drop its second trigger."""
    source = (GRAPH_DIR / "ring_triggered_twice.co").read_text(encoding="utf-8")
    lines = source.splitlines()
    second = [i for i, line in enumerate(lines) if line.strip() == "trigger filled;"][1]
    fixed = "\n".join(lines[:second] + lines[second + 1 :]) + "\n"
    assert not error_diagnostics(ck.check(fixed))


def test_guarded_trigger_is_not_counted() -> None:
    """A trigger under an `if` may not run every iteration: the counts are not certain, so no error."""
    source = (GRAPH_DIR / "ring_triggered_twice.co").read_text(encoding="utf-8")
    lines = source.splitlines()
    second = [i for i, line in enumerate(lines) if line.strip() == "trigger filled;"][1]
    lines[second] = "          if (i > 100) { trigger filled; }"
    assert not error_diagnostics(ck.check("\n".join(lines) + "\n"))
