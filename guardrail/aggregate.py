"""The one fixed rule that turns citation verdicts into a claim's overall label."""

from __future__ import annotations

from collections.abc import Iterable

from guardrail.schema import Label


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
