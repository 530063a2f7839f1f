"""The future/event dependency graph: model, construction, exports and the checks that read it."""

from choreo_kernel.compiler.graph.build import build_function_graph, build_graph
from choreo_kernel.compiler.graph.dot import GraphvizMissing
from choreo_kernel.compiler.graph.graph import Graph
from choreo_kernel.compiler.graph.model import Cluster, Edge, Node

__all__ = ["Cluster", "Edge", "Graph", "GraphvizMissing", "Node", "build_function_graph", "build_graph"]
