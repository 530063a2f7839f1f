"""Servers that tests start on loopback (JupyterLab, Jupyter Kernel Gateway): a free port, a
process that is waited for until it answers, and that is stopped afterwards whatever happened."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

STARTUP_SECONDS = 60


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving(
    name: str,
    arguments: list[str],
    ready_url: str,
    log_path: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """`arguments` running until the block ends, once `ready_url` answers (any HTTP status counts)."""
    with log_path.open("w") as log:
        server = subprocess.Popen(arguments, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_until_serving(name, ready_url, server, log_path)
            yield server
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _wait_until_serving(name: str, url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"{name} exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:  # it answered, if only to refuse: it is serving
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"{name} did not answer within {STARTUP_SECONDS} s:\n{log.read_text()}")
