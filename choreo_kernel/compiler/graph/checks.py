"""Static checks that read the dependency graph, reported at the statement at fault.

The rules that follow one future or one event on its own (never consumed,
consumed twice, `trigger ... after` an MMA, a ring order reduced modulo its
size or restarting, a wait that nothing triggers) are asyncflow.py's.  The
ones here need the picture of several paths at once: whether a read is
ordered after the asynchronous write it reads, and whether a producer and a
consumer advance a ring's generations at the same pace.
"""

from __future__ import annotations

from choreo_kernel.compiler.diagnostics import DiagnosticSink, Note, Span
from choreo_kernel.compiler.graph import model
from choreo_kernel.compiler.graph.model import GraphData, Node


def check_graph(graph: GraphData, sink: DiagnosticSink) -> None:
    """Report what the graph of one analyzed function shows to be wrong."""
    check_reads_after_writes(graph, sink)
    check_ring_balance(graph, sink)


def check_reads_after_writes(graph: GraphData, sink: DiagnosticSink) -> None:
    """Data written asynchronously is read only after its future was waited, on this path or through an event.

    A path learns that a copy landed by waiting its future, or by waiting an event that the writer's
    path publishes after it (`trigger E after f`, or `wait f; trigger E;`).  Reading it earlier reads
    whatever the buffer held before.
    """
    consumed = {edge.source for edge in graph.edges_of(model.CONSUMED_BY)}
    futures = {edge.source: edge.target for edge in graph.edges_of(model.PRODUCES)}
    reported: set[Span] = set()
    for edge in graph.edges_of(model.HAND_OFF):
        if edge.attributes.get("synchronized") or not edge.attributes.get("writer_is_async"):
            continue
        if futures.get(edge.source) not in consumed or edge.span in reported:
            continue  # an unnamed or never consumed future is reported where it is made
        reported.add(edge.span)
        writer = graph.node(edge.source)
        sink.error(
            _unwaited_read(graph, edge, writer, futures[edge.source]),
            edge.span,
            Note("the asynchronous write is issued here", writer.span),
        )


def _unwaited_read(graph: GraphData, edge: model.Edge, writer: Node, future_node: str) -> str:
    data = edge.attributes.get("data")
    future = writer.attributes.get("future")
    operation = f"'{writer.title}' at line {writer.span.line}"
    if edge.attributes.get("same_path"):
        return (
            f"'{data}' is read here before the {operation} that writes it has completed: wait its future "
            f"first ('wait {future};'), or wait an event bound to it"
        )
    events = _events_publishing(graph, future_node)
    fix = (
        f"wait the event that publishes it ('wait {events[0]};') before reading"
        if events
        else f"publish the write there ('trigger E after {future};') and 'wait E;' here before reading"
    )
    return (
        f"'{data}' is read here, but the {operation} writes it asynchronously on another path and this "
        f"path has not waited for it: {fix}"
    )


def _events_publishing(graph: GraphData, future: str) -> list[str]:
    """The events that `trigger E after f` binds future node `future` to, as the source names them."""
    triggers = {e.target for e in graph.edges_of(model.CONSUMED_BY) if e.source == future}
    return [str(e.attributes.get("use")) for e in graph.edges_of(model.PUBLISHES) if e.source in triggers]


def check_ring_balance(graph: GraphData, sink: DiagnosticSink) -> None:
    """Per loop iteration, a producer triggers an event as often as each consumer waits on it.

    Each trigger completes the next generation and each wait observes one; when a path triggers more
    often than another waits, the generations run ahead of the waiter (it sees data meant for a later
    iteration), and when it waits more often than anyone triggers, the extra wait never returns.
    Only loops with the same extent on both sides and triggers and waits that run on every iteration
    are compared, so the counts are certain.
    """
    for event in graph.nodes_of(model.EVENT):
        uses = [e for e in graph.edges if event.id in (e.source, e.target)]
        if any(use.attributes.get("form") == "index" for use in uses):
            continue  # physical slots: each index is its own event
        publishing = dict.fromkeys(graph.node(e.source) for e in uses if e.kind == model.PUBLISHES)
        triggers = _per_path(list(publishing))
        waits = _per_path(_distinct_waits(graph, [e for e in uses if e.kind == model.WAITS_ON]))
        for trigger_nodes in triggers.values():
            for wait_nodes in waits.values():
                if _report_imbalance(graph, event, trigger_nodes, wait_nodes, sink):
                    return


def _per_path(nodes: list[Node]) -> dict[str | None, list[Node]]:
    """The nodes of each path, in source order, where they all run once per iteration of one loop."""
    paths: dict[str | None, list[Node]] = {}
    for node in nodes:
        paths.setdefault(node.path, []).append(node)
    return {
        path: sorted(group, key=lambda n: (n.span.line, n.span.column))
        for path, group in paths.items()
        if all(n.loops and n.loops[-1] == group[0].loops[-1] and not n.guarded for n in group)
    }


def _distinct_waits(graph: GraphData, waits: list[model.Edge]) -> list[Node]:
    """A ring's waits on one order observe one generation, however often they repeat."""
    seen: set[tuple[str | None, object]] = set()
    nodes = []
    for edge in waits:
        node = graph.node(edge.target)
        key = (node.path, edge.attributes.get("order", edge.target))
        if key not in seen:
            seen.add(key)
            nodes.append(node)
    return nodes


def _report_imbalance(
    graph: GraphData, event: Node, triggers: list[Node], waits: list[Node], sink: DiagnosticSink
) -> bool:
    trigger_loop, wait_loop = graph.cluster(triggers[0].loops[-1]), graph.cluster(waits[0].loops[-1])
    extent = trigger_loop.attributes.get("extent")
    if extent is None or extent != wait_loop.attributes.get("extent") or len(triggers) == len(waits):
        return False
    name = event.attributes.get("name")
    counts = (
        f"'{name}' is triggered {_times(len(triggers))} per iteration of the loop at line "
        f"{trigger_loop.span.line} but waited {_times(len(waits))} per iteration of the loop at line "
        f"{wait_loop.span.line}"
    )
    if len(triggers) > len(waits):
        surplus = triggers[len(waits)]
        effect = "the extra trigger completes generations nobody waits for, so the waiter falls behind"
    else:
        surplus = waits[len(triggers)]
        effect = "the extra wait blocks on a generation that is never triggered (a deadlock)"
    sink.error(
        f"event {counts}: {effect}; trigger and wait each generation once per iteration",
        surplus.span,
        Note(f"'{name}' is declared here", event.span),
    )
    return True


def _times(count: int) -> str:
    return "once" if count == 1 else "twice" if count == 2 else f"{count} times"
