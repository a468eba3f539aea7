"""WordNet rewordings for training (training.synonyms): plain senses only, labels that hold."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from guardrail.judges import _checks as checks

# A few synsets in WordNet 3.0's database format (wndb(5WN)): offsets are the byte-free keys the
# reader matches, lemma counts are hex, sense keys' "%1" is a noun, "%2" a verb, "%3" an adjective.
INDEX = {
    "noun": [
        "author n 1 1 @ 1 1 00000001",
        "writer n 2 1 @ 2 1 00000001 00000002",
        "movie n 1 1 @ 1 1 00000003",
        "film n 2 1 @ 2 1 00000003 00000004",
        "director n 3 1 @ 3 1 00000005 00000006 00000007",
        "manager n 1 1 @ 1 1 00000005",
        "record n 1 1 @ 1 1 00000008",
        "disc n 1 1 @ 1 1 00000008",
        "histrion n 1 1 @ 1 0 00000009",
        "actor n 1 1 @ 1 1 00000009",
    ],
    "verb": ["record v 1 1 @ 1 1 00000010", "enter v 1 1 @ 1 1 00000010"],
    "adj": ["large a 1 1 & 1 1 00000011", "big a 1 1 & 1 1 00000011", "after a 1 1 & 1 1 00000012"],
    "adv": ["subsequently r 1 0 1 1 00000013"],
}
DATA = {
    "noun": [
        "00000001 10 n 02 writer 0 author 0 000 | a person who writes",
        "00000002 10 n 01 writer 1 000 | someone who writes a letter",
        "00000003 10 n 02 movie 0 film 0 000 | a motion picture",
        "00000004 06 n 01 film 1 000 | a thin coating",
        "00000005 18 n 02 manager 0 director 0 000 | someone who manages",
        "00000008 06 n 02 record 0 disc 0 000 | a sound recording",
        "00000009 18 n 02 actor 0 histrion 0 000 | a theatrical performer",
    ],
    "verb": ["00000010 32 v 02 record 0 enter 0 000 | make a record of"],
    "adj": ["00000011 00 a 02 large 0 big 0 000 | above average in size", "00000012 00 a 01 after 0 000 | later"],
    "adv": ["00000013 02 r 01 subsequently 0 000 | happening at a later time"],
}
COUNTS = [
    "writer%1:18:00:: 1 40",
    "author%1:18:00:: 1 30",
    "movie%1:10:00:: 1 20",
    "film%1:10:00:: 1 25",
    "director%1:18:00:: 1 50",
    "manager%1:18:00:: 1 40",
    "record%1:10:00:: 1 30",
    "record%2:32:00:: 1 30",  # as often a verb as a noun: no plain part of speech
    "disc%1:06:00:: 1 9",
    "actor%1:18:00:: 1 20",  # "histrion" never tagged: nobody says it
    "large%3:00:00:: 1 60",
    "big%3:00:00:: 1 70",
    "after%3:00:00:: 1 9",
]


@pytest.fixture
def wordnet(tmp_path: Path) -> Path:
    header = "  1 This software and database is being provided to you, the LICENSEE, by\n"
    for pos, lines in INDEX.items():
        (tmp_path / f"index.{pos}").write_text(header + "\n".join(lines) + "\n", encoding="latin-1")
        (tmp_path / f"data.{pos}").write_text(header + "\n".join(DATA[pos]) + "\n", encoding="latin-1")
    (tmp_path / "cntlist.rev").write_text("\n".join(COUNTS) + "\n", encoding="latin-1")
    (tmp_path / "verb.exc").write_text("wrote write\n", encoding="latin-1")
    (tmp_path / "noun.exc").write_text("", encoding="latin-1")
    return tmp_path


def test_a_word_takes_a_synonym_only_where_its_sense_is_plain(wordnet: Path) -> None:
    from training import synonyms

    thesaurus = synonyms.load(wordnet)
    assert thesaurus.synonym("author") == "writer"
    assert thesaurus.synonym("writer") == "author"  # its first sense is the shared one
    assert thesaurus.synonym("film") == "movie"
    assert thesaurus.synonym("large") == "big"
    assert thesaurus.synonym("writers") == "authors"  # a regular plural keeps its ending
    assert thesaurus.synonym("director") is None  # three senses: "manager" is another's
    assert thesaurus.synonym("manager") is None  # its synonym has too many senses
    assert thesaurus.synonym("record") is None  # a noun as often as a verb
    assert thesaurus.synonym("actor") is None  # "histrion" is never used
    assert thesaurus.synonym("subsequently") is None  # a synset with no other word


def test_reword_replaces_shared_words_and_keeps_what_the_claim_says(wordnet: Path) -> None:
    from training import synonyms

    thesaurus = synonyms.load(wordnet)
    evidence = "Titanic is a large film by an author and director named James Cameron."
    claim = "Titanic is a large film by an author named James Cameron."
    seen = {synonyms.reword(claim, evidence, thesaurus, random.Random(seed)) for seed in range(12)}
    assert seen == {
        "Titanic is a big movie by an author named James Cameron.",
        "Titanic is a big film by a writer named James Cameron.",
        "Titanic is a large movie by a writer named James Cameron.",
    }  # two words at most, the article goes with its new word
    for reworded in seen:
        assert reworded is not None
        assert checks.missing_entities(reworded, evidence) == []  # names and numbers kept
        assert checks.overlap(reworded, evidence) < checks.overlap(claim, evidence)
    # Words the evidence does not share stay, and so do words that steer the meaning.
    assert synonyms.reword("A large film.", "It is a play.", thesaurus, random.Random(0)) is None
    assert synonyms.reword("It came after.", "It came after.", thesaurus, random.Random(0)) is None


def test_synonym_pairs_make_reworded_support_and_reworded_contradiction_in_halves(wordnet: Path) -> None:
    from training import contrastive, synonyms

    thesaurus = synonyms.load(wordnet)
    makers = {"Titanic": "James Cameron", "Jaws": "Steven Spielberg", "Heat": "Michael Mann"}
    page = [f"{maker} was born in Ohio." for maker in makers.values()]
    sources = [
        contrastive.Source(
            f"{film} is a large film by {maker}.", f"{film} is a large film by {maker}.", film, "test", page
        )
        for film, maker in makers.items()
    ]
    sources.append(contrastive.Source("Cats is a play.", "Cats is a play.", "Cats", "test", []))
    pairs = contrastive.synonym_pairs(sources, random.Random(0), 4, thesaurus)
    kinds = [p.kind for p in pairs]
    assert kinds.count("synonym_reworded") == kinds.count("synonym_reworded_edited") == 2
    for pair in pairs:
        assert "large film" not in pair.claim  # every claim is reworded
        if pair.kind == "synonym_reworded":
            assert pair.label == contrastive.ENT
            assert checks.missing_entities(pair.claim, pair.evidence) == []
        else:
            assert pair.label == contrastive.CON
            edited = checks.missing_entities(pair.claim, pair.evidence) or checks.negation_count(pair.claim)
            assert edited, pair  # a name changed or the claim denied
    assert contrastive.synonym_pairs(sources, random.Random(0), 0, thesaurus) == []
    assert not any("Cats" in p.claim for p in contrastive.synonym_pairs(sources, random.Random(0), 100, thesaurus))


def test_training_with_synonym_pairs_needs_wordnet_and_a_count(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from training import train

    for extra, said in (
        (["--synonym-pairs", "-2"], "--synonym-pairs must be 0 or more"),
        (["--synonym-pairs", "10", "--wordnet", str(tmp_path)], f"no index.noun in {tmp_path}"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            train.main(["--snli", "unused", "--stages", "3", *extra])
        assert exit_info.value.code == 2
        assert said in capsys.readouterr().err
