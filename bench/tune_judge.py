"""Choose the local judge's thresholds and fit its confidence calibration on the **tune** part.

    python bench/tune_judge.py [--data ../shared/data] [--model DIR] [--cache FILE] [--write FILE]
                               [--floor 0.9] [--limit N]

Never touches the eval part. Steps:

1. Every tune-part item (WiCE, Climate-FEVER, FEVER-Symmetric, AttributionBench, and claims paired
   with another claim's page) runs once through the full verifier path with a recording judge that
   scores every candidate (no early exit) and every part of split claims; the scored requests are
   kept in ``--cache`` (a pickle, reused when present), so thresholds and rules can be re-decided
   without the model.
2. Support: ``support_threshold``, ``part_threshold`` and ``support_min_overlap`` maximise the mean
   of WiCE and AttributionBench balanced accuracy, with at most 2 % ``supported`` on another
   claim's page.
3. Contradiction, precision first: every point of a grid over ``contradict_threshold`` and
   ``conflict_min_contradiction`` (and, with ``model_contradicts`` on, ``contradict_margin`` and
   ``contradict_min_overlap``) is one point
   of the precision/recall curve of ``contradicted`` on Climate-FEVER and FEVER-Symmetric together;
   the chosen point has the highest recall among those with precision at least ``--floor``, at most
   2 % of gold-supported WiCE claims and 0.5 % of another claim's pages ``contradicted``.
4. Calibration: Platt scaling per label (``LocalJudgeConfig.calibration``) fitted on whether each
   label is right (``judge_accuracy.label_correct``).

Prints the chosen values (they go into ``LocalJudgeConfig``'s defaults by hand) and writes them,
the figures and the whole curve to ``--write`` (default ``bench/results/tune_judge.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
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
    contradiction_figures,
    expected_calibration_error,
    label_correct,
    load_tasks,
    make_verifier,
    run_tasks,
)

from guardrail.core.quote_guard import apply_quote_guard
from guardrail.core.schema import JudgeVerdict
from guardrail.judges.decision import NOTHING_RELATED, could_decide
from guardrail.judges.local import LocalJudge, LocalJudgeConfig, Scored, decide

SUPPORT_GRID: dict[str, list[Any]] = {
    "support_threshold": [0.1, 0.2, 0.3, 0.4, 0.5],
    "part_threshold": [0.02, 0.05, 0.1, 0.2, 0.3],
    "support_min_overlap": [0.2, 0.3],
}
CONTRA_GRID: dict[str, list[Any]] = {
    "contradict_threshold": [0.8, 0.9, 0.95, 0.97, 1.01],
    "contradict_margin": [0.5, 0.7],
    "conflict_min_contradiction": [0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01],
    "contradict_min_overlap": [0.5, 0.7],
}
MODEL_FREE = ("contradict_threshold", "conflict_min_contradiction")
"""The contradiction settings that matter when the model alone never contradicts: the negation
flip's bar, and how far the model must agree with a conflict the checks found."""
IDENTITY = (("supported", 1.0, 0.0), ("contradicted", 1.0, 0.0), ("not_found", 1.0, 0.0), (NOTHING_RELATED, 1.0, 0.0))


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


def verdicts(scored: Sequence[Scored], config: LocalJudgeConfig) -> list[JudgeVerdict]:
    """What the verifier would report for each recorded request under ``config``."""
    return [apply_quote_guard(decide(s, config), s.passages) for s in scored]


def figures(recorded: dict[str, list[Scored]], tasks: dict[str, list[Task]], config: LocalJudgeConfig) -> dict:
    """The tuning figures for one configuration."""
    pred = {name: [v.label for v in verdicts(scored, config)] for name, scored in recorded.items()}
    gold = {name: [t.gold for t in tasks[name]] for name in recorded}
    wice = binary_metrics(gold["wice"], pred["wice"])["balanced_accuracy"]
    attribution = binary_metrics(gold["attributionbench"], pred["attributionbench"])["balanced_accuracy"]
    supported = [p for g, p in zip(gold["wice"], pred["wice"], strict=True) if g == "supported"]
    cross = pred["cross_claim"]
    contra = contradiction_figures(
        gold["climate_fever"] + gold["fever_symmetric"], pred["climate_fever"] + pred["fever_symmetric"]
    )
    return {
        "wice_balanced_accuracy": wice,
        "attributionbench_balanced_accuracy": attribution,
        "support_objective": round((wice + attribution) / 2, 4),
        "wice_supported_contradicted": round(sum(p == "contradicted" for p in supported) / max(1, len(supported)), 4),
        "cross_claim_supported": round(sum(p == "supported" for p in cross) / max(1, len(cross)), 4),
        "cross_claim_contradicted": round(sum(p == "contradicted" for p in cross) / max(1, len(cross)), 4),
        **contra,
    }


def tune_support(recorded: dict, tasks: dict, config: LocalJudgeConfig) -> tuple[LocalJudgeConfig, dict]:
    """The support thresholds with the best objective and at most 2 % support on another claim's page."""
    best: tuple[LocalJudgeConfig, dict] | None = None
    for values in itertools.product(*SUPPORT_GRID.values()):
        trial = dataclasses.replace(config, **dict(zip(SUPPORT_GRID, values, strict=True)))
        res = figures(recorded, tasks, trial)
        if res["cross_claim_supported"] > 0.02:
            continue
        if best is None or res["support_objective"] > best[1]["support_objective"] + 1e-9:
            best = (trial, res)
            print("support:", dict(zip(SUPPORT_GRID, values, strict=True)), json.dumps(res), flush=True)
    if best is None:
        raise RuntimeError("no support setting keeps another claim's page under 2 % supported")
    return best


def tune_contradiction(
    recorded: dict, tasks: dict, config: LocalJudgeConfig, floor: float
) -> tuple[LocalJudgeConfig, dict, list[dict]]:
    """The precision/recall curve of the contradiction grid and its chosen point (see the module docs)."""
    curve: list[dict] = []
    chosen: tuple[LocalJudgeConfig, dict] | None = None
    # Without the model-alone path (``model_contradicts``, off by default) only these two matter.
    grid = CONTRA_GRID if config.model_contradicts else {k: CONTRA_GRID[k] for k in MODEL_FREE}
    for values in itertools.product(*grid.values()):
        setting = dict(zip(grid, values, strict=True))
        trial = dataclasses.replace(config, **setting)
        res = figures(recorded, tasks, trial)
        curve.append({"setting": setting, **res})
        ok = (
            (res["contradicted_precision"] or 0.0) >= floor
            and res["wice_supported_contradicted"] <= 0.02
            and res["cross_claim_contradicted"] <= 0.005
        )
        if ok and (chosen is None or (res["contradicted_recall"] or 0.0) > (chosen[1]["contradicted_recall"] or 0.0)):
            chosen = (trial, res)
            print("contradiction:", setting, json.dumps(res), flush=True)
    curve.sort(key=lambda p: (p["contradicted_recall"] or 0.0, p["contradicted_precision"] or 0.0))
    if chosen is None:
        print(f"no contradiction setting reaches precision {floor}; keeping the defaults")
        return config, figures(recorded, tasks, config), curve
    return chosen[0], chosen[1], curve


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def platt(raw: Sequence[float], correct: Sequence[bool]) -> tuple[float, float]:
    """Fit ``sigmoid(a * logit(raw) + b)`` to ``correct``: the least log loss over a grid of
    ``a`` in [0, 4] and ``b`` in [-6, 6] (steps of 0.02), with Platt's smoothed targets
    ((n+ + 1) / (n+ + 2) and 1 / (n- + 2)). Bounded on purpose: where the raw score nearly separates
    right from wrong, or takes one value for most verdicts, Newton's method ran off to a step."""
    x = np.asarray([_logit(r) for r in raw])
    hits = np.asarray(correct, dtype=bool)
    positives, negatives = int(hits.sum()), int((~hits).sum())
    y = np.where(hits, (positives + 1) / (positives + 2), 1 / (negatives + 2))
    a_grid = np.arange(0.0, 4.0001, 0.02)
    b_grid = np.arange(-6.0, 6.0001, 0.02)
    best = (math.inf, 0.0, 0.0)
    for a in a_grid:
        z = np.clip(a * x[None, :] + b_grid[:, None], -30, 30)
        p = 1 / (1 + np.exp(-z))
        loss = -(y * np.log(p) + (1 - y) * np.log(1 - p)).sum(axis=1)
        k = int(loss.argmin())
        if loss[k] < best[0]:
            best = (float(loss[k]), float(a), float(b_grid[k]))
    return round(best[1], 4), round(best[2], 4)


def calibrate(recorded: dict, tasks: dict, config: LocalJudgeConfig) -> tuple[LocalJudgeConfig, dict]:
    """Platt scaling per label on the tune part; returns the calibrated config and the ECE before/after."""
    raw = dataclasses.replace(config, calibration=IDENTITY)
    rows: dict[str, tuple[list[float], list[bool]]] = {
        "supported": ([], []),
        "contradicted": ([], []),
        "not_found": ([], []),
        NOTHING_RELATED: ([], []),
    }
    for name, scored in recorded.items():
        for task, s, verdict in zip(tasks[name], scored, verdicts(scored, raw), strict=True):
            ok = label_correct(name, task.gold, verdict.label)
            if ok is not None and verdict.reason in (None, "partially_supported"):
                related = any(could_decide(s, c, config) for c in s.candidates)
                label = verdict.label if verdict.label != "not_found" or related else NOTHING_RELATED
                rows[label][0].append(verdict.confidence)
                rows[label][1].append(bool(ok))
    params = tuple(_fit(label, *rows[label]) for label in rows)
    tuned = dataclasses.replace(config, calibration=params)  # type: ignore[arg-type]
    report = {
        "params": params,
        "ece_tune_before": ece(recorded, tasks, raw),
        "ece_tune_after": ece(recorded, tasks, tuned),
    }
    return tuned, report


def _fit(label: str, confidence: list[float], correct: list[bool]) -> tuple[str, float, float]:
    """Platt scaling for one label; with fewer than 20 verdicts (too few to rank), or one raw
    score for all, their hit rate as a constant confidence (``a`` = 0); with none, the identity."""
    if len(confidence) >= 20 and len(set(confidence)) > 1:
        return (label, *platt(confidence, correct))
    if not confidence:
        return (label, 1.0, 0.0)
    return (label, 0.0, round(_logit(sum(correct) / len(correct)), 4))


def ece(recorded: dict, tasks: dict, config: LocalJudgeConfig) -> float:
    conf: list[float] = []
    correct: list[bool] = []
    for name, scored in recorded.items():
        for task, verdict in zip(tasks[name], verdicts(scored, config), strict=True):
            ok = label_correct(name, task.gold, verdict.label)
            if ok is not None:
                conf.append(verdict.confidence)
                correct.append(ok)
    return expected_calibration_error(conf, correct)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--write", type=Path, default=ROOT / "bench" / "results" / "tune_judge.json")
    p.add_argument("--cache", type=Path, default=None, help="pickle of the recorded tune part (reused if present)")
    p.add_argument("--floor", type=float, default=0.9, help="least contradicted precision on the tune part")
    p.add_argument("--limit", type=int, default=None)
    args = p.parse_args(argv)
    if not (args.data / "wice_claim_dev.jsonl").is_file():
        print(f"skipped: no labelled data at {args.data}")
        return 0
    tasks = load_tasks(args.data, "tune")
    if args.limit:
        tasks = {k: v[: args.limit] for k, v in tasks.items()}
    print("tune part:", {k: len(v) for k, v in tasks.items()})
    base = LocalJudgeConfig()
    if args.cache and args.cache.is_file():
        recorded = pickle.loads(args.cache.read_bytes())
    else:
        recorder = LocalJudge(
            model_path=args.model, config=dataclasses.replace(base, early_exit=1.01, skip_unrelated=False)
        )
        recorded = record(recorder, tasks)
        if args.cache:
            args.cache.parent.mkdir(parents=True, exist_ok=True)
            args.cache.write_bytes(pickle.dumps(recorded))
    start = figures(recorded, tasks, base)
    print("defaults:", json.dumps(start))
    config, _ = tune_support(recorded, tasks, base)
    config, _, curve = tune_contradiction(recorded, tasks, config, args.floor)
    config, calibration = calibrate(recorded, tasks, config)
    final = figures(recorded, tasks, config)
    chosen = {k: getattr(config, k) for k in [*SUPPORT_GRID, *CONTRA_GRID, "calibration"]}
    print("chosen:", json.dumps(chosen))
    print("tune figures:", json.dumps(final))
    print("calibration:", json.dumps(calibration))
    args.write.parent.mkdir(parents=True, exist_ok=True)
    args.write.write_text(
        json.dumps(
            {
                "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]),
                "split": "tune part (sha256 buckets 45-61)",
                "sizes": {k: len(v) for k, v in tasks.items()},
                "floor": args.floor,
                "defaults_figures": start,
                "config": chosen,
                "figures": final,
                "calibration": calibration,
                "contradiction_pr_curve": curve,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
