"""Custom stages that answer the wrong types, or never answer: a judge returning ``[None]``, a
dict, an unknown label, a NaN confidence or a quote that is not a string; a fetcher returning
``None`` or a string; an embedder's NaN vectors. Each is an ``internal_error`` verdict naming the
stage and what was wrong, never an exception out of the call; a judge or fetcher that hangs is
ended by the call's deadline (``GUARDRAIL_DEADLINE``), its citations ``deadline``.

The stages are the tests' own implementations of the public protocols, as a user would plug in."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from guardrail import Label, Settings, Verifier
from guardrail.core.policy import Policy, apply_policy
from guardrail.core.schema import FetchedPage, JudgeRequest, JudgeVerdict, Reason, VerdictKind
from guardrail.fetch.crawlbase import CrawlbaseFetcher
from guardrail.fetch.direct import DirectFetcher
from guardrail.testing import HashEmbedder, OverlapJudge, StaticFetcher
from guardrail.verifier import Fact
from tests.fixtures.crawlbase_server import NORMAL_TOKEN, FakeCrawlbase, FakeTarget

URL = "https://a.example/boiling"
GONE = "https://a.example/gone"
CLAIM = "At sea level pure water boils at 100 degrees Celsius."
PAGES = {
    URL: FetchedPage(url=URL, final_url=URL, original_status=200, text=CLAIM + " It is a well known fact."),
    GONE: FetchedPage(url=GONE, original_status=410),
}
ANSWER = f"{CLAIM} [1]\n\n[1]: {URL}\n"
NO_STORES: dict[str, object] = {"cache_path": "off", "audit_path": "off"}


class AnsweringJudge(OverlapJudge):
    """A judge whose answer to a call is ``answer(requests)``, whatever its type."""

    name = "custom-judge"

    def __init__(self, answer: Callable[[Sequence[JudgeRequest]], object]) -> None:
        super().__init__()
        self.answer = answer

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        return self.answer(requests)  # type: ignore[return-value]


def _nan_after_construction(requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
    verdict = JudgeVerdict(label="supported", evidence_quote=CLAIM, confidence=0.9)
    verdict.confidence = float("nan")  # no validation on assignment
    return [verdict for _ in requests]


WRONG_JUDGE_ANSWERS: dict[str, tuple[Callable[[Sequence[JudgeRequest]], object], str]] = {
    "none_in_a_list": (lambda rs: [None for _ in rs], "judge custom-judge answered a NoneType, not a JudgeVerdict"),
    "a_dict": (lambda rs: {"label": "supported"}, "judge custom-judge returned dict, not a list of JudgeVerdict"),
    "dicts_in_a_list": (
        lambda rs: [{"label": "supported", "confidence": 0.9} for _ in rs],
        "judge custom-judge answered a dict, not a JudgeVerdict",
    ),
    "none": (lambda rs: None, "judge custom-judge returned NoneType, not a list of JudgeVerdict"),
    "unknown_label": (
        lambda rs: [JudgeVerdict.model_construct(label="maybe", confidence=0.5) for _ in rs],
        "judge custom-judge answered an invalid verdict (label: Input should be 'supported', 'contradicted' or",
    ),
    "nan_confidence": (_nan_after_construction, "judge custom-judge answered an invalid verdict (confidence:"),
    "quote_not_a_string": (
        lambda rs: [JudgeVerdict.model_construct(label="supported", evidence_quote=42, confidence=0.9) for _ in rs],
        "judge custom-judge answered an invalid verdict (evidence_quote: Input should be a valid string)",
    ),
    "unknown_reason": (
        lambda rs: [JudgeVerdict(label="not_found", reason="because") for _ in rs],
        "judge custom-judge answered an invalid verdict (reason: not one of the reason codes",
    ),
    "too_few": (lambda rs: [], "judge custom-judge returned 0 verdicts for 1 requests"),
}


def verifier(judge: object = None, fetcher: object = None, embedder: object = None, **settings: object) -> Verifier:
    return Verifier(
        fetcher=fetcher or StaticFetcher(PAGES),  # type: ignore[arg-type]
        judge=judge or OverlapJudge(),  # type: ignore[arg-type]
        embedder=embedder or HashEmbedder(),  # type: ignore[arg-type]
        settings=Settings(**{**NO_STORES, **settings}),  # type: ignore[arg-type]
    )


def assert_unchecked(verdict: object, reason: Reason, detail: str) -> None:
    assert verdict.label == Label.not_found and verdict.reason == reason.value, verdict  # type: ignore[attr-defined]
    assert verdict.kind == VerdictKind.could_not_check  # type: ignore[attr-defined]
    assert verdict.detail is not None and verdict.detail.startswith(detail), verdict.detail  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", list(WRONG_JUDGE_ANSWERS))
def test_a_judge_answering_the_wrong_types_is_an_internal_error_verdict(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    answer, detail = WRONG_JUDGE_ANSWERS[case]
    with caplog.at_level(logging.ERROR):
        report = verifier(AnsweringJudge(answer)).verify_answer(ANSWER)
    claim = report.claims[0]
    assert_unchecked(claim.verdicts[0], Reason.internal_error, detail)
    assert report.internal_errors == 1
    assert any(detail[:40] in r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)
    # The policy still applies: the citation is marked as one we could not check.
    assert "could not check" in apply_policy(report, Policy()).text


def test_one_bad_verdict_leaves_the_others_alone() -> None:
    def answer(requests: Sequence[JudgeRequest]) -> list[object]:
        good = JudgeVerdict(label="supported", evidence_quote=CLAIM, confidence=0.9)
        return [None if "second" in r.claim else good for r in requests]

    tasks = verifier(AnsweringJudge(answer)).verify_texts(
        [(CLAIM, Fact(CLAIM)), (f"The second claim: {CLAIM}", Fact(CLAIM))], max_sentences=1
    )
    assert tasks[0].label == Label.supported
    assert tasks[1].claims[0].citations[0].reason == Reason.internal_error.value


class AnsweringFetcher(StaticFetcher):
    name = "custom-fetcher"

    def __init__(self, answer: object) -> None:
        super().__init__(PAGES)
        self.answer = answer

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, FetchedPage]:
        return self.answer(urls) if callable(self.answer) else self.answer  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("answer", "detail"),
    [
        (None, "fetcher custom-fetcher returned NoneType, not a dict of FetchedPage"),
        ("<html>a page</html>", "fetcher custom-fetcher returned str, not a dict of FetchedPage"),
        (lambda urls: {}, "fetcher custom-fetcher returned no page for a URL it was given"),
        (lambda urls: {u: "text" for u in urls}, "fetcher custom-fetcher returned a str for a URL, not a FetchedPage"),
    ],
)
def test_a_fetcher_answering_the_wrong_types_is_an_internal_error_verdict(answer: object, detail: str) -> None:
    report = verifier(fetcher=AnsweringFetcher(answer)).verify_answer(ANSWER)
    assert_unchecked(report.claims[0].verdicts[0], Reason.internal_error, detail)
    same = verifier(fetcher=AnsweringFetcher(answer)).verify(CLAIM, [URL, GONE])
    assert all(v.reason == Reason.internal_error.value for v in same.citations)


class NanEmbedder(HashEmbedder):
    name = "nan-embedder"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = super().embed(texts)
        vectors[:, 0] = np.nan
        return vectors


class FlatEmbedder(HashEmbedder):
    name = "flat-embedder"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return super().embed(texts).reshape(-1)


RIVERS = "\n\n".join(f"Paragraph {n} talks about rivers and hills. " * 30 for n in range(8))
LONG_PAGE = FetchedPage(url=URL, original_status=200, text=RIVERS)  # more passages than top_k: ranked


@pytest.mark.parametrize(
    ("embedder", "detail"),
    [
        (NanEmbedder(), "retrieving passages failed: EmbedderError: embedder nan-embedder returned NaN or infinite"),
        (
            FlatEmbedder(),
            "retrieving passages failed: EmbedderError: embedder flat-embedder returned an array of shape",
        ),
    ],
)
def test_nan_or_misshapen_embeddings_are_refused_not_ranked(embedder: HashEmbedder, detail: str) -> None:
    pages = {URL: LONG_PAGE.model_copy(update={"text": LONG_PAGE.text + "\n\n" + CLAIM})}
    report = verifier(fetcher=StaticFetcher(pages), embedder=embedder).verify(CLAIM, [URL])
    assert_unchecked(report.citations[0], Reason.internal_error, detail)


# -- the deadline ------------------------------------------------------------------------------------


class HungJudge(OverlapJudge):
    """A judge that never answers (it waits for an event nobody sets); ``entered`` is set once it
    has been called, ``cancelled`` once the call was given up."""

    name = "hung-judge"

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()
        self.cancelled = False

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        self.entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        raise AssertionError("unreachable")


def test_a_hung_judge_is_ended_by_the_deadline() -> None:
    judge = HungJudge()
    report = verifier(judge, deadline=0.5).verify_answer(f"{CLAIM} [1] Gone too [2].\n\n[1]: {URL}\n[2]: {GONE}\n")
    assert judge.entered.is_set() and judge.cancelled
    first, second = report.claims
    assert_unchecked(first.verdicts[0], Reason.deadline, "judging had not finished when GUARDRAIL_DEADLINE (0.5 s)")
    # A verdict decided before the deadline is kept: the dead link is still a dead link.
    assert (second.verdicts[0].label, second.verdicts[0].reason) == (Label.unreachable, "http_410")
    assert report.internal_errors == 0  # not a bug of ours: the time ran out


async def test_the_deadline_holds_for_verify_and_the_async_api() -> None:
    report = await verifier(HungJudge(), deadline=0.3).averify(CLAIM, [URL])
    assert report.citations[0].reason == Reason.deadline.value and report.overall == Label.not_found


class HungFetcher(StaticFetcher):
    name = "hung-fetcher"

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, FetchedPage]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def test_a_hung_fetcher_is_ended_by_the_deadline() -> None:
    report = verifier(fetcher=HungFetcher(PAGES), deadline=0.3).verify_answer(ANSWER)
    assert_unchecked(report.claims[0].verdicts[0], Reason.deadline, "fetching the pages had not finished")


def test_the_default_deadline_and_the_fetch_budgets_fit_inside_each_other() -> None:
    settings = Settings(**NO_STORES)  # type: ignore[arg-type]
    assert settings.deadline == 100.0
    direct = DirectFetcher.from_settings(settings)
    assert direct.total_timeout == direct.retry.budget == 30.0  # 2 x 15 s, within 0.6 x 100 s
    tight = Settings(deadline=10, **NO_STORES)  # type: ignore[arg-type]
    assert DirectFetcher.from_settings(tight).total_timeout == 6.0
    crawlbase = CrawlbaseFetcher.from_settings(tight.model_copy(update={"crawlbase_token": NORMAL_TOKEN}))
    assert crawlbase.page_budget == 6.0 and crawlbase.timeout == 6.0
    service = Settings(request_timeout=20, **NO_STORES).within_request_timeout()  # type: ignore[arg-type]
    assert service.deadline == 18.0


def test_a_hung_crawlbase_api_is_a_fetch_timeout_inside_the_deadline() -> None:
    """Its 90 s timeout and 180 s retry budget used to outlast the service's request timeout."""
    api = FakeCrawlbase().start()
    try:
        api.targets[URL] = FakeTarget(readable=CLAIM, delay=30.0)  # the API holds the call
        settings = Settings(deadline=2.0, crawlbase_token=NORMAL_TOKEN, crawlbase_api_url=api.api_url, **NO_STORES)  # type: ignore[arg-type]
        fetcher = CrawlbaseFetcher.from_settings(settings)
        report = Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder(), settings=settings).verify(
            CLAIM, [URL]
        )
    finally:
        api.stop()
    verdict = report.citations[0]
    assert (verdict.label, verdict.reason, verdict.kind) == (
        Label.unreachable,
        Reason.fetch_timeout.value,
        VerdictKind.could_not_check,
    )
