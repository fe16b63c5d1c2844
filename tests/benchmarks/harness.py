"""What bench.py and workspace.py share: statistics, timing, a stdio JSON-RPC client for
`citeline lsp`, the memory of a process tree, and how to launch this checkout's citeline.

Standard library only (and tests/rpc_frames.py): importing this module imports no citeline.
"""

from __future__ import annotations

import json
import os
import queue
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024

sys.path.insert(0, str(REPO / "tests"))
from rpc_frames import frame, read_frame  # noqa: E402

# Measure this checkout's engine and server, whatever `pip install -e` points at (another
# worktree, say): citeline.engine and citeline.lsp are mapped onto REPO before any import.
# bench.py runs it unless --use-installed; child processes get it through `python -c`.
BOOTSTRAP = f"""
import importlib.abc, importlib.util, sys
class _RepoFinder(importlib.abc.MetaPathFinder):
    MAP = {{"citeline.engine": {str(REPO / "engine")!r}, "citeline.lsp": {str(REPO / "lsp")!r},
    "citeline.cli": {str(REPO / "cli")!r},
    "citeline.mcp_server": {str(REPO / "mcp_server")!r},
    "citeline.fronts": {str(REPO / "fronts")!r}}}
    def find_spec(self, fullname, path, target=None):
        where = self.MAP.get(fullname)
        if where is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, where + "/__init__.py", submodule_search_locations=[where])
sys.meta_path.insert(0, _RepoFinder())
"""


# -- small helpers ----------------------------------------------------------------------------


def say(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile with linear interpolation (numpy's default method)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * pct / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summary_ms(samples: Sequence[float]) -> dict[str, Any]:
    """p50/p95/mean/max in milliseconds of samples given in seconds."""
    return {
        "n": len(samples),
        "p50_ms": ms(percentile(samples, 50)) if samples else None,
        "p95_ms": ms(percentile(samples, 95)) if samples else None,
        "mean_ms": ms(statistics.fmean(samples)) if samples else None,
        "max_ms": ms(max(samples)) if samples else None,
    }


def median_ms(samples: Sequence[float]) -> float | None:
    return ms(statistics.median(samples)) if samples else None


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 3)


def verdict(value: float | None, limit: float, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"value": value, "limit": limit, "pass": None}
    if value is not None:
        out["pass"] = value <= limit
    out.update(extra)
    return out


def rss_self_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)  # KiB on Linux


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def read_queries(path: Path) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        text = line.strip()
        if text and not text.startswith("#"):
            out.append(text)
    if not out:
        raise SystemExit(f"no queries in {path}")
    return out


def symbol_queries(queries: Sequence[str], min_prefix: int) -> list[tuple[str, str]]:
    """(kind, text): each query, preceded by the prefixes of its last word (as typed)."""
    out = []
    for q in queries:
        head, sep, last = q.rpartition(" ")
        for n in range(min_prefix, len(last)):
            out.append(("prefix", f"{head}{sep}{last[:n]}"))
        out.append(("full", q))
    return out


# -- memory of a process and its descendants --------------------------------------------------


def _status_kib(pid: int, *fields: str) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                name, _, value = line.partition(":")
                if name in fields:
                    out[name] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return out


def _children(pid: int) -> list[int]:
    """Direct children of pid (every thread's), from /proc/PID/task/TID/children."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return out


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
        text = " ".join(a.decode("utf-8", "replace") for a in argv if a)
        return text[:120]
    except OSError:
        return "?"


class TreeMemory:
    """Samples a process and its descendants (the language server and its worker processes,
    which are the forkserver's children): each one's VmHWM (its own peak, kept by the kernel),
    and the largest sum of VmRSS over the tree seen at one sample. A descendant's VmHWM is
    readable only while it lives, hence the sampling (every `interval` seconds)."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        self.pid = pid
        self.interval = interval
        self.peaks: dict[int, int] = {}  # pid -> VmHWM KiB, largest seen
        self.names: dict[int, str] = {}
        self.tree_rss_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def sample(self) -> None:
        todo = [self.pid]
        total = 0
        while todo:
            pid = todo.pop()
            got = _status_kib(pid, "VmHWM", "VmRSS")
            if not got:
                continue
            if pid not in self.names:
                self.names[pid] = _comm(pid)
            self.peaks[pid] = max(self.peaks.get(pid, 0), got.get("VmHWM", 0))
            total += got.get("VmRSS", 0)
            todo.extend(_children(pid))
        self.tree_rss_kib = max(self.tree_rss_kib, total)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def stop(self) -> dict[str, Any]:
        """Take a last sample, stop sampling and report (MiB)."""
        self.sample()
        self._stop.set()
        self._thread.join(timeout=5)
        own = self.peaks.get(self.pid)
        others = {p: kib for p, kib in self.peaks.items() if p != self.pid}
        return {
            "server_vmhwm_mib": round(own / 1024.0, 1) if own else None,
            "descendants": [
                {"pid": p, "vmhwm_mib": round(kib / 1024.0, 1), "command": self.names.get(p)}
                for p, kib in sorted(others.items())
            ],
            "descendants_vmhwm_sum_mib": round(sum(others.values()) / 1024.0, 1),
            "server_plus_descendants_vmhwm_sum_mib": round(
                ((own or 0) + sum(others.values())) / 1024.0, 1
            ),
            "tree_vmrss_peak_sampled_mib": round(self.tree_rss_kib / 1024.0, 1),
        }


# -- the language server, over stdio ----------------------------------------------------------


@dataclass(slots=True)
class Pending:
    """A request sent and not yet answered."""

    method: str
    sent: float  # perf_counter() just before it was written
    answer: queue.Queue[tuple[float, dict[str, Any]]]


class LspClient:
    """A minimal JSON-RPC client for one `citeline lsp` child process on stdio."""

    def __init__(
        self,
        cmd: Sequence[str],
        env: dict[str, str],
        on_request: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        """`on_request`: offered each request from the server first; True when it answers
        it (with send_body), else the request is accepted with a null result."""
        self.on_request = on_request
        self.proc = subprocess.Popen(
            list(cmd),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._stdin = self.proc.stdin
        self._next_id = 0
        self._waiting: dict[int, queue.Queue[tuple[float, dict[str, Any]]]] = {}
        self._lock = threading.Lock()
        self.stderr_lines: list[str] = []
        self.diagnostics = 0
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        with self._lock:
            self._stdin.write(frame(body))
            self._stdin.flush()

    def send_body(self, body: bytes) -> None:
        """Write one whole JSON-RPC message (its UTF-8 body, framed here)."""
        with self._lock:
            self._stdin.write(frame(body))
            self._stdin.flush()

    def _read_stdout(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            try:
                body = read_frame(stream)
            except ValueError:
                body = None
            if body is None:
                self._fail_all()
                return
            arrived = time.perf_counter()
            message = json.loads(body)
            if "id" in message and "method" not in message:
                waiter = self._waiting.pop(message["id"], None)
                if waiter is not None:
                    waiter.put((arrived, message))
            elif "id" in message:  # a request from the server: accept it with a null result
                if self.on_request is None or not self.on_request(message):
                    self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif message.get("method") == "textDocument/publishDiagnostics":
                self.diagnostics += 1

    def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip()
            self.stderr_lines.append(line)

    def _fail_all(self) -> None:
        for key in list(self._waiting):
            waiter = self._waiting.pop(key, None)
            if waiter is not None:
                waiter.put((time.perf_counter(), {"error": {"message": "server closed stdout"}}))

    def send(self, method: str, params: Any) -> Pending:
        """Write a request and return at once (requests may be pipelined)."""
        with self._lock:
            self._next_id += 1
            rid = self._next_id
        waiter: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self._waiting[rid] = waiter
        sent = time.perf_counter()
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return Pending(method, sent, waiter)

    @staticmethod
    def wait(pending: Pending, timeout: float = 900.0) -> tuple[float, dict[str, Any]]:
        """(perf_counter() when the answer arrived, the whole response message)."""
        return pending.answer.get(timeout=timeout)

    def request(self, method: str, params: Any, timeout: float = 900.0) -> tuple[float, Any]:
        """(round-trip seconds, result); raises on a JSON-RPC error."""
        pending = self.send(method, params)
        arrived, message = self.wait(pending, timeout)
        if "error" in message:
            raise RuntimeError(f"{method} failed: {message['error']}")
        return arrived - pending.sent, message.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def wait_idle(self, quiet: float = 0.5, timeout: float = 600.0) -> float:
        """Wait until the server burns (almost) no CPU for `quiet` seconds; seconds waited."""
        start = time.perf_counter()
        last = self.cpu_seconds()
        while time.perf_counter() - start < timeout:
            time.sleep(quiet)
            now = self.cpu_seconds()
            if now - last < 0.05 * quiet:
                break
            last = now
        return time.perf_counter() - start

    def vm_hwm_mib(self) -> float | None:
        got = _status_kib(self.pid, "VmHWM").get("VmHWM")
        return round(got / 1024.0, 1) if got else None

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=60)
            self.notify("exit", None)
            self.proc.wait(timeout=30)
        except Exception:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._stderr_reader.join(timeout=5)  # the last lines the server wrote are kept
