"""The one place an answer's report is assembled: the overall label and the label counts are
always derived from the claims' verdicts, whether the answer was verified whole or in pieces."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from guardrail.core.aggregate import aggregate
from guardrail.core.schema import AnswerClaim, AnswerReport, Reference, SourceInfo

__all__ = ["assemble_report", "merge_reports"]


def assemble_report(
    answer: str,
    claims: Sequence[AnswerClaim],
    *,
    references: Sequence[Reference] = (),
    references_start: int | None = None,
    references_end: int | None = None,
    sources: Sequence[SourceInfo] = (),
) -> AnswerReport:
    """The report of ``answer`` from its claims (with their verdicts): ``overall`` by the fixed
    rule over the checked claims, ``label_counts`` over every verdict."""
    counts = Counter(verdict.label.value for claim in claims for verdict in claim.verdicts)
    return AnswerReport(
        answer=answer,
        claims=list(claims),
        overall=aggregate(c.overall for c in claims if c.overall is not None),
        label_counts=dict(counts),
        references=list(references),
        references_start=references_start,
        references_end=references_end,
        sources=list(sources),
    )


def merge_reports(parts: Sequence[tuple[int, AnswerReport]]) -> AnswerReport:
    """One report for consecutive pieces of an answer: ``(byte offset of the piece, its report)``.

    Byte offsets are shifted to refer to the concatenated answer; ``overall`` and
    ``label_counts`` are recomputed over every claim; ``sources`` are the last piece's.
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
