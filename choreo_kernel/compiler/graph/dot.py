"""Graphviz DOT text for a dependency graph, and SVG through the system's `dot`.

The text is written by hand, in the graph's own order, so the same program
always gives the same bytes.  Layout choices: paths are clusters side by side,
program order inside a path is a light vertical spine that ranks the nodes,
and events sit in a row with their first waiters between the paths
(layout.py); the edges between paths (publishes, waits, hand-offs, future
uses) do not rank anything, so a ring's wrap-around cannot pull a path apart.
"""

from __future__ import annotations

import shutil
import subprocess
from html import escape

from choreo_kernel.compiler.graph import model
from choreo_kernel.compiler.graph.model import Cluster, Edge, GraphData, Node
from choreo_kernel.compiler.graph.placement import event_layout

FONT = "Helvetica"
MUTED = "#6b7280"

# Fill and border per node kind (operations by what they are).
COLORS = {
    "tma": ("#dbeafe", "#2563eb"),
    "dma": ("#ccfbf1", "#0d9488"),
    "mma": ("#ffedd5", "#ea580c"),
    model.FUTURE: ("#fefce8", "#a16207"),
    model.EVENT: ("#ede9fe", "#7c3aed"),
    model.WAIT: ("#fee2e2", "#dc2626"),
    model.TRIGGER: ("#dcfce7", "#16a34a"),
    model.READ: ("#f3f4f6", "#4b5563"),
    model.SWAP: ("#f3f4f6", "#4b5563"),
}

EDGE_STYLES = {
    model.NEXT: 'color="#9ca3af", arrowsize=0.5, weight=4',
    model.PRODUCES: 'color="#a16207", arrowsize=0.6, weight=2',
    model.CONSUMED_BY: 'color="#a16207", style=dashed, arrowsize=0.6, constraint=false',
    model.PUBLISHES: 'color="#16a34a", penwidth=1.8, fontcolor="#15803d", constraint=false',
    model.WAITS_ON: 'color="#7c3aed", penwidth=1.8, fontcolor="#6d28d9", constraint=false',
    model.AFTER: 'color="#ea580c", style=dashed, fontcolor="#c2410c", label="after"',
    model.HAND_OFF: 'color="#2563eb", style=dotted, penwidth=1.4, fontcolor="#1d4ed8", constraint=false',
    "unsynchronized": 'color="#dc2626", style=bold, penwidth=1.4, fontcolor="#b91c1c", constraint=false',
}


class GraphvizMissing(RuntimeError):
    """The system has no graphviz `dot` program to lay out the picture."""


def render_svg(dot: str) -> str:
    program = shutil.which("dot")
    if program is None:
        raise GraphvizMissing(
            "graphviz is not installed (no 'dot' program on PATH), so the graph cannot be drawn as SVG; "
            "install graphviz (apt install graphviz, brew install graphviz, conda install graphviz) "
            "or use the DOT text"
        )
    result = subprocess.run([program, "-Tsvg"], input=dot, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"graphviz 'dot' failed: {result.stderr.strip()}")
    return result.stdout


def render_dot(graph: GraphData) -> str:
    lines = [
        f"digraph {_quote(graph.function)} {{",
        f"  graph [fontname={_quote(FONT)}, fontsize=13, labelloc=t, labeljust=l, newrank=true, "
        f"nodesep=0.3, ranksep=0.32, margin=0.2, label={_title(graph)}];",
        f'  node [fontname={_quote(FONT)}, fontsize=10, shape=box, style="rounded,filled", penwidth=1.2];',
        f"  edge [fontname={_quote(FONT)}, fontsize=8];",
    ]
    children: dict[str | None, list[Cluster]] = {}
    for cluster in graph.clusters:
        children.setdefault(cluster.parent, []).append(cluster)
    members: dict[str | None, list[Node]] = {}
    for node in graph.nodes:
        members.setdefault(node.cluster, []).append(node)
    layout = event_layout(graph)
    lines.extend(_scope(None, children, members, layout.order, "  "))
    lines.extend(f"  {_edge(edge)}" for edge in graph.edges)
    for row in layout.rows:
        chain = " -> ".join(_quote(node_id) for node_id in row)
        lines.append(f"  {{rank=same; {chain} [style=invis]}}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _scope(
    cluster_id: str | None,
    children: dict[str | None, list[Cluster]],
    members: dict[str | None, list[Node]],
    order: dict[str | None, list[str]],
    indent: str,
) -> list[str]:
    """One scope's nodes and sub-clusters, the ones the layout places in its left-to-right order."""
    items: list[Node | Cluster] = [*members.get(cluster_id, []), *children.get(cluster_id, [])]
    lines: list[str] = []
    for item in _reordered(items, order.get(cluster_id, [])):
        if isinstance(item, Node):
            lines.append(f"{indent}{_node(item)}")
            continue
        lines.append(f"{indent}subgraph {_quote(item.id)} {{")
        lines.append(f"{indent}  {_cluster_style(item)}")
        lines.extend(_scope(item.id, children, members, order, indent + "  "))
        lines.append(f"{indent}}}")
    return lines


def _reordered(items: list[Node | Cluster], placed: list[str]) -> list[Node | Cluster]:
    """`items` with the ones named in `placed` put in that order, in the positions they held."""
    by_id = {item.id: item for item in items}
    ordered = iter([by_id[item_id] for item_id in placed if item_id in by_id])
    return [next(ordered) if item.id in placed else item for item in items]


def _title(graph: GraphData) -> str:
    return f'<<b>{escape(graph.function)}</b>  <font color="{MUTED}">future/event graph, line {graph.span.line}</font>>'


def _cluster_style(cluster: Cluster) -> str:
    line = _line(cluster.span.line)
    if cluster.kind == model.PATH:
        role = cluster.attributes.get("role")
        heading = f"async path{f' · {role}' if role else ''}"
        label = f"<<b>{escape(heading)}</b><br/>{escape(cluster.title)}  {line}>"
        style = 'style="rounded,filled", fillcolor="#f8fafc", color="#64748b", penwidth=1.4'
    elif cluster.kind == model.LOOP:
        label = f"<↻ {escape(cluster.title)}  {line}>"
        style = 'style="rounded,dashed", color="#94a3b8"'
    else:
        label = f"<{escape(cluster.title)}  {line}>"
        style = 'style="rounded", color="#cbd5e1"'
    return f"graph [{style}, fontsize=10, labeljust=l, label={label}];"


def _node(node: Node) -> str:
    fill, border = COLORS.get(_color_key(node), ("#ffffff", "#4b5563"))
    shape = {model.FUTURE: "ellipse", model.EVENT: "box3d", model.READ: "note"}.get(node.kind, "box")
    style = '"filled"' if node.kind in (model.FUTURE, model.EVENT, model.READ) else '"rounded,filled"'
    if node.kind == model.OPERATION and not node.attributes.get("is_async"):
        style = '"rounded,filled,dashed"'
    return (
        f"{_quote(node.id)} [shape={shape}, style={style}, fillcolor={_quote(fill)}, color={_quote(border)}, "
        f"label={_label(node)}];"
    )


def _color_key(node: Node) -> str:
    if node.kind == model.OPERATION:
        return str(node.attributes.get("operation", "")).split("-")[0]
    return node.kind


def _label(node: Node) -> str:
    line = _line(node.span.line)
    attributes = node.attributes
    if node.kind == model.OPERATION:
        return f"<<b>{escape(node.title)}</b>  {line}<br/>{_small(_data_flow(node))}>"
    if node.kind == model.FUTURE:
        category = f"{attributes.get('category')} future"
        return f"<{escape(node.title)}<br/>{_small(category)}>"
    if node.kind == model.EVENT:
        state = [str(attributes.get("initial")), *(["ring"] if attributes.get("ring") else [])]
        arrivals = attributes.get("arrivals")
        if isinstance(arrivals, int):
            state.append(f"{arrivals} arrival{'s' * (arrivals != 1)} per generation")
        return f"<<b>event {escape(node.title)}</b>  {line}<br/>{_small(' · '.join(state))}>"
    verb, _, rest = node.title.partition(" ")
    return f"<<b>{escape(verb)}</b> {escape(rest)}  {line}>"


def _data_flow(node: Node) -> str:
    """`src ⇒ dst` for a copy, `acc += a × b` for an MMA, `acc ⇒ dst` for mma.store."""
    operands = node.attributes.get("operands")
    items = [str(item) for item in operands] if isinstance(operands, list) else []
    kind = node.attributes.get("operation")
    destination = node.attributes.get("destination")
    if kind == "mma" and len(items) == 3:
        return f"{items[0]} += {_short(items[1], 24)} × {_short(items[2], 24)}"
    if kind == "mma-store" and len(items) == 2:
        return f"{items[0]} ⇒ {_short(items[1])}"
    if destination is not None and items:
        return f"{_short(items[0])} ⇒ {_short(str(destination))}"
    return ", ".join(_short(item) for item in items)


def _edge(edge: Edge) -> str:
    kind = edge.kind
    if kind == model.HAND_OFF and not edge.attributes.get("synchronized"):
        kind = "unsynchronized"
    attributes = [EDGE_STYLES[kind]] if kind in EDGE_STYLES else []
    label = _edge_label(edge)
    if label:
        attributes.append(f"xlabel={label}" if edge.kind == model.HAND_OFF else f"label={label}")
    source, target = edge.source, edge.target
    if edge.kind == model.HAND_OFF and not edge.attributes.get("same_path"):
        # Graphviz (2.43, newrank) draws a flat edge from one sibling cluster to the next twice; the
        # same edge written the other way round and drawn backwards comes out once.
        source, target = target, source
        attributes.append("dir=back")
    return f"{_quote(source)} -> {_quote(target)} [{', '.join(attributes)}];"


def _edge_label(edge: Edge) -> str | None:
    attributes = edge.attributes
    if edge.kind == model.WAITS_ON and attributes.get("form") == "at":  # the waiter's side shows the formulas
        return f"<slot {escape(str(attributes['slot']))}<br/>phase {escape(str(attributes['phase']))}>"
    if edge.kind in (model.PUBLISHES, model.WAITS_ON) and attributes.get("form") == "index":
        return f"<[{escape(str(attributes['index']))}]>"
    if edge.kind == model.HAND_OFF:
        data = escape(str(attributes.get("data")))
        return f"<{data}>" if attributes.get("synchronized") else f"<<b>{data}: read before it landed</b>>"
    return None


def _small(text: str) -> str:
    return f'<font point-size="9" color="#374151">{escape(text)}</font>'


def _line(number: int) -> str:
    return f'<font color="{MUTED}" point-size="9">L{number}</font>'


def _short(text: str, limit: int = 34) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
