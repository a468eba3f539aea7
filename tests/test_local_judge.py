"""The embedded local judge: deterministic checks (no model) and the real model on the seed cases."""

from __future__ import annotations

import dataclasses
import html
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from guardrail import ClaimTask, Fact, JudgeRequest, Label, Settings, Verifier
from guardrail.judges import checks, judge_from_settings
from guardrail.judges.decision import NOTHING_RELATED, conflict_kind, could_back_part
from guardrail.judges.local import (
    Candidate,
    LocalJudge,
    LocalJudgeConfig,
    Scored,
    build_candidates,
    could_decide,
    decide,
    part_candidates,
    plan_rounds,
)
from tests.fakes import HashEmbedder
from tests.fixtures.pages import BOILING, TITANIC, UNRELATED

ROOT = Path(__file__).resolve().parents[1]


def article_text(page: str) -> str:
    """The article paragraphs of a fixture page, one per paragraph (what a fetcher would extract)."""
    body = page.split("<article>", 1)[1].split("</article>", 1)[0]
    paragraphs = [html.unescape(re.sub(r"<[^>]+>", "", p)).strip() for p in re.findall(r"<p>(.*?)</p>", body, re.S)]
    return "\n\n".join(p for p in paragraphs if p)


BOILING_TEXT = article_text(BOILING)
TITANIC_TEXT = article_text(TITANIC)
UNRELATED_TEXT = article_text(UNRELATED)
SEA_LEVEL = (
    "At standard atmospheric pressure, which is the pressure at sea level, pure water boils "
    "at 100 degrees Celsius (212 degrees Fahrenheit)."
)


# -- deterministic checks (no model) ---------------------------------------------


def test_sentences_are_exact_substrings_and_respect_abbreviations() -> None:
    text = "Dr. Smith arrived in the U.S. in 1990. He left.\nA new line starts here! Does it? Yes, 3.5 m."
    spans = checks.sentence_spans(text)
    sentences = [text[s:e] for s, e in spans]
    assert sentences == [
        "Dr. Smith arrived in the U.S. in 1990.",
        "He left.",
        "A new line starts here!",
        "Does it?",
        "Yes, 3.5 m.",
    ]
    for s, e in spans:
        assert text[s:e] in text


def test_quantities_units_scales_and_years() -> None:
    found = checks.quantities("It grossed $1.84 billion in 1997 and water boils at 100 degrees Celsius; 12% rose.")
    by_unit = {q.unit: q.value for q in found}
    assert by_unit["usd"] == pytest.approx(1.84e9)
    assert by_unit["year"] == 1997
    assert by_unit["degree"] == 100
    assert by_unit["percent"] == 12


def test_number_absent_from_evidence_is_missing() -> None:
    missing = checks.missing_numbers("The bridge opened in 1932.", "The bridge opened to traffic in March.")
    assert [q.value for q in missing] == [1932]
    assert checks.missing_numbers("It costs 1,600 dollars.", "The price was 1600 dollars.") == []
    assert checks.missing_numbers("About one hundred people came.", "Some 100 people came.") == []


def test_same_unit_other_value_is_a_conflict() -> None:
    hit = checks.conflicting_quantity("Water boils at 50 degrees Celsius at sea level.", SEA_LEVEL)
    assert hit is not None
    assert (hit[0].value, hit[1].value) == (50, 100)
    assert checks.conflicting_quantity("Water boils at 100 degrees Celsius at sea level.", SEA_LEVEL) is None
    # A number of another kind is not a conflict, only missing.
    assert checks.conflicting_quantity("The city has 50 parks.", SEA_LEVEL) is None


def test_negation_flip() -> None:
    assert checks.negation_flip("The drug was not approved in 2010.", "The drug was approved in 2010.")
    assert checks.negation_flip("Cruz never modelled for L'Oréal.", "Cruz has modelled for L'Oréal.")
    assert not checks.negation_flip("The drug was approved.", "Regulators approved the drug.")
    assert not checks.negation_flip("It isn't green.", "It is not green.")


def test_a_sentence_adverb_opening_the_claim_is_not_a_name() -> None:
    assert checks.entities("Indeed, the Birch River is long.") == ["Birch River"]
    assert checks.entities("Notably, Brad Pitt starred.") == ["Brad Pitt"]
    assert checks.entities("Put simply, the Elm River is long.") == ["Elm River"]
    assert checks.entities("Paris, the capital, is big.") == ["Paris"]  # a name opening the sentence stays
    assert checks.missing_entities("Indeed, the Birch River is 217 km long.", "The Birch River is 217 km long.") == []


def test_missing_entities() -> None:
    assert checks.entities("It starred Brad Pitt and Kate Winslet.") == ["Brad Pitt", "Kate Winslet"]
    assert checks.missing_entities("It starred Brad Pitt and Kate Winslet.", TITANIC_TEXT) == ["Brad Pitt"]
    assert checks.missing_entities("Titanic was directed by James Cameron.", TITANIC_TEXT) == []
    # A surname alone is a mention of the person.
    assert checks.missing_entities("Thomas Arnold edits the paper.", "Arnold joined in 1991.") == []


def _scored(claim: str, passage: str, probs: dict[str, tuple[float, float, float]]) -> Scored:
    """A request scored with given probabilities per candidate text (the rest: neutral)."""
    cands = build_candidates(JudgeRequest(claim=claim, passages=[passage]), LocalJudgeConfig())
    for c in cands:
        c.probs = np.asarray(probs.get(c.text, (0.05, 0.9, 0.05)), dtype=np.float32)
    return Scored(claim=claim, passages=[passage], candidates=cands)


def test_candidates_quote_exact_substrings() -> None:
    request = JudgeRequest(claim="Titanic was directed by James Cameron.", passages=[TITANIC_TEXT, BOILING_TEXT])
    cands = build_candidates(request, LocalJudgeConfig(score_passages=True))
    kinds = {c.kind for c in cands}
    assert {"sentence", "window", "passage"} <= kinds
    for c in cands:
        if c.quote is not None:
            assert c.quote in request.passages[c.passage]


def test_decide_supported_quotes_the_sentence() -> None:
    claim = "Titanic was directed by James Cameron."
    first = TITANIC_TEXT.split("\n\n")[0]
    verdict = decide(_scored(claim, TITANIC_TEXT, {first: (0.95, 0.04, 0.01)}), LocalJudgeConfig())
    assert verdict.label == "supported"
    assert verdict.evidence_quote == first


def test_decide_vetoes_support_when_a_number_is_missing() -> None:
    claim = "Titanic was directed by James Cameron in 2003."
    first = TITANIC_TEXT.split("\n\n")[0]
    verdict = decide(_scored(claim, TITANIC_TEXT, {first: (0.95, 0.04, 0.01)}), LocalJudgeConfig(year_conflict=False))
    assert verdict.label == "not_found"
    # The page's one year for the film is another year: a contradiction only where the model agrees.
    assert decide(_scored(claim, TITANIC_TEXT, {first: (0.95, 0.04, 0.01)}), LocalJudgeConfig()).label == "not_found"
    assert decide(_scored(claim, TITANIC_TEXT, {first: (0.05, 0.25, 0.7)}), LocalJudgeConfig()).label == "contradicted"


def test_decide_vetoes_support_when_a_name_is_missing() -> None:
    claim = "It starred Brad Pitt and Kate Winslet."
    third = TITANIC_TEXT.split("\n\n")[2]
    config = LocalJudgeConfig(entity_substitution=False, entity_min_words=0)
    verdict = decide(_scored(claim, TITANIC_TEXT, {third: (0.9, 0.05, 0.05)}), config)
    assert verdict.label == "not_found"


def test_decide_number_conflict_is_contradicted_only_when_the_model_agrees() -> None:
    claim = "Water boils at 50 degrees Celsius at sea level."
    verdict = decide(_scored(claim, BOILING_TEXT, {SEA_LEVEL: (0.05, 0.35, 0.6)}), LocalJudgeConfig())
    assert verdict.label == "contradicted"
    assert verdict.evidence_quote == SEA_LEVEL
    # Precision first: the same sentence read as neutral by the model is no contradiction.
    assert decide(_scored(claim, BOILING_TEXT, {}), LocalJudgeConfig()).label == "not_found"


def test_decide_ignores_contradiction_from_unrelated_sentence() -> None:
    claim = "Water boils at 100 degrees Celsius at sea level."
    first = UNRELATED_TEXT.split("\n\n")[0]
    verdict = decide(_scored(claim, UNRELATED_TEXT, {first: (0.01, 0.04, 0.95)}), LocalJudgeConfig())
    assert verdict.label == "not_found"


def test_another_year_for_the_same_event_is_a_conflict() -> None:
    hit = checks.conflicting_year("It was released in 1998.", "The film was released on December 19, 1997.")
    assert hit is not None and (hit[0].value, hit[1].value) == (1998, 1997)
    assert checks.conflicting_year("It was released in 1997.", "The film was released on December 19, 1997.") is None
    # A bound or a decade is not a date; several years are usually about several events.
    assert checks.conflicting_year("The reef may perish by 2030.", "Coral cover dropped in 2018.") is None
    assert checks.conflicting_year("It peaked in the 1990s.", "It peaked in 1995.") is None
    assert checks.conflicting_year("It opened in 1990.", "It was planned in 1985 and opened in 1991.") is None


def test_another_name_in_the_claims_place_is_a_substitution() -> None:
    third = TITANIC_TEXT.split("\n\n")[2]
    assert checks.substituted_entity("It starred Brad Pitt and Kate Winslet.", third) == (
        "Brad Pitt",
        "Leonardo DiCaprio",
    )
    assert checks.substituted_entity("It starred Leonardo DiCaprio and Kate Winslet.", third) is None
    # The claim's opening subject is often only a pronoun in a lone evidence sentence.
    assert (
        checks.substituted_entity(
            "Christa McAuliffe taught social studies at Concord High School.",
            "She took a teaching position as a social studies teacher at Concord High School in New Hampshire.",
        )
        is None
    )


def test_rank_sentences_weighs_rare_words() -> None:
    sentences = ["Titanic is a film about Titanic.", "It was directed by James Cameron.", "Titanic sank in 1912."]
    scores = checks.rank_sentences("Titanic was directed by James Cameron.", sentences)
    assert scores.index(max(scores)) == 1
    assert all(0.0 <= x <= 1.0 for x in scores)


def test_candidates_stay_within_the_budget_and_are_scored_once() -> None:
    config = LocalJudgeConfig(max_sentences=2, window_seeds=1, window_sizes=(2,), combine_top=(2,))
    claim = "Water boils at 100 degrees Celsius at sea level."
    cands = build_candidates(JudgeRequest(claim=claim, passages=[BOILING_TEXT, SEA_LEVEL]), config)
    assert sum(c.kind == "sentence" for c in cands) == 2
    assert len({c.text for c in cands}) == len(cands)  # the lone sentence passage is not scored twice
    assert sum(c.kind == "window" for c in cands) <= 2
    assert all(c.kind != "passage" for c in cands)


def test_decide_entity_substitution_is_contradicted_when_the_model_agrees() -> None:
    claim = "It starred Brad Pitt and Kate Winslet."
    third = TITANIC_TEXT.split("\n\n")[2]
    verdict = decide(_scored(claim, TITANIC_TEXT, {third: (0.1, 0.2, 0.7)}), LocalJudgeConfig())
    assert verdict.label == "contradicted"
    assert verdict.evidence_quote == third
    # The model reading support is not overruled into a contradiction, and the name check vetoes the support.
    reads_support = decide(_scored(claim, TITANIC_TEXT, {third: (0.9, 0.05, 0.05)}), LocalJudgeConfig())
    assert reads_support.label == "not_found"


def test_decide_year_conflict_is_contradicted() -> None:
    fourth = TITANIC_TEXT.split("\n\n")[3]
    verdict = decide(_scored("It was released in 1998.", TITANIC_TEXT, {fourth: (0.1, 0.2, 0.7)}), LocalJudgeConfig())
    assert verdict.label == "contradicted"
    assert verdict.evidence_quote == fourth
    unsure = decide(_scored("It was released in 1998.", TITANIC_TEXT, {fourth: (0.7, 0.1, 0.2)}), LocalJudgeConfig())
    assert unsure.label == "not_found"
    same = decide(_scored("It was released in 1997.", TITANIC_TEXT, {fourth: (0.9, 0.05, 0.05)}), LocalJudgeConfig())
    assert same.label == "supported"


def test_a_sentence_contradicting_alone_but_supporting_in_context_does_not_contradict() -> None:
    claim = "Titanic was directed by James Cameron."
    passage = "Titanic is a 1997 film. It was directed by James Cameron. It was a hit."
    window = "Titanic is a 1997 film. It was directed by James Cameron."
    alone = "It was directed by James Cameron."
    probs = {alone: (0.01, 0.0, 0.99), window: (0.55, 0.35, 0.1)}
    verdict = decide(_scored(claim, passage, probs), LocalJudgeConfig())
    assert verdict.label == "supported" and verdict.evidence_quote == window
    off = decide(_scored(claim, passage, probs), LocalJudgeConfig(context_override=False, model_contradicts=True))
    assert off.label == "contradicted"


def test_the_model_alone_does_not_make_a_contradiction() -> None:
    claim = "Titanic was directed by James Cameron."
    passage = "Titanic was directed by the assistant of James Cameron in 1997."
    probs = {passage: (0.005, 0.005, 0.99)}  # sure, and no other value, year, name, negation or antonym
    assert decide(_scored(claim, passage, probs), LocalJudgeConfig()).label == "not_found"
    assert decide(_scored(claim, passage, probs), LocalJudgeConfig(model_contradicts=True)).label == "contradicted"


class _TableJudge(LocalJudge):
    """The local judge with its model swapped for a table of probabilities (the rest: neutral),
    counting what it is asked to score."""

    def __init__(self, table: dict[str, tuple[float, float, float]], config: LocalJudgeConfig) -> None:
        super().__init__(config=config)
        self.table = table
        self.asked: list[str] = []
        self.pairs: list[tuple[str, str]] = []

    def predict(self, premises, hypotheses):  # type: ignore[no-untyped-def]
        self.asked.extend(premises)
        self.pairs.extend(zip(premises, hypotheses, strict=True))
        return np.asarray([self.table.get(p, (0.05, 0.9, 0.05)) for p in premises], dtype=np.float32)


def test_early_exit_skips_windows_when_a_sentence_settles_the_claim() -> None:
    claim = "Titanic was directed by James Cameron."
    first = TITANIC_TEXT.split("\n\n")[0]
    judge = _TableJudge({first: (0.97, 0.02, 0.01)}, LocalJudgeConfig(early_exit=0.9))
    verdict = judge.judge_sync([JudgeRequest(claim=claim, passages=[TITANIC_TEXT])])[0]
    assert verdict.label == "supported" and verdict.evidence_quote == first
    assert judge.asked and all(t in TITANIC_TEXT.split("\n\n") or t in TITANIC_TEXT for t in judge.asked)
    kinds_scored = len(judge.asked)
    full = _TableJudge({first: (0.97, 0.02, 0.01)}, LocalJudgeConfig(early_exit=1.01))
    assert full.judge_sync([JudgeRequest(claim=claim, passages=[TITANIC_TEXT])])[0].label == "supported"
    assert len(full.asked) > kinds_scored  # without the exit, windows and joins are scored too
    assert len(set(full.asked)) == len(full.asked)  # and no text twice


def test_rounds_put_the_best_ranked_sentence_and_its_windows_first() -> None:
    claim = "Titanic was directed by James Cameron."
    config = LocalJudgeConfig(first_round=1)
    plan = build_candidates(JudgeRequest(claim=claim, passages=[TITANIC_TEXT]), config)
    rounds = plan_rounds(plan, config)
    assert [len(r) for r in rounds] and sum(len(r) for r in rounds) == len(plan)
    assert [c.kind for c in rounds[0]] == ["sentence"] and rounds[0][0].rank == 0
    assert "James Cameron" in rounds[0][0].text
    assert rounds[1] and all(c.kind == "window" and rounds[0][0].text in c.text for c in rounds[1])
    assert all(c.kind == "sentence" for c in rounds[2])
    assert all(c.kind != "sentence" for c in rounds[3])
    assert plan_rounds(plan, LocalJudgeConfig(early_exit=1.01)) == [plan]


def test_a_claim_its_best_sentence_settles_costs_one_pair() -> None:
    claim = "Titanic was directed by James Cameron."
    first = TITANIC_TEXT.split("\n\n")[0]
    judge = _TableJudge({first: (0.7, 0.2, 0.1)}, LocalJudgeConfig(early_exit=0.5, first_round=1))
    verdict = judge.judge_sync([JudgeRequest(claim=claim, passages=[TITANIC_TEXT])])[0]
    assert verdict.label == "supported" and verdict.evidence_quote == first
    assert judge.asked == [first]
    # Below the exit, the later rounds run and can still change the confidence (not the label here).
    unsure = _TableJudge({first: (0.6, 0.3, 0.1)}, LocalJudgeConfig(early_exit=0.7, first_round=1))
    assert unsure.judge_sync([JudgeRequest(claim=claim, passages=[TITANIC_TEXT])])[0].label == "supported"
    assert len(unsure.asked) > 1


def test_a_request_settles_only_at_its_own_higher_threshold() -> None:
    claim = "Titanic was directed by James Cameron."
    first = TITANIC_TEXT.split("\n\n")[0]
    config = LocalJudgeConfig(early_exit=0.5, first_round=1)
    plain = _TableJudge({first: (0.55, 0.35, 0.1)}, config)
    plain.judge_sync([JudgeRequest(claim=claim, passages=[TITANIC_TEXT])])
    assert plain.asked == [first]
    strict = _TableJudge({first: (0.55, 0.35, 0.1)}, config)
    strict.judge_sync([JudgeRequest(claim=claim, passages=[TITANIC_TEXT], settle_at=0.6)])
    assert len(strict.asked) > 1  # 0.55 is not enough for a caller that cites at 0.6


def test_a_request_sharing_no_word_with_the_claim_is_not_scored() -> None:
    judge = _TableJudge({}, LocalJudgeConfig())
    request = JudgeRequest(claim="Quantum chromodynamics binds quarks.", passages=[TITANIC_TEXT])
    verdict = judge.judge_sync([request])[0]
    assert verdict.label == "not_found" and judge.asked == []
    off = _TableJudge({}, LocalJudgeConfig(skip_unrelated=False))
    assert off.judge_sync([request])[0].label == "not_found" and off.asked


def test_only_candidates_that_could_decide_are_scored() -> None:
    claim = "Titanic was directed by James Cameron and released in 1997."
    request = JudgeRequest(claim=claim, passages=[TITANIC_TEXT])
    config = LocalJudgeConfig(early_exit=1.01)
    plan = build_candidates(request, config)
    blank = Scored(claim=claim, passages=[TITANIC_TEXT], candidates=[])
    deciding = {c.text for c in plan if could_decide(blank, c, config)}
    assert deciding and len(deciding) < len(plan)  # the page has sentences about other things
    table = {c.text: (0.6, 0.3, 0.1) for c in plan}  # the model reads everything as support
    gated = _TableJudge(table, config)
    verdict = gated.judge_sync([request])[0]
    full = _TableJudge(table, dataclasses.replace(config, skip_unrelated=False))
    assert verdict == full.judge_sync([request])[0]  # the same verdict...
    whole = {p for p, h in gated.pairs if h == claim and p in {c.text for c in plan}}
    assert whole == deciding and len(full.asked) > len(gated.asked)  # ...from fewer pairs


def test_a_page_that_never_names_the_claims_subject_is_not_scored() -> None:
    claim = "The Alder River flows into the Grey Sea near the town of Port Ash."
    filler = " Trout live in the upper reaches, and the lower valley is farmed by the villages along it." * 6
    other = RIVER_PAGE.format(name="Birch River", km=107, year=1801) + filler
    assert len(other.split()) >= LocalJudgeConfig().entity_min_words  # a page, not a chunk
    judge = _TableJudge({}, LocalJudgeConfig())
    assert judge.judge_sync([JudgeRequest(claim=claim, passages=[other])])[0].label == "not_found"
    assert judge.asked == []
    chunk = RIVER_PAGE.format(name="Birch River", km=107, year=1801)  # a short chunk may leave its subject unnamed
    judge.judge_sync([JudgeRequest(claim=claim, passages=[chunk])])
    assert judge.asked
    own = RIVER_PAGE.format(name="Alder River", km=107, year=1801) + filler
    judge.asked.clear()
    judge.judge_sync([JudgeRequest(claim=claim, passages=[own])])
    assert judge.asked


def test_a_contradiction_nothing_left_could_undo_stops_the_scoring() -> None:
    claim = "The first bridge over the Alder River was built in 1840."
    page = RIVER_PAGE.format(name="Alder River", km=130, year=1800)
    bridge = "The first bridge over the Alder River was built in 1800 by the local council of Port Ash."
    again = "Some say the first bridge over the Alder River was built in 1805 instead."
    page += " Trout live in the upper reaches. The lower valley is farmed by the villages along it. " + again
    table = {bridge: (0.05, 0.15, 0.8), again: (0.05, 0.15, 0.8)}
    gated = _TableJudge(table, LocalJudgeConfig())
    verdict = gated.judge_sync([JudgeRequest(claim=claim, passages=[page])])[0]
    assert verdict.label == "contradicted" and verdict.evidence_quote == bridge
    # The other year is left unscored: it could contradict too, but no sentence holds 1840, so
    # nothing left could support the claim and undo the contradiction.
    assert gated.asked == [bridge]
    full = _TableJudge(table, LocalJudgeConfig(skip_unrelated=False, early_exit=1.01))
    assert full.judge_sync([JudgeRequest(claim=claim, passages=[page])])[0] == verdict
    assert len(full.asked) > 3


def test_a_sentence_stating_a_conflict_is_scored_whatever_its_overlap() -> None:
    claim = "Water boils at 100 degrees Celsius at sea level."
    conflicting = Candidate("sentence", "Water boils at 50 degrees Celsius at sea level.", 0, [(0, 47)], None)
    strict = LocalJudgeConfig(support_min_overlap=0.9, contradict_min_overlap=0.9)
    assert checks.overlap(claim, conflicting.text) < 0.9
    scored = Scored(claim=claim, passages=["Water boils at 50 degrees Celsius at sea level."], candidates=[])
    assert could_decide(scored, conflicting, strict)  # another value for the same quantity
    other = Candidate("sentence", "Water boils faster in a kettle.", 0, [(0, 31)], None)
    assert not could_decide(scored, other, strict)
    assert could_decide(scored, other, dataclasses.replace(strict, skip_unrelated=False))


def test_a_page_sharing_too_few_words_gets_the_nothing_related_confidence() -> None:
    claim = "Water boils at 100 degrees Celsius at sea level."
    passage = "Titanic is a 1997 film directed by James Cameron. It starred Kate Winslet."
    scored = _scored(claim, passage, {})
    assert scored.candidates  # candidates were built (and, in a recording, scored)...
    flat = ((NOTHING_RELATED, 0.0, 0.0), ("not_found", 0.0, 3.0))  # ...yet none could decide
    verdict = decide(scored, dataclasses.replace(LocalJudgeConfig(), calibration=flat))
    assert verdict.label == "not_found" and verdict.confidence == 0.5
    related = _scored(claim, "Water boils at 100 degrees Celsius at sea level, they say.", {})
    assert decide(related, dataclasses.replace(LocalJudgeConfig(), calibration=flat)).confidence > 0.9


def test_a_part_is_not_scored_against_evidence_sharing_too_few_of_its_words() -> None:
    request = JudgeRequest(claim="Titanic starred Kate Winslet.", passages=[TITANIC_TEXT])
    config = LocalJudgeConfig()
    plan = build_candidates(request, config)
    scored = Scored(claim=request.claim, passages=[TITANIC_TEXT], candidates=[])
    pool = part_candidates("starred Kate Winslet", plan, 50)
    picked = [c for c in pool if could_back_part(scored, "starred Kate Winslet", c, config)]
    assert picked and all(checks.overlap("starred Kate Winslet", c.text) >= 0.3 for c in picked)
    assert len(pool) > len(picked)


def test_unavailable_without_weights(tmp_path: Path) -> None:
    assert not LocalJudge.available(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    assert not LocalJudge.available(tmp_path)


# -- the real model ------------------------------------------------------------


@pytest.fixture(scope="module")
def judge() -> LocalJudge:
    return LocalJudge()


class _NoFetch:
    """Fact evidence only: the verifier must never fetch in these tests."""

    name = "none"

    async def fetch_all(self, urls: object) -> dict:
        raise AssertionError("nothing should be fetched")


def _verify(judge: LocalJudge, claim: str, text: str) -> tuple[Label, str | None]:
    verifier = Verifier(judge=judge, embedder=HashEmbedder(), fetcher=_NoFetch(), settings=Settings())
    report = verifier.verify_many([ClaimTask(claim, [Fact(text, source="fixture")])])[0]
    return report.overall, report.citations[0].evidence_quote


def test_a_name_sharing_only_its_generic_words_is_another_thing() -> None:
    assert not checks.names_the_same("Alder River", "The Birch River is 107 kilometres long.")
    assert checks.names_the_same("Alder River", "The Alder is a river of the north.")
    assert checks.names_the_same("James Cameron", "The film was directed by Cameron.")
    assert not checks.names_the_same("University of Oxford", "The University of Cambridge was founded in 1209.")
    assert checks.names_the_same("Grand Canyon", "The Grand Canyon is deep.")  # generic words only: all of them
    assert not checks.names_the_same("Grand Canyon", "The canyon is deep.")


RIVER_PAGE = (
    "The {name} is a river in the northern highlands, known for its clear water and steep banks. "
    "The {name} is {km} kilometres long and flows into the Grey Sea near the town of Port Ash. "
    "The first bridge over the {name} was built in {year} by the local council of Port Ash."
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "claim", ["The Alder River is 100 kilometres long.", "The first bridge over the Alder River was built in 1840."]
)
def test_a_page_about_another_river_contradicts_nothing(judge: LocalJudge, claim: str) -> None:
    other = RIVER_PAGE.format(name="Birch River", km=107, year=1801)
    assert _verify(judge, claim, other)[0] == Label.not_found
    own = RIVER_PAGE.format(name="Alder River", km=130, year=1800)
    assert _verify(judge, claim, own)[0] == Label.contradicted  # the same page about the claim's river does


@pytest.mark.slow
def test_boiling_at_50_is_contradicted_by_the_100_sentence(judge: LocalJudge) -> None:
    label, quote = _verify(judge, "Water boils at 50 degrees Celsius at sea level.", BOILING_TEXT)
    assert label == Label.contradicted
    assert quote == SEA_LEVEL


@pytest.mark.slow
def test_boiling_at_100_is_supported(judge: LocalJudge) -> None:
    label, quote = _verify(judge, "Water boils at 100 degrees Celsius at sea level.", BOILING_TEXT)
    assert label == Label.supported
    assert quote is not None and "100 degrees Celsius" in quote


@pytest.mark.slow
def test_titanic_directed_by_cameron_is_supported(judge: LocalJudge) -> None:
    label, quote = _verify(judge, "Titanic was directed by James Cameron.", TITANIC_TEXT)
    assert label == Label.supported
    assert quote is not None and "James Cameron" in quote and quote in TITANIC_TEXT


@pytest.mark.slow
def test_brad_pitt_is_not_supported(judge: LocalJudge) -> None:
    label, _ = _verify(judge, "It starred Brad Pitt and Kate Winslet.", TITANIC_TEXT)
    assert label != Label.supported


@pytest.mark.slow
def test_brad_pitt_is_the_missing_part_of_the_cast_claim(judge: LocalJudge) -> None:
    verifier = Verifier(judge=judge, embedder=HashEmbedder(), fetcher=_NoFetch(), settings=Settings())
    claim = "It starred Brad Pitt and Kate Winslet."
    [report] = verifier.verify_many([ClaimTask(claim, [Fact(TITANIC_TEXT, source="fixture")])])
    [citation] = report.citations
    assert (report.overall, citation.reason) == (Label.not_found, "partially_supported")
    assert citation.supported_parts == ["It starred Kate Winslet"]
    assert citation.missing_parts == ["It starred Brad Pitt"]
    assert report.missing_parts == ["It starred Brad Pitt"]


@pytest.mark.slow
def test_released_in_1998_is_contradicted_by_the_release_date(judge: LocalJudge) -> None:
    label, quote = _verify(judge, "It was released in 1998.", TITANIC_TEXT)
    assert label == Label.contradicted
    assert quote is not None and "December 19, 1997" in quote


@pytest.mark.slow
def test_released_in_1997_is_supported(judge: LocalJudge) -> None:
    label, quote = _verify(judge, "It was released in 1997.", TITANIC_TEXT)
    assert label == Label.supported
    assert quote is not None and "1997" in quote


@pytest.mark.slow
@pytest.mark.parametrize(
    "claim", ["Titanic was directed by James Cameron.", "Water boils at 50 degrees Celsius at sea level."]
)
def test_unrelated_passage_is_not_found(judge: LocalJudge, claim: str) -> None:
    label, _ = _verify(judge, claim, UNRELATED_TEXT)
    assert label == Label.not_found


@pytest.mark.slow
async def test_one_call_judges_many_requests_in_order(judge: LocalJudge) -> None:
    requests = [
        JudgeRequest(claim="Titanic was directed by James Cameron.", passages=[TITANIC_TEXT]),
        JudgeRequest(claim="Titanic was directed by James Cameron.", passages=[UNRELATED_TEXT]),
        JudgeRequest(claim="Water boils at 50 degrees Celsius at sea level.", passages=[BOILING_TEXT]),
    ]
    verdicts = await judge.judge(requests)
    assert [v.label for v in verdicts] == ["supported", "not_found", "contradicted"]


def test_default_judge_is_local() -> None:
    judge = judge_from_settings(Settings())
    assert isinstance(judge, LocalJudge)
    assert judge.name == "local"


@pytest.mark.slow
def test_loads_and_judges_with_the_network_closed() -> None:
    script = textwrap.dedent(
        """
        import json, socket

        def refuse(*args, **kwargs):
            raise OSError("network is closed in this test")

        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        from guardrail.judges.local import LocalJudge
        from guardrail.core.schema import JudgeRequest
        passage = "Titanic is a 1997 American film directed, written and produced by James Cameron."
        verdicts = LocalJudge().judge_sync(
            [JudgeRequest(claim="Titanic was directed by James Cameron.", passages=[passage])]
        )
        print(json.dumps(verdicts[0].model_dump()))
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HTTP", "HF_", "TRANSFORMERS"))}
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    verdict = json.loads(proc.stdout.strip().splitlines()[-1])
    assert verdict["label"] == "supported"


def test_model_ships_in_the_package() -> None:
    """The weights are package data: listed in pyproject and within the 50 MB budget."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"judges/model/*"' in pyproject
    model_dir = ROOT / "guardrail" / "judges" / "model"
    assert LocalJudge.available(model_dir), "the judge's weights must ship in guardrail/judges/model"
    size = sum(f.stat().st_size for f in model_dir.iterdir() if f.is_file())
    assert size <= 50 * 1024 * 1024


def test_memoised_word_helpers_hand_out_values_no_caller_can_change() -> None:
    # The checks memoise their text helpers: a caller editing a returned set or list would
    # change what every later check of the same text reads.
    words = checks.content_words("The Alder River flows north.")
    assert isinstance(words, frozenset) and words == checks.content_words("The Alder River flows north.")
    names = checks.entities("Brad Pitt met Kate Winslet.")
    names.append("Someone Else")
    assert checks.entities("Brad Pitt met Kate Winslet.") == ["Brad Pitt", "Kate Winslet"]
    found = checks.quantities("It is 254 km long.")
    found.clear()
    assert [q.value for q in checks.quantities("It is 254 km long.")] == [254.0]


# -- one difference only (precision first) ---------------------------------------------------------

SPONGEBOB = "SpongeBob SquarePants is a French animated television series created by Stephen Hillenburg."
THATCHER_SECOND = "In 1975 Thatcher became the second woman to lead a major political party in the United Kingdom."


def test_a_claim_that_denies_something_conflicts_only_with_its_own_negation() -> None:
    config = LocalJudgeConfig()
    # "not American" is what "French" says: another name does not contradict a denial...
    assert conflict_kind("SpongeBob SquarePants is not an American series.", SPONGEBOB, config) is None
    assert conflict_kind("SpongeBob SquarePants is an American series.", SPONGEBOB, config) == "name"
    # ...nor does another value or year.
    assert checks.conflicting_quantity("The bridge is not 300 metres long.", "The bridge is 250 metres long.")
    assert conflict_kind("The bridge is not 300 metres long.", "The bridge is 250 metres long.", config) is None
    assert conflict_kind("The bridge is 300 metres long.", "The bridge is 250 metres long.", config) == "number"
    # Two denials of two values ("not 300" and "not 250") are compatible too: no flip to read.
    assert conflict_kind("The bridge is not 300 metres long.", "The bridge is not 250 metres long.", config) is None
    # Its own negation does.
    venus = "Venus has a runaway greenhouse effect that makes it the hottest planet."
    assert conflict_kind("Venus doesn't have a runaway greenhouse effect.", venus, config) == "negation"


def test_a_negation_flip_beside_another_rank_or_value_is_no_conflict() -> None:
    config = LocalJudgeConfig()
    claim = "Margaret Thatcher was not the first woman to lead a major political party in the United Kingdom."
    assert checks.other_rank(claim, THATCHER_SECOND)
    assert conflict_kind(claim, THATCHER_SECOND, config) is None  # "not the first" is what "the second" says
    first = "Thatcher was the first woman to lead a major political party in the United Kingdom."
    assert not checks.other_rank(claim, first)
    assert conflict_kind(claim, first, config) == "negation"
    # A denial against another value: compatible, not a contradiction.
    assert conflict_kind("The bridge was not 300 metres long.", "The bridge was 250 metres long.", config) is None
    # A claim that asserts: another value contradicts it, whatever negation the sentence also holds.
    claim, page = (
        "The author found that ice melts at 0 degrees Celsius.",
        (
            "The author also claimed that ice melts at 10 degrees Celsius, and that sea water freezes at the "
            "same temperature as fresh water, neither of which is accepted today."
        ),
    )
    assert checks.negation_flip(claim, page) and conflict_kind(claim, page, config) == "number"


def test_a_value_the_evidence_rounds_is_not_another_value() -> None:
    rounded = "By 2011 the concentration of CO2 had increased by about 40% and methane by 150%."
    assert checks.conflicting_quantity("CO2 has increased 43 percent above the pre-industrial level.", rounded) is None
    hit = checks.conflicting_quantity("CO2 has increased 80 percent above the pre-industrial level.", rounded)
    assert hit is not None and (hit[0].value, hit[1].value) == (80, 40)  # beyond the tolerance: another value
    # Unhedged, a close value is still another value.
    exact = "By 2011 the concentration of CO2 had increased by 40%."
    assert checks.conflicting_quantity("CO2 has increased 43 percent.", exact) is not None


@pytest.mark.slow
def test_a_denial_is_not_contradicted_by_the_alternative_it_implies(judge: LocalJudge) -> None:
    assert _verify(judge, "SpongeBob SquarePants is not an American series.", SPONGEBOB)[0] != Label.contradicted
    claim = "Margaret Thatcher was not the first woman to lead a major political party in the United Kingdom."
    assert _verify(judge, claim, THATCHER_SECOND)[0] != Label.contradicted


def test_memoised_helpers_keep_few_pages_and_many_sentences() -> None:
    pages = [f"Page {i}: " + "the river runs north past the old mill and the town. " * 100 for i in range(300)]
    sentences = [f"Sentence {i} about the river." for i in range(300)]
    for text in sentences + pages:
        checks.content_words(text)
    assert checks.content_words.long.cache_info().currsize == checks._PAGE_CACHE  # pages: bounded apart
    assert checks.content_words.short.cache_info().currsize >= 300  # sentences kept despite the pages
