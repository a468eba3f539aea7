"""What the local judge scores for one request: each sentence as a reader of its page reads it (with
the page's topic), the sentence alone, windows of consecutive sentences and the best sentences
joined, and in which of the two rounds each is scored."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import numpy as np

from guardrail.core.schema import JudgeRequest
from guardrail.judges import _checks as checks
from guardrail.judges._context import clean_topic, in_context, nearest_heading, opening_name
from guardrail.judges.local_config import LocalJudgeConfig

_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s")

ENT, NEU, CON = 0, 1, 2
"""Columns of the probability rows: entailment, neutral, contradiction."""
NEUTRAL = np.array([0.0, 1.0, 0.0], dtype=np.float32)
"""A reading that neither backs nor contradicts the claim."""


@dataclass
class Unit:
    """One sentence of the passages shown: where it is, its text, and what a reader knows of it."""

    passage: int
    index: int  # position among the passage's sentences
    span: tuple[int, int]  # characters within the passage
    text: str
    topic: str | None  # the page's title, else the nearest heading, else the name the passage opens with
    previous: str | None  # the sentence before it in its passage
    rank: int = 0  # its place in the claim-likeness ranking (0 best)


@dataclass
class Candidate:
    """One piece of evidence scored against the claim: what the model reads (``model_text``) and
    what may be quoted (``quote``: an exact substring of a passage, or None for joined sentences)."""

    kind: str  # sentence (with its topic) | plain (the sentence alone) | window | combined
    text: str  # the evidence itself (sentences of the page, exactly)
    passage: int  # -1 for combined
    units: list[int]  # indices into Scored.units of the sentences it holds
    quote: str | None
    model_text: str = ""  # what the model reads: the text with its topic (see guardrail.judges._context)
    probs: np.ndarray = field(default_factory=lambda: np.zeros(3, dtype=np.float32))
    scored: bool = False

    def __post_init__(self) -> None:
        if not self.model_text:
            self.model_text = self.text


@dataclass
class Scored:
    """A request with its candidates and those scored so far: the input of the decision."""

    claim: str
    passages: list[str]
    units: list[Unit]
    candidates: list[Candidate]
    title: str | None = None
    parts: list[tuple[str, list[Candidate]]] = field(default_factory=list)  # each part and its scored evidence
    reason: str | None = None  # decided without scoring (unsupported_language)
    round_one: int = 0  # candidates[:round_one] are the first round's
    restated: dict[int, float] = field(default_factory=dict)
    """Per sentence (index into ``units``) that names something else in the place of one of the
    claim's names: the entailment probability of the claim restated with the sentence's name
    (:func:`restatements`). High when the sentence says the same thing of another name."""

    def scored_candidates(self) -> list[Candidate]:
        """The candidates the model has read, in plan order."""
        return [c for c in self.candidates if c.scored]

    def readings(self) -> list[Candidate]:
        """:meth:`scored_candidates` as the decision takes them (:func:`as_read`)."""
        return [as_read(self.claim, c) for c in self.scored_candidates()]


def as_read(claim: str, cand: Candidate) -> Candidate:
    """``cand`` as the decision takes it for ``claim``, where the words settle what the model cannot
    read:

    - a candidate that says what the claim says only inside a question, an aim or a supposition
      (:func:`~guardrail.judges._checks.unasserted`: "This study examined whether ...", "Does X
      improve Y?") reads neutral: a study's aim is not its finding, and the model reads the words,
      not the mood;
    - a candidate that puts another word of a kind in the place of the claim's
      (:func:`~guardrail.judges._checks.kind_swap`: "symptoms of depression" for "symptoms of
      anxiety", "in mice" for "in humans") backs nothing: its entailment counts as neutral, and
      whether it contradicts the claim stays the model's reading.

    Otherwise ``cand`` itself; a changed reading is a copy (the model's own stays on ``cand``)."""
    if checks.unasserted(claim, cand.text):
        return dataclasses.replace(cand, probs=NEUTRAL.copy())
    if checks.kind_swap(claim, cand.text) is not None or checks.denies(claim, cand.text):
        probs = np.array(cand.probs, dtype=np.float32, copy=True)
        probs[NEU] += probs[ENT]
        probs[ENT] = 0.0
        return dataclasses.replace(cand, probs=probs)
    return cand


def _units(request: JudgeRequest, config: LocalJudgeConfig) -> list[Unit]:
    """The sentences of every passage long enough to judge, with their topic and the sentence before."""
    title = clean_topic(request.title) if config.page_context else None
    units: list[Unit] = []
    for p, passage in enumerate(request.passages):
        spans = [
            span
            for span in checks.sentence_spans(passage)
            if len(passage[span[0] : span[1]].split()) >= config.min_sentence_words
            and not _HEADING_LINE.match(passage[span[0] : span[1]])  # a heading is a topic, not evidence
        ]
        fallback = None if title else opening_name(passage[spans[0][0] : spans[0][1]]) if spans else None
        previous: str | None = None
        for i, span in enumerate(spans):
            text = passage[span[0] : span[1]]
            topic = (
                (title or clean_topic(nearest_heading(passage, span[0])) or fallback) if config.page_context else None
            )
            units.append(Unit(p, i, span, text, topic, previous))
            previous = text
    return units


class _Plan:
    """The candidates of one request as they are added: each model text once, in order."""

    def __init__(self, request: JudgeRequest, units: list[Unit]) -> None:
        self.request = request
        self.units = units
        self.candidates: list[Candidate] = []
        self.texts: set[str] = set()
        self.by_place = {(u.passage, u.index): k for k, u in enumerate(units)}

    def add(self, cand: Candidate) -> None:
        if cand.model_text not in self.texts:
            self.texts.add(cand.model_text)
            self.candidates.append(cand)

    def sentence(self, k: int) -> None:
        u = self.units[k]
        self.add(Candidate("sentence", u.text, u.passage, [k], u.text, in_context(u.text, u.topic)))

    def plain(self, k: int) -> None:
        u = self.units[k]
        self.add(Candidate("plain", u.text, u.passage, [k], u.text))

    def window(self, k: int, start: int, size: int) -> None:
        """The ``size`` sentences from position ``start`` of unit ``k``'s passage, when all are there."""
        u = self.units[k]
        ks = [self.by_place.get((u.passage, j)) for j in range(start, start + size)]
        if any(x is None for x in ks):
            return
        first, last = self.units[ks[0]], self.units[ks[-1]]  # type: ignore[index]
        text = self.request.passages[first.passage][first.span[0] : last.span[1]]
        self.add(
            Candidate(
                "window", text, first.passage, [x for x in ks if x is not None], text, in_context(text, first.topic)
            )
        )

    def combined(self, top: list[int], topic: str | None) -> None:
        """The sentences ``top`` joined in page order, unless they are consecutive (a window)."""
        top = sorted(top, key=lambda k: (self.units[k].passage, self.units[k].index))
        if len(top) < 2:
            return
        same = len({self.units[k].passage for k in top}) == 1
        if same and self.units[top[-1]].index - self.units[top[0]].index == len(top) - 1:
            return
        text = " ".join(self.units[k].text for k in top)
        self.add(Candidate("combined", text, -1, top, None, in_context(text, topic)))


def _ranked(claim: str, units: list[Unit]) -> list[int]:
    """Unit indices best first (the claim's rarer words covered), each sentence text once; sets ``rank``."""
    scores = checks.rank_sentences(claim, [u.text for u in units])
    order: list[int] = []
    seen: set[str] = set()
    for k in sorted(range(len(units)), key=lambda k: -scores[k]):
        if units[k].text not in seen:  # a sentence repeated on the page is one candidate
            seen.add(units[k].text)
            order.append(k)
    for rank, k in enumerate(order):
        units[k].rank = rank
    return order


def build_candidates(request: JudgeRequest, config: LocalJudgeConfig) -> Scored:
    """Every candidate of one request within the budget of ``config``, in the order they are scored:

    round 1: the ``first_round`` best-ranked sentences, each with its topic; round 2 (the rest of the
    budget): the best one alone and with the sentence before it, the next sentences with their topic
    up to ``max_sentences``, the best ``plain_sentences`` alone, windows of 2-3 sentences around the
    ``window_seeds`` best, and the best few joined when they are not adjacent. Every model text is
    listed once."""
    units = _units(request, config)
    order = _ranked(request.claim, units)
    plan = _Plan(request, units)
    for k in order[: config.first_round]:
        plan.sentence(k)
    round_one = len(plan.candidates)
    if order:  # the best sentence alone and with the sentence before it first
        plan.plain(order[0])
        plan.window(order[0], units[order[0]].index - 1, 2)
    for k in order[config.first_round : config.max_sentences]:
        plan.sentence(k)
    for k in order[: config.plain_sentences]:
        plan.plain(k)
    for k in order[: config.window_seeds]:
        for size in config.window_sizes:
            for start in range(units[k].index - size + 1, units[k].index + 1):
                plan.window(k, start, size)
    title = clean_topic(request.title)
    for n in config.combine_top:
        plan.combined(order[:n], title)
    return Scored(request.claim, list(request.passages), units, plan.candidates, title=title, round_one=round_one)


def restatements(scored: Scored) -> list[tuple[int, str, Candidate]]:
    """The restatements still to read: for each scored sentence (read with its topic) that names
    something else where the claim names something the sentence does not ("directed by James
    Cameron" for "directed by Steven Spielberg"), the claim with the sentence's name in its place,
    to be read against that sentence. What the sentence then entails is what it says of the
    claim's subject instead of what the claim says."""
    out: list[tuple[int, str, Candidate]] = []
    for cand in scored.candidates:
        if cand.kind != "sentence" or not cand.scored or cand.units[0] in scored.restated:
            continue
        k = cand.units[0]
        text = scored.units[k].text
        hit = checks.substituted_entity(scored.claim, text)
        # Only where the sentence says the rest of the claim (its relation words): a sentence that
        # merely names other people says nothing in the claim's place.
        if hit is not None and hit[0] in scored.claim and checks.overlap_without(scored.claim, hit[0], text) >= 0.5:
            out.append((k, scored.claim.replace(hit[0], hit[1]), cand))
    return out


def part_candidates(scored: Scored, part: str, n: int) -> list[Candidate]:
    """The ``n`` sentences sharing most of ``part``'s words (best ranked first on ties), each with its
    topic, to be read against the part."""
    order = sorted(
        range(len(scored.units)),
        key=lambda k: (
            -checks.overlap(part, f"{scored.units[k].topic or ''} {scored.units[k].text}"),
            scored.units[k].rank,
        ),
    )
    out = []
    for k in order[:n]:
        u = scored.units[k]
        if checks.overlap(part, f"{u.topic or ''} {u.text}") > 0:
            out.append(Candidate("part", u.text, u.passage, [k], u.text, in_context(u.text, u.topic)))
    return out


__all__ = [
    "CON",
    "ENT",
    "NEU",
    "NEUTRAL",
    "Candidate",
    "Scored",
    "Unit",
    "as_read",
    "build_candidates",
    "part_candidates",
    "restatements",
]
