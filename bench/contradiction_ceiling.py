"""How far a decision over the embedded judge's readings can take ``contradicted``: precision and
recall of every threshold on three scores, on the held-out eval part, against the issue's targets.

    python bench/contradiction_ceiling.py [--model guardrail/judges/model] [--data ../shared/data]
                                          [--cache artifacts/fit] [--against OTHER_MODEL]

The target (issue 21) is ``contradicted`` precision >= 0.85 with recall >= 0.30 on Climate-FEVER
and FEVER-Symmetric together. Each eval claim goes through the verifier as the accuracy bench runs
it, the judge reading its whole budget (``training.fit_decision.recorded_rows``, cached per weights
in ``--cache``). Three scores rank the claims by how contradicted they read:

* ``model``: the model's own highest contradiction probability among everything it read for the
  claim (its page's sentences with their topic, alone, in windows);
* ``decision``: the shipped classifier's probability of ``contradicted``, read as the judge reads it
  at run time (the first round where it settles, else both; support ruled out where a sentence
  states something else in the claim's place);
* ``boosted``: a gradient-boosted classifier (scikit-learn, depth 3) over the same features, fitted
  on the fit and tune parts: what a more flexible decision makes of the same readings.

For each, every threshold is tried on the eval part itself (so the figures are a ceiling, not an
estimate): the best precision at recall >= 0.30, the best recall at precision >= 0.85, and the
average precision, pooled and per set. The word-overlap rule never says ``contradicted`` (recall 0).
The same for WiCE's ``supported`` (best balanced accuracy over every threshold; target 0.72) on the
model's highest entailment, the classifier's P(supported) and the boosted one's; and at the
decision's own threshold, with a 95 % bootstrap interval over the claims (140 WiCE claims: about
+-0.075). ``--against OTHER_MODEL`` compares two weights, each with its fitted decision, on the
same claims: the differences with paired bootstrap intervals (``--draws``, default 2000), so that
a change between close variants is told from noise.
Written to ``bench/results/contradiction_ceiling.json`` and ``.md``. Skips with a message when the
data folder is absent.
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

TARGET_PRECISION = 0.85
TARGET_RECALL = 0.30
SETS = ("climate_fever", "fever_symmetric")


def curve_figures(
    score: Sequence[float] | np.ndarray,
    positive: Sequence[bool] | np.ndarray,
    precision: float = TARGET_PRECISION,
    recall: float = TARGET_RECALL,
) -> dict[str, Any]:
    """Over every threshold on ``score`` (flagging the items scoring at or above it): the best
    precision among thresholds reaching ``recall``, the best recall among those reaching
    ``precision`` (at least 5 flagged), and the average precision. None where none reaches it."""
    s = np.asarray(score, dtype=np.float64)
    y = np.asarray(positive, dtype=bool)
    if len(s) != len(y):
        raise ValueError(f"{len(s)} scores for {len(y)} labels")
    total = int(y.sum())
    if total == 0:
        raise ValueError("no positive item: precision and recall are undefined")
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    last_of_tie = np.r_[s[1:] != s[:-1], True]  # a threshold flags every item of equal score
    tp = np.cumsum(y)[last_of_tie]
    flagged = (np.arange(len(s)) + 1)[last_of_tie]
    prec = tp / flagged
    rec = tp / total
    at_recall = prec[rec >= recall]
    at_precision = rec[(prec >= precision) & (flagged >= 5)]
    gains = np.diff(np.r_[0.0, rec])
    return {
        "positives": total,
        "precision_at_recall": round(float(at_recall.max()), 4) if at_recall.size else None,
        "recall_at_precision": round(float(at_precision.max()), 4) if at_precision.size else None,
        "average_precision": round(float((gains * prec).sum()), 4),
    }


def best_balanced_accuracy(score: Sequence[float] | np.ndarray, positive: Sequence[bool] | np.ndarray) -> float:
    """The best balanced accuracy of "positive when the score is at or above a threshold" over
    every threshold (and none flagged)."""
    s = np.asarray(score, dtype=np.float64)
    y = np.asarray(positive, dtype=bool)
    if len(s) != len(y) or not y.any() or y.all():
        raise ValueError("balanced accuracy needs as many scores as labels, and both classes")
    best = 0.5
    for t in np.unique(s):
        best = max(best, balanced_accuracy(s >= t, y))
    return round(best, 4)


def balanced_accuracy(flagged: Sequence[bool] | np.ndarray, positive: Sequence[bool] | np.ndarray) -> float:
    """Mean of the recall of positives and of negatives (0.5 where a draw lacks one class)."""
    f = np.asarray(flagged, dtype=bool)
    y = np.asarray(positive, dtype=bool)
    if not y.any() or y.all():
        return 0.5
    return (float(f[y].mean()) + float((~f[~y]).mean())) / 2


def bootstrap_interval(
    statistic: Callable[[np.ndarray], float], items: int, draws: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of ``statistic(indices)`` over ``draws`` resamplings of
    ``items`` items with replacement (by claim: a paired comparison passes one statistic that reads
    both models on the same indices)."""
    if items < 2 or draws < 1:
        raise ValueError("a bootstrap needs at least two items and one draw")
    rng = np.random.default_rng(seed)
    values = [statistic(rng.integers(0, items, items)) for _ in range(draws)]
    low, high = np.percentile(values, [2.5, 97.5])
    return round(float(low), 4), round(float(high), 4)


def shipped_readings(evaluated: Sequence[Any], decision: Any) -> dict[str, Any]:
    """What ``decision`` (fitted for the weights that recorded ``evaluated``, the eval part's rows)
    says at its own thresholds: WiCE claims read supported, and P(contradicted) on Climate-FEVER +
    FEVER-Symmetric (the full budget's features, without the first-round settling), keyed by claim."""
    wice = [r for r in evaluated if r.dataset == "wice"]
    rows = [r for r in evaluated if r.dataset in SETS]
    return {
        "keys": [(r.dataset, r.claim, r.gold) for r in wice + rows],
        "wice_gold": np.asarray([r.gold == 0 for r in wice]),
        "wice_flagged": decision.probabilities(np.vstack([r.full for r in wice]))[:, 0] >= decision.support_threshold,
        "gold_contradicted": np.asarray([r.gold == 1 for r in rows]),
        "contradicted": decision.probabilities(np.vstack([r.full for r in rows]))[:, 1],
    }


def paired_comparison(this: dict[str, Any], other: dict[str, Any], draws: int = 2000) -> dict[str, Any]:
    """This model's figures minus the other's on the same eval claims, each with a paired 95 %
    bootstrap interval: WiCE balanced accuracy at each decision's own threshold, and the average
    precision of each decision's P(contradicted), pooled."""
    if this["keys"] != other["keys"]:
        raise ValueError("the two models were recorded on different eval claims: compare the same data")
    y = this["wice_gold"]

    def wice(i: np.ndarray) -> float:
        return balanced_accuracy(this["wice_flagged"][i], y[i]) - balanced_accuracy(other["wice_flagged"][i], y[i])

    c = this["gold_contradicted"]

    def precision(i: np.ndarray) -> float:
        if not c[i].any():
            return 0.0
        return float(
            curve_figures(this["contradicted"][i], c[i])["average_precision"]
            - curve_figures(other["contradicted"][i], c[i])["average_precision"]
        )

    return {
        "wice_balanced_accuracy_difference": round(wice(np.arange(len(y))), 4),
        "wice_interval_95": bootstrap_interval(wice, len(y), draws),
        "wice_claims_read_differently": int((this["wice_flagged"] != other["wice_flagged"]).sum()),
        "contradicted_average_precision_difference": round(precision(np.arange(len(c))), 4),
        "contradicted_interval_95": bootstrap_interval(precision, len(c), draws),
    }


def _boosted(train: Sequence[Any]) -> Any:
    """A gradient-boosted classifier (P(supported), P(contradicted), P(not_found)) fitted on
    ``train`` as ``training.fit_decision`` fits its logistic one (both views, the same weights)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from training import fit_decision as fd

    x = np.vstack([np.vstack([r.first for r in train]), np.vstack([r.full for r in train])])
    y = np.asarray([r.gold for r in train] * 2)
    w = np.concatenate([fd._weights(train)] * 2)
    return HistGradientBoostingClassifier(
        max_iter=300, learning_rate=0.03, max_depth=3, min_samples_leaf=60, random_state=0
    ).fit(x, y, sample_weight=w)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python bench/contradiction_ceiling.py", description=__doc__.split("\n")[0])
    p.add_argument("--model", type=Path, default=ROOT / "guardrail" / "judges" / "model")
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--cache", type=Path, default=ROOT / "artifacts" / "fit")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "contradiction_ceiling")
    p.add_argument(
        "--against",
        type=Path,
        default=None,
        help="another model folder (with its fitted decision): the differences, with paired 95%% intervals",
    )
    p.add_argument("--draws", type=int, default=2000, help="bootstrap resamplings of the eval claims")
    args = p.parse_args(argv)
    if args.draws < 1:
        p.error(f"--draws must be at least 1, not {args.draws}")
    if args.against is not None and not (args.against / "decision.json").is_file():
        p.error(f"--against {args.against} has no decision.json: fit one (python -m training.fit_decision --model ...)")
    from training import fit_decision as fd

    judge = fd.offline_judge_for_data(args.model, args.data)
    if judge is None:
        return 0
    from guardrail.judges._decision import load_decision
    from guardrail.judges._features import REQUEST_FEATURES
    from guardrail.judges.local import LocalJudge

    t0 = time.time()
    config = judge.config
    digest = fd.weights_digest(args.model)
    train, evaluated = fd.recorded_fit_and_eval(judge, args.data, args.cache)
    rows = [r for r in evaluated if r.dataset in SETS]
    wice = [r for r in evaluated if r.dataset == "wice"]
    decision = load_decision(args.model, config.rounds)
    first = decision.probabilities(np.vstack([r.first for r in rows]))
    full = decision.probabilities(np.vstack([r.full for r in rows]))
    runtime = fd.runtime_probabilities(
        first,
        full,
        config.settle,
        decision.contradict_threshold,
        decision.support_threshold,
        rows,
        decision.conflict_threshold,
        config.settle_none,
    )
    boosted = _boosted(train)
    scores = {
        "model": np.asarray([r.full[REQUEST_FEATURES.index("max_con")] for r in rows]),
        "decision": runtime[:, 1],
        "boosted": boosted.predict_proba(np.vstack([r.full for r in rows]))[:, 1],
    }
    supported = np.asarray([r.gold == 0 for r in wice])
    wice_full = np.vstack([r.full for r in wice])
    wice_scores = {
        "model": wice_full[:, REQUEST_FEATURES.index("max_ent")],
        "decision": decision.probabilities(wice_full)[:, 0],
        "boosted": boosted.predict_proba(wice_full)[:, 0],
    }
    positive = np.asarray([r.gold == 1 for r in rows])
    sets = np.asarray([r.dataset for r in rows])
    figures: dict[str, Any] = {}
    for name, score in scores.items():
        figures[name] = {"pooled": curve_figures(score, positive)}
        for s in SETS:
            figures[name][s] = curve_figures(score[sets == s], positive[sets == s])
    shipped = shipped_readings(evaluated, decision)
    wice_at_threshold: dict[str, Any] = {
        "balanced_accuracy": round(balanced_accuracy(shipped["wice_flagged"], supported), 4),
        "interval_95": bootstrap_interval(
            lambda i: balanced_accuracy(shipped["wice_flagged"][i], supported[i]), len(supported), args.draws
        ),
    }
    against: dict[str, Any] | None = None
    if args.against is not None:
        other_judge = LocalJudge(model_path=args.against, config=config)
        other_rows = fd.recorded_rows(
            other_judge, args.data, "eval", args.cache, fd.weights_digest(args.against), synthetic=False
        )
        other = shipped_readings(other_rows, load_decision(args.against, config.rounds))
        against = {"model": str(args.against), **paired_comparison(shipped, other, args.draws)}
    result: dict[str, Any] = {
        "command": "python bench/contradiction_ceiling.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "weights_sha256_12": digest,
        "target": {"precision": TARGET_PRECISION, "recall": TARGET_RECALL},
        "eval_claims": {s: int((sets == s).sum()) for s in SETS},
        "gold_contradicted": {s: int(positive[sets == s].sum()) for s in SETS},
        "figures": figures,
        "wice_best_balanced_accuracy": {k: best_balanced_accuracy(v, supported) for k, v in wice_scores.items()},
        "wice_at_the_decisions_threshold": wice_at_threshold,
        "against": against,
        "seconds": round(time.time() - t0, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        "# How far a decision can take `contradicted` (eval part, thresholds tried on it: a ceiling)",
        "",
        f"Command: `{result['command'].strip()}`  ",
        f"Weights: {digest}; eval claims {result['eval_claims']}, gold contradicted {result['gold_contradicted']}",
        "",
        "| score | set | best precision at recall >= 0.30 | best recall at precision >= 0.85 | average precision |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, per_set in figures.items():
        for s, f in per_set.items():
            lines.append(
                f"| {name} | {s} | {f['precision_at_recall']} | {f['recall_at_precision']} | {f['average_precision']} |"
            )
    lines += [
        "",
        f"WiCE ({len(wice)} eval claims), best balanced accuracy of `supported` over every threshold"
        " (target 0.72; the shipped decision has one threshold, chosen on the tune part):",
        "",
        "| score | best balanced accuracy |",
        "| --- | --- |",
        *(f"| {k} | {v} |" for k, v in result["wice_best_balanced_accuracy"].items()),
        "",
        f"At the decision's own support threshold (full budget, no first-round settling): WiCE balanced"
        f" accuracy {wice_at_threshold['balanced_accuracy']}, 95 % bootstrap interval over the claims"
        f" {list(wice_at_threshold['interval_95'])}.",
    ]
    if against is not None:
        lines += [
            "",
            f"Against `{against['model']}` on the same claims (this minus that, paired 95 % bootstrap intervals):",
            "",
            "| figure | difference | interval |",
            "| --- | --- | --- |",
            f"| WiCE balanced accuracy at each decision's threshold ({against['wice_claims_read_differently']}"
            f" claims read differently) | {against['wice_balanced_accuracy_difference']}"
            f" | {list(against['wice_interval_95'])} |",
            f"| pooled `contradicted` average precision of each decision | "
            f"{against['contradicted_average_precision_difference']} | {list(against['contradicted_interval_95'])} |",
        ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
