"""Pipeline benchmark: verify 200 claims against loopback pages that answer after 100 ms.

Prints claims/s, p50/p95 latency per claim, peak RSS, and the ratio of wall time to the
network-bound ideal (pages x latency / concurrency), for a cold run (models not loaded yet)
and a warm run (models loaded, pages fetched again), in two shapes:

- batch: all claims in one ``averify_many`` call (every unique page fetched once);
- per-claim: independent ``averify`` calls, ``--concurrency`` claims at a time (each call
  fetches its own pages, as a service answering separate requests would).

``--baseline`` also runs the same claims, in the same run, twice more, and prints the throughput
ratios: on this code's torch path (the judge and the embedder on torch, as before ONNX Runtime),
and with the judge as it stood when issue 14 was filed (the v2 judge of ``--shipped-ref``, its code
read from git and its weights from ``--shipped-model``, as ``bench/judge_accuracy.py`` does; torch).
``--int8`` runs the judge's int8-quantised graph instead of float32.

Usage: python bench/pipeline.py [--claims 200] [--pages 100] [--latency 0.1] [--concurrency 8] [--baseline] [--int8]
Writes bench/results/pipeline.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from judge_accuracy import load_previous_judge

from guardrail import ClaimTask, Settings, Verifier
from guardrail.apps.demo import LoopbackSite, Route, article, site_fetcher
from guardrail.judges.local import LocalJudge, LocalJudgeConfig
from guardrail.retrieval import CachingEmbedder, MiniLMEmbedder

SHIPPED_REF = "704af00"
"""The commit whose judge (code and weights) issue 14 measured against."""
RIVERS = ["Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Ginkgo", "Hazel", "Ivy", "Juniper"]


def page_facts(i: int) -> tuple[str, list[str], list[str]]:
    """A page about one (fictional) river, and claims about it: supported, contradicted, unrelated."""
    name = f"{RIVERS[i % len(RIVERS)]} River {i}"
    length = 100 + 7 * i
    year = 1800 + i
    paragraphs = [
        f"The {name} is a river in the northern highlands, known for its clear water and steep banks.",
        f"The {name} is {length} kilometres long and flows into the Grey Sea near the town of Port {i}.",
        f"The first bridge over the {name} was built in {year} by the local council of Port {i}.",
        "Several species of trout live in the upper reaches, and the lower valley is used for farming. "
        "Visitors come in summer for kayaking and hiking along the old towpath.",
        "The river freezes in most winters, and spring floods have shaped the villages along its course "
        "for centuries; a flood barrier was completed after a major flood damaged the harbour.",
    ]
    claims = [
        f"The {name} is {length} kilometres long.",
        f"The first bridge over the {name} was built in {year + 40}.",
    ]
    return name, paragraphs, claims


def build(n_claims: int, n_pages: int, latency: float) -> tuple[dict[str, Route], list[tuple[str, list[str]]]]:
    routes: dict[str, Route] = {}
    claim_specs: list[tuple[str, list[str]]] = []
    for i in range(n_pages):
        name, paragraphs, _ = page_facts(i)
        routes[f"/river/{i}"] = Route(body=article(name, paragraphs), delay=latency)
    for c in range(n_claims):
        i = c % n_pages
        _, _, claims = page_facts(i)
        other = (i + 1) % n_pages
        claim_specs.append((claims[c // n_pages % 2], [f"/river/{i}", f"/river/{other}"]))
    return routes, claim_specs


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def run_batch(verifier: Verifier, tasks: list[ClaimTask]) -> float:
    start = time.perf_counter()
    reports = await verifier.averify_many(tasks)
    wall = time.perf_counter() - start
    # A judge that fails answers judge_error at once: its "throughput" would be a fiction.
    failed = sum(1 for r in reports for c in r.citations if c.reason in ("judge_error", "internal_error"))
    if failed:
        raise RuntimeError(f"{failed} verdicts rest on a failure of ours (judge {verifier.judge}): no figure")
    return wall


async def run_per_claim(verifier: Verifier, tasks: list[ClaimTask], concurrency: int) -> tuple[float, list[float]]:
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(task: ClaimTask) -> None:
        async with gate:
            t0 = time.perf_counter()
            await verifier.averify(task.claim, [str(u) for u in task.evidence])
            latencies.append(time.perf_counter() - t0)

    start = time.perf_counter()
    await asyncio.gather(*(one(t) for t in tasks))
    return time.perf_counter() - start, latencies


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "pipeline.json")
    parser.add_argument("--baseline", action="store_true", help="also run the torch path, in the same run")
    parser.add_argument("--int8", action="store_true", help="the judge's int8-quantised ONNX graph")
    parser.add_argument("--shipped-ref", default=SHIPPED_REF, help="git commit of the v2 judge (the baseline)")
    args = parser.parse_args()

    routes, specs = build(args.claims, args.pages, args.latency)
    results: dict[str, object] = {
        "claims": args.claims,
        "pages": args.pages,
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    with LoopbackSite(routes) as site:
        tasks = [ClaimTask(claim, [site.url(p) for p in paths]) for claim, paths in specs]
        # One loopback server stands for many sites: no per-host politeness limit here.
        settings = Settings.from_env().model_copy(
            update={"concurrency": args.concurrency, "host_concurrency": args.concurrency, "host_rate": 0}
        )
        verifier = Verifier(
            settings=settings,
            fetcher=site_fetcher(site, settings),
            judge=LocalJudge(config=LocalJudgeConfig(backend="onnx"), quantize=args.int8),
            embedder=CachingEmbedder(MiniLMEmbedder(backend="onnx")),
        )
        judge = verifier.judge
        results["judge"] = f"{judge.name}/{judge.model}" if judge else "none (no judge available)"
        results["embedder"] = verifier.embedder.name

        unique_pages = len({u for t in tasks for u in t.evidence})
        ideal_batch = unique_pages * args.latency / args.concurrency
        fetches_per_claim = len(tasks[0].evidence)
        # per-claim: `concurrency` claims in flight, each fetching its pages in parallel
        ideal_per_claim = len(tasks) * fetches_per_claim * args.latency / (args.concurrency * fetches_per_claim)

        for phase in ("cold", "warm"):
            wall = await run_batch(verifier, tasks)
            results[f"batch_{phase}"] = {
                "wall_s": round(wall, 3),
                "claims_per_s": round(len(tasks) / wall, 1),
                "network_ideal_s": round(ideal_batch, 3),
                "ratio_to_ideal": round(wall / ideal_batch, 2),
            }
            wall, lat = await run_per_claim(verifier, tasks, args.concurrency)
            results[f"per_claim_{phase}"] = {
                "wall_s": round(wall, 3),
                "claims_per_s": round(len(tasks) / wall, 1),
                "p50_ms": round(statistics.median(lat) * 1000, 1),
                "p95_ms": round(pct(lat, 95) * 1000, 1),
                "network_ideal_s": round(ideal_per_claim, 3),
                "ratio_to_ideal": round(wall / ideal_per_claim, 2),
            }
        if args.baseline:
            baselines: dict[str, Any] = {"baseline": LocalJudge(config=LocalJudgeConfig(backend="torch"))}
            # The v2 weights are the package's (unchanged since v2) unless a copy is given.
            shipped = load_previous_judge(args.shipped_ref)
            if shipped is None:
                print(f"note: cannot read the v2 judge at {args.shipped_ref} from git; torch path only")
            else:
                baselines["shipped_v2"] = shipped
                results["shipped_v2"] = f"judge code and weights at {args.shipped_ref}"
            for prefix, baseline_judge in baselines.items():
                other = Verifier(
                    settings=settings,
                    fetcher=site_fetcher(site, settings),
                    judge=baseline_judge,
                    embedder=CachingEmbedder(MiniLMEmbedder(backend="torch")),
                )
                for phase in ("cold", "warm"):
                    wall = await run_batch(other, tasks)
                    results[f"{prefix}_batch_{phase}"] = {
                        "wall_s": round(wall, 3),
                        "claims_per_s": round(len(tasks) / wall, 1),
                        "network_ideal_s": round(ideal_batch, 3),
                        "ratio_to_ideal": round(wall / ideal_batch, 2),
                    }
                new, old = results["batch_warm"], results[f"{prefix}_batch_warm"]
                assert isinstance(new, dict) and isinstance(old, dict)
                key = "speedup_batch_warm" if prefix == "baseline" else "speedup_batch_warm_vs_shipped_v2"
                results[key] = round(new["claims_per_s"] / old["claims_per_s"], 2)
    results["peak_rss_mb"] = round(peak_rss_mb(), 1)
    results["load_average"] = os.getloadavg()

    print(
        f"pipeline: {args.claims} claims, {args.pages} pages at {args.latency * 1000:.0f} ms, "
        f"concurrency {args.concurrency}; judge {results['judge']}; {results['machine']}"
    )
    keys = ["batch_cold", "batch_warm", "per_claim_cold", "per_claim_warm"]
    keys += [
        k
        for k in ("baseline_batch_cold", "baseline_batch_warm", "shipped_v2_batch_cold", "shipped_v2_batch_warm")
        if k in results
    ]
    for key in keys:
        row = results[key]
        assert isinstance(row, dict)
        extra = f"  p50 {row['p50_ms']} ms  p95 {row['p95_ms']} ms" if "p50_ms" in row else ""
        print(
            f"  {key:20s} {row['claims_per_s']:7.1f} claims/s  wall {row['wall_s']:7.2f} s  "
            f"ideal {row['network_ideal_s']:5.2f} s  ratio {row['ratio_to_ideal']:5.2f}{extra}"
        )
    if args.baseline:
        print(f"  batch warm: {results['speedup_batch_warm']}x the torch path's throughput")
        if "speedup_batch_warm_vs_shipped_v2" in results:
            print(f"  batch warm: {results['speedup_batch_warm_vs_shipped_v2']}x the v2 judge's (issue 14's 'today')")
    print(f"  peak RSS {results['peak_rss_mb']} MB; load average {results['load_average']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    asyncio.run(main())
