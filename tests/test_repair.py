"""Suggested citations and the repair policy (issue 22): a claim its own citation does not back is
checked against the other sources at hand, and a repairing policy re-points the citation to the
one that backs it. The pages come from the loopback fixture server; the judge and embedder are
the test doubles."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from guardrail import AnswerStream, Label, Policy, Settings, Verifier, apply_policy
from guardrail.apps.batch.engine import arun_batch
from guardrail.apps.batch.report import render_html
from guardrail.apps.batch.rows import row_from_data
from guardrail.apps.batch.summary import summarize
from guardrail.core.repair import plan_repairs
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge

WATER = "Water boils at 100 degrees Celsius at sea level"
CAMERON = "Titanic was directed by James Cameron"
MOON = "The Moon is made of green cheese"


def make(judge: OverlapJudge | None = None, **settings: object) -> Verifier:
    return Verifier(
        allow_private_hosts=True,
        judge=judge or OverlapJudge(),
        embedder=HashEmbedder(),
        settings=Settings(**settings),  # type: ignore[arg-type]
    )


def sources(pages: LoopbackSite) -> list[str]:
    return [pages.url("/boiling"), pages.url("/titanic")]


def test_a_misattributed_citation_gets_the_right_source_suggested_and_repair_re_points_it(
    pages: LoopbackSite,
) -> None:
    answer = f"{CAMERON} [2]. {WATER} [2]."
    report = make().verify_answer(answer, sources(pages), suggest=True)
    cameron, water = report.claims
    assert (cameron.overall, cameron.suggested_citations) == (Label.supported, [])  # passing claims: nothing more
    assert water.overall == Label.not_found
    assert [(s.source, s.marker, s.source_index, s.verdict.label) for s in water.suggested_citations] == [
        (pages.url("/boiling"), "[1]", 0, Label.supported)
    ]
    guarded = apply_policy(report, Policy.preset("repair"))
    assert guarded.text == f"{CAMERON} [2]. {WATER} [1] ↪ citation corrected."
    (repair,) = guarded.repairs
    assert (repair.why.value, repair.old_citation, repair.new_citation) == ("repointed", "[2]", "[1]")
    assert (repair.old_url, repair.new_url) == (pages.url("/titanic"), pages.url("/boiling"))
    assert answer.encode()[repair.start : repair.end].decode() == f"{WATER} [2]."
    assert repair.verdict.evidence_quote is not None and "100 degrees Celsius" in repair.verdict.evidence_quote
    applied = guarded.actions[1]
    assert (applied.repair, applied.kind.value, applied.badge) == (repair.why, "supported", "↪ citation corrected")
    # Without repair, the same report reads as before: the wrong citation is flagged, not moved.
    assert apply_policy(report, Policy()).text == f"{CAMERON} [2]. {WATER} [2] ⚠️ unverified."
    # Repair on any preset: the strict one no longer blocks on what was mended.
    assert Policy.strict(repair=True).repair and not apply_policy(report, Policy.preset("block", repair=True)).blocked


def test_a_claim_that_no_source_backs_gets_no_suggestion(pages: LoopbackSite) -> None:
    report = make().verify_answer(f"{MOON} [1].", sources(pages), suggest=True)
    (moon,) = report.claims
    assert (moon.overall, moon.suggested_citations) == (Label.not_found, [])
    guarded = apply_policy(report, Policy.preset("repair"))
    assert (guarded.text, guarded.repairs) == (f"{MOON} [1] ⚠️ unverified.", [])


def test_suggestions_are_off_unless_asked_for_and_nothing_passing_is_judged_again(pages: LoopbackSite) -> None:
    judge = OverlapJudge()
    verifier = make(judge)
    report = verifier.verify_answer(f"{WATER} [2].", sources(pages))
    assert report.claims[0].suggested_citations == [] and len(judge.calls) == 1
    assert make(suggest=True).verify_answer(f"{WATER} [2].", sources(pages)).claims[0].suggested_citations
    judge.calls.clear()
    verifier.verify_answer(f"{WATER} [1]. {CAMERON} [2].", sources(pages), suggest=True)
    assert [len(call) for call in judge.calls] == [2]  # nothing failed: no second round


def test_suggestions_stay_within_the_budget_the_likeliest_source_first(pages: LoopbackSite) -> None:
    judge = OverlapJudge()
    many = [pages.url(p) for p in ("/titanic", "/old-report", "/tomatoes", "/injection", "/boiling")]
    report = make(judge, suggest_budget=1).verify_answer(f"{WATER} [1].", many, suggest=True)
    assert [len(call) for call in judge.calls] == [1, 1]  # the claim, then one other source
    assert [s.source for s in report.claims[0].suggested_citations] == [pages.url("/boiling")]
    judge.calls.clear()
    assert (
        make(judge, suggest_budget=0).verify_answer(f"{WATER} [1].", many, suggest=True).claims[0].suggested_citations
        == []
    )
    assert len(judge.calls) == 1


def test_links_are_re_pointed_to_another_cited_page(pages: LoopbackSite) -> None:
    u = pages.url
    answer = f"{CAMERON} ([film]({u('/boiling')})). {WATER} ([notes]({u('/boiling')}), {u('/titanic')})."
    report = make().verify_answer(answer, suggest=True)
    guarded = apply_policy(report, Policy.preset("repair"))
    assert guarded.text == (
        f"{CAMERON} ([film]({u('/titanic')}) ↪ citation corrected). "
        f"{WATER} ([notes]({u('/boiling')}), {u('/titanic')} ⚠️ unverified)."  # its claim is backed: as before
    )
    assert [(r.old_url, r.new_url) for r in guarded.repairs] == [(u("/boiling"), u("/titanic"))]


def test_an_unresolved_marker_and_a_group_are_re_pointed(pages: LoopbackSite) -> None:
    three = [*sources(pages), pages.url("/old-report")]
    report = make().verify_answer(f"{WATER} [5]. {WATER} again [2, 3].", three, suggest=True)
    guarded = apply_policy(report, Policy.preset("repair"))
    # [3] (50 degrees) still contradicts: only the first failing citation takes the one suggestion.
    assert guarded.text == (
        f"{WATER} [1] ↪ citation corrected. {WATER} again [1] ↪ citation corrected [3] ❌ contradicted."
    )
    assert [(r.old_citation, r.new_citation) for r in guarded.repairs] == [("[5]", "[1]"), ("[2, 3]", "[1]")]


def test_a_marker_covering_a_whole_paragraph_is_not_re_pointed_for_one_sentence(pages: LoopbackSite) -> None:
    report = make().verify_answer(f"{CAMERON}. {WATER} [2].", sources(pages), suggest=True)
    assert report.claims[1].suggested_citations  # suggested all the same...
    guarded = apply_policy(report, Policy.preset("repair"))
    assert guarded.repairs == []  # ...but [2] also cites the first sentence, which it backs
    assert guarded.text == f"{CAMERON}. {WATER} [2] ⚠️ unverified."


def test_a_reference_entry_no_longer_cited_goes_and_weak_suggestions_are_not_used(pages: LoopbackSite) -> None:
    u = pages.url
    answer = f"{WATER} [2].\n\nSources:\n[1] {u('/boiling')}\n[2] {u('/titanic')}\n"
    report = make().verify_answer(answer, suggest=True)
    assert apply_policy(report, Policy.preset("repair")).text == (
        f"{WATER} [1] ↪ citation corrected.\n\nSources:\n[1] {u('/boiling')}\n"
    )
    claim = report.claims[0]
    unsure = [
        s.model_copy(update={"verdict": s.verdict.model_copy(update={"confidence": 0.4})})
        for s in claim.suggested_citations
    ]
    report = report.model_copy(update={"claims": [claim.model_copy(update={"suggested_citations": unsure})]})
    weak = Policy(repair=True, min_confidence=0.5)  # a support this weak reads unverified
    assert plan_repairs(report, weak.label_for) == [] and apply_policy(report, weak).repairs == []
    assert len(plan_repairs(report)) == 1


async def test_a_stream_repairs_piece_by_piece(pages: LoopbackSite) -> None:
    async def chunks() -> AsyncIterator[str]:
        for word in f"{CAMERON} [2]. {WATER} [2].".split(" "):
            yield word + " "

    stream = AnswerStream(make(), sources(pages), policy=Policy.preset("repair"))
    text = "".join([piece.text async for piece in stream.pieces(chunks())])
    assert text == f"{CAMERON} [2]. {WATER} [1] ↪ citation corrected. "


async def test_a_batch_report_shows_repairs_as_their_own_kind_with_counts(pages: LoopbackSite) -> None:
    rows = [row_from_data(1, {"id": "r1", "answer": f"{CAMERON} [2]. {WATER} [2].", "sources": sources(pages)})]
    results, _ = await arun_batch(rows, make(suggest=True))
    summary = summarize(results)
    assert summary.repairs == {"archived_copy": 0, "repointed": 1}
    assert "repairs=0 archived_copy, 1 repointed" in summary.lines()
    line = results[0].citation_rows()[1]
    assert (line.repair, line.repaired_to) == ("repointed", "[1]")
    page = render_html(results, summary)
    assert page.count('class="citation-verdict citation-verdict--repointed"') == 2  # in the answer and the table
    assert "Repairs (1)" in page


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_repair_badges_render_in_both_formats(pages: LoopbackSite, fmt: str) -> None:
    report = make().verify_answer(f"{WATER} [2].", sources(pages), suggest=True)
    text = apply_policy(report, Policy.preset("repair"), fmt).text  # type: ignore[arg-type]
    if fmt == "html":
        assert '[1] <span class="citation-verdict citation-verdict--repointed" title="' in text
    else:
        assert text == f"{WATER} [1] ↪ citation corrected."


def test_other_sources_that_cannot_be_read_suggest_nothing(pages: LoopbackSite) -> None:
    judge = OverlapJudge()
    gone = [pages.url("/titanic"), pages.url("/gone-404"), pages.url("/soft-404")]
    report = make(judge).verify_answer(f"{WATER} [1].", gone, suggest=True)
    assert report.claims[0].suggested_citations == [] and [len(call) for call in judge.calls] == [1]
