"""One claim, one page, one answer: the grounding check and ``verify`` take the same decision, and
spellings a reader takes for the same word or value (British and American, diacritics, thousands
separators) match, on pages of several lengths."""

from __future__ import annotations

import html
from collections.abc import Iterator

import pytest

from guardrail import Label, Verifier, check_grounding
from guardrail.apps.demo import LoopbackSite, Route
from guardrail.judges import _checks as checks

FILLER = [
    "The region has a temperate climate with mild summers.",
    "Local farmers grow wheat, barley and potatoes in the valley.",
    "A railway line connecting the two towns opened in the nineteenth century.",
    "The town hall was rebuilt after a fire destroyed the original building.",
    "Several festivals take place in the town every summer.",
    "The population has grown steadily since the end of the war.",
    "A museum in the old school displays tools used by early settlers.",
    "The river is popular with anglers and canoeists.",
]
TITANIC = (
    "Titanic is a 1997 American epic romantic disaster movie. It was directed, written, and co-produced by "
    "James Cameron. It stars Kate Winslet and Leonardo DiCaprio."
)
WATER = (
    "At standard atmospheric pressure, which is the pressure at sea level, pure water boils at 100 degrees "
    "Celsius (212 degrees Fahrenheit)."
)
# (page title, what the page says, claims: each group's claims say the same thing in other spellings)
PAGES: list[tuple[str, str, list[list[str]]]] = [
    (
        "Titanic (1997 film)",
        TITANIC,
        [
            ["Titanic was directed by James Cameron."],
            ["Titanic was directed by Steven Spielberg."],
            ["It starred Brad Pitt and Kate Winslet."],
            ["Titanic won 11 Academy Awards."],
        ],
    ),
    (
        "Water",
        WATER,
        [
            ["Water boils at 100 degrees Celsius at sea level."],
            ["Water boils at 50 degrees Celsius at sea level."],
        ],
    ),
    (
        "The Eiffel Tower",
        "The tower is 300 metres tall and was built for the 1889 World's Fair.",
        [["The tower is 300 metres tall.", "The tower is 300 meters tall."]],
    ),
    (
        "Smalltown",
        "The town had 1 000 inhabitants in 1900.",
        [
            [
                "The town had 1000 inhabitants in 1900.",
                "The town had 1,000 inhabitants in 1900.",
                "The town had 1 000 inhabitants in 1900.",
            ]
        ],
    ),
    (
        "Acme",
        "The company changed its colour scheme in 2001.",
        [["The company changed its colour scheme in 2001.", "The company changed its color scheme in 2001."]],
    ),
    (
        "City museum",
        "The museum organised an exhibition on Antonín Dvořák in 2004.",
        [
            [
                "The museum organised an exhibition on Antonín Dvořák in 2004.",
                "The museum organized an exhibition on Antonin Dvorak in 2004.",
            ]
        ],
    ),
]
LENGTHS = (0, 4, 8)
"""Filler sentences around the page's own sentences: a short page, and longer ones."""


def _page_text(core: str, filler: int) -> str:
    return " ".join([*FILLER[: filler // 2], core, *FILLER[filler // 2 : filler]])


def _path(page: int, filler: int) -> str:
    return f"/page-{page}-{filler}"


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackSite]:
    routes = {}
    for n, (title, core, _) in enumerate(PAGES):
        for filler in LENGTHS:
            body = (
                f"<html><head><title>{html.escape(title)}</title></head>"
                f"<body><p>{html.escape(_page_text(core, filler))}</p></body></html>"
            )
            routes[_path(n, filler)] = Route(body=body)
    with LoopbackSite(routes) as served:
        yield served


@pytest.fixture(scope="module")
def verifier() -> Iterator[Verifier]:
    with Verifier(allow_private_hosts=True) as v:  # the embedded judge and embedder
        yield v


# Thresholds of 0 so that the grounding check shows every verdict the judge gave: a fact is cited
# exactly when the claim is supported by it, anti-cited exactly when it is contradicted.
SHOW_ALL = {
    "citationThreshold": 0.0,
    "antiCitationThreshold": 0.0,
    "enableAntiCitations": True,
    "enableClaimLevelScore": True,
}


@pytest.mark.slow
def test_the_grounding_check_and_verify_take_one_decision_on_every_page_length(
    site: LoopbackSite, verifier: Verifier
) -> None:
    for n, (title, core, groups) in enumerate(PAGES):
        for filler in LENGTHS:
            url = site.url(_path(n, filler))
            fact = {"factText": _page_text(core, filler), "attributes": {"title": title}}
            for claim in (c for group in groups for c in group):
                report = verifier.verify(claim, [url])
                (verdict,) = report.citations
                grounded = check_grounding(claim, [fact], SHOW_ALL, verifier=verifier)
                (scored,) = grounded.claims
                where = (claim, title, filler, report.overall, verdict.confidence, grounded.to_vertex())
                assert bool(scored.citation_indices) == (report.overall == Label.supported), where
                assert bool(scored.anti_citation_indices) == (report.overall == Label.contradicted), where
                if report.overall == Label.supported:
                    assert scored.score == pytest.approx(verdict.confidence, abs=1e-6), where


@pytest.mark.slow
def test_spelling_variants_of_a_claim_get_the_label_of_its_own_spelling(site: LoopbackSite, verifier: Verifier) -> None:
    for n, (_title, _core, groups) in enumerate(PAGES):
        for filler in LENGTHS:
            url = site.url(_path(n, filler))
            for group in (g for g in groups if len(g) > 1):
                labels = {claim: verifier.verify(claim, [url]).overall for claim in group}
                assert len(set(labels.values())) == 1, (filler, labels)
                assert labels[group[0]] == Label.supported, (filler, labels)


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("The tower is 300 meters tall.", "The tower is 300 metres tall."),
        ("The company changed its color scheme.", "The company changed its colour scheme."),
        ("The museum organized a show on Dvorak.", "The museum organised a show on Dvořák."),
        ("The town had 1000 inhabitants.", "The town had 1 000 inhabitants."),
        ("The town had 1,000 inhabitants.", "The town had 1000 inhabitants."),
        ("The town had 1\u202f000 inhabitants.", "The town had 1,000 inhabitants."),
    ],
)
def test_the_lexical_checks_read_spelling_variants_as_the_same_words_and_values(claim: str, evidence: str) -> None:
    assert checks.overlap(claim, evidence) == 1.0
    assert checks.bigram_overlap(claim, evidence) == 1.0
    assert checks.missing_numbers(claim, evidence) == []
    assert checks.missing_entities(claim, evidence) == []


def test_grouped_digits_are_one_value_but_neighbouring_numbers_stay_apart() -> None:
    assert [q.value for q in checks.quantities("16 000 vehicles cross it")] == [16000.0]
    assert [q.value for q in checks.quantities("1,234,567 people")] == [1234567.0]
    # A year beside a count, a list of numbers, a decimal: not one grouped number.
    assert [q.value for q in checks.quantities("In 1990 200 people came")] == [1990.0, 200.0]
    assert [q.value for q in checks.quantities("scores of 1, 2 and 3 goals")][-1] == 3.0
    assert [q.value for q in checks.quantities("a ratio of 1.500 to one")] == [1.5]
