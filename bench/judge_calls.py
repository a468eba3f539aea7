"""Concurrent calls to the embedded judge: judged together (as shipped) against one pass per call.

A batch file of unique claims over loopback pages (``bench/pipeline.py``'s rivers: each claim cites
its page and the next one), verified ``--concurrency`` rows at a time with a plain ``Verifier()``
(as a library user or a LangChain ``abatch`` runs it, no ``batch_judge_calls``). Two judges, in
alternating runs: the shipped ``LocalJudge``, whose calls made while one runs wait and are judged
together, and the same judge with each call run on its own in a worker thread at once (what
``LocalJudge.judge`` did before). For each: claims/s, the machine's busy CPU-seconds, the judge's
passes and the pairs it scored; medians over ``--runs`` and the ratio.

Usage: python bench/judge_calls.py [--claims 100] [--pages 50] [--concurrency 8] [--runs 3]
Writes bench/results/judge_calls.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pipeline import build  # noqa: E402  (bench/, this script's folder)
from scale import busy_cpu_s, loopback_settings, write_rows  # noqa: E402

from guardrail import JudgeRequest, Settings, Verifier  # noqa: E402
from guardrail._bridges import run_sync  # noqa: E402
from guardrail.apps.batch import arun_batch_file  # noqa: E402
from guardrail.apps.demo import LoopbackSite  # noqa: E402
from guardrail.core.schema import JudgeVerdict  # noqa: E402
from guardrail.judges.local import LocalJudge  # noqa: E402


class CountingJudge(LocalJudge):
    """The shipped judge, counting its scoring passes and the pairs they read."""

    def __init__(self) -> None:
        super().__init__()
        self.passes = 0
        self.pairs = 0

    def judge_sync(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        self.passes += 1
        return super().judge_sync(requests)

    def predict(self, premises: Sequence[str], hypotheses: Sequence[str]) -> Any:
        self.pairs += len(premises)
        return super().predict(premises, hypotheses)


class OnePassPerCall(CountingJudge):
    """The same judge, each call run at once in its own worker thread (the judge before)."""

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        return await asyncio.to_thread(self.judge_sync, requests) if requests else []


def one_run(judge: CountingJudge, rows: Path, out: Path, settings: Settings, concurrency: int) -> dict[str, float]:
    verifier = Verifier(settings=settings, judge=judge)
    try:
        verifier.embedder.embed(["warm-up"])
        judge.load()
        judge.passes = judge.pairs = 0
        busy, start = busy_cpu_s(), time.perf_counter()
        run_sync(lambda: arun_batch_file(rows, out, verifier=verifier, concurrency=concurrency, fresh=True))
        wall = time.perf_counter() - start
        return {"wall_s": wall, "cpu_busy_s": busy_cpu_s() - busy, "passes": judge.passes, "pairs": judge.pairs}
    finally:
        verifier.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claims", type=int, default=100)
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=8, help="rows verified at once")
    parser.add_argument("--runs", type=int, default=3, help="alternating runs of each judge")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "judge_calls.json")
    args = parser.parse_args()
    if args.claims > 2 * args.pages:
        parser.error("--claims at most twice --pages: every claim unique (a repeated claim is read once per pass)")
    routes, specs = build(args.claims, args.pages, 0.1)
    settings = loopback_settings(args.concurrency)
    runs: dict[str, list[dict[str, float]]] = {"together": [], "one_pass_per_call": []}
    with tempfile.TemporaryDirectory() as tmp, LoopbackSite(routes) as site:
        rows = Path(tmp) / "rows.jsonl"
        write_rows(rows, site, specs)
        for _ in range(args.runs):
            for name, judge in (("one_pass_per_call", OnePassPerCall()), ("together", CountingJudge())):
                run = one_run(judge, rows, Path(tmp) / f"{name}.csv", settings, args.concurrency)
                runs[name].append(run)
                print(
                    f"  {name:18s} {args.claims / run['wall_s']:5.1f} claims/s  CPU busy {run['cpu_busy_s']:5.1f} s  "
                    f"{run['passes']:4.0f} passes  {run['pairs']:5.0f} pairs",
                    flush=True,
                )
    results: dict[str, Any] = {
        "claims": args.claims,
        "pages": args.pages,
        "concurrency": args.concurrency,
        "runs": args.runs,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    for name, measured in runs.items():
        results[name] = {
            "claims_per_s_median": round(statistics.median(args.claims / r["wall_s"] for r in measured), 1),
            "cpu_busy_s_median": round(statistics.median(r["cpu_busy_s"] for r in measured), 1),
            "passes_median": statistics.median(r["passes"] for r in measured),
            "pairs_median": statistics.median(r["pairs"] for r in measured),
        }
    together, apart = results["together"], results["one_pass_per_call"]
    results["throughput_ratio"] = round(together["claims_per_s_median"] / apart["claims_per_s_median"], 2)
    print(
        f"judge calls, {args.claims} unique claims over {args.pages} pages, {args.concurrency} rows at once "
        f"({results['machine']}), medians of {args.runs}:"
    )
    for label, row in (("together (shipped)", together), ("one pass per call", apart)):
        print(
            f"  {label:19s} {row['claims_per_s_median']} claims/s, CPU busy {row['cpu_busy_s_median']} s, "
            f"{row['passes_median']:.0f} passes, {row['pairs_median']:.0f} pairs"
        )
    print(f"  ratio {results['throughput_ratio']}x")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
