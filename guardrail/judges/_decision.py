"""How the local judge turns what it scored into a verdict: one learned, calibrated decision.

A multinomial logistic regression over the request's features (:mod:`guardrail.judges._features`:
the model's probabilities on the most supporting and the most contradicting sentence, read with
the page's topic, alone and in a window, beside the lexical agreement of numbers, years, names,
negation, direction words and roles, and the subject test) gives the probability of each label.
It was fitted by scikit-learn on the ``fit`` part of the by-claim split, its regularisation and the
two thresholds chosen on the ``tune`` part (``python -m training.fit_decision``); its coefficients
ship beside the weights (``model/decision.json``), so deciding needs numpy only.

The label is ``contradicted`` when that probability reaches its threshold (chosen for precision)
and beats support, else ``supported`` when support reaches its own, else ``not_found``; the
confidence is the probability of the label given. The quote is the sentence the decision rests
on, an exact substring of a passage; where its window of neighbouring sentences read as support
and the sentence alone did not, the window is the verdict's ``context``.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from guardrail.core.schema import JudgeVerdict, Reason
from guardrail.judges import _checks as checks
from guardrail.judges._candidates import CON, ENT, Scored, as_read
from guardrail.judges._features import REQUEST_FEATURES, UNIT_FEATURES, Unit, lead_name, request_features, units_of
from guardrail.judges.local_config import LocalJudgeConfig

log = logging.getLogger("guardrail.judges.decision")

LABELS: tuple[str, ...] = ("supported", "contradicted", "not_found")
"""The classifier's classes, in the order of its probability columns."""
SUP, CONTRA, NF = 0, 1, 2

CONFLICTS: tuple[str, ...] = ("number_conflict", "year_conflict", "antonym_flip", "role_swap", "name_restated")
"""What a sentence can state in the claim's place instead of what the claim says: another value for
the same quantity, another year for the same event, the opposite word or the claim's word denied
("did not reduce" for "reduces"), the roles reversed (each with
the rest of the claim matching; :func:`guardrail.judges._features.conflicts_of`), or another name in
the place of the claim's that the model reads the sentence as saying (``name_restated``: "directed by
James Cameron" never backs "directed by Steven Spielberg"). Another name alone is not among them: on
the fit and tune parts it fires on 11 % of WiCE's supported claims (a page naming someone else beside
the claim's name), so the classifier weighs it instead."""
_SUPPORT_CONFLICTS = [REQUEST_FEATURES.index(f"support_{name}") for name in CONFLICTS]
_STATED_CONFLICT = REQUEST_FEATURES.index("contra_conflict_about_subject")
_CONTRA_READ = [REQUEST_FEATURES.index(f"contra_con_{view}") for view in ("context", "alone")]
_CONTRA_ABOUT = [REQUEST_FEATURES.index(f"contra_subject_{how}") for how in ("named", "by_reference")]
_SUPPORT_READ = REQUEST_FEATURES.index("support_ent_best")
SURE_CONTRADICTION = 0.9
"""How surely the model must read a sentence about the claim's subject as contradicting it, both with
the page's topic and alone, for the page's support to be withheld (:func:`withheld_support`)."""
SURER_BY = 0.3
"""By how much that reading must be surer than the best reading as support."""


def withheld_support(x: np.ndarray) -> np.ndarray:
    """Whether a page that seems to back the claim also says otherwise about the claim's subject
    (one flag per feature row): the sentence most read as contradicting names the subject (or refers
    to it) and reads as contradicting at least :data:`SURE_CONTRADICTION` with its topic and alone,
    :data:`SURER_BY` more surely than anything reads as support. Such a page is no support: a study's background
    ("perioperative melatonin may reduce delirium") beside its result ("Melatonin did not prevent
    postoperative delirium") reads as both, and the classifier, fitted where the model's strong
    contradictions were often wrong, weighs the support higher. Whether the page contradicts the
    claim stays the classifier's to say; this only withholds a ``supported``."""
    rows = np.atleast_2d(np.asarray(x))
    read = rows[:, _CONTRA_READ].min(axis=1)
    about = rows[:, _CONTRA_ABOUT].max(axis=1) > 0.5
    return np.asarray((read >= SURE_CONTRADICTION) & about & (rows[:, _SUPPORT_READ] < read - SURER_BY))


_ABOUT_CONFLICT = UNIT_FEATURES.index("conflict_about_subject")


def denied_by(scored: Scored, units: list[Unit]) -> int | None:
    """The index of a sentence that denies the claim's effect or reports that a study found none
    (:func:`~guardrail.judges._checks.says_otherwise`: "breeding density did not differ between
    farms with and without boxes" for "Installing nest boxes increased the breeding density"),
    about the claim's subject; None where no sentence read does. Such a page backs the claim with no
    other sentence: a window of its methods read as support (0.83) beside it said ``supported``
    (:func:`decide` makes that ``not_found``, the page saying both). Where nothing on the page backs
    the claim, the sentence contradicts it: the model reads a null result as neutral more often than
    not. Not modelled by the fitting: on the recorded fit, tune and eval parts it fires on two
    requests (FEVER-Symmetric, both refuted and already read ``contradicted``).

    A page saying that what the claim cures has no cure (:func:`~guardrail.judges._checks.no_cure`,
    which tests the subject itself) is found in every sentence, read or not: "There is currently no
    cure" on the page "Asthma" was not among the sentences retrieval put first for "Asthma can now
    be cured by using a preventer inhaler", whose inhaler sentence the model read as entailing it."""
    lead = lead_name(scored.claim)
    # A claim whose only name is the capitalised word opening it ("Daily low-dose aspirin ...") may
    # name nothing: a sentence without that word can still be about its subject, and
    # says_otherwise's own subject test decides.
    loose = lead is not None and checks.opens_with(scored.claim, lead)
    for unit in units:
        about = loose or unit.features[_ABOUT_CONFLICT] > 0.5
        sentence = scored.units[unit.index]
        if about and checks.says_otherwise(scored.claim, sentence.text, sentence.topic or ""):
            return unit.index
    for index, sentence in enumerate(scored.units):
        if checks.no_cure(scored.claim, sentence.text, sentence.topic or ""):
            return index
    return None


ASKED_ENTAILMENT = 0.5
"""A page whose claim words are those of its questions and aims backs the claim only where the
model reads something on it as entailing the claim at least this surely (:func:`only_asked`)."""


def only_asked(scored: Scored) -> bool:
    """Whether the page says the claim's words only where it asks about them or aims at them: its
    passages hold at least half of the claim's content words, less than half once their questions,
    aims and suppositions are left out (:func:`~guardrail.judges._checks.asserted_text`), and nothing
    on it reads as entailing the claim at :data:`ASKED_ENTAILMENT` (aims read neutral). "This trial
    aims to determine whether handwashing promotion reduces diarrhoea" beside its methods is such a
    page: the classifier, which weighs how much of the claim a page says, read it as support
    (0.69). A claim about an aim is backed by one (:func:`~guardrail.judges._checks.speaks_of_aims`).
    Not modelled by the fitting (``training.fit_decision``): on the recorded fit, tune and eval
    parts it withholds no ``supported``."""
    claim = scored.claim
    if checks.speaks_of_aims(claim):
        return False
    if checks.overlap(claim, " ".join(scored.passages)) < 0.5:
        return False
    if checks.overlap(claim, " ".join(checks.asserted_text(p) for p in scored.passages)) >= 0.5:
        return False
    return max((float(c.probs[ENT]) for c in scored.readings()), default=0.0) < ASKED_ENTAILMENT


_STATED_ON_THE_PAGE = [UNIT_FEATURES.index(name) for name in CONFLICTS if name != "name_restated"]
"""The conflicts the words state; ``name_restated`` is a reading of the model's, kept to the sentence
support rests on: beside it, it fires on sentences that restate the claim ("Robbie became the first
person to portray Harley Quinn" for "Margot Robbie is the actress who plays Harley Quinn")."""
_UNIT_OVERLAP = UNIT_FEATURES.index("overlap")


def conflict_beside(units: list[Unit], support: Unit) -> Unit | None:
    """A sentence other than the one support rests on that states something else in the claim's
    place (:data:`_STATED_ON_THE_PAGE`, about the claim's subject) and says at least as much of the
    claim: the page's own account of what the claim is about. "The smallest minimum in the
    satellite record came in September 2012" for "... was recorded in September 2007", beside
    "Since then the September minimum has fallen by roughly 13% per decade", the sentence the
    request's support rested on: ruled out, support's share goes to the other labels and the claim
    reads ``contradicted`` instead of ``not_found``. None otherwise. Certain for the same
    reason as :func:`support_conflicts`: the closest statement of the claim gives another value.
    Not modelled by the fitting: on the recorded fit, tune and eval parts it changes no label."""
    said = float(support.features[_UNIT_OVERLAP])
    for unit in units:
        if unit is support or float(unit.features[_UNIT_OVERLAP]) < said:
            continue
        if max(float(unit.features[i]) for i in _STATED_ON_THE_PAGE) > 0.5:
            return unit
    return None


def support_conflicts(x: np.ndarray) -> np.ndarray:
    """Whether the sentence a request's support rests on states something else in the claim's place
    (one flag per feature row). The one rule kept beside the classifier, because it is certain: a
    sentence saying "released on December 19, 1997" never backs "released in 1998", however well
    the rest matches. It stops support only; whether that is a contradiction the classifier
    decides (another year may belong to another event)."""
    rows = np.atleast_2d(np.asarray(x))
    return np.asarray(rows[:, _SUPPORT_CONFLICTS].max(axis=1) > 0.5)


@dataclass(frozen=True)
class DecisionModel:
    """The fitted classifier: standardisation, coefficients, and the two label thresholds."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # (3, n_features)
    intercept: np.ndarray  # (3,)
    contradict_threshold: float
    support_threshold: float
    temperature: float = 1.0
    calibration: tuple[tuple[float, float], ...] | None = None
    """Per label (``LABELS`` order), Platt scaling ``(a, b)`` of the label's probability into the
    probability that the label given is right: ``sigmoid(a * logit(p) + b)``, fitted on the
    cross-validated decisions (the classifier's own probabilities are skewed by the balanced class
    weights it was fitted with). None: the probability as it is."""
    conflict_threshold: float | None = None
    """The contradiction threshold where the contradicting sentence states another value, year,
    name, opposite word or reversed roles about the claim's own subject (``contra_conflict_about_subject``):
    chosen on those cases apart, whose precision does not fall with the probability as the others'
    does. None: ``contradict_threshold`` for all."""

    def contradiction_bar(self, x: np.ndarray) -> np.ndarray:
        """The contradiction threshold of each feature row (see :attr:`conflict_threshold`)."""
        rows = np.atleast_2d(np.asarray(x))
        if self.conflict_threshold is None:
            return np.full(len(rows), self.contradict_threshold)
        stated = rows[:, _STATED_CONFLICT] > 0.5
        return np.where(stated, self.conflict_threshold, self.contradict_threshold)

    @classmethod
    def from_dict(cls, data: dict) -> DecisionModel:
        """Read the JSON written by ``training.fit_decision``; refuses one fitted on other features."""
        features = tuple(data["features"])
        if features != REQUEST_FEATURES:
            raise RuntimeError(
                "the judge's decision.json was fitted on other features than this code computes; "
                "refit it with python -m training.fit_decision"
            )
        if tuple(data["classes"]) != LABELS:
            raise RuntimeError(f"decision.json classes must be {LABELS}, not {data['classes']}")
        return cls(
            features=features,
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            coef=np.asarray(data["coef"], dtype=np.float64),
            intercept=np.asarray(data["intercept"], dtype=np.float64),
            contradict_threshold=float(data["thresholds"]["contradicted"]),
            support_threshold=float(data["thresholds"]["supported"]),
            temperature=float(data.get("temperature", 1.0)),
            calibration=(
                tuple((float(a), float(b)) for a, b in data["calibration"]) if data.get("calibration") else None
            ),
            conflict_threshold=(
                float(data["thresholds"]["contradicted_stated_conflict"])
                if data["thresholds"].get("contradicted_stated_conflict") is not None
                else None
            ),
        )

    def to_dict(self) -> dict:
        """The JSON form :meth:`from_dict` reads."""
        return {
            "features": list(self.features),
            "classes": list(LABELS),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "coef": self.coef.tolist(),
            "intercept": self.intercept.tolist(),
            "thresholds": {
                "contradicted": self.contradict_threshold,
                "contradicted_stated_conflict": self.conflict_threshold,
                "supported": self.support_threshold,
            },
            "temperature": self.temperature,
            "calibration": [list(ab) for ab in self.calibration] if self.calibration else None,
        }

    def confidence(self, label: int, p: float) -> float:
        """The probability that ``label`` (given with probability ``p``) is right (see :attr:`calibration`)."""
        if not self.calibration:
            return round(min(max(p, 0.0), 1.0), 4)
        a, b = self.calibration[label]
        x = math.log(max(p, 1e-4) / max(1.0 - p, 1e-4))
        z = min(max(a * x + b, -30.0), 30.0)
        return round(1.0 / (1.0 + math.exp(-z)), 4)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """P(supported), P(contradicted), P(not_found) for one feature vector (or a matrix of them)."""
        z = ((np.asarray(x, dtype=np.float64) - self.mean) / self.scale) @ self.coef.T + self.intercept
        z = z / self.temperature
        z = z - z.max(axis=-1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=-1, keepdims=True)


_LOCK = threading.Lock()
_MODELS: dict[str, DecisionModel] = {}
_FALLBACKS_SAID: set[str] = set()  # folders whose missing one-round decision was logged once


def decision_file(rounds: int) -> str:
    """The file name of the decision fitted for ``LocalJudgeConfig.rounds``: ``decision.json`` for two
    rounds (the default), ``decision_one_round.json`` for the fast path, which is decided on what
    the first round shows alone (``python -m training.fit_decision --rounds 1``)."""
    return "decision.json" if rounds >= 2 else "decision_one_round.json"


def load_decision(model_dir: Path, rounds: int = 2) -> DecisionModel:
    """The decision fitted for the weights in ``model_dir`` and for ``rounds`` (:func:`decision_file`),
    read once per process. A folder without a one-round decision decides one round with its
    two-round ``decision.json``."""
    name = decision_file(rounds)
    if not (model_dir / name).is_file():
        name = "decision.json"
    key = str(model_dir / name)
    with _LOCK:
        if name != decision_file(rounds) and (model_dir / name).is_file() and key not in _FALLBACKS_SAID:
            _FALLBACKS_SAID.add(key)
            log.warning(
                "no %s beside the judge's weights in %s: one round is decided with %s, which was "
                "fitted for two (python -m training.fit_decision --model DIR --rounds 1 fits one)",
                decision_file(rounds),
                model_dir,
                name,
            )
        hit = _MODELS.get(key)
        if hit is None:
            path = model_dir / name
            if not path.is_file():
                raise RuntimeError(
                    f"no decision.json beside the judge's weights in {model_dir}: fit one with "
                    "python -m training.fit_decision --model DIR"
                )
            hit = DecisionModel.from_dict(json.loads(path.read_text(encoding="utf-8")))
            _MODELS[key] = hit
        return hit


def probabilities(scored: Scored, model: DecisionModel) -> tuple[np.ndarray, Unit | None, Unit | None]:
    """The label probabilities of a scored request, with its most supporting and most contradicting
    sentence; a support that :func:`support_conflicts` rules out is returned as None."""
    p, support, contra, *_ = _read(scored, model)
    return p, support, contra


def _read(scored: Scored, model: DecisionModel) -> tuple[np.ndarray, Unit | None, Unit | None, float, bool, list[Unit]]:
    """:func:`probabilities`, the request's contradiction threshold, whether its support is
    withheld (:func:`withheld_support`) and the sentences read, with their features."""
    units = units_of(scored)
    x, support, contra = request_features(scored, units)
    p = model.probabilities(x)
    if support is not None and (bool(support_conflicts(x)[0]) or conflict_beside(units, support) is not None):
        support = None
        p = rule_out_support(p)
    return p, support, contra, float(model.contradiction_bar(x)[0]), bool(withheld_support(x)[0]), units


def rule_out_support(p: np.ndarray) -> np.ndarray:
    """The probabilities given that the claim is not supported (its support ruled out by
    :func:`support_conflicts`): support's share goes to the other two labels in proportion."""
    q = np.array(p, dtype=np.float64, copy=True)
    rest = q[..., CONTRA] + q[..., NF]
    q[..., SUP] = 0.0
    q[..., CONTRA] = q[..., CONTRA] / np.maximum(rest, 1e-12)
    q[..., NF] = 1.0 - q[..., CONTRA]
    return q


def settled(scored: Scored, model: DecisionModel, config: LocalJudgeConfig, settle_at: float | None) -> bool:
    """Whether the first round already decides the request: its support or its contradiction is as
    probable as ``config.settle`` (or the request's higher ``settle_at``), or neither is as probable
    as ``config.settle_none`` (nothing there bears on the claim). A request between the two is read
    further: the second round may find what backs it."""
    p, support, _, contra_bar, *_ = _read(scored, model)
    if max(p[SUP], p[CONTRA]) < config.settle_none:
        return True
    bar = max(config.settle, settle_at or 0.0)
    return bool(support is not None and p[SUP] >= bar and p[SUP] >= model.support_threshold) or bool(
        p[CONTRA] >= max(config.settle, contra_bar)
    )


QUOTE_ENTAILMENT = 0.5
"""How surely the model must read the sentence a support rests on as entailing the claim for it to
be the quote; below it, :func:`quoted_unit` quotes the sentence that says the claim best."""
_ENT_BEST = UNIT_FEATURES.index("ent_best")


def quoted_unit(units: list[Unit], support: Unit) -> Unit:
    """The sentence to quote for a ``supported`` verdict: the one support rests on, unless the model
    reads nothing in it as entailing the claim (under :data:`QUOTE_ENTAILMENT`); then the sentence
    read whose entailment and share of the claim's words together are highest. The classifier
    may back a claim on what the page says across sentences while its most supporting sentence
    reads 0.0 and shares no word with the claim ("The settlement is frequently cited by political
    scientists as the origin of ..." for "It brought the Thirty Years' War to a close"): such a
    quote tells a reader nothing. The label stays the classifier's."""
    if float(support.features[_ENT_BEST]) >= QUOTE_ENTAILMENT:
        return support

    def says(unit: Unit) -> float:
        return float(unit.features[_ENT_BEST]) + float(unit.features[_UNIT_OVERLAP])

    return max(units, key=lambda u: (says(u), u is support))


def _support_quote(scored: Scored, unit: Unit) -> tuple[str, str | None]:
    """The sentence that decided (the quote), and the window around it as ``context`` where the
    window reads as support and the sentence alone does not (None otherwise)."""
    cand = unit.support_candidate
    if cand.kind != "window":
        return scored.units[unit.index].text, None
    # Every sentence of a window shares the window's reading, so the unit the decision rests on may
    # be any of them ("Later settlers built water mills ..." beside the sentence giving the river's
    # course). The quote is the window's sentence that says most of the claim: its own entailment
    # where the model read it, then the claim's words it holds.
    own: dict[int, float] = {}
    for c in scored.readings():
        if c.kind in ("sentence", "plain") and c.units[0] in cand.units:
            own[c.units[0]] = max(own.get(c.units[0], 0.0), float(c.probs[ENT]))
    best = max(
        cand.units,
        key=lambda k: (own.get(k, 0.0) + checks.overlap(scored.claim, scored.units[k].text), k == unit.index),
    )
    sentence = scored.units[best].text
    if float(cand.probs[ENT]) > own.get(best, 0.0) + 0.1:
        return sentence, cand.text
    return sentence, None


def _parts_verdict(scored: Scored, config: LocalJudgeConfig) -> tuple[list[str], list[str]]:
    """The parts of a split claim that their best evidence backs, and those it does not."""
    backed: list[str] = []
    missing: list[str] = []
    for part, cands in scored.parts:
        read = [as_read(part, c) for c in cands if c.scored]
        ok = any(float(c.probs[ENT]) >= config.part_threshold and c.probs[ENT] > c.probs[CON] for c in read)
        (backed if ok else missing).append(part)
    return backed, missing


def decide(scored: Scored, config: LocalJudgeConfig, model: DecisionModel) -> JudgeVerdict:
    """The verdict for one scored request: its label, calibrated confidence, quote and parts."""
    if scored.reason is not None:
        return JudgeVerdict(label="not_found", confidence=1.0, reason=scored.reason)
    p, support, contra, contra_bar, withheld, units = _read(scored, model)
    split = len(scored.parts) > 1
    p_support = float(p[SUP])  # 0 where support was ruled out
    if contra is not None and p[CONTRA] >= contra_bar and p[CONTRA] >= p_support:
        return JudgeVerdict(
            label="contradicted",
            evidence_quote=scored.units[contra.index].text,
            confidence=model.confidence(CONTRA, float(p[CONTRA])),
        )
    if support is not None and p_support >= model.support_threshold:
        # A support the page itself takes back: it also says otherwise about the claim's subject
        # (withheld_support, denied_by), or it only asks about the claim (only_asked).
        otherwise = contra.index if contra is not None and withheld else denied_by(scored, units)
        if otherwise is not None:
            return JudgeVerdict(
                label="not_found",
                reason=Reason.conflicting_evidence.value,
                evidence_quote=scored.units[otherwise].text,
                confidence=model.confidence(NF, 1.0 - p_support),
            )
        if only_asked(scored):
            return JudgeVerdict(label="not_found", confidence=model.confidence(NF, 1.0 - p_support))
        parts = [part for part, _ in scored.parts] if split else None
        quote, context = _support_quote(scored, quoted_unit(units, support))
        return JudgeVerdict(
            label="supported",
            evidence_quote=quote,
            context=context,
            confidence=model.confidence(SUP, float(p[SUP])),
            supported_parts=parts,
            missing_parts=[] if split else None,
        )
    denier = denied_by(scored, units)
    if denier is not None:
        # Nothing on the page backs the claim and a sentence about its subject denies it or reports
        # no effect where it claims one: a reader's contradiction, whatever the model's reading. It
        # is as sure as a stated conflict at its threshold (its confidence there, at least).
        stated = model.conflict_threshold if model.conflict_threshold is not None else contra_bar
        return JudgeVerdict(
            label="contradicted",
            evidence_quote=scored.units[denier].text,
            confidence=model.confidence(CONTRA, max(float(p[CONTRA]), stated)),
        )
    verdict = JudgeVerdict(label="not_found", confidence=model.confidence(NF, float(p[NF])))
    if split:
        backed, missing = _parts_verdict(scored, config)
        first = next((c for part, cands in scored.parts if part in backed for c in cands if c.scored), None)
        verdict = verdict.model_copy(
            update={
                "supported_parts": backed,
                "missing_parts": missing,
                "reason": Reason.partially_supported.value if backed else None,
                "evidence_quote": first.quote if first is not None and backed else None,
            }
        )
    return verdict


__all__ = [
    "CONFLICTS",
    "LABELS",
    "DecisionModel",
    "decide",
    "load_decision",
    "probabilities",
    "rule_out_support",
    "settled",
    "support_conflicts",
    "withheld_support",
]
