"""Repair: which citations of a verified answer can be mended, and with what (pure; no I/O).

A repairing policy (``Policy(repair=True)``, ``Policy.preset("repair")``) applies these plans
before its own actions (:func:`guardrail.core.policy.apply_policy`); this module only decides:

* **archived copy** - a dead link whose archived copy supports its claim (the verdict against the
  copy is ``supported``, with ``archived_url``): the citation is pointed at the archived URL;
* **re-pointed** - a citation that does not back its claim (``not_found``, ``contradicted``,
  ``unreachable``) of a claim that no citation backs, when the verifier found other sources at
  hand that do (``suggested_citations``): the citation is pointed at the best of them. A numbered
  marker becomes that source's marker (``[2]`` -> ``[1]``); a link or URL gets its URL. A
  citation is re-pointed only where the answer can cite the suggestion the same way (a marker
  for a marker, a URL for a link) and only where it cites for this claim alone: a marker at a
  paragraph's end that also covers other sentences, or sources checked without markers, are left
  to the policy's actions. Each suggestion re-points one citation at most.

Verdicts the policy treats as unverified (``min_confidence``) support nothing here either.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from pydantic import BaseModel, Field

from guardrail.core.schema import AnswerClaim, AnswerReport, CitationRef, Label, RepairKind, UrlVerdict

__all__ = ["LINK_KINDS", "Repair", "plan_repairs"]

LINK_KINDS = frozenset({"markdown_link", "bare_url", "autolink"})
"""Citations written as a URL (or a link to one): re-pointed by changing their URL."""

_FAILING = frozenset({Label.not_found, Label.contradicted, Label.unreachable})


class Repair(BaseModel):
    """One change a repairing policy makes to a citation (``GuardedAnswer.repairs``)."""

    claim_index: int
    citation_index: int
    start: int = Field(description="UTF-8 byte offset of the claim in the answer.")
    end: int = Field(description="UTF-8 byte offset just past the claim.")
    claim: str = Field(description="The claim as written.")
    why: RepairKind = Field(description="archived_copy: a dead link's archived copy; repointed: another source.")
    old_citation: str = Field(description="The citation as written: '[2]', a link, a URL.")
    new_citation: str = Field(description="What it points to now: a marker such as '[1]', or a URL.")
    old_url: str | None = Field(default=None, description="The URL it pointed to, if any.")
    new_url: str | None = Field(default=None, description="The URL it points to now (None: a source's text).")
    verdict: UrlVerdict = Field(description="The claim checked against what the citation points to now.")


def plan_repairs(report: AnswerReport, label_for: Callable[[UrlVerdict], Label] | None = None) -> list[Repair]:
    """The repairs ``report`` allows, in claim and citation order (see the module docs);
    ``label_for`` is how the policy reads a verdict (default: its label)."""
    read = label_for or (lambda v: v.label)
    # How many claims cite at each span (a group's numbers share one; a paragraph-end marker
    # covers several sentences).
    spans = Counter(span for claim in report.claims for span in {(ref.start, ref.end) for ref in claim.citations})
    repairs: list[Repair] = []
    for ci, claim in enumerate(report.claims):
        if not claim.verdicts or len(claim.verdicts) != len(claim.citations):
            continue
        mended: set[int] = set()
        for j, (ref, verdict) in enumerate(zip(claim.citations, claim.verdicts, strict=True)):
            if verdict.archived_url and read(verdict) == Label.supported:
                new = ref.marker if ref.kind == "numbered" else verdict.archived_url
                repairs.append(_repair(ci, j, claim, ref, RepairKind.archived_copy, new, verdict.archived_url, verdict))
                mended.add(j)
        if claim.overall not in _FAILING or any(read(v) == Label.supported for v in claim.verdicts):
            continue
        backers = [s for s in claim.suggested_citations if read(s.verdict) == Label.supported]
        for j, ref in enumerate(claim.citations):
            if j in mended or ref.inherited or ref.kind == "source" or spans[(ref.start, ref.end)] > 1:
                continue
            for backer in backers:
                url = None if backer.source.startswith("fact:") else backer.source
                if ref.kind == "numbered" and backer.marker is not None:
                    new = backer.marker
                elif ref.kind in LINK_KINDS and url is not None:
                    new = url
                else:
                    continue
                repairs.append(_repair(ci, j, claim, ref, RepairKind.repointed, new, url, backer.verdict))
                backers.remove(backer)
                break
    return repairs


def _repair(
    ci: int,
    j: int,
    claim: AnswerClaim,
    ref: CitationRef,
    why: RepairKind,
    new_citation: str,
    new_url: str | None,
    verdict: UrlVerdict,
) -> Repair:
    return Repair(
        claim_index=ci,
        citation_index=j,
        start=claim.start,
        end=claim.end,
        claim=claim.text,
        why=why,
        old_citation=ref.marker,
        new_citation=new_citation,
        old_url=ref.url,
        new_url=new_url,
        verdict=verdict,
    )
