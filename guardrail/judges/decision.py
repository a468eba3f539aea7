"""How the local judge turns scored candidates into a verdict: support only when no check vetoes
it and every part of the claim is backed, contradiction only where the page states something
incompatible about the claim's own subject, and a calibrated confidence."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from guardrail.core.schema import JudgeVerdict, Reason
from guardrail.judges import checks
from guardrail.judges.candidates import CON, ENT, Candidate, Scored
from guardrail.judges.local_config import LocalJudgeConfig
from guardrail.judges.parts import subject_of

NOTHING_RELATED = "not_found_nothing_related"
"""The calibration entry of a ``not_found`` for which no candidate could decide (every sentence
shares too few of the claim's words): no model score to scale, so one confidence, its hit rate."""


def could_support(scored: Scored, cand: Candidate, config: LocalJudgeConfig) -> bool:
    """Whether the checks would let this candidate support the claim if the model read it so: none
    of :func:`_support_problem`'s vetoes (too few of the claim's words, a number or name it lacks,
    a negation, antonym, other name or other year). Lexical: known before scoring."""
    return _support_problem(scored, cand, config) is None


def could_contradict(scored: Scored, cand: Candidate, config: LocalJudgeConfig) -> bool:
    """Whether this candidate could make the claim ``contradicted`` if the model read it so: a
    sentence or window about the claim's subject (:func:`same_subject`) that is a sentence stating
    a conflict in the claim's terms (:func:`conflict_kind`), or, with ``model_contradicts``, that
    shares ``contradict_min_overlap`` of the claim's words. Lexical: known before scoring."""
    if cand.kind not in ("sentence", "window") or not same_subject(scored, cand, config):
        return False
    if cand.kind == "sentence" and conflict_kind(scored.claim, cand.text, config) is not None:
        return True
    return config.model_contradicts and checks.overlap(scored.claim, cand.text) >= config.contradict_min_overlap


def could_decide(scored: Scored, cand: Candidate, config: LocalJudgeConfig) -> bool:
    """Whether the model's score of this candidate could change the verdict: it
    :func:`could_support` or :func:`could_contradict` the claim. Any other candidate is vetoed
    whatever the model says, so scoring it is wasted work (``LocalJudgeConfig.skip_unrelated``;
    off: every candidate may decide)."""
    if not config.skip_unrelated:
        return True
    return could_support(scored, cand, config) or could_contradict(scored, cand, config)


def could_back_part(scored: Scored, part: str, cand: Candidate, config: LocalJudgeConfig) -> bool:
    """Whether this candidate could back one part of a split claim if the model read it so (none of
    :func:`_part_problem`'s vetoes); always, with ``skip_unrelated`` off."""
    return not config.skip_unrelated or _part_problem(scored, part, cand, config) is None


def settled(scored: Scored, config: LocalJudgeConfig, early_exit: float, remaining: Sequence[Candidate] = ()) -> bool:
    """Whether scoring can stop: the candidates scored so far support the claim clearly enough
    (``early_exit``, or the request's higher ``settle_at``; see ``LocalJudgeConfig.early_exit``),
    or they contradict it and none of the ``remaining`` candidates could support it (only support
    can undo a contradiction: by outweighing it, or in a window that holds the contradicting
    sentence), so the label is the one scoring everything gives."""
    cands = scored.candidates if config.use_combined else [c for c in scored.candidates if c.kind != "combined"]
    contra = _contradiction(scored, cands, config)
    if contra is not None:
        return not any(could_support(scored, c, config) for c in remaining)
    support = _best_support(scored, cands, config)
    return support is not None and support[0] >= early_exit


# -- decision ----------------------------------------------------------------


def _sentence_texts(scored: Scored, cand: Candidate) -> list[str]:
    if cand.kind == "combined":
        return [scored.passages[p][s:e] for p, (s, e) in cand.parts]
    passage = scored.passages[cand.passage]
    return [passage[s:e] for s, e in cand.sentences]


def _best_sentence(scored: Scored, cand: Candidate, column: int) -> str:
    """The sentence of a multi-sentence candidate whose own score in ``column`` is highest."""
    texts = _sentence_texts(scored, cand)
    by_text = {c.text: float(c.probs[column]) for c in scored.candidates if c.kind == "sentence"}
    return max(texts, key=lambda t: (by_text.get(t, 0.0), checks.overlap(scored.claim, t)))


def _quote(scored: Scored, cand: Candidate, column: int) -> str:
    return cand.quote if cand.quote is not None else _best_sentence(scored, cand, column)


def _support_quote(scored: Scored, cand: Candidate, config: LocalJudgeConfig) -> str:
    """A single sentence when one alone of a window supports the claim; else the window itself."""
    if cand.kind == "window":
        inside = {scored.passages[cand.passage][s:e] for s, e in cand.sentences}
        alone = [
            c
            for c in scored.candidates
            if c.kind == "sentence"
            and c.passage == cand.passage
            and c.text in inside
            and float(c.probs[ENT]) >= config.support_threshold
            and _support_problem(scored, c, config) is None
        ]
        if alone:
            return max(alone, key=lambda c: float(c.probs[ENT])).text
    return _quote(scored, cand, ENT)


def _support_problem(scored: Scored, cand: Candidate, config: LocalJudgeConfig, claim: str | None = None) -> str | None:
    """Why this candidate cannot support the claim (or one part of it, ``claim``) despite the
    model, or None when it can."""
    claim = claim or scored.claim
    if config.support_min_overlap > 0 and checks.overlap(claim, cand.text) < config.support_min_overlap:
        return "unrelated"
    if config.require_numbers and checks.missing_numbers(claim, cand.text):
        return "number"
    close = checks.overlap(claim, cand.text) >= config.negation_min_overlap
    if config.negation_check and close and cand.kind == "sentence" and checks.negation_flip(claim, cand.text):
        return "negation"
    if config.antonym_check and checks.antonym_flip(claim, cand.text, config.negation_min_overlap) is not None:
        return "antonym"
    if config.require_entities:
        scope = " ".join(scored.passages) if cand.kind == "combined" else scored.passages[cand.passage]
        if checks.word_count(scope) >= config.entity_min_words and checks.missing_entities(claim, scope):
            return "entity"
    if config.entity_substitution and _substitution(claim, cand.text, config):
        return "substitution"
    if config.year_conflict and _year_conflict(claim, cand.text, config):
        return "year"
    return None


def _rest_overlap(claim: str, removed: str, evidence: str) -> float:
    """Overlap of the claim, less one of its phrases, with the evidence."""
    return checks.overlap(" ".join(claim.replace(removed, " ").split()), evidence)


def _substitution(claim: str, text: str, config: LocalJudgeConfig) -> bool:
    hit = checks.substituted_entity(claim, text)
    return hit is not None and _rest_overlap(claim, hit[0], text) >= config.substitution_min_overlap


def _year_conflict(claim: str, text: str, config: LocalJudgeConfig) -> bool:
    hit = checks.conflicting_year(claim, text)
    return hit is not None and _rest_overlap(claim, hit[0].raw, text) >= config.number_conflict_min_overlap


def conflict_kind(claim: str, text: str, config: LocalJudgeConfig) -> str | None:
    """What a sentence states differently in the claim's own terms, when the rest of the claim
    matches it closely: another value for the same quantity (``number``), another year for the same
    event (``year``), another name in the claim's place (``name``), the claim's predicate negated
    (``negation``) or turned into its opposite (``antonym``); None otherwise.

    Precision first, a claim that denies something ("is not an American series") must conflict by
    its negation alone: a page stating another value, year, name or rank ("is a French series",
    "became the second woman" against "was not the first woman") says what the denial says, or
    something else; either way it is no conflict."""
    other = _other_value(claim, text, config)
    close = checks.overlap(claim, text) >= config.negation_min_overlap
    flip = config.negation_check and close and checks.negation_flip(claim, text)
    if checks.negation_count(claim) % 2:  # the claim denies something
        return "negation" if flip and other is None and not checks.other_rank(claim, text) else None
    if other is not None:
        return other
    return "negation" if flip else None


def _other_value(claim: str, text: str, config: LocalJudgeConfig) -> str | None:
    """Another value (number), year, name or the opposite word (antonym) in the claim's place."""
    hit = checks.conflicting_quantity(claim, text)
    if hit is not None and _rest_overlap(claim, hit[0].raw, text) >= config.number_conflict_min_overlap:
        return "number"
    if config.year_conflict and _year_conflict(claim, text, config):
        return "year"
    if config.entity_substitution and _substitution(claim, text, config):
        return "name"
    if config.antonym_check and checks.antonym_flip(claim, text, config.negation_min_overlap) is not None:
        return "antonym"
    return None


def conflicts(scored: Scored, config: LocalJudgeConfig) -> list[Candidate]:
    """Sentences that state something else in the claim's own terms (see :func:`conflict_kind`)."""
    return [
        c for c in scored.candidates if c.kind == "sentence" and conflict_kind(scored.claim, c.text, config) is not None
    ]


def _supported_in_context(scored: Scored, sentence: Candidate, config: LocalJudgeConfig) -> bool:
    """Whether a window holding this sentence supports the claim (the model reads it as entailing
    more than contradicting, and no check vetoes it): a sentence opening with "It was directed by
    James Cameron" reads as a contradiction of "Titanic was directed by James Cameron" alone, and
    as support next to the sentence that says what "it" is."""
    span = sentence.sentences[0]
    for cand in scored.candidates:
        if cand.kind != "window" or cand.passage != sentence.passage or span not in cand.sentences:
            continue
        ent = float(cand.probs[ENT])
        supports = ent >= config.support_threshold and ent > float(cand.probs[CON])
        if supports and _support_problem(scored, cand, config) is None:
            return True
    return False


_PRONOUN_OPENING = re.compile(r"^\W*(?:it|he|she|they|his|her|its|their)\b", re.IGNORECASE)


def lead_name(claim: str) -> str | None:
    """The name the claim is about: the last name in its subject ("The first bridge over the Alder
    River" -> "Alder River"), or, where the subject is not found, a name opening the claim ("The
    Alder River flows into ..."); None when the claim is not about a name."""
    lead = checks.entities(subject_of(claim))[-1:]
    if lead:
        return lead[0]
    names = checks.entities(claim)
    if names and names[0] in " ".join(claim.split()[:3]):
        return names[0]
    return None


def same_subject(scored: Scored, cand: Candidate, config: LocalJudgeConfig) -> bool:
    """Whether a candidate is about the claim's subject: it opens with a pronoun (a sentence on the
    subject's own page often names it so), or names the claim's subject itself (the name opening the
    claim, else any of its names; :func:`checks.names_the_same`: "The Birch River is 107 km long"
    is not about "the Alder River"); for a claim without names, it shares a word of the claim's opening."""
    if _PRONOUN_OPENING.match(cand.text):
        return True
    claim = scored.claim
    names = checks.entities(claim)
    lead = lead_name(claim)
    if lead is not None:  # the claim's subject is a name: that name must be there
        return checks.names_the_same(lead, cand.text)
    if names:
        return any(checks.names_the_same(name, cand.text) for name in names)
    opening = checks.content_words(" ".join(claim.split()[:4]))
    return bool(opening & checks.content_words(cand.text))


def _contradiction(
    scored: Scored, cands: Sequence[Candidate], config: LocalJudgeConfig
) -> tuple[float, Candidate, str] | None:
    """Precision first: a sentence or window about the claim's subject that the model reads as
    contradicting it with margin, and either states a conflicting value, year, name, negation or
    antonym in the claim's terms, or (only with ``model_contradicts``) is read as a contradiction
    with high probability while sharing most of the claim's words. Of several, the one worded most
    like the claim. Returns (probability, candidate, kind)."""
    found: list[tuple[float, Candidate, str]] = []
    for cand in cands:
        con, ent = float(cand.probs[CON]), float(cand.probs[ENT])
        if con < config.conflict_min_contradiction or cand.kind not in ("sentence", "window"):
            continue
        if con - ent < config.conflict_margin or not same_subject(scored, cand, config):
            continue
        if config.context_override and cand.kind == "sentence" and _supported_in_context(scored, cand, config):
            continue
        # A window joins sentences on several topics: only a lone sentence is read for a conflict.
        kind = conflict_kind(scored.claim, cand.text, config) if cand.kind == "sentence" else None
        # A negation flip is a weaker cue than another value, year, name or antonym (a negated
        # sentence is often about something else): it needs the model-alone threshold.
        if kind is not None and (kind != "negation" or con >= config.contradict_threshold):
            found.append((con, cand, kind))
            continue
        if not config.model_contradicts:
            continue
        aligned = checks.overlap(scored.claim, cand.text) >= config.contradict_min_overlap
        if aligned and con >= config.contradict_threshold and con - ent >= config.contradict_margin:
            found.append((con, cand, "model"))
    if not found:
        return None
    return max(found, key=lambda f: (f[1].kind == "sentence", checks.bigram_overlap(scored.claim, f[1].text), f[0]))


def _best_support(
    scored: Scored,
    cands: Sequence[Candidate],
    config: LocalJudgeConfig,
    claim: str | None = None,
    threshold: float | None = None,
) -> tuple[float, Candidate] | None:
    """The most entailing candidate that the checks do not veto, with its entailment probability."""
    floor = config.support_threshold if threshold is None else threshold
    for cand in sorted(cands, key=lambda c: -float(c.probs[ENT])):
        p = float(cand.probs[ENT])
        if p < floor:
            break
        if claim is not None:
            # A part is backed on the model's entailment alone (a short fragment against a page
            # sentence often also reads as contradiction): contradictions are the whole claim's.
            if _part_problem(scored, claim, cand, config) is None:
                return p, cand
        elif p > float(cand.probs[CON]) and _support_problem(scored, cand, config) is None:
            return p, cand
    return None


def _part_problem(scored: Scored, part: str, cand: Candidate, config: LocalJudgeConfig) -> str | None:
    """Why this candidate cannot back one part of a split claim: too few of the part's words, a
    number of the part it lacks, a name of the part its page never mentions, or the part's
    predicate turned into its opposite. Lighter than :func:`_support_problem` (no negation, year or
    substitution checks): parts are short fragments that the whole claim's checks already cover."""
    if config.support_min_overlap > 0 and checks.overlap(part, cand.text) < config.support_min_overlap:
        return "unrelated"
    if config.require_numbers and checks.missing_numbers(part, cand.text):
        return "number"
    scope = scored.passages[cand.passage]
    page_like = checks.word_count(scope) >= config.entity_min_words
    if config.require_entities and page_like and checks.missing_entities(part, scope):
        return "entity"
    if config.antonym_check and checks.antonym_flip(part, cand.text, config.negation_min_overlap) is not None:
        return "antonym"
    return None


def _parts(scored: Scored, config: LocalJudgeConfig) -> list[tuple[str, tuple[float, Candidate] | None]]:
    """Each part of a split claim with its best support (None: nothing backs it)."""
    return [(part, _best_support(scored, cands, config, part, config.part_threshold)) for part, cands in scored.parts]


def _calibrated(config: LocalJudgeConfig, label: str, raw: float) -> float:
    """The probability that ``label`` is right, from its raw score (Platt scaling fitted on the tune
    part: ``LocalJudgeConfig.calibration``)."""
    a, b = next(((a, b) for name, a, b in config.calibration if name == label), (1.0, 0.0))
    x = math.log(max(raw, 1e-4) / max(1.0 - raw, 1e-4))
    z = min(max(a * x + b, -30.0), 30.0)  # a steep fit must not overflow exp()
    return round(1.0 / (1.0 + math.exp(-z)), 4)


def decide(scored: Scored, config: LocalJudgeConfig) -> JudgeVerdict:
    """The verdict for one scored request: supported, contradicted or not_found, with the quote,
    the parts backed and missing (for a split claim) and a calibrated confidence."""
    if scored.reason is not None:
        return JudgeVerdict(label="not_found", confidence=1.0, reason=scored.reason)
    cands = scored.candidates if config.use_combined else [c for c in scored.candidates if c.kind != "combined"]
    # What the judge scores (:func:`could_decide`), whatever was scored: a recording that scored
    # everything (the tuner's) decides, confidences included, as the judge at run time does.
    cands = [c for c in cands if could_decide(scored, c, config)]
    if not cands and len(scored.parts) < 2:
        return JudgeVerdict(label="not_found", confidence=_calibrated(config, NOTHING_RELATED, 0.99))
    support = _best_support(scored, cands, config)
    contra = _contradiction(scored, cands, config)
    if contra is not None and (
        support is None or contra[0] - config.contradict_threshold > support[0] - config.support_threshold
    ):
        quote = _quote(scored, contra[1], CON)
        return JudgeVerdict(
            label="contradicted", evidence_quote=quote, confidence=_calibrated(config, "contradicted", contra[0])
        )
    parts = _parts(scored, config) if len(scored.parts) > 1 else []
    backed = [p for p, s in parts if s is not None]
    missing = [p for p, s in parts if s is None]
    if support is not None and parts and not missing:
        raw = min(s[0] for _, s in parts if s is not None)
        raw = min(raw, support[0]) if config.parts_cap_support else support[0]
        quote = _support_quote(scored, support[1], config)
        return JudgeVerdict(
            label="supported",
            evidence_quote=quote,
            confidence=_calibrated(config, "supported", raw),
            supported_parts=backed,
            missing_parts=[],
        )
    if support is not None and not parts:
        return JudgeVerdict(
            label="supported",
            evidence_quote=_support_quote(scored, support[1], config),
            confidence=_calibrated(config, "supported", support[0]),
        )
    if cands:
        top = max(float(max(c.probs[ENT], c.probs[CON])) for c in cands)
        confidence = _calibrated(config, "not_found", 1.0 - top)
    else:  # nothing could decide the whole claim (its parts may still have evidence)
        confidence = _calibrated(config, NOTHING_RELATED, 0.99)
    verdict = JudgeVerdict(label="not_found", confidence=confidence)
    if parts:
        first = next((s for _, s in parts if s is not None), None)
        verdict = verdict.model_copy(
            update={
                "supported_parts": backed,
                "missing_parts": missing,
                "reason": Reason.partially_supported.value if backed else None,
                "evidence_quote": _quote(scored, first[1], ENT) if first else None,
            }
        )
    return verdict


__all__ = [
    "NOTHING_RELATED",
    "conflict_kind",
    "conflicts",
    "could_back_part",
    "could_contradict",
    "could_decide",
    "could_support",
    "decide",
    "lead_name",
    "same_subject",
    "settled",
]
