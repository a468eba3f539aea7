"""Choose the local judge's thresholds on the **tune** part of the by-claim split (never on eval).

    python bench/tune_judge.py [--data ../shared/data] [--model DIR] [--write FILE]

Runs every tune-part item once through the full verifier path with a recording judge, then
searches the decision thresholds of ``LocalJudgeConfig`` offline on the recorded model scores
(coordinate search, two rounds). The objective is the mean of WiCE balanced accuracy,
AttributionBench balanced accuracy, Climate-FEVER macro-F1 and FEVER-Symmetric accuracy.
Prints the chosen values (to be written into ``LocalJudgeConfig``'s defaults) and, with
``--write``, stores them as JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_accuracy import (
    ROOT,
    RecordingJudge,
    Task,
    binary_metrics,
    fever_metrics,
    load_tasks,
    make_verifier,
    run_tasks,
    three_way_metrics,
)

from guardrail.guard import apply_quote_guard
from guardrail.judges.local import LocalJudge, LocalJudgeConfig, Scored, decide

GRID: dict[str, list[Any]] = {
    "support_threshold": [round(0.05 * i, 2) for i in range(2, 20)],
    "contradict_threshold": [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8, 0.9, 0.95, 1.01],
    "contradict_min_overlap": [0.0, 0.15, 0.3, 0.45, 0.6],
    "contradict_min_shared": [1, 2, 3],
    "number_conflict_min_overlap": [0.3, 0.5, 0.7, 1.01],
    "require_numbers": [True, False],
    "require_entities": [True, False],
    "negation_check": [True, False],
    "negation_min_overlap": [0.4, 0.6, 0.8],
    "entity_min_words": [0, 20, 40, 80],
    "use_combined": [True, False],
}


def record(judge: LocalJudge, tasks: dict[str, list[Task]]) -> dict[str, list[Scored]]:
    """Every task's scored request, in task order (one Fact per task, so one request each)."""
    out: dict[str, list[Scored]] = {}
    for name, items in tasks.items():
        rec = RecordingJudge(judge)
        t0 = time.perf_counter()
        run_tasks(make_verifier(rec), items)
        if len(rec.sequence) != len(items):
            raise RuntimeError(f"{name}: {len(rec.sequence)} requests for {len(items)} tasks")
        out[name] = rec.sequence
        print(f"  scored {name}: {len(items)} items in {time.perf_counter() - t0:.0f}s", flush=True)
    return out


def labels(scored: Sequence[Scored], config: LocalJudgeConfig) -> list[str]:
    out = []
    for s in scored:
        verdict = apply_quote_guard(decide(s, config), s.passages)
        out.append(verdict.label)
    return out


def figures(recorded: dict[str, list[Scored]], tasks: dict[str, list[Task]], config: LocalJudgeConfig) -> dict:
    res = {}
    for name, scored in recorded.items():
        gold = [t.gold for t in tasks[name]]
        pred = labels(scored, config)
        if name in ("wice", "attributionbench"):
            res[name] = binary_metrics(gold, pred)["balanced_accuracy"]
        elif name == "climate_fever":
            m = three_way_metrics(gold, pred)
            res[name] = m["macro_f1"]
            res["climate_contra_recall"] = m["contradicted_recall"]
        else:
            res[name] = fever_metrics(gold, pred)["accuracy"]
    res["objective"] = round(
        (res["wice"] + res["attributionbench"] + res["climate_fever"] + res["fever_symmetric"]) / 4, 4
    )
    return res


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--write", type=Path, default=None)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cache", type=Path, default=None, help="pickle of the scored tune part (reused if present)")
    args = p.parse_args(argv)
    if not (args.data / "wice_claim_dev.jsonl").is_file():
        print(f"skipped: no labelled data at {args.data}")
        return 0
    import torch

    torch.set_num_threads(args.threads)
    tasks = load_tasks(args.data, "tune")
    if args.limit:
        tasks = {k: v[: args.limit] for k, v in tasks.items()}
    print("tune part:", {k: len(v) for k, v in tasks.items()})
    judge = LocalJudge(model_path=args.model)
    if args.cache and args.cache.is_file():
        recorded = pickle.loads(args.cache.read_bytes())
    else:
        recorded = record(judge, tasks)
        if args.cache:
            args.cache.write_bytes(pickle.dumps(recorded))
    config = LocalJudgeConfig()
    best = figures(recorded, tasks, config)
    print("start:", best)
    for round_ in range(2):
        for key, values in GRID.items():
            for value in values:
                trial = dataclasses.replace(config, **{key: value})
                res = figures(recorded, tasks, trial)
                if res["objective"] > best["objective"] + 1e-9:
                    best, config = res, trial
            print(f"round {round_} {key}={getattr(config, key)}: {best}", flush=True)
    chosen = {k: getattr(config, k) for k in GRID}
    print("chosen:", json.dumps(chosen))
    print("tune figures:", best)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(json.dumps({"config": chosen, "tune_figures": best}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
