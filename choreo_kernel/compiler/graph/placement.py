"""Where events go in the picture: beside their first waiter, between the paths they connect.

Within the scope that holds an event, its sub-scopes (the async paths) keep their
source order from left to right.  An event sits left of its first waiter when an
earlier path publishes it and right of it when a later one does (a ring's release
back to the producer), so the paths stand side by side with their events between
them and each wait is one short arrow from its event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from choreo_kernel.compiler.graph import model
from choreo_kernel.compiler.graph.model import GraphData, Node


@dataclass
class Layout:
    rows: list[list[str]] = field(default_factory=list)  # nodes that share a rank, left to right
    order: dict[str | None, list[str]] = field(default_factory=dict)  # per scope: its units, left to right


def event_layout(graph: GraphData) -> Layout:
    layout = Layout()
    events = graph.nodes_of(model.EVENT)
    for scope in dict.fromkeys(event.cluster for event in events):
        _Scope(graph, scope, [event for event in events if event.cluster == scope]).place(layout)
    layout.rows = [row for row in layout.rows if len(row) > 1]
    return layout


class _Scope:
    """One scope that holds events; its units are its sub-clusters, in source order."""

    def __init__(self, graph: GraphData, scope: str | None, events: list[Node]) -> None:
        self.graph = graph
        self.scope = scope
        self.units = [cluster.id for cluster in graph.clusters if cluster.parent == scope]
        self.publishers: dict[str, list[str]] = {}
        self.anchored: dict[str, list[str]] = {}  # first waiter (or publisher) -> its events
        waiters: dict[str, list[str]] = {}
        for edge in graph.edges:
            if edge.kind == model.PUBLISHES:
                self.publishers.setdefault(edge.target, []).append(edge.source)
            elif edge.kind == model.WAITS_ON:
                waiters.setdefault(edge.source, []).append(edge.target)
        for event in events:
            users = waiters.get(event.id) or self.publishers.get(event.id)
            if users:
                self.anchored.setdefault(users[0], []).append(event.id)

    def place(self, layout: Layout) -> None:
        row: list[str] = []
        order: list[str] = []
        for index, unit in enumerate(self.units):
            inside = [n.id for n in self.graph.nodes if n.kind != model.EVENT and self._unit(n.id) == unit]
            anchors = [node_id for node_id in inside if node_id in self.anchored] or inside[:1]
            for number, anchor in enumerate(anchors):
                events = self.anchored.get(anchor, [])
                left = [e for e in events if self._position(self.publishers.get(e, [anchor])[0]) < index]
                right = [e for e in events if e not in left]
                if number == 0:  # the first anchor of each path puts the paths in order
                    row += [*left, anchor, *right]
                    order += [*left, unit, *right]
                else:
                    layout.rows.append([*left, anchor, *right])
                    order += [*left, *right]
        outside = [anchor for anchor in self.anchored if self._position(anchor) == len(self.units)]
        layout.rows.extend([anchor, *self.anchored[anchor]] for anchor in outside)
        layout.rows.append(row)
        layout.order[self.scope] = order

    def _position(self, node_id: str) -> int:
        unit = self._unit(node_id)
        return self.units.index(unit) if unit in self.units else len(self.units)

    def _unit(self, node_id: str) -> str:
        """The sub-cluster of this scope that holds a node, or the node itself when it sits in the scope."""
        cluster = self.graph.node(node_id).cluster
        while cluster is not None and cluster != self.scope:
            parent = self.graph.cluster(cluster).parent
            if parent == self.scope:
                return cluster
            cluster = parent
        return node_id
