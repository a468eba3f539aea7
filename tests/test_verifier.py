"""The orchestrator's contract, with every stage swapped through its protocol (no network, no models)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import numpy as np
import pytest

from guardrail import ClaimTask, Fact, FetchedPage, JudgeVerdict, Label, PageMemo, VerdictKind, Verifier
from guardrail.core.schema import JudgeRequest
from guardrail.testing import HashEmbedder, OverlapJudge, ScriptedJudge, StaticFetcher

FILLER = " ".join(["Chemistry teachers repeat this fact in every introductory lesson."] * 18)
# Each paragraph is long enough (~170 words with the filler) to be a passage of its own.
BOILING = "\n\n".join(
    [
        "Water is studied in chemistry. " + FILLER,
        "At sea level pure water boils at 100 degrees Celsius. " + FILLER,
        "Pressure cookers raise the boiling point to about 120 degrees Celsius. " + FILLER,
        "Salt raises the boiling point slightly. " + FILLER,
        "Denver is high, so water boils at about 95 degrees there. " + FILLER,
    ]
)
OLD = "An old report.\n\nWater boils at 50 degrees Celsius at sea level, the report says."


def page(url: str, text: str, **kw: object) -> FetchedPage:
    return FetchedPage(url=url, final_url=url, original_status=200, text=text, **kw)  # type: ignore[arg-type]


@pytest.fixture
def fetcher() -> StaticFetcher:
    return StaticFetcher(
        {
            "https://a.example/boiling": page("https://a.example/boiling", BOILING, rid="r-1"),
            "https://a.example/old": page("https://a.example/old", OLD),
            "https://a.example/empty": page("https://a.example/empty", "   "),
            "https://a.example/gone": FetchedPage(url="https://a.example/gone", original_status=410),
        }
    )


CLAIM = "Water boils at 100 degrees Celsius at sea level."


def test_supported_contradicted_and_unreachable(fetcher: StaticFetcher) -> None:
    v = Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder())
    report = v.verify(CLAIM, ["https://a.example/boiling", "https://a.example/old", "https://a.example/gone"])
    labels = [c.label for c in report.citations]
    assert labels == [Label.supported, Label.contradicted, Label.unreachable]
    assert report.overall == Label.contradicted
    supported = report.citations[0]
    assert supported.evidence_quote == "At sea level pure water boils at 100 degrees Celsius."
    assert (supported.rid, supported.original_status, supported.final_url) == ("r-1", 200, supported.url)
    assert report.citations[2].reason == "http_410"
    assert report.citations[1].evidence_quote and "50 degrees" in report.citations[1].evidence_quote


def test_json_shape_is_exactly_the_documented_one(fetcher: StaticFetcher) -> None:
    v = Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder())
    data = v.verify(CLAIM, ["https://a.example/boiling"]).model_dump(mode="json")
    assert set(data) == {
        "claim",
        "overall",
        "citations",
        "reason",
        "reason_text",
        "missing_parts",
        "suggested_citations",
    }
    assert set(data["citations"][0]) == {
        "url",
        "label",
        "evidence_quote",
        "context",
        "confidence",
        "final_url",
        "original_status",
        "rid",
        "reason",
        "reason_text",
        "kind",
        "supported_parts",
        "missing_parts",
        "archived_url",
        "archived_at",
        "detail",
    }
    assert data["overall"] == "supported"
    assert data["citations"][0]["kind"] == "supported"


def test_each_unique_url_fetched_once_and_one_embedding_batch_and_one_judge_call(
    fetcher: StaticFetcher,
) -> None:
    embedder, judge = HashEmbedder(), OverlapJudge()
    v = Verifier(fetcher=fetcher, judge=judge, embedder=embedder, top_k=2)
    tasks = [
        ClaimTask(CLAIM, ["https://a.example/boiling", "https://a.example/boiling", "https://a.example/old"]),
        ClaimTask("Salt raises the boiling point of water.", ["https://a.example/boiling"]),
    ]
    reports = v.verify_many(tasks)
    assert fetcher.calls == [["https://a.example/boiling", "https://a.example/old"]]
    assert len(embedder.batches) == 1  # both claims and all passages of the call in one batch
    assert len(judge.calls) == 1 and len(judge.calls[0]) == 3  # duplicate URL judged once per claim
    assert all(len(r.passages) <= 2 for r in judge.calls[0])
    assert [len(r.citations) for r in reports] == [2, 1]
    assert reports[1].overall == Label.supported


def test_top_k_passages_are_the_closest(fetcher: StaticFetcher) -> None:
    judge = OverlapJudge()
    Verifier(fetcher=fetcher, judge=judge, embedder=HashEmbedder(), top_k=1).verify(
        "Pressure cookers raise the boiling point.", ["https://a.example/boiling"]
    )
    (shown,) = judge.calls[0][0].passages
    assert shown.startswith("Pressure cookers raise the boiling point")


def test_quote_not_in_source_is_demoted(fetcher: StaticFetcher) -> None:
    judge = ScriptedJudge(JudgeVerdict(label="supported", evidence_quote="Water boils at 100 C.", confidence=1))
    report = Verifier(fetcher=fetcher, judge=judge, embedder=HashEmbedder()).verify(
        CLAIM, ["https://a.example/boiling"]
    )
    c = report.citations[0]
    assert (c.label, c.reason, c.confidence) == (Label.not_found, "evidence_quote_not_in_source", 0.0)


@pytest.mark.parametrize(
    ("quote", "label"),
    [
        ("Denver is high, so water boils at about 95 degrees there.", Label.not_found),  # on the page, not shown
        ("At sea level pure water boils at 100 degrees Celsius.", Label.supported),  # in the passage shown
    ],
)
def test_the_quote_is_checked_against_the_passages_shown_not_the_whole_page(
    fetcher: StaticFetcher, quote: str, label: Label
) -> None:
    """With top_k=1 the judge sees the sea-level passage only: a quote from elsewhere on the page
    is not evidence the judge was shown, so it is demoted."""
    judge = ScriptedJudge(JudgeVerdict(label="supported", evidence_quote=quote, confidence=1))
    report = Verifier(fetcher=fetcher, judge=judge, embedder=HashEmbedder(), top_k=1).verify(
        CLAIM, ["https://a.example/boiling"]
    )
    (shown,) = judge.calls[0][0].passages
    assert shown.startswith("At sea level pure water boils") and quote in BOILING
    assert report.citations[0].label == label
    if label == Label.not_found:
        assert report.citations[0].reason == "evidence_quote_not_in_source"


class ExplodingJudge:
    name = "boom"
    model = "boom"
    cpu_bound = False

    def load(self) -> None:
        """Nothing to load."""

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        raise RuntimeError("judge down")


class ShortJudge(ExplodingJudge):
    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        return []


@pytest.mark.parametrize("judge", [ExplodingJudge(), ShortJudge()])
def test_a_judge_that_raises_is_our_internal_error_not_an_exception(
    fetcher: StaticFetcher, judge: ExplodingJudge, caplog: pytest.LogCaptureFixture
) -> None:
    report = Verifier(fetcher=fetcher, judge=judge, embedder=HashEmbedder()).verify(
        CLAIM, ["https://a.example/boiling", "https://a.example/gone"]
    )
    assert [(c.label, c.reason, c.kind) for c in report.citations] == [
        (Label.not_found, "internal_error", VerdictKind.could_not_check),
        (Label.unreachable, "http_410", VerdictKind.dead_link),
    ]
    said = ("judge boom raised RuntimeError", "judge boom returned 0 verdicts for 1 requests")
    assert report.citations[0].detail in said
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR and "internal error" in r.getMessage()]
    assert len(logged) == 1  # logged once (with its traceback when it raised)
    assert bool(logged[0].exc_info) == (not isinstance(judge, ShortJudge))


def test_no_judge_says_so(fetcher: StaticFetcher) -> None:
    v = Verifier(fetcher=fetcher, judge=None, embedder=HashEmbedder())
    v._judge_resolved = True  # as when no judge is configured and no local model is installed
    report = v.verify(CLAIM, ["https://a.example/boiling"])
    assert report.citations[0].reason == "no_judge_configured"
    assert report.overall == Label.not_found


def test_empty_page_and_all_unreachable(fetcher: StaticFetcher) -> None:
    v = Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder())
    assert v.verify(CLAIM, ["https://a.example/empty"]).citations[0].reason == "empty_page"
    assert v.verify(CLAIM, ["https://a.example/gone"]).overall == Label.unreachable
    assert v.verify(CLAIM, []).overall == Label.not_found


def test_facts_are_judged_without_fetching(fetcher: StaticFetcher) -> None:
    v = Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder())
    report = v.verify_many([ClaimTask(CLAIM, [Fact(BOILING, source="fact:0"), Fact(OLD, source="fact:1")])])[0]
    assert [c.url for c in report.citations] == ["fact:0", "fact:1"]
    assert [c.label for c in report.citations] == [Label.supported, Label.contradicted]
    assert fetcher.calls == []


@pytest.mark.parametrize("claim", ["", "   "])
def test_empty_claim_is_rejected(fetcher: StaticFetcher, claim: str) -> None:
    with pytest.raises(ValueError, match="claim"):
        Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder()).verify(claim, [])


def test_bad_evidence_type_is_rejected(fetcher: StaticFetcher) -> None:
    v = Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder())
    with pytest.raises(TypeError, match="URL string or a Fact"):
        v.verify_many([ClaimTask(CLAIM, [42])])  # type: ignore[list-item]


async def test_async_and_sync_agree_and_sync_works_inside_a_running_loop(fetcher: StaticFetcher) -> None:
    v = Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder())
    urls = ["https://a.example/boiling", "https://a.example/old"]
    async_report = await v.averify(CLAIM, urls)
    sync_report = v.verify(CLAIM, urls)  # called from inside this test's running event loop
    assert async_report == sync_report


async def test_memo_shares_fetches_across_calls(fetcher: StaticFetcher) -> None:
    v = Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder())
    memo = PageMemo()
    await asyncio.gather(
        v.averify_many([ClaimTask(CLAIM, ["https://a.example/boiling"])], memo=memo),
        v.averify_many([ClaimTask(CLAIM, ["https://a.example/boiling", "https://a.example/old"])], memo=memo),
    )
    fetched = [u for call in fetcher.calls for u in call]
    assert sorted(fetched) == ["https://a.example/boiling", "https://a.example/old"]


class RaisingFetcher:
    name = "raising"

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, FetchedPage]:
        raise OSError("network stack on fire")


def test_a_fetcher_that_raises_is_our_internal_error_never_the_pages_fault(caplog: pytest.LogCaptureFixture) -> None:
    v = Verifier(fetcher=RaisingFetcher(), judge=OverlapJudge(), embedder=HashEmbedder())
    report = v.verify(CLAIM, ["https://a.example/x", "https://a.example/y"])
    assert [(c.label, c.reason) for c in report.citations] == [(Label.not_found, "internal_error")] * 2
    assert all(c.kind == VerdictKind.could_not_check for c in report.citations)
    assert len([r for r in caplog.records if r.exc_info]) == 1  # one traceback for the one failure


class ExplodingEmbedder(HashEmbedder):
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise ImportError("no module named sentence_transformers")


def test_a_failure_of_retrieval_is_internal_error_for_every_judged_citation(fetcher: StaticFetcher) -> None:
    v = Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=ExplodingEmbedder(), top_k=1)
    report = v.verify(CLAIM, ["https://a.example/boiling", "https://a.example/gone"])
    assert [(c.label, c.reason) for c in report.citations] == [
        (Label.not_found, "internal_error"),
        (Label.unreachable, "http_410"),  # decided before retrieval: still the page's own verdict
    ]


def test_recorders_see_every_decision(fetcher: StaticFetcher) -> None:
    seen = []
    v = Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder(), recorders=[seen.append])
    v.verify(CLAIM, ["https://a.example/boiling", "https://a.example/gone"])
    assert [(r.source, r.verdict.label) for r in seen] == [
        ("https://a.example/boiling", Label.supported),
        ("https://a.example/gone", Label.unreachable),
    ]
    assert seen[0].judge_name == "overlap" and seen[0].passages_shown
    assert seen[1].judge_name is None and seen[1].passages_shown == []


class MalformedPageFetcher:
    """A buggy fetcher of ours: its page skipped validation, and its status is a string."""

    name = "malformed"

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, FetchedPage]:
        return {u: FetchedPage.model_construct(url=u, original_status="200", text="Water.", reason=None) for u in urls}


def test_a_page_our_code_cannot_read_is_internal_error_for_that_page_only(fetcher: StaticFetcher) -> None:
    v = Verifier(fetcher=MalformedPageFetcher(), judge=OverlapJudge(), embedder=HashEmbedder())
    report = v.verify(CLAIM, ["https://a.example/broken"])
    assert [(c.label, c.reason) for c in report.citations] == [(Label.not_found, "internal_error")]


def test_a_judge_lacking_part_of_the_protocol_is_refused_naming_what_it_lacks() -> None:
    class HalfJudge:
        name = "mine"
        model = "m"

        async def judge(self, requests: object) -> list[object]:
            return []

    with pytest.raises(TypeError, match=r"HalfJudge is not a Judge: it lacks cpu_bound, load"):
        Verifier(judge=HalfJudge(), fetcher=StaticFetcher({}), embedder=HashEmbedder())  # type: ignore[arg-type]
