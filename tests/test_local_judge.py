"""The embedded local judge: deterministic checks (no model) and the real model on the seed cases."""

from __future__ import annotations

import html
import json
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from guardrail import ClaimTask, Fact, JudgeRequest, JudgeVerdict, Label, Settings, Verifier
from guardrail.core.extract import split_sentences
from guardrail.judges import _checks as checks
from guardrail.judges._candidates import build_candidates, restatements
from guardrail.judges._decision import DecisionModel, denied_by, load_decision, support_conflicts, withheld_support
from guardrail.judges._features import REQUEST_FEATURES, UNIT_FEATURES, units_of
from guardrail.judges.local import LocalJudge, LocalJudgeConfig
from guardrail.runtime import build_judge
from guardrail.testing import HashEmbedder
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


def test_the_judge_splits_sentences_as_the_core_does() -> None:
    text = "It was approx. 20 km long. In vol. 3 Ms. Smith wrote it.\nthe line ends a sentence"
    expected = ["It was approx. 20 km long.", "In vol. 3 Ms. Smith wrote it.", "the line ends a sentence"]
    assert [text[s:e] for s, e in checks.sentence_spans(text)] == expected
    assert split_sentences(text.replace("\n", "\n\n")) == expected  # the core: a blank line ends one
    assert split_sentences("It was approx. 20 km long.") == ["It was approx. 20 km long."]


def test_training_drops_the_judges_stop_words() -> None:
    from training import train

    assert train.STOPWORDS is checks.STOPWORDS  # one list: the words the judge skips are those training skips
    assert train._content("The river is about as long as we said") == {"river", "long", "said"}


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


# -- what is read: candidates, topics, rounds (no model) ----------------------------------------


def _stub_decision(con_threshold: float = 0.6, sup_threshold: float = 0.6) -> DecisionModel:
    """A hand-made decision: support grows with the best entailment, contradiction with the best
    contradiction read about the claim's subject; the fitted one is tested through the real model."""
    n = len(REQUEST_FEATURES)
    coef = np.zeros((3, n))
    coef[0, REQUEST_FEATURES.index("support_ent_best")] = 12.0
    coef[1, REQUEST_FEATURES.index("contra_con_about_subject")] = 12.0
    return DecisionModel(
        features=REQUEST_FEATURES,
        mean=np.zeros(n),
        scale=np.ones(n),
        coef=coef,
        intercept=np.asarray([-6.0, -6.0, 0.0]),
        contradict_threshold=con_threshold,
        support_threshold=sup_threshold,
    )


class _TableJudge(LocalJudge):
    """The local judge with its model swapped for a table of probabilities by the text the model
    reads (the rest: neutral) and the stub decision, counting each batch it is asked to score."""

    def __init__(self, table: dict[str, tuple[float, float, float]], config: LocalJudgeConfig | None = None) -> None:
        super().__init__(config=config or LocalJudgeConfig())
        self.table = table
        self.batches: list[list[str]] = []
        self._decision = _stub_decision()

    @property
    def asked(self) -> list[str]:
        return [text for batch in self.batches for text in batch]

    def predict(self, premises, hypotheses):  # type: ignore[no-untyped-def]
        self.batches.append(list(premises))
        return np.asarray([self.table.get(p, (0.05, 0.9, 0.05)) for p in premises], dtype=np.float32)


def test_each_sentence_is_read_with_its_page_title_as_topic() -> None:
    request = JudgeRequest(
        claim="Titanic was directed by Steven Spielberg.",
        passages=["It was directed, written, and co-produced by James Cameron. It received positive reviews."],
        title="Titanic (1997 film) - Wikipedia",
    )
    scored = build_candidates(request, LocalJudgeConfig())
    sentence = next(c for c in scored.candidates if c.kind == "sentence")
    assert sentence.model_text == "Titanic (1997 film): It was directed, written, and co-produced by James Cameron."
    assert sentence.quote == "It was directed, written, and co-produced by James Cameron."  # the page's words only
    plain = next(c for c in scored.candidates if c.kind == "plain")
    assert plain.model_text == plain.text == sentence.quote


def test_without_a_title_the_topic_is_the_nearest_heading_or_the_name_the_passage_opens_with() -> None:
    headed = "# The Alder River\n\nIt is 130 kilometres long and flows into the Grey Sea."
    units = build_candidates(
        JudgeRequest(claim="The Alder River is 130 km long.", passages=[headed]), LocalJudgeConfig()
    ).units
    assert units[-1].topic == "The Alder River"
    opened = "Titanic is a 1997 American epic film. It was directed by James Cameron."
    scored = build_candidates(
        JudgeRequest(claim="Titanic was directed by James Cameron.", passages=[opened]), LocalJudgeConfig()
    )
    assert [u.topic for u in scored.units] == ["Titanic", "Titanic"]
    assert scored.units[1].previous == "Titanic is a 1997 American epic film."


def test_the_first_round_reads_the_best_sentences_then_the_best_alone_and_in_its_window() -> None:
    claim = "Titanic was directed by James Cameron."
    scored = build_candidates(JudgeRequest(claim=claim, passages=[TITANIC_TEXT], title="Titanic"), LocalJudgeConfig())
    first = scored.candidates[: scored.round_one]
    assert [c.kind for c in first] == ["sentence", "sentence"]
    assert "James Cameron" in first[0].text
    passage = "Titanic is a 1997 film. It was directed by James Cameron. It was a hit."
    short = build_candidates(JudgeRequest(claim=claim, passages=[passage]), LocalJudgeConfig())
    later = short.candidates[short.round_one : short.round_one + 2]
    assert [c.kind for c in later] == ["plain", "window"]
    assert later[1].text == "Titanic is a 1997 film. It was directed by James Cameron."
    assert len({c.model_text for c in scored.candidates}) == len(scored.candidates)  # nothing read twice
    for c in scored.candidates:
        if c.quote is not None:
            assert c.quote in TITANIC_TEXT


def test_one_call_reads_every_requests_first_round_in_one_batch() -> None:
    claims = ["Titanic was directed by James Cameron.", "It starred Kate Winslet.", "It was released in 1997."]
    judge = _TableJudge({})
    judge.judge_sync([JudgeRequest(claim=c, passages=[TITANIC_TEXT], title="Titanic") for c in claims])
    plans = [
        build_candidates(JudgeRequest(claim=c, passages=[TITANIC_TEXT], title="Titanic"), judge.config) for c in claims
    ]
    first = {c.model_text for p in plans for c in p.candidates[: p.round_one]}
    assert set(judge.batches[0]) == first  # all three first rounds, one forward pass


def test_a_request_the_first_round_settles_gets_no_second_round() -> None:
    claim = "Titanic was directed by James Cameron."
    request = JudgeRequest(claim=claim, passages=[TITANIC_TEXT], title="Titanic")
    best = build_candidates(request, LocalJudgeConfig()).candidates[0].model_text
    sure = _TableJudge({best: (0.98, 0.01, 0.01)})
    verdict = sure.judge_sync([request])[0]
    assert verdict.label == "supported" and len(sure.batches) == 1
    unsure = _TableJudge({best: (0.6, 0.3, 0.1)})
    unsure.judge_sync([request])
    assert len(unsure.batches) >= 2  # not settled: the rest of the budget is read
    cited = _TableJudge({best: (0.98, 0.01, 0.01)})
    cited.judge_sync([JudgeRequest(claim=claim, passages=[TITANIC_TEXT], title="Titanic", settle_at=0.999)])
    assert len(cited.batches) >= 2  # a caller citing at a higher confidence reads further


def test_a_request_whose_first_round_finds_nothing_is_not_read_further() -> None:
    claim = "Titanic was directed by James Cameron."
    request = JudgeRequest(claim=claim, passages=[TITANIC_TEXT], title="Titanic")
    best = build_candidates(request, LocalJudgeConfig()).candidates[0].model_text
    nothing = _TableJudge({}, LocalJudgeConfig(split_parts=False))  # every reading neutral
    assert nothing.judge_sync([request])[0].label == "not_found"
    assert len(nothing.batches) == 1  # support and contradiction both under settle_none: decided
    faint = _TableJudge({best: (0.45, 0.5, 0.05)}, LocalJudgeConfig(split_parts=False))
    faint.judge_sync([request])
    assert len(faint.batches) >= 2  # some support (about 0.35 in the stub decision): read further
    off = _TableJudge({}, LocalJudgeConfig(split_parts=False, settle_none=0.0))
    off.judge_sync([request])
    assert len(off.batches) >= 2


def test_an_int8_fit_never_replaces_a_decision_the_judge_reads() -> None:
    from guardrail.judges._decision import decision_file
    from training.fit_decision import written_name

    for rounds in (1, 2):
        assert written_name(rounds) == decision_file(rounds)
        int8 = written_name(rounds, int8=True)
        assert int8 != decision_file(rounds) and int8.endswith("_int8.json")
    assert {written_name(1, int8=True), written_name(2, int8=True)} == {
        "decision_one_round_int8.json",
        "decision_int8.json",
    }


def test_the_decisions_fitting_settles_requests_as_the_judge_does() -> None:
    from training.fit_decision import Row, runtime_probabilities

    rows = [Row("wice", 2, np.zeros(len(REQUEST_FEATURES)), np.zeros(len(REQUEST_FEATURES))) for _ in range(2)]
    first = np.asarray([[0.05, 0.05, 0.9], [0.3, 0.1, 0.6]])  # nothing there / some support
    full = np.asarray([[0.9, 0.05, 0.05], [0.9, 0.05, 0.05]])
    read = runtime_probabilities(first, full, 0.8, 0.9, 0.7, rows, None, 0.15)
    assert read.tolist() == [first[0].tolist(), full[1].tolist()]
    assert runtime_probabilities(first, full, 0.8, 0.9, 0.7, rows, None, 0.0).tolist() == full.tolist()


def _contradicting(context: float, alone: float, named: bool, support: float) -> np.ndarray:
    x = np.zeros(len(REQUEST_FEATURES))
    x[REQUEST_FEATURES.index("contra_con_context")] = context
    x[REQUEST_FEATURES.index("contra_con_alone")] = alone
    x[REQUEST_FEATURES.index("contra_subject_named")] = float(named)
    x[REQUEST_FEATURES.index("support_ent_best")] = support
    return x


def test_a_page_that_surely_says_otherwise_of_the_subject_withholds_its_support() -> None:
    assert bool(withheld_support(_contradicting(0.97, 0.95, True, 0.6))[0])
    assert not withheld_support(_contradicting(0.97, 0.85, True, 0.1))[0]  # alone, not sure enough
    assert not withheld_support(_contradicting(0.97, 0.95, False, 0.1))[0]  # about something else
    assert not withheld_support(_contradicting(0.97, 0.95, True, 0.7))[0]  # the support reads nearly as surely
    # The decision's fitting withholds the same support, giving its share to not_found.
    from training.fit_decision import Row, runtime_probabilities

    x = _contradicting(0.97, 0.95, True, 0.6)
    rows = [Row("wice", 2, x, x)]
    read = runtime_probabilities(np.asarray([[0.9, 0.05, 0.05]]), np.asarray([[0.9, 0.05, 0.05]]), 0.8, 0.9, 0.7, rows)
    assert read[0].tolist() == pytest.approx([0.0, 0.05, 0.95])


def test_with_one_round_an_answer_costs_its_first_rounds_whatever_the_probabilities() -> None:
    claims = ["Titanic was directed by James Cameron.", "It starred Kate Winslet.", "It was released in 1997."]
    requests = [JudgeRequest(claim=c, passages=[TITANIC_TEXT], title="Titanic") for c in claims]
    config = LocalJudgeConfig(rounds=1, split_parts=False)
    plans = [build_candidates(r, config) for r in requests]
    first = [c.model_text for p in plans for c in p.candidates[: p.round_one]]
    # Nothing settles (every reading neutral, the early not_found off): with two rounds the rest
    # of the budget is read ...
    two = _TableJudge({}, LocalJudgeConfig(rounds=2, split_parts=False, settle_none=0.0))
    two.judge_sync(requests)
    assert len(two.batches) >= 2 and len(two.asked) > len(first)
    # ... with one, every claim's first round in one forward pass, and nothing more.
    one = _TableJudge({}, config)
    verdicts = one.judge_sync(requests)
    assert sorted(one.asked) == sorted(first)
    assert len(one.batches) == 1 and len(one.asked) == len(first) == 3 * config.first_round
    assert [v.label for v in verdicts] == ["not_found"] * 3


@pytest.mark.parametrize(
    "bad", [{"rounds": 0}, {"rounds": 3}, {"first_round": 0}, {"settle_none": -0.1}, {"settle_none": 1.5}]
)
def test_a_config_outside_its_range_is_refused_by_name(bad: dict[str, float]) -> None:
    name = next(iter(bad))
    with pytest.raises(ValueError, match=f"LocalJudgeConfig.{name} must be"):
        LocalJudgeConfig(**bad)  # type: ignore[arg-type]


def test_pairs_are_scored_in_length_sorted_passes_of_at_most_batch_tokens() -> None:
    judge = LocalJudge(config=LocalJudgeConfig(batch_tokens=100))
    # lengths 30, 10, 40, 20, 60, 150: sorted 10, 20, 30 (3 x 30 = 90), then 40 (40 + 60 would pad
    # to 120), 60, and 150 alone though it is over the cap
    assert judge._batches([30, 10, 40, 20, 60, 150]) == [[1, 3, 0], [2], [4], [5]]
    # the default keeps a 5-claim answer's first rounds (10 pairs of about 58 tokens) in one pass
    assert len(LocalJudge()._batches([58] * 10)) == 1


def test_a_request_costs_at_most_its_budget() -> None:
    config = LocalJudgeConfig(
        first_round=1, max_sentences=3, plain_sentences=1, window_seeds=1, combine_top=(2,), settle_none=0.0
    )
    judge = _TableJudge({}, config)
    judge.judge_sync([JudgeRequest(claim="Titanic was directed by James Cameron.", passages=[TITANIC_TEXT])])
    assert sum(1 for _ in judge.asked) <= 3 + 1 + 5 + 1  # sentences, alone, windows (2 and 3 around 1), joined


def test_a_request_sharing_no_word_with_the_claim_is_not_read() -> None:
    judge = _TableJudge({})
    verdict = judge.judge_sync([JudgeRequest(claim="Quantum chromodynamics binds quarks.", passages=[TITANIC_TEXT])])[0]
    assert verdict.label == "not_found" and judge.asked == []
    off = _TableJudge({}, LocalJudgeConfig(skip_unrelated=False))
    off.judge_sync([JudgeRequest(claim="Quantum chromodynamics binds quarks.", passages=[TITANIC_TEXT])])
    assert off.asked


# -- what the words say: features (no model) ---------------------------------------------------


def _features(claim: str, passage: str, title: str | None = None) -> dict[str, float]:
    """The unit features of the sentence most like the claim, every candidate read as neutral."""
    scored = build_candidates(JudgeRequest(claim=claim, passages=[passage], title=title), LocalJudgeConfig())
    for c in scored.candidates:
        c.probs, c.scored = np.asarray((0.1, 0.8, 0.1), dtype=np.float32), True
    unit = min(units_of(scored), key=lambda u: scored.units[u.index].rank)
    return dict(zip(UNIT_FEATURES, unit.features.tolist(), strict=True))


def test_a_pronoun_sentence_is_about_the_pages_topic() -> None:
    f = _features(
        "Titanic was directed by Steven Spielberg.", "It was directed by James Cameron.", "Titanic (1997 film)"
    )
    assert f["subject_by_reference"] == 1.0 and f["subject_elsewhere"] == 0.0
    alone = _features("Titanic was directed by Steven Spielberg.", "It was directed by James Cameron.")
    assert alone["subject_by_reference"] == 1.0  # no topic: a pronoun opening is given the benefit of the doubt
    other = _features("Titanic was directed by Steven Spielberg.", "It was directed by James Cameron.", "Avatar")
    assert other["subject_by_reference"] == 0.0 and other["subject_elsewhere"] == 1.0


VERTEX_TITANIC = (
    "Titanic is a 1997 American epic romantic disaster movie. It was directed, written, and co-produced by "
    "James Cameron. The movie is about the 1912 sinking of the RMS Titanic. It stars Kate Winslet and Leonardo "
    "DiCaprio. The movie was released on December 19, 1997."
)


def _restated(claim: str, passage: str) -> dict[str, str]:
    """Each sentence of ``passage`` the claim would be restated against, with the restated claim."""
    scored = build_candidates(JudgeRequest(claim=claim, passages=[passage], title="Titanic"), LocalJudgeConfig())
    for c in scored.candidates:
        c.scored = True
    return {scored.units[k].text: restated for k, restated, _ in restatements(scored)}


def test_another_name_in_the_claims_place_is_read_as_a_restated_claim() -> None:
    # The sentence says the rest of the claim of another name: the claim restated with that name is
    # what the model reads against it (its entailment is the name_restated feature).
    assert _restated("Titanic was directed by Steven Spielberg.", VERTEX_TITANIC) == {
        "It was directed, written, and co-produced by James Cameron.": "Titanic was directed by James Cameron."
    }
    assert _restated("It starred Brad Pitt and Kate Winslet.", VERTEX_TITANIC) == {
        "It stars Kate Winslet and Leonardo DiCaprio.": "It starred Leonardo DiCaprio and Kate Winslet."
    }
    # A sentence that only names other people, not the claim's relation, restates nothing.
    assert _restated("Titanic was directed by James Cameron.", VERTEX_TITANIC) == {}
    assert _restated("Titanic stars Kate Winslet.", VERTEX_TITANIC) == {}


def test_a_restated_name_rules_out_support_and_is_a_stated_conflict() -> None:
    request = JudgeRequest(
        claim="Titanic was directed by Steven Spielberg.", passages=[VERTEX_TITANIC], title="Titanic (1997 film)"
    )
    scored = build_candidates(request, LocalJudgeConfig())
    for c in scored.candidates:
        c.probs, c.scored = np.asarray((0.9, 0.05, 0.05), dtype=np.float32), True  # every reading "entails"
    cameron = next(k for k, u in enumerate(scored.units) if "James Cameron" in u.text)
    scored.restated[cameron] = 0.95
    units = {u.index: u for u in units_of(scored)}
    features = dict(zip(UNIT_FEATURES, units[cameron].features.tolist(), strict=True))
    assert features["name_restated"] == pytest.approx(0.95)
    x = np.zeros(len(REQUEST_FEATURES))
    x[REQUEST_FEATURES.index("support_name_restated")] = 0.95
    assert bool(support_conflicts(x)[0])  # that sentence never backs the claim, however it reads


def test_the_words_that_differ_are_features_not_vetoes() -> None:
    assert _features("Water boils at 50 degrees Celsius at sea level.", SEA_LEVEL)["number_conflict"] == 1.0
    assert (
        _features("Spain defeated Italy in the final.", "In the final, Italy defeated Spain 2-1.")["role_swap"] == 1.0
    )
    assert (
        _features("Exercise increases the risk of heart disease.", "Exercise reduces the risk of heart disease.")[
            "antonym_flip"
        ]
        == 1.0
    )
    cast = _features("It starred Brad Pitt and Kate Winslet.", "It stars Kate Winslet and Leonardo DiCaprio.")
    assert cast["name_substituted"] == 1.0 and cast["name_missing"] == 1.0


def test_two_names_joined_the_other_way_round_are_a_role_swap() -> None:
    assert checks.role_swap("Italy defeated Spain in the final.", "In the final, Spain defeated Italy 2-1.") == (
        "Italy",
        "Spain",
    )
    assert checks.role_swap("Italy defeated Spain.", "Italy defeated Spain 2-1.") is None
    assert checks.role_swap("Italy defeated Spain.", "Spain was defeated by Italy.") is None  # a passive restatement


WARFARIN = "In atrial fibrillation, warfarin was associated with fewer major bleeding events than apixaban."


def test_a_comparison_told_the_other_way_round_is_a_role_swap() -> None:
    apixaban = "Apixaban was associated with significantly fewer major bleeding events than warfarin (HR 0.62)."
    assert checks.compared_swap(WARFARIN, apixaban) == ("warfarin", "apixaban")
    assert checks.role_swap(WARFARIN, apixaban) == ("warfarin", "apixaban")  # lower case: the words need no capital
    assert _features(WARFARIN, apixaban)["role_swap"] == 1.0
    assert checks.compared_swap("The Nile is longer than the Amazon.", "The Amazon is longer than the Nile.") == (
        "nile",
        "amazon",
    )


@pytest.mark.parametrize(
    "evidence",
    [
        "Apixaban was associated with more major bleeding events than warfarin.",  # the same, from the other side
        "Warfarin was associated with fewer major bleeding events than apixaban (HR 0.62).",  # the same
        "Warfarin was associated with fewer major bleeding events than placebo.",  # compared with something else
        "Apixaban was associated with fewer strokes than warfarin.",  # too little of the claim
        "Apixaban and warfarin were compared in atrial fibrillation.",  # nothing compared
        # The same comparison word for something else, and the claim's way in the same sentence.
        "Warfarin was cheaper than apixaban, but warfarin was associated with fewer major bleeding events than "
        "apixaban.",
        # A word of the claim's comparison clause left out ("bleeding").
        "Apixaban was associated with fewer major events than warfarin.",
    ],
)
def test_a_comparison_the_same_way_or_with_another_thing_is_no_swap(evidence: str) -> None:
    assert checks.compared_swap(WARFARIN, evidence) is None


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # Another property compared the other way round ("attempt" for "die by").
        (
            "Men are more likely than women to die by suicide.",
            "Women are more likely than men to attempt suicide, but men are about three times more likely to die by "
            "suicide.",
        ),
        # The other side in the opposite word: the same comparison.
        (
            "The Arctic has warmed more quickly than the rest of the world.",
            "Since 1980 the rest of the world has warmed more slowly than the Arctic.",
        ),
        (
            "Apixaban caused fewer strokes than warfarin.",
            "Warfarin was cheaper than apixaban, but apixaban caused fewer strokes than warfarin.",
        ),
    ],
)
def test_a_comparison_of_something_else_or_from_the_other_side_is_no_swap(claim: str, evidence: str) -> None:
    assert checks.compared_swap(claim, evidence) is None


def test_a_comparison_with_a_number_is_a_quantity_not_a_role() -> None:
    assert checks.compared_swap("More than 200 people attended the match.", "More than 300 people attended.") is None


# -- the decision's mechanics (a stub classifier) -----------------------------------------------


def _decided(claim: str, passage: str, table: dict[str, tuple[float, float, float]], title: str | None = None):  # type: ignore[no-untyped-def]
    # What each reading decides and quotes: a table that leaves the first round neutral must still
    # reach the second round's readings, so the early not_found (settle_none) is off here.
    judge = _TableJudge(table, LocalJudgeConfig(settle_none=0.0))
    return judge.judge_sync([JudgeRequest(claim=claim, passages=[passage], title=title)])[0]


def test_contradicted_quotes_the_sentence_and_needs_its_threshold() -> None:
    claim = "Water boils at 50 degrees Celsius at sea level."
    verdict = _decided(claim, BOILING_TEXT, {SEA_LEVEL: (0.02, 0.03, 0.95)})
    assert verdict.label == "contradicted" and verdict.evidence_quote == SEA_LEVEL
    assert 0.9 < verdict.confidence <= 1.0
    weak = _decided(claim, BOILING_TEXT, {SEA_LEVEL: (0.2, 0.35, 0.45)})
    assert weak.label == "not_found"


def test_support_quotes_the_sentence_and_keeps_the_window_as_context_where_the_window_decided() -> None:
    claim = "Titanic was directed by James Cameron."
    passage = "Titanic is a 1997 film. It was directed by James Cameron. It was a hit."
    window = "Titanic is a 1997 film. It was directed by James Cameron."
    read = f"Titanic: {window}"  # the passage opens with its topic's name: what the model reads
    verdict = _decided(claim, passage, {read: (0.97, 0.02, 0.01)})
    assert verdict.label == "supported" and verdict.evidence_quote == "It was directed by James Cameron."
    assert verdict.context == window
    both = _decided(
        claim, passage, {read: (0.97, 0.02, 0.01), "Titanic: It was directed by James Cameron.": (0.96, 0.02, 0.02)}
    )
    assert both.evidence_quote == "It was directed by James Cameron." and both.context is None


def test_a_window_that_decides_quotes_its_sentence_that_says_the_claim() -> None:
    claim = "From its source in the Blue Ridge, the Cedar River runs to the Western Ocean."
    fact = "The Cedar River flows from its source in the Blue Ridge to its mouth in the Western Ocean."
    before = "Later settlers of the valley built water mills along the faster stretches."
    after = "Spring floods are common when the snow melts in the mountains."
    passage = f"{before} {fact} {after}"
    table = {
        # Read alone with its topic, the fact sentence leans to contradiction (a model's error),
        # so only its neighbours carry the window's support: the quote must still be the fact.
        f"Cedar River: {fact}": (0.2, 0.2, 0.6),
        f"Cedar River: {passage}": (0.97, 0.02, 0.01),
    }
    verdict = _decided(claim, passage, table, title="Cedar River")
    assert verdict.label == "supported"
    assert verdict.evidence_quote == fact
    assert verdict.context == passage


def _read_as(claim: str, passage: str, sentence: str, probs: tuple[float, float, float]):  # type: ignore[no-untyped-def]
    # Every text holding ``sentence`` (alone, with its topic, in a window) gets the same reading, the
    # rest reads neutral: what decides is how the words are taken.
    request = JudgeRequest(claim=claim, passages=[passage])
    table = {
        c.model_text: probs for c in build_candidates(request, LocalJudgeConfig()).candidates if sentence in c.text
    }
    return _decided(claim, passage, table)


VITAMIN_CLAIM = "Vitamin D supplementation reduces the risk of fractures in older adults."


@pytest.mark.parametrize(
    "aim",
    [
        "This study examined whether vitamin D supplementation reduces the risk of fractures in older adults.",
        "Does vitamin D supplementation reduce the risk of fractures in older adults?",
        "We hypothesised that vitamin D supplementation reduces the risk of fractures in older adults.",
    ],
)
def test_an_aim_a_question_or_a_supposition_never_backs_the_claim(aim: str) -> None:
    passage = f"{aim} We randomised 2,000 adults aged over 70."
    assert _read_as(VITAMIN_CLAIM, passage, aim, (0.97, 0.02, 0.01)).label == "not_found"
    # Nor does it contradict it: "We hypothesised that it does not" is no finding either.
    assert _read_as(VITAMIN_CLAIM, passage, aim, (0.01, 0.02, 0.97)).label == "not_found"


def test_the_finding_a_study_reports_backs_the_claim_beside_its_aim() -> None:
    aim = "This study examined whether vitamin D supplementation reduces the risk of fractures in older adults."
    finding = "Vitamin D supplementation reduced the risk of fractures in older adults by 23 percent."
    verdict = _read_as(VITAMIN_CLAIM, f"{aim} {finding}", finding, (0.97, 0.02, 0.01))
    assert verdict.label == "supported" and verdict.evidence_quote == finding


def test_a_window_that_holds_an_aim_quotes_its_finding() -> None:
    aim = "This study examined whether vitamin D supplementation reduces the risk of fractures in older adults."
    finding = "With vitamin D supplementation, older adults had 23 percent fewer fractures than with placebo."
    passage = f"{aim} {finding}"
    request = JudgeRequest(claim=VITAMIN_CLAIM, passages=[passage])
    table = {}
    for c in build_candidates(request, LocalJudgeConfig()).candidates:
        # The model reads the aim as saying the claim, the finding alone only half, and the two
        # together as saying it: the window decides, and its quote must be what the study found.
        table[c.model_text] = (0.97, 0.02, 0.01) if c.kind == "window" or aim in c.text else (0.45, 0.5, 0.05)
    verdict = _decided(VITAMIN_CLAIM, passage, table)
    assert verdict.label == "supported" and verdict.evidence_quote == finding and verdict.context == passage


def test_a_part_of_a_claim_is_not_backed_by_an_aim() -> None:
    claim = "The trial found that vitamin D reduced fractures and lowered blood pressure."
    aim = "The trial examined whether vitamin D reduced fractures in older adults."
    passage = f"{aim} Blood pressure was measured every month."
    request = JudgeRequest(claim=claim, passages=[passage])
    texts = [c.model_text for c in build_candidates(request, LocalJudgeConfig()).candidates if aim in c.text]
    verdict = _decided(claim, passage, dict.fromkeys([*texts, aim], (0.97, 0.02, 0.01)))
    assert verdict.label == "not_found"
    assert verdict.supported_parts == [] and verdict.reason is None
    assert verdict.missing_parts == [
        "The trial found that vitamin D reduced fractures",
        "The trial found that vitamin D lowered blood pressure",
    ]


def test_a_window_holding_a_denial_of_the_claim_backs_nothing() -> None:
    methods = "Methods: We randomised 2,000 adults aged over 70 to vitamin D or placebo."
    result = "Results: Vitamin D supplementation did not reduce the risk of fractures compared with placebo."
    passage = f"{methods} {result}"
    table = {}
    for c in build_candidates(JudgeRequest(claim=VITAMIN_CLAIM, passages=[passage]), LocalJudgeConfig()).candidates:
        # As the real model reads a structured abstract: the methods and the failed finding together
        # as the claim, the finding alone as against it (too weakly to settle the first round, so
        # the window is read).
        table[c.model_text] = (
            (0.97, 0.02, 0.01) if len(c.units) > 1 else (0.3, 0.1, 0.6) if result in c.text else (0.05, 0.9, 0.05)
        )
    verdict = _decided(VITAMIN_CLAIM, passage, table)
    assert verdict.label == "contradicted" and verdict.evidence_quote == result
    # The same window with the finding stated backs the claim (the finding alone reads neutral).
    found = result.replace("did not reduce", "reduced")
    table = {text.replace(result, found): probs if probs[0] > 0.5 else (0.3, 0.6, 0.1) for text, probs in table.items()}
    assert _decided(VITAMIN_CLAIM, f"{methods} {found}", table).label == "supported"


def test_a_sentence_denying_the_claim_states_its_opposite() -> None:
    result = "Vitamin D supplementation did not reduce the risk of fractures compared with placebo."
    assert _features(VITAMIN_CLAIM, result)["antonym_flip"] == 1.0
    # However the model reads it, it never backs the claim.
    assert _read_as(VITAMIN_CLAIM, result, result, (0.97, 0.02, 0.01)).label != "supported"
    assert _features(VITAMIN_CLAIM, result.replace("did not reduce", "reduced"))["antonym_flip"] == 0.0


def test_another_word_of_the_claims_kind_backs_nothing_but_may_contradict() -> None:
    claim = "Exercise reduces symptoms of anxiety in adults."
    swapped = "Exercise reduced symptoms of depression in adults."
    assert _read_as(claim, swapped, swapped, (0.97, 0.02, 0.01)).label == "not_found"
    assert _read_as(claim, swapped, swapped, (0.01, 0.02, 0.97)).label == "contradicted"
    both = "Exercise reduced symptoms of anxiety and depression in adults."
    assert _read_as(claim, both, both, (0.97, 0.02, 0.01)).label == "supported"


def test_a_decision_fitted_on_other_features_is_refused() -> None:
    data = _stub_decision().to_dict()
    assert DecisionModel.from_dict(data).support_threshold == 0.6
    data["features"] = data["features"][:-1]
    with pytest.raises(RuntimeError, match="refit"):
        DecisionModel.from_dict(data)


@pytest.mark.parametrize("rounds", [1, 2])
def test_the_shipped_decision_matches_the_features_and_thresholds_are_probabilities(rounds: int) -> None:
    decision = load_decision(ROOT / "guardrail" / "judges" / "model", rounds)
    assert decision.features == REQUEST_FEATURES
    assert 0.0 < decision.support_threshold < 1.0 and 0.0 < decision.contradict_threshold < 1.0
    p = decision.probabilities(np.zeros(len(REQUEST_FEATURES)))
    assert p.shape == (3,) and abs(float(p.sum()) - 1.0) < 1e-9


def test_each_reading_is_decided_by_the_classifier_fitted_for_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = ROOT / "guardrail" / "judges" / "model"
    one = LocalJudge(config=LocalJudgeConfig(rounds=1)).decision
    two = LocalJudge(config=LocalJudgeConfig(rounds=2)).decision
    assert one is load_decision(model, 1) and two is load_decision(model, 2)
    assert not np.array_equal(one.coef, two.coef)  # fitted on what the first round shows alone
    record = json.loads((model / "decision_record_one_round.json").read_text())
    assert record["chosen"]["rounds"] == 1 and "--rounds 1" in record["command"]
    # A model folder with only a two-round decision decides one round with it, and says so.
    (tmp_path / "decision.json").write_text((model / "decision.json").read_text())
    two_rounds = load_decision(tmp_path, 2)  # loaded first: the one-round fallback is still said
    with caplog.at_level(logging.WARNING, logger="guardrail.judges.decision"):
        assert load_decision(tmp_path, 1) is two_rounds
    assert "no decision_one_round.json" in caplog.text and "--rounds 1" in caplog.text


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


def test_a_verdict_does_not_depend_on_what_else_is_judged_with_it(judge: LocalJudge) -> None:
    # Concurrent callers' requests share scoring passes (LocalJudge.judge): a request's verdict
    # must be the one it gets alone, whatever the others pad its batches to.
    def request(claim: str, text: str, title: str) -> JudgeRequest:
        return JudgeRequest(claim=claim, passages=[text], title=title)

    own = [
        request("Titanic was directed by Steven Spielberg.", TITANIC_TEXT, "Titanic"),
        request("Water boils at 50 degrees Celsius at sea level.", BOILING_TEXT, "Boiling point"),
    ]
    others = [
        request("Titanic won 11 Academy Awards.", TITANIC_TEXT, "Titanic"),
        request("Water boils at 100 degrees Celsius at sea level.", BOILING_TEXT, "Boiling point"),
        request("The Eiffel Tower is in Paris.", UNRELATED_TEXT, "Unrelated"),
    ]
    alone = [judge.judge_sync([r])[0] for r in own]
    merged = judge.judge_sync([others[0], own[0], others[1], own[1], others[2]])
    for a, m in zip(alone, [merged[1], merged[3]], strict=True):
        assert (m.label, m.evidence_quote, m.reason) == (a.label, a.evidence_quote, a.reason)
        assert m.confidence == pytest.approx(a.confidence, abs=1e-4)
    assert [a.label for a in alone] == ["contradicted", "contradicted"]


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


@pytest.mark.slow
def test_the_page_about_the_claims_river_contradicts_its_length(judge: LocalJudge) -> None:
    own = RIVER_PAGE.format(name="Alder River", km=130, year=1800)
    assert _verify(judge, "The Alder River is 100 kilometres long.", own)[0] == Label.contradicted


@pytest.mark.slow
def test_the_page_about_the_claims_river_contradicts_its_bridges_year(judge: LocalJudge) -> None:
    own = RIVER_PAGE.format(name="Alder River", km=130, year=1800)
    assert _verify(judge, "The first bridge over the Alder River was built in 1840.", own)[0] == Label.contradicted


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="known miss (issue 21 note): the Denver sentence (95 degrees) is read first")
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
def test_another_lead_in_the_cast_list_contradicts_the_cast_claim(judge: LocalJudge) -> None:
    verifier = Verifier(judge=judge, embedder=HashEmbedder(), fetcher=_NoFetch(), settings=Settings())
    claim = "It starred Brad Pitt and Kate Winslet."
    [report] = verifier.verify_many([ClaimTask(claim, [Fact(TITANIC_TEXT, source="fixture")])])
    [citation] = report.citations
    assert report.overall == Label.contradicted
    assert citation.evidence_quote is not None and "Leonardo DiCaprio" in citation.evidence_quote


EVEREST_PAGE = (
    "Mount Everest is Earth's highest mountain above sea level, located in the Mahalangur Himal sub-range of "
    "the Himalayas. Mount Everest attracts many climbers, including highly experienced mountaineers. The first "
    "recorded ascent of Everest was made on 29 May 1953 by Edmund Hillary of New Zealand and Tenzing Norgay, a "
    "Sherpa from Nepal, as part of a British expedition led by John Hunt. The mountain's English name was "
    "officially adopted in 1865 by the Royal Geographical Society."
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("leader", "expected"), [("Edmund Hillary", Label.contradicted), ("John Hunt", Label.supported)]
)
def test_the_leader_of_an_expedition_is_read_where_the_page_names_the_claims_elsewhere(
    judge: LocalJudge, leader: str, expected: Label
) -> None:
    # Hillary is on the page (he climbed), so no name is missing: the act's own doer tells.
    claim = f"The first recorded ascent of Mount Everest in 1953 was made by a British expedition led by {leader}."
    label, quote = _verify(judge, claim, EVEREST_PAGE)
    assert label == expected
    assert quote is not None and "led by John Hunt" in quote


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
        JudgeRequest(
            claim="Water boils at 50 degrees Celsius at sea level.",
            passages=[SEA_LEVEL + " Water freezes at 0 degrees Celsius."],
        ),
    ]
    verdicts = await judge.judge(requests)
    assert [v.label for v in verdicts] == ["supported", "not_found", "contradicted"]


def test_default_judge_is_local() -> None:
    judge = build_judge(Settings())
    assert isinstance(judge, LocalJudge)
    assert judge.name == "local"
    assert judge.config.rounds == 2


def test_the_fast_path_is_chosen_by_setting() -> None:
    judge = build_judge(Settings.from_env({"GUARDRAIL_JUDGE_ROUNDS": "1"}))
    assert isinstance(judge, LocalJudge) and judge.config.rounds == 1
    assert judge.decision is load_decision(ROOT / "guardrail" / "judges" / "model", 1)


def test_the_fast_path_reads_int8_and_two_rounds_float32_unless_told() -> None:
    fast = LocalJudge(config=LocalJudgeConfig(rounds=1))
    assert fast.quantize is True and fast.model.endswith("-int8")
    default = LocalJudge()
    assert default.quantize is False and not default.model.endswith("-int8")
    assert LocalJudge(config=LocalJudgeConfig(rounds=1), quantize=False).quantize is False
    assert LocalJudge(quantize=True).quantize is True
    # torch's dynamic int8 is per matrix, not the ONNX graph's per column: it stays float
    assert LocalJudge(config=LocalJudgeConfig(rounds=1, backend="torch")).quantize is False


@pytest.mark.parametrize(
    ("env", "int8"),
    [
        ({"GUARDRAIL_JUDGE_ROUNDS": "1"}, True),
        ({"GUARDRAIL_JUDGE_ROUNDS": "1", "GUARDRAIL_JUDGE_PRECISION": "float32"}, False),
        ({"GUARDRAIL_JUDGE_PRECISION": "int8"}, True),
        ({"GUARDRAIL_JUDGE_PRECISION": "auto"}, False),
        ({}, False),
    ],
)
def test_the_judges_precision_is_chosen_by_setting(env: dict[str, str], int8: bool) -> None:
    judge = build_judge(Settings.from_env(env))
    assert isinstance(judge, LocalJudge) and judge.quantize is int8


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


# -- denials and hedged values (the checks the decision reads) ------------------------------------

SPONGEBOB = "SpongeBob SquarePants is a French animated television series created by Stephen Hillenburg."
THATCHER_SECOND = "In 1975 Thatcher became the second woman to lead a major political party in the United Kingdom."


def test_another_rank_is_told_from_a_denial() -> None:
    claim = "Margaret Thatcher was not the first woman to lead a major political party in the United Kingdom."
    assert checks.other_rank(claim, THATCHER_SECOND)
    first = "Thatcher was the first woman to lead a major political party in the United Kingdom."
    assert not checks.other_rank(claim, first)


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


def test_a_model_folder_that_holds_no_model_is_refused_at_once(tmp_path: Path) -> None:
    import pytest

    from guardrail.judges.local import LocalJudge

    for folder in (tmp_path / "missing", tmp_path):
        with pytest.raises(ValueError, match=r"holds no config\.json") as error:
            LocalJudge(folder)
        assert str(folder) in str(error.value)


def _judged(judge: LocalJudge, claim: str, page: str, title: str | None = None) -> JudgeVerdict:
    """The judge's verdict on one claim against one page (with its title)."""
    [verdict] = judge.judge_sync([JudgeRequest(claim=claim, passages=[page], title=title)])
    return verdict


YOGA_TITLE = "Yoga for chronic insomnia in older women: a randomised controlled trial"


SEA_ICE_PAGE = (
    "Arctic sea ice is seawater frozen at the surface of the Arctic Ocean. It spreads through the dark winter, peaks "
    "in March, and shrinks through the summer to its annual minimum in September. Satellite records of its extent "
    "began in 1979. Since then the September minimum has fallen by roughly 13% per decade. The smallest minimum in "
    "the satellite record came in September 2012, at about 3.4 million square kilometres. Much of the old, thick ice "
    "has gone, leaving younger and thinner ice."
)


@pytest.mark.slow
@pytest.mark.parametrize(("year", "expected"), [("2007", Label.contradicted), ("2012", Label.supported)])
def test_another_year_beside_the_sentence_read_as_support_rules_support_out(
    judge: LocalJudge, year: str, expected: Label
) -> None:
    # For 2007 the sentence support rests on is another one (the September minimum's decline); the
    # record low's own sentence gives 2012, and it says more of the claim (conflict_beside).
    claim = f"The smallest Arctic sea ice extent in the satellite record was recorded in September {year}."
    verdict = _judged(judge, claim, SEA_ICE_PAGE, "Arctic sea ice")
    assert verdict.label == expected
    assert verdict.evidence_quote is not None and "September 2012" in verdict.evidence_quote


SEA_LEVEL_PAGE = (
    "Global mean sea level has risen by about 20 centimetres since 1900. Over the last century the rate of rise "
    "increased from 1.4 millimetres per year to 3.6 millimetres per year. Warming water expands, and melting "
    "glaciers and ice sheets add water to the ocean."
)
CBT_PAGE = (
    "Cognitive behavioural therapy (CBT) is a talking therapy that can help you manage your problems by changing "
    "the way you think and behave. It is most commonly used to treat anxiety and depression. CBT deals with your "
    "current problems, rather than focusing on issues from your past. A course usually lasts between 5 and 20 "
    "sessions."
)
HAY_FEVER_PAGE = (
    "Hay fever is usually worse between late March and September, when the pollen count is highest. There is "
    "currently no cure for hay fever. Some people believe that eating local honey helps with hay fever. "
    "Antihistamine tablets and steroid nasal sprays can ease the symptoms."
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("claim", "page", "expected"),
    [
        # A change told the other way round (swapped_change).
        (
            "The rate of global sea level rise slowed from 3.6 millimetres per year to 1.4 millimetres per year.",
            SEA_LEVEL_PAGE,
            Label.not_found,
        ),
        (
            "The rate of global sea level rise increased from 1.4 millimetres per year to 3.6 millimetres per year.",
            SEA_LEVEL_PAGE,
            Label.supported,
        ),
        # What is preferred and what is passed over, swapped (preferred_swap).
        ("CBT focuses on issues from your past rather than on your current problems.", CBT_PAGE, Label.not_found),
        ("CBT deals with your current problems rather than issues from your past.", CBT_PAGE, Label.supported),
        # A popular belief reported is not the page's own claim (_SUPPOSING).
        ("Eating local honey helps with hay fever.", HAY_FEVER_PAGE, Label.not_found),
    ],
)
def test_a_reversed_change_a_swapped_preference_or_a_reported_belief_backs_nothing(
    judge: LocalJudge, claim: str, page: str, expected: Label
) -> None:
    verdict = _judged(judge, claim, page)
    assert verdict.label == expected


YOGA_PAGE = (
    "Insomnia is common in later life and is often treated with hypnotic drugs. We randomly assigned 180 women aged "
    "60-80 years with chronic insomnia to 24 weeks of twice-weekly yoga classes or to a sleep-hygiene education "
    "control. The primary outcome was the Pittsburgh Sleep Quality Index. Anxiety scores fell by 22% with yoga and "
    "by 6% with education (p=0.01). However, sleep quality scores did not differ between groups at six months "
    "(p=0.38). Adverse events were rare in both arms."
)


@pytest.mark.slow
def test_a_null_result_whose_study_the_title_names_takes_support_back(judge: LocalJudge) -> None:
    # The results sentence names neither yoga nor the women; the title does (null_result's topic).
    # Without it, the methods sentence was read as support.
    claim = "The trial found that yoga significantly improved sleep quality in older women with chronic insomnia."
    verdict = _judged(judge, claim, YOGA_PAGE, YOGA_TITLE)
    assert verdict.label != Label.supported
    assert verdict.evidence_quote is not None and "did not differ" in verdict.evidence_quote


ECZEMA_PAGE = (
    "Eczema is a condition that makes the skin itchy, dry and cracked. It is most common in small children, but it "
    "can continue into adulthood. There is currently no cure, although many children find their symptoms improve as "
    "they get older. Emollients are moisturising treatments applied to the skin every day to reduce water loss and "
    "cover it with a protective film. Most people with eczema use an emollient every day, even when the skin is "
    "clear. Topical corticosteroids can be used to reduce swelling and redness during flare-ups."
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        ("Eczema can now be cured by applying an emollient to the skin every day.", Label.not_found),
        ("Emollients applied to the skin every day reduce water loss in eczema.", Label.supported),
    ],
)
def test_a_page_saying_there_is_no_cure_takes_a_cure_back(judge: LocalJudge, claim: str, expected: Label) -> None:
    # The model reads the emollient sentence as entailing the cure (0.86 supported without no_cure).
    verdict = _judged(judge, claim, ECZEMA_PAGE, "Atopic eczema")
    assert verdict.label == expected
    if expected == Label.not_found:
        assert verdict.evidence_quote is not None and "no cure" in verdict.evidence_quote


def test_no_cure_is_found_in_sentences_the_model_did_not_read() -> None:
    # Retrieval may leave "There is currently no cure" out of the sentences read; denied_by reads it anyway.
    claim = "Eczema can now be cured by applying an emollient to the skin every day."
    scored = build_candidates(
        JudgeRequest(claim=claim, passages=[ECZEMA_PAGE], title="Atopic eczema"), LocalJudgeConfig()
    )
    index = denied_by(scored, [])
    assert index is not None and scored.units[index].text.startswith("There is currently no cure")
    other = "Emollients applied to the skin every day reduce water loss in eczema."
    scored = build_candidates(
        JudgeRequest(claim=other, passages=[ECZEMA_PAGE], title="Atopic eczema"), LocalJudgeConfig()
    )
    assert denied_by(scored, []) is None


SEABIRD_PAGE = (
    "Seabirds feed on fish near the ocean surface, where floating plastic gathers. We examined the stomach contents "
    "of 412 seabirds of nine species found dead on beaches in Portugal between 2018 and 2021. Plastic fragments were "
    "found in 61% of the birds. Most fragments were polyethylene films. Plastic occurrence did not differ between "
    "species that dive for their prey and species that feed at the surface. Birds found after winter storms held "
    "more fragments than those found in summer."
)


@pytest.mark.slow
def test_no_difference_between_the_compared_groups_contradicts_a_comparison(judge: LocalJudge) -> None:
    # Without _checks.no_difference it reads not_found: the model reads the sentence as neutral.
    claim = "Diving seabird species swallowed plastic more often than surface-feeding species."
    verdict = _judged(judge, claim, SEABIRD_PAGE, "Plastic ingestion by seabirds stranded on the Portuguese coast")
    assert verdict.label == Label.contradicted
    assert verdict.evidence_quote is not None and "did not differ" in verdict.evidence_quote


@pytest.mark.slow
def test_a_support_read_from_nothing_quotes_the_sentence_that_says_the_claim_best(judge: LocalJudge) -> None:
    # The classifier backs this claim while the model reads no sentence as entailing it; the most
    # supporting sentence was then "Adverse events were rare in both arms." (quoted_unit).
    claim = "In the trial, yoga reduced anxiety scores in older women with chronic insomnia more than education did."
    verdict = _judged(judge, claim, YOGA_PAGE, YOGA_TITLE)
    assert verdict.label == Label.supported
    assert verdict.evidence_quote is not None and checks.overlap(claim, verdict.evidence_quote) >= 0.3


@pytest.mark.slow
@pytest.mark.parametrize(("title", "expected"), [(None, Label.not_found), ("Australia (2008 film)", Label.supported)])
def test_a_name_listed_beside_the_claims_contradicts_nothing(
    judge: LocalJudge, title: str | None, expected: Label
) -> None:
    # Sydney is listed beside the claim's Canberra; it was read in the place of the film "Australia"
    # ("Canberra is the location where production of Sydney ... took place"), which the sentence
    # entails, and the right citation read contradicted (FEVER-Symmetric).
    claim = "Canberra is the location where production of Australia (2008 film) took place."
    verdict = _judged(judge, claim, "Production took place in Sydney, Canberra, Kununurra, and Bowen.", title)
    assert verdict.label == expected
