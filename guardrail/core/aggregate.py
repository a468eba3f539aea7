"""The one fixed rule that turns citation verdicts into a claim's overall label."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from guardrail.core.schema import Label, Reason, UrlVerdict


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
