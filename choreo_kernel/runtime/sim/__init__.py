"""The NumPy reference backend (target "sim"): runs every valid program on the CPU.

See backend.py for the entry point, interpreter.py for how statements run, and
scheduler.py / events.py / operations.py for how async paths, events and futures
behave, including the poison and the seeded completion order that expose missing waits.
"""

from choreo_kernel.runtime.sim.backend import SimBackend, SimFunction

__all__ = ["SimBackend", "SimFunction"]
