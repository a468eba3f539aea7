"""The one place an answer's report is assembled: the overall label, the support score and the
counts are always derived from the claims' verdicts, whether the answer was verified whole or in
pieces."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from guardrail.core.aggregate import aggregate_answer
from guardrail.core.schema import AnswerClaim, AnswerReport, Reference, SourceInfo

__all__ = ["assemble_report", "merge_reports", "support_summary"]


def assemble_report(
    answer: str,
    claims: Sequence[AnswerClaim],
    *,
    references: Sequence[Reference] = (),
    references_start: int | None = None,
    references_end: int | None = None,
    sources: Sequence[SourceInfo] = (),
) -> AnswerReport:
    """The report of ``answer`` from its claims (with their verdicts): ``overall``,
    ``support_score`` and ``kind_counts`` by the answer-level rule
    (:func:`~guardrail.core.aggregate.aggregate_answer`), ``label_counts`` over every verdict."""
    counts = Counter(verdict.label.value for claim in claims for verdict in claim.verdicts)
    outcome = aggregate_answer(claims)
    return AnswerReport(
        answer=answer,
        claims=list(claims),
        overall=outcome.label,
        support_score=outcome.support_score,
        checked_claims=outcome.checked_claims,
        kind_counts=outcome.kind_counts,
        label_counts=dict(counts),
        references=list(references),
        references_start=references_start,
        references_end=references_end,
        sources=list(sources),
    )


def support_summary(report: AnswerReport) -> str:
    """One line on how much of the answer is backed, for a person: the support score, the checked
    claims, and how many claims read each kind, e.g. ``support 0.25: 1 of 4 checked claims
    supported (1 supported, 3 not_found)``."""
    kinds = ", ".join(f"{n} {kind}" for kind, n in report.kind_counts.items() if n)
    if report.support_score is None:
        head = "support n/a: no claim could be checked" if kinds else "support n/a: no claim cites a source"
    else:
        supported = report.kind_counts.get("supported", 0)
        head = (
            f"support {report.support_score:.2f}: {supported} of {report.checked_claims} checked "
            f"claim{'s' if report.checked_claims != 1 else ''} supported"
        )
    return f"{head} ({kinds})" if kinds else head


def merge_reports(parts: Sequence[tuple[int, AnswerReport]]) -> AnswerReport:
    """One report for consecutive pieces of an answer: ``(byte offset of the piece, its report)``.

    Byte offsets are shifted to refer to the concatenated answer; ``overall``, the score and the
    counts are recomputed over every claim; ``sources`` are the last piece's.
    """
    claims: list[AnswerClaim] = []
    references: list[Reference] = []
    ref_start: int | None = None
    ref_end: int | None = None
    for off, report in parts:
        claims.extend(_shifted_claim(claim, off) for claim in report.claims)
        references.extend(r.model_copy(update={"start": r.start + off, "end": r.end + off}) for r in report.references)
        if report.references_start is not None:
            ref_start = report.references_start + off
            ref_end = None if report.references_end is None else report.references_end + off
    return assemble_report(
        "".join(report.answer for _, report in parts),
        claims,
        references=references,
        references_start=ref_start,
        references_end=ref_end,
        sources=parts[-1][1].sources if parts else (),
    )


def _shifted_claim(claim: AnswerClaim, off: int) -> AnswerClaim:
    citations = [c.model_copy(update={"start": c.start + off, "end": c.end + off}) for c in claim.citations]
    return claim.model_copy(update={"start": claim.start + off, "end": claim.end + off, "citations": citations})
