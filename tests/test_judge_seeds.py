"""The seed cases of the embedded judge, read as a reader would label them, with the real model
and the shipped decision (issue 21). Each names the mechanism it rests on; the tests that turn the
mechanism off show it is what decides."""

from __future__ import annotations

import pytest

from guardrail import ClaimTask, Fact, Label, Settings, Verifier
from guardrail.judges.local import LocalJudge, LocalJudgeConfig
from guardrail.testing import HashEmbedder

pytestmark = pytest.mark.slow

TITANIC_FACT = (
    "Titanic is a 1997 American epic romantic disaster movie. It was directed, written, and co-produced by "
    "James Cameron. The movie is about the 1912 sinking of the RMS Titanic. It stars Kate Winslet and Leonardo "
    "DiCaprio. The movie was released on December 19, 1997. It received positive critical reviews. The movie "
    "won 11 Academy Awards, and was nominated for fourteen total Academy Awards."
)
DIRECTED = "It was directed, written, and co-produced by James Cameron."
BOILING = (
    "At standard atmospheric pressure, which is the pressure at sea level, pure water boils at 100 degrees "
    "Celsius (212 degrees Fahrenheit). Water freezes at 0 degrees Celsius."
)


class _NoFetch:
    name = "none"

    async def fetch_all(self, urls: object) -> dict:
        raise AssertionError("nothing should be fetched")


def _verifier(config: LocalJudgeConfig | None = None, quantize: bool | None = None) -> Verifier:
    judge = LocalJudge(config=config, quantize=quantize)
    return Verifier(judge=judge, embedder=HashEmbedder(), fetcher=_NoFetch(), settings=Settings())  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return _verifier()


def _check(verifier: Verifier, claim: str, text: str, title: str | None = None) -> tuple[Label, str | None]:
    [report] = verifier.verify_many([ClaimTask(claim, [Fact(text, source="fixture", title=title)])])
    return report.overall, report.citations[0].evidence_quote


def test_a_pronoun_sentence_on_the_films_page_contradicts_another_director(verifier: Verifier) -> None:
    label, quote = _check(verifier, "Titanic was directed by Steven Spielberg.", DIRECTED, "Titanic (1997 film)")
    assert (label, quote) == (Label.contradicted, DIRECTED)


def test_a_pronoun_sentence_on_the_films_page_supports_its_director(verifier: Verifier) -> None:
    label, quote = _check(verifier, "Titanic was directed by James Cameron.", DIRECTED, "Titanic (1997 film)")
    assert (label, quote) == (Label.supported, DIRECTED)


@pytest.mark.xfail(strict=True, reason="known miss (issue 21 note): the model leans little on another page's topic")
def test_the_same_sentence_on_another_films_page_is_about_that_film(verifier: Verifier) -> None:
    # "It" is what the page is about: on the page of Avatar, the sentence says nothing of Titanic.
    assert _check(verifier, "Titanic was directed by James Cameron.", DIRECTED, "Avatar (2009 film)")[0] == (
        Label.not_found
    )


def test_directed_by_cameron_is_supported_by_the_vertex_fact(verifier: Verifier) -> None:
    label, quote = _check(verifier, "Titanic was directed by James Cameron.", TITANIC_FACT)
    assert label == Label.supported and quote is not None and "James Cameron" in quote


def test_boiling_at_50_is_contradicted_and_at_one_hundred_supported(verifier: Verifier) -> None:
    label, quote = _check(verifier, "Water boils at 50 degrees Celsius at sea level.", BOILING)
    assert label == Label.contradicted and quote is not None and "100 degrees Celsius" in quote
    label, quote = _check(verifier, "Water boils at one hundred degrees Celsius at sea level.", BOILING)
    assert label == Label.supported and quote is not None and "100 degrees Celsius" in quote


def test_awards_on_a_page_that_never_mentions_awards_are_not_found(verifier: Verifier) -> None:
    page = "Titanic is a 1997 American epic romantic disaster movie.\n\nIt was directed by James Cameron."
    assert _check(verifier, "Titanic won 11 Academy Awards.", page)[0] == Label.not_found


def test_a_direction_flipped_is_contradicted_not_supported(verifier: Verifier) -> None:
    label, quote = _check(
        verifier, "Exercise increases the risk of heart disease.", "Regular exercise reduces the risk of heart disease."
    )
    assert label == Label.contradicted and quote == "Regular exercise reduces the risk of heart disease."


def test_a_study_aim_is_not_its_finding(verifier: Verifier) -> None:
    aim = "This study aimed to determine whether vitamin D reduces fractures in older women."
    assert _check(verifier, "Vitamin D reduces fractures in older women.", aim)[0] == Label.not_found
    finding = "We found that vitamin D reduces fractures in older women."
    assert _check(verifier, "Vitamin D reduces fractures in older women.", finding)[0] == Label.supported


def test_another_director_is_contradicted_on_the_whole_page(verifier: Verifier) -> None:
    # A window holding the director's sentence reads as entailment to the model; the restated claim
    # ("Titanic was directed by James Cameron") rules that reading out as support.
    label, quote = _check(verifier, "Titanic was directed by Steven Spielberg.", TITANIC_FACT, "Titanic (1997 film)")
    assert (label, quote) == (Label.contradicted, DIRECTED)


def test_a_role_swap_is_contradicted(verifier: Verifier) -> None:
    assert _check(verifier, "Spain defeated Italy in the final.", "In the final, Italy defeated Spain 2-1.")[0] == (
        Label.contradicted
    )


def test_a_comparison_told_the_other_way_round_backs_nothing(verifier: Verifier) -> None:
    # The model reads the swapped comparison as entailment (0.89 with the page's topic); the
    # comparison swap (role_swap, a conflict that rules support out) is what stops it.
    abstract = (
        "We compared the safety of apixaban with warfarin in a cohort of 71,300 patients with atrial "
        "fibrillation. Apixaban was associated with significantly fewer major bleeding events than warfarin "
        "(HR 0.62, 95% CI 0.56-0.69). Rates of ischaemic stroke were similar between the two drugs."
    )
    claim = (
        "In patients with atrial fibrillation, warfarin was associated with fewer major bleeding events than apixaban."
    )
    assert _check(verifier, claim, abstract)[0] != Label.supported


PROTOCOL = (
    "Diarrhoeal disease remains a leading cause of death in children under five in low-income settings. "
    "This protocol describes a cluster-randomised controlled trial that aims to determine whether "
    "handwashing promotion combined with free soap distribution reduces the incidence of diarrhoea among "
    "children under five living in urban informal settlements. Eighty neighbourhood clusters will be "
    "randomised 1:1 to the intervention or to usual practice. The primary outcome is caregiver-reported "
    "diarrhoea prevalence over 12 months, measured by fortnightly household visits. Secondary outcomes "
    "include observed handwashing behaviour and child growth. Recruitment began in 2023."
)
PROTOCOL_TITLE = (
    "Handwashing promotion with free soap and childhood diarrhoea in urban informal settlements: protocol for a "
    "cluster-randomised trial"
)
HANDWASHING = "Handwashing promotion with free soap reduced diarrhoea among young children in urban slums."


def test_a_trial_protocols_aim_backs_no_finding(verifier: Verifier) -> None:
    # Nothing on the page reads as entailing the claim, but it says most of the claim's words (in its
    # aim): the classifier read that as support (0.69). Only what the page asserts counts (only_asked).
    assert _check(verifier, HANDWASHING, PROTOCOL, PROTOCOL_TITLE) == (
        Label.not_found,
        None,
    )


def test_a_trial_that_reports_its_finding_backs_it(verifier: Verifier) -> None:
    found = PROTOCOL.replace(
        "Recruitment began in 2023.",
        "Handwashing promotion with free soap reduced diarrhoea among young children in urban slums by 30%.",
    )
    assert _check(verifier, HANDWASHING, found, PROTOCOL_TITLE)[0] == Label.supported


NEST_BOXES = (
    "Providing artificial nest sites is a common conservation measure for cavity-nesting birds. We "
    "installed nest boxes on 30 randomly selected farms in an agricultural region, with 30 matched farms "
    "serving as controls, and monitored breeding pairs of Eurasian tree sparrows for four years. Although "
    "41% of boxes were occupied by the second year, breeding density of tree sparrows did not differ "
    "between farms with and without boxes (mean 3.1 vs 3.0 pairs per 10 ha; p = 0.84). Birds appeared to "
    "switch from natural cavities to boxes rather than new pairs settling. Nest boxes alone are unlikely "
    "to increase populations where food rather than nest sites limits breeding."
)
NEST_BOXES_TITLE = (
    "Do nest boxes increase breeding populations of Eurasian tree sparrows on farmland? A controlled field experiment"
)


def test_a_null_result_on_the_page_withholds_the_support_of_its_methods(verifier: Verifier) -> None:
    # A window of the methods ("We installed nest boxes ... and monitored breeding pairs") reads as
    # support (0.83) and the classifier said supported (0.69); the sentence reporting no difference
    # in breeding density, about the claim's subject, withholds it (_decision.denied_by).
    claim = "Installing nest boxes increased the breeding density of tree sparrows on farms."
    label, quote = _check(verifier, claim, NEST_BOXES, NEST_BOXES_TITLE)
    assert label == Label.not_found
    assert quote is not None and quote.startswith("Although 41% of boxes were occupied")


ASPIRIN_TRIAL = (
    "Aspirin has been thought to protect against dementia through its anti-inflammatory effects. In a "
    "randomised, double-blind trial, 12,110 community-dwelling adults aged 70 years or older received 100 mg "
    "aspirin daily or placebo. Over a median of 4.9 years, incident dementia occurred in 3.1% of the aspirin "
    "group and 3.3% of the placebo group. Low-dose aspirin had no significant effect on the risk of dementia "
    "(HR 0.96, 95% CI 0.80-1.15) or on cognitive decline."
)


def test_a_null_result_with_nothing_backing_the_claim_contradicts_it(verifier: Verifier) -> None:
    # The model reads the null result as neutral (the classifier said not_found, 0.61); a sentence
    # about the claim's subject that reports no effect where it claims one, on a page that backs it
    # nowhere, is what a reader calls a contradiction (_decision.decide, denied_by).
    claim = "Daily low-dose aspirin reduced the risk of dementia in healthy older adults."
    label, quote = _check(verifier, claim, ASPIRIN_TRIAL, "Aspirin and dementia in older adults: a randomised trial")
    assert label == Label.contradicted
    assert quote is not None and quote.startswith("Low-dose aspirin had no significant effect")


def test_a_null_result_on_another_outcome_leaves_the_finding_supported(verifier: Verifier) -> None:
    page = (
        "In people who had already had a heart attack, low-dose aspirin reduced the risk of a second heart "
        "attack by about a quarter (HR 0.75, 95% CI 0.66-0.85). It had no significant effect on the risk of "
        "dementia."
    )
    claim = "Low-dose aspirin reduced the risk of a second heart attack."
    assert _check(verifier, claim, page)[0] == Label.supported


def test_a_trial_result_with_its_statistics_supports_the_finding(verifier: Verifier) -> None:
    # "Results" and "CI" were read as names in the place of the claim's "COPD": the claim restated
    # with them read as entailed (0.94), so the result that backs the claim "contradicted" it (0.75).
    claim = "A twelve-week home exercise programme increased six-minute walk distance in people with COPD."
    result = (
        "Results: At 12 weeks, six-minute walk distance increased by 41 metres in the home exercise group "
        "versus 6 metres with usual care (difference 35 m, 95% CI 20 to 50; p<0.001)."
    )
    page = f"Methods: 180 adults with COPD were randomised to a 12-week home exercise programme or usual care. {result}"
    assert _check(verifier, claim, page, "Home exercise in COPD") == (Label.supported, result)


def test_brad_pitt_is_anti_cited_by_the_cast_list(verifier: Verifier) -> None:
    # The cast sentence read with the claim restated ("It starred Leonardo DiCaprio and Kate Winslet")
    # is what says it: without the restatement (name_restated) this reads not_found.
    assert _check(verifier, "It starred Brad Pitt and Kate Winslet.", TITANIC_FACT)[0] == Label.contradicted


def test_the_fast_paths_int8_graph_labels_the_seed_cases_as_float32_does() -> None:
    """The fast path reads int8 by default: on these cases its labels and quotes are float32's."""
    cases = [
        ("Titanic was directed by Steven Spielberg.", DIRECTED, "Titanic (1997 film)"),
        ("Titanic was directed by James Cameron.", DIRECTED, "Titanic (1997 film)"),
        ("Water boils at 50 degrees Celsius at sea level.", BOILING, None),
        ("Water boils at one hundred degrees Celsius at sea level.", BOILING, None),
        ("Titanic won 11 Academy Awards.", BOILING, None),
    ]
    readings = []
    for quantize in (None, False):
        verifier = _verifier(LocalJudgeConfig(rounds=1), quantize)
        readings.append([_check(verifier, *case) for case in cases])
    assert [label for label, _ in readings[0]] == [
        Label.contradicted,
        Label.supported,
        Label.contradicted,
        Label.supported,
        Label.not_found,
    ]
    assert readings[0] == readings[1]
