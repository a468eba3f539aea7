"""What one row of a batch run came to (:class:`RowResult`) and its lines in the CSV report
(:class:`CitationRow`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from guardrail.core.repair import Repair, plan_repairs
from guardrail.core.schema import AnswerReport, ClaimReport, Label, UrlVerdict

__all__ = ["CitationRow", "RowResult"]


class CitationRow(BaseModel):
    """One line of the CSV report: one citation (or a row that has none, or that failed)."""

    id: str
    line: int
    kind: str
    claim_index: int | None = None
    claim: str = ""
    url: str = ""
    label: str = ""
    reason: str = ""
    reason_text: str = Field(default="", description="The reason in one plain sentence.")
    confidence: float | None = None
    evidence_quote: str = ""
    missing_parts: str = Field(
        default="", description="The parts of the claim the page does not back, joined with '; '."
    )
    context: str = Field(default="", description="The window around the quote, where it is what read as support.")
    final_url: str = ""
    original_status: int | None = None
    rid: str = ""
    archived_url: str = ""
    archived_at: str = ""
    repair: str = Field(default="", description="What the repair policy would do: archived_copy or repointed.")
    repaired_to: str = Field(default="", description="The citation it would point to instead: a marker or a URL.")
    error: str = ""


class RowResult(BaseModel):
    """What one row came to: its report, or the error that stopped it."""

    id: str
    line: int
    kind: Literal["claim", "answer"]
    digest: str
    claim_report: ClaimReport | None = None
    answer_report: AnswerReport | None = None
    error: str | None = None
    seconds: float = 0.0

    def verdicts(self) -> list[tuple[int, str, UrlVerdict]]:
        """(claim index, claim text, verdict) for every citation of the row."""
        if self.claim_report is not None:
            return [(0, self.claim_report.claim, v) for v in self.claim_report.citations]
        if self.answer_report is not None:
            return [(i, c.text, v) for i, c in enumerate(self.answer_report.claims) for v in c.verdicts]
        return []

    def repairs(self) -> list[Repair]:
        """What the repair policy would mend in this row's answer (none for a claim row)."""
        return plan_repairs(self.answer_report) if self.answer_report is not None else []

    def citation_rows(self) -> list[CitationRow]:
        """The CSV lines of this row: one per citation (each with the row's error, if it failed);
        one line saying why when there is none."""
        rows = [self._citation(i, claim, v) for i, claim, v in self.verdicts()]
        if self.answer_report is not None:
            # verdicts() lists an answer's citations claim by claim, in order: number them again.
            keys = [(i, j) for i, c in enumerate(self.answer_report.claims) for j in range(len(c.verdicts))]
            mended = {(r.claim_index, r.citation_index): r for r in self.repairs()}
            rows = [
                row.model_copy(update={"repair": r.why.value, "repaired_to": r.new_citation})
                if (r := mended.get(key)) is not None
                else row
                for row, key in zip(rows, keys, strict=True)
            ]
        if self.error is not None:
            rows = [r.model_copy(update={"error": self.error}) for r in rows]
            return rows or [CitationRow(id=self.id, line=self.line, kind=self.kind, error=self.error)]
        return rows or [CitationRow(id=self.id, line=self.line, kind=self.kind, reason="no_citations")]

    def has_contradiction(self) -> bool:
        """Whether any citation of the row is contradicted."""
        return any(v.label == Label.contradicted for _, _, v in self.verdicts())

    def _citation(self, claim_index: int, claim: str, v: UrlVerdict) -> CitationRow:
        return CitationRow(
            id=self.id,
            line=self.line,
            kind=self.kind,
            claim_index=claim_index,
            claim=claim,
            url=v.url,
            label=v.label.value,
            reason=v.reason or "",
            reason_text=v.reason_text or "",
            confidence=v.confidence,
            evidence_quote=v.evidence_quote or "",
            missing_parts="; ".join(v.missing_parts or []),
            context=v.context or "",
            final_url=v.final_url or "",
            original_status=v.original_status,
            rid=v.rid or "",
            archived_url=v.archived_url or "",
            archived_at=v.archived_at.isoformat() if v.archived_at else "",
        )
