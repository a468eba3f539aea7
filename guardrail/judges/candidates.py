"""What the local judge scores for one request: the evidence candidates (sentences, windows of
consecutive sentences, non-adjacent sentences joined), in the order and rounds they are scored."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from guardrail.core.schema import JudgeRequest
from guardrail.judges import checks
from guardrail.judges.local_config import LocalJudgeConfig

ENT, NEU, CON = 0, 1, 2
"""Columns of the probability rows: entailment, neutral, contradiction."""


@dataclass
class Candidate:
    """One piece of evidence scored against the claim."""

    kind: str  # sentence | window | combined | passage
    text: str
    passage: int
    sentences: list[tuple[int, int]]  # spans (within the passage) of the sentences it holds
    quote: str | None  # the exact substring to quote (None: pick its best sentence)
    parts: list[tuple[int, tuple[int, int]]] = field(default_factory=list)  # combined: (passage, span)
    probs: np.ndarray = field(default_factory=lambda: np.zeros(3, dtype=np.float32))
    rank: int = 0  # sentence: its place in the claim-likeness ranking (0 best); window: its best seed's


@dataclass
class Scored:
    """A request with every candidate scored: the input of :func:`decide`."""

    claim: str
    passages: list[str]
    candidates: list[Candidate]
    parts: list[tuple[str, list[Candidate]]] = field(default_factory=list)  # each part and its scored candidates
    reason: str | None = None  # decided without scoring (unsupported_language)


def plan_rounds(plan: Sequence[Candidate], config: LocalJudgeConfig) -> list[list[Candidate]]:
    """A request's candidates grouped into scoring rounds, cheapest and likeliest to settle the
    request first (empty rounds left out): the ``first_round`` best-ranked sentences; the windows
    around those (a sentence that names its subject by a pronoun reads as support with its
    neighbour); the other sentences; then everything else. One round when ``early_exit`` is off."""
    if config.early_exit >= 1.0:
        return [list(plan)] if plan else []
    first_n = config.first_round if config.first_round > 0 else config.max_sentences
    rounds: list[list[Candidate]] = [[], [], [], []]
    for cand in plan:
        if cand.kind == "sentence":
            rounds[0 if cand.rank < first_n else 2].append(cand)
        elif cand.kind == "window" and cand.rank < first_n:
            rounds[1].append(cand)
        else:
            rounds[3].append(cand)
    return [r for r in rounds if r]


def part_candidates(part: str, plan: Sequence[Candidate], n: int) -> list[Candidate]:
    """Copies of the ``n`` sentences and windows of a request sharing most of ``part``'s words (best
    ranked first on ties), to be scored against the part."""
    pool = [c for c in plan if c.kind in ("sentence", "window")]
    pool.sort(key=lambda c: (-checks.overlap(part, c.text), c.kind != "sentence", c.rank))
    return [dataclasses.replace(c, probs=np.zeros(3, dtype=np.float32)) for c in pool[:n]]


# -- candidates ----------------------------------------------------------------


_Unit = tuple[int, int, tuple[int, int], str]
"""One evidence sentence: (passage index, position in the passage, character span, text)."""


def _sentence_units(request: JudgeRequest, config: LocalJudgeConfig) -> tuple[list[_Unit], list[list[tuple[int, int]]]]:
    """The sentences of every passage long enough to judge, and each passage's sentence spans."""
    units: list[_Unit] = []
    per_passage: list[list[tuple[int, int]]] = []
    for p, passage in enumerate(request.passages):
        spans = [
            span
            for span in checks.sentence_spans(passage)
            if len(passage[span[0] : span[1]].split()) >= config.min_sentence_words
        ]
        per_passage.append(spans)
        units.extend((p, i, span, passage[span[0] : span[1]]) for i, span in enumerate(spans))
    return units, per_passage


def build_candidates(request: JudgeRequest, config: LocalJudgeConfig) -> list[Candidate]:
    """The evidence to score for one request, within the budget of ``config``: the sentences that
    cover the claim's rarer words best, windows of consecutive sentences around the best few,
    the best few joined when they are not adjacent, and (optionally) each passage whole. Every
    text is listed once: a one-sentence passage is not also scored as a passage."""
    units, per_passage = _sentence_units(request, config)
    scores = checks.rank_sentences(request.claim, [u[3] for u in units])
    # Best first; stable, so ties keep page order. A sentence sharing no word with the claim still
    # fills a free place: a lone evidence sentence often names its subject by a pronoun only and
    # says the rest in other words ("He is the lead vocalist..." for "X is a musician").
    ranked: list[int] = []
    seen: set[str] = set()
    for k in sorted(range(len(units)), key=lambda k: -scores[k]):
        if units[k][3] not in seen:
            seen.add(units[k][3])
            ranked.append(k)
    out: list[Candidate] = []
    texts: set[str] = set()

    def add(cand: Candidate) -> None:
        if cand.text not in texts:
            texts.add(cand.text)
            out.append(cand)

    rank_of = {k: r for r, k in enumerate(ranked)}
    for k in sorted(ranked[: config.max_sentences], key=lambda k: (units[k][0], units[k][1])):
        p, _, span, text = units[k]
        add(Candidate("sentence", text, p, [span], text, rank=rank_of[k]))
    seeds = {(units[k][0], units[k][1]): rank_of[k] for k in ranked[: config.window_seeds]}
    for p, spans in enumerate(per_passage):
        passage = request.passages[p]
        for size in config.window_sizes:
            for i in range(len(spans) - size + 1):
                inside = [seeds[(p, j)] for j in range(i, i + size) if (p, j) in seeds]
                if inside:
                    s, e = spans[i][0], spans[i + size - 1][1]
                    add(Candidate("window", passage[s:e], p, spans[i : i + size], passage[s:e], rank=min(inside)))
        # A passage no longer than the longest window is already scored as a window or sentence.
        if config.score_passages and seeds and len(spans) > max(config.window_sizes, default=1):
            add(Candidate("passage", passage, p, spans, None))
    for n in config.combine_top:
        top = sorted(ranked[:n], key=lambda k: (units[k][0], units[k][1]))
        if len(top) < 2:
            continue
        positions = [units[k][1] for k in top]
        if len({units[k][0] for k in top}) == 1 and max(positions) - min(positions) == len(top) - 1:
            continue  # consecutive: a window already covers it
        text = " ".join(units[k][3] for k in top)
        parts = [(units[k][0], units[k][2]) for k in top]
        add(Candidate("combined", text, -1, [units[k][2] for k in top], None, parts=parts))
    return out


def _top_entailing(scored: Scored, config: LocalJudgeConfig) -> list[Candidate]:
    sentences = [c for c in scored.candidates if c.kind == "sentence"]
    sentences.sort(key=lambda c: -float(c.probs[ENT]))
    return sorted(sentences[: config.rescore_top], key=lambda c: (c.passage, c.sentences[0][0]))


def entailing_combination(scored: Scored, config: LocalJudgeConfig) -> Candidate | None:
    """The ``rescore_top`` most entailing sentences of a scored request joined in page order
    (None when they are fewer than two, or already scored together)."""
    top = _top_entailing(scored, config)
    if len(top) < 2:
        return None
    text = " ".join(c.text for c in top)
    if any(c.text == text for c in scored.candidates):
        return None
    return Candidate(
        "combined",
        text,
        -1,
        [c.sentences[0] for c in top],
        None,
        parts=[(c.passage, c.sentences[0]) for c in top],
    )


__all__ = [
    "CON",
    "ENT",
    "NEU",
    "Candidate",
    "Scored",
    "build_candidates",
    "entailing_combination",
    "part_candidates",
    "plan_rounds",
]
