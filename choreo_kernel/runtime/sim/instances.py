"""The instances of a level among a statement's active threads: one representative thread each.

Who runs what is the launch model's (semantics/launch.py); the sim only groups its active
threads by the unit the model gives, so that an operation runs once per instance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Instances:
    """The instances of one level among some active threads."""

    lanes: np.ndarray  # a representative thread per instance (its first active one)
    groups: np.ndarray  # each instance's id: thread // unit
    of_lane: np.ndarray  # for each active thread, the position of its instance


def instances(lanes: np.ndarray, unit: int) -> Instances:
    groups = lanes // unit
    first = np.empty(len(lanes), dtype=bool)
    first[:1] = True
    np.not_equal(groups[1:], groups[:-1], out=first[1:])
    return Instances(lanes[first], groups[first], np.cumsum(first) - 1)
