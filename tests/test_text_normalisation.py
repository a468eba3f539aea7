"""Invisible characters and compatibility forms cannot flip a verdict: claims, passages and quotes
are matched after one normalisation (format characters out, NFKC), end to end through Verifier."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from guardrail import Verifier
from guardrail.core.quote_guard import quote_in_passages
from guardrail.core.schema import FetchedPage, Label
from guardrail.core.text import FORMAT_CHARACTERS, normalize_text
from guardrail.settings import Settings
from guardrail.testing import HashEmbedder, OverlapJudge, StaticFetcher
from guardrail.verifier import ClaimTask, Fact

PAGE_URL = "https://example.org/boiling"
PAGE = (
    "Water is one of the most studied substances in chemistry.\n\n"
    "At standard atmospheric pressure, which is the pressure at sea level, pure water boils at "
    "100 degrees Celsius (212 degrees Fahrenheit)."
)
CLAIM = "Water boils at 100 degrees Celsius at sea level."

INVISIBLE = {
    "zero-width space in the number": CLAIM.replace("100", "1\u200b00"),
    "soft hyphen in a name": CLAIM.replace("Celsius", "Cel\u00adsius"),
    "zero-width joiner in a word": CLAIM.replace("Water", "Wa\u200dter"),
    "word joiner and BOM": CLAIM.replace("100", "\ufeff10\u20600"),
    "right-to-left override": CLAIM.replace("degrees", "\u202edegrees\u202c"),
    "full-width digits": CLAIM.replace("100", "\uff11\uff10\uff10"),
    "every one at once": "Wa\u200dter boils at 1\u200b0\u00ad0 degrees Cel\u00adsius at sea level.",
}


def test_format_characters_are_removed_and_compatibility_forms_folded() -> None:
    assert normalize_text("1\u200b00 Cel\u00adsius wa\u200dter\ufeff") == "100 Celsius water"
    assert normalize_text("\uff11\uff10\uff10 \ufb01ne km\u00b2 caf\u0065\u0301") == "100 fine km2 caf\u00e9"
    assert normalize_text("a\u00a0b") == "a b"
    ascii_text = "Plain text stays the very same object."
    assert normalize_text(ascii_text) is ascii_text
    once = normalize_text(INVISIBLE["every one at once"])
    assert normalize_text(once) == once


def test_the_format_class_is_every_cf_character_of_this_python() -> None:
    """The class is written out (a scan of all code points takes half a second): it must hold every
    character this Python's Unicode database files under Cf, and nothing assigned to another category."""
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        category = unicodedata.category(char)
        listed = FORMAT_CHARACTERS.fullmatch(char) is not None
        if category == "Cf":
            assert listed, f"U+{code:04X} is Cf but not in FORMAT_CHARACTERS"
        elif listed:
            assert category == "Cn", f"U+{code:04X} is {category}, not a format character"


@pytest.mark.parametrize(
    ("quote", "passage"),
    [
        ("pure water boils at 1\u200b00 degrees", "pure water boils at 100 degrees Celsius"),
        ("pure water boils at 100 degrees", "pure wa\u00adter boils at 100 degrees Celsius"),
        ("water boils at \uff11\uff10\uff10 degrees", "water boils at 100 degrees"),
    ],
)
def test_the_quote_guard_matches_through_invisible_characters(quote: str, passage: str) -> None:
    assert quote_in_passages(quote, [passage])


def _verifier(judge: object, page_text: str = PAGE) -> Verifier:
    fetcher = StaticFetcher({PAGE_URL: FetchedPage(url=PAGE_URL, original_status=200, text=page_text)})
    return Verifier(judge=judge, embedder=HashEmbedder(), fetcher=fetcher, settings=Settings())  # type: ignore[arg-type]


@pytest.mark.parametrize("claim", list(INVISIBLE.values()), ids=list(INVISIBLE))
async def test_an_invisible_character_in_a_true_claim_does_not_flip_it(claim: str) -> None:
    judge = OverlapJudge()
    report = await _verifier(judge).averify(claim, [PAGE_URL])
    assert report.overall == Label.supported, report.citations[0]
    assert report.claim == claim  # the report keeps the claim as it was given
    [[request]] = judge.calls
    assert request.claim == normalize_text(claim) and FORMAT_CHARACTERS.search(request.claim) is None


async def test_invisible_characters_in_the_page_do_not_hide_the_evidence() -> None:
    page = PAGE.replace("100", "1\u200b00").replace("Celsius", "Cel\u00adsius").replace("water", "wa\u200dter")
    judge = OverlapJudge()
    report = await _verifier(judge, page).averify(CLAIM, [PAGE_URL])
    assert report.overall == Label.supported
    assert "100 degrees Celsius" in (report.citations[0].evidence_quote or "")
    assert all(FORMAT_CHARACTERS.search(p) is None for p in judge.calls[0][0].passages)


async def test_a_fact_source_is_normalised_like_a_page() -> None:
    judge = OverlapJudge()
    fact = Fact(PAGE.replace("100", "1\u00ad00"), source="fact:0")
    [report] = await _verifier(judge).averify_many([ClaimTask(CLAIM, [fact])])
    assert report.overall == Label.supported


async def test_a_false_claim_with_invisible_characters_is_still_contradicted() -> None:
    report = await _verifier(OverlapJudge()).averify(CLAIM.replace("100", "5\u200b0"), [PAGE_URL])
    assert report.overall == Label.contradicted


@pytest.mark.slow
@pytest.mark.parametrize("claim", list(INVISIBLE.values()), ids=list(INVISIBLE))
def test_the_embedded_judge_reads_through_invisible_characters(claim: str) -> None:
    from guardrail.judges.local import LocalJudge

    report = _verifier(_local_judge(LocalJudge)).verify(claim, [PAGE_URL])
    assert report.overall == Label.supported, report.citations[0]


@pytest.mark.slow
def test_the_embedded_judge_still_contradicts_a_false_claim_with_invisible_characters() -> None:
    from guardrail.judges.local import LocalJudge

    report = _verifier(_local_judge(LocalJudge)).verify(CLAIM.replace("100", "5\u200b0"), [PAGE_URL])
    assert report.overall == Label.contradicted


_JUDGES: dict[str, object] = {}


def _local_judge(cls: type) -> object:
    """One embedded judge for this module (loading it takes seconds)."""
    return _JUDGES.setdefault("local", cls())
