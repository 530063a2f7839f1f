"""The one exception the sim raises from deep inside an operation.

Views, arithmetic and events do not know which statement is running; the
interpreter catches `SimError` at the statement and turns it into a located
`ChoreoError`, so every run-time problem points at the user's line.
"""

from __future__ import annotations


class SimError(Exception):
    """A run-time problem of the program (an index out of range, a division by zero, ...)."""
