"""The fixed rules: citation verdicts into a claim's overall label (:func:`aggregate_claim`), and
claims into an answer's label and support score (:func:`aggregate_answer`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from guardrail.core.schema import AnswerClaim, Label, Reason, UrlVerdict, VerdictKind, overall_kind


def aggregate(labels: Iterable[Label]) -> Label:
    """Any contradicted wins; else any supported; else unreachable only when every
    citation is unreachable; else not_found (also for no citations at all)."""
    seen = list(labels)
    if Label.contradicted in seen:
        return Label.contradicted
    if Label.supported in seen:
        return Label.supported
    if seen and all(label == Label.unreachable for label in seen):
        return Label.unreachable
    return Label.not_found


class ClaimOutcome(NamedTuple):
    """A claim's overall label, and why when its parts decided it (see :func:`aggregate_claim`)."""

    label: Label
    reason: str | None = None
    missing_parts: list[str] | None = None


def aggregate_claim(verdicts: Sequence[UrlVerdict]) -> ClaimOutcome:
    """A claim's overall verdict from its citations' verdicts, parts included.

    The label is :func:`aggregate`'s, except where it would be ``not_found`` and the judge split
    the claim into parts (``supported_parts`` / ``missing_parts``): when the citations together
    back every part, though none backs them all, the claim is ``supported`` with reason
    ``combined_sources``; when they back some parts only, it stays ``not_found`` with reason
    ``partially_supported`` and ``missing_parts`` naming the parts no citation backs.
    """
    label = aggregate(v.label for v in verdicts)
    if label != Label.not_found:
        return ClaimOutcome(label)
    split = [v for v in verdicts if v.supported_parts is not None or v.missing_parts is not None]
    if not split:
        return ClaimOutcome(label)
    parts: list[str] = []
    for v in split:
        parts.extend(p for p in (v.supported_parts or []) + (v.missing_parts or []) if p not in parts)
    backing = [v for v in split if v.supported_parts]
    covered = {p for v in backing for p in v.supported_parts or []}
    missing = [p for p in parts if p not in covered]
    if not covered:
        return ClaimOutcome(label)
    if not missing:
        # One citation backing every part has a supported verdict of its own; with several, the
        # pages back the claim together.
        return (
            ClaimOutcome(Label.supported, Reason.combined_sources.value) if len(backing) >= 2 else ClaimOutcome(label)
        )
    return ClaimOutcome(Label.not_found, Reason.partially_supported.value, missing or None)


def aggregate_text(labels: Sequence[Label], min_supported: float = 0.5) -> Label:
    """A whole text's label against one source, from its sentences' labels against it.

    Any contradicted sentence wins; else unreachable when every sentence is (the page could not
    be read); else supported when at least ``min_supported`` of the sentences (and at least one)
    are supported; else not_found (also for no sentences at all). Unlike :func:`aggregate`, one
    supported sentence is not enough: a page that kept one line of a chunk no longer backs it.
    """
    if not 0.0 < min_supported <= 1.0:
        raise ValueError(f"min_supported must be in (0, 1], got {min_supported}")
    seen = list(labels)
    if Label.contradicted in seen:
        return Label.contradicted
    if seen and all(label == Label.unreachable for label in seen):
        return Label.unreachable
    supported = sum(1 for label in seen if label == Label.supported)
    if supported and supported >= min_supported * len(seen):
        return Label.supported
    return Label.not_found


ANSWER_SEVERITY: tuple[Label, ...] = (Label.contradicted, Label.not_found, Label.unreachable, Label.supported)
"""The answer-level order, worst first: an answer reads the worst label among its cited claims.
A contradiction is a wrong statement; ``not_found`` a page read that does not back its claim;
``unreachable`` a page that could not be read (gone, or not answering now); ``supported`` only when
nothing worse is left."""

CHECKED_KINDS = frozenset(
    {VerdictKind.supported, VerdictKind.contradicted, VerdictKind.not_found, VerdictKind.dead_link}
)
"""The claim kinds that count as checked for ``support_score``: a judged claim, or one whose cited
pages are gone (a dead link backs nothing). ``could_not_check`` claims (not answering now, refused
by our SSRF policy, failures of our own) and claims citing nothing are left out: they say nothing
about the answer."""


class AnswerOutcome(NamedTuple):
    """An answer's label, support score and claim counts (see :func:`aggregate_answer`)."""

    label: Label
    support_score: float | None
    checked_claims: int
    kind_counts: dict[str, int]


def claim_kind(claim: AnswerClaim) -> VerdictKind | None:
    """How a claim reads as a whole (None when it cites nothing): its overall label, with
    ``unreachable`` split into dead link / could not check by its citations' kinds."""
    if claim.overall is None:
        return None
    return overall_kind(claim.overall, (v.kind for v in claim.verdicts))


def aggregate_answer(claims: Iterable[AnswerClaim]) -> AnswerOutcome:
    """The answer-level rule, over the claims that cite something.

    ``label``: ``supported`` only when every cited claim is supported (a claim that could not be
    checked keeps the answer from reading supported: nothing backs it yet); any ``contradicted``
    claim makes it ``contradicted``; otherwise the worst label left, in :data:`ANSWER_SEVERITY`'s
    order (``not_found`` before ``unreachable``); ``not_found`` when no claim cites anything.
    Unlike a claim's several citations (:func:`aggregate`, where one supporting source is enough),
    one supported claim does not make an answer supported.

    ``support_score``: supported claims / checked claims (:data:`CHECKED_KINDS`), like Vertex AI's
    ``supportScore`` for an answer; None when no claim was checked (unknown, not 0).
    ``kind_counts``: how many cited claims read each :class:`VerdictKind` (every kind listed).
    """
    cited = [c for c in claims if c.overall is not None]
    kinds = [kind for kind in map(claim_kind, cited) if kind is not None]
    counts = {kind.value: 0 for kind in VerdictKind}
    for kind in kinds:
        counts[kind.value] += 1
    checked = sum(1 for kind in kinds if kind in CHECKED_KINDS)
    score = counts[VerdictKind.supported.value] / checked if checked else None
    labels = {c.overall for c in cited}
    label = next((level for level in ANSWER_SEVERITY if level in labels), Label.not_found)
    return AnswerOutcome(label, score, checked, counts)
