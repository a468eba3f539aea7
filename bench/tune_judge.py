"""Choose the local judge's thresholds and candidate budget on the **tune** part of the by-claim split.

    python bench/tune_judge.py [--data ../shared/data] [--model DIR] [--cache FILE] [--write FILE]
                               [--budgets] [--latency] [--rounds FILE]

Never touches the eval part. Steps:

1. Every tune-part item runs once through the full verifier path (passages -> retrieval ->
   judge) with a recording judge whose candidate budget is a superset of every budget tried
   below; each (evidence, claim) pair's probabilities are kept in a cache (``--cache``, a
   pickle, reused when present), with the judge requests themselves.
2. For each candidate budget (``BUDGETS``; all of them with ``--budgets``, else only the
   defaults of ``LocalJudgeConfig``) the requests are scored again from the cache (pairs the
   superset lacks, such as second-pass joins, go to the model), and the decision thresholds are
   searched offline (coordinate search, two rounds). The objective is the mean of WiCE balanced
   accuracy, AttributionBench balanced accuracy, Climate-FEVER macro-F1 and FEVER-Symmetric
   accuracy. Pairs and tokens per request are counted.
3. ``--latency``: each budget scores the WiCE tune requests again with no cache, one request at a
   time (warm model), for ms per (claim, page) p50/p95 of the judge alone.

``--rounds FILE`` instead compares the early-exit settings of ``ROUNDS`` with scoring every
candidate: pairs per request and how many labels differ (``LocalJudgeConfig.early_exit`` and
``first_round`` were chosen from it: the cheapest setting with no label differing).

Prints everything; ``--write`` stores the chosen thresholds, the figures and the budget table as
JSON (the chosen values go into ``LocalJudgeConfig``'s defaults by hand).
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

import numpy as np

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

from guardrail.core.quote_guard import apply_quote_guard
from guardrail.core.schema import JudgeRequest
from guardrail.judges.local import LocalJudge, LocalJudgeConfig, Scored, decide

GRID: dict[str, list[Any]] = {
    "support_threshold": [round(0.05 * i, 2) for i in range(1, 20)],
    "support_min_overlap": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
    "contradict_threshold": [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8, 0.9, 0.95, 1.01],
    "contradict_min_overlap": [0.0, 0.15, 0.3, 0.45, 0.6],
    "contradict_min_shared": [1, 2, 3],
    "number_conflict_min_overlap": [0.3, 0.5, 0.7, 1.01],
    "year_conflict": [True, False],
    "entity_substitution": [True, False],
    "substitution_min_overlap": [0.5, 0.6, 0.7, 0.8, 1.01],
    "require_numbers": [True, False],
    "require_entities": [True, False],
    "negation_check": [True, False],
    "negation_min_overlap": [0.4, 0.6, 0.8],
    "entity_min_words": [0, 20, 40, 80],
    "use_combined": [True, False],
    "context_override": [True, False],
}

SUPERSET: dict[str, Any] = {
    "max_sentences": 24,
    "window_seeds": 8,
    "window_sizes": (2, 3),
    "combine_top": (2, 3),
    "rescore_top": 3,
    "score_passages": True,
    "early_exit": 1.01,
}
"""The recording budget: every candidate any budget below can ask for (but second-pass joins)."""

BUDGETS: dict[str, dict[str, Any]] = {
    "v1-like (24 sentences, 8 window seeds, passages)": dict(SUPERSET),
    "wide (12 sentences, 4 seeds, no passages)": {
        "max_sentences": 12,
        "window_seeds": 4,
        "window_sizes": (2, 3),
        "combine_top": (2, 3),
        "rescore_top": 3,
        "score_passages": False,
        "early_exit": 1.01,
    },
    "8 sentences, 3 seeds, no early exit": {
        "max_sentences": 8,
        "window_seeds": 3,
        "window_sizes": (2, 3),
        "combine_top": (2, 3),
        "rescore_top": 3,
        "score_passages": False,
        "early_exit": 1.01,
    },
    "8 sentences, 3 seeds, early exit 0.9": {
        "max_sentences": 8,
        "window_seeds": 3,
        "window_sizes": (2, 3),
        "combine_top": (2, 3),
        "rescore_top": 3,
        "score_passages": False,
        "early_exit": 0.9,
    },
    "6 sentences, 2 seeds, windows of 2, early exit 0.9": {
        "max_sentences": 6,
        "window_seeds": 2,
        "window_sizes": (2,),
        "combine_top": (2, 3),
        "rescore_top": 3,
        "score_passages": False,
        "early_exit": 0.9,
    },
    "4 sentences, 1 seed, windows of 2, no joins": {
        "max_sentences": 4,
        "window_seeds": 1,
        "window_sizes": (2,),
        "combine_top": (),
        "rescore_top": 0,
        "score_passages": False,
        "early_exit": 0.9,
    },
}


class CachedJudge(LocalJudge):
    """A LocalJudge whose ``predict`` answers from a cache of pair probabilities first, counting
    the pairs and tokens it is asked for (cached or not)."""

    def __init__(self, cache: dict[tuple[str, str], np.ndarray], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cache = cache
        self.pairs = 0
        self.tokens = 0

    def predict(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        keys = list(zip(premises, hypotheses, strict=True))
        self.pairs += len(keys)
        # ~4 characters per word piece: a cheap stand-in for the tokenizer when counting.
        self.tokens += sum((len(p) + len(h)) // 4 + 3 for p, h in keys)
        missing = list(dict.fromkeys(k for k in keys if k not in self.cache))
        if missing:
            probs = super().predict([p for p, _ in missing], [h for _, h in missing])
            self.cache.update(zip(missing, probs, strict=True))
        return np.stack([self.cache[k] for k in keys]) if keys else np.zeros((0, 3), dtype=np.float32)


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


def rescore(judge: LocalJudge, recorded: dict[str, list[Scored]]) -> dict[str, list[Scored]]:
    """The recorded requests scored again with ``judge``'s budget (one request at a time, as the
    verifier's grouping of requests does not change what a request scores)."""
    return {
        name: [judge.score([JudgeRequest(claim=s.claim, passages=s.passages)])[0] for s in scored]
        for name, scored in recorded.items()
    }


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


def search(
    recorded: dict[str, list[Scored]], tasks: dict[str, list[Task]], config: LocalJudgeConfig, verbose: bool
) -> tuple[LocalJudgeConfig, dict]:
    """Coordinate search of the GRID thresholds, two rounds, from ``config``."""
    best = figures(recorded, tasks, config)
    if verbose:
        print("start:", best)
    for round_ in range(2):
        for key, values in GRID.items():
            for value in values:
                trial = dataclasses.replace(config, **{key: value})
                res = figures(recorded, tasks, trial)
                if res["objective"] > best["objective"] + 1e-9:
                    best, config = res, trial
            if verbose:
                print(f"round {round_} {key}={getattr(config, key)}: {best}", flush=True)
    return config, best


def latency(judge: LocalJudge, requests: Sequence[Scored]) -> dict:
    """ms per request, one request at a time, warm model, no cache."""
    judge.score([JudgeRequest(claim=requests[0].claim, passages=requests[0].passages)])
    times = []
    for s in requests:
        t0 = time.perf_counter()
        judge.score([JudgeRequest(claim=s.claim, passages=s.passages)])
        times.append((time.perf_counter() - t0) * 1000)
    return {"p50_ms": round(float(np.percentile(times, 50)), 1), "p95_ms": round(float(np.percentile(times, 95)), 1)}


ROUNDS: list[dict[str, Any]] = [
    {"early_exit": 1.01},
    *({"early_exit": e, "first_round": f} for f in (0, 1, 2) for e in (0.9, 0.7, 0.5, 0.4, 0.3)),
]
"""Early-exit settings compared with scoring everything (``--rounds``)."""


def rounds_study(
    recorded: dict[str, list[Scored]], tasks: dict[str, list[Task]], cache: dict, base: LocalJudgeConfig
) -> list[dict[str, Any]]:
    """For each ROUNDS setting: pairs and tokens per request (all sets, and WiCE alone), how many
    labels differ from scoring every candidate, and the tuning figures (default thresholds)."""
    n = sum(len(v) for v in recorded.values())
    reference: dict[str, list[str]] | None = None
    rows = []
    for over in ROUNDS:
        config = dataclasses.replace(base, **over)
        judge = CachedJudge(cache, config=config)
        rescored = rescore(judge, recorded)
        got = {name: labels(scored, config) for name, scored in rescored.items()}
        reference = reference or got
        differ = sum(a != b for name in got for a, b in zip(got[name], reference[name], strict=True))
        wice = CachedJudge(cache, config=config)
        rescore(wice, {"wice": recorded["wice"]})
        row = {
            "setting": over,
            "pairs_per_request": round(judge.pairs / n, 2),
            "tokens_per_request": round(judge.tokens / n),
            "wice_pairs_per_request": round(wice.pairs / len(recorded["wice"]), 1),
            "labels_differing_from_full": differ,
            "requests": n,
            "figures": figures(rescored, tasks, config),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--write", type=Path, default=None)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: LocalJudgeConfig.threads)")
    p.add_argument("--dtype", default=None, help="float32, bfloat16 or auto (default: LocalJudgeConfig.dtype)")
    p.add_argument("--cache", type=Path, default=None, help="pickle of the recorded tune part (reused if present)")
    p.add_argument("--budgets", action="store_true", help="search every budget of BUDGETS, not just the default")
    p.add_argument("--latency", action="store_true", help="time each budget on the WiCE tune requests")
    p.add_argument(
        "--rounds", type=Path, default=None, help="compare early-exit settings with scoring everything; write JSON here"
    )
    args = p.parse_args(argv)
    if not (args.data / "wice_claim_dev.jsonl").is_file():
        print(f"skipped: no labelled data at {args.data}")
        return 0
    import torch

    base = LocalJudgeConfig()
    overrides: dict[str, Any] = {}
    if args.threads is not None:
        overrides["threads"] = args.threads
    if args.dtype is not None:
        overrides["dtype"] = args.dtype
    base = dataclasses.replace(base, **overrides)
    if base.threads is not None:
        torch.set_num_threads(base.threads)
    tasks = load_tasks(args.data, "tune")
    if args.limit:
        tasks = {k: v[: args.limit] for k, v in tasks.items()}
    print("tune part:", {k: len(v) for k, v in tasks.items()})
    cache: dict[tuple[str, str], np.ndarray] = {}
    if args.cache and args.cache.is_file():
        saved = pickle.loads(args.cache.read_bytes())
        recorded, cache = saved["recorded"], saved["cache"]
    else:
        recorder = CachedJudge(cache, model_path=args.model, config=dataclasses.replace(base, **SUPERSET))
        print(f"recording with {recorder.path} ({recorder.dtype})")
        recorded = record(recorder, tasks)
        if args.cache:
            args.cache.write_bytes(pickle.dumps({"recorded": recorded, "cache": cache}))
    n_requests = sum(len(v) for v in recorded.values())
    if args.rounds:
        rows = rounds_study(recorded, tasks, cache, base)
        args.rounds.parent.mkdir(parents=True, exist_ok=True)
        args.rounds.write_text(
            json.dumps(
                {
                    "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]),
                    "split": "tune part (sha256 buckets 45-61)",
                    "dtype": LocalJudge(model_path=args.model, config=base).dtype,
                    "rows": rows,
                },
                indent=2,
            )
            + "\n"
        )
        return 0
    default_budget = {k: getattr(base, k) for k in SUPERSET}
    budgets = dict(BUDGETS) if args.budgets else {}
    budgets["default (LocalJudgeConfig)"] = default_budget
    table: dict[str, Any] = {}
    chosen: dict[str, Any] = {}
    for name, budget in budgets.items():
        config = dataclasses.replace(base, **budget)
        judge = CachedJudge(cache, model_path=args.model, config=config)
        rescored = rescore(judge, recorded)
        wice_requests = len(rescored["wice"])
        before = figures(rescored, tasks, config)
        tuned, after = search(rescored, tasks, config, verbose=name.startswith("default"))
        row: dict[str, Any] = {
            "budget": {k: list(v) if isinstance(v, tuple) else v for k, v in budget.items()},
            "pairs_per_request": round(judge.pairs / n_requests, 1),
            "tokens_per_request": round(judge.tokens / n_requests),
            "figures_default_thresholds": before,
            "figures_tuned_thresholds": after,
        }
        wice_judge = CachedJudge(cache, model_path=args.model, config=config)
        rescore(wice_judge, {"wice": recorded["wice"]})
        row["wice_pairs_per_request"] = round(wice_judge.pairs / max(1, wice_requests), 1)
        if args.latency:
            row["wice_latency"] = latency(LocalJudge(model_path=args.model, config=config), recorded["wice"])
        table[name] = row
        print(f"{name}: {json.dumps({k: v for k, v in row.items() if k != 'budget'})}", flush=True)
        if name.startswith("default"):
            chosen = {k: getattr(tuned, k) for k in GRID}
            print("chosen:", json.dumps(chosen))
            print("tune figures:", after)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        result = {
            "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]),
            "split": "tune part (sha256 buckets 45-61)",
            "model": str(args.model or "shipped"),
            "dtype": LocalJudge(model_path=args.model, config=base).dtype,
            "config": chosen,
            "budgets": table,
        }
        args.write.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
