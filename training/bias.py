"""A bias-only model of the training pairs, for training the judge's model around it.

The judge's small model reads shared words as support: on written probes whose right claims are
reworded, it reads higher entailment for wrong claims that keep the page's words than for right
ones that do not (``bench/probe_readings.py``). A product of experts (Clark et al. 2019; He et al.
2019; Utama et al. 2020, who measure it on FEVER-Symmetric) trains the model's log-probabilities
plus a fixed bias-only model's: what the bias already explains (many shared words -> entailment, a
negation word in the claim -> contradiction) costs the model little loss either way, so it learns
what the words alone do not tell. At run time the model is read alone.

The bias-only model here is a multinomial logistic regression (scikit-learn) over a handful of
lexical features of (evidence, claim), fitted on the pass's own labelled pairs.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from guardrail.judges._checks import STOPWORDS

_WORD = re.compile(r"[a-z0-9]+")
_NEGATION = frozenset(["not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot"])
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")

FEATURES = (
    "claim_words_on_page",
    "claim_bigrams_on_page",
    "page_words_in_claim",
    "claim_negation",
    "page_negation",
    "negation_differs",
    "claim_number_missing",
    "log_claim_words",
    "log_page_words",
)
"""The bias-only model's features, in order."""


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("n't", " not"))


def lexical_features(claim: str, evidence: str) -> list[float]:
    """:data:`FEATURES` of one (evidence, claim) pair: how much of each the other's words say,
    negation on either side, a claim number the evidence lacks, and the two lengths."""
    claim_words, page_words = _words(claim), _words(evidence)
    claim_content = {w for w in claim_words if w not in STOPWORDS}
    page_content = {w for w in page_words if w not in STOPWORDS}
    page_set = set(page_words)
    bigrams = list(itertools.pairwise(claim_words))
    page_bigrams = set(itertools.pairwise(page_words))
    claim_neg = any(w in _NEGATION for w in claim_words)
    page_neg = any(w in _NEGATION for w in page_words)
    numbers = set(_NUMBER.findall(claim))
    return [
        len(claim_content & page_set) / max(1, len(claim_content)),
        sum(b in page_bigrams for b in bigrams) / max(1, len(bigrams)),
        len(page_content & set(claim_words)) / max(1, len(page_content)),
        float(claim_neg),
        float(page_neg),
        float(claim_neg != page_neg),
        float(bool(numbers - set(_NUMBER.findall(evidence)))),
        math.log1p(len(claim_words)),
        math.log1p(len(page_words)),
    ]


def bias_log_probs(claims: Sequence[str], evidences: Sequence[str], labels: Sequence[int]) -> tuple[Any, dict]:
    """Log-probabilities (one row per pair, columns in the model's label order) of a bias-only
    logistic regression fitted on the pairs whose label is a class id (0, 1, 2; FEVER's
    ``not_entailment``, -1, is left out of the fit but read), and a record of the fit."""
    from sklearn.linear_model import LogisticRegression

    x = np.array([lexical_features(c, e) for c, e in zip(claims, evidences, strict=True)], dtype=np.float64)
    y = np.array(labels)
    known = y >= 0
    model = LogisticRegression(max_iter=1000, C=1.0).fit(x[known], y[known])
    if list(model.classes_) != [0, 1, 2]:
        raise ValueError(f"the bias-only model needs pairs of all three labels, not {list(model.classes_)}")
    log_p = model.predict_log_proba(x)
    record = {
        "features": list(FEATURES),
        "fitted_pairs": int(known.sum()),
        "accuracy": round(float((model.predict(x[known]) == y[known]).mean()), 4),
        "coefficients": {
            label: dict(zip(FEATURES, (round(float(w), 3) for w in row), strict=True))
            for label, row in zip(("entailment", "neutral", "contradiction"), model.coef_, strict=True)
        },
    }
    return log_p, record
