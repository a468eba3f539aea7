"""The answer-level rule (issue 26, item 1): an answer reads ``supported`` only when every claim that
cites something is supported, with its ``support_score`` (supported / checked claims) and its
claims counted per kind, in the report, the badges' summary and the service's response."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from guardrail import Settings, Verifier, apply_policy, render_summary
from guardrail.apps.batch.report import render_html
from guardrail.apps.batch.results import RowResult
from guardrail.apps.batch.summary import summarize
from guardrail.apps.server import create_app
from guardrail.core.report import assemble_report, support_summary
from guardrail.core.schema import AnswerClaim, Label, Reason, UrlVerdict
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge

KINDS = ("supported", "contradicted", "not_found", "dead_link", "could_not_check")


def claim(label: Label | None, reason: str | None = None) -> AnswerClaim:
    """A claim whose one citation (if any) has ``label``."""
    verdicts = [] if label is None else [UrlVerdict(url="https://example.org/x", label=label, reason=reason)]
    return AnswerClaim(text="A claim.", start=0, end=8, verdicts=verdicts, overall=label)


def counts(**given: int) -> dict[str, int]:
    return {kind: given.get(kind, 0) for kind in KINDS}


def test_one_supported_claim_of_four_is_not_a_supported_answer() -> None:
    report = assemble_report("...", [claim(Label.supported)] + [claim(Label.not_found)] * 3)
    assert report.overall == Label.not_found
    assert report.support_score == 0.25 and report.checked_claims == 4
    assert report.kind_counts == counts(supported=1, not_found=3)
    assert support_summary(report) == "support 0.25: 1 of 4 checked claims supported (1 supported, 3 not_found)"


@pytest.mark.parametrize(
    ("labels", "overall"),
    [
        ([Label.supported, Label.supported], Label.supported),
        ([Label.supported, Label.contradicted, Label.not_found], Label.contradicted),
        ([Label.unreachable, Label.not_found, Label.supported], Label.not_found),
        ([Label.supported, Label.unreachable], Label.unreachable),
        ([], Label.not_found),
    ],
)
def test_the_answer_reads_its_worst_claim(labels: list[Label], overall: Label) -> None:
    assert assemble_report("...", [claim(label) for label in labels]).overall == overall


def test_claims_that_could_not_be_checked_are_not_counted_but_keep_the_answer_from_supported() -> None:
    report = assemble_report(
        "...",
        [
            claim(Label.supported),
            claim(Label.unreachable, "fetch_timeout"),  # could not check now
            claim(Label.not_found, Reason.judge_error.value),  # a failure of ours
            claim(Label.unreachable, "http_404"),  # a dead link backs nothing: checked
            claim(None),  # cites nothing
        ],
    )
    assert report.kind_counts == counts(supported=1, dead_link=1, could_not_check=2)
    assert report.checked_claims == 2 and report.support_score == 0.5
    assert report.overall == Label.not_found


def test_nothing_checked_has_no_score_rather_than_zero() -> None:
    unchecked = assemble_report("...", [claim(Label.unreachable, "fetch_timeout")])
    assert unchecked.support_score is None and unchecked.checked_claims == 0
    assert support_summary(unchecked) == "support n/a: no claim could be checked (1 could_not_check)"
    assert support_summary(assemble_report("...", [claim(None)])) == "support n/a: no claim cites a source"


def one_in_four(pages: LoopbackSite) -> str:
    boiling, tomatoes = pages.url("/boiling"), pages.url("/tomatoes")
    return (
        f"Pure water boils at 100 degrees Celsius at sea level [1]. The Eiffel Tower is in Paris [2]. "
        f"Mount Everest is the highest mountain on Earth [2]. The Moon orbits the Earth [2].\n\n"
        f"[1]: {boiling}\n[2]: {tomatoes}\n"
    )


def test_a_verified_one_in_four_answer_and_its_badges_summary(pages: LoopbackSite) -> None:
    verifier = Verifier(
        judge=OverlapJudge(),
        embedder=HashEmbedder(),
        settings=Settings(allow_private_hosts=True, cache_path="off", audit_path="off"),  # type: ignore[arg-type]
    )
    report = verifier.verify_answer(one_in_four(pages))
    assert [c.overall for c in report.claims] == [Label.supported] + [Label.not_found] * 3
    assert report.overall == Label.not_found and report.support_score == 0.25
    guarded = apply_policy(report)
    assert guarded.summary == "✅ supported 1 · ⚠️ unverified 3 - " + support_summary(report)
    html = render_summary(report, fmt="html")
    assert html.startswith('<p class="citation-summary"><span class="citation-verdict citation-verdict--supported">')
    assert html.endswith(" 3 - support 0.25: 1 of 4 checked claims supported (1 supported, 3 not_found)</p>")

    results = [RowResult(id="r1", line=1, kind="answer", digest="d", answer_report=report)]
    page = render_html(results, summarize(results))
    assert f'<p class="support">overall: not_found - {support_summary(report)}</p>' in page

    with TestClient(create_app(verifier=verifier)) as client:
        body = client.post("/v1/guard", json={"answer": one_in_four(pages)}).json()
    assert body["report"]["overall"] == "not_found" and body["report"]["support_score"] == 0.25
    assert body["report"]["kind_counts"] == counts(supported=1, not_found=3)
    assert body["summary"] == guarded.summary
