"""The guards' LlamaIndex instrumentation: each guard call is a span of this module's dispatcher,
with an event per verdict and one for the whole report (as the LangChain guard reports through
callbacks). Register a handler on ``llama_index.core.instrumentation.get_dispatcher()`` to see them."""

from __future__ import annotations

from collections.abc import Sequence

import llama_index.core.instrumentation as instrument
from llama_index.core.instrumentation.events import BaseEvent

from guardrail import AnswerReport, TextReport

__all__ = ["CitationReportEvent", "CitationVerdictEvent", "dispatcher", "emit_report", "emit_texts"]

dispatcher = instrument.get_dispatcher(__name__)
"""The dispatcher the guards' spans and events go through (events propagate to the root one)."""


class CitationVerdictEvent(BaseEvent):
    """One verdict: a claim of an answer against one of its citations (the query and chat engine
    guards), or a retrieved node's text against its page (the postprocessor)."""

    claim: str
    source: str | None
    label: str
    kind: str
    reason: str | None = None
    evidence_quote: str | None = None
    confidence: float | None = None

    @classmethod
    def class_name(cls) -> str:
        """``CitationVerdictEvent``."""
        return "CitationVerdictEvent"


class CitationReportEvent(BaseEvent):
    """The figures of one guard call: the overall label (None for the postprocessor, which checks
    nodes, not an answer), how many verdicts of each label, how many claims were checked, whether
    the policy blocked the answer, and the :class:`~guardrail.AnswerReport` itself (None for the
    postprocessor)."""

    overall: str | None
    label_counts: dict[str, int]
    claims_checked: int
    blocked: bool = False
    report: AnswerReport | None = None

    @classmethod
    def class_name(cls) -> str:
        """``CitationReportEvent``."""
        return "CitationReportEvent"


def emit_report(report: AnswerReport, *, blocked: bool) -> None:
    """An event per verdict of ``report``, then its :class:`CitationReportEvent`."""
    for claim in report.claims:
        for verdict in claim.verdicts:
            dispatcher.event(
                CitationVerdictEvent(
                    claim=claim.text,
                    source=verdict.url,
                    label=verdict.label.value,
                    kind=verdict.kind.value,
                    reason=verdict.reason,
                    evidence_quote=verdict.evidence_quote,
                    confidence=verdict.confidence,
                )
            )
    dispatcher.event(
        CitationReportEvent(
            overall=report.overall.value,
            label_counts=dict(report.label_counts),
            claims_checked=sum(1 for claim in report.claims if claim.overall is not None),
            blocked=blocked,
            report=report,
        )
    )


def emit_texts(texts: Sequence[str], reports: Sequence[TextReport]) -> None:
    """An event per checked node (its text and its page's verdict), then the call's figures."""
    counts: dict[str, int] = {}
    for text, report in zip(texts, reports, strict=True):
        counts[report.label.value] = counts.get(report.label.value, 0) + 1
        dispatcher.event(
            CitationVerdictEvent(
                claim=text,
                source=report.source,
                label=report.label.value,
                kind=report.kind.value,
                reason=report.reason,
                evidence_quote=report.evidence_quote,
            )
        )
    dispatcher.event(CitationReportEvent(overall=None, label_counts=counts, claims_checked=len(reports)))
