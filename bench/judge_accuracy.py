"""Accuracy of the embedded local judge through the full verifier path, on held-out data: the
judge as it is now, the judge before issue 21 and a word-overlap rule, measured in the same run.

    python bench/judge_accuracy.py [--data ../shared/data] [--previous-ref bc3faa5] [--limit N] [--rounds 1]
                                [--backend torch]

Every claim goes ``Fact(evidence text, title) -> passages -> retrieval (all-MiniLM-L6-v2, top 3) ->
judge -> quote guard -> aggregation`` through ``guardrail.Verifier.averify_many``; only the
**eval** part of the by-claim split (``training.datasets``) is used, which was neither trained on
nor used to fit or tune the decision. Compared in the same run:

* ``new``: the judge in this tree (weights and ``decision.json`` of ``--model``);
* ``previous``: the embedded judge at ``--previous-ref`` (its ``guardrail/judges`` code and weights
  read from git into a temporary package: the precision-first judge of issue 10, v2 weights);
* ``word_overlap``: ``supported`` when 70 % of the claim's content words are on the page, else
  ``not_found`` (never ``contradicted``), the plain baseline every figure is read against.

Beyond the per-set figures: gold-supported claims labelled ``contradicted``, refuted claims labelled
``supported``; ``contradicted`` precision and recall on Climate-FEVER and FEVER-Symmetric together;
claims paired with another claim's page (``cross_claim``, gold ``not_found``); the expected
calibration error of ``confidence``. Written to ``bench/results/judge_accuracy.json`` and ``.md``.
Skips with a message when the data folder is absent.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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

from guardrail import ClaimReport, ClaimTask, Fact, JudgeRequest, JudgeVerdict, Verifier  # noqa: E402
from guardrail.judges import _checks as checks  # noqa: E402
from guardrail.judges._decision import decide  # noqa: E402
from guardrail.judges.local import LocalJudge, LocalJudgeConfig, Scored  # noqa: E402
from training import datasets as ds  # noqa: E402

LABELS3 = ("supported", "contradicted", "not_found")
OFFLINE_DEADLINE = 7 * 24 * 3600.0
"""The verifier's deadline for a whole set judged in one call (a user's call has 100 s)."""


class _NoFetch:
    """Every piece of evidence is a Fact, so nothing is ever fetched."""

    name = "none"

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, Any]:
        raise RuntimeError(f"the accuracy bench fetches nothing (asked for {len(urls)} URLs)")


@dataclass
class RecordingJudge:
    """Wraps a LocalJudge (through the Judge protocol) and keeps every scored request, so the
    bench can report ranking figures (ROC-AUC) and the tuner can re-decide with other thresholds."""

    inner: Any
    decide_fn: Any
    records: dict[tuple[str, tuple[str, ...]], Scored] = field(default_factory=dict)
    sequence: list[Scored] = field(default_factory=list)  # every scored request, in call order
    name: str = "local"
    cpu_bound: bool = True

    def load(self) -> None:
        self.inner.load()

    @property
    def model(self) -> str:
        return self.inner.model

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        scored = await asyncio.to_thread(self.inner.score, requests)
        for s in scored:
            self.records[(s.claim, tuple(s.passages))] = s
        self.sequence.extend(scored)
        return [self.decide_fn(s) for s in scored]


@dataclass
class WordOverlapJudge:
    """The plain baseline: ``supported`` when at least 70 % of the claim's content words are on the
    page (every passage is shown to it), else ``not_found``; never ``contradicted``."""

    share: float = 0.7
    name: str = "word_overlap"
    model: str = "70% content words"
    cpu_bound: bool = False
    records: dict = field(default_factory=dict)

    def load(self) -> None:
        pass

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        out = []
        for r in requests:
            page = " ".join([r.title or "", *r.passages])
            share = checks.overlap(r.claim, page)
            if share >= self.share:
                best = max(r.passages, key=lambda p: checks.overlap(r.claim, p))
                out.append(JudgeVerdict(label="supported", evidence_quote=best, confidence=round(share, 4)))
            else:
                out.append(JudgeVerdict(label="not_found", confidence=round(1 - share, 4)))
        return out


def add_precision_options(parser: argparse.ArgumentParser) -> None:
    """``--int8`` / ``--float32``: the local judge's precision (read by :func:`quantize_choice`)."""
    precision = parser.add_mutually_exclusive_group()
    precision.add_argument("--int8", action="store_true", help="the judge's int8 ONNX graph (quantize=True)")
    precision.add_argument(
        "--float32", action="store_true", help="the judge in float32 (quantize=False; default: the judge's own)"
    )


def quantize_choice(args: argparse.Namespace) -> bool | None:
    """``LocalJudge(quantize=...)`` for the options of :func:`add_precision_options`: None for
    neither, the judge's own default."""
    return True if args.int8 else (False if args.float32 else None)


def make_verifier(judge: Any) -> Verifier:
    from guardrail import Settings

    # The baseline reads the whole page; the judges get the top 3 passages, as at run time. A set
    # is one long call here, not a user's request: GUARDRAIL_DEADLINE (100 s) would end it.
    top_k = {"top_k": 10_000} if isinstance(judge, WordOverlapJudge) else {}
    settings = Settings(deadline=OFFLINE_DEADLINE, **top_k)
    return Verifier(judge=judge, fetcher=_NoFetch(), settings=settings)  # type: ignore[arg-type]


Task = ds.Task


def load_tasks(data: Path, split: str) -> dict[str, list[Task]]:
    """The four sets and the cross-claim pairs as bench tasks for one part of the split."""
    return ds.bench_tasks(data, split)  # type: ignore[arg-type]


def run_reports(verifier: Verifier, tasks: Sequence[Task], chunk: int = 64) -> list[ClaimReport]:
    """The report per task through ``Verifier.averify_many`` (in chunks, for memory)."""
    reports: list[ClaimReport] = []
    for start in range(0, len(tasks), chunk):
        part = tasks[start : start + chunk]
        reports.extend(
            asyncio.run(
                verifier.averify_many([ClaimTask(t.claim, [Fact(e, title=t.title) for e in t.evidence]) for t in part])
            )
        )
    return reports


def run_tasks(verifier: Verifier, tasks: Sequence[Task], chunk: int = 64) -> list[str]:
    """Overall label per task through ``Verifier.averify_many`` (in chunks, for memory)."""
    return [str(r.overall) for r in run_reports(verifier, tasks, chunk)]


def confidence_of(report: ClaimReport) -> float:
    """The confidence behind a one-citation report's label."""
    return report.citations[0].confidence if report.citations else 0.0


def label_correct(dataset: str, gold: str, pred: str) -> bool | None:
    """Whether a predicted label is right for the gold label of ``dataset`` (None: the set cannot
    tell, as for ``not_found`` on FEVER-Symmetric, whose pairs all support or refute). On the
    binary sets (WiCE, AttributionBench) ``contradicted`` and ``not_found`` both mean not supported."""
    if dataset in ("wice", "attributionbench"):
        return (pred == "supported") == (gold == "supported")
    if dataset == "fever_symmetric" and pred == "not_found":
        return None
    return pred == gold


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], bins: int = 10) -> float:
    """Expected calibration error of ``confidences`` (equal-width bins, weighted by count)."""
    if not confidences:
        return float("nan")
    conf = np.asarray(confidences, dtype=np.float64)
    hit = np.asarray(correct, dtype=np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    total = 0.0
    for lo, hi in itertools.pairwise(edges):
        inside = (conf >= lo) & ((conf < hi) if hi < 1.0 else (conf <= hi))
        if inside.any():
            total += inside.sum() / len(conf) * abs(conf[inside].mean() - hit[inside].mean())
    return round(float(total), 4)


def contradiction_figures(gold: Sequence[str], pred: Sequence[str]) -> dict:
    """Precision and recall of ``contradicted``."""
    tp = sum(g == "contradicted" and p == "contradicted" for g, p in zip(gold, pred, strict=True))
    predicted = sum(p == "contradicted" for p in pred)
    actual = sum(g == "contradicted" for g in gold)
    return {
        "contradicted_predicted": predicted,
        "contradicted_gold": actual,
        "contradicted_precision": round(tp / predicted, 4) if predicted else None,
        "contradicted_recall": round(tp / actual, 4) if actual else None,
    }


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
    """Every figure for one judge on the given tasks, through the verifier; ``_labels`` keeps
    each set's predicted labels and confidences for the pooled figures (:func:`pooled`)."""
    verifier = make_verifier(judge)
    out: dict[str, Any] = {"_labels": {}}
    for name, items in tasks.items():
        t0 = time.perf_counter()
        judge.records.clear()
        reports = run_reports(verifier, items)
        pred = [str(r.overall) for r in reports]
        conf = [confidence_of(r) for r in reports]
        gold = [t.gold for t in items]
        out["_labels"][name] = {"gold": gold, "pred": pred, "confidence": conf}
        if name in ("wice", "attributionbench") and judge.records:
            by_claim: dict[str, float] = {}
            for (claim, _), scored in judge.records.items():
                best = max([0.0] + [float(c.probs[0]) for c in scored.candidates if getattr(c, "scored", True)])
                by_claim[claim] = max(by_claim.get(claim, 0.0), best)
            out[name] = binary_metrics(gold, pred, [by_claim.get(t.claim, 0.0) for t in items])
        elif name in ("wice", "attributionbench"):
            out[name] = binary_metrics(gold, pred)
        if name in ("wice", "attributionbench"):
            supported = [p for g, p in zip(gold, pred, strict=True) if g == "supported"]
            out[name]["gold_supported_contradicted_rate"] = round(
                sum(p == "contradicted" for p in supported) / max(1, len(supported)), 4
            )
        elif name == "climate_fever":
            out[name] = three_way_metrics(gold, pred)
        elif name == "cross_claim":
            out[name] = {
                "n": len(pred),
                "contradicted_rate": round(sum(p == "contradicted" for p in pred) / max(1, len(pred)), 4),
                "supported_rate": round(sum(p == "supported" for p in pred) / max(1, len(pred)), 4),
            }
        else:
            out[name] = fever_metrics(gold, pred)
        judged = [(c, label_correct(name, g, p)) for g, p, c in zip(gold, pred, conf, strict=True)]
        judged = [(c, ok) for c, ok in judged if ok is not None]
        out[name]["ece"] = expected_calibration_error([c for c, _ in judged], [bool(ok) for _, ok in judged])
        out[name]["seconds"] = round(time.perf_counter() - t0, 1)
        log(f"  {name}: {json.dumps({k: v for k, v in out[name].items() if not isinstance(v, dict)})}")
    out.update(pooled(out.pop("_labels")))
    log(f"  pooled: {json.dumps({k: out[k] for k in ('climate_fever+fever_symmetric', 'all_sets')})}")
    return out


def pooled(labels: dict[str, dict[str, list]]) -> dict[str, Any]:
    """Figures over several sets: ``contradicted`` precision and recall on Climate-FEVER and
    FEVER-Symmetric together, and the expected calibration error over every set."""
    gold: list[str] = []
    pred: list[str] = []
    for name in ("climate_fever", "fever_symmetric"):
        if name in labels:
            gold += labels[name]["gold"]
            pred += labels[name]["pred"]
    conf: list[float] = []
    correct: list[bool] = []
    for name, got in labels.items():
        for g, p, c in zip(got["gold"], got["pred"], got["confidence"], strict=True):
            ok = label_correct(name, g, p)
            if ok is not None:
                conf.append(c)
                correct.append(ok)
    pair_figures = contradiction_figures(gold, pred)
    refuted = [p for g, p in zip(gold, pred, strict=True) if g == "contradicted"]
    pair_figures["refuted_read_supported"] = round(sum(p == "supported" for p in refuted) / max(1, len(refuted)), 4)
    supported_pred = [
        p
        for name in ("wice", "climate_fever", "fever_symmetric")
        if name in labels
        for g, p in zip(labels[name]["gold"], labels[name]["pred"], strict=True)
        if g == "supported"
    ]
    balanced = {}
    for name in ("wice", "attributionbench", "climate_fever", "fever_symmetric"):
        if name in labels:
            got = labels[name]
            balanced[name] = binary_metrics(got["gold"], got["pred"])["balanced_accuracy"]
    return {
        "climate_fever+fever_symmetric": pair_figures,
        "supported_read_contradicted": {
            "n": len(supported_pred),
            "rate": round(sum(p == "contradicted" for p in supported_pred) / max(1, len(supported_pred)), 4),
        },
        "balanced_accuracy": {**balanced, "mean": round(float(np.mean(list(balanced.values()))), 4) if balanced else 0},
        "all_sets": {"n": len(conf), "ece": expected_calibration_error(conf, correct)},
    }


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
    recorder = RecordingJudge(judge, decide_fn=lambda s: decide(s, judge.config, judge.decision))
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
        pairs.append(
            sum(
                len(s.scored_candidates()) + sum(c.scored for _, cands in s.parts for c in cands)
                for s in recorder.sequence
            )
        )
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
    lines.append(
        f"Judge: backend {result['backend']}, dtype {result['dtype']}, torch threads {result['torch_threads']}  "
    )
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
        (
            "mean balanced accuracy: WiCE, AttributionBench, CF, FEVER-Sym (supported vs not)",
            "balanced_accuracy",
            "mean",
        ),
        (
            "gold-supported (WiCE, CF, FEVER-Sym) labelled contradicted (target <= 0.03)",
            "supported_read_contradicted",
            "rate",
        ),
        (
            "CF + FEVER-Sym gold-refuted labelled supported (target <= 0.05)",
            "climate_fever+fever_symmetric",
            "refuted_read_supported",
        ),
        ("WiCE gold-supported labelled contradicted (target <= 0.03)", "wice", "gold_supported_contradicted_rate"),
        ("CF + FEVER-Sym contradicted precision (>= 0.85)", "climate_fever+fever_symmetric", "contradicted_precision"),
        ("CF + FEVER-Sym contradicted recall (>= 0.30)", "climate_fever+fever_symmetric", "contradicted_recall"),
        ("CF + FEVER-Sym contradicted predicted / gold", "climate_fever+fever_symmetric", "contradicted_predicted"),
        ("another claim's page: contradicted (target <= 0.01)", "cross_claim", "contradicted_rate"),
        ("another claim's page: supported (target <= 0.02)", "cross_claim", "supported_rate"),
        ("expected calibration error, all sets", "all_sets", "ece"),
        ("WiCE ECE", "wice", "ece"),
        ("Climate-FEVER ECE", "climate_fever", "ece"),
        ("FEVER-Symmetric ECE (decided pairs)", "fever_symmetric", "ece"),
        ("AttributionBench ECE", "attributionbench", "ece"),
        ("WiCE balanced accuracy (target >= 0.72)", "wice", "balanced_accuracy"),
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
        cells = [str(result["models"][m].get(ds_name, {}).get(key, "")) for m in result["models"]]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    for m, figures in result["models"].items():
        cm = figures["climate_fever"]["confusion_gold_rows_pred_cols"]
        lines += ["", f"Climate-FEVER confusion ({m}; rows gold, columns predicted):", ""]
        lines.append("| gold \\ pred | " + " | ".join(LABELS3) + " |")
        lines.append("| --- |" + " --- |" * 3)
        for g in LABELS3:
            lines.append(f"| {g} | " + " | ".join(str(cm[g][p]) for p in LABELS3) + " |")
    return "\n".join(lines) + "\n"


PREVIOUS_REF = "bc3faa5"
"""The commit whose embedded judge (code and v2 weights) this issue replaces."""


_MADE_PRIVATE = ("fast_tokenizer", "onnx_backend", "bridges")
"""Helpers of ``guardrail`` that a judge of an older commit imports under their names of then."""


def load_previous_judge(ref: str) -> RecordingJudge | None:
    """The embedded judge at ``ref``: its ``guardrail/judges`` package and weights read from git into a
    temporary package (``previous_judges``), wrapped for recording; None (with a note) without git."""
    import importlib
    import subprocess
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="previous_judge_"))
    package = folder / "previous_judges"
    try:
        names = subprocess.run(
            ["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", ref, "guardrail/judges/"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for name in names:
            target = package / name.removeprefix("guardrail/judges/")
            target.parent.mkdir(parents=True, exist_ok=True)
            blob = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{name}"], capture_output=True, check=True)
            data = blob.stdout
            if name.endswith(".py"):
                text = data.decode("utf-8").replace("guardrail.judges.", "previous_judges.")
                text = text.replace("from guardrail.schema import", "from guardrail.core.schema import")
                for private in _MADE_PRIVATE:  # modules renamed since (the old code imports them)
                    text = text.replace(f"from guardrail.{private} import", f"from guardrail._{private} import")
                data = text.replace("from guardrail.judges import", "from previous_judges import").encode("utf-8")
            target.write_bytes(data)
    except (OSError, subprocess.CalledProcessError):
        print(f"note: cannot read the judge at {ref} from git; measuring without it")
        return None
    sys.path.insert(0, str(folder))
    local = importlib.import_module("previous_judges.local")
    judge = local.LocalJudge(model_path=package / "model")
    return RecordingJudge(judge, decide_fn=lambda s: local.decide(s, judge.config))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--model", type=Path, default=None, help="model folder (default: the package's)")
    p.add_argument("--previous-ref", default=PREVIOUS_REF, help="git commit of the judge to compare with")
    p.add_argument("--limit", type=int, default=None, help="first N items per set (quick looks only)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: LocalJudgeConfig.threads)")
    p.add_argument(
        "--rounds",
        type=int,
        choices=(1, 2),
        default=None,
        help="the new judge's LocalJudgeConfig.rounds (default: its default)",
    )
    p.add_argument("--backend", choices=("onnx", "torch"), default=None, help="the new judge's backend (default: auto)")
    add_precision_options(p)
    p.add_argument("--skip-previous", action="store_true", help="measure the new judge and the baseline only")
    p.add_argument(
        "--latency-only", action="store_true", help="only the latency figures (to re-measure on a quiet machine)"
    )
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
    config = LocalJudgeConfig(
        rounds=args.rounds or LocalJudgeConfig.rounds, backend=args.backend or LocalJudgeConfig.backend
    )
    new = LocalJudge(model_path=args.model, config=config, quantize=quantize_choice(args))
    if not LocalJudge.available(args.model):
        print("skipped: the local judge's weights are not installed")
        return 0
    t0 = time.perf_counter()
    new.load()
    load_seconds = round(time.perf_counter() - t0, 2)
    judges: dict[str, Any] = {
        "new": RecordingJudge(new, decide_fn=lambda s: decide(s, new.config, new.decision)),
        "word_overlap": WordOverlapJudge(),
    }
    if not args.skip_previous and (previous := load_previous_judge(args.previous_ref)) is not None:
        judges["previous"] = previous
    result: dict[str, Any] = {
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]),
        "split": "eval part of the by-claim split (training.datasets: sha256 buckets 0-44)",
        "data": str(args.data),
        "sizes": {k: len(v) for k, v in tasks.items()},
        "load_seconds": load_seconds,
        "models": {},
    }
    if args.latency_only:
        judges = {}
        args.out = args.out.with_name(args.out.name + "_latency")
    for name, recorder in judges.items():
        print(f"{name} ({getattr(getattr(recorder, 'inner', None), 'path', recorder.model)}):")
        result["models"][name] = evaluate(recorder, tasks)
        if hasattr(recorder, "inner"):
            config = recorder.inner.config
            result["models"][name]["config"] = {k: v for k, v in config.__dict__.items()}
    result["latency_wice_page"] = latency(new, tasks["wice"])
    result["latency_titanic_grounding"] = grounding_latency(new)
    result["backend"] = new.backend
    # ONNX Runtime runs the exported float32 graph whatever LocalJudgeConfig.dtype says.
    result["dtype"] = new.dtype if new.backend == "torch" else ("int8" if new.quantize else "float32")
    result["torch_threads"] = torch.get_num_threads()
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print("latency per (claim, WiCE page):", result["latency_wice_page"], "load", load_seconds, "s")
    print("check_grounding (Titanic):", result["latency_titanic_grounding"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    md = to_markdown(result)
    args.out.with_suffix(".md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
