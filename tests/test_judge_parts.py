"""Issue 10's categories for the embedded judge: atomic parts, antonyms, language, a page about
something else, another event's year, a claim split over two cited pages. Pure checks first, then
the real model through the verifier (slow)."""

from __future__ import annotations

import pytest

from guardrail import ClaimTask, Fact, Label, Settings, Verifier
from guardrail.judges import _checks as checks
from guardrail.judges._features import conflicts_of
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
    pairs = [("increased", "decreased"), ("before", "after"), ("most", "fewest"), ("majority", "minority")]
    # A finding's direction in time and effect: "advanced flowering" for "delayed", "harms" for "benefits".
    pairs += [("advanced", "delayed"), ("widened", "narrowed"), ("benefits", "harms"), ("beneficial", "harmful")]
    for a, b in pairs:
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


COFFEE = (
    "In this cohort of 80,000 women, higher coffee consumption was associated with a lower risk of type 2 diabetes."
)


@pytest.mark.parametrize(
    ("claim", "evidence", "flip"),
    [
        # What each direction word moves decides, not the words alone.
        ("Coffee consumption increases the risk of type 2 diabetes.", COFFEE, ("increases", "lower")),
        ("Coffee consumption is associated with a lower risk of type 2 diabetes.", COFFEE, None),
        (
            "The drug increased blood pressure in patients.",
            "Compared with placebo, the drug lowered systolic blood pressure by 12 mmHg in patients.",
            ("increased", "lowered"),
        ),
        ("Blood pressure rose after the treatment.", "Blood pressure fell after the treatment.", ("rose", "fell")),
        ("Prices rose sharply during the war.", "During the war, prices fell.", ("rose", "fell")),
        # Negated, it is the negation checks' business; a bound is the quantity checks'.
        (
            "Vitamin D supplementation reduces the risk of fractures.",
            "Vitamin D supplementation did not reduce the risk of fractures.",
            None,
        ),
        ("Brazil has more than 200 million inhabitants.", "Brazil has fewer inhabitants than India.", None),
        # The claim moves the same thing the evidence's way too.
        ("The drug raised HDL levels and lowered LDL levels.", "The drug lowered LDL levels.", None),
        # "did not increase" is no opposite of "decreased".
        ("Vitamin D did not increase the risk of falls.", "Vitamin D decreased the risk of falls.", None),
        # Another thing moved: a shared word is not the same quantity.
        (
            "Arctic sea ice loss is matched by Antarctic sea ice gain.",
            "Warming led to diminished ice in the Greenland ice sheet.",
            None,
        ),
        # A direction noun before its verb moves what qualifies it, not what follows.
        (
            "The decline in tree-ring growth is openly discussed in papers and IPCC reports.",
            "The implications of the decline are discussed in Chapter 2 of the IPCC report.",
            None,
        ),
        # "which is higher than": what the relative pronoun stands for.
        (
            "The town reported a lower median household income than the national median.",
            "The town reported a median household income of $87,894, which is higher than the national median.",
            ("lower", "higher"),
        ),
        # "more than 5 million" bounds a value; "lower than expected" is no bound.
        ("Sales were more than 5 million.", "Sales were lower than expected, at 6 million.", None),
        # A trend that turns: the later word moves the same thing, though it does not say so.
        ("Prices rose in 2020.", "Prices, which had fallen in 2019, rose in 2020.", None),
        ("Crime has fallen since 1990.", "Crime rose in the 1980s but has fallen since 1990.", None),
        # The same link stated from its other end.
        (
            "Higher income is associated with lower mortality.",
            "Lower income was associated with higher mortality.",
            None,
        ),
        # "in" ends what a verb moves; after "an increase" it says what the noun moves.
        (
            "Temperatures rose in the Arctic.",
            "Temperatures rose in recent decades, and sea ice shrank in the Arctic.",
            None,
        ),
        (
            "There was an increase in the birth rate.",
            "There was a decrease in the birth rate.",
            ("increase", "decrease"),
        ),
        # A curly apostrophe negates as a straight one does.
        ("Profits didn\u2019t fall in 2020.", "Profits rose in 2020.", None),
        # A name is no direction.
        (
            "Greater Manchester has a population of 2.8 million.",
            "The population of Greater Manchester is 2.8 million, smaller than Greater London.",
            None,
        ),
        ("Enrollment increased at the university.", "At the university, Fall enrollment increased by 5%.", None),
        # A comparison told from its other side; the same side with the opposite word is a flip.
        ("Team A scored more points than Team B.", "Team B scored fewer points than Team A.", None),
        ("The Nile is longer than the Amazon.", "The Amazon is shorter than the Nile.", None),
        ("The Nile is longer than the Amazon.", "The Nile is shorter than the Amazon.", ("longer", "shorter")),
        # "conceded fewer": the word before it may be the verb, so it may move the claim's goals.
        ("The team conceded fewer goals.", "The team scored more goals and conceded fewer.", None),
    ],
)
def test_a_direction_flip_needs_the_same_thing_moved(claim: str, evidence: str, flip: tuple[str, str] | None) -> None:
    assert checks.antonym_flip(claim, evidence, 0.5) == flip


@pytest.mark.parametrize(
    ("claim", "text", "unasserted"),
    [
        (
            "Vitamin D reduces fractures.",
            "Objective: To determine whether vitamin D reduces fractures. Methods: A trial.",
            True,
        ),
        ("Vitamin D reduces fractures.", "Does vitamin D reduce fractures? We randomised adults.", True),
        ("Salt raises blood pressure.", "The aim of this trial was to test if salt raises blood pressure.", True),
        ("Salt raises blood pressure.", "This study was designed to test if salt raises blood pressure.", True),
        ("Salt raises blood pressure.", "This review evaluates the evidence that salt raises blood pressure.", True),
        ("Mindfulness improves memory.", "We hypothesised that mindfulness improves memory.", True),
        ("Mindfulness improves memory.", "Previous studies have suggested that mindfulness improves memory.", True),
        ("Mindfulness improves memory.", "It has been proposed that mindfulness improves memory.", True),
        ("Mindfulness improves memory.", "It is unclear if mindfulness improves memory.", True),
        ("The ban will cut smoking rates.", "Officials are still unsure whether the ban will cut smoking rates.", True),
        # A finding that follows the question answers it.
        (
            "Vitamin D reduces fractures.",
            "We investigated whether vitamin D reduces fractures and found that it did.",
            False,
        ),
        # The claim is asserted before the question that follows it.
        ("Vitamin D reduces fractures.", "Vitamin D reduces fractures; it is unclear whether calcium helps.", False),
        # A concession is no question, nor a condition.
        ("Vitamin D reduces fractures.", "Vitamin D reduced fractures, whether measured by X-ray or by report.", False),
        (
            "He is the best example of a web comedian.",
            "Whether he planned it or not, he is the best example of a web comedian.",
            False,
        ),
        ("Lead causes harm if swallowed.", "Lead is known to cause harm if swallowed.", False),
        # A claim that asks, or speaks of an aim, is backed by the same words.
        ("Whether salt raises blood pressure is unknown.", "Whether salt raises blood pressure is unknown.", False),
        ("The programme aims to promote literacy in cities.", "Its aim is to promote literacy in cities.", False),
        (
            "The main goal of physics is to observe the universe.",
            "The main goal of physics is to understand it.",
            False,
        ),
        # A title that ends in a question mark asks nothing.
        (
            "He starred in a comedy film in 2000.",
            "In 2000 he starred in the comedy film Dude, Where's My Car?",
            False,
        ),
        ("The film was shot in Peru.", "The film, Are We There Yet?", False),
        ("Mindfulness improves memory.", "Question: Can mindfulness improve memory?", True),
        (
            "Erenumab reduces migraine days.",
            "The aim of this trial was to test if erenumab reduces migraine days.",
            True,
        ),
        # Found in review: words of asking, aiming or supposing in their other senses.
        (
            "Ibuprofen is not advised in pregnancy.",
            "Let your doctor know if you are pregnant: ibuprofen is not advised in pregnancy.",
            False,
        ),
        ("The heart pumps blood around the body.", "The purpose of the heart is to pump blood around the body.", False),
        (
            "The minister said he would not resign.",
            "Asked whether he would resign, the minister said he would not.",
            False,
        ),
        (
            "Vitamin D reduces fractures.",
            "It is unclear whether vitamin D reduces falls, but it clearly reduces fractures.",
            False,
        ),
        ("Exercise improves mood.", "The results confirmed the hypothesis that exercise improves mood.", False),
        (
            "Coffee lowers diabetes risk.",
            "Does coffee lower diabetes risk? Studies show it does, by about 7% a cup.",
            False,
        ),
        (
            "The Paris Agreement seeks to limit warming to 1.5C.",
            "The goal of the Paris Agreement is to limit warming to 1.5C.",
            False,
        ),
        (
            "Edward Albee wrote Who's Afraid of Virginia Woolf.",
            "Who's Afraid of Virginia Woolf? is a play by Albee.",
            False,
        ),
        ("The project was launched to promote literacy.", "The aim of the project is to promote literacy.", False),
        ("Tablets are taken with food.", "It is suggested that the tablets are taken with food.", False),
        # A question about something else leaves the claim's sentence alone.
        ("Vitamin D reduces fractures.", "Vitamin D reduced fractures. Does calcium help too?", False),
        # A question answered at once (a page of questions and answers) says what its answer says.
        ("Exercise eases anxiety.", "Does exercise ease anxiety? Yes, in most trials.", False),
        ("Vitamin D reduces fractures in older adults.", "Vitamin D was studied in 2010. Does calcium help?", False),
    ],
)
def test_a_question_an_aim_or_a_supposition_asserts_nothing(claim: str, text: str, unasserted: bool) -> None:
    assert checks.unasserted(claim, text) is unasserted


def test_a_question_announced_at_length_asks_it() -> None:
    asked = (
        "This review will address the question: does intermittent fasting improve insulin sensitivity compared "
        "with continuous energy restriction?"
    )
    assert checks.unasserted("Intermittent fasting improves insulin sensitivity.", asked)


def test_what_a_page_asserts_leaves_out_its_questions_and_aims() -> None:
    page = (
        "Diarrhoea remains a leading cause of death in young children. This trial aims to determine whether "
        "handwashing promotion with free soap reduces diarrhoea among children in urban slums. Eighty clusters "
        "will be randomised."
    )
    asserted = checks.asserted_text(page)
    assert "handwashing" not in asserted
    assert asserted.startswith("Diarrhoea remains") and asserted.endswith("Eighty clusters will be randomised.")
    assert checks.asserted_text("Handwashing reduced diarrhoea in 2019.") == "Handwashing reduced diarrhoea in 2019."
    assert checks.speaks_of_aims("The trial aims to test whether handwashing reduces diarrhoea.")
    assert not checks.speaks_of_aims("Handwashing reduced diarrhoea.")


@pytest.mark.parametrize(
    ("claim", "evidence", "swap"),
    [
        (
            "Exercise reduces symptoms of anxiety.",
            "Exercise reduced symptoms of depression in adults.",
            ("anxiety", "depression"),
        ),
        ("He played guitar in the band.", "He played drums in the band from 1990.", ("guitar", "drums")),
        ("The drug lowered tumour growth in humans.", "The drug lowered tumour growth in mice.", ("humans", "mice")),
        (
            "She won a silver medal at the 2008 Olympics.",
            "At the 2008 Olympics she won the gold medal.",
            ("silver", "gold"),
        ),
        # Found in review: another of the kind in passing, or the claim's word in another form.
        (
            "The trial tested the drug in humans.",
            "After studies in mice, the trial tested the drug in 40 volunteers.",
            None,
        ),
        (
            "He played guitar for Oasis.",
            "He was the guitarist for Oasis, and also played piano on several songs.",
            None,
        ),
        ("Obesity raises the risk of diabetes.", "Being obese raises the risk of diabetes and hypertension.", None),
        (
            "Federer won the men's singles title in 2017.",
            "In 2017 Federer won the singles title, while the women's crown went to Muguruza.",
            None,
        ),
        ("She is an American actor and producer.", "She is an American actress and producer.", None),
        ("The rat model showed the effect.", "The mouse model showed the effect.", ("rat", "mouse")),
        ("She played the oboe in the orchestra.", "She played the bassoon in the orchestra.", ("oboe", "bassoon")),
        # Both named: nothing in the claim's place.
        ("He played guitar in the band.", "He played guitar and piano in the band.", None),
        # Part of the claim left out is no swap: the other word is the claim's own.
        ("He played guitar and drums in the band.", "He played drums in the band.", None),
        # The claim's word in another form is still there.
        ("The trial enrolled women.", "The trial enrolled a woman and men.", None),
        # Another of the kind in a sentence about something else.
        ("She won a silver medal at the 2008 Olympics.", "She lives in London with her husband.", None),
    ],
)
def test_another_word_of_the_claims_kind_in_its_place_is_a_swap(
    claim: str, evidence: str, swap: tuple[str, str] | None
) -> None:
    assert checks.kind_swap(claim, evidence) == swap


def test_a_curly_apostrophe_negates() -> None:
    assert checks.negation_count("Profits didn\u2019t fall.") == checks.negation_count("Profits didn't fall.") == 1


def test_a_direction_word_names_what_it_moves() -> None:
    # The "falls" of "the risk of falls" names what is counted; it moves nothing.
    assert checks._directions("Vitamin D lowers the risk of falls.") == ((-1, "lowers", frozenset({"risk"}), True),)
    assert checks._directions("Blood pressure rose sharply after the treatment.") == (
        (1, "rose", frozenset({"blood", "pressure"}), False),
    )


@pytest.mark.parametrize(
    ("claim", "evidence", "conflict", "missing"),
    [
        # A bound is stated by any value within it, and at odds with a value outside it.
        (
            "Brazil has more than 200 million inhabitants.",
            "Brazil has a population of over 203 million people.",
            None,
            [],
        ),
        (
            "Brazil has a population of about 120 million people.",
            "Brazil has a population of over 203 million people.",
            ("120 million people", "203 million people"),
            ["120 million people"],
        ),
        (
            "The film grossed less than $100 million worldwide.",
            "The film grossed $412 million worldwide.",
            ("$100 million worldwide", "$412 million worldwide"),
            ["$100 million worldwide"],
        ),
        ("The film grossed less than $100 million.", "The film grossed $82 million.", None, []),
        # A rounded claim is at odds only with a value far from it.
        ("The tower is about 330 metres tall.", "The tower is 324 metres tall.", None, []),
        (
            "Humans emit around 29 billion tonnes of carbon dioxide a year.",
            "Burning fossil fuels produces around 21.3 billion tonnes of carbon dioxide a year.",
            None,
            ["29 billion tonnes"],
        ),
        # An exact value, as before.
        ("Water boils at 50 degrees.", "Water boils at 100 degrees.", ("50 degrees", "100 degrees"), ["50 degrees"]),
        # Two ratios are seldom of the same two things.
        (
            "Methane is a more potent greenhouse gas than CO2, but there is over 200 times more CO2 in the air.",
            "Methane is a strong greenhouse gas, 84 times more potent than CO2 over 20 years.",
            None,
            ["200 times"],
        ),
        # "no more than" is an upper bound, "not less than" a lower one.
        ("Turnout was no more than 40%.", "Turnout was 36%.", None, []),
        (
            "There were not less than 30 students.",
            "There were 25 students.",
            ("30 students", "25 students"),
            ["30 students"],
        ),
        # A value of another order says nothing of a bound.
        ("The firm has fewer than 1,000 employees.", "The firm works in 40 countries.", None, ["1000 employees"]),
    ],
)
def test_a_bounded_or_rounded_value_is_read_as_what_it_allows(
    claim: str, evidence: str, conflict: tuple[str, str] | None, missing: list[str]
) -> None:
    found = checks.conflicting_quantity(claim, evidence)
    assert ((found[0].raw, found[1].raw) if found else None) == conflict
    assert [q.raw for q in checks.missing_numbers(claim, evidence)] == missing


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


@pytest.mark.parametrize(
    ("claim", "sentence", "denied"),
    [
        (
            "Vitamin D supplementation reduces the risk of fractures in older adults.",
            "Results: Vitamin D supplementation did not reduce the risk of fractures compared with placebo.",
            "reduce",
        ),
        (
            "Hydroxychloroquine reduces mortality in hospitalized COVID-19 patients.",
            "Hydroxychloroquine did not significantly reduce 28-day mortality in hospitalized patients.",
            "reduce",
        ),
        # A structured abstract's label names nothing else ("Results" is no other name than "COVID-19").
        (
            "Hydroxychloroquine reduces 28-day mortality in patients hospitalised with COVID-19.",
            "Results: Hydroxychloroquine did not reduce 28-day mortality (27.0% vs 25.0%).",
            "reduce",
        ),
        ("Aspirin relieves migraine pain.", "Aspirin has not been shown to relieve migraine pain.", "relieve"),
        ("Smoking causes lung cancer.", "Smoking doesn’t cause lung cancer.", "cause"),
        ("He is the father of Anna Berg.", "He is not the father of Anna Berg.", "father"),
        ("Obama was born in Hawaii.", "Obama was not born in Hawaii.", "born"),
        # Not governed by the negation, or said of something else.
        (
            "The drug reduces hospital admissions.",
            "The drug not only reduced hospital admissions but also deaths.",
            None,
        ),
        ("Exercise lowers blood pressure.", "Patients who did not exercise had higher blood pressure.", None),
        ("Obama was born in Hawaii.", "Obama was not born in Kenya.", None),
        ("Smoking causes lung cancer.", "Smoking causes lung cancer, not heart disease.", None),
        ("There is no evidence that zinc shortens colds.", "Zinc does not shorten colds.", None),  # a negated claim
        # Also stated: "did not reduce mortality but reduced admissions" says the claim.
        (
            "The drug reduces hospital admissions.",
            "The drug did not reduce mortality but reduced hospital admissions.",
            None,
        ),
        # A bound, which the quantity checks read.
        ("Brazil has more than 200 million people.", "Brazil has no more than 150 million people.", None),
        # Found in review: another subject, instance or group; a time, a hedge, a lack of the subject.
        ("Vitamin D reduces the risk of fractures.", "Placebo did not reduce the risk of fractures.", None),
        ("Nicotine patches increase quit rates.", "Placebo patches did not increase quit rates.", None),
        ("He won the gold medal in the 100 metres.", "He did not win the gold medal in the 200 metres.", None),
        ("She won the Best Actress award in 2010.", "She did not win the Best Actress award in 2012.", None),
        ("The film won the Oscar for Best Picture.", "The film did not win the Oscar for Best Director.", None),
        (
            "Nicotine patches increase quit rates among adults.",
            "Nicotine patches did not increase quit rates among adolescents.",
            None,
        ),
        ("The team won the league title.", "The team did not win the league title until 1990.", None),
        ("Statins reduce the risk of stroke.", "Statins may not reduce the risk of stroke in the elderly.", None),
        ("Smoking increases the risk of stroke.", "Quitting smoking did not increase the risk of stroke.", None),
        ("Exercise reduces pain.", "Exercise does not simply reduce pain; it changes how pain is felt.", None),
        ("Aspirin reduces the risk of colorectal cancer.", "Aspirin did not reduce the risk of falls.", None),
        ("Exercise lowers blood pressure.", "Patients who did not exercise did not lower their blood pressure.", None),
        ("Smoking causes lung cancer.", "It is not true that smoking does not cause lung cancer.", None),
        ("Exercise reduces the risk of falls.", "In the trial, placebo did not reduce the risk of falls.", None),
        ("The drug reduces pain.", "The drug did not reduce pain in week 1, but it reduced pain by week 4.", None),
        ("The drug reduces pain.", "In the subgroup over 75, the drug did not reduce pain.", None),
        # Irregular and short past forms are the verb's.
        ("Brazil won the 2014 World Cup.", "Brazil did not win the 2014 World Cup.", "win"),
        ("The company filed for bankruptcy in 2019.", "The company did not file for bankruptcy in 2019.", "file"),
        # Too little of the rest of the claim.
        ("Vitamin D reduces fractures in older women living at home.", "Calcium did not reduce fractures.", None),
        # A statistic's abbreviation ("HR", "CI") names nothing: the sentence is still about the claim.
        (
            "Daily aspirin reduces the risk of dementia.",
            "Aspirin did not reduce the risk of dementia, HR 0.96, 95% CI 0.80-1.15.",
            "reduce",
        ),
    ],
)
def test_a_sentence_that_denies_the_claims_word_is_a_denial(claim: str, sentence: str, denied: str | None) -> None:
    assert checks.denial(claim, sentence) == denied
    assert checks.denies(claim, f"Methods: We followed 400 adults. {sentence}") is (denied is not None)


ACUPUNCTURE = "Acupuncture relieves chronic back pain better than sham acupuncture."


@pytest.mark.parametrize(
    ("claim", "sentence", "word"),
    [
        (
            "Mindfulness training improves working memory in adolescents.",
            "Working memory scores did not differ between groups.",
            "improves",
        ),
        (
            ACUPUNCTURE,
            "Results: Pain relief with real acupuncture was no greater than with sham acupuncture.",
            "relieves",
        ),
        (
            "Zinc shortens the duration of the common cold.",
            "There was no significant difference in the duration of colds between the zinc and placebo groups.",
            "shortens",
        ),
        (
            "Statins reduce the risk of dementia.",
            "In this cohort, statin use was not associated with the risk of dementia (HR 1.01).",
            "reduce",
        ),
        (
            "Exercise lowers blood pressure in older adults.",
            "Exercise failed to lower blood pressure in older adults.",
            "lowers",
        ),
        # A comparison at baseline, another outcome's null result, or another comparison.
        (
            "Mindfulness training improves working memory in adolescents.",
            "Working memory scores did not differ between groups at baseline.",
            None,
        ),
        (
            "Drug X improves pain in arthritis.",
            "Drug X improved pain, but function did not differ between groups.",
            None,
        ),
        (
            "Drug X improves pain in arthritis.",
            "Pain scores were lower with drug X; function did not differ between groups.",
            None,
        ),
        (
            "Smoking increases the risk of lung cancer.",
            "There is no difference in lung cancer risk between filtered and unfiltered cigarettes.",
            None,
        ),
        ("Brazil has more than 200 million people.", "Brazil has no more than 150 million people.", None),
        ("Zinc has no effect on colds.", "There was no significant difference in the duration of colds.", None),
        # A claim of no better or hardly any effect: a null result agrees with it.
        (
            "Generic statins are as effective as branded statins at lowering cholesterol.",
            "Cholesterol did not differ between the generic and branded statin groups.",
            None,
        ),
        # Before the intervention began, in a subgroup, of an add-on, in the control arm, by subgroup.
        (
            "The vaccination campaign reduced measles cases.",
            "Measles cases were similar in both regions before the vaccination campaign began.",
            None,
        ),
        (
            "Aspirin reduces the risk of colorectal cancer.",
            "In the subgroup of women, aspirin did not reduce the risk of colorectal cancer.",
            None,
        ),
        (
            "Metformin lowers blood glucose.",
            "Adding sitagliptin to metformin did not lower blood glucose further.",
            None,
        ),
        (
            "Exercise improves depressive symptoms.",
            "Depressive symptoms did not change in the control group, while exercise improved them.",
            None,
        ),
        (
            "Exercise improves depressive symptoms.",
            "Exercise improved depressive symptoms; the effect did not differ by age group.",
            None,
        ),
        # Two forms of the claim's subject compared, not the subject against nothing.
        (
            "Exercise reduces depressive symptoms.",
            "Depressive symptoms did not differ between aerobic and resistance exercise.",
            None,
        ),
        # Another outcome of the same kind ("rectal cancer" is not "colon cancer").
        (
            "Fibre intake reduces the risk of colon cancer.",
            "Fibre intake was not associated with the risk of rectal cancer.",
            None,
        ),
        # The direction stated elsewhere in the sentence: a mixed result, not a null one.
        (
            "The drug reduces deaths in heart failure.",
            "All-cause deaths did not differ between groups, although cardiac deaths were reduced with the drug.",
            None,
        ),
    ],
)
def test_a_study_that_found_no_effect_says_otherwise_than_a_claimed_effect(
    claim: str, sentence: str, word: str | None
) -> None:
    assert checks.says_otherwise(claim, sentence) == word


@pytest.mark.parametrize(
    ("claim", "sentence", "word"),
    [
        # A direction word qualifies the outcome; a measure ("risk", "incidence") is not the outcome.
        (
            "Breastfeeding is associated with higher IQ in children.",
            "Breastfeeding was not associated with IQ in children after adjustment for maternal intelligence.",
            "associated",
        ),
        (
            "Vitamin D supplementation reduces the risk of fractures in older adults.",
            "Vitamin D supplementation did not significantly change fracture incidence compared with placebo.",
            "reduces",
        ),
        # A study's abbreviation of the subject names it; another abbreviation does not.
        (
            "Cognitive behavioural therapy improves insomnia symptoms.",
            "There was no significant difference in insomnia symptoms between the CBT and control groups.",
            "improves",
        ),
        (
            "Cognitive behavioural therapy improves insomnia symptoms.",
            "There was no significant difference in insomnia symptoms between the IPT and control groups.",
            None,
        ),
        # "not effective in shortening" is one null phrase; a noun of change is the subject's, the verb
        # after it the effect.
        (
            "Zinc lozenges shorten the duration of the common cold.",
            "Zinc lozenges were not effective in shortening the duration of the common cold.",
            "shorten",
        ),
        (
            "Sodium reduction lowers blood pressure in normotensive adults.",
            "Sodium reduction failed to lower blood pressure in normotensive adults.",
            "lowers",
        ),
        (
            "Sodium reduction lowers blood pressure.",
            "In this trial of sodium reduction, blood pressure did not differ between groups.",
            "lowers",
        ),
        # More ways to say it: no advantage over the control, "no more effective ... in reducing" (the
        # gerund is the null phrase's), "with and without" the subject.
        (
            "Drug X improves pain relief compared with placebo.",
            "Drug X offered no significant advantage over placebo for pain relief.",
            "improves",
        ),
        (
            "Acupuncture reduced the frequency of migraine attacks more than sham acupuncture did.",
            "Conclusions: Traditional acupuncture was no more effective than sham acupuncture in reducing migraine "
            "frequency.",
            "reduced",
        ),
        (
            "Installing nest boxes increased the breeding density of tree sparrows on farms.",
            "Breeding density of tree sparrows did not differ between farms with and without boxes.",
            "increased",
        ),
        # Levels of one exposure compared are the claim's comparison, not two forms of its subject.
        (
            "Physical activity reduces depression.",
            "Depression did not differ between high and low physical activity groups.",
            "reduces",
        ),
        # Before the intervention, in a subgroup, of an add-on, by subgroup, in the control arm.
        (
            "Breastfeeding reduces ear infections in infants.",
            "Ear infections were similar between groups before the breastfeeding promotion began.",
            None,
        ),
        (
            "Intensive glucose control reduces cardiovascular events.",
            "In the subgroup of patients with prior cardiovascular disease, there was no significant difference "
            "in cardiovascular events between groups.",
            None,
        ),
        (
            "Ibuprofen reduces fever in children.",
            "Ibuprofen plus paracetamol was no better than ibuprofen alone for fever in children.",
            None,
        ),
        (
            "Exercise improves depressive symptoms.",
            "In the exercise trial, depressive symptoms did not differ by age group.",
            None,
        ),
        (
            "Exercise improves mood.",
            "Mood scores rose in the exercise group, whereas mood did not change in the control group.",
            None,
        ),
        # A study's bracketed statistics ("HR 0.96, 95% CI ...", "per additional cup") name nothing and
        # add nothing; an abbreviated outcome ("AF") is the outcome.
        (
            "Daily low-dose aspirin reduced the risk of dementia in healthy older adults.",
            "Low-dose aspirin had no significant effect on the risk of dementia (HR 0.96, 95% CI 0.80-1.15) or on "
            "cognitive decline.",
            "reduced",
        ),
        (
            "Daily low-dose aspirin reduced the risk of dementia in healthy older adults.",
            "Low-dose aspirin had no significant effect on the risk of stroke (HR 0.96, 95% CI 0.80-1.15), but it "
            "reduced the risk of dementia.",
            None,
        ),
        (
            "Habitual coffee consumption increases the risk of developing atrial fibrillation.",
            "After adjustment, coffee consumption was not associated with AF risk (HR per additional cup/day 0.99, "
            "95% CI 0.96-1.02).",
            "increases",
        ),
        # "no benefit in reducing": the gerund belongs to the null phrase; more null phrases.
        (
            "Vitamin C supplementation reduces the incidence of colds.",
            "Vitamin C supplementation provided no benefit in reducing the incidence of colds.",
            "reduces",
        ),
        (
            "Ivermectin reduced hospital admissions in patients with COVID-19.",
            "Ivermectin was ineffective at reducing hospital admissions in patients with COVID-19.",
            "reduced",
        ),
        (
            "Menu calorie labelling lowered the calories customers purchased.",
            "Menu calorie labelling was not followed by a meaningful change in calories purchased.",
            "lowered",
        ),
        (
            "Studies have linked the MMR vaccine to autism in children.",
            "There is no evidence of any link between the MMR vaccine and autism; large studies of children found no "
            "such risk.",
            "linked",
        ),
        # The words before the null phrase name the claim's treatment in other words; not a control, not
        # another named treatment.
        (
            "Omega-3 fatty acid supplements reduced depressive symptoms in adults with major depression.",
            "In the trial, adjunctive omega-3 supplementation did not improve depressive symptoms in adults with major "
            "depression.",
            "reduced",
        ),
        (
            "Omega-3 fatty acid supplements reduced depressive symptoms in adults with major depression.",
            "Placebo supplements did not improve depressive symptoms in adults with major depression.",
            None,
        ),
        (
            "Omega-3 fatty acid supplements reduced depressive symptoms in adults with major depression.",
            "Vitamin D supplements did not improve depressive symptoms in adults with major depression.",
            None,
        ),
        # The claim's word or its direction stated beside the null result.
        (
            "Coffee is associated with lower risk of diabetes.",
            "Coffee was associated with lower risk of diabetes, but tea was not associated with the risk of diabetes.",
            None,
        ),
        (
            "Knee braces reduce pain in osteoarthritis.",
            "Braces lowered osteoarthritis pain, and there was no significant difference in pain between brace types.",
            None,
        ),
    ],
)
def test_a_null_result_must_be_the_claimed_effects(claim: str, sentence: str, word: str | None) -> None:
    assert checks.null_result(claim, sentence) == word


COPD_CLAIM = "A twelve-week home exercise programme increased six-minute walk distance in people with COPD."
COPD_RESULT = (
    "Results: At 12 weeks, six-minute walk distance increased by 41 metres in the home exercise group versus "
    "6 metres with usual care (difference 35 m, 95% CI 20 to 50; p<0.001)."
)


@pytest.mark.parametrize(
    ("claim", "sentence", "names"),
    [
        # A section label ("Results") and a statistic ("CI") are no one in the place of the claim's "COPD".
        (COPD_CLAIM, COPD_RESULT, None),
        # Another person is, with a label and statistics around.
        (
            "The trial was led by Anna Berg in Oslo.",
            "Results: The trial was led by Maria Lund in Oslo (HR 0.8, 95% CI 0.7-0.9).",
            ("Anna Berg", "Maria Lund"),
        ),
    ],
)
def test_a_label_or_a_statistic_is_no_substituted_name(
    claim: str, sentence: str, names: tuple[str, str] | None
) -> None:
    assert checks.substituted_entity(claim, sentence) == names


EVEREST = (
    "The first recorded ascent of Everest was made on 29 May 1953 by Edmund Hillary of New Zealand and "
    "Tenzing Norgay, a Sherpa from Nepal, as part of a British expedition led by John Hunt."
)


@pytest.mark.parametrize(
    ("claim", "sentence", "names"),
    [
        # The claim's doer is on the page, but as a climber: the expedition was led by another.
        (
            "The 1953 ascent was made by a British expedition led by Edmund Hillary.",
            EVEREST,
            ("Edmund Hillary", "John Hunt"),
        ),
        ("The 1953 ascent was made by a British expedition led by John Hunt.", EVEREST, None),
        # One doer of several, or named after a description of them, is the claim's.
        ("Apple was founded by Steve Jobs.", "Apple was founded by Steve Jobs, Steve Wozniak and Ronald Wayne.", None),
        (
            "I Kissed a Girl was recorded by Katy Perry.",
            '"I Kissed a Girl" is a song recorded by American singer Katy Perry for her second album, One of the Boys.',
            None,
        ),
        # Another act's doer is none of the claim's.
        ("The expedition was led by Edmund Hillary.", "Edmund Hillary was knighted by Queen Elizabeth II.", None),
    ],
)
def test_another_doer_of_the_same_act_is_a_substituted_name(
    claim: str, sentence: str, names: tuple[str, str] | None
) -> None:
    assert checks.substituted_entity(claim, sentence) == names


PRODUCTION = "Production took place in Sydney, Canberra, Kununurra, and Bowen."


@pytest.mark.parametrize(
    ("claim", "sentence", "names"),
    [
        # Sydney stands in a list beside the claim's Canberra, not in the place of its film "Australia".
        ("Canberra is the location where production of Australia (2008 film) took place.", PRODUCTION, None),
        # In the claim's own list, another name of the sentence's list stands in the place of one it lacks.
        (
            "It starred Brad Pitt and Kate Winslet.",
            "It stars Kate Winslet and Leonardo DiCaprio.",
            ("Brad Pitt", "Leonardo DiCaprio"),
        ),
        (
            "The American Civil War was fought between the East and the South.",
            "The North and South quickly raised volunteer and conscription armies that fought mostly in the South.",
            ("East", "North"),
        ),
        # A phrase and a subject after it are no list ("Born in New Orleans, Rice ...").
        (
            "Anne Rice was born in Fort Lauderdale.",
            "Born in New Orleans, Rice spent much of her early life there before moving to Texas.",
            ("Fort Lauderdale", "New Orleans"),
        ),
    ],
)
def test_a_name_listed_beside_one_of_the_claims_is_in_no_other_names_place(
    claim: str, sentence: str, names: tuple[str, str] | None
) -> None:
    assert checks.substituted_entity(claim, sentence) == names


@pytest.mark.parametrize(
    ("text", "a", "b", "listed"),
    [
        (PRODUCTION, "Sydney", "Canberra", True),
        (PRODUCTION, "Bowen", "Sydney", True),
        ("It starred Brad Pitt and Kate Winslet.", "Brad Pitt", "Kate Winslet", True),
        ("Born in New Orleans, Rice spent her early life there.", "New Orleans", "Rice", False),
        ("Sydney is large and Canberra is the capital.", "Sydney", "Canberra", False),
        ("Sydney, Canberra", "Sydney", "Perth", False),
    ],
)
def test_names_listed_together(text: str, a: str, b: str, listed: bool) -> None:
    assert checks._listed_together(text, a, b) is listed


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


def _check(verifier: Verifier, claim: str, *texts: str, title: str | None = None):  # type: ignore[no-untyped-def]
    facts = [Fact(t, source=f"fact:{i}", title=title) for i, t in enumerate(texts)]
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


DIABETES = (
    "Coffee and type 2 diabetes. In this cohort of 80,000 women, higher coffee consumption was associated with a "
    "lower risk of type 2 diabetes."
)
TRIAL = "Compared with placebo, the drug lowered systolic blood pressure by 12 mmHg in patients with hypertension."
BRAZIL = "Brazil is the largest country in South America, with a population of over 203 million people."


@pytest.mark.slow
@pytest.mark.parametrize(
    ("claim", "page", "label"),
    [
        # "higher coffee consumption ... lower risk": the "higher" moves the coffee, not the risk.
        ("Coffee consumption is associated with a lower risk of type 2 diabetes.", DIABETES, Label.supported),
        ("Coffee consumption increases the risk of type 2 diabetes.", DIABETES, Label.contradicted),
        ("The drug increased blood pressure in patients.", TRIAL, Label.contradicted),
        ("Brazil has more than 200 million inhabitants.", BRAZIL, Label.supported),
        ("Brazil has a population of about 120 million people.", BRAZIL, Label.contradicted),
    ],
)
def test_which_way_a_quantity_moves_and_where_a_bound_lies_decide(
    verifier: Verifier, claim: str, page: str, label: Label
) -> None:
    assert _check(verifier, claim, page).overall == label


@pytest.mark.slow
@pytest.mark.parametrize(
    ("claim", "page"),
    [
        # A study's question and a review's aim are not what they found.
        (
            "Mindfulness training improves working memory in adolescents.",
            "Does mindfulness training improve working memory in adolescents? We conducted a randomised trial in "
            "12 schools.",
        ),
        (
            "High salt intake raises blood pressure.",
            "This review evaluates the evidence that high salt intake raises blood pressure.",
        ),
        # Another word of the claim's kind in its place.
        (
            "Exercise reduces symptoms of anxiety.",
            "The meta-analysis found that exercise significantly reduced symptoms of depression compared with "
            "control conditions.",
        ),
        (
            "She won a silver medal at the 2008 Olympics.",
            "At the 2008 Olympics in Beijing she won the gold medal in the 200 metres.",
        ),
    ],
)
def test_a_question_a_supposition_or_a_swapped_word_is_not_support(verifier: Verifier, claim: str, page: str) -> None:
    assert _check(verifier, claim, page).overall == Label.not_found


@pytest.mark.slow
def test_a_failed_finding_in_a_structured_abstract_contradicts(verifier: Verifier) -> None:
    # The model reads the "Methods: ... Results: ... did not reduce ..." window as support (0.61).
    abstract = (
        "Background: Fractures are common in older adults. Methods: We randomised 2,000 adults aged over 70 to "
        "vitamin D or placebo. Results: Vitamin D supplementation did not reduce the risk of fractures compared "
        "with placebo (hazard ratio 1.02). Conclusion: Routine supplementation is not supported."
    )
    result = _check(verifier, "Vitamin D supplementation reduces the risk of fractures in older adults.", abstract)
    assert result.overall == Label.contradicted


@pytest.mark.slow
def test_a_null_result_in_a_structured_abstract_is_no_support(verifier: Verifier) -> None:
    # The model reads "Background: ..." joined with the null result as support (0.69).
    abstract = (
        "Background: Chronic back pain is common. Methods: We randomly assigned 640 participants to acupuncture "
        "or sham and followed them for two years. Results: Pain relief with real acupuncture was no greater "
        "than with sham acupuncture. Conclusions: Acupuncture was not superior to sham."
    )
    assert _check(verifier, ACUPUNCTURE, abstract).overall != Label.supported


@pytest.mark.slow
@pytest.mark.parametrize(
    ("claim", "page", "title", "label"),
    [
        # The null result names no subject; "between groups" on a page titled by it refers to it, as "It" does.
        (
            "Mindfulness training improves working memory in adolescents.",
            "We tested this in a randomised trial of 12 schools. Working memory scores did not differ between groups.",
            "Mindfulness in schools",
            Label.contradicted,
        ),
        # A sentence there that states no conflict is about nothing of the claim's.
        (
            "Drug X lowers blood pressure in adults with hypertension.",
            "We randomised 600 adults with hypertension to drug X or placebo. Adverse events did not differ between "
            "groups. Heart rate was similar between groups.",
            "Drug X in hypertension",
            Label.not_found,
        ),
    ],
)
def test_a_conflict_between_the_studys_groups_speaks_of_the_pages_subject(
    verifier: Verifier, claim: str, page: str, title: str, label: Label
) -> None:
    assert _check(verifier, claim, page, title=title).overall == label


def test_a_sentence_opening_with_it_states_another_year_of_the_name_it_stands_for() -> None:
    claim = "Charles Darwin published On the Origin of Species in 1871."
    sentence = "It was published on 24 November 1859 by John Murray in London."
    assert conflicts_of(claim, sentence)[1] is False  # alone, it says too little of the claim
    assert conflicts_of(claim, sentence, "Charles Darwin")[1] is True
    # Not for a name: the subject's other team is most likely another time.
    claim = "Todd Watson is the head coach of the Odessa Jackalopes in the North American Hockey League."
    sentence = "He previously coached in the Ontario Hockey League with the Saginaw Spirit."
    assert conflicts_of(claim, sentence, "Todd Watson")[2] is False


@pytest.mark.slow
def test_another_year_after_the_sentence_naming_the_subject_is_no_support(verifier: Verifier) -> None:
    page = (
        "On the Origin of Species is a work of scientific literature by Charles Darwin that is considered the "
        "foundation of evolutionary biology. It was published on 24 November 1859 by John Murray in London. "
        "Darwin's book introduced the theory that populations evolve over the course of generations through a "
        "process of natural selection. It presented a body of evidence that the diversity of life arose by "
        "common descent through a branching pattern of evolution."
    )
    claim = "Charles Darwin published On the Origin of Species in 1871."
    assert _check(verifier, claim, page, title="On the Origin of Species").overall != Label.supported


@pytest.mark.slow
def test_a_finding_that_belies_the_background_withholds_its_support(verifier: Verifier) -> None:
    # The model reads the background beside the aim as support (0.59) and the finding as its
    # contradiction (0.97); the classifier alone said supported.
    page = (
        "Postoperative delirium is common in older adults and is associated with poor outcomes. Earlier small "
        "trials suggested that perioperative melatonin may reduce the incidence of delirium in elderly surgical "
        "patients. To test this, we randomised 760 patients aged 70 years or older undergoing major elective "
        "non-cardiac surgery to 3 mg melatonin or placebo, given the evening before surgery and for 5 "
        "postoperative nights. Delirium, assessed twice daily with the Confusion Assessment Method, occurred in "
        "18.2% of the melatonin group and 19.0% of the placebo group (OR 0.95, 95% CI 0.66-1.36). Melatonin did "
        "not prevent postoperative delirium in this population."
    )
    claim = "Melatonin given around the time of surgery reduced postoperative delirium in elderly patients."
    title = (
        "Perioperative melatonin for the prevention of postoperative delirium in older surgical patients: a "
        "randomised placebo-controlled trial"
    )
    report = _check(verifier, claim, page, title=title)
    citation = report.citations[0]
    assert (citation.label, citation.reason) == (Label.not_found, "conflicting_evidence")
    assert citation.evidence_quote == "Melatonin did not prevent postoperative delirium in this population."


@pytest.mark.slow
def test_a_finding_in_the_other_direction_is_no_support(verifier: Verifier) -> None:
    page = (
        "Shifts in flowering phenology are among the most visible biological responses to climate change. Using "
        "42 years of weekly observations from permanent plots at a high-elevation field station, we related "
        "first flowering dates of 60 alpine plant species to spring temperature and snowmelt timing. Warmer "
        "springs and earlier snowmelt advanced first flowering by an average of 4.6 days per degree C. "
        "Early-flowering species responded most strongly. Advancing phenology could expose plants to a greater "
        "risk of frost damage and to mismatch with their pollinators."
    )
    claim = "Warmer spring temperatures delayed the flowering of alpine plants."
    title = "Four decades of flowering phenology in alpine plant communities"
    assert _check(verifier, claim, page, title=title).overall != Label.supported


CBT = (
    "Unlike some other talking treatments, CBT deals with your current problems, rather than focusing on issues "
    "from your past."
)


@pytest.mark.parametrize(
    ("claim", "sentence", "swapped"),
    [
        ("CBT mainly focuses on resolving issues from a person's past rather than their current problems.", CBT, True),
        ("CBT deals with your current problems rather than issues from the past.", CBT, False),
        ("Patients used the app instead of paper diaries.", "Patients used paper diaries instead of the app.", True),
        ("Patients used the app instead of paper diaries.", "Patients used the app instead of paper diaries.", False),
        # Nothing preferred in the evidence, or other things preferred: no swap.
        ("CBT focuses on the past rather than current problems.", "CBT focuses on current problems.", False),
        ("Cats prefer fish rather than meat.", "Dogs chase balls rather than sticks.", False),
    ],
)
def test_a_preference_put_the_other_way_round_is_a_role_swap(claim: str, sentence: str, swapped: bool) -> None:
    assert (checks.preferred_swap(claim, sentence) is not None) == swapped
    assert (checks.role_swap(claim, sentence) is not None) == swapped


SEA_LEVEL = (
    "The rate of rise is accelerating: it has more than doubled from 1.4 millimetres per year for most of the "
    "twentieth century to 3.6 millimetres per year from 2006 to 2015."
)


@pytest.mark.parametrize(
    ("claim", "sentence", "swap"),
    [
        ("The rate has slowed from 3.6 millimetres per year to 1.4 millimetres per year.", SEA_LEVEL, ("3.6", "1.4")),
        ("The rate rose from 1.4 millimetres per year to 3.6 millimetres per year.", SEA_LEVEL, None),
        ("Sales fell from $1,200 to $800.", "Sales rose from $800 to $1,200 in 2020.", ("$1200", "$800")),
        # Said both ways (two periods), or with other numbers: no swap.
        ("Sales fell from 1,200 to 800.", "Sales rose from 800 to 1,200, then fell from 1,200 to 800.", None),
        ("Sales fell from 1,200 to 800.", "Sales rose from 700 to 1,300.", None),
    ],
)
def test_a_change_stated_the_other_way_round_is_swapped(
    claim: str, sentence: str, swap: tuple[str, str] | None
) -> None:
    assert checks.swapped_change(claim, sentence) == swap


@pytest.mark.parametrize(
    ("claim", "sentence", "dates"),
    [
        (
            "William landed at Pevensey on 28 October 1066.",
            "William landed his invasion forces at Pevensey on 28 September 1066.",
            ("28 October 1066", "28 September 1066"),
        ),
        ("Apollo 11 landed on July 21, 1969.", "The Eagle landed on 20 July 1969.", ("July 21, 1969", "20 July 1969")),
        ("Apollo 11 landed on July 20, 1969.", "The Eagle landed on 20 July 1969.", None),
        # Another year is conflicting_year's; several dates are usually several events.
        ("The F-35 first flew on 15 December 2006.", "The F-35 first flew on 15 December 2007.", None),
        (
            "The treaty was signed on 4 March 1920.",
            "Talks opened on 1 February 1920 and the treaty was signed on 4 June 1920.",
            None,
        ),
    ],
)
def test_another_day_of_the_same_year_is_a_conflicting_date(
    claim: str, sentence: str, dates: tuple[str, str] | None
) -> None:
    assert checks.conflicting_date(claim, sentence) == dates


def test_a_conflicting_date_is_a_year_conflict_where_the_rest_matches() -> None:
    claim = "The F-35 Lightning II first flew on July 15, 2006."
    assert conflicts_of(claim, "The F-35 first flew on 15 December 2006.")[1]
    assert not conflicts_of(claim, "The F-35 first flew on 15 July 2006.")[1]


@pytest.mark.parametrize(
    ("name", "sentence", "named"),
    [
        ("William of Normandy", "William landed his invasion forces at Pevensey.", True),
        ("Catherine of Aragon", "Catherine was crowned in 1509.", True),
        # A title's head alone names nobody in particular.
        ("Duke of Wellington", "The duke won the battle.", False),
        ("Isle of Wight", "The isle lies off the south coast.", False),
    ],
)
def test_a_name_with_a_title_is_named_by_its_first_word(name: str, sentence: str, named: bool) -> None:
    assert checks.names_the_same(name, sentence) == named


def test_a_popular_belief_is_not_asserted() -> None:
    page = "There is no cure for hay fever. Some people believe that eating local honey helps with hay fever."
    assert checks.unasserted("Eating local honey helps with hay fever.", page.split(". ")[1])
    assert "honey" not in checks.asserted_text(page)
    # Experts' view stays asserted text.
    assert not checks.unasserted(
        "Exercise helps with depression.", "Many experts believe that exercise helps with depression."
    )


def test_a_null_result_reads_the_rest_of_the_claim_in_the_pages_title() -> None:
    # The results sentence leaves the study's population and treatment to the title.
    claim = (
        "The trial found that yoga significantly improved sleep quality in older women with insomnia after six months."
    )
    sentence = "Sleep quality scores did not differ between groups at six months (p=0.38)."
    title = "Yoga for insomnia in older women: a randomised controlled trial"
    assert checks.null_result(claim, sentence) is None
    assert checks.null_result(claim, sentence, topic=title) == "improved"
    assert checks.says_otherwise(claim, sentence, title) == "improved"


@pytest.mark.parametrize(
    ("claim", "sentence", "unasserted"),
    [
        (
            "The signatory countries have already cut methane emissions by 30%.",
            "The agreement, which aims to cut methane emissions by 30% by 2030, was signed by 100 countries in 2021.",
            True,
        ),
        (
            "Drug X is safe for long-term use in children.",
            "Larger trials are planned to assess long-term safety in children.",
            True,
        ),
        ("Drug X is safe for long-term use in children.", "The trial will assess long-term safety in children.", True),
        (
            "Drug X is safe for long-term use in children.",
            "The trial found that drug X was safe for long-term use in children.",
            False,
        ),
    ],
)
def test_a_programmes_aim_or_a_planned_study_is_not_asserted(claim: str, sentence: str, unasserted: bool) -> None:
    assert checks.unasserted(claim, sentence) == unasserted


@pytest.mark.parametrize(
    ("claim", "sentence", "topic", "word"),
    [
        (
            "Asthma can now be cured by using a preventer inhaler every day.",
            "There is currently no cure, but treatment can help control the symptoms.",
            "Asthma",
            "cured",
        ),
        ("Antibiotics cure viral infections.", "There is no cure for viral infections such as colds.", "", "cure"),
        ("Hepatitis C can be cured with tablets.", "There is currently no cure for hepatitis C.", "Hepatitis", "cured"),
        # Another thing without a cure, a claim that itself denies one, or no cure said: nothing.
        ("Hepatitis C can be cured with tablets.", "There is currently no cure for hepatitis B.", "Hepatitis", None),
        ("Antibiotics cure viral infections.", "There is no cure for diabetes.", "", None),
        ("There is no cure for asthma.", "There is currently no cure for asthma.", "Asthma", None),
        ("Asthma can be cured.", "Treatment can help control the symptoms.", "Asthma", None),
        ("Asthma can be cured.", "There is currently no cure, but treatment helps.", "Hay fever", None),
    ],
)
def test_a_page_saying_there_is_no_cure_denies_a_cure(claim: str, sentence: str, topic: str, word: str | None) -> None:
    assert checks.no_cure(claim, sentence, topic) == word


@pytest.mark.parametrize(
    ("claim", "sentence", "topic", "word"),
    [
        (
            "Vertically migrating fish species ingested microplastics much more frequently than non-migratory species.",
            "Ingestion frequency did not differ between species that migrate vertically and non-migratory species.",
            "Microplastic ingestion by mesopelagic fishes",
            "more",
        ),
        (
            "Drug A lowered blood pressure more than drug B.",
            "Blood pressure reductions did not differ between drug A and drug B.",
            "",
            "more",
        ),
        # Another outcome, a baseline comparison, the sentence's own comparison, or a claim of no difference.
        (
            "Women were more likely than men to report pain.",
            "Heart rate did not differ between men and women.",
            "",
            None,
        ),
        (
            "Drug A lowered blood pressure more than drug B.",
            "Blood pressure did not differ between drug A and drug B at baseline.",
            "",
            None,
        ),
        (
            "Drug A lowered blood pressure more than drug B.",
            "Heart rate did not differ, but drug A lowered blood pressure more than drug B.",
            "",
            None,
        ),
        (
            "Drug A was as effective as drug B at lowering blood pressure.",
            "Blood pressure reductions did not differ between drug A and drug B.",
            "",
            None,
        ),
    ],
)
def test_no_difference_between_what_the_claim_compares_says_otherwise(
    claim: str, sentence: str, topic: str, word: str | None
) -> None:
    assert checks.no_difference(claim, sentence, topic) == word
    # null_result may name the claim's verb first ("lowered"): either way, the sentence says otherwise.
    assert (checks.says_otherwise(claim, sentence, topic) is not None) == (word is not None)
