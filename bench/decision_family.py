"""Does another kind of classifier decide better than the logistic regression the judge ships?

    python bench/decision_family.py [--model guardrail/judges/model] [--data ../shared/data]
                                    [--cache artifacts/fit] [--precision 0.75]
                                    [--out bench/results/decision_family]

Issue 21 allows "scikit-learn logistic regression or gradient boosting" for the judge's decision.
This fits each candidate on the same feature rows as ``python -m training.fit_decision`` (the
``fit`` and ``tune`` parts with the edited pairs, both views of each request, the same weights,
recorded once per weights in ``--cache``), chooses its thresholds on 5-fold cross-validated
probabilities (folds by claim, ``training.fit_decision.choose_thresholds`` at ``--precision``),
refits it on all those rows and decides:

* the eval part (the real sets, as ``bench/judge_accuracy.py`` reads them: the two-round judge's
  recorded readings, decided as the judge decides at run time; the shipped decision's figures here
  equal that bench's);
* the hand-written cases of ``bench/hand_cases.py`` (wrong caught, wrong passed, right confirmed).

Candidates: the shipped decision as it is (fitted on the features of its day), the logistic
regression refitted on today's features, scikit-learn's ``HistGradientBoostingClassifier``,
``GradientBoostingClassifier`` boosted from the logistic regression's own predictions (``init``),
so that trees only correct the linear model where the rows say so, and the logistic regression
with each weight held to its expected side (``training.fit_decision.expected_signs``). Printed and written to
``--out`` (.json, .md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from hand_cases import written  # noqa: E402

SHOWN = (
    "mean_balanced_accuracy",
    "wice_balanced_accuracy",
    "contradicted_precision",
    "contradicted_recall",
    "contradicted_predicted",
    "supported_read_contradicted",
    "refuted_read_supported",
)
Predict = Callable[[np.ndarray], np.ndarray]
Fitter = Callable[[Sequence[Any]], Predict]


def hist_boosted(depth: int, iterations: int) -> Fitter:
    """Histogram gradient boosting, no early stopping (its held-out split would be by row)."""

    def fitter(rows: Sequence[Any]) -> Predict:
        from sklearn.ensemble import HistGradientBoostingClassifier

        from training import fit_decision as fd

        x, y, w = fd.stacked_views(rows)
        model = HistGradientBoostingClassifier(
            max_depth=depth, max_iter=iterations, learning_rate=0.05, l2_regularization=1.0, early_stopping=False
        ).fit(x, y, sample_weight=w)
        return lambda z: model.predict_proba(np.atleast_2d(z))

    return fitter


def boosted_from_logistic(depth: int, iterations: int, c: float) -> Fitter:
    """Gradient boosting that starts from the logistic regression's predictions (standardised rows)."""

    def fitter(rows: Sequence[Any]) -> Predict:
        from sklearn.ensemble import GradientBoostingClassifier
        from sklearn.linear_model import LogisticRegression

        from training import fit_decision as fd

        x, y, w = fd.stacked_views(rows)
        mean, scale = x.mean(axis=0), np.where(x.std(axis=0) > 1e-6, x.std(axis=0), 1.0)
        model = GradientBoostingClassifier(
            init=LogisticRegression(C=c, max_iter=5000),
            max_depth=depth,
            n_estimators=iterations,
            learning_rate=0.05,
            random_state=0,
        ).fit((x - mean) / scale, y, sample_weight=w)
        return lambda z: model.predict_proba((np.atleast_2d(z) - mean) / scale)

    return fitter


def decided(predict: Predict, rows: Sequence[Any], thresholds: tuple[float, float | None, float]) -> np.ndarray:
    """The labels the two-round judge gives ``rows`` with ``predict`` and ``thresholds`` (contradicted,
    stated conflict, supported)."""
    from guardrail.judges.local_config import LocalJudgeConfig
    from training import fit_decision as fd

    config = LocalJudgeConfig()
    t_con, t_conflict, t_sup = thresholds
    first = predict(np.vstack([r.first for r in rows]))
    full = predict(np.vstack([r.full for r in rows]))
    p = fd.runtime_probabilities(first, full, config.settle, t_con, t_sup, rows, t_conflict, config.settle_none)
    return fd.labels(p, fd._bar(rows, t_con, t_conflict), t_sup)


SIGNED_C = 1.0
"""The strength ``python -m training.fit_decision --signed`` chose by cross-validation (5 December)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python bench/decision_family.py", description=__doc__.split("\n")[0])
    p.add_argument("--model", type=Path, default=ROOT / "guardrail" / "judges" / "model")
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--cache", type=Path, default=ROOT / "artifacts" / "fit")
    p.add_argument("--precision", type=float, default=0.75, help="contradicted precision floor, cross-validated")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "decision_family")
    args = p.parse_args(argv)
    from training import fit_decision as fd

    judge = fd.offline_judge_for_data(args.model, args.data)
    if judge is None:
        return 0
    from hand_cases import CASES, tally

    from guardrail.judges._decision import LABELS, load_decision
    from training.datasets import Task

    t0 = time.time()
    config = judge.config
    fit_rows, eval_rows = fd.recorded_fit_and_eval(judge, args.data, args.cache)
    hand_tasks = [Task(claim, [page], gold, title) for gold, claim, page, title in CASES]
    hand_rows = fd.rows_of({"hand": fd.restated(judge, fd.record(judge, hand_tasks))}, {"hand": hand_tasks})
    hand_gold = [gold for gold, *_ in CASES]

    shipped = load_decision(args.model, 2)
    c = float(json.loads((args.model / "decision_record.json").read_text())["chosen"]["C"])
    candidates: dict[str, Fitter | None] = {
        "shipped logistic regression (as fitted then)": None,
        f"logistic regression refitted (C={c})": fd.logistic_fitter(c),
        "histogram gradient boosting (depth 3, 150 rounds)": hist_boosted(3, 150),
        "histogram gradient boosting (depth 2, 200 rounds)": hist_boosted(2, 200),
        f"gradient boosting from the logistic regression (depth 2, 100 rounds, C={c})": boosted_from_logistic(
            2, 100, c
        ),
        f"signed logistic regression, neutral readings left out (C={SIGNED_C})": fd.logistic_fitter(
            SIGNED_C, signed=True
        ),
    }
    result: dict[str, Any] = {
        "command": "python bench/decision_family.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "weights_sha256_12": fd.weights_digest(args.model),
        "rows": {"fit_and_tune": len(fit_rows), "eval": len(eval_rows), "hand": len(hand_rows)},
        "candidates": {},
    }
    for name, fitter in candidates.items():
        t = time.time()
        entry: dict[str, Any] = {}
        if fitter is None:
            predict: Predict = shipped.probabilities
            thresholds = (shipped.contradict_threshold, shipped.conflict_threshold, shipped.support_threshold)
        else:
            first, full = fd.out_of_fold_with(fitter, fit_rows, 5)
            t_con, t_conflict, t_sup, cv = fd.choose_thresholds(
                first, full, fit_rows, config.settle, args.precision, config.settle_none
            )
            thresholds = (t_con, t_conflict, t_sup)
            entry["cross_validated"] = {k: cv.get(k) for k in SHOWN}
            predict = fitter(fit_rows)
        entry["thresholds"] = dict(zip(("contradicted", "stated_conflict", "supported"), thresholds, strict=True))
        entry["eval"] = {k: fd.figures(eval_rows, decided(predict, eval_rows, thresholds)).get(k) for k in SHOWN}
        hand = [LABELS[i] for i in decided(predict, hand_rows, thresholds)]
        entry["hand_cases"] = tally(hand_gold, hand)
        entry["seconds"] = round(time.time() - t, 1)
        result["candidates"][name] = entry
        print(name, json.dumps(entry), flush=True)
    result["seconds"] = round(time.time() - t0, 1)

    head = "| candidate | part | " + " | ".join(SHOWN) + " |"
    lines = [
        "# The judge's decision: logistic regression against gradient boosting",
        "",
        f"Command: `{result['command'].strip()}`; precision floor {args.precision}; rows: {result['rows']}.",
        "",
        head,
        "| --- " * (2 + len(SHOWN)) + "|",
    ]
    for name, entry in result["candidates"].items():
        for part in ("cross_validated", "eval"):
            if part in entry:
                lines.append(f"| {name} | {part} | " + " | ".join(str(entry[part][k]) for k in SHOWN) + " |")
    lines += [
        "",
        "| candidate | hand cases: wrong caught | wrong passed | right confirmed |",
        "| --- | --- | --- | --- |",
    ]
    for name, entry in result["candidates"].items():
        h = entry["hand_cases"]
        lines.append(
            f"| {name} | {h['wrong_caught']} / {h['wrong_cited']} | {h['wrong_passed']} / {h['wrong']} | "
            f"{h['right_confirmed']} / {h['right']} |"
        )
    return written(args.out, result, "\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
