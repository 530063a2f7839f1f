"""Drive a Jupyter kernel through jupyter_client for the kernel tests.

A `KernelDriver` starts a kernel by its kernelspec name, runs cells and collects what they
publish; every wait has a timeout, so a broken kernel fails a test instead of hanging it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from jupyter_client.manager import start_new_kernel

OUTPUT_TYPES = frozenset(
    {"stream", "display_data", "update_display_data", "execute_result", "error", "clear_output"}
)
TIMEOUT = 60  # seconds for one cell: generous for a loaded CI machine, finite for a broken kernel
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class CellRun:
    """The reply to one execute request and the iopub messages it produced."""

    reply: dict[str, Any]
    outputs: list[dict[str, Any]] = field(default_factory=list)  # output messages only, not status

    @property
    def status(self) -> str:
        return str(self.reply["status"])

    def stream(self, name: str = "stdout") -> str:
        return "".join(
            m["content"]["text"]
            for m in self.outputs
            if m["msg_type"] == "stream" and m["content"]["name"] == name
        )

    def displays(self) -> list[dict[str, str]]:
        """The mime bundles of display_data messages, in order."""
        return [m["content"]["data"] for m in self.outputs if m["msg_type"] == "display_data"]

    def results(self) -> list[str]:
        """The text/plain of execute_result messages (the value of a cell's last expression), in order."""
        return [m["content"]["data"]["text/plain"] for m in self.outputs if m["msg_type"] == "execute_result"]

    @property
    def traceback(self) -> str:
        """The reply's traceback as one text, without colour codes."""
        return _ANSI.sub("", "\n".join(self.reply.get("traceback", [])))


def ok(run: CellRun) -> CellRun:
    """`run`, after checking that its cell succeeded (the traceback says why when it did not)."""
    assert run.status == "ok", run.traceback
    return run


class KernelDriver:
    """A kernel started by kernelspec name; `with KernelDriver(name) as driver:` shuts it down after."""

    def __init__(self, kernel_name: str) -> None:
        self.manager, self.client = start_new_kernel(kernel_name=kernel_name, startup_timeout=TIMEOUT)

    def __enter__(self) -> KernelDriver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run(self, code: str, timeout: float = TIMEOUT, **options: Any) -> CellRun:
        """Execute `code` and wait for its reply and its outputs (until the kernel is idle again)."""
        messages: list[dict[str, Any]] = []
        reply = self.client.execute_interactive(code, timeout=timeout, output_hook=messages.append, **options)
        return CellRun(reply["content"], [m for m in messages if m["msg_type"] in OUTPUT_TYPES])

    def request(self, method: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """A shell request such as `complete`, `inspect` or `is_complete`; its reply content."""
        msg_id = getattr(self.client, method)(*args, **kwargs)
        while True:
            reply = self.client.get_shell_msg(timeout=TIMEOUT)
            if reply["parent_header"].get("msg_id") == msg_id:
                return dict(reply["content"])

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
