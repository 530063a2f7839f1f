"""What a CUDA call reports besides its results: the failure a kernel recorded in its status (a wait or
a barrier that gave up, an `assert` that failed), and the output of `print` on the host and the device.

A kernel never traps: it writes the index of the site that failed into the launch's status, in host
memory, and runs to its end; the host reads it after the launch and raises a `ChoreoError` that names
the statement, located in the user's source where the call has it.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable, Sequence
from typing import Any

from choreo_kernel.compiler import ast
from choreo_kernel.compiler.cuda.plan import HostPrint, WaitSite
from choreo_kernel.compiler.diagnostics import ERROR, ChoreoError, Diagnostic
from choreo_kernel.compiler.semantics.printing import render


def site_failure(
    function: str, site: WaitSite | None, timeout_s: float, source: str, filename: str
) -> ChoreoError:
    """The error for the site a launch reported (None: an index the plan does not have)."""
    if site is None:
        return ChoreoError.simple(f"{function}(): a wait on an event gave up after {timeout_s:g} s")
    where = f" at line {site.line} ({site.text})"
    if site.kind == "assert":
        message = f"run-time error in '{function}': assertion failed: {site.message}"
        if site.span is not None and source:
            return ChoreoError([Diagnostic(ERROR, message, site.span)], source, filename)
        return ChoreoError.simple(f"{function}(): assertion failed{where}: {site.message}")
    if site.kind == "check":
        return ChoreoError.simple(f"{function}(): at line {site.line} ({site.text}): {site.message}")
    if site.kind == "barrier":
        return ChoreoError.simple(
            f"{function}(): the grid barrier{where} gave up after {timeout_s:g} s: not every block of the "
            "cooperative launch reached it (did some return early, or take another branch?)"
        )
    if site.kind == "spin":
        return ChoreoError.simple(
            f"{function}(): the loop on event '{site.event}'{where} gave up after {timeout_s:g} s: the event's "
            "generation stayed pending (check that every thread that should trigger it does)"
        )
    return ChoreoError.simple(
        f"{function}(): a wait on event '{site.event}'{where} gave up after {timeout_s:g} s: the event's generation "
        "never completed (a deadlock: check that every thread that should trigger it does)"
    )


def host_print(step: HostPrint, evaluate: Callable[[ast.Expr], Any]) -> None:
    """`print(...)` at host level, with the host's values of its arguments."""
    values: list[Any] = []
    for arg in step.statement.args:
        if isinstance(arg, ast.StringLiteral):
            continue
        value = evaluate(arg)
        values.extend(value if isinstance(value, Sequence) else (value,))
    sys.stdout.write(render(step.pieces, values, step.statement.newline))


def flush_device_output() -> None:
    """Device printf writes to the C library's stdout when the launch is synchronized: flush it now, after
    what Python has written, so the two appear in the order the program printed them."""
    sys.stdout.flush()
    ctypes.CDLL(None).fflush(None)
