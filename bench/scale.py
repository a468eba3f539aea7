"""Scale benchmark: the same batch on the local engine and on Ray with 1 and 2 actors, in one run.

1,000 claims over 200 loopback pages that answer after 100 ms (each claim cites its page and the
next one), the embedded judge and embedder. For each engine: claims/s, the ratio to the
network-bound ideal (unique pages x latency / fetch concurrency, as if verifying were free), and
for Ray the peak RSS and CPU time of each actor; then the scaling ratio of 2 actors to 1. Each
engine's start (actors spawned and their models loaded, inside the timed run as in a real batch)
is reported apart, as the time to the first result, and so is the steady rate: the rows finished
between the 10th and the 90th percentile of completion times over that span, which is what a
long batch runs at.

The machine's busy CPU-seconds over each run (all processes: ``/proc/stat``) are reported too.
Two actors cannot finish sooner than their run's busy CPU-seconds spread over every core, so
``2 x wall(1 actor) / busy(2 actors)`` (on a 2-core machine) is the highest 2/1 wall-clock ratio
this code could reach with perfect packing: the ceiling that Ray's own start (worker processes,
Ray Data's actors and scheduling) and our actors' start leave on a run this short.

Usage: python bench/scale.py [--claims 1000] [--pages 200] [--latency 0.1] [--concurrency 8]
Writes bench/results/scale.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from pipeline import build, peak_rss_mb  # noqa: E402  (bench/, this script's folder)

from guardrail import Settings  # noqa: E402
from guardrail._bridges import run_sync  # noqa: E402
from guardrail.apps.batch import arun_batch_file  # noqa: E402
from guardrail.apps.batch.ray_engine import RayOptions, run_ray_batch_file  # noqa: E402
from guardrail.apps.demo import LoopbackSite  # noqa: E402
from guardrail.runtime import build_runtime  # noqa: E402


def write_rows(path: Path, site: LoopbackSite, specs: list[tuple[str, list[str]]]) -> None:
    with path.open("w") as fh:
        for i, (claim, paths) in enumerate(specs):
            fh.write(json.dumps({"id": i, "claim": claim, "urls": [site.url(p) for p in paths]}) + "\n")


def busy_cpu_s() -> float:
    """CPU-seconds every core has spent busy since boot (``/proc/stat``: all but idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def loopback_settings(concurrency: int) -> Settings:
    """The environment's settings for rows over the loopback site, ``concurrency`` rows at once."""
    return Settings.from_env().model_copy(
        update={
            "allow_private_hosts": True,
            "cache_path": None,
            "audit_path": None,
            "concurrency": concurrency,
            # One loopback server stands for 200 sites: no per-host politeness limit here.
            "host_concurrency": concurrency,
            "host_rate": 0,
        }
    )


class RowClock:
    """When each row came back (``on_row``), from a start set just before the run."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.busy_at_start = busy_cpu_s()
        self.times: list[float] = []

    def __call__(self, _result: object) -> None:
        self.times.append(time.perf_counter() - self.start)

    def figures(self) -> dict[str, float]:
        """Seconds to the first result, and the steady rate between the 10th and 90th percentile."""
        times = sorted(self.times)
        if len(times) < 10:
            return {}
        lo, hi = times[len(times) // 10], times[len(times) * 9 // 10]
        rows = len(times) * 9 // 10 - len(times) // 10
        return {"first_result_s": round(times[0], 2), "steady_claims_per_s": round(rows / max(hi - lo, 1e-9), 1)}


def local_run(rows: Path, out: Path, settings: Settings, concurrency: int) -> tuple[float, dict[str, float]]:
    # As `guardrail batch` runs it (guardrail.apps.cli.batch): concurrent rows share judge calls.
    with build_runtime(settings, cache=False, audit=False, batch_judge_calls=True) as runtime:
        runtime.verifier.embedder.embed(["warm-up"])  # models load outside the timing, as on Ray
        judge = runtime.verifier.judge
        if judge is not None:
            judge.load()
        clock = RowClock()
        run_sync(
            lambda: arun_batch_file(
                rows, out, verifier=runtime.verifier, concurrency=concurrency, fresh=True, on_row=clock
            )
        )
        wall = time.perf_counter() - clock.start
        return wall, {**clock.figures(), "cpu_busy_s": round(busy_cpu_s() - clock.busy_at_start, 2)}


class ActorWatch(RowClock):
    """Peak RSS (VmHWM) and CPU seconds of each verifier actor, sampled while the run goes on (the
    pool is torn down when the dataset is done), and the row clock: called as ``on_row``."""

    def __init__(self) -> None:
        super().__init__()
        self.peaks: dict[int, float] = {}
        self.cpu: dict[int, float] = {}
        self.last = 0.0
        self.busy = 0.0

    def __call__(self, result: object) -> None:
        super().__call__(result)
        now = time.monotonic()
        if now - self.last < 1.0:
            return
        self.last = now
        import ray._private.state as state  # no dashboard: the GCS view

        for actor in state.actors().values():
            if "RowVerifier" not in actor.get("ActorClassName", "") or actor.get("State") != "ALIVE":
                continue
            pid = int(actor["Pid"])
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
            self.peaks[pid] = max(self.peaks.get(pid, 0.0), round(kb / 1024, 1))
            # utime and stime (fields 14 and 15 of /proc/PID/stat), in clock ticks
            self.cpu[pid] = round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 1)


def ray_run(rows: Path, out: Path, settings: Settings, workers: int, concurrency: int) -> tuple[float, ActorWatch]:
    import ray

    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        options = RayOptions(workers=workers, cpus_per_worker=1, rows_at_once=concurrency, batch_size=25, cache=False)
        warm = Path(str(out) + ".warm.jsonl")
        warm.write_text(rows.read_text().splitlines()[0] + "\n")  # actors start and load their models
        run_ray_batch_file(warm, Path(str(out) + ".warm.csv"), settings=settings, options=options, fresh=True)
        watch = ActorWatch()
        run_ray_batch_file(rows, out, settings=settings, options=options, fresh=True, on_row=watch)
        wall = time.perf_counter() - watch.start
        watch.busy = busy_cpu_s() - watch.busy_at_start
        return wall, watch
    finally:
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claims", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=8, help="rows verified at once per engine/actor")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "scale.json")
    args = parser.parse_args()
    routes, specs = build(args.claims, args.pages, args.latency)
    settings = loopback_settings(args.concurrency)
    results: dict[str, Any] = {
        "claims": args.claims,
        "pages": args.pages,
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_before": os.getloadavg(),
    }
    ideal = args.pages * args.latency / args.concurrency
    with tempfile.TemporaryDirectory() as tmp, LoopbackSite(routes) as site:
        rows = Path(tmp) / "rows.jsonl"
        write_rows(rows, site, specs)
        wall, steady = local_run(rows, Path(tmp) / "local.csv", settings, args.concurrency)
        results["local"] = {"wall_s": round(wall, 2), "claims_per_s": round(args.claims / wall, 1), **steady}
        for workers in (1, 2):
            wall, watch = ray_run(rows, Path(tmp) / f"ray{workers}.csv", settings, workers, args.concurrency)
            results[f"ray_{workers}"] = {
                "wall_s": round(wall, 2),
                "claims_per_s": round(args.claims / wall, 1),
                **watch.figures(),
                "cpu_busy_s": round(watch.busy, 2),
                "peak_rss_mb_per_actor": sorted(watch.peaks.values()),
                "cpu_s_per_actor_sampled": sorted(watch.cpu.values()),
            }
    for key in ("local", "ray_1", "ray_2"):
        results[key]["network_ideal_s"] = round(ideal, 2)
        results[key]["ratio_to_ideal"] = round(results[key]["wall_s"] / ideal, 2)
    results["scaling_2_over_1"] = round(results["ray_2"]["claims_per_s"] / results["ray_1"]["claims_per_s"], 2)
    if results["ray_1"].get("steady_claims_per_s") and results["ray_2"].get("steady_claims_per_s"):
        results["steady_scaling_2_over_1"] = round(
            results["ray_2"]["steady_claims_per_s"] / results["ray_1"]["steady_claims_per_s"], 2
        )
    cores = os.cpu_count() or 1
    # Two actors cannot beat their run's busy CPU-seconds spread over every core.
    results["wall_ceiling_2_over_1"] = round(
        results["ray_1"]["wall_s"] / max(results["ray_2"]["cpu_busy_s"] / cores, results["ray_1"]["wall_s"] / 2), 2
    )
    results["driver_peak_rss_mb"] = round(peak_rss_mb(), 1)
    results["load_after"] = os.getloadavg()
    print(f"scale: {args.claims} claims, {args.pages} pages at {args.latency * 1000:.0f} ms; {results['machine']}")
    for key in ("local", "ray_1", "ray_2"):
        row = results[key]
        rss = f"  actor peak RSS {row['peak_rss_mb_per_actor']} MB" if "peak_rss_mb_per_actor" in row else ""
        speed = f"{row['claims_per_s']:7.1f} claims/s  wall {row['wall_s']:7.2f} s"
        steady = f"  first result {row.get('first_result_s')} s  steady {row.get('steady_claims_per_s')} claims/s"
        steady += f"  CPU busy {row['cpu_busy_s']} s"
        print(f"  {key:6s} {speed}  ratio to ideal {row['ratio_to_ideal']:6.2f}{steady}{rss}")
    print(
        f"  scaling 2 actors / 1 actor: {results['scaling_2_over_1']}x wall, "
        f"{results.get('steady_scaling_2_over_1')}x steady; CPU-bound ceiling on wall clock "
        f"{results['wall_ceiling_2_over_1']}x (the 2 actors' run kept {cores} cores busy "
        f"{results['ray_2']['cpu_busy_s']} CPU-s)"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
