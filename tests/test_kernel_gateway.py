"""The Choreo kernel behind Jupyter Kernel Gateway, started as docs/guide/gateway.md tells a GPU node to.

A real `python -m kernel_gateway` on loopback with a token; the test speaks its REST API
(kernel specs, start and delete a kernel) and its websocket channels (execute requests,
iopub output) as JupyterLab's gateway client does, and checks what Choreo cells return.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from local_server import free_port, serving
from programs import ADD

pytest.importorskip(
    "kernel_gateway", reason="needs Jupyter Kernel Gateway: pip install jupyter_kernel_gateway"
)

from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

CELL_TIMEOUT_S = 60
DOCS = Path(__file__).resolve().parents[1] / "docs" / "guide" / "gateway.md"


@dataclass(frozen=True)
class Gateway:
    address: str  # host:port
    token: str

    def request(self, method: str, path: str, body: dict[str, Any] | None = None, token: bool = True) -> Any:
        """A REST call; the decoded JSON reply (None for an empty one)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://{self.address}{path}", data=data, method=method)
        if token:
            request.add_header("Authorization", f"token {self.token}")
        with urllib.request.urlopen(request, timeout=CELL_TIMEOUT_S) as response:
            text = response.read()
        return json.loads(text) if text else None


@contextmanager
def kernel_gateway(log: Path) -> Iterator[Gateway]:
    """The gateway as docs/guide/gateway.md starts it, on a free loopback port; stopped (and its kernels) afterwards."""
    gateway = Gateway(f"127.0.0.1:{free_port()}", secrets.token_hex(16))
    arguments = [
        sys.executable,
        "-m",
        "kernel_gateway",
        "--KernelGatewayApp.ip=127.0.0.1",
        f"--KernelGatewayApp.port={gateway.address.split(':')[1]}",
        "--KernelGatewayApp.port_retries=0",
        f"--KernelGatewayApp.auth_token={gateway.token}",
        "--KernelGatewayApp.default_kernel_name=choreo",
        "--JupyterWebsocketPersonality.list_kernels=True",  # JupyterLab's gateway client lists them
    ]
    environment = {**os.environ, "CHOREO_TARGET": "sim"}  # no GPU here; on a GPU node, leave it unset
    with serving("the kernel gateway", arguments, f"http://{gateway.address}/api", log, env=environment):
        yield gateway


async def execute(gateway: Gateway, kernel_id: str, cells: list[str]) -> list[dict[str, Any]]:
    """Run cells in order over the kernel's websocket; per cell its reply and what it published."""
    url = f"ws://{gateway.address}/api/kernels/{kernel_id}/channels"
    headers = {"Authorization": f"token {gateway.token}"}
    connection = await websocket_connect(HTTPRequest(url, headers=headers, connect_timeout=CELL_TIMEOUT_S))
    session = Session(key=b"", username="test")
    runs = []
    try:
        for code in cells:
            request = session.msg("execute_request", {"code": code, "silent": False, "store_history": True})
            request["channel"] = "shell"
            connection.write_message(json.dumps(request, default=json_default))
            runs.append(await _outputs_of(connection, request["header"]["msg_id"]))
    finally:
        connection.close()
    return runs


async def _outputs_of(connection: Any, msg_id: str) -> dict[str, Any]:
    """The execute reply and the output messages of one request, once the kernel is idle again."""
    reply, outputs, idle = None, [], False
    while reply is None or not idle:
        text = await asyncio.wait_for(connection.read_message(), CELL_TIMEOUT_S)
        assert text is not None, "the gateway closed the websocket"
        message = json.loads(text)
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = message["msg_type"]
        if kind == "execute_reply":
            reply = message["content"]
        elif kind == "status":
            idle = message["content"]["execution_state"] == "idle"
        elif kind in {"stream", "display_data", "error", "execute_result"}:
            outputs.append(message)
    return {"reply": reply, "outputs": outputs}


def test_a_choreo_cell_runs_through_the_kernel_gateway(tmp_path: Path) -> None:
    with kernel_gateway(tmp_path / "gateway.log") as gateway:
        specs = gateway.request("GET", "/api/kernelspecs")
        assert specs["kernelspecs"]["choreo"]["spec"]["display_name"] == "Choreo"
        with pytest.raises(urllib.error.HTTPError, match="401"):
            gateway.request("GET", "/api/kernels", token=False)  # the token is required

        kernel = gateway.request("POST", "/api/kernels", {"name": "choreo"})
        assert kernel["name"] == "choreo"
        compiled, ran, failed = asyncio.run(
            execute(
                gateway,
                kernel["id"],
                [
                    ADD,  # a plain cell is Choreo; CHOREO_TARGET=sim picked the backend
                    "%%python\nimport numpy as np\nx = np.ones((32, 16), np.float32)\nprint(add(x, 2 * x)[5, 7])",
                    "__co__ void broken() {\n  c.at(0) = 1.0f;\n}",
                ],
            )
        )
        assert compiled["reply"]["status"] == "ok"
        (summary,) = [
            m["content"]["data"]["text/plain"] for m in compiled["outputs"] if m["msg_type"] == "display_data"
        ]
        assert (
            summary
            == "f32 [M, N] add(f32 [M, N] a, f32 [M, N] b): 1 kernel, 256 threads/block, no shared memory"
        )
        assert ran["reply"]["status"] == "ok"
        assert [m["content"]["text"] for m in ran["outputs"] if m["msg_type"] == "stream"] == ["3.0\n"]
        assert failed["reply"]["status"] == "error" and failed["reply"]["ename"] == "ChoreoError"
        traceback = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(failed["reply"]["traceback"]))
        assert "cell[3]:2:3: error: 'c' is not declared" in traceback

        assert [k["id"] for k in gateway.request("GET", "/api/kernels")] == [kernel["id"]]
        gateway.request("DELETE", f"/api/kernels/{kernel['id']}")
        assert gateway.request("GET", "/api/kernels") == []


def test_the_documented_kernelspecs_start_the_choreo_kernel() -> None:
    """docs/guide/gateway.md's kernelspecs: valid JSON, language choreo, and the module or class they start exists."""
    from ipykernel.kernelbase import Kernel

    blocks = re.findall(r"```json\n(.*?)```", DOCS.read_text(), flags=re.DOTALL)
    specs = [json.loads(block) for block in blocks]
    assert len(specs) >= 2 and all(spec["language"] == "choreo" for spec in specs)
    local = [spec for spec in specs if spec["argv"][1:3] == ["-m", "choreo_kernel.kernel"]]
    assert local and all(spec["argv"][3:] == ["-f", "{connection_file}"] for spec in local)
    remote = [spec for spec in specs if "--kernel-class-name" in spec["argv"]]
    assert remote, "docs/guide/gateway.md has no kernelspec with --kernel-class-name"
    for spec in remote:
        argv = spec["argv"]
        module_name, _, class_name = argv[argv.index("--kernel-class-name") + 1].rpartition(".")
        module = __import__(module_name, fromlist=[class_name])
        assert issubclass(getattr(module, class_name), Kernel)
