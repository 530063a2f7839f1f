"""Build the dependency graph of one analyzed function.

One walk over the function in source order makes the clusters (parallel
scopes, async paths, loops) and the nodes and edges that the statements
themselves state: an operation produces its future, a wait or a bound trigger
consumes it, a trigger publishes an event, a wait blocks on one, `after`
orders an operation after a future.  The buffer hand-offs come from the flow
walk of handoff.py.  Events are drawn in the innermost scope that holds all
their users, which puts a ring between the paths that share it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.analysis.flow import is_rotation
from choreo_kernel.compiler.analysis.info import FunctionInfo
from choreo_kernel.compiler.analysis.values import Event, Future, Symbol
from choreo_kernel.compiler.diagnostics import Span
from choreo_kernel.compiler.graph import model
from choreo_kernel.compiler.graph.graph import Graph
from choreo_kernel.compiler.graph.handoff import find_handoffs, written_expr
from choreo_kernel.compiler.graph.model import Attribute, Cluster, Edge, Node
from choreo_kernel.compiler.printer import expression, expressions, operation_name

if TYPE_CHECKING:
    from choreo_kernel.compiler.program import Analysis


def build_graph(analysis: Analysis, name: str) -> Graph:
    """The graph of `__co__` function `name` of an analyzed program (analysis built it for its checks)."""
    graph = analysis.graphs.get(name)
    if graph is None:
        known = ", ".join(analysis.functions) or "none"
        raise KeyError(f"no __co__ function '{name}' (the program has: {known})")
    return graph


def build_function_graph(info: FunctionInfo) -> Graph:
    return GraphBuilder(info).build()


@dataclass(frozen=True)
class _Position:
    """Where the walk is: the innermost cluster, the async path, the loops, and whether an `if` guards it."""

    cluster: str | None = None
    path: str | None = None
    loops: tuple[str, ...] = ()
    guarded: bool = False


Last = tuple[str, ...]  # the step nodes that ran last on the current path, for program-order edges


class GraphBuilder:
    def __init__(self, info: FunctionInfo) -> None:
        self.info = info
        function = info.function
        self.graph = Graph(function.name, function.span)
        self.handoffs = sorted(find_handoffs(info), key=lambda h: (_key(h.span), _key(h.writer.span)))
        self.readers = {id(handoff.reader) for handoff in self.handoffs}
        self.node_of: dict[int, str] = {}  # id(Stmt) -> its node
        self.future_nodes: dict[Symbol, str] = {}
        self.event_nodes: dict[Symbol, str] = {}
        self.ids: set[str] = set()  # node and cluster ids given out

    def build(self) -> Graph:
        self._block(self.info.function.body.body, _Position(), ())
        self._add_handoffs()
        self._place_events()
        self._mark_roles()
        return self.graph

    # ------------------------------------------------------------------ creation

    def _unique(self, base: str) -> str:
        """`base`, or `base#2`, ...: a macro can expand to several statements at one place."""
        name, suffix = base, 2
        while name in self.ids:
            name, suffix = f"{base}#{suffix}", suffix + 1
        self.ids.add(name)
        return name

    def _node(self, kind: str, title: str, span: Span, at: _Position, **attributes: Attribute) -> Node:
        node_id = self._unique(f"{kind}@{span.line}:{span.column}")
        node = Node(
            id=node_id,
            kind=kind,
            title=title,
            span=span,
            cluster=at.cluster,
            path=at.path,
            loops=at.loops,
            guarded=at.guarded,
            attributes=dict(attributes),
        )
        self.graph.nodes.append(node)
        return node

    def _edge(self, source: str, target: str, kind: str, span: Span, **attributes: Attribute) -> None:
        self.graph.edges.append(
            Edge(source=source, target=target, kind=kind, span=span, attributes=dict(attributes))
        )

    def _cluster(self, kind: str, title: str, span: Span, at: _Position, **attributes: Attribute) -> str:
        cluster_id = self._unique(f"cluster_{kind}_{span.line}_{span.column}")
        cluster = Cluster(
            id=cluster_id, kind=kind, title=title, span=span, parent=at.cluster, attributes=dict(attributes)
        )
        self.graph.clusters.append(cluster)
        return cluster_id

    def _step(self, node: Node, last: Last) -> Last:
        """A node that runs in program order on its path: linked after the ones that ran before it."""
        for previous in last:
            self._edge(previous, node.id, model.NEXT, node.span)
        return (node.id,)

    # ------------------------------------------------------------------ statements

    def _block(self, statements: tuple[ast.Stmt, ...], at: _Position, last: Last) -> Last:
        for stmt in statements:
            last = self._statement(stmt, at, last)
        return last

    def _body(self, body: ast.Stmt, at: _Position, last: Last) -> Last:
        return self._block(body.body if isinstance(body, ast.Block) else (body,), at, last)

    def _statement(self, stmt: ast.Stmt, at: _Position, last: Last) -> Last:
        if isinstance(stmt, (ast.If, ast.While)) and id(stmt) in self.readers:  # reads in its condition
            last = self._read(stmt, at, last, stmt.condition.span)
        handler: Callable[[Any, _Position, Last], Last] = getattr(self, STATEMENTS[type(stmt)])
        return handler(stmt, at, last)

    def _inthreads(self, stmt: ast.InThreads, at: _Position, last: Last) -> Last:
        if not stmt.is_async:
            return self._body(stmt.body, at, last)
        title = f"inthreads.async ({expression(stmt.condition)})"
        cluster = self._cluster(model.PATH, title, stmt.span, at, predicate=expression(stmt.condition))
        self._body(stmt.body, replace(at, cluster=cluster, path=cluster, guarded=False), last)
        return last  # an independent path: the enclosing one does not wait for it

    def _if(self, stmt: ast.If, at: _Position, last: Last) -> Last:
        inner = replace(at, guarded=True)
        then = self._body(stmt.then, inner, last)
        otherwise = self._body(stmt.otherwise, inner, last) if stmt.otherwise is not None else last
        return tuple(dict.fromkeys(then + otherwise))

    def _with(self, stmt: ast.With, at: _Position, last: Last) -> Last:
        return self._body(stmt.body, at, last)

    def _nested_block(self, stmt: ast.Block, at: _Position, last: Last) -> Last:
        return self._block(stmt.body, at, last)

    def _unsupported(self, stmt: ast.Unsupported, at: _Position, last: Last) -> Last:
        return (
            self._statement(stmt.inner, at, last) if stmt.inner is not None else self._plain(stmt, at, last)
        )

    def _expr_statement(self, stmt: ast.ExprStmt, at: _Position, last: Last) -> Last:
        if isinstance(stmt.expr, ast.Call) and is_rotation(stmt.expr):
            return self._swap(stmt, stmt.expr, at, last)
        return self._plain(stmt, at, last)

    def _plain(self, stmt: ast.Stmt, at: _Position, last: Last) -> Last:
        """A statement that is no node of its own: a read of data, where it reads any."""
        return self._read(stmt, at, last) if id(stmt) in self.readers else last

    def _parallel(self, stmt: ast.Parallel, at: _Position, last: Last) -> Last:
        clauses = ", ".join(_clause_text(clause) for clause in stmt.clauses)
        levels = [str(level) for level in self.info.levels_of.get(id(stmt), ())]
        title = f"parallel{'.async' if stmt.is_async else ''} {clauses}"
        cluster = self._cluster(model.PARALLEL, title, stmt.span, at, levels=levels)
        return self._body(stmt.body, replace(at, cluster=cluster), last)

    def _loop(self, stmt: ast.Foreach | ast.ForeachRange | ast.While, at: _Position, last: Last) -> Last:
        extent: str | None = None
        if isinstance(stmt, ast.Foreach):
            extent = expression(stmt.extent)
            names = ", ".join(name.id for name in stmt.variables.names)
            title = f"foreach {{{names}}} in {extent}"
        elif isinstance(stmt, ast.ForeachRange):
            title = "foreach " + ", ".join(_range_text(item) for item in stmt.items)
        else:
            title = f"while ({expression(stmt.condition)})"
        cluster = self._cluster(model.LOOP, title, stmt.span, at, extent=extent)
        inner = replace(at, cluster=cluster, loops=(*at.loops, cluster), guarded=False)
        return self._body(stmt.body, inner, last)

    def _event(self, stmt: ast.EventDecl, at: _Position, last: Last) -> Last:
        symbol = self._symbol_at(stmt.name_span)
        if symbol is None or not isinstance(symbol.value, Event):
            return self._plain(stmt, at, last)
        event = symbol.value
        arrivals = self.info.arrivals.get(symbol)  # the launch model's count, where it is known
        size = [str(dim) for dim in event.dims]
        title = stmt.name + "".join(f"[{dim}]" for dim in size)
        node = self._node(
            model.EVENT,
            title,
            stmt.name_span,
            at,
            name=stmt.name,
            size=size,
            initial="ready" if event.ready else "pending",
            ring=False,
            storage=event.storage,
            arrivals=arrivals.count if arrivals is not None else stmt.arrival_count,
        )
        self.event_nodes[symbol] = node.id
        return self._plain(stmt, at, last)

    def _operation(self, stmt: ast.OperationStmt, at: _Position, last: Last) -> Last:
        operation = stmt.operation
        words = operation.words
        future = self.info.futures.get(id(stmt))
        if words == ["any"] or words[:1] == ["fill"]:
            if future is not None:  # `next = dma.any;`: a placeholder future, no operation
                self._future(future, at, "placeholder")
            return self._read(stmt, at, last) if id(stmt) in self.readers else last
        info = self.info.operations.get(id(stmt))
        written = written_expr(operation)
        kind = info.kind if info is not None else f"mma-{words[0]}" if words else operation.family
        node = self._node(
            model.OPERATION,
            operation_name(operation),
            stmt.span,
            at,
            operation=kind,
            is_async=operation.is_async,
            operands=[expression(arg) for arg in operation.args],
            destination=expression(written) if written is not None else None,
            future=stmt.result.id if stmt.result is not None else None,
        )
        self.node_of[id(stmt)] = node.id
        if future is not None:
            category = (
                "operation" if isinstance(future.value, Future) and not future.value.is_data else "data"
            )
            future_node = self._future(future, at, category)
            self._edge(node.id, future_node, model.PRODUCES, stmt.span)
        for item in operation.after:
            symbol = self.info.future_named(item)
            if symbol is not None:
                self._edge(self._future(symbol, at), node.id, model.AFTER, item.span, future=symbol.name)
        return self._step(node, last)

    def _future(self, symbol: Symbol, at: _Position, category: str | None = None) -> str:
        """The node of a future variable, made where it first appears; a placeholder that a copy
        later fills is a data future."""
        if symbol not in self.future_nodes:
            node = self._node(model.FUTURE, symbol.name, symbol.span, at, name=symbol.name, category=category)
            self.future_nodes[symbol] = node.id
        node = self.graph.node(self.future_nodes[symbol])
        if category is not None and node.attributes.get("category") in (None, "placeholder"):
            node.attributes["category"] = category
        return node.id

    def _wait(self, stmt: ast.Wait, at: _Position, last: Last) -> Last:
        title = "wait " + expressions(stmt.targets)
        node = self._node(model.WAIT, title, stmt.span, at)
        self.node_of[id(stmt)] = node.id
        for target in stmt.targets:
            future = self.info.future_named(target)
            if future is not None:
                self._edge(self._future(future, at), node.id, model.CONSUMED_BY, target.span, via="wait")
            event = self._event_of(target)
            if event is not None:
                self._edge(
                    self.event_nodes[event], node.id, model.WAITS_ON, target.span, **_event_use(event, target)
                )
        return self._step(node, last)

    def _trigger(self, stmt: ast.Trigger, at: _Position, last: Last) -> Last:
        title = ("trigger.cluster " if stmt.cluster else "trigger ") + expressions(stmt.targets)
        if stmt.after:
            title += " after " + expressions(stmt.after)
        node = self._node(model.TRIGGER, title, stmt.span, at, bound=bool(stmt.after))
        self.node_of[id(stmt)] = node.id
        for item in stmt.after:
            future = self.info.future_named(item)
            if future is not None:
                self._edge(
                    self._future(future, at), node.id, model.CONSUMED_BY, item.span, via="trigger-after"
                )
        for target in stmt.targets:
            event = self._event_of(target)
            if event is not None:
                self._edge(
                    node.id,
                    self.event_nodes[event],
                    model.PUBLISHES,
                    target.span,
                    **_event_use(event, target),
                )
        return self._step(node, last)

    def _swap(self, stmt: ast.ExprStmt, call: ast.Call, at: _Position, last: Last) -> Last:
        node = self._node(model.SWAP, expression(call), stmt.span, at)
        self.node_of[id(stmt)] = node.id
        for arg in call.args:
            future = self.info.future_named(arg)
            if future is not None:
                self._edge(self._future(future, at), node.id, model.CONSUMED_BY, arg.span, via="swap")
        return self._step(node, last)

    def _read(self, stmt: ast.Stmt, at: _Position, last: Last, span: Span | None = None) -> Last:
        """A statement that reads handed-off data (an operation that does is its own node)."""
        data = dict.fromkeys(h.data for h in self.handoffs if h.reader is stmt)
        node = self._node(model.READ, "read " + ", ".join(data), span or stmt.span, at, data=list(data))
        self.node_of[id(stmt)] = node.id
        return self._step(node, last)

    # ------------------------------------------------------------------ after the walk

    def _add_handoffs(self) -> None:
        for handoff in self.handoffs:
            source = self.node_of.get(id(handoff.writer))
            target = self.node_of.get(id(handoff.reader))
            if source is None or target is None:
                continue
            self._edge(
                source,
                target,
                model.HAND_OFF,
                handoff.span,
                data=handoff.data,
                via=handoff.via,
                synchronized=handoff.via is not None,
                writer_is_async=handoff.writer_is_async,
                same_path=handoff.same_path,
            )

    def _place_events(self) -> None:
        """An event sits in the innermost cluster around all its triggers and waits; a ring is marked."""
        for event_id in self.event_nodes.values():
            event = self.graph.node(event_id)
            uses = [e for e in self.graph.edges if event_id in (e.source, e.target)]
            event.attributes["ring"] = any(e.attributes.get("form") == "at" for e in uses)
            users = [self.graph.node(e.target if e.source == event_id else e.source) for e in uses]
            if users:
                event.cluster = self._common_cluster([user.cluster for user in users])

    def _common_cluster(self, clusters: list[str | None]) -> str | None:
        chains = [self._chain(cluster) for cluster in clusters]
        common: str | None = None
        for level in zip(*chains):
            if len(set(level)) != 1:
                break
            common = level[0]
        return common

    def _chain(self, cluster_id: str | None) -> list[str]:
        """The clusters from the outermost down to `cluster_id`."""
        chain: list[str] = []
        while cluster_id is not None:
            chain.append(cluster_id)
            cluster_id = self.graph.cluster(cluster_id).parent
        return chain[::-1]

    def _mark_roles(self) -> None:
        """A path that hands data to another path is a producer; one that reads another's data, a consumer."""
        roles: dict[str, set[str]] = {}
        for edge in self.graph.edges_of(model.HAND_OFF):
            writer, reader = self.graph.node(edge.source).path, self.graph.node(edge.target).path
            if writer != reader:
                if writer is not None:
                    roles.setdefault(writer, set()).add("producer")
                if reader is not None:
                    roles.setdefault(reader, set()).add("consumer")
        for cluster in self.graph.clusters:
            if cluster.id in roles:
                cluster.attributes["role"] = " and ".join(sorted(roles[cluster.id], reverse=True))

    # ------------------------------------------------------------------ names

    def _symbol_at(self, span: Span) -> Symbol | None:
        return next((symbol for symbol in self.info.events if symbol.span == span), None)

    def _event_of(self, expr: ast.Expr) -> Symbol | None:
        symbol = self.info.event_named(expr)
        return symbol if symbol in self.event_nodes else None


STATEMENTS: dict[type[ast.Stmt], str] = {  # each kind of statement and the builder's method for it
    ast.Parallel: "_parallel",
    ast.InThreads: "_inthreads",
    ast.Foreach: "_loop",
    ast.ForeachRange: "_loop",
    ast.While: "_loop",
    ast.If: "_if",
    ast.With: "_with",
    ast.Block: "_nested_block",
    ast.Unsupported: "_unsupported",
    ast.EventDecl: "_event",
    ast.OperationStmt: "_operation",
    ast.Wait: "_wait",
    ast.Trigger: "_trigger",
    ast.ExprStmt: "_expr_statement",
    **dict.fromkeys(
        (
            ast.Apply,
            ast.FragmentOp,
            ast.Assign,
            ast.BufferDecl,
            ast.AccumulatorArrayDecl,
            ast.ScalarDecl,
            ast.ShapeDecl,
            ast.TupleDecl,
            ast.Return,
            ast.Break,
            ast.Continue,
            ast.Empty,
            ast.Sync,
            ast.Asm,
            ast.Barrier,
            ast.Fence,
            ast.NamedBarrier,
            ast.Yield,
            ast.Assert,
            ast.Print,
        ),
        "_plain",
    ),
}


def _event_use(event: Symbol, target: ast.Expr) -> dict[str, Attribute]:
    """How a wait or trigger names its event; a ring use carries its slot and phase formulas."""
    attributes: dict[str, Attribute] = {"event": event.name, "use": expression(target), "form": "plain"}
    if isinstance(target, ast.Method) and target.name == "at" and len(target.args) == 1:
        assert isinstance(event.value, Event)
        size = event.value.dims[0] if event.value.dims else "?"
        order = _order_value(target.args[0])
        attributes |= {
            "form": "at",
            "order": expression(target.args[0]),
            "slot": f"{order} % {size}",
            "phase": f"({order} / {size}) % 2",
        }
    elif isinstance(target, ast.Index):
        attributes |= {"form": "index", "index": expressions(target.indices)}
    return attributes


def _order_value(order: ast.Expr) -> str:
    """The value an event order stands for: `issued++` selects with `issued` (C post-increment)."""
    if isinstance(order, ast.IncDec):
        order = order.operand
    text = expression(order)
    return f"({text})" if isinstance(order, (ast.Binary, ast.Ternary)) else text


def _clause_text(clause: ast.ParallelClause) -> str:
    variables = clause.variables
    names = ""
    if variables is not None:
        listed = ", ".join(name.id for name in variables.names)
        names = f"{{{listed}}} " if variables.braced or len(variables.names) > 1 else f"{listed} "
    level = f" : {clause.level}" if clause.level else ""
    return f"{names}by {expression(clause.count)}{level}"


def _range_text(item: ast.RangeItem) -> str:
    if not item.sliced:
        return item.name.id
    start, stop = (expression(part) if part is not None else "" for part in (item.start, item.stop))
    step = f":{expression(item.step)}" if item.step is not None else ""
    return f"{item.name.id}({start}:{stop}{step})"


def _key(span: Span) -> tuple[int, int]:
    return (span.line, span.column)
