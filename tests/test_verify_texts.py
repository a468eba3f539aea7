"""Verifier.verify_texts / averify_texts: does a page still support a text written from it (a retrieved
chunk)? Real fixture pages over loopback, the real DirectFetcher, the test judge and embedder."""

from __future__ import annotations

import pytest

from guardrail import Fact, Label, Verifier
from guardrail.core.aggregate import aggregate_text
from guardrail.testing import LoopbackSite, OverlapJudge
from tests.fakes import fixture_verifier

S, C, N, U = Label.supported, Label.contradicted, Label.not_found, Label.unreachable

PAGE_CHUNK = (
    "At standard atmospheric pressure, which is the pressure at sea level, pure water boils at 100 degrees "
    "Celsius (212 degrees Fahrenheit). At higher altitudes the air pressure is lower, so water boils at a lower "
    "temperature. In Denver, about 1,600 metres above sea level, water boils at roughly 95 degrees Celsius."
)


def make_verifier() -> tuple[Verifier, OverlapJudge]:
    judge = OverlapJudge()
    return fixture_verifier(judge), judge


def test_aggregate_text_rule() -> None:
    assert aggregate_text([S, S, N]) == S
    assert aggregate_text([S, N, N]) == N  # one line of three is not support for the chunk
    assert aggregate_text([S, N, N], min_supported=0.3) == S
    assert aggregate_text([S, S, C]) == C  # any contradiction wins
    assert aggregate_text([U, U]) == U
    assert aggregate_text([S, U]) == S  # half supported; unreachable only when every sentence is
    assert aggregate_text([N, U]) == N
    assert aggregate_text([]) == N
    with pytest.raises(ValueError, match="min_supported"):
        aggregate_text([S], min_supported=0)


def test_texts_against_live_pages(pages: LoopbackSite) -> None:
    verifier, judge = make_verifier()
    boiling = pages.url("/boiling")
    items: list[tuple[str, str | Fact]] = [
        (PAGE_CHUNK, boiling),
        ("Water boils at 50 degrees Celsius at sea level.", boiling),  # the page now says otherwise
        (PAGE_CHUNK, pages.url("/gone-404")),
        ("Titanic is a 1997 film directed by James Cameron.", pages.url("/tomatoes")),
        ("## Notes\n\n", boiling),
        (PAGE_CHUNK, Fact(PAGE_CHUNK, source="chunk-7")),
    ]
    with pages.counting() as hits:
        reports = verifier.verify_texts(items)
    assert hits == {"/boiling": 1, "/gone-404": 1, "/tomatoes": 1}  # each URL once for the whole call
    assert len(judge.calls) == 1

    same, changed, dead, unrelated, empty, fact = reports
    assert (same.label, same.sentences_checked, same.sentences_supported) == (S, 3, 3)
    assert same.source == boiling and same.original_status == 200
    assert same.evidence_quote and "100 degrees Celsius" in same.evidence_quote
    assert same.claims[0].claim.startswith("At standard atmospheric pressure")

    assert (changed.label, changed.sentences_contradicted) == (C, 1)
    assert changed.evidence_quote and "100 degrees Celsius" in changed.evidence_quote

    assert (dead.label, dead.reason, dead.original_status) == (U, "http_404", 404)
    assert unrelated.label == N and unrelated.sentences_supported == 0

    # A heading alone is still checked (nothing asserts more); empty text is not checked at all.
    assert empty.sentences_checked == 1 and empty.label == N
    assert (fact.label, fact.source, fact.final_url) == (S, "chunk-7", None)


def test_min_supported_and_max_sentences(pages: LoopbackSite) -> None:
    verifier, _ = make_verifier()
    boiling = pages.url("/boiling")
    mixed = PAGE_CHUNK + " Tomatoes need six hours of direct sunlight every day."
    (loose,) = verifier.verify_texts([(mixed, boiling)])
    assert (loose.label, loose.sentences_supported, loose.sentences_checked) == (S, 3, 4)
    (strict,) = verifier.verify_texts([(mixed, boiling)], min_supported=1.0)
    assert (strict.label, strict.reason) == (N, "insufficient_support")
    (capped,) = verifier.verify_texts([(mixed, boiling)], max_sentences=2)
    # Spread over the text: the first and the last sentence.
    assert [c.claim for c in capped.claims] == [
        verifier.verify_texts([(PAGE_CHUNK, boiling)])[0].claims[0].claim,
        "Tomatoes need six hours of direct sunlight every day.",
    ]


async def test_nothing_to_check_and_bad_input(pages: LoopbackSite) -> None:
    verifier, _ = make_verifier()
    with pages.counting() as hits:
        (report,) = await verifier.averify_texts([("  \n", pages.url("/boiling"))])
    assert (report.label, report.reason, report.sentences_checked) == (N, "nothing_to_check", 0)
    assert hits == {}
    with pytest.raises(TypeError, match=r"items\[0\]"):
        await verifier.averify_texts([("text", 42)])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="max_sentences"):
        await verifier.averify_texts([("text", pages.url("/boiling"))], max_sentences=0)
