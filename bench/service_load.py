"""Load on the HTTP service: N concurrent clients against a real uvicorn serving fixture pages.

    python bench/service_load.py [--levels 1,16,64] [--requests-per-client 4] [--min-requests 40]

What runs:

* the demo pages (``guardrail.apps.demo``: boiling point, old report, Titanic) on a loopback site in
  this process;
* the service (``guardrail.apps.server.create_app``, built as ``guardrail serve`` builds it) under
  uvicorn in a **separate process**, with the real embedded defaults (all-MiniLM-L6-v2 and the
  local judge when its weights are installed), a page cache in a temporary SQLite file, and the
  SSRF guard on except for the loopback site's own origin (``DirectFetcher(allowed_hosts=[...])``,
  the bench only);
* ``httpx.AsyncClient`` clients in this process, at each concurrency level: ``POST /verify``
  (a claim against the boiling-point page) and ``POST /v1/check-grounding`` (Vertex's Titanic
  request).

Printed and written to ``bench/results/service_load.json``: requests/s, p50/p95/p99 latency and
the error count per scenario and level, and the check-grounding p50/p95 for the Titanic request
with one client. Targets: check-grounding p50 under 150 ms on 2 cores, zero errors at 64 clients.
The 1-minute load average is recorded with the figures (a model-training job may share the CPUs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from titanic import TITANIC_FACTS  # noqa: E402  (bench/, this script's folder)

RESULTS = ROOT / "bench" / "results" / "service_load.json"

CLAIM = "At sea level pure water boils at 100 degrees Celsius."
TITANIC_REQUEST = {
    "answerCandidate": "Titanic was directed by James Cameron. It was released in 1997.",
    "facts": TITANIC_FACTS,
    "groundingSpec": {"citationThreshold": 0.6},
}


# -- the server process -----------------------------------------------------------------------


def serve(port: int, allowed_origin: str) -> None:
    """Run the service on 127.0.0.1:``port`` as ``guardrail serve`` builds it (page cache, shared
    fetches, batched judging), with the SSRF guard letting ``allowed_origin`` through only."""
    import uvicorn

    from guardrail import Settings
    from guardrail.apps.server import create_app
    from guardrail.fetch.direct import DirectFetcher

    # One loopback origin stands for every cited site: no per-host politeness limit here.
    settings = Settings.from_env().model_copy(update={"host_rate": 0, "host_concurrency": 64})
    app = create_app(settings, fetcher=DirectFetcher.from_settings(settings, allowed_hosts=[allowed_origin]))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


# -- the clients ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


async def _run_level(
    http: httpx.AsyncClient, path: str, body: dict[str, Any], clients: int, total: int
) -> dict[str, Any]:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    remaining = total

    async def client() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            start = time.perf_counter()
            try:
                response = await http.post(path, json=body)
                ok = response.status_code == 200
                key = str(response.status_code)
            except httpx.HTTPError as exc:
                ok, key = False, type(exc).__name__
            elapsed = time.perf_counter() - start
            if ok:
                latencies.append(elapsed)
            else:
                errors[key] = errors.get(key, 0) + 1

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - start
    return {
        "clients": clients,
        "requests": total,
        "seconds": round(wall, 3),
        "requests_per_s": round(total / wall, 2),
        "p50_ms": round(1000 * _percentile(latencies, 0.50), 1),
        "p95_ms": round(1000 * _percentile(latencies, 0.95), 1),
        "p99_ms": round(1000 * _percentile(latencies, 0.99), 1),
        "mean_ms": round(1000 * statistics.fmean(latencies), 1) if latencies else None,
        "errors": sum(errors.values()),
        "error_kinds": errors,
    }


async def _bench(base: str, levels: list[int], per_client: int, minimum: int, health: dict[str, Any]) -> dict:
    scenarios: dict[str, tuple[str, dict[str, Any]]] = {
        "verify": ("/verify", {"claim": CLAIM, "urls": [health["_site"] + "/boiling"]}),
        "check-grounding": ("/v1/check-grounding", TITANIC_REQUEST),
    }
    limits = httpx.Limits(max_connections=max(levels) + 8, max_keepalive_connections=max(levels) + 8)
    out: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=base, timeout=300, limits=limits) as http:
        for name, (path, body) in scenarios.items():
            if name == "check-grounding" and health["judge"]["name"] is None:
                out[name] = {"skipped": "no judge is available (the embedded weights are not installed)"}
                print(f"{name}: skipped, no judge available", flush=True)
                continue
            warm = await _run_level(http, path, body, 1, 5)  # fills the page cache, warms the code paths
            if warm["errors"]:
                raise SystemExit(f"{name}: warm-up failed: {warm['error_kinds']}")
            out[name] = {}
            for clients in levels:
                total = max(minimum, clients * per_client)
                result = await _run_level(http, path, body, clients, total)
                out[name][str(clients)] = result
                print(
                    f"{name:16s} clients={clients:3d} requests={total:4d} "
                    f"{result['requests_per_s']:7.2f} req/s  p50={result['p50_ms']:7.1f} ms  "
                    f"p95={result['p95_ms']:7.1f} ms  p99={result['p99_ms']:7.1f} ms  errors={result['errors']}",
                    flush=True,
                )
    return out


def _training_jobs() -> list[str]:
    """Other heavy Python jobs on the machine (e.g. the judge's training), for the record."""
    try:
        ps = subprocess.run(["ps", "-eo", "pcpu,args"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    jobs = []
    for line in ps.splitlines()[1:]:
        cpu, _, args = line.strip().partition(" ")
        try:
            busy = float(cpu) >= 50.0
        except ValueError:
            continue
        if busy and "python" in args and "service_load" not in args:
            jobs.append(f"{cpu}% {args[:160]}")
    return jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="1,16,64", help="concurrent clients per level (comma-separated)")
    parser.add_argument("--requests-per-client", type=int, default=4)
    parser.add_argument("--min-requests", type=int, default=40, help="least requests per level")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--allowed-origin", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.port, args.allowed_origin)
        return

    from guardrail.apps.demo import LoopbackSite, demo_routes

    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    site = LoopbackSite(demo_routes()).start()
    port = _free_port()
    load_before = os.getloadavg()[0]
    busy_jobs = _training_jobs()
    with tempfile.TemporaryDirectory() as cache_dir:
        env = {**os.environ, "GUARDRAIL_CACHE": str(Path(cache_dir) / "pages.sqlite3"), "GUARDRAIL_AUDIT_DB": "off"}
        env.pop("GUARDRAIL_ALLOW_PRIVATE_HOSTS", None)
        server = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                "--port",
                str(port),
                "--allowed-origin",
                f"{site.host}:{site.port}",
            ],
            env=env,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            started = time.perf_counter()
            health: dict[str, Any] = {}
            while True:
                if server.poll() is not None:
                    raise SystemExit("the service exited during start-up")
                try:
                    health = httpx.get(base + "/health", timeout=2).json()
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
                if time.perf_counter() - started > 600:
                    raise SystemExit("the service did not start within 10 minutes")
            startup_s = time.perf_counter() - started
            judge, embedder = health["judge"], health["embedder"]
            print(
                f"service up in {startup_s:.1f} s: judge={judge['name']} ({judge['model']}, loaded={judge['loaded']}), "
                f"embedder={embedder['name']} (loaded={embedder['loaded']}), status={health['status']}",
                flush=True,
            )
            if busy_jobs:
                print(f"note: other busy jobs on this machine: {busy_jobs}", flush=True)
            health["_site"] = site.base
            scenarios = asyncio.run(_bench(base, levels, args.requests_per_client, args.min_requests, health))
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
            site.stop()
    health.pop("_site", None)
    titanic = scenarios.get("check-grounding", {}).get("1")
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_avg_1m_before": round(load_before, 2),
            "load_avg_1m_after": round(os.getloadavg()[0], 2),
            "other_busy_jobs": busy_jobs,
        },
        "service": {"startup_s": round(startup_s, 1), "health": health},
        "scenarios": scenarios,
        "titanic_check_grounding_1_client": (
            {"p50_ms": titanic["p50_ms"], "p95_ms": titanic["p95_ms"], "target_p50_ms": 150} if titanic else None
        ),
        "zero_errors_at_64": all(
            s.get("64", {}).get("errors", 0) == 0 for s in scenarios.values() if "skipped" not in s
        ),
    }
    if titanic:
        print(
            f"check-grounding (Titanic, 1 client): p50={titanic['p50_ms']} ms, p95={titanic['p95_ms']} ms "
            "(target p50 < 150 ms)"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
