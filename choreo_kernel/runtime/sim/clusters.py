"""Thread-block clusters on the sim: the blocks of one cluster run together and reach each other.

A cluster's blocks run in turns (as a cooperative launch's do), so that a `trigger.cluster` in
one block can release a wait in another: it arrives on the event of the same declaration in
every block of the cluster, each block's event counting the arrivals of all of them (the
analysis's count, semantics/arrivals.py). An event a peer arrives on before its block has
declared it is made then, and the declaration takes it (on the GPU the cluster barrier after
the mbarriers' initialization orders the two).

A multicast TMA load delivers rank 0's tile into the same buffer of every block. The sim
performs each block's load into its own buffer and checks that every block of the cluster
names the same tile at the same execution of the statement, so that what it computes is what
rank 0's load delivers on the GPU; a program whose blocks name different tiles is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.semantics.launch import ClusterShape, cluster_problem
from choreo_kernel.runtime.sim.errors import SimError
from choreo_kernel.runtime.sim.events import EventArray
from choreo_kernel.runtime.sim.views import Bounded, View

if TYPE_CHECKING:
    from choreo_kernel.runtime.sim.frames import Frame


class Cluster:
    """The shared state of the blocks of one cluster."""

    def __init__(self, shape: ClusterShape, label: str) -> None:
        self.shape = shape
        self.label = label  # "cluster (0, 1)", for messages
        self._events: dict[tuple[int, int, int], EventArray] = {}  # (declaration, rank, n-th) -> event
        self._declared: dict[tuple[int, int], int] = {}  # (declaration, rank) -> declarations so far
        self._tiles: dict[tuple[int, int], tuple[str, tuple[object, ...]]] = {}  # (statement, n-th) -> tile
        self._issued: dict[tuple[int, int], int] = {}  # (statement, rank) -> executions so far

    def declare(self, stmt: ast.EventDecl, rank: int, make: Callable[[], EventArray]) -> EventArray:
        """Block `rank`'s event of `stmt` (its next declaration), made now unless a peer already arrived on it."""
        key = (id(stmt), rank)
        count = self._declared.get(key, 0)
        self._declared[key] = count + 1
        return self._events.setdefault((id(stmt), rank, count), make())

    def peers(self, event: EventArray, rank: int) -> list[EventArray]:
        """The event of every block of the cluster that `event` (block `rank`'s) corresponds to."""
        stmt = event.declaration
        count = self._declared.get((id(stmt), rank), 1) - 1
        return [
            self._events.setdefault(
                (id(stmt), peer, count), EventArray(event.name, event.dims, event.ready, event.expected, stmt)
            )
            for peer in range(self.shape.blocks)
        ]

    def multicast(self, stmt: ast.OperationStmt, rank: int, source: View) -> None:
        """Check that block `rank` names the tile that the cluster's other blocks named at this execution."""
        key = (id(stmt), rank)
        count = self._issued.get(key, 0)
        self._issued[key] = count + 1
        offset = source.offset.tolist() if isinstance(source.offset, np.ndarray) else source.offset
        tile = (id(source.base), str(offset), source.dims, source.strides)
        first = self._tiles.setdefault((id(stmt), count), (f"rank {rank}", tile))
        if first[1] != tile:
            raise SimError(
                f"the blocks of {self.label} multicast different tiles at line {stmt.span.line} ({first[0]} and "
                f"rank {rank}): a multicast delivers rank 0's tile to every block, so they must name the same one"
            )


class ClusterGrid:
    """A launch's blocks grouped into their clusters (none without a cluster level)."""

    def __init__(self, shape: ClusterShape | None, outer: ast.Parallel, grid: list[int]) -> None:
        self.shape = shape
        self._clusters: dict[tuple[int, ...], tuple[Cluster, list[Frame]]] = {}
        if shape is None:
            return
        problem = cluster_problem(shape.dims, grid, outer)
        if problem is not None:  # as the GPU refuses the launch
            raise SimError(problem)
        clause = shape.parallel.clauses[0]
        self._names = [name.id for name in clause.variables.names] if clause.variables is not None else []

    def place(self, frame: Frame, index: tuple[int, ...]) -> None:
        """Put a block (its first frame) in its cluster, and bind the cluster's variables: its place in it."""
        assert self.shape is not None
        dims = self.shape.dims
        index3 = (*index, 0, 0, 0)[:3]
        key = tuple(i // d for i, d in zip(index3, dims))
        if key not in self._clusters:
            label = f"cluster ({', '.join(map(str, key[: max(len(index), 1)]))})"
            self._clusters[key] = (Cluster(self.shape, label), [])
        cluster, members = self._clusters[key]
        frame.block.cluster = cluster
        frame.block.rank = self.shape.rank((index3[0], index3[1], index3[2]))
        for axis, name in enumerate(self._names):
            frame.scope.names[name] = Bounded(index3[axis] % dims[axis], dims[axis])
        members.append(frame)

    def members(self) -> list[list[Frame]]:
        """The first frames of each cluster's blocks, cluster by cluster."""
        return [members for _, members in self._clusters.values()]
