"""Fit the local judge's decision: a calibrated classifier over the model's scores and the checks.

    python -m training.fit_decision [--model guardrail/judges/model] [--data ../shared/data]
                                    [--cache artifacts/fit] [--precision 0.85] [--no-synthetic]
                                    [--rounds 1] [--int8] [--signed] [--backend torch]
                                    [--written PAIRS.json]

1. Every claim of the ``fit`` part (train buckets the model never saw, ``training.datasets``) and of
   the ``tune`` part goes through the verifier as the benches run it (evidence as a ``Fact`` with
   its title -> passages -> retrieval -> the local judge), the judge reading the *whole* budget of
   every request; the scored candidates are kept (``--cache``, per model).
2. Each request gives two rows of features (:func:`guardrail.judges._features.request_features`):
   what the first round alone shows, and what both rounds show, so the classifier decides either.
3. scikit-learn's multinomial logistic regression (each set weighing the same, classes balanced)
   is fitted and chosen by cross-validation over the ``fit`` and ``tune`` rows together, folds by
   claim (the fit part alone holds about 80 contradictions, too few for the contradiction
   threshold): for each regularisation strength of ``--c-grid``, the out-of-fold probabilities,
   deciding as the judge does at run time (``--rounds``, default ``LocalJudgeConfig.rounds``: with
   two, the first round, then the second where the first did not settle; with one, the first round
   alone, on which the classifier is then fitted too), give the contradiction threshold (the lowest
   with ``contradicted`` precision of at least ``--precision`` on Climate-FEVER + FEVER-Symmetric
   and at most 3 % of supported claims read contradicted) and the support threshold (the best mean
   balanced accuracy over the sets with at most 5 % of refuted claims and 2 % of another claim's
   pages read supported). The strength with the best cross-validated score wins and is refitted
   on all those rows; the confidence of each label is Platt-scaled on its cross-validated
   decisions (the balanced class weights skew the classifier's own probabilities).
4. The classifier, thresholds and a record of the figures are written to
   ``<model>/decision.json`` (what the judge loads) and ``<model>/decision_record.json``; with
   ``--rounds 1``, ``decision_one_round.json`` and ``decision_record_one_round.json`` (what the
   judge loads for ``LocalJudgeConfig(rounds=1)``). ``--int8`` records and fits the int8-quantised
   graph's readings (their own cache records) and writes ``decision*_int8.json``, which the judge
   does not read: int8 costs accuracy (README, the int8 fast-path row).

Options tried on 5 December 2026 and not shipped (README, "The embedded judge"): ``--signed`` holds
each feature's weight to the side a reader expects (:func:`expected_signs`) and leaves the neutral
readings out; ``--written`` adds written claim/page pairs (:func:`written_tasks`) with the edited
pairs' weight. ``--backend torch`` records torch's readings (bfloat16 where the CPU has it) apart
from ONNX Runtime's. The record names the commit the fitting ran on and what read the pairs.

The eval part is never looked at here: ``python bench/judge_accuracy.py`` reports it.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import os
import pickle
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from training.datasets import Part

LABEL_OF_GOLD = {"supported": 0, "contradicted": 1, "not_found": 2, "not_supported": 2}
"""Gold labels as classifier classes (``decision.LABELS`` order); binary sets' not_supported is not_found."""


@dataclasses.dataclass
class Row:
    """One recorded request: its set, gold class, and its two feature views."""

    dataset: str
    gold: int
    first: np.ndarray
    full: np.ndarray
    claim: str = ""


class _NoFetch:
    name = "none"

    async def fetch_all(self, urls: Sequence[str], memo: Any = None) -> dict[str, Any]:
        raise RuntimeError("the decision's fitting fetches nothing")


class RecordingJudge:
    """The local judge reading every request's whole budget, keeping each scored request in order."""

    name = "local"
    cpu_bound = True

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sequence: list[Any] = []

    @property
    def model(self) -> str:
        return str(self.inner.model)

    def load(self) -> None:
        self.inner.load()

    async def judge(self, requests: Sequence[Any]) -> list[Any]:
        from guardrail.core.schema import JudgeVerdict

        scored = await asyncio.to_thread(self.inner.score, requests, rounds=2, settle=False)
        self.sequence.extend(scored)
        return [JudgeVerdict(label="not_found", confidence=0.0) for _ in scored]


def record(judge: Any, tasks: Sequence[Any], chunk: int = 64) -> list[Any]:
    """The scored request of every task (one evidence each), in task order, through the verifier."""
    from guardrail import ClaimTask, Fact, Settings, Verifier
    from guardrail.core.text import normalize_text

    recorder = RecordingJudge(judge)
    # A chunk is one long call on a busy machine, not a user's request: no 100 s deadline.
    settings = Settings(deadline=7 * 24 * 3600.0)
    verifier = Verifier(judge=recorder, fetcher=_NoFetch(), settings=settings)  # type: ignore[arg-type]
    out: list[Any] = []
    for start in range(0, len(tasks), chunk):
        part = tasks[start : start + chunk]
        recorder.sequence.clear()
        claim_tasks = [ClaimTask(t.claim, [Fact(e, title=t.title) for e in t.evidence]) for t in part]
        asyncio.run(verifier.averify_many(claim_tasks))
        if len(recorder.sequence) != len(part):
            raise RuntimeError(f"{len(recorder.sequence)} requests judged for {len(part)} tasks")
        for t, s in zip(part, recorder.sequence, strict=True):
            if s.claim != normalize_text(t.claim.strip()):
                raise RuntimeError("judged requests out of task order")
        out.extend(recorder.sequence)
    return out


def restated(judge: Any, scored: list[Any]) -> list[Any]:
    """Recorded requests with their restatements read (a record made before restatements has none:
    reading them is a few model pairs, where re-recording is every candidate)."""
    for s in scored:
        if "restated" not in vars(s):
            s.restated = {}
    judge.restate(scored)
    return scored


def synthetic_tasks(data: Path, part: str, seed: int = 7, limit: int = 1200) -> list[Any]:
    """Edited pairs of ``part`` (``training.contrastive``'s edits of its supported pairs, which the
    model never saw) as tasks: the pair itself (supported), one contradiction edit (a name, number,
    direction word, role or negation changed), and the claim as a study's aim or with a clause
    added (not_found). The decision learns from them what the words say where real pairs are few
    (a role swap, a direction flipped); the thresholds are chosen on the real sets alone."""
    import random

    from training import contrastive as cx
    from training.datasets import Task

    rng = random.Random(seed)
    sources = [s for s in cx.supported_sources(data, part) if len(s.evidence.split()) <= 80]
    rng.shuffle(sources)
    out: list[Any] = []
    kinds = ["direction", "role", "entity", "number", "negation", "evidence_negation", "unit", "month"]
    for src in sources[:limit]:
        out.append(Task(src.claim, [src.evidence], "supported", src.topic))
        for kind in rng.sample(kinds, len(kinds)):
            hit = cx._contradiction(kind, src, rng)
            if hit is not None:
                out.append(Task(hit[0], [hit[1]], "contradicted", src.topic))
                break
        if rng.random() < 0.5 and (aim := cx.aim_sentence(src.claim, rng)) is not None:
            out.append(Task(src.claim, [aim], "not_found"))
        else:
            other = sources[rng.randrange(len(sources))].claim
            added = cx.augment.add_clause(src.claim, other) if other != src.claim else None
            if added:
                out.append(Task(added, [src.evidence], "not_found", src.topic))
    return out


def read_written_pairs(path: Path) -> list[dict[str, Any]]:
    """The claim/page pairs of a written file: a JSON list of ``{"claim", "page", "title", "gold",
    "kind"}`` (gold ``supported``, ``contradicted`` or ``not_found``; title and kind optional), or
    an object holding that list as ``"cases"`` (the benches' probe files). A malformed pair raises
    ``ValueError`` naming its file and index."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    items = data.get("cases") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a JSON list of claim/page pairs")
    for i, item in enumerate(items):
        gold = item.get("gold") if isinstance(item, dict) else None
        if gold not in ("supported", "contradicted", "not_found") or not all(
            isinstance(item.get(k), str) and item[k].strip() for k in ("claim", "page")
        ):
            raise ValueError(
                f"{path}[{i}]: needs a claim, a page and a gold label (supported, contradicted, not_found)"
            )
    return items


def written_tasks(paths: Sequence[Path]) -> list[Any]:
    """The pairs of the written files ``paths`` (:func:`read_written_pairs`) as tasks, written for
    the fitting (kinds the real sets hold few of: a study's null result, its aim or background
    quoted as its finding)."""
    from training.datasets import Task

    return [
        Task(item["claim"], [item["page"]], item["gold"], item.get("title") or None)
        for path in paths
        for item in read_written_pairs(path)
    ]


def _files_digest(paths: Sequence[Path]) -> str:
    """The first 8 hex digits of the sha256 of the files' contents, in order."""
    h = hashlib.sha256()
    for path in paths:
        h.update(Path(path).read_bytes())
    return h.hexdigest()[:8]


def first_round_view(scored: Any) -> Any:
    """The request as the first round alone leaves it (later candidates unread)."""
    cands = [dataclasses.replace(c, scored=c.scored and i < scored.round_one) for i, c in enumerate(scored.candidates)]
    return dataclasses.replace(scored, candidates=cands, parts=[])


def rows_of(recorded: dict[str, list[Any]], tasks: dict[str, list[Any]]) -> list[Row]:
    """Feature rows of every recorded request."""
    from guardrail.judges._features import request_features

    rows = []
    for name, scored_list in recorded.items():
        for task, scored in zip(tasks[name], scored_list, strict=True):
            first = request_features(first_round_view(scored))[0]
            full = request_features(scored)[0]
            rows.append(Row(name, LABEL_OF_GOLD[task.gold], first, full, task.claim))
    return rows


SYNTHETIC_WEIGHT = 0.5
"""The edited pairs weigh half of one real set: enough to teach the rare cases, not to set the odds."""

MADE_SETS = ("synthetic", "written")
"""Sets made for the fitting (edited pairs, ``--written`` pairs): they teach the classifier, but the
thresholds and the calibration are chosen on the real sets alone."""


def _weights(rows: Sequence[Row]) -> np.ndarray:
    """Each real set weighs the same in all (the edited pairs :data:`SYNTHETIC_WEIGHT` of one);
    within the whole, classes are balanced."""
    per_set = Counter(r.dataset for r in rows)
    w = np.asarray([(SYNTHETIC_WEIGHT if r.dataset in MADE_SETS else 1.0) / per_set[r.dataset] for r in rows])
    classes = np.asarray([r.gold for r in rows])
    for c in range(3):
        mask = classes == c
        if mask.any():
            w[mask] *= 1.0 / w[mask].sum()
    return w / w.mean()


def stacked_views(rows: Sequence[Row]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both views of ``rows`` as one matrix (first rounds, then both rounds), their classes and
    their weights (:func:`_weights`): what a decision is fitted on."""
    x = np.vstack([np.vstack([r.first for r in rows]), np.vstack([r.full for r in rows])])
    return x, np.asarray([r.gold for r in rows] * 2), np.concatenate([_weights(rows)] * 2)


def fit(rows: Sequence[Row], c: float, signed: bool = False) -> Any:
    """Standardise and fit a multinomial logistic regression on both views of ``rows``:
    scikit-learn's, unconstrained, or with ``signed`` each feature's weight held to the side a
    reader expects (:func:`expected_signs`, :class:`SignedLogistic`) and the neutral readings
    left out."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from guardrail.judges._features import REQUEST_FEATURES

    x, y, w = stacked_views(rows)
    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 1e-6, scaler.scale_, 1.0)
    z = (x - scaler.mean_) / scale
    if signed:
        # A neutral reading is what the other two leave (1 - entailment - contradiction): weighed
        # against support, it lets "the model read something strongly" raise support whatever was
        # read, around the signs (fitted with it, its weight took -0.53 and the others' went to 0).
        z[:, [i for i, name in enumerate(REQUEST_FEATURES) if "_neu_" in name]] = 0.0
        return scaler.mean_, scale, SignedLogistic(c, expected_signs(REQUEST_FEATURES)).fit(z, y, w)
    return scaler.mean_, scale, LogisticRegression(C=c, max_iter=5000).fit(z, y, sample_weight=w)


_READS_ENTAILMENT = ("_ent_",)
_READS_OTHERWISE = ("_con_", "_neu_")
_STATES_CONFLICT = ("_conflict", "_substituted", "_flip", "_swap", "_other_rank", "_restated")
_SAYS_THE_CLAIM = ("_overlap", "_bigrams", "_parts_covered", "_subject_named", "_subject_by_reference")
_LACKS = ("_missing", "_lacks_")


def expected_signs(features: Sequence[str]) -> np.ndarray:
    """Per feature, the side its weight must keep in the log-odds of ``supported`` (column 0) and
    of ``contradicted`` (column 1) against ``not_found``: +1, -1, or 0 for either side.

    An entailment reading never lowers support nor raises contradiction; a contradiction or
    neutral reading, or a stated conflict (another value, name, direction, role), never raises
    support; a contradiction reading or a stated conflict never lowers contradiction. Of the
    sentence read as the support: the claim's words in it and its being about the claim's subject
    never lower support, a value of the claim's missing from it or its being about something else
    never raise it; of the page, the claim's words on it never lower support and a missing value
    never raises it. A contradicting sentence about something else never raises contradiction.
    What no reader would call one way (ranks, the claim's length or denial) is free.

    Fitted freely, collinear readings take either side: in the shipped decision the contradicting
    window's contradiction raises the log-odds of support by 0.67 and a number of the claim's
    missing from the supporting sentence by 0.35, so a page whose sentence denies the claim outright
    ("Mandela declined to seek a second presidential term") reads ``supported`` at 0.87; fitted
    signed, ``not_found``."""
    out = np.zeros((len(features), 2), dtype=np.int8)
    for i, feature in enumerate(features):
        name = f"_{feature}_"  # "_max_ent_" holds "_ent_"; a suffix such as "_overlap_" is found too
        if any(k in name for k in _READS_ENTAILMENT):
            out[i] = (1, -1)
        elif any(k in name for k in _READS_OTHERWISE):
            out[i] = (-1, 1 if "_con_" in name else 0)
        elif any(k in name for k in _STATES_CONFLICT):
            out[i] = (-1, 1)
        elif feature.startswith("contra_"):
            out[i] = (0, -1 if "_subject_elsewhere" in name else 0)
        elif any(k in name for k in _SAYS_THE_CLAIM):
            out[i] = (1, 0)
        elif any(k in name for k in _LACKS) or "_subject_elsewhere" in name:
            out[i] = (-1, 0)
    return out


class SignedLogistic:
    """A multinomial logistic regression (``not_found`` the reference class) whose weights keep
    given signs, fitted by L-BFGS-B with box bounds: weighted cross-entropy plus ``||W||^2 / (2C)``,
    as scikit-learn's ``LogisticRegression(C)`` penalises. ``coef_`` and ``intercept_`` have
    scikit-learn's shapes (3 classes; the reference row is zero)."""

    def __init__(self, c: float, signs: np.ndarray) -> None:
        self.c = c
        self.signs = np.asarray(signs)

    def fit(self, x: np.ndarray, y: np.ndarray, w: np.ndarray) -> SignedLogistic:
        from scipy.optimize import minimize

        n, f = x.shape
        free = (0, 1)  # supported, contradicted; not_found (2) is the reference
        onehot = np.eye(3)[y][:, free]

        def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
            coef = theta[: 2 * f].reshape(2, f)
            logits = np.column_stack([x @ coef.T + theta[2 * f :], np.zeros(n)])
            top = logits.max(axis=1, keepdims=True)
            log_norm = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
            p = np.exp(logits[:, :2] - log_norm[:, None])
            value = float(
                (w * (log_norm - (logits[:, :2] * onehot).sum(axis=1))).sum() + (coef**2).sum() / (2 * self.c)
            )
            residual = w[:, None] * (p - onehot)
            grad = np.concatenate([(residual.T @ x + coef / self.c).ravel(), residual.sum(axis=0)])
            return value, grad

        bounds = [(0.0, None) if s > 0 else (None, 0.0) if s < 0 else (None, None) for s in self.signs.T.ravel()] + [
            (None, None)
        ] * 2
        result = minimize(
            loss, np.zeros(2 * f + 2), jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 5000}
        )
        coef = result.x[: 2 * f].reshape(2, f)
        self.coef_ = np.vstack([coef, np.zeros(f)])
        self.intercept_ = np.concatenate([result.x[2 * f :], [0.0]])
        return self


def to_decision(mean: np.ndarray, scale: np.ndarray, model: Any, t_con: float, t_sup: float) -> Any:
    from guardrail.judges._decision import DecisionModel
    from guardrail.judges._features import REQUEST_FEATURES

    return DecisionModel(
        features=REQUEST_FEATURES,
        mean=np.asarray(mean, dtype=np.float64),
        scale=np.asarray(scale, dtype=np.float64),
        coef=np.asarray(model.coef_, dtype=np.float64),
        intercept=np.asarray(model.intercept_, dtype=np.float64),
        contradict_threshold=t_con,
        support_threshold=t_sup,
    )


def _stated(rows: Sequence[Row], view: str = "full") -> np.ndarray:
    """Whether each row's contradicting sentence states a conflict about the claim's subject."""
    from guardrail.judges._features import REQUEST_FEATURES

    k = REQUEST_FEATURES.index("contra_conflict_about_subject")
    return np.asarray([getattr(r, view)[k] > 0.5 for r in rows])


def _bar(rows: Sequence[Row], t_con: float, t_conflict: float | None, view: str = "full") -> np.ndarray:
    return np.where(_stated(rows, view), t_con if t_conflict is None else t_conflict, t_con)


def _support_ruled_out(p: np.ndarray, rows: Sequence[Row], view: str) -> np.ndarray:
    """``p`` with support ruled out (:func:`guardrail.judges._decision.rule_out_support`) on the rows
    whose ``view`` features show a support conflict (:func:`guardrail.judges._decision.support_conflicts`)."""
    from guardrail.judges._decision import rule_out_support, support_conflicts

    x = np.vstack([getattr(r, view) for r in rows])
    return np.where(support_conflicts(x)[:, None], rule_out_support(p), p)


def runtime_probabilities(
    first: np.ndarray,
    full: np.ndarray,
    settle: float,
    t_con: float,
    t_sup: float,
    rows: Sequence[Row],
    t_conflict: float | None = None,
    settle_none: float = 0.0,
) -> np.ndarray:
    """Each row's probabilities as the judge gets them: the first round's, when they settle the
    request (:func:`settled_rows`), else both rounds'; a support ruled out
    (:func:`guardrail.judges._decision.support_conflicts`) has its share given to the other two
    labels (:func:`guardrail.judges._decision.rule_out_support`), a support withheld
    (:func:`_support_withheld`) to ``not_found``."""
    full = _support_ruled_out(full, rows, "full")
    settled, first = settled_rows(first, settle, t_con, t_sup, rows, t_conflict, settle_none)
    return _support_withheld(np.where(settled[:, None], first, full), rows, settled)


def _support_withheld(p: np.ndarray, rows: Sequence[Row], settled: np.ndarray) -> np.ndarray:
    """``p`` with support's share given to ``not_found`` on the rows whose page also says otherwise
    about the claim's subject (:func:`guardrail.judges._decision.withheld_support`, on the view each
    row is decided on): ``decide`` gives those ``not_found`` where it would give ``supported``."""
    from guardrail.judges._decision import withheld_support

    x = np.where(settled[:, None], np.vstack([r.first for r in rows]), np.vstack([r.full for r in rows]))
    q = np.array(p, dtype=np.float64, copy=True)
    hit = withheld_support(x)
    q[hit, 2] += q[hit, 0]
    q[hit, 0] = 0.0
    return q


def settled_rows(
    first: np.ndarray,
    settle: float,
    t_con: float,
    t_sup: float,
    rows: Sequence[Row],
    t_conflict: float | None = None,
    settle_none: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Which rows the first round settles, as :func:`guardrail.judges._decision.settled` rules
    (support or contradiction at least ``settle``, or both below ``settle_none``), and the first
    round's probabilities with any support ruled out."""
    first = _support_ruled_out(first, rows, "first")
    bar_first = np.maximum(settle, _bar(rows, t_con, t_conflict, "first"))
    settled = (first[:, 0] >= max(settle, t_sup)) | (first[:, 1] >= bar_first)
    settled |= np.maximum(first[:, 0], first[:, 1]) < settle_none
    return settled, first


def labels(p: np.ndarray, t_con: float | np.ndarray, t_sup: float) -> np.ndarray:
    """Decide as :func:`guardrail.judges._decision.decide` does: 0 supported, 1 contradicted, 2 not_found
    (``t_con``: one threshold, or one per row)."""
    out = np.full(len(p), 2)
    sup = p[:, 0] >= t_sup
    out[sup] = 0
    con = (p[:, 1] >= t_con) & (p[:, 1] >= p[:, 0])
    out[con] = 1
    return out


def figures(rows: Sequence[Row], pred: np.ndarray) -> dict[str, Any]:
    """The figures the thresholds are chosen by (and the record shows)."""
    gold = np.asarray([r.gold for r in rows])
    sets = np.asarray([r.dataset for r in rows])
    out: dict[str, Any] = {}
    bal = []
    for name in ("wice", "attributionbench", "climate_fever", "fever_symmetric"):
        m = sets == name
        if not m.any():
            continue
        pos = gold[m] == 0
        hit = pred[m] == 0
        tpr = float((pos & hit).sum() / max(1, pos.sum()))
        tnr = float((~pos & ~hit).sum() / max(1, (~pos).sum()))
        out[f"{name}_balanced_accuracy"] = round((tpr + tnr) / 2, 4)
        bal.append((tpr + tnr) / 2)
    cf = np.isin(sets, ["climate_fever", "fever_symmetric"])
    tp = int(((pred == 1) & (gold == 1) & cf).sum())
    predicted = int(((pred == 1) & cf).sum())
    actual = int(((gold == 1) & cf).sum())
    out["contradicted_precision"] = round(tp / predicted, 4) if predicted else None
    out["contradicted_recall"] = round(tp / max(1, actual), 4)
    out["contradicted_predicted"] = predicted
    supported = (gold == 0) & np.isin(sets, ["wice", "climate_fever", "fever_symmetric"])
    out["supported_read_contradicted"] = round(float((pred[supported] == 1).mean()), 4) if supported.any() else 0.0
    refuted = (gold == 1) & cf
    out["refuted_read_supported"] = round(float((pred[refuted] == 0).mean()), 4) if refuted.any() else 0.0
    cross = sets == "cross_claim"
    out["cross_claim_supported"] = round(float((pred[cross] == 0).mean()), 4) if cross.any() else 0.0
    out["mean_balanced_accuracy"] = round(float(np.mean(bal)), 4) if bal else 0.0
    return out


GRID = [round(x, 3) for x in np.arange(0.30, 0.96, 0.025)] + [0.96, 0.97, 0.98, 0.99]


def choose_thresholds(
    first: np.ndarray,
    full: np.ndarray,
    rows: Sequence[Row],
    settle: float,
    precision: float,
    settle_none: float = 0.0,
) -> tuple[float, float | None, float, dict]:
    """The contradiction thresholds (for all, then for a stated conflict about the claim's
    subject) and the support threshold for ``rows``, given their probabilities after the first
    round and after both (see the module doc)."""

    def decided(t_con: float, t_conflict: float | None, t_sup: float) -> dict:
        p = runtime_probabilities(first, full, settle, t_con, t_sup, rows, t_conflict, settle_none)
        return figures(rows, labels(p, _bar(rows, t_con, t_conflict), t_sup))

    def acceptable(f: dict) -> bool:
        ok = (f["contradicted_precision"] or 0) >= precision and f["contradicted_predicted"] >= 5
        return ok and f["supported_read_contradicted"] <= 0.03

    best_con = 1.01  # none reaches the floor: never contradicted (the record says so)
    for t in GRID:
        if acceptable(decided(t, None, 0.5)):
            best_con = t
            break
    # A stated conflict about the claim's subject: the lowest threshold that keeps the whole
    # decision above the floor (never above the general one).
    best_conflict: float | None = None
    for t in GRID:
        if t >= best_con:
            break
        if acceptable(decided(best_con, t, 0.5)):
            best_conflict = t
            break
    best_sup, best_score = 0.95, -1.0
    for t in GRID:
        f = decided(best_con, best_conflict, t)
        if f["refuted_read_supported"] > 0.05 or f["cross_claim_supported"] > 0.02:
            continue
        if f["mean_balanced_accuracy"] > best_score:
            best_sup, best_score = t, f["mean_balanced_accuracy"]
    return best_con, best_conflict, best_sup, decided(best_con, best_conflict, best_sup)


def _right(row: Row, label: int) -> bool | None:
    """Whether ``label`` is right for the row (None: the set cannot tell: not_found on FEVER-Symmetric)."""
    if row.dataset in ("wice", "attributionbench"):
        return (label == 0) == (row.gold == 0)
    if row.dataset == "fever_symmetric" and label == 2:
        return None
    return label == row.gold


def calibrate(p: np.ndarray, rows: Sequence[Row], bars: np.ndarray, t_sup: float) -> list[tuple[float, float]]:
    """Per label, Platt scaling of the label's probability into the chance it is right, on the
    real rows' cross-validated decisions ((1, 0) where a label has too few to fit)."""
    from sklearn.linear_model import LogisticRegression

    pred = labels(p, bars, t_sup)
    out: list[tuple[float, float]] = []
    for k in range(3):
        xs, ys = [], []
        for i, r in enumerate(rows):
            if r.dataset in MADE_SETS or pred[i] != k or (ok := _right(r, k)) is None:
                continue
            q = min(max(float(p[i, k]), 1e-4), 1 - 1e-4)
            xs.append(np.log(q / (1 - q)))
            ys.append(int(ok))
        if len(ys) < 20 or len(set(ys)) < 2:
            out.append((1.0, 0.0))
            continue
        lr = LogisticRegression(C=1e4, max_iter=1000).fit(np.asarray(xs)[:, None], ys)
        out.append((round(float(lr.coef_[0][0]), 4), round(float(lr.intercept_[0]), 4)))
    return out


def fold_of(claim: str, folds: int) -> int:
    """A claim's cross-validation fold (every row of one claim in the same fold)."""
    return int(hashlib.sha256(claim.strip().lower().encode("utf-8")).hexdigest()[:8], 16) % folds


def logistic_fitter(c: float, signed: bool = False) -> Callable[[Sequence[Row]], Callable[[np.ndarray], np.ndarray]]:
    """Fits the shipped kind of decision (:func:`fit` at strength ``c``, ``signed`` or not) on given
    rows and returns its probability function."""

    def fitter(train: Sequence[Row]) -> Callable[[np.ndarray], np.ndarray]:
        mean, scale, model = fit(train, c, signed)
        return to_decision(mean, scale, model, 0.5, 0.5).probabilities

    return fitter


def out_of_fold(rows: Sequence[Row], c: float, folds: int, signed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Each row's probabilities (first round, both rounds) from a classifier fitted without its fold."""
    return out_of_fold_with(logistic_fitter(c, signed), rows, folds)


def out_of_fold_with(
    fitter: Callable[[Sequence[Row]], Callable[[np.ndarray], np.ndarray]], rows: Sequence[Row], folds: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`out_of_fold` for any classifier: ``fitter`` fits one on the rows it is given and
    returns its function from feature rows to label probabilities."""
    first = np.zeros((len(rows), 3))
    full = np.zeros((len(rows), 3))
    fold = np.asarray([fold_of(r.claim, folds) for r in rows])
    for k in range(folds):
        predict = fitter([r for r, f in zip(rows, fold, strict=True) if f != k])
        test = np.where(fold == k)[0]
        first[test] = predict(np.vstack([rows[i].first for i in test]))
        full[test] = predict(np.vstack([rows[i].full for i in test]))
    return first, full


_RENAMED = {
    "guardrail.judges.candidates": "guardrail.judges._candidates",
    "guardrail.judges.features": "guardrail.judges._features",
}
"""Modules a record may name from before the judge's internals were made private."""


class _RecordUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(_RENAMED.get(module, module), name)


def _load_record(path: Path) -> Any:
    """A cached record (tasks, scored requests), also one written before the modules were renamed."""
    with path.open("rb") as f:
        return _RecordUnpickler(f).load()


def weights_digest(model: Path) -> str:
    """The first 12 hex digits of the sha256 of ``model``'s weights: what the records are cached by."""
    return hashlib.sha256((model / "model.safetensors").read_bytes()).hexdigest()[:12]


def recorded_rows(
    judge: Any,
    data: Path,
    part: Part,
    cache: Path,
    digest: str,
    *,
    synthetic: bool = True,
    limit: int | None = None,
    written: Sequence[Path] = (),
) -> list[Row]:
    """The feature rows of every task of ``part`` (``training.datasets.bench_tasks``, the edited
    pairs unless ``synthetic`` is false, and the ``written`` files' pairs), each set's scored
    requests recorded once per weights (``digest``) in ``cache`` and read from there afterwards."""
    from training import datasets as ds

    t0 = time.time()
    cache.mkdir(parents=True, exist_ok=True)
    tasks: dict[str, list[Any]] = dict(ds.bench_tasks(data, part))
    if synthetic:
        tasks["synthetic"] = synthetic_tasks(data, part)
    if written:
        tasks["written"] = written_tasks(written)
    if limit:
        tasks = {k: v[:limit] for k, v in tasks.items()}
    recorded: dict[str, list[Any]] = {}
    for name, items in tasks.items():
        # Written pairs are cached by what the files hold, so an edited file is recorded afresh.
        made = f"_{_files_digest(written)}" if name == "written" else ""
        path = cache / f"{part}_{name}{made}_{digest}_{limit or 'all'}.pkl"
        if path.is_file():
            # The tasks are kept with their records: the edited pairs depend on the code that
            # made them, and a record is read with the tasks it was made from.
            tasks[name], scored = _load_record(path)
            recorded[name] = restated(judge, scored)
        else:
            recorded[name] = record(judge, items)
            path.write_bytes(pickle.dumps((items, recorded[name])))
    print(f"{part}: { ({k: len(v) for k, v in tasks.items()}) } recorded ({time.time() - t0:.0f} s)")
    return rows_of(recorded, tasks)


def offline_judge_for_data(model: Path, data: Path) -> Any:
    """The two-round local judge of ``model``, for reading the labelled sets at ``data`` offline
    (its weights are local, so no hub is ever asked); None, the skip said on stdout
    (:func:`training.datasets.labelled_data_present`), where those sets are missing. For the
    command-line entries that record the sets: it sets ``HF_HUB_OFFLINE`` and
    ``TRANSFORMERS_OFFLINE`` where they are unset."""
    from training.datasets import labelled_data_present

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if not labelled_data_present(data):
        return None
    from guardrail.judges.local import LocalJudge, LocalJudgeConfig

    return LocalJudge(model_path=model, config=LocalJudgeConfig())


def recorded_fit_and_eval(judge: Any, data: Path, cache: Path) -> tuple[list[Row], list[Row]]:
    """The rows a decision is fitted on (the ``fit`` and ``tune`` parts with the edited pairs) and
    the ``eval`` part's rows (the real sets alone), recorded with ``judge``'s weights in ``cache``
    (:func:`recorded_rows`)."""
    digest = weights_digest(Path(judge.path))
    train = [row for part in ("fit", "tune") for row in recorded_rows(judge, data, part, cache, digest)]
    return train, recorded_rows(judge, data, "eval", cache, digest, synthetic=False)


def written_name(rounds: int, int8: bool = False) -> str:
    """The decision file a fit writes: the one the judge reads for ``rounds``
    (:func:`~guardrail.judges._decision.decision_file`), or for ``--int8`` a name beside it that the
    judge never reads (int8 readings are a measurement, not shipped: README, the int8 fast-path row)."""
    from guardrail.judges._decision import decision_file

    name = decision_file(rounds)
    return name.replace(".json", "_int8.json") if int8 else name


def as_read(rows: Sequence[Row], rounds: int) -> list[Row]:
    """The rows as the judge reads with ``rounds`` (``LocalJudgeConfig.rounds``): with one round the
    first round's view is all there is, so the thresholds are chosen and the classifier is fitted
    on what the first round shows alone (fitted on both views, it leans on second-round readings
    that never come: cross-validated WiCE balanced accuracy 0.59 against 0.65)."""
    return list(rows) if rounds >= 2 else [dataclasses.replace(r, full=r.first) for r in rows]


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry (see the module docstring)."""
    root = Path(__file__).resolve().parents[1]
    p = argparse.ArgumentParser(prog="python -m training.fit_decision", description=__doc__.split("\n")[0])
    p.add_argument("--model", type=Path, default=root / "guardrail" / "judges" / "model")
    p.add_argument("--data", type=Path, default=root.parent / "shared" / "data")
    p.add_argument("--cache", type=Path, default=root / "artifacts" / "fit")
    p.add_argument("--precision", type=float, default=0.85, help="contradicted precision floor, cross-validated")
    p.add_argument("--c-grid", default="0.03,0.1,0.3,1,3")
    p.add_argument("--folds", type=int, default=5, help="cross-validation folds, by claim, over fit + tune")
    p.add_argument("--no-synthetic", dest="synthetic", action="store_false", help="real pairs only")
    p.add_argument(
        "--rounds",
        type=int,
        choices=(1, 2),
        default=None,
        help="fit for LocalJudgeConfig(rounds=N) (default: its default)",
    )
    p.add_argument(
        "--int8",
        action="store_true",
        help="record and fit the int8-quantised graph's readings (quantize=True), written as decision*_int8.json, "
        "which the judge does not read",
    )
    p.add_argument("--limit", type=int, default=None, help="first N tasks per set (smoke runs)")
    p.add_argument(
        "--signed",
        action="store_true",
        help="hold each feature's weight to the side a reader expects, neutral readings left out (expected_signs)",
    )
    p.add_argument(
        "--backend",
        choices=("auto", "onnx", "torch"),
        default="auto",
        help="what reads the pairs (LocalJudgeConfig.backend; torch computes in bfloat16 where the CPU has it)",
    )
    p.add_argument(
        "--written",
        type=Path,
        action="append",
        default=[],
        help="a JSON file of written claim/page pairs fitted on with the edited pairs' weight (repeatable)",
    )
    args = p.parse_args(argv)
    code = code_version(root)  # now: the code that runs is what was there when it started
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(root))
    from guardrail.judges.local import LocalJudge, LocalJudgeConfig

    config = LocalJudgeConfig(backend=args.backend)
    if args.rounds is not None:
        config = dataclasses.replace(config, rounds=args.rounds)
    judge = LocalJudge(model_path=args.model, config=config, quantize=args.int8)
    # Readings differ with what computes them (a bfloat16 torch reading is not a float32 ONNX one):
    # the records are kept apart by it, and the record says which the classifier was fitted on.
    computed = judge.dtype if judge.backend == "torch" else "float32"  # ONNX Runtime reads in float32
    readings = {"backend": judge.backend, "dtype": "int8" if args.int8 else computed}
    digest = weights_digest(args.model) + ("-int8" if args.int8 else "")
    if judge.backend == "torch":
        digest += f"-torch-{judge.dtype}"
    fit_rows = recorded_rows(
        judge, args.data, "fit", args.cache, digest, synthetic=args.synthetic, limit=args.limit, written=args.written
    )
    tune_rows = recorded_rows(judge, args.data, "tune", args.cache, digest, synthetic=args.synthetic, limit=args.limit)
    rows = as_read(fit_rows + tune_rows, config.rounds)
    results = []
    for c in [float(x) for x in args.c_grid.split(",")]:
        first, full = out_of_fold(rows, c, args.folds, args.signed)
        t_con, t_conflict, t_sup, cv_figures = choose_thresholds(
            first, full, rows, config.settle, args.precision, config.settle_none
        )
        score = cv_figures["mean_balanced_accuracy"] + 0.5 * cv_figures["contradicted_recall"]
        print(
            f"C={c}: thresholds contradicted {t_con} (stated conflict {t_conflict}) supported {t_sup}; "
            f"cross-validated {json.dumps(cv_figures)}"
        )
        results.append((score, c, t_con, t_conflict, t_sup, cv_figures))
    score, c, t_con, t_conflict, t_sup, cv_figures = max(results, key=lambda r: r[0])
    first, full = out_of_fold(rows, c, args.folds, args.signed)
    decided_p = runtime_probabilities(first, full, config.settle, t_con, t_sup, rows, t_conflict, config.settle_none)
    calibration = calibrate(decided_p, rows, _bar(rows, t_con, t_conflict), t_sup)
    mean, scale, model = fit(rows, c, args.signed)
    decision = dataclasses.replace(
        to_decision(mean, scale, model, t_con, t_sup), conflict_threshold=t_conflict, calibration=tuple(calibration)
    )
    name = written_name(config.rounds, args.int8)
    (args.model / name).write_text(json.dumps(decision.to_dict(), indent=1) + "\n")
    record_out = {
        "command": "python -m training.fit_decision " + " ".join(argv if argv is not None else sys.argv[1:]),
        "weights_sha256_12": digest,
        "code": code,
        "readings": readings,
        "signed": args.signed,
        "rows": {
            "fit": dict(Counter(r.dataset for r in fit_rows)),
            "tune": dict(Counter(r.dataset for r in tune_rows)),
        },
        "classes": dict(Counter(("supported", "contradicted", "not_found")[r.gold] for r in rows)),
        "folds": args.folds,
        "chosen": {
            "C": c,
            "contradicted": t_con,
            "contradicted_stated_conflict": t_conflict,
            "supported": t_sup,
            "settle": config.settle,
            "settle_none": config.settle_none,
            "rounds": config.rounds,
        },
        "grid": [
            {"C": r[1], "contradicted": r[2], "stated_conflict": r[3], "supported": r[4], "cross_validated": r[5]}
            for r in results
        ],
        "cross_validated": cv_figures,
        "calibration": calibration,
        "largest_coefficients": _largest(decision),
    }
    record_name = name.replace("decision", "decision_record", 1)
    (args.model / record_name).write_text(json.dumps(record_out, indent=1) + "\n")
    print(f"chosen C={c}, contradicted >= {t_con} ({t_conflict} for a stated conflict), supported >= {t_sup}")
    print(f"cross-validated {json.dumps(cv_figures)}")
    print(f"wrote {args.model / name} and {record_name}")
    return 0


def code_version(root: Path) -> str | None:
    """The commit the fitting ran on, with ``+changes`` where the judge's or the fitting's code
    differed from it (features are computed by that code: a decision fitted on one version's
    features and read by another's is what the record must let one tell); None outside git."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--", "guardrail", "training"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("+changes" if changed.stdout.strip() else "")


def _largest(decision: Any, n: int = 8) -> dict[str, list[tuple[str, float]]]:
    """The features each class leans on most (standardised coefficients), for the record."""
    from guardrail.judges._decision import LABELS

    out = {}
    for k, name in enumerate(LABELS):
        order = np.argsort(-np.abs(decision.coef[k]))[:n]
        out[name] = [(decision.features[i], round(float(decision.coef[k][i]), 3)) for i in order]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
