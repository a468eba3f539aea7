"""Decompression bombs against the DirectFetcher: peak RSS, time and event-loop stalls per bomb.

A loopback server (this process) serves each bomb; a fresh child process fetches it with the
DirectFetcher (cap ``--max-bytes``) and reports its own peak RSS (``VmHWM``), the time taken,
the longest the event loop went without running a 5 ms ticker (after one warm-up fetch, so
first-use imports are not counted), and the page's reason. With
``--before-ref REF`` the same bombs are also fetched by the package as it is at git ``REF``
(exported with ``git archive`` into a temporary folder), so the two can be compared::

    .venv/bin/python bench/decompression_bombs.py --before-ref main

writes ``bench/results/decompression_bombs.json``. A child is limited to ``--memory-limit-mb`` of
address space, so an unbounded decoder ends in a MemoryError instead of taking the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import platform
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
GIB = 1 << 30


def bomb_routes(size: int) -> dict[str, tuple[Any, int]]:
    """The bombs, each decoding to ``size`` bytes, with the size of what goes over the wire."""
    from guardrail.apps.demo import Route
    from tests.fixtures import bombs

    bodies = {
        "gzip, gzip": bombs.gzip_of_gzip(size),
        "zstd": bombs.zstd_zeros(size),
        "gzip": bombs.gzip_zeros(size),
        "deflate": bombs.zlib_zeros(size),
    }
    routes = {
        f"/{name.replace(', ', '-')}": (
            Route(body=body, content_type="text/html", headers={"Content-Encoding": name}),
            len(body),
        )
        for name, body in bodies.items()
    }
    routes["/endless-identity"] = (Route(handler=bombs.endless_chunked), 0)
    routes["/warm-up"] = (Route(body=gzip.compress(b"<p>warm</p>"), headers={"Content-Encoding": "gzip"}), 0)
    return routes


async def _child_fetch(url: str, max_bytes: int) -> dict[str, Any]:
    """Fetch ``url`` once (client made beforehand) while a 5 ms ticker watches the event loop."""
    from guardrail.fetch.direct import DirectFetcher
    from guardrail.retry import RetryPolicy

    stall = 0.0
    done = False

    async def ticker() -> None:
        nonlocal stall
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            stall = max(stall, now - last - 0.005)
            last = now

    fetcher = DirectFetcher(allow_private_hosts=True, max_bytes=max_bytes, timeout=120, retry=RetryPolicy(attempts=1))
    async with httpx.AsyncClient(timeout=120, trust_env=False) as client:
        await fetcher.fetch_one(client, url.rsplit("/", 1)[0] + "/warm-up")  # first-use imports off the clock
        tick = asyncio.create_task(ticker())
        started = time.perf_counter()
        try:
            page = await fetcher.fetch_one(client, url)
            reason: str | None = page.reason
        finally:
            done = True
            await tick
    return {"reason": reason, "seconds": round(time.perf_counter() - started, 3), "max_loop_stall_ms": stall * 1000}


def _peak_rss_kb() -> int:
    """This process's peak RSS (``VmHWM``: unlike ``ru_maxrss``, not inherited across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(url: str, args: argparse.Namespace) -> None:
    """Fetch ``url`` and print one JSON line about it (run in a fresh process)."""
    limit = args.memory_limit_mb * (1 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.path.insert(0, args.package_root or str(ROOT))
    import guardrail

    before = _peak_rss_kb()
    try:
        result = asyncio.run(_child_fetch(url, args.max_bytes))
    except MemoryError:
        result = {"reason": "MemoryError (address-space limit reached)"}
    peak = _peak_rss_kb()
    result.update(
        {
            "peak_rss_mb": round(peak / 1024, 1),
            "rss_before_fetch_mb": round(before / 1024, 1),
            "package": str(Path(guardrail.__file__).parent),
        }
    )
    result["max_loop_stall_ms"] = round(result.get("max_loop_stall_ms", 0.0), 1)
    print(json.dumps(result))


def run_child(url: str, args: argparse.Namespace, package_root: Path | None) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", url, "--max-bytes", str(args.max_bytes)]
    command += ["--memory-limit-mb", str(args.memory_limit_mb)]
    if package_root is not None:
        command += ["--package-root", str(package_root)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"reason": f"child failed (exit {out.returncode}): {out.stderr.strip()[-300:]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def export_ref(ref: str, folder: Path) -> Path:
    """The ``guardrail`` package as it is at git ``ref``, exported into ``folder``."""
    data = subprocess.run(["git", "archive", ref, "guardrail"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every bomb fetched by the package here (``after``) and, with ``--before-ref``, at that ref."""
    sys.path.insert(0, str(ROOT))
    from guardrail.apps.demo import LoopbackSite

    routes = bomb_routes(args.size_gib * GIB)
    site = LoopbackSite({path: route for path, (route, _) in routes.items()}).start()
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trees: dict[str, Path | None] = {"after": None}
        if args.before_ref:
            trees = {"before": export_ref(args.before_ref, Path(tmp)), **trees}
        for path, (_, wire) in routes.items():
            if path == "/warm-up":
                continue
            runs[path] = {"wire_bytes": wire or "endless"}
            for name, tree in trees.items():
                runs[path][name] = run_child(site.url(path), args, tree)
                print(path, name, runs[path][name], flush=True)
    return {
        "bench": "decompression_bombs",
        "command": "python bench/decompression_bombs.py " + " ".join(sys.argv[1:]),
        "decoded_size_gib": args.size_gib,
        "max_bytes": args.max_bytes,
        "memory_limit_mb": args.memory_limit_mb,
        "before_ref": args.before_ref,
        "python": platform.python_version(),
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--package-root", help=argparse.SUPPRESS)
    parser.add_argument("--max-bytes", type=int, default=5_000_000, help="the fetcher's cap (default 5 MB)")
    parser.add_argument("--size-gib", type=int, default=1, help="what each bomb decodes to (default 1 GiB)")
    parser.add_argument("--memory-limit-mb", type=int, default=3072, help="address-space limit per child")
    parser.add_argument("--before-ref", help="also measure the package at this git ref (e.g. main)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "decompression_bombs.json")
    args = parser.parse_args()
    if args.child:
        child(args.child, args)
        return
    results = measure(args)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
