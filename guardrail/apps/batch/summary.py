"""The figures of a batch run and its CSV report.

``citation_precision`` = supported / all citations, ``reachable_precision`` = supported /
citations whose page was read (all but dead links and the citations that could not be checked
now: a timeout, 429/5xx, a refused access). Those that could not be checked are counted on their
own (``could_not_check``): they are not the page's fault, nor a verdict about it. Failed rows
count as rows only: their verdicts are kept in the CSV, marked with the error, but not counted.
"""

from __future__ import annotations

import csv
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from guardrail.apps.batch.files import atomic_text_file
from guardrail.apps.batch.results import CitationRow, RowResult
from guardrail.core.schema import Label, RepairKind, VerdictKind
from guardrail.spreadsheet import csv_cell

__all__ = ["BatchSummary", "format_precision", "summarize", "write_csv"]


def format_precision(value: float | None) -> str:
    """A precision figure as the reports show it: ``0.3750``, or ``n/a`` when there is none."""
    return "n/a" if value is None else f"{value:.4f}"


class BatchSummary(BaseModel):
    """The figures of a batch run."""

    rows: int
    rows_resumed: int = 0
    rows_failed: int = 0
    citations: int = 0
    supported: int = 0
    reachable: int = 0
    could_not_check: int = Field(
        default=0, description="Citations not checked now: the page did not answer or refused us."
    )
    labels: dict[str, int] = Field(default_factory=dict, description="Citations per label (all four listed).")
    reasons: dict[str, int] = Field(
        default_factory=dict, description="Citations per reason ('judge' when the judge decided without one)."
    )
    by_label_reason: list[tuple[str, str, int]] = Field(default_factory=list)
    repairs: dict[str, int] = Field(
        default_factory=dict,
        description="Citations the repair policy would mend, per kind (archived_copy, repointed; both listed).",
    )

    @property
    def citation_precision(self) -> float | None:
        """supported / all citations (None without citations)."""
        return self.supported / self.citations if self.citations else None

    @property
    def reachable_precision(self) -> float | None:
        """supported / citations whose page was read: not dead, not unchecked (None when none)."""
        return self.supported / self.reachable if self.reachable else None

    def lines(self) -> list[str]:
        """``citation_precision=0.2222 (2/9)`` and ``reachable_precision=0.3333 (2/6)``."""
        lines = [
            f"citation_precision={format_precision(self.citation_precision)} ({self.supported}/{self.citations})",
            f"reachable_precision={format_precision(self.reachable_precision)} ({self.supported}/{self.reachable})",
        ]
        if self.could_not_check:
            lines.append(f"could_not_check={self.could_not_check} (not counted as read; not the pages' fault)")
        if any(self.repairs.values()):
            lines.append("repairs=" + ", ".join(f"{n} {kind}" for kind, n in self.repairs.items()))
        return lines


def summarize(results: Sequence[RowResult], *, resumed: int = 0) -> BatchSummary:
    """Count citations by label and reason over ``results`` (failed rows count as rows only)."""
    labels: Counter[str] = Counter({label.value: 0 for label in Label})
    kinds: Counter[VerdictKind] = Counter()
    reasons: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    repairs: Counter[str] = Counter({kind.value: 0 for kind in RepairKind})
    for result in results:
        if result.error is not None:
            continue
        repairs.update(r.why.value for r in result.repairs())
        for _, _, v in result.verdicts():
            labels[v.label.value] += 1
            kinds[v.kind] += 1
            reason = v.reason or "judge"
            reasons[reason] += 1
            pairs[(v.label.value, reason)] += 1
    total = sum(labels.values())
    order = {label.value: i for i, label in enumerate(Label)}
    return BatchSummary(
        rows=len(results),
        rows_resumed=resumed,
        rows_failed=sum(1 for r in results if r.error is not None),
        citations=total,
        supported=labels[Label.supported.value],
        reachable=total - kinds[VerdictKind.dead_link] - kinds[VerdictKind.could_not_check],
        could_not_check=kinds[VerdictKind.could_not_check],
        labels=dict(labels),
        reasons=dict(reasons.most_common()),
        by_label_reason=sorted(((lab, rea, n) for (lab, rea), n in pairs.items()), key=lambda t: (order[t[0]], -t[2])),
        repairs=dict(repairs),
    )


def write_csv(results: Sequence[RowResult], path: str | os.PathLike[str]) -> int:
    """Write one CSV line per citation (see :class:`CitationRow`) atomically; returns the count.
    Text cells are made safe to open in a spreadsheet (:func:`csv_cell`)."""
    lines = [c for r in results for c in r.citation_rows()]
    with atomic_text_file(Path(path), newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(CitationRow.model_fields))
        writer.writeheader()
        for c in lines:
            writer.writerow({k: csv_cell(v) for k, v in c.model_dump().items()})
    return len(lines)
