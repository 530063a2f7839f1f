"""The dependency graph as users and notebooks see it: its data, its DOT text and its SVG picture."""

from __future__ import annotations

from choreo_kernel.compiler.graph.dot import GraphvizMissing, render_dot, render_svg
from choreo_kernel.compiler.graph.model import GraphData


class Graph(GraphData):
    """The dependency graph of function `function`; see `to_dot`, `to_svg` and `to_json`."""

    def to_dot(self) -> str:
        """Graphviz DOT text; the same program always gives the same bytes."""
        return render_dot(self)

    def to_svg(self) -> str:
        """The picture, laid out by the system's graphviz `dot`; `GraphvizMissing` when it is absent."""
        return render_svg(self.to_dot())

    # ------------------------------------------------------------------ Jupyter

    def _repr_svg_(self) -> str | None:
        try:
            return self.to_svg()
        except GraphvizMissing:
            return None

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        """SVG with the DOT source beside it; without graphviz, the reason and the DOT text."""
        dot = self.to_dot()
        try:
            svg = self.to_svg()
        except GraphvizMissing as missing:
            return {"text/plain": f"{missing}\n\n{dot}", "text/vnd.graphviz": dot}
        return {"image/svg+xml": svg, "text/vnd.graphviz": dot, "text/plain": dot}

    def __repr__(self) -> str:
        return f"<choreo Graph {self.function}: {len(self.nodes)} nodes, {len(self.edges)} edges>"
