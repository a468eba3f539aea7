"""Label-keeping rewordings of a claim with WordNet synonyms (a training-time input only).

The judge's model reads shared words as support (``bench/probe_readings.py`` on the fifth probe:
right claims reworded as a person would word them read a median highest entailment of 0.45, wrong
claims that keep the page's words 0.66). :func:`reword` makes pairs that teach the other side: the
claim with some of the words it shares with its evidence replaced by synonyms, still entailed.

Synonyms come from WordNet 3.0's database files (Princeton's WordNet licence; Debian's
``wordnet-base`` puts them in ``/usr/share/wordnet``), read here without a WordNet library. A noun,
adjective or adverb is replaced only where its sense is plain: at least 3 in 4 of its uses in
WordNet's sense-tagged corpus are of that part of speech, it has at most two senses, and its
synonym is the first other word of its most frequent synset, which is the synonym's most frequent
synset too and passes the same tests ("writer" -> "author"). Nothing here runs in the guard.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

WORDNET_DIR = Path("/usr/share/wordnet")
"""Where Debian's ``wordnet-base`` installs the database files."""

_POS = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
_REPLACED = ("noun", "adj", "adv")
"""Parts of speech whose words are replaced: a verb's synonym changed the meaning too often in a
look at 40 pairs ("discovered" -> "detected", "eating" -> "feeding", "recognized" -> "accepted")."""
_SENSES = 2
_WORD = re.compile(r"\b[a-z]{4,}\b")
# Words whose replacement changes what a claim says or how it is read: negations, quantities,
# directions, and function words that WordNet lists as nouns, adjectives or adverbs.
# fmt: off
_KEEP = frozenset({
    "about", "above", "after", "again", "against", "almost", "also", "always", "among", "another", "around",
    "away", "back", "before", "behind", "below", "between", "both", "cannot", "could", "decrease",
    "decreases", "does", "down", "during", "each", "either", "ever", "every", "fall", "falls", "fewer",
    "first", "from", "given", "granted", "have", "here", "high", "higher", "increase", "increases", "into",
    "last", "least", "less", "like", "lower", "many", "more", "most", "much", "must", "near", "neither",
    "never", "next", "none", "nothing", "only", "other", "over", "rise", "rises", "same", "should", "since",
    "some", "still", "such", "than", "that", "their", "them", "then", "there", "these", "they", "this",
    "those", "though", "through", "under", "until", "upon", "very", "were", "what", "when", "where", "which",
    "while", "whom", "will", "with", "within", "without", "would", "year", "years"
})
# fmt: on


@dataclass(frozen=True)
class Thesaurus:
    """Per lowercase word, the one synonym :func:`load` found for it."""

    synonyms: dict[str, str]

    def synonym(self, word: str) -> str | None:
        """The synonym of ``word`` (lowercase), or None where its sense is not plain."""
        return self.synonyms.get(word)


def _index(folder: Path, pos: str) -> dict[str, list[str]]:
    """Per lemma, its synset offsets in order of frequency (``index.<pos>``)."""
    entries: dict[str, list[str]] = {}
    for line in (folder / f"index.{pos}").read_text(encoding="latin-1").splitlines():
        if not line or line.startswith(" "):
            continue  # the licence header
        fields = line.split()
        lemma, synset_count, pointer_count = fields[0], int(fields[2]), int(fields[3])
        offsets = fields[6 + pointer_count :]
        entries[lemma] = offsets[:synset_count]
    return entries


def _lemmas(folder: Path, pos: str, offsets: set[str]) -> dict[str, list[str]]:
    """The lemmas of each synset in ``offsets`` (``data.<pos>``), in WordNet's order."""
    found: dict[str, list[str]] = {}
    for line in (folder / f"data.{pos}").read_text(encoding="latin-1").splitlines():
        offset = line[:8]
        if offset not in offsets:
            continue
        fields = line.split()
        count = int(fields[3], 16)
        words = fields[4 : 4 + 2 * count : 2]
        found[offset] = [re.sub(r"\(.*\)$", "", w).lower() for w in words]
    return found


def _tag_counts(folder: Path) -> dict[tuple[str, str], int]:
    """How often each (lemma, part of speech) was tagged in WordNet's sense-tagged corpus (``cntlist.rev``)."""
    kinds = {"1": "noun", "2": "verb", "3": "adj", "4": "adv", "5": "adj"}
    counts: dict[tuple[str, str], int] = {}
    for line in (folder / "cntlist.rev").read_text(encoding="latin-1").splitlines():
        key, _, count = line.split()
        lemma, _, rest = key.partition("%")
        pos = kinds.get(rest[:1])
        if pos is not None:
            counts[(lemma, pos)] = counts.get((lemma, pos), 0) + int(count)
    return counts


def _irregular_nouns(folder: Path) -> set[str]:
    """Nouns with irregular plurals (``noun.exc``): never given a regular -s here."""
    lines = (folder / "noun.exc").read_text(encoding="latin-1").splitlines()
    return {base for line in lines for base in line.split()[1:]}


def _plural(form: str, lemmas: dict[str, str], irregular: set[str]) -> str | None:
    """The plural of the synonym of the noun whose regular plural ``form`` is (``lemmas``: noun ->
    synonym), where both nouns take a plain -s."""
    base = form[:-1]
    synonym = lemmas.get(base)
    if not form.endswith("s") or synonym is None or base in irregular or synonym in irregular:
        return None
    return None if synonym[-1] in "sxyhe" else synonym + "s"  # endings whose plural may not be a plain -s


def _plain_in(word: str, pos: str, tagged: dict[tuple[str, str], int]) -> bool:
    """Whether ``pos`` is ``word``'s plain part of speech: at least 3 of its tagged uses and 3 in 4."""
    here = tagged.get((word, pos), 0)
    return here >= 3 and here >= 0.75 * sum(tagged.get((word, other), 0) for other in _POS)


def load(folder: Path = WORDNET_DIR) -> Thesaurus:
    """Read WordNet's database in ``folder`` into one plain-sense synonym per noun, adjective and
    adverb (and per regular plural)."""
    indexes = {name: _index(folder, name) for name in _REPLACED}
    tagged = _tag_counts(folder)
    irregular = _irregular_nouns(folder)
    synonyms: dict[str, str] = {}
    nouns: dict[str, str] = {}
    for name in _REPLACED:
        entries = indexes[name]
        # A word of many senses ("director", "model") took the synonym of a sense other than the
        # claim's in a look at 40 pairs: at most two senses, each word of the pair.
        plain = {
            w: e[0] for w, e in entries.items() if w.isalpha() and 0 < len(e) <= _SENSES and _plain_in(w, name, tagged)
        }
        lemmas = _lemmas(folder, name, set(plain.values()))
        found: dict[str, str] = {}
        for word, offset in plain.items():
            for other in lemmas.get(offset, []):
                if other == word or not other.isalpha() or len(other) < 3:
                    continue
                # The synonym means that sense first of all too, and it is a word people use.
                senses = entries.get(other, [])
                if senses and senses[0] == offset and len(senses) <= _SENSES and _plain_in(other, name, tagged):
                    found[word] = other
                break  # the synset's first other lemma, or none
        synonyms.update(found)
        if name == "noun":
            nouns = found
    for word in indexes["noun"]:
        if word + "s" not in synonyms and (plural := _plural(word + "s", nouns, irregular)) is not None:
            synonyms[word + "s"] = plural
    return Thesaurus(synonyms)


def reword(claim: str, evidence: str, thesaurus: Thesaurus, rng: random.Random, most: int = 2) -> str | None:
    """``claim`` with up to ``most`` of the words it shares with ``evidence`` replaced by their
    synonyms (lowercase words of four letters or more, none of :data:`_KEEP`), or None where no
    such word has one. What the claim says is kept; how many words it shares is not."""
    shared = set(_WORD.findall(evidence.lower()))
    spots = [
        m
        for m in _WORD.finditer(claim)
        if m.group() in shared and m.group() not in _KEEP and thesaurus.synonym(m.group()) is not None
    ]
    if not spots:
        return None
    chosen = sorted(rng.sample(spots, min(most, len(spots))), key=lambda m: m.start())
    out, last = [], 0
    for m in chosen:
        before, word = claim[last : m.start()], str(thesaurus.synonym(m.group()))
        out += [with_article(before, word), word]
        last = m.end()
    return "".join([*out, claim[last:]])


_ARTICLE = re.compile(r"\b([Aa])n?\s$")


def with_article(before: str, word: str) -> str:
    """``before`` with the article it ends on, if any, made to agree with ``word``, which follows
    it ("an award" -> "a prize")."""
    new = "an" if word[:1].lower() in "aeiou" else "a"
    return _ARTICLE.sub(lambda a: (new.capitalize() if a.group(1) == "A" else new) + " ", before)


__all__ = ["WORDNET_DIR", "Thesaurus", "load", "reword", "with_article"]
