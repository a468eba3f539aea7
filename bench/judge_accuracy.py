"""Accuracy of the embedded local judge through the full verifier path, on held-out data.

    python bench/judge_accuracy.py [--data ../shared/data] [--baseline artifacts/judge/baseline]

Every claim goes ``Fact(evidence text) -> passages -> retrieval (all-MiniLM-L6-v2, top 3) ->
LocalJudge -> quote guard -> aggregation`` through ``guardrail.Verifier.averify_many``; only the
**eval** part of the by-claim split (``training.datasets``) is used, which was neither
trained on nor used to pick thresholds. The shipped model and the SNLI-only baseline (stage 1 of
``training.train``) are measured in the same run. Figures are printed and written to
``bench/results/judge_accuracy.json`` and ``.md``. Skips with a message when the data folder is
absent.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from titanic import TITANIC_FACTS  # noqa: E402  (bench/, this script's folder)

from guardrail import ClaimTask, Fact, JudgeRequest, JudgeVerdict, Verifier  # noqa: E402
from guardrail.judges.local import LocalJudge, LocalJudgeConfig, Scored, decide  # noqa: E402
from training import datasets as ds  # noqa: E402

LABELS3 = ("supported", "contradicted", "not_found")


class _NoFetch:
    """Every piece of evidence is a Fact, so nothing is ever fetched."""

    name = "none"

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, Any]:
        raise RuntimeError(f"the accuracy bench fetches nothing (asked for {len(urls)} URLs)")


@dataclass
class RecordingJudge:
    """Wraps a LocalJudge (through the Judge protocol) and keeps every scored request, so the
    bench can report ranking figures (ROC-AUC) and the tuner can re-decide with other thresholds."""

    inner: LocalJudge
    config: LocalJudgeConfig | None = None
    records: dict[tuple[str, tuple[str, ...]], Scored] = field(default_factory=dict)
    sequence: list[Scored] = field(default_factory=list)  # every scored request, in call order
    name: str = "local"

    @property
    def model(self) -> str:
        return self.inner.model

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        scored = await asyncio.to_thread(self.inner.score, requests)
        for s in scored:
            self.records[(s.claim, tuple(s.passages))] = s
        self.sequence.extend(scored)
        config = self.config or self.inner.config
        return [decide(s, config) for s in scored]


def make_verifier(judge: Any) -> Verifier:
    return Verifier(judge=judge, fetcher=_NoFetch())  # type: ignore[arg-type]


@dataclass
class Task:
    """One bench item: a claim, its evidence text(s) and the gold label."""

    claim: str
    evidence: list[str]
    gold: str  # supported | contradicted | not_found  (binary sets: supported | not_supported)


def load_tasks(data: Path, split: str) -> dict[str, list[Task]]:
    """The four sets as bench tasks for one part of the split."""
    wice = [
        Task(c.claim, [ds.wice_page_text(c)], "supported" if c.supported else "not_supported")
        for c in ds.read_wice(data, split)  # type: ignore[arg-type]
    ]
    climate = [Task(p.claim, [p.evidence], p.label) for p in ds.read_climate_fever(data, split)]  # type: ignore[arg-type]
    fever = [Task(p.claim, [p.evidence], p.label) for p in ds.read_fever_symmetric(data, split)]  # type: ignore[arg-type]
    attribution = [
        Task(r.claim, ["\n\n".join(r.references)], "supported" if r.attributable else "not_supported")
        for r in ds.read_attributionbench(data, split)  # type: ignore[arg-type]
        if r.references
    ]
    return {"wice": wice, "climate_fever": climate, "fever_symmetric": fever, "attributionbench": attribution}


def run_tasks(verifier: Verifier, tasks: Sequence[Task], chunk: int = 64) -> list[str]:
    """Overall label per task through ``Verifier.averify_many`` (in chunks, for memory)."""
    labels: list[str] = []
    for start in range(0, len(tasks), chunk):
        part = tasks[start : start + chunk]
        reports = asyncio.run(verifier.averify_many([ClaimTask(t.claim, [Fact(e) for e in t.evidence]) for t in part]))
        labels.extend(str(r.overall) for r in reports)
    return labels


# -- metrics -------------------------------------------------------------------


def binary_metrics(gold: Sequence[str], pred: Sequence[str], scores: Sequence[float] | None = None) -> dict:
    pos = [g == "supported" for g in gold]
    hit = [p == "supported" for p in pred]
    tp = sum(1 for a, b in zip(pos, hit, strict=True) if a and b)
    tn = sum(1 for a, b in zip(pos, hit, strict=True) if not a and not b)
    n_pos, n_neg = sum(pos), len(pos) - sum(pos)
    tpr = tp / n_pos if n_pos else 0.0
    tnr = tn / n_neg if n_neg else 0.0
    out = {
        "n": len(gold),
        "positives": n_pos,
        "balanced_accuracy": round((tpr + tnr) / 2, 4),
        "supported_recall": round(tpr, 4),
        "not_supported_recall": round(tnr, 4),
        "accuracy": round((tp + tn) / max(1, len(gold)), 4),
    }
    if scores is not None:
        out["roc_auc"] = round(roc_auc(pos, scores), 4)
    return out


def roc_auc(positive: Sequence[bool], scores: Sequence[float]) -> float:
    """Probability that a random positive outranks a random negative (ties count half)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positive, dtype=bool)
    if y.all() or not y.any():
        return float("nan")
    order = s.argsort(kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    n_pos, n_neg = y.sum(), (~y).sum()
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def three_way_metrics(gold: Sequence[str], pred: Sequence[str]) -> dict:
    matrix = {g: {p: 0 for p in LABELS3} for g in LABELS3}
    for g, p in zip(gold, pred, strict=True):
        matrix[g][p if p in LABELS3 else "not_found"] += 1
    f1s = {}
    for lab in LABELS3:
        tp = matrix[lab][lab]
        fp = sum(matrix[g][lab] for g in LABELS3 if g != lab)
        fn = sum(matrix[lab][p] for p in LABELS3 if p != lab)
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1s[lab] = {
            "precision": round(prec, 4),
            "recall": round(rec, 4),
            "f1": round(2 * prec * rec / (prec + rec), 4) if prec + rec else 0.0,
        }
    correct = sum(matrix[lab][lab] for lab in LABELS3)
    return {
        "n": len(gold),
        "accuracy": round(correct / max(1, len(gold)), 4),
        "macro_f1": round(sum(v["f1"] for v in f1s.values()) / 3, 4),
        "contradicted_recall": f1s["contradicted"]["recall"],
        "per_label": f1s,
        "confusion_gold_rows_pred_cols": matrix,
    }


def fever_metrics(gold: Sequence[str], pred: Sequence[str]) -> dict:
    decided = [(g, p) for g, p in zip(gold, pred, strict=True) if p != "not_found"]
    return {
        "n": len(gold),
        "accuracy": round(sum(g == p for g, p in zip(gold, pred, strict=True)) / max(1, len(gold)), 4),
        "not_found_rate": round(1 - len(decided) / max(1, len(gold)), 4),
        "accuracy_when_decided": round(sum(g == p for g, p in decided) / max(1, len(decided)), 4),
    }


def evaluate(judge: RecordingJudge, tasks: dict[str, list[Task]], log: Any = print) -> dict:
    """Every figure for one judge on the given tasks, through the verifier."""
    verifier = make_verifier(judge)
    out: dict[str, Any] = {}
    for name, items in tasks.items():
        t0 = time.perf_counter()
        judge.records.clear()
        pred = run_tasks(verifier, items)
        gold = [t.gold for t in items]
        if name in ("wice", "attributionbench"):
            by_claim: dict[str, float] = {}
            for (claim, _), scored in judge.records.items():
                best = max([0.0] + [float(c.probs[0]) for c in scored.candidates])
                by_claim[claim] = max(by_claim.get(claim, 0.0), best)
            out[name] = binary_metrics(gold, pred, [by_claim.get(t.claim, 0.0) for t in items])
        elif name == "climate_fever":
            out[name] = three_way_metrics(gold, pred)
        else:
            out[name] = fever_metrics(gold, pred)
        out[name]["seconds"] = round(time.perf_counter() - t0, 1)
        log(f"  {name}: {json.dumps({k: v for k, v in out[name].items() if not isinstance(v, dict)})}")
    return out


def _summary(times: Sequence[float]) -> dict:
    return {
        "n": len(times),
        "p50_ms": round(float(np.percentile(times, 50)), 1),
        "p95_ms": round(float(np.percentile(times, 95)), 1),
        "mean_ms": round(float(np.mean(times)), 1),
    }


def latency(judge: LocalJudge, tasks: Sequence[Task], n: int = 40) -> dict:
    """Per-(claim, page) latency through the verifier (retrieval + judge), one claim at a time,
    models warm: ``first_sight`` embeds the page's passages (a page not seen before), ``warm_page``
    is the same claim again with the passage embeddings cached (``CachingEmbedder``), so what is
    left is the claim's embedding and the judge; ``judge_pairs`` counts the pairs scored."""
    verifier = make_verifier(judge)
    run_tasks(verifier, tasks[-2:])  # warm-up: embedder and judge loaded
    first, warm = [], []
    pairs: list[int] = []
    recorder = RecordingJudge(judge)
    counting = make_verifier(recorder)
    for t in tasks[:n]:
        t0 = time.perf_counter()
        run_tasks(verifier, [t])
        first.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        run_tasks(verifier, [t])
        warm.append((time.perf_counter() - t0) * 1000)
        recorder.sequence.clear()
        run_tasks(counting, [t])
        pairs.append(sum(len(s.candidates) for s in recorder.sequence))
    return {
        "first_sight": _summary(first),
        "warm_page": _summary(warm),
        "judge_pairs_per_claim": {"p50": float(np.percentile(pairs, 50)), "mean": round(float(np.mean(pairs)), 1)},
    }


TITANIC_ANSWERS = [
    "Titanic was directed by James Cameron. It was released in 1997.",
    "Titanic was directed by James Cameron. It starred Brad Pitt and Kate Winslet.",
]


def grounding_latency(judge: LocalJudge, runs: int = 20) -> dict:
    """ms per ``check_grounding`` call (2 claims x 2 short facts, anti-citations and claim scores
    on), models warm, per answer of ``TITANIC_ANSWERS``."""
    from guardrail import check_grounding

    verifier = Verifier(judge=judge, fetcher=_NoFetch())  # type: ignore[arg-type]
    spec = {"enableAntiCitations": True, "enableClaimLevelScore": True}
    out: dict[str, Any] = {}
    for answer in TITANIC_ANSWERS:
        check_grounding(answer, TITANIC_FACTS, spec, verifier=verifier)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            check_grounding(answer, TITANIC_FACTS, spec, verifier=verifier)
            times.append((time.perf_counter() - t0) * 1000)
        out[answer] = _summary(times)
    return out


def to_markdown(result: dict) -> str:
    lines = ["# Local judge accuracy (held-out eval part, full verifier path)", ""]
    lines.append(f"Command: `{result['command']}`  ")
    lines.append(f"Split: {result['split']}  ")
    lines.append(f"Model load: {result['load_seconds']} s; peak RSS {result['peak_rss_mb']} MB  ")
    lines.append(f"Judge: dtype {result['dtype']}, torch threads {result['torch_threads']}  ")
    lat = result["latency_wice_page"]
    for key, title in (("first_sight", "page seen for the first time"), ("warm_page", "page seen before")):
        lines.append(
            f"Latency per (claim, WiCE page), models warm, {title}: p50 {lat[key]['p50_ms']} ms, "
            f"p95 {lat[key]['p95_ms']} ms  "
        )
    lines.append(f"Judge pairs per (claim, WiCE page): mean {lat['judge_pairs_per_claim']['mean']}  ")
    for answer, figures in result["latency_titanic_grounding"].items():
        lines.append(
            f"check_grounding, Titanic facts, `{answer}`: p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms  "
        )
    lines.append("")
    lines.append("| figure | " + " | ".join(result["models"]) + " |")
    lines.append("| --- |" + " --- |" * len(result["models"]))
    rows = [
        ("WiCE balanced accuracy", "wice", "balanced_accuracy"),
        ("WiCE ROC-AUC (best entailment prob)", "wice", "roc_auc"),
        ("Climate-FEVER 3-way accuracy", "climate_fever", "accuracy"),
        ("Climate-FEVER macro-F1", "climate_fever", "macro_f1"),
        ("Climate-FEVER contradicted recall", "climate_fever", "contradicted_recall"),
        ("FEVER-Symmetric accuracy (sup vs contra)", "fever_symmetric", "accuracy"),
        ("FEVER-Symmetric accuracy when decided", "fever_symmetric", "accuracy_when_decided"),
        ("AttributionBench balanced accuracy", "attributionbench", "balanced_accuracy"),
        ("AttributionBench ROC-AUC", "attributionbench", "roc_auc"),
    ]
    for title, ds_name, key in rows:
        cells = [str(result["models"][m][ds_name].get(key, "")) for m in result["models"]]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    for m, figures in result["models"].items():
        cm = figures["climate_fever"]["confusion_gold_rows_pred_cols"]
        lines += ["", f"Climate-FEVER confusion ({m}; rows gold, columns predicted):", ""]
        lines.append("| gold \\ pred | " + " | ".join(LABELS3) + " |")
        lines.append("| --- |" + " --- |" * 3)
        for g in LABELS3:
            lines.append(f"| {g} | " + " | ".join(str(cm[g][p]) for p in LABELS3) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--baseline", type=Path, default=ROOT / "artifacts" / "judge" / "baseline")
    p.add_argument("--model", type=Path, default=None, help="model folder (default: the shipped one)")
    p.add_argument(
        "--baseline-config",
        type=Path,
        default=ROOT / "bench" / "results" / "tune_baseline.json",
        help="thresholds tuned for the baseline on the tune part (bench/tune_judge.py --write)",
    )
    p.add_argument("--quantize", action="store_true", help="measure the int8 dynamically quantised model")
    p.add_argument("--limit", type=int, default=None, help="first N items per set (quick looks only)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: LocalJudgeConfig.threads)")
    p.add_argument("--skip-baseline", action="store_true", help="measure the shipped model only")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "judge_accuracy")
    args = p.parse_args(argv)
    if not (args.data / "wice_claim_dev.jsonl").is_file():
        print(f"skipped: no labelled data at {args.data} (see the shared data README)")
        return 0
    import torch

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    tasks = load_tasks(args.data, "eval")
    if args.limit:
        tasks = {k: v[: args.limit] for k, v in tasks.items()}
    print("eval part:", {k: len(v) for k, v in tasks.items()})

    shipped = LocalJudge(model_path=args.model, quantize=args.quantize)
    if not LocalJudge.available(args.model):
        print("skipped: the local judge's weights are not installed")
        return 0
    t0 = time.perf_counter()
    shipped.load()
    load_seconds = round(time.perf_counter() - t0, 2)
    judges = {"shipped": shipped}
    if args.skip_baseline:
        pass
    elif LocalJudge.available(args.baseline):
        config = LocalJudgeConfig()
        if args.baseline_config.is_file():
            tuned = json.loads(args.baseline_config.read_text())["config"]
            config = dataclasses.replace(config, **tuned)
            print(f"baseline thresholds from {args.baseline_config}: {tuned}")
        judges["snli_baseline"] = LocalJudge(model_path=args.baseline, config=config, quantize=args.quantize)
    else:
        print(f"note: no SNLI-only baseline at {args.baseline}; run training.train stage 1")

    result: dict[str, Any] = {
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]),
        "split": "eval part of the by-claim split (training.datasets: sha256 buckets 0-44)",
        "data": str(args.data),
        "sizes": {k: len(v) for k, v in tasks.items()},
        "load_seconds": load_seconds,
        "models": {},
    }
    for name, judge in judges.items():
        print(f"{name} ({judge.path}):")
        result["models"][name] = evaluate(RecordingJudge(judge), tasks)
        result["models"][name]["config"] = judge.config.__dict__ | {"window_sizes": list(judge.config.window_sizes)}
    result["latency_wice_page"] = latency(shipped, tasks["wice"])
    result["latency_titanic_grounding"] = grounding_latency(shipped)
    result["dtype"] = shipped.dtype
    result["torch_threads"] = torch.get_num_threads()
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print("latency per (claim, WiCE page):", result["latency_wice_page"], "load", load_seconds, "s")
    print("check_grounding (Titanic):", result["latency_titanic_grounding"])
    print("peak RSS MB:", result["peak_rss_mb"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    md = to_markdown(result)
    args.out.with_suffix(".md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
