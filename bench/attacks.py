"""Issue 12's and issue 23's attacks replayed against the real service, and the load it must hold.

    python bench/attacks.py [--out bench/results/attacks.json] [--skip-load] [--bomb-mib 1024]
                            [--before-ref REF] [--only NAME ...]

What runs, all on 127.0.0.1 and offline:

* a loopback site in this process: the demo pages (``guardrail.apps.demo``) and hostile ones
  (decompression bombs: ``Content-Encoding: gzip, gzip`` and ``zstd``, ``--bomb-mib`` of zeros
  once decoded; a page that never answers);
* the service as shipped: ``guardrail serve --allow-private-hosts`` in a subprocess (uvicorn with
  the guarded h11 protocol, the embedded judge and embedder, a page cache and an audit store in a
  temporary folder; the SSRF guard is lifted so the service can reach the loopback site);
* clients in this process: one attack at a time, while a probe thread times ``GET /health``
  every 50 ms on a connection of its own.

Per attack: the HTTP status(es), the seconds it took, the service's peak RSS during it (Linux
``VmHWM``, reset before each attack through ``/proc/PID/clear_refs``), and ``/health``'s worst and
median latency meanwhile. Then the load: 64 clients posting ``/verify`` with a different claim
each time, audit store on, two identical rounds (req/s, p50/p95, errors, RSS before and after).
Written to ``bench/results/attacks.json``. The decompression bombs depend on the fetcher's own fix
(another branch); their figures are reported as they are. A watchdog kills the service if its RSS
passes ``--rss-kill-mib`` (the machine is shared) and says so in the results.

Issue 23 added the slow clients: connections that never send a byte (``idle_connections_300``: how
many the service refuses, closes, or still answers after 15 s, and its open files), clients silent
for 6 s that then trickle a head a byte a second (``slow_client_trickle_50``: seconds from connect
to close), and a 40 KB head in one write. ``--before-ref REF`` also runs the attacks against the
service as it is at git ``REF`` (its ``guardrail`` package exported and put first on the service's
path; the load is not repeated there), under ``before``. ``--only`` runs the attacks named.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import platform
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from io import BytesIO
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from service_load import _free_port, _percentile  # noqa: E402  (bench/, this script's folder)

from guardrail.apps.demo import LoopbackSite, Route, demo_routes  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "attacks.json"
CLAIM = "At sea level pure water boils at 100 degrees Celsius."
MIB = 1024 * 1024


# -- hostile pages ------------------------------------------------------------------------------------


def _zeros_gzip(mib: int) -> bytes:
    """``mib`` MiB of zeros, gzip-compressed, streamed (never held decoded)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\0" * MIB
    parts = [compressor.compress(chunk) for _ in range(mib)]
    return b"".join(parts) + compressor.flush()


def bombs(mib: int) -> dict[str, Route]:
    """Routes serving ``mib`` MiB of zeros as ``gzip, gzip`` (a gzip of a gzip) and as ``zstd``."""
    import zstandard

    inner = _zeros_gzip(mib)
    stacked = gzip.compress(inner, 9)
    cctx = zstandard.ZstdCompressor(level=19)
    writer = cctx.chunker(chunk_size=MIB)
    frames = [out for _ in range(mib) for out in writer.compress(b"\0" * MIB)]
    zstd_body = b"".join(frames) + b"".join(writer.finish())
    html = "text/html; charset=utf-8"
    return {
        "/bomb-gzip-gzip": Route(body=stacked, content_type=html, headers={"Content-Encoding": "gzip, gzip"}),
        "/bomb-zstd": Route(body=zstd_body, content_type=html, headers={"Content-Encoding": "zstd"}),
    }


def _never(handler: BaseHTTPRequestHandler) -> None:
    time.sleep(600)


# -- the service process ------------------------------------------------------------------------------


ONE_ORIGIN = {"GUARDRAIL_HOST_RATE": "0", "GUARDRAIL_HOST_CONCURRENCY": "64"}
"""Every page here is on one loopback origin: the per-host politeness limits are lifted (as in the
other benches), so the figures are the service's, not the limiter's."""


@dataclass
class Service:
    """``guardrail serve`` in a subprocess, with its stores in ``folder``."""

    folder: Path
    package_root: Path | None = None
    """A ``guardrail`` package to serve instead of this checkout's (``--before-ref``)."""
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    killed_at_mib: float | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def audit_path(self) -> Path:
        return self.folder / "audit.sqlite3"

    def start(self) -> float:
        """Start it and wait for /health; the seconds it took."""
        self.port = _free_port()
        env = {
            **os.environ,
            "GUARDRAIL_CACHE": str(self.folder / "pages.sqlite3"),
            "GUARDRAIL_AUDIT_DB": str(self.audit_path),
            **ONE_ORIGIN,
        }
        if self.package_root is not None:  # first on the path: for "-m" that is the working folder
            env["PYTHONPATH"] = os.pathsep.join([str(self.package_root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        cmd = [sys.executable, "-m", "guardrail.apps.cli", "serve", "--allow-private-hosts", "--port", str(self.port)]
        self.proc = subprocess.Popen([*cmd, "--log-level", "error"], env=env, cwd=self.package_root)
        started = time.perf_counter()
        while True:
            if self.proc.poll() is not None:
                raise SystemExit("the service exited during start-up")
            try:
                if httpx.get(self.base + "/health", timeout=2).json()["status"] == "ok":
                    return time.perf_counter() - started
            except (httpx.HTTPError, ValueError, KeyError):
                pass
            time.sleep(0.2)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def status_kib(self, field_name: str) -> int:
        """A ``/proc/PID/status`` memory field (VmRSS, VmHWM) in KiB; 0 once the process is gone."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else -1

    def reset_peak(self) -> None:
        """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS."""
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")

    def open_files(self) -> int:
        """How many file descriptors the service holds open now (0 once it is gone)."""
        try:
            return len(os.listdir(f"/proc/{self.pid}/fd"))
        except OSError:
            return 0

    def cpu_seconds(self) -> float:
        """User + system CPU seconds the process (all its threads) has used."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Watchdog(threading.Thread):
    """Kills the service if its RSS passes ``limit_mib`` (the machine is shared)."""

    def __init__(self, service: Service, limit_mib: int) -> None:
        super().__init__(daemon=True)
        self.service, self.limit = service, limit_mib * 1024
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.05):
            rss = self.service.status_kib("VmRSS")
            if self.service.alive() and rss > self.limit:
                self.service.killed_at_mib = rss / 1024
                self.service.stop()


# -- measuring one attack -------------------------------------------------------------------------------


class HealthProbe(threading.Thread):
    """Times ``GET /health`` every 50 ms on a connection of its own until stopped."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base = base
        self.latencies: list[float] = []
        self.failures = 0
        self.stopped = threading.Event()
        self.connected = threading.Event()
        """Set after the first probe: its connection is open before the attack starts."""

    def run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=30) as http:
            while not self.stopped.is_set():
                start = time.perf_counter()
                try:
                    ok = http.get("/health").status_code == 200
                except httpx.HTTPError:
                    ok = False
                self.latencies.append(time.perf_counter() - start) if ok else self._failed()
                self.connected.set()
                self.stopped.wait(0.05)

    def _failed(self) -> None:
        self.failures += 1

    def summary(self) -> dict[str, Any]:
        ms = [1000 * x for x in self.latencies]
        return {
            "health_max_ms": round(max(ms), 1) if ms else None,
            "health_p50_ms": round(statistics.median(ms), 1) if ms else None,
            "health_probes": len(ms),
            "health_failures": self.failures,
        }


def measure(service: Service, name: str, attack: Callable[[Service], dict[str, Any]]) -> dict[str, Any]:
    """Run one attack with the /health probe and the peak-RSS mark reset; its figures."""
    if not service.alive():
        service.start()
    service.reset_peak()
    probe = HealthProbe(service.base)
    probe.start()
    probe.connected.wait(30)  # a client already connected: the connection caps count it in
    start = time.perf_counter()
    try:
        outcome = attack(service)
    except Exception as exc:  # an attack that broke the bench's client is a result too
        outcome = {"status": f"client error: {type(exc).__name__}: {exc}"[:200]}
    seconds = time.perf_counter() - start
    probe.stopped.set()
    probe.join()
    figures = {
        "attack": name,
        **outcome,
        "seconds": round(seconds, 2),
        "peak_rss_mib": round(service.status_kib("VmHWM") / 1024, 1),
        "rss_after_mib": round(service.status_kib("VmRSS") / 1024, 1),
        **probe.summary(),
    }
    if service.killed_at_mib is not None:
        figures["killed_by_bench_at_mib"] = round(service.killed_at_mib, 1)
        service.killed_at_mib = None
    _print_row(figures)
    return figures


def _print_row(f: dict[str, Any]) -> None:
    status = f.get("status")
    print(
        f"{f['attack']:34s} status={status!s:14.14s} {f['seconds']:7.2f} s  peak RSS {f['peak_rss_mib']:7.1f} MiB  "
        f"/health max {f['health_max_ms']!s:>7} ms (p50 {f['health_p50_ms']!s:>5})  {f.get('note', '')}",
        flush=True,
    )


# -- the attacks ------------------------------------------------------------------------------------------


def post(service: Service, path: str, body: Any, timeout: float = 150) -> httpx.Response:
    return httpx.post(service.base + path, json=body, timeout=timeout)


def verify_bomb(site: LoopbackSite, path: str) -> Callable[[Service], dict[str, Any]]:
    def attack(service: Service) -> dict[str, Any]:
        response = post(service, "/verify", {"claim": CLAIM, "urls": [site.url(path)]})
        reason = response.json()["citations"][0]["reason"] if response.status_code == 200 else None
        return {"status": response.status_code, "note": f"verdict reason: {reason}"}

    return attack


def guard_answer(answer: str) -> Callable[[Service], dict[str, Any]]:
    def attack(service: Service) -> dict[str, Any]:
        response = post(service, "/v1/guard", {"answer": answer})
        return {"status": response.status_code, "answer_chars": len(answer), "note": _detail(response)}

    return attack


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        return ""
    return detail[:90] if isinstance(detail, str) else ""


def guard_many_urls(site: LoopbackSite) -> Callable[[Service], dict[str, Any]]:
    def attack(service: Service) -> dict[str, Any]:
        answer = " ".join(f"Fact {n} [{n}]({site.url(f'/many/{n}')})." for n in range(3000))[:19_000]
        before = sum(v for k, v in site.hits.items() if k.startswith("/many/"))
        response = post(service, "/v1/guard", {"answer": answer})
        fetched = sum(v for k, v in site.hits.items() if k.startswith("/many/")) - before
        return {"status": response.status_code, "pages_fetched": fetched, "note": _detail(response)}

    return attack


def leaves_after(path: str, body: Any, seconds: float) -> Callable[[Service], dict[str, Any]]:
    """Send a heavy request, leave after ``seconds``, then watch the service's CPU for 5 s."""

    def attack(service: Service) -> dict[str, Any]:
        cpu_start = service.cpu_seconds()
        try:
            httpx.post(service.base + path, json=body, timeout=seconds)
            status: Any = "answered before leaving"
        except httpx.TimeoutException:
            status = "client left"
        cpu_before = service.cpu_seconds()
        time.sleep(5.0)
        busy = (service.cpu_seconds() - cpu_before) / 5.0
        return {
            "status": status,
            "cpu_s_while_connected": round(cpu_before - cpu_start, 2),
            "cores_busy_5s_after_leaving": round(busy, 2),
            "note": f"{busy:.2f} cores busy in the 5 s after the client left",
        }

    return attack


def raw_exchange(service: Service, request: bytes, read_timeout: float = 60) -> bytes:
    """Send ``request`` on a new connection; everything the server writes until it closes."""
    with socket.create_connection(("127.0.0.1", service.port), timeout=read_timeout) as conn:
        with contextlib.suppress(OSError):  # the server may answer and close before reading it all
            conn.sendall(request)
        return _read_all(conn)


def _read_all(conn: socket.socket) -> bytes:
    """Everything the server writes until it closes (or resets) the connection."""
    data = b""
    with contextlib.suppress(OSError):
        while chunk := conn.recv(65536):
            data += chunk
    return data


def header_1mib(service: Service) -> dict[str, Any]:
    reply = raw_exchange(service, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * MIB + b"\r\n\r\n")
    return {"status": _status_of(reply), "note": "1 MiB request head"}


def _status_of(reply: bytes) -> int | str:
    parts = reply.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else ("reset" if not reply else "garbled")


def echo_8mb_field(service: Service) -> dict[str, Any]:
    response = post(service, "/verify", {"claim": CLAIM, "urls": "x" * 8_000_000})
    return {"status": response.status_code, "response_bytes": len(response.content), "note": "8 MB field, 422 size"}


def nan_body(service: Service) -> dict[str, Any]:
    statuses = []
    for path, raw in (
        ("/verify", b'{"claim": "x", "urls": [NaN]}'),
        ("/v1/guard", b'{"answer": "A [1].", "sources": [Infinity]}'),
        (
            "/v1/check-grounding",
            b'{"answerCandidate": "A.", "facts": [{"factText": "x"}], "groundingSpec": {"citationThreshold": NaN}}',
        ),
    ):
        headers = {"Content-Type": "application/json"}
        statuses.append(httpx.post(service.base + path, content=raw, headers=headers, timeout=30).status_code)
    return {"status": statuses, "note": "NaN / Infinity on the three routes"}


def lone_surrogate_keepalive(service: Service) -> dict[str, Any]:
    with httpx.Client(base_url=service.base, timeout=30) as http:
        raw = b'{"claim": "Water \\ud800 boils", "urls": ["http://127.0.0.1:9/x"]}'
        bad = http.post("/verify", content=raw, headers={"Content-Type": "application/json"})
        after = http.get("/health")  # the same kept-alive connection
    return {"status": [bad.status_code, after.status_code], "note": "then /health on the same connection"}


def slowloris(count: int) -> Callable[[Service], dict[str, Any]]:
    """``count`` connections: half promise a body and never send it, half never finish their head."""

    def attack(service: Service) -> dict[str, Any]:
        conns = []
        for n in range(count):
            conn = socket.create_connection(("127.0.0.1", service.port), timeout=120)
            head = (
                b"POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
            )
            conn.sendall(head if n % 2 == 0 else b"GET /health HTTP/1.1\r\nHost: x\r\n")
            conns.append(conn)
        start = time.perf_counter()
        statuses: dict[str, int] = {}
        for conn in conns:
            key = str(_status_of(_read_all(conn)))
            statuses[key] = statuses.get(key, 0) + 1
            conn.close()
        return {
            "status": statuses,
            "all_closed_after_s": round(time.perf_counter() - start, 1),
            "note": f"{count} slow connections, all closed by the server",
        }

    return attack


def _watch_closing(
    conns: list[socket.socket], until: float, service: Service, tick: Callable[[], None] | None = None
) -> tuple[dict[socket.socket, tuple[Any, float]], int]:
    """Watch ``conns`` (non-blocking) until the server closes each or ``until`` (perf_counter) comes:
    for each closed one, (its status or "closed", seconds since the watch began); and the most file
    descriptors the service held meanwhile. ``tick`` runs about once a second (a client's next byte)."""
    started = time.perf_counter()
    selector = selectors.DefaultSelector()
    replies: dict[socket.socket, bytes] = {}
    for conn in conns:
        conn.setblocking(False)
        selector.register(conn, selectors.EVENT_READ)
        replies[conn] = b""
    closed: dict[socket.socket, tuple[Any, float]] = {}
    peak_fds = service.open_files()
    next_tick = started + 1.0
    while selector.get_map() and time.perf_counter() < until:
        for key, _ in selector.select(timeout=0.25):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                chunk = sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                replies[sock] += chunk
                continue
            selector.unregister(sock)
            closed[sock] = (_status_of(replies[sock]) if replies[sock] else "closed", time.perf_counter() - started)
        peak_fds = max(peak_fds, service.open_files())
        if tick is not None and time.perf_counter() >= next_tick:
            tick()
            next_tick += 1.0
    selector.close()
    return closed, peak_fds


def _tally(closed: dict[socket.socket, tuple[Any, float]], count: int) -> dict[str, int]:
    statuses: dict[str, int] = {}
    for status, _ in closed.values():
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    if count > len(closed):
        statuses["still open"] = count - len(closed)
    return statuses


def idle_connections(count: int, watch: float = 15.0) -> Callable[[Service], dict[str, Any]]:
    """``count`` connections that never send a byte, watched for ``watch`` seconds; then /health is
    asked on one still open (a client idle that long should have been let go)."""

    def attack(service: Service) -> dict[str, Any]:
        files_before = service.open_files()
        conns = [socket.create_connection(("127.0.0.1", service.port), timeout=10) for _ in range(count)]
        closed, peak = _watch_closing(conns, time.perf_counter() + watch, service)
        still_open = [c for c in conns if c not in closed]
        health_after: Any = None
        if still_open:
            probe = still_open[0]
            probe.setblocking(True)
            probe.settimeout(10)
            with contextlib.suppress(OSError):
                probe.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            health_after = _status_of(_read_all(probe))
        for conn in conns:
            conn.close()
        files_after = service.open_files()
        let_go = [seconds for status, seconds in closed.values() if status != 503]
        return {
            "status": _tally(closed, count),
            "closed_by_service_max_s": round(max(let_go), 1) if let_go else None,
            "health_on_a_connection_idle_15s": health_after,
            "open_files_before": files_before,
            "open_files_peak": peak,
            "open_files_after": files_after,
            "note": f"{count} connections that never send a byte, watched {watch:g} s",
        }

    return attack


def slow_trickle(count: int, silent: float = 6.0, watch: float = 25.0) -> Callable[[Service], dict[str, Any]]:
    """``count`` clients silent for ``silent`` seconds, then sending a request head one byte a second
    (it would take 60 s): seconds from connect until the service closed each."""
    head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"s" * 30 + b"\r\n\r\n"

    def attack(service: Service) -> dict[str, Any]:
        conns = [socket.create_connection(("127.0.0.1", service.port), timeout=10) for _ in range(count)]
        start = time.perf_counter()
        sent = [0]

        def next_byte() -> None:
            if time.perf_counter() - start < silent or sent[0] >= len(head):
                return
            for conn in conns:
                with contextlib.suppress(OSError):
                    conn.send(head[sent[0] : sent[0] + 1])
            sent[0] += 1

        closed, peak = _watch_closing(conns, start + watch, service, tick=next_byte)
        for conn in conns:
            conn.close()
        seconds = sorted(s for _, s in closed.values())
        return {
            "status": _tally(closed, count),
            "closed_after_connect_s_median": round(statistics.median(seconds), 1) if seconds else None,
            "closed_after_connect_s_max": round(seconds[-1], 1) if seconds else None,
            "head_bytes_sent": sent[0],
            "open_files_peak": peak,
            "note": f"silent {silent:g} s, then one byte a second; a 10 s head deadline",
        }

    return attack


def head_40kb_one_write(service: Service) -> dict[str, Any]:
    reply = raw_exchange(service, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n")
    return {"status": _status_of(reply), "note": "a 40 KB request head sent in one write (limit 32 KiB)"}


_HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""


def audit_locked(site: LoopbackSite, hold: float = 10.0) -> Callable[[Service], dict[str, Any]]:
    """Another process holds the audit store's write lock for ``hold`` seconds while 20 requests come."""

    def attack(service: Service) -> dict[str, Any]:
        written_before = _health(service)["audit"]["written"]
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLD_LOCK, str(service.audit_path), str(hold)], stdout=subprocess.PIPE
        )
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
        claims = [f"Water boils at {90 + n} degrees Celsius at sea level." for n in range(20)]
        bodies = [{"claim": c, "urls": [site.url("/boiling")]} for c in claims]
        sent: list[tuple[list[float], list[Any]]] = []
        posting = threading.Thread(
            target=lambda: sent.append(asyncio.run(_post_all(service.base, "/verify", bodies, clients=20)))
        )
        posting.start()
        seen: list[dict[str, Any]] = []
        while holder.poll() is None:  # /health as it reads while the lock is held
            seen.append(_health(service))
            time.sleep(0.5)
        posting.join()
        latencies, statuses = sent[0]
        deadline = time.monotonic() + 60
        while (after := _health(service))["audit"]["pending"] and time.monotonic() < deadline:
            time.sleep(0.1)
        return {
            "status": sorted(set(statuses)),
            "verify_max_ms_while_locked": round(1000 * max(latencies), 1),
            "health_while_locked": sorted({h["status"] for h in seen}),
            "audit_pending_max_while_locked": max((h["audit"]["pending"] for h in seen), default=0),
            "audit_error_while_locked": next((h["audit"]["error"][:80] for h in seen if h["audit"]["error"]), ""),
            "rows_written_after": after["audit"]["written"] - written_before,
            "rows_lost": after["audit"]["lost"],
            "note": f"lock held {hold:g} s; {len(claims)} requests",
        }

    return attack


def _health(service: Service) -> dict[str, Any]:
    return dict(httpx.get(service.base + "/health", timeout=30).json())


def batch_big_row(site: LoopbackSite, folder: Path) -> dict[str, Any]:
    """``guardrail batch`` on a file whose first row is a 10.8 MB answer; the batch process's own figures."""
    rows = [
        {
            "id": "big",
            "answer": "Water boils at 100 degrees Celsius at sea level [1]. " * 204_000,
            "sources": [site.url("/boiling")],
        },
        {"id": "ok", "claim": CLAIM, "urls": [site.url("/boiling")]},
    ]
    path = folder / "big.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    env = {**os.environ, "GUARDRAIL_CACHE": "off", "GUARDRAIL_AUDIT_DB": "off", **ONE_ORIGIN}
    cmd = [sys.executable, "-m", "guardrail.apps.cli", "batch", str(path), "--out", str(folder / "big.csv")]
    start = time.perf_counter()
    proc = subprocess.Popen([*cmd, "--allow-private-hosts"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    output = proc.stdout.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    figures = {
        "attack": "batch_10.8MB_row",
        "status": f"exit {proc.returncode}",
        "seconds": round(time.perf_counter() - start, 2),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "row_size_bytes": path.stat().st_size,
        "note": "the batch process's own peak RSS; " + ("1 row failed" if "1 failed" in output else output[-80:]),
    }
    _print_row({**figures, "health_max_ms": None, "health_p50_ms": None})
    return figures


async def _post_all(base: str, path: str, bodies: list[dict[str, Any]], clients: int) -> tuple[list[float], list[Any]]:
    """POST every body, ``clients`` at a time; (latencies of the 200s, every status)."""
    latencies: list[float] = []
    statuses: list[Any] = []
    queue = list(reversed(bodies))
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    async with httpx.AsyncClient(base_url=base, timeout=300, limits=limits) as http:

        async def client() -> None:
            while queue:
                body = queue.pop()
                start = time.perf_counter()
                try:
                    response = await http.post(path, json=body)
                    statuses.append(response.status_code)
                except httpx.HTTPError as exc:
                    statuses.append(type(exc).__name__)
                    continue
                if response.status_code == 200:
                    latencies.append(time.perf_counter() - start)

        await asyncio.gather(*(client() for _ in range(clients)))
    return latencies, statuses


def load_rounds(service: Service, site: LoopbackSite, clients: int = 64, per_client: int = 4) -> dict[str, Any]:
    """Two identical rounds of ``clients`` clients posting /verify with a different claim each time."""
    pages = ["/boiling", "/old-report", "/titanic"]
    templates = [
        "At sea level pure water boils at {n} degrees Celsius.",
        "Titanic was directed by James Cameron in {y}.",
        "The report measured the boiling point {n} times.",
    ]
    bodies = [
        {"claim": templates[i % 3].format(n=90 + i % 20, y=1990 + i % 10), "urls": [site.url(pages[i % 3])]}
        for i in range(clients * per_client)
    ]
    asyncio.run(_post_all(service.base, "/verify", bodies[:8], clients=4))  # warm: pages cached, code paths hot
    rounds = []
    for n in (1, 2):
        rss_before = service.status_kib("VmRSS") / 1024
        start = time.perf_counter()
        latencies, statuses = asyncio.run(_post_all(service.base, "/verify", bodies, clients))
        wall = time.perf_counter() - start
        rounds.append(
            {
                "round": n,
                "clients": clients,
                "requests": len(bodies),
                "requests_per_s": round(len(bodies) / wall, 1),
                "p50_ms": round(1000 * _percentile(latencies, 0.5), 1),
                "p95_ms": round(1000 * _percentile(latencies, 0.95), 1),
                "errors": sum(1 for s in statuses if s != 200),
                "rss_before_mib": round(rss_before, 1),
                "rss_after_mib": round(service.status_kib("VmRSS") / 1024, 1),
            }
        )
        r = rounds[-1]
        print(
            f"load round {n}: {clients} clients, {r['requests']} requests, {r['requests_per_s']} req/s, "
            f"p50 {r['p50_ms']} ms, p95 {r['p95_ms']} ms, errors {r['errors']}, "
            f"RSS {r['rss_before_mib']} -> {r['rss_after_mib']} MiB",
            flush=True,
        )
    return {"audit_store": "on", "rounds": rounds, "audit": _health(service)["audit"]}


def sigterm_in_flight(service: Service, body: dict[str, Any]) -> dict[str, Any]:
    """SIGTERM while a heavy request runs: seconds until the process has exited."""
    outcome: dict[str, Any] = {}

    def heavy() -> None:
        try:
            outcome["status"] = httpx.post(service.base + "/v1/guard", json=body, timeout=120).status_code
        except httpx.HTTPError as exc:
            outcome["status"] = type(exc).__name__

    thread = threading.Thread(target=heavy, daemon=True)
    thread.start()
    time.sleep(2.0)
    assert service.proc is not None
    start = time.perf_counter()
    service.proc.send_signal(signal.SIGTERM)
    code = service.proc.wait(timeout=120)
    seconds = time.perf_counter() - start
    thread.join(timeout=10)
    figures = {
        "attack": "sigterm_during_heavy_request",
        "status": f"exit {code}; request: {outcome.get('status')}",
        "seconds": round(seconds, 2),
        "note": "seconds from SIGTERM to exit (graceful timeout 5 s)",
    }
    print(f"{figures['attack']:34s} {figures['status']}  {figures['seconds']} s to exit", flush=True)
    return figures


def heavy_guard_body(claims: int = 200, sources: int = 5) -> dict[str, Any]:
    """An answer within every limit that keeps the judge busy: ``claims`` x ``sources`` pairs."""
    facts = [
        {"text": f"Water boils at {90 + k} degrees Celsius at an altitude of {k} km. " * 3} for k in range(sources)
    ]
    answer = " ".join(f"Water boils at {80 + n % 40} degrees Celsius in town number {n}." for n in range(claims))
    return {"answer": answer, "sources": facts}


def attack_list(site: LoopbackSite) -> list[tuple[str, Callable[[Service], dict[str, Any]]]]:
    """Each attack of issues 12 and 23, in order, with what it sends."""
    return [
        ("verify_gzip_gzip_bomb", verify_bomb(site, "/bomb-gzip-gzip")),
        ("verify_zstd_bomb", verify_bomb(site, "/bomb-zstd")),
        ("guard_1MB_answer", guard_answer("Water boils at 100 degrees Celsius at sea level. " * 21_000)),
        ("guard_32KB_link_brackets", guard_answer("[a](" * 8192)),
        ("guard_3000_urls", guard_many_urls(site)),
        ("guard_heavy_client_leaves_after_3s", leaves_after("/v1/guard", heavy_guard_body(), 3.0)),
        ("guard_brackets_at_cap_leaves_10s", leaves_after("/v1/guard", {"answer": "[" * 19_990}, 10.0)),
        ("verify_8MB_field_422", echo_8mb_field),
        ("nan_infinity_bodies", nan_body),
        ("lone_surrogate_then_keepalive", lone_surrogate_keepalive),
        ("header_1MiB", header_1mib),
        ("header_40KB_one_write", head_40kb_one_write),
        ("slowloris_500", slowloris(500)),
        ("idle_connections_300", idle_connections(300)),
        ("slow_client_trickle_50", slow_trickle(50)),
        ("audit_store_locked_10s", audit_locked(site)),
    ]


def _machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def export_ref(ref: str, folder: Path) -> Path:
    """The ``guardrail`` package as it is at git ``ref``, exported into ``folder``."""
    data = subprocess.run(["git", "archive", ref, "guardrail"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def run_service(
    site: LoopbackSite, folder: Path, args: argparse.Namespace, package_root: Path | None, load: bool
) -> dict[str, Any]:
    """One service (this checkout's package, or ``package_root``'s): the load if asked, the attacks."""
    results: dict[str, Any] = {}
    folder.mkdir(parents=True, exist_ok=True)
    service = Service(folder, package_root=package_root)
    results["startup_s"] = round(service.start(), 1)
    print(f"service up in {results['startup_s']} s (pid {service.pid})", flush=True)
    watchdog = Watchdog(service, args.rss_kill_mib)
    watchdog.start()
    chosen = set(args.only or ())
    try:
        if load:
            results["load"] = load_rounds(service, site)
        attacks = [(n, a) for n, a in attack_list(site) if not chosen or n in chosen]
        results["attacks"] = [measure(service, name, attack) for name, attack in attacks]
        if not chosen or "batch_10.8MB_row" in chosen:
            results["attacks"].append(batch_big_row(site, folder))
        if not chosen or "sigterm_during_heavy_request" in chosen:
            if not service.alive():
                service.start()
            results["attacks"].append(sigterm_in_flight(service, heavy_guard_body()))
    finally:
        watchdog.stopped.set()
        service.stop()
    return results


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Start the site and the service(s), replay the attacks and the load; the results."""
    print(f"building {args.bomb_mib} MiB decompression bombs...", flush=True)
    routes = {**demo_routes(), **bombs(args.bomb_mib), "/never": Route(handler=_never)}
    site = LoopbackSite(routes).start()
    results: dict[str, Any] = {
        "command": "python bench/attacks.py " + " ".join(sys.argv[1:]),
        "machine": _machine(),
        "bomb_decoded_mib": args.bomb_mib,
    }
    try:
        with tempfile.TemporaryDirectory() as folder:
            results.update(run_service(site, Path(folder) / "after", args, None, load=not args.skip_load))
        if args.before_ref:
            print(f"-- the service at {args.before_ref}", flush=True)
            with tempfile.TemporaryDirectory() as folder:
                tree = export_ref(args.before_ref, Path(folder) / "package")
                before = run_service(site, Path(folder) / "stores", args, tree, load=False)
            results["before"] = {"ref": args.before_ref, **before}
    finally:
        site.stop()
    results["machine"]["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--skip-load", action="store_true", help="only the attacks")
    parser.add_argument("--bomb-mib", type=int, default=1024, help="decoded size of each decompression bomb")
    parser.add_argument("--rss-kill-mib", type=int, default=8192, help="kill the service past this RSS")
    parser.add_argument("--before-ref", help="also attack the service as it is at this git ref (no load there)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these attacks (names as in the results)")
    args = parser.parse_args()
    results = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
