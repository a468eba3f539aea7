"""The one fixed rule that turns citation verdicts into a claim's overall label."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from guardrail.core.schema import Label


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
