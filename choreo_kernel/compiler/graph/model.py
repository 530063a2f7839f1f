"""The future/event dependency graph of one `__co__` function, and its exports.

Nodes are the things a pipeline is made of (operations, futures, events, waits,
triggers, the statements that read handed-off data); clusters are the scopes
they sit in (parallel levels, async paths, loops).  Every edge points from what
happens first to what depends on it, so a reader can follow time along the
arrows.  Everything carries the span of the user's source it came from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from choreo_kernel.compiler.diagnostics import Span

# Node kinds.
OPERATION = "operation"  # dma / tma / mma statement
FUTURE = "future"  # a future variable (data, operation or placeholder)
EVENT = "event"  # one event declaration (a single event or an array)
WAIT = "wait"
TRIGGER = "trigger"
READ = "read"  # a statement that reads data an operation wrote
SWAP = "swap"  # swap / rotate of futures

# Edge kinds.
PRODUCES = "produces"  # operation -> its future
CONSUMED_BY = "consumed-by"  # future -> the wait, trigger-after or swap that consumes it
PUBLISHES = "publishes"  # trigger -> event
WAITS_ON = "waits-on"  # event -> the wait that blocks on it
AFTER = "after"  # future -> the operation ordered after it (`... after f`)
HAND_OFF = "hand-off"  # operation that writes a buffer -> what reads it
NEXT = "next"  # program order within one path

# Cluster kinds.
PARALLEL = "parallel"
PATH = "path"  # an `inthreads.async` body: an asynchronous path
LOOP = "loop"

Attribute = str | int | bool | list[str] | None


@dataclass(eq=False, kw_only=True)
class _Element:
    """What clusters, nodes and edges all have: a kind, the user's source it came from, and
    attributes of their kind (an event's ring size, a hand-off's data), exported as they are."""

    kind: str
    span: Span
    attributes: dict[str, Attribute] = field(default_factory=dict)


@dataclass(eq=False, kw_only=True)
class Cluster(_Element):
    """A scope the nodes sit in; `parent` is the cluster around it (None: the function)."""

    id: str
    title: str
    parent: str | None


@dataclass(eq=False, kw_only=True)
class Node(_Element):
    """One node; `path` is the async path cluster it runs on (None: the function's main path)."""

    id: str
    title: str
    cluster: str | None
    path: str | None = None
    loops: tuple[str, ...] = ()  # enclosing loop clusters, outermost first
    guarded: bool = False  # under an `if`: it may not run on every iteration


@dataclass(eq=False, kw_only=True)
class Edge(_Element):
    """From what happens first to what depends on it."""

    source: str
    target: str


@dataclass(eq=False)
class GraphData:
    """The nodes, edges and clusters of function `function`'s dependency graph, with its JSON form
    (graph.py's `Graph` adds the drawings)."""

    function: str
    span: Span
    clusters: list[Cluster] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)

    def node(self, node_id: str) -> Node:
        return next(node for node in self.nodes if node.id == node_id)

    def cluster(self, cluster_id: str) -> Cluster:
        return next(cluster for cluster in self.clusters if cluster.id == cluster_id)

    def nodes_of(self, kind: str) -> list[Node]:
        return [node for node in self.nodes if node.kind == kind]

    def edges_of(self, kind: str) -> list[Edge]:
        return [edge for edge in self.edges if edge.kind == kind]

    # ------------------------------------------------------------------ exports

    def to_dict(self) -> dict[str, Any]:
        """Plain data for other tools: every node, edge and cluster with its source span."""
        return {
            "function": self.function,
            "span": _span(self.span),
            "clusters": [
                {"id": c.id, "kind": c.kind, "title": c.title, "span": _span(c.span), "parent": c.parent}
                | c.attributes
                for c in self.clusters
            ],
            "nodes": [
                {
                    "id": n.id,
                    "kind": n.kind,
                    "title": n.title,
                    "span": _span(n.span),
                    "cluster": n.cluster,
                    "path": n.path,
                    "loops": list(n.loops),
                    "guarded": n.guarded,
                }
                | n.attributes
                for n in self.nodes
            ],
            "edges": [
                {"source": e.source, "target": e.target, "kind": e.kind, "span": _span(e.span)} | e.attributes
                for e in self.edges
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def _span(span: Span) -> dict[str, int]:
    return {
        "line": span.line,
        "column": span.column,
        "end_line": span.end_line,
        "end_column": span.end_column,
    }
