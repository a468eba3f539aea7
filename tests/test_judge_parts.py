"""Issue 10's categories for the embedded judge: atomic parts, antonyms, language, a page about
something else, another event's year, a claim split over two cited pages. Pure checks first, then
the real model through the verifier (slow)."""

from __future__ import annotations

import pytest

from guardrail import ClaimTask, Fact, Label, Settings, Verifier
from guardrail.judges import _checks as checks
from guardrail.judges._lexicon import are_antonyms, is_english
from guardrail.judges._parts import claim_parts
from guardrail.judges.local import LocalJudge
from guardrail.testing import HashEmbedder

# -- atomic parts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "parts"),
    [
        ("It starred Brad Pitt and Kate Winslet.", ["It starred Brad Pitt", "It starred Kate Winslet"]),
        (
            "Titanic was directed by James Cameron and grossed over 2 billion dollars.",
            ["Titanic was directed by James Cameron", "Titanic grossed over 2 billion dollars"],
        ),
        (
            "He was born in Paris, which is the capital of France.",
            ["He was born in Paris", "Paris is the capital of France"],
        ),
        (
            'The band\'s third album, "Emotive", was released in 2004.',
            ["The band's third album was released in 2004", "The band's third album is Emotive"],
        ),
        (
            "The couple married in New York in December 2012, and their son was born the next year.",
            [
                "The couple married in December 2012",
                "The couple married in New York",
                "their son was born the next year",
            ],
        ),
        ("Water boils at 100 degrees Celsius at sea level.", ["Water boils at 100 degrees Celsius at sea level."]),
        ("Titanic was directed by James Cameron.", ["Titanic was directed by James Cameron."]),
    ],
)
def test_claims_split_into_atomic_parts(claim: str, parts: list[str]) -> None:
    assert claim_parts(claim) == parts


# -- antonyms and language ---------------------------------------------------------------


def test_antonyms_from_the_list_and_by_negative_prefix() -> None:
    for a, b in [("increased", "decreased"), ("before", "after"), ("most", "fewest"), ("majority", "minority")]:
        assert are_antonyms(a, b) and are_antonyms(b, a)
    assert are_antonyms("legal", "illegal") and are_antonyms("likely", "unlikely")
    assert not are_antonyms("form", "inform")  # a prefix on a short stem is not a negation
    assert not are_antonyms("increased", "rose")


def test_an_antonym_flip_needs_the_rest_of_the_claim_to_match() -> None:
    assert checks.antonym_flip("Sales increased in 2010.", "Sales decreased in 2010.") == ("increased", "decreased")
    assert checks.antonym_flip(
        "A large majority of voters backed the law.", "A small minority of voters backed the law."
    ) in {("large", "small"), ("majority", "minority")}
    assert checks.antonym_flip("The drug is legal in France.", "The drug is illegal in France.") == ("legal", "illegal")
    # The opposite word in a sentence about something else is no flip.
    assert checks.antonym_flip("Sales increased in 2010.", "The river level decreased after the storm.") is None


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("Water boils at 100 degrees Celsius at sea level.", True),
        ("Quantum chromodynamics binds quarks.", True),  # no function word at all: not refused
        ("Paris", True),
        ("Der Mount Everest wurde 1953 zum ersten Mal bestiegen.", False),
        ("La Tour Eiffel mesure 330 mètres.", False),
        ("El agua hierve a 100 grados.", False),
        ("東京は日本の首都です。", False),
    ],
)
def test_english_is_told_from_other_languages(text: str, english: bool) -> None:
    assert is_english(text) is english


# -- decisions on given probabilities ------------------------------------------------------


MOON = (
    "The Moon is Earth's only natural satellite. It orbits at an average distance of 384,400 km. "
    "Apollo 11 made the first crewed Moon landing in 1969, when Neil Armstrong and Buzz Aldrin walked on "
    "its surface."
)


def test_a_set_phrase_is_not_read_for_opposites() -> None:
    claim = "In short, the Cedar River has a length of around 254 kilometres."
    evidence = "The Cedar River is about 254 kilometres long from its source to its mouth."
    assert checks.antonym_flip(claim, evidence) is None  # the "short" of "in short" is no length
    assert checks.antonym_flip("The Cedar River is short.", "The Cedar River is long.") == ("short", "long")


# -- the real model through the verifier -----------------------------------------------------


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    class NoFetch:
        name = "none"

        async def fetch_all(self, urls: object) -> dict:
            raise AssertionError("nothing should be fetched")

    return Verifier(judge=LocalJudge(), embedder=HashEmbedder(), fetcher=NoFetch(), settings=Settings())  # type: ignore[arg-type]


EVEREST = (
    "Mount Everest is Earth's highest mountain above sea level, located in the Himalayas. Its elevation of "
    "8,849 metres was established in 2020. Edmund Hillary and Tenzing Norgay made the first official ascent "
    "of Everest in 1953."
)
SALES = "The company was founded in Leeds in 1901. Its sales decreased in 2010, after it lost its largest customer."


def _check(verifier: Verifier, claim: str, *texts: str):  # type: ignore[no-untyped-def]
    facts = [Fact(t, source=f"fact:{i}") for i, t in enumerate(texts)]
    return verifier.verify_many([ClaimTask(claim, facts)])[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    "claim", ["Mount Everest was first climbed in 1963.", "The Moon has a thin atmosphere of helium."]
)
def test_a_page_about_something_else_is_not_a_contradiction(verifier: Verifier, claim: str) -> None:
    assert _check(verifier, claim, MOON).overall == Label.not_found


@pytest.mark.slow
def test_another_year_for_the_same_event_still_contradicts(verifier: Verifier) -> None:
    report = _check(verifier, "Mount Everest was first climbed in 1963.", EVEREST)
    assert report.overall == Label.contradicted
    assert report.citations[0].evidence_quote is not None and "1953" in report.citations[0].evidence_quote


@pytest.mark.slow
def test_the_year_the_page_states_is_supported_and_another_is_not(verifier: Verifier) -> None:
    assert _check(verifier, "Mount Everest was first climbed in 1953.", EVEREST).overall == Label.supported
    assert _check(verifier, "Mount Everest was first climbed in 1963.", EVEREST).overall != Label.supported


@pytest.mark.slow
def test_an_antonym_flip_reads_not_supported_with_the_real_model(verifier: Verifier) -> None:
    assert _check(verifier, "Its sales increased in 2010.", SALES).overall == Label.contradicted


@pytest.mark.slow
def test_the_sales_the_page_states_are_supported(verifier: Verifier) -> None:
    assert _check(verifier, "Its sales decreased in 2010.", SALES).overall == Label.supported


@pytest.mark.slow
def test_a_claim_split_over_two_cited_pages_is_supported_by_them_together(verifier: Verifier) -> None:
    opened = (
        "The Harbour Bridge is a steel arch bridge. The bridge opened to traffic in 1932 after eight years of work."
    )
    length = "The Harbour Bridge is one of the city's landmarks. The Harbour Bridge is 503 metres long."
    claim = "The Harbour Bridge opened in 1932 and is 503 metres long."
    report = _check(verifier, claim, opened, length)
    assert (report.overall, report.reason) == (Label.supported, "combined_sources")
    first, second = report.citations
    assert (first.label, first.reason) == (Label.not_found, "partially_supported")
    assert first.supported_parts == ["The Harbour Bridge opened in 1932"]
    assert first.missing_parts == ["The Harbour Bridge is 503 metres long"]
    assert second.supported_parts == ["The Harbour Bridge is 503 metres long"]
    alone = _check(verifier, claim, opened)
    assert (alone.overall, alone.reason, alone.missing_parts) == (
        Label.not_found,
        "partially_supported",
        ["The Harbour Bridge is 503 metres long"],
    )


@pytest.mark.slow
def test_a_non_english_claim_or_page_is_not_judged(verifier: Verifier) -> None:
    report = _check(verifier, "Der Mount Everest wurde 1953 zum ersten Mal bestiegen.", EVEREST)
    assert (report.overall, report.citations[0].reason) == (Label.not_found, "unsupported_language")
    german_page = (
        "Der Mount Everest ist der höchste Berg der Erde. Er wurde 1953 von Edmund Hillary und Tenzing Norgay "
        "zum ersten Mal bestiegen."
    )
    report = _check(verifier, "Mount Everest was first climbed in 1953.", german_page)
    assert (report.overall, report.citations[0].reason) == (Label.not_found, "unsupported_language")


def test_an_opening_phrase_before_the_main_clause_is_not_an_apposition() -> None:
    claim = "From its source in the Grey Mountains, the Alder River runs to the Northern Sea."
    assert claim_parts(claim) == [claim]
    # A real apposition after a clause with its verb is still a part of its own.
    assert claim_parts("Titanic was directed by James Cameron, a Canadian filmmaker.") == [
        "Titanic was directed by James Cameron",
        "James Cameron is a Canadian filmmaker",
    ]
