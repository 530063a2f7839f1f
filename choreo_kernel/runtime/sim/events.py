"""Events with generations (events.md; language.md 8 and 12.1) and the waits that block on them.

Each slot counts its completed generations; a `= ready` event starts with generation 0
complete.  A trigger adds arrivals to the slot's next incomplete generation, which
completes once the derived arrival count has landed.  Only the parity of a generation is
observable, as with an mbarrier: `wait e.at(o)` passes once the slot's latest completed
generation has the parity of `o / N`, so orders kept modulo 2N work as on the GPU.
Unlike the GPU, a wait for parity 1 on a slot that never completed does not pass: there is
no generation -1, and a program that relies on one is wrong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from choreo_kernel.compiler import ast
from choreo_kernel.runtime.sim.errors import SimError


@dataclass
class Slot:
    completed: int  # generations completed so far
    arrivals: int = 0  # arrivals landed on the next incomplete generation


class EventArray:
    """One declared event or event array, in one block."""

    def __init__(
        self, name: str, dims: tuple[int, ...], ready: bool, expected: int, declaration: object = None
    ) -> None:
        self.name = name
        self.dims = dims
        self.ready = ready
        self.declaration = declaration  # its `event` statement: a cluster's blocks find each other's by it
        self.expected = max(expected, 1)
        self.slots = [Slot(int(ready)) for _ in range(math.prod(dims))]

    def slot_at(self, indices: list[int]) -> int:
        """The flat slot of a physical index `e[i][j]`."""
        if len(indices) != len(self.dims):
            raise SimError(
                f"event '{self.name}' has {len(self.dims)} dimension(s), indexed with {len(indices)}"
            )
        flat = 0
        for index, extent in zip(indices, self.dims):
            if not 0 <= index < extent:
                raise SimError(f"index {index} is out of range for event '{self.name}' (extent {extent})")
            flat = flat * extent + index
        return flat

    def arrive(self, slot: int, count: int) -> None:
        state = self.slots[slot]
        state.arrivals += count
        while state.arrivals >= self.expected:
            state.arrivals -= self.expected
            state.completed += 1

    def passed(self, slot: int, generation: int) -> bool:
        completed = self.slots[slot].completed
        return completed > 0 and (completed - 1) % 2 == generation % 2


@dataclass(frozen=True)
class EventTarget:
    """One slot named by `e`, `e[i]` or `e.at(order)`; `generation` None: the path's next one."""

    event: EventArray
    slot: int
    generation: int | None


@dataclass(frozen=True)
class Need:
    """A generation of one slot that a wait needs."""

    event: EventArray
    slot: int
    generation: int

    def met(self) -> bool:
        return self.event.passed(self.slot, self.generation)

    def describe(self) -> str:
        state = self.event.slots[self.slot]
        landed = (
            f", and {state.arrivals} of the {self.event.expected} arrivals of the next one have landed"
            if state.arrivals
            else ""
        )
        return (
            f"event '{self.event.name}' slot {self.slot} generation {self.generation} "
            f"(parity {self.generation % 2}); the slot has completed {state.completed} generation(s){landed}"
        )


class EventWait:
    """A path blocked at `wait` until every needed generation has completed."""

    def __init__(self, statement: ast.Stmt, needs: list[Need]) -> None:
        self.statement = statement
        self.needs = needs

    def ready(self) -> bool:
        return all(need.met() for need in self.needs)

    def describe(self) -> str:
        return "for " + "; ".join(need.describe() for need in self.needs if not need.met())
