"""What the local judge's decision reads: per (claim, sentence) features, and one vector per request.

For every sentence the model has read, the features say what the model made of it (its three
probabilities on the sentence with its page's topic, on the sentence alone and on the best window
holding it) and what the words say (how much of the claim and of each of its atomic parts it
covers; whether it agrees on numbers, years, names, negation, direction words and the order of a
relation's roles; whether it is about the claim's subject once pronouns and "the film" are read as
the page's topic). None of these vetoes anything: a learned classifier weighs them
(:mod:`guardrail.judges._decision`).

A request's vector joins the features of its most supporting sentence and of its most
contradicting one with a few page-wide figures. Pure functions of the scored candidates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from guardrail.judges import _checks as checks
from guardrail.judges._candidates import CON, ENT, NEU, Candidate, Scored
from guardrail.judges._context import opens_with_reference, topic_name
from guardrail.judges._parts import claim_parts, subject_of

UNIT_FEATURES: tuple[str, ...] = (
    "ent_context",
    "neu_context",
    "con_context",
    "ent_alone",
    "con_alone",
    "ent_window",
    "con_window",
    "ent_best",
    "con_best",
    "overlap",
    "overlap_window",
    "bigrams",
    "parts_covered",
    "number_missing",
    "number_conflict",
    "year_conflict",
    "name_missing",
    "name_substituted",
    "negation_flip",
    "antonym_flip",
    "role_swap",
    "other_rank",
    "subject_named",
    "subject_by_reference",
    "subject_elsewhere",
    "con_about_subject",
    "conflict_about_subject",
    "rank",
    "name_restated",
)
"""Per (claim, sentence): see :func:`unit_features`."""

REQUEST_FEATURES: tuple[str, ...] = (
    *(f"support_{name}" for name in UNIT_FEATURES),
    *(f"contra_{name}" for name in UNIT_FEATURES),
    "max_ent",
    "max_con",
    "max_ent_combined",
    "page_lacks_a_name",
    "page_lacks_a_number",
    "claim_denies",
    "claim_words",
    "no_candidate",
    "page_overlap",
    "page_parts_covered",
)
"""Per request: the features of its most supporting and most contradicting sentence, then page-wide ones."""


@dataclass(frozen=True)
class Unit:
    """A sentence the model read, with its best readings and features."""

    index: int  # into Scored.units
    features: np.ndarray
    support_score: float
    contra_score: float
    support_candidate: Candidate  # the reading (sentence, alone or window) that supports it most
    contra_candidate: Candidate


def lead_name(claim: str) -> str | None:
    """The name the claim is about (the last name of its subject, else a name opening it)."""
    lead = checks.entities(subject_of(claim))[-1:]
    if lead:
        return lead[0]
    names = checks.entities(claim)
    if names and names[0] in " ".join(claim.split()[:3]):
        return names[0]
    return None


def conflicts_of(
    claim: str, text: str, referent: str = "", topic: str = ""
) -> tuple[bool, bool, bool, bool, bool, bool, bool]:
    """(number, year, name, negation, antonym, role, rank): what the sentence states otherwise.

    ``referent`` is the name that a sentence opening with "It" or "The film" stands for (the claim's
    subject, where the page's topic or the sentence before names it): it counts as the sentence's
    when asking whether the sentence says the rest of the claim with another number or year, or
    negated ("It was published in 1859" after "On the Origin of Species is a work by Charles
    Darwin"). ``topic`` is the sentence's page title or heading, read with a study's null result
    (:func:`~guardrail.judges._checks.null_result`).

    A claim that denies something ("is not an American series", "was not the first woman") is at
    odds only with its own negation: another value, year, name or rank ("is a French series",
    "became the second woman") is what the denial says, or something else."""
    said = f"{referent} {text}" if referent else text
    quantity = checks.conflicting_quantity(claim, text)
    number = quantity is not None and checks.overlap_without(claim, quantity[0].raw, said) >= 0.5
    year_hit = checks.conflicting_year(claim, text)
    year = year_hit is not None and checks.overlap_without(claim, year_hit[0].raw, said) >= 0.5
    date_hit = checks.conflicting_date(claim, text)
    year = year or (date_hit is not None and checks.overlap_without(claim, date_hit[0], said) >= 0.5)
    name_hit = checks.substituted_entity(claim, text)
    # Not for a name: "He previously coached in the Ontario Hockey League" is about another time.
    name = name_hit is not None and checks.overlap_without(claim, name_hit[0], text) >= 0.5
    close = checks.overlap(claim, said) >= 0.5
    negation = close and checks.negation_flip(claim, text)
    # A sentence that denies the claim's own word ("did not reduce the risk" for "reduces the
    # risk") or reports no effect where it claims one ("did not differ between groups") states its
    # opposite as surely as an antonym does.
    antonym = checks.antonym_flip(claim, text, 0.5) is not None or checks.says_otherwise(claim, text, topic) is not None
    role = checks.role_swap(claim, text) is not None
    rank = checks.other_rank(claim, text)
    if checks.negation_count(claim) % 2:
        alternative = number or year or name or rank  # what "not X" implies: no conflict
        return False, False, False, negation and not alternative, False, False, False
    return number, year, name, negation, antonym, role, rank


def unit_features(scored: Scored, index: int, readings: list[Candidate], parts: list[str]) -> Unit:
    """The features of one sentence from its readings (the sentence with its topic, alone, and the
    windows holding it): a reading not scored takes the topic reading's probabilities."""
    unit = scored.units[index]
    claim = scored.claim
    context = next((c for c in readings if c.kind == "sentence" and c.scored), None)
    alone = next((c for c in readings if c.kind == "plain" and c.scored), None)
    windows = [c for c in readings if c.kind == "window" and c.scored]
    base = context or alone or windows[0]
    ctx = base.probs
    plain = alone.probs if alone is not None else ctx
    window = max(windows, key=lambda c: float(c.probs[ENT])) if windows else base
    win = window.probs
    scored_readings = [c for c in (context, alone, window) if c is not None]
    if context is not None and float(ctx[CON]) >= 0.5 and ctx[CON] > ctx[ENT]:
        # Read with its topic, the sentence contradicts the claim: a window around it (whose other
        # sentences say other things) or the sentence alone does not outweigh that reading.
        scored_readings = [context]
    support_candidate = max(scored_readings, key=lambda c: float(c.probs[ENT] - c.probs[CON]))
    contra_candidate = context or alone or window
    around = " ".join(x for x in (unit.topic, unit.previous, unit.text) if x)
    wide = window.text if windows else unit.text
    lead = lead_name(claim)
    named = lead is not None and checks.names_the_same(lead, unit.text)
    topic = topic_name(unit.topic) or ""
    in_topic = lead is not None and bool(topic) and checks.names_the_same(lead, topic)
    in_previous = lead is not None and unit.previous is not None and checks.names_the_same(lead, unit.previous)
    # A lone sentence with no topic (a fact, a chunk) that says "It ..." is given the benefit of
    # the doubt: its subject is most likely what it was cited for.
    unknown = not topic and unit.previous is None
    opens = opens_with_reference(unit.text)
    # "It was published in 1859" after a sentence naming the claim's subject: "It" stands for that name.
    referent = lead if opens and lead is not None and (in_topic or in_previous) else ""
    number, year, name, negation, antonym, role, rank = conflicts_of(claim, unit.text, referent, unit.topic or "")
    # A study's null result on the claim's outcome ("Scores did not differ between groups") speaks of
    # what the study tested, as "It" does. Only for a conflict: "Heart rate was similar between
    # groups" backs no claim of the study's subject.
    refers = opens or (antonym and checks.speaks_of_the_study(unit.text))
    by_reference = refers and (lead is None or in_topic or in_previous or unknown)
    elsewhere = lead is not None and not (named or by_reference or in_topic)
    about = named or by_reference or (lead is None and bool(checks.overlap(claim, unit.text)))
    # The sentence, or a sentence of the window it is read in, entails the claim with its own name
    # in the place of the claim's: it says the same thing of another name ("directed by James
    # Cameron" for "directed by Steven Spielberg"), so that reading cannot back the claim.
    held = {index, *support_candidate.units}
    restated = 0.0 if elsewhere else max(scored.restated.get(k, 0.0) for k in held)
    if elsewhere:
        # Another value in a sentence about something else ("The Birch River is 107 km long" for
        # the Alder River) says nothing against the claim.
        number = year = name = antonym = role = rank = False
    coverage = min((checks.overlap(part, f"{topic} {wide}") for part in parts), default=0.0)
    con_best = max(float(ctx[CON]), float(plain[CON]))
    values = [
        float(ctx[ENT]),
        float(ctx[NEU]),
        float(ctx[CON]),
        float(plain[ENT]),
        float(plain[CON]),
        float(win[ENT]),
        float(win[CON]),
        max(float(c.probs[ENT]) for c in scored_readings),
        con_best,
        checks.overlap(claim, unit.text),
        checks.overlap(claim, f"{topic} {wide}"),
        checks.bigram_overlap(claim, unit.text),
        coverage,
        float(bool(checks.missing_numbers(claim, around))),
        float(number),
        float(year),
        float(bool(checks.missing_entities(claim, around))),
        float(name),
        float(negation),
        float(antonym),
        float(role),
        float(rank),
        float(named),
        float(by_reference),
        float(elsewhere),
        con_best * float(about),
        float(about and (number or year or name or negation or antonym or role)),
        math.log1p(unit.rank),
        restated,
    ]
    support = float(support_candidate.probs[ENT] - support_candidate.probs[CON])
    # The sentence most worded like the claim among those read as contradicting it ("at sea level"
    # rather than "above sea level"): the one a reader would hold against it.
    stated = float(number or year or name or antonym or role or restated >= 0.5)
    contra = con_best * (1.0 if about else 0.5) + 0.25 * stated + 0.2 * checks.bigram_overlap(claim, unit.text)
    return Unit(index, np.asarray(values, dtype=np.float32), support, contra, support_candidate, contra_candidate)


def units_of(scored: Scored) -> list[Unit]:
    """Every sentence the model read, with its features (as :meth:`Scored.readings` gives them)."""
    parts = claim_parts(scored.claim)
    read = scored.readings()
    readings: dict[int, list[Candidate]] = {}
    for cand in read:
        if cand.kind in ("sentence", "plain"):
            readings.setdefault(cand.units[0], []).append(cand)
    for cand in read:
        if cand.kind == "window":
            for k in cand.units:
                if k in readings:
                    readings[k].append(cand)
    return [unit_features(scored, k, cands, parts) for k, cands in readings.items()]


def request_features(scored: Scored, units: list[Unit] | None = None) -> tuple[np.ndarray, Unit | None, Unit | None]:
    """The request's feature vector (:data:`REQUEST_FEATURES`) and its most supporting and most
    contradicting sentence (None when the model read none)."""
    units = units_of(scored) if units is None else units
    empty = np.zeros(len(UNIT_FEATURES), dtype=np.float32)
    support = max(units, key=lambda u: u.support_score) if units else None
    contra = max(units, key=lambda u: u.contra_score) if units else None
    cands = scored.readings()
    combined = [c for c in cands if c.kind == "combined"]
    page = " ".join([scored.title or "", *scored.passages])
    claim = scored.claim
    on_page = checks.overlap(claim, page)
    tail = [
        max((float(c.probs[ENT]) for c in cands), default=0.0),
        max((float(c.probs[CON]) for c in cands), default=0.0),
        max((float(c.probs[ENT]) for c in combined), default=0.0),
        float(bool(checks.missing_entities(claim, page))),
        float(bool(checks.missing_numbers(claim, page))),
        float(checks.negation_count(claim) % 2 == 1),
        math.log1p(len(claim.split())),
        float(not units),
        # What the plain word-overlap rule reads, as evidence among the rest: how much of the claim,
        # and of its least covered part, the passages say anywhere (evidence spread over sentences).
        # How many sentences were read is not a feature: a page's length must not move the label.
        on_page,
        min((checks.overlap(part, page) for part in claim_parts(claim)), default=on_page),
    ]
    vector = np.concatenate(
        [
            support.features if support is not None else empty,
            contra.features if contra is not None else empty,
            np.asarray(tail, dtype=np.float32),
        ]
    )
    return vector, support, contra


__all__ = [
    "NEU",
    "REQUEST_FEATURES",
    "UNIT_FEATURES",
    "Unit",
    "conflicts_of",
    "request_features",
    "unit_features",
    "units_of",
]
