"""Deterministic checks for what small NLI models miss: numbers and units, years, negation, names.

Pure functions on text (no model), used by :mod:`guardrail.judges.local` on the evidence a
verdict rests on, and tested on their own.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from breame.spelling import get_american_spelling

from guardrail.core.extract.sentences import sentence_spans as core_sentence_spans
from guardrail.judges._lexicon import opposites

# -- sentences ---------------------------------------------------------------


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Spans ``(start, end)`` of the sentences of ``text``: ``text[start:end]`` is each sentence,
    stripped, so every sentence is an exact substring. Sentences are the package's one splitter's
    (:func:`guardrail.core.extract.sentences.sentence_spans`), and a line break always ends one
    here: a page's lines (list items, table rows, headings) are separate pieces of evidence."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        spans.extend((pos + s, pos + e) for s, e in core_sentence_spans(line))
        pos += len(line)
    return spans


# -- words -------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]+(?:'[a-z]+)?|\d+(?:[.,]\d+)*")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "by",
        "for",
        "with",
        "as",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "from",
        "his",
        "her",
        "their",
        "he",
        "she",
        "they",
        "them",
        "we",
        "you",
        "i",
        "which",
        "who",
        "whom",
        "whose",
        "has",
        "have",
        "had",
        "also",
        "not",
        "no",
        "but",
        "if",
        "then",
        "than",
        "so",
        "such",
        "into",
        "about",
        "over",
        "after",
        "before",
        "during",
        "while",
        "there",
        "here",
        "what",
        "when",
        "where",
        "how",
        "can",
        "could",
        "would",
        "should",
        "will",
        "may",
        "might",
        "must",
        "do",
        "does",
        "did",
        "just",
        "only",
        "very",
        "more",
        "most",
        "other",
        "some",
        "any",
        "all",
        "each",
        "both",
        "one",
        "s",
    ]
)


# The lexical checks run for every candidate of every request on the same few claim and page
# texts (a batch row's checks called _stem 780,000 times for 300 rows): the pure text -> value
# helpers below are memoised, bounded, so each text is read once while it is in use.
_TEXT_CACHE = 8192
"""Entries per memoised helper for short texts (claims, sentences, windows)..."""
_PAGE_CACHE = 256
"""...and for texts longer than ``_LONG_TEXT`` characters (whole passages, up to hundreds of KB)."""
_LONG_TEXT = 4096

_T = TypeVar("_T")


class _Memoised(Generic[_T]):
    """A text helper memoised in two bounded caches, by the length of its text: a few hundred pages
    kept never push out the thousands of sentences in use, nor hold gigabytes."""

    def __init__(self, fn: Callable[[str], _T]) -> None:
        self.short = functools.lru_cache(maxsize=_TEXT_CACHE)(fn)
        self.long = functools.lru_cache(maxsize=_PAGE_CACHE)(fn)
        functools.update_wrapper(self, fn)

    def __call__(self, text: str) -> _T:
        return self.long(text) if len(text) > _LONG_TEXT else self.short(text)


_GROUPED_DIGITS = re.compile(r"(?<![\d.,])\d{1,3}(?:[,\u00a0\u2009\u202f ]\d{3})+(?![\d]|[.,]\d{3})")
_DIGIT_SEPARATORS = re.compile(r"[,\u00a0\u2009\u202f ]")


def _fold_diacritics(text: str) -> str:
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


@_Memoised
def matchable(text: str) -> str:
    """``text`` as the lexical checks compare it: diacritics folded ("Dvořák" -> "Dvorak") and a
    number's thousands separators dropped ("1,000" and "1 000" -> "1000"), so that spellings a
    reader takes for the same word or value match. What the model reads is never changed."""
    return _GROUPED_DIGITS.sub(lambda m: _DIGIT_SEPARATORS.sub("", m.group(0)), _fold_diacritics(text))


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    # British spellings read as American ones ("metres" -> "meters", "organised" -> "organized";
    # breame's list of about 1,700 pairs) before the suffixes go, so both stem alike.
    w = get_american_spelling(_fold_diacritics(word.lower()))
    for suffix in ("ing", "ed", "es", "s"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            w = w[: -len(suffix)]
            if suffix in ("ing", "ed") and len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
                w = w[:-1]  # "starred" -> "star", "stopped" -> "stop" (but "called" -> "call")
            return w
    return w


@_Memoised
def content_words(text: str) -> frozenset[str]:
    """Lower-cased, lightly stemmed words of ``text`` without stopwords."""
    return frozenset(_stem(w) for w in _WORD.findall(matchable(text)) if w.lower() not in STOPWORDS)


@_Memoised
def word_count(text: str) -> int:
    """How many whitespace-separated words ``text`` has (asked of whole passages per candidate)."""
    return len(text.split())


def overlap(claim: str, evidence: str) -> float:
    """Share of the claim's content words that the evidence contains (0..1)."""
    words = content_words(claim)
    if not words:
        return 0.0
    return len(words & content_words(evidence)) / len(words)


def overlap_without(claim: str, removed: str, evidence: str) -> float:
    """:func:`overlap` of the claim without ``removed`` (a value or name the checks found in it, as
    found: "1000" for "1 000"): how much of the rest of the claim the evidence says."""
    rest = matchable(claim).replace(matchable(removed), " ")
    return overlap(" ".join(rest.split()), evidence)


def rank_sentences(claim: str, sentences: Sequence[str]) -> list[float]:
    """How well each sentence covers the claim's content words, each word weighted by how rare it
    is among ``sentences`` (a word that every sentence of the page repeats, such as the page's
    subject, tells little about which sentence holds the evidence). 0..1 per sentence."""
    words = content_words(claim)
    bags = [content_words(s) & words for s in sentences]
    if not words:
        return [0.0 for _ in sentences]
    df = Counter(w for bag in bags for w in bag)
    n = len(sentences)
    weight = {w: math.log((n + 1) / (df[w] + 0.5)) for w in words}
    total = sum(weight.values()) or 1.0
    return [sum(weight[w] for w in bag) / total for bag in bags]


def bigram_overlap(claim: str, evidence: str) -> float:
    """Share of the claim's word bigrams (stopwords kept) that the evidence contains: tells
    "at sea level" from "above sea level" where single words cannot."""

    def bigrams(text: str) -> set[tuple[str, str]]:
        words = [_stem(w) for w in _WORD.findall(matchable(text))]
        return set(itertools.pairwise(words))

    grams = bigrams(claim)
    if not grams:
        return 0.0
    return len(grams & bigrams(evidence)) / len(grams)


# -- numbers -----------------------------------------------------------------

_NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "dozen": 12,
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "twice": 2,
    "half": 0.5,
}
_SCALES = {"hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_UNITS = {
    "degree": "degree",
    "degrees": "degree",
    "°": "degree",
    "°c": "degree",
    "°f": "degree_f",
    "celsius": "degree",
    "fahrenheit": "degree_f",
    "kelvin": "kelvin",
    "%": "percent",
    "percent": "percent",
    "per cent": "percent",
    "percentage": "percent",
    "km": "km",
    "kilometres": "km",
    "kilometers": "km",
    "kilometre": "km",
    "kilometer": "km",
    "m": "m",
    "metres": "m",
    "meters": "m",
    "metre": "m",
    "meter": "m",
    "ft": "ft",
    "feet": "ft",
    "foot": "ft",
    "mi": "mile",
    "miles": "mile",
    "mile": "mile",
    "kg": "kg",
    "kilograms": "kg",
    "tonnes": "tonne",
    "tons": "tonne",
    "pounds": "lb",
    "lb": "lb",
    "years": "year_span",
    "year": "year_span",
    "months": "month_span",
    "days": "day_span",
    "hours": "hour_span",
    "minutes": "minute_span",
    "seconds": "second_span",
    "people": "people",
    "episodes": "episode",
    "songs": "song",
    "goals": "goal",
    "points": "point",
    "votes": "vote",
    "seats": "seat",
    "times": "times",
    "members": "member",
    "employees": "employee",
    "students": "student",
    "$": "usd",
    "dollars": "usd",
    "usd": "usd",
    "€": "eur",
    "euros": "eur",
    "£": "gbp",
    "pounds sterling": "gbp",
}
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_QUANTITY = re.compile(
    r"(?P<cur>[$€£])?\s?(?P<num>" + _NUM + r"|(?:" + "|".join(_NUMBER_WORDS) + r")\b)"
    r"(?:\s*(?P<scale>hundred|thousand|million|billion|trillion)\b)?"
    r"(?:\s*-?\s*(?P<unit>°[CF]?|%|per cent|[A-Za-z]+))?",
    re.IGNORECASE,
)
_YEAR = re.compile(r"^(1[0-9]{3}|20[0-9]{2})$")
_MONTHS = {
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
}


@dataclass(frozen=True)
class Quantity:
    """A number found in text: its value, a normalised unit (``year`` for years), the raw text."""

    value: float
    unit: str | None
    raw: str


def quantities(text: str) -> list[Quantity]:
    """Every number in ``text`` (digits or number words), with scale words applied and a unit
    when one follows (or a currency sign precedes). Four-digit numbers 1000-2099 without a
    unit are years."""
    return list(_quantities(text))


@_Memoised
def _quantities(text: str) -> tuple[Quantity, ...]:
    out: list[Quantity] = []
    for m in _QUANTITY.finditer(matchable(text)):
        raw_num = m.group("num")
        word = raw_num.lower()
        if word in _NUMBER_WORDS:
            if word in ("one", "first", "second", "half") and not m.group("scale") and not m.group("unit"):
                continue  # "one of", "second half": too common to mean a quantity
            value = float(_NUMBER_WORDS[word])
            is_word = True
        else:
            try:
                value = float(raw_num.replace(",", ""))
            except ValueError:
                continue
            is_word = False
        scale = (m.group("scale") or "").lower()
        if scale:
            value *= _SCALES[scale]
        unit_raw = (m.group("unit") or "").lower()
        unit: str | None = _UNITS.get(unit_raw)
        if unit is None and m.group("cur"):
            unit = _UNITS[m.group("cur")]
        if unit is None and not is_word and not scale and _YEAR.match(raw_num):
            unit = "year"
        if is_word and unit is None and not scale and value < 10:
            continue  # "three of them" is rarely the fact a claim hinges on
        out.append(Quantity(value=value, unit=unit, raw=m.group(0).strip()))
    return tuple(out)


def _same_value(a: float, b: float) -> bool:
    # Exact up to float noise ("1.84 billion" == "1,840 million"); a year or count off by one is
    # another value, and rounded prose ("about 1.8 billion") is left to the model.
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def missing_numbers(claim: str, evidence: str) -> list[Quantity]:
    """Quantities of the claim whose value the evidence does not state (in any unit)."""
    have = [q.value for q in quantities(evidence)]
    return [q for q in quantities(claim) if not any(_same_value(q.value, v) for v in have)]


def conflicting_quantity(claim: str, evidence: str) -> tuple[Quantity, Quantity] | None:
    """A claim quantity that the evidence does not state while it states another value for the
    same unit (``50 degrees`` vs ``100 degrees``): the claim's number and the evidence's."""
    if _RANGE.search(evidence) or _APPROX.search(claim):
        return None  # "95-100%", "between 36 and 72", "about 1.8 billion": not one exact value to differ from
    ev = quantities(evidence)
    for q in missing_numbers(claim, evidence):
        if q.unit is None or q.unit == "year":
            continue
        same_unit = [other for other in ev if other.unit == q.unit]
        if any(_roughly(q, other, matchable(evidence)) for other in same_unit):
            continue  # "increased by about 40% and 150%" states the claim's "43 percent", rounded
        for other in same_unit:
            if not _same_value(other.value, q.value):
                return q, other
    return None


HEDGE_TOLERANCE = 0.15
"""How far apart a claim's value and a value the evidence hedges ("about 40%", "nearly 2 million")
may be and still not conflict: rounded prose is not another value."""


def _roughly(value: Quantity, stated: Quantity, text: str) -> bool:
    """Whether ``text`` states ``stated`` after a hedge ("about", "around", "nearly", ...) within
    ``HEDGE_TOLERANCE`` of ``value``."""
    if abs(stated.value - value.value) > HEDGE_TOLERANCE * max(abs(stated.value), abs(value.value)):
        return False
    return re.search(_HEDGE_WORDS + r"\s+[$€£]?" + re.escape(stated.raw), text, re.IGNORECASE) is not None


_RANGE = re.compile(r"\d\s*(?:-|–|—|to)\s*[$€£]?\d|\bbetween\s+[$€£]?\d", re.IGNORECASE)
_HEDGE_WORDS = (
    r"\b(?:about|around|approximately|roughly|nearly|almost|over|under|more than|less than|at least|up to|some)"
)
_APPROX = re.compile(_HEDGE_WORDS + r"\s+[$€£]?\d", re.IGNORECASE)


_OPEN_YEAR = re.compile(
    r"\b(?:by|before|after|since|until|till|from|between|through|to|around|circa|c\.|pre|post)\s+(?:the\s+)?"
    r"(?:early\s+|late\s+|mid\s*-?\s*)?(?:1[0-9]{3}|20[0-9]{2})\b|\b(?:1[0-9]{3}|20[0-9]{2})'?s\b",
    re.IGNORECASE,
)


def conflicting_year(claim: str, evidence: str) -> tuple[Quantity, Quantity] | None:
    """A year of the claim that the evidence does not state while it states another year
    ("released in 1998" vs "released on December 19, 1997"): the claim's year and the evidence's.
    Only when the claim has a single year and the evidence a single other year: with several, the
    years are usually about different events."""
    claim_years = [q for q in quantities(claim) if q.unit == "year"]
    ev_years = {q.value: q for q in quantities(evidence) if q.unit == "year"}
    if len(claim_years) != 1 or len(ev_years) != 1:
        return None
    if _OPEN_YEAR.search(claim):
        return None  # "by 2030", "since 1950", "the 1990s": a bound or a decade, not a date
    year = claim_years[0]
    other = next(iter(ev_years.values()))
    if _same_value(year.value, other.value):
        return None
    return year, other


# -- negation ----------------------------------------------------------------

_NEGATION = re.compile(
    r"\b(?:not|no|never|none|neither|nor|nobody|nothing|without|cannot|n't|failed to|unable to|"
    r"denied|denies|refused|lacks?|absent)\b|n't\b",
    re.IGNORECASE,
)


def negation_count(text: str) -> int:
    """How many negation cues ``text`` has."""
    return len(_NEGATION.findall(text))


_RANK = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|last"
    r"|1st|2nd|3rd|[4-9]th|10th)\b",
    re.IGNORECASE,
)


def other_rank(claim: str, evidence: str) -> bool:
    """Whether the evidence ranks something otherwise than the claim: the claim's rank ("first")
    absent where the evidence states another ("second")."""
    ours = {m.lower() for m in _RANK.findall(claim)}
    theirs = {m.lower() for m in _RANK.findall(evidence)}
    return bool(ours - theirs) and bool(theirs - ours)


def negation_flip(claim: str, evidence: str) -> bool:
    """True when one side is negated and the other is not (parity of negation cues differs)."""
    return (negation_count(claim) % 2) != (negation_count(evidence) % 2)


# -- antonyms --------------------------------------------------------------------

_LOWER_WORD = re.compile(r"[a-z]+(?:-[a-z]+)?")


_IDIOMS = re.compile(
    r"\b(?:in short|in brief|in the long run|long ago|before long|at long last|at last|at first|first of all"
    r"|in fact|more or less|sooner or later|by and large|all in all|above all|after all|as long as"
    r"|so long as|on the other hand|little by little|right away|in the end|high and low|up and down"
    r"|back and forth|over and over|once and for all|far and wide)\b",
    re.IGNORECASE,
)
"""Set phrases whose words say nothing of the claim's predicate: the "short" of "In short, the
river is 254 km long" is not the opposite of the page's "long"."""


def antonym_flip(claim: str, evidence: str, min_overlap: float = 0.6) -> tuple[str, str] | None:
    """A word of the claim that the evidence turns into its opposite while matching the rest of the
    claim (at least ``min_overlap`` of its other content words): ("increased", "decreased") for
    "Sales increased in 2010." against "Sales decreased in 2010.". Set phrases ("in short", "at
    last") are not read for opposites. None otherwise."""
    claim_words = {w for w in _LOWER_WORD.findall(_IDIOMS.sub(" ", claim).lower())}
    ev_words = {w for w in _LOWER_WORD.findall(_IDIOMS.sub(" ", evidence).lower())}
    # The claim's word need not be missing from the evidence: "at higher altitudes water boils at
    # a higher temperature" against "at higher altitudes ... water boils at a lower temperature".
    new_words = ev_words - claim_words
    pairs = sorted((other, word) for word in claim_words for other in opposites(word) & new_words)
    for other, word in pairs:
        rest = " ".join(w for w in _WORD.findall(claim) if w.lower() != word)
        if overlap(rest, evidence) >= min_overlap:
            return word, other
    return None


# -- named entities ------------------------------------------------------------

_CAP_SEQ = re.compile(
    r"\b[A-Z][\w\u00c0-\u024f'\-]*(?:\s+(?:of|de|da|von|van|the|del|la|le|du)?\s*[A-Z][\w\u00c0-\u024f'\-]*)*"
)
_NOT_ENTITY = (
    STOPWORDS
    | _MONTHS
    | {
        "however",
        "although",
        "after",
        "before",
        "during",
        "today",
        "currently",
        "later",
        "early",
        "in",
        "on",
        "at",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "he",
        "she",
        "they",
        "his",
        "her",
        "their",
        "we",
        "our",
        "you",
        "your",
        "i",
        "a",
        "an",
        "the",
        "some",
        "many",
        "most",
        "according",
        "since",
        "while",
        "when",
        "where",
        "what",
        "who",
        "why",
        "how",
        "as",
        "by",
        "for",
        "with",
        "from",
        "also",
        "both",
        "each",
        "every",
        "all",
        "following",
        "despite",
        "because",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    }
)


_LEAD_INS = frozenset(
    {
        "indeed", "however", "moreover", "furthermore", "nevertheless", "nonetheless", "meanwhile",
        "overall", "today", "currently", "still", "thus", "hence", "therefore", "besides", "instead",
        "otherwise", "yes", "no", "put", "first", "second", "third", "finally", "then", "next",
        "later", "earlier", "again", "here", "there", "now", "yet", "so", "well", "alas", "anyway",
        "likewise", "conversely", "notably", "briefly", "incidentally", "interestingly", "similarly",
        "additionally", "consequently", "unfortunately", "fortunately", "importantly", "ultimately",
        "specifically", "generally", "typically", "historically", "originally", "recently",
        "subsequently", "eventually", "accordingly", "alternatively", "essentially", "basically",
        "clearly", "obviously", "surprisingly", "sadly", "initially", "previously", "primarily",
        "mainly", "largely", "usually", "traditionally", "officially", "reportedly", "apparently",
        "allegedly", "arguably", "technically", "practically", "simply", "actually", "really",
        "certainly", "honestly", "frankly", "naturally", "presumably", "undoubtedly", "admittedly",
    }
)  # fmt: skip


def _is_lead_in(text: str, start: int, end: int) -> bool:
    """Whether the single capitalised word at ``start:end`` opens the text and is a common sentence
    adverb or opener ("Indeed, ...", "Notably, ...", "Put simply, ...") rather than a name."""
    if text[:start].strip(" \t\n\"'“‘(*_"):
        return False
    return text[start:end].lower() in _LEAD_INS


def entities(text: str) -> list[str]:
    """Capitalised word sequences that look like names (sentence-initial common words and
    sentence adverbs such as "Indeed," or "Notably," dropped)."""
    return list(_entities(text))


@_Memoised
def _entities(text: str) -> tuple[str, ...]:
    found: list[str] = []
    for m in _CAP_SEQ.finditer(text):
        words = m.group(0).split()
        if len(words) == 1 and _is_lead_in(text, m.start(), m.end()):
            continue
        while words and words[0].lower() in _NOT_ENTITY:
            words = words[1:]
        while words and words[-1].lower() in _NOT_ENTITY:
            words = words[:-1]
        if not words:
            continue
        if len(words) == 1 and len(words[0]) < 2:
            continue
        found.append(" ".join(words))
    return tuple(dict.fromkeys(found))


def _entity_present(entity: str, evidence_words: frozenset[str]) -> bool:
    parts = [w.lower() for w in re.findall(r"[\w\u00c0-\u024f]+", entity) if w.lower() not in _NOT_ENTITY]
    if not parts:
        return True
    # A surname alone ("Cameron") or half the words of a long name count as a mention.
    hits = sum(1 for w in parts if w in evidence_words or _stem(w) in evidence_words)
    return hits * 2 >= len(parts) or parts[-1] in evidence_words


_GENERIC_NAME_TEXT = """
river lake sea ocean bay gulf island islands mountain mountains mount hills hill range valley
park forest desert coast cape peninsula falls canyon creek county city town village district
province state states region republic kingdom empire university college school institute
academy hospital museum library church cathedral temple castle palace tower bridge street road
avenue station airport stadium hall centre center company corporation corp inc ltd group bank
party council committee association society foundation club team army navy war battle act
award awards prize festival championship cup league series album film band records studios
north south east west northern southern eastern western new great grand upper lower saint st
"""
GENERIC_NAME_WORDS = frozenset(_GENERIC_NAME_TEXT.split())
"""Words that many names share ("the Alder River" and "the Birch River"): only a name's other
words tell which thing a sentence is about."""


@_Memoised
def _word_bag(text: str) -> frozenset[str]:
    """Every word of ``text``, lower-cased, and its stem: what a name is looked up in."""
    words = {w.lower() for w in re.findall(r"[\w\u00c0-\u024f]+", matchable(text))}
    return frozenset(words | {_stem(w) for w in words})


def names_the_same(name: str, evidence: str) -> bool:
    """Whether the evidence names this very thing, not merely something of the same kind: every
    distinctive word of ``name`` is there (a person's surname alone will do: "Cameron" for "James
    Cameron"), generic words such as River, University or North left aside ("The Birch River"
    does not name "the Alder River"). A name made of generic words only needs all of them."""
    words = _word_bag(evidence)
    parts = [w.lower() for w in re.findall(r"[\w\u00c0-\u024f]+", name) if w.lower() not in _NOT_ENTITY]
    distinctive = [w for w in parts if w not in GENERIC_NAME_WORDS]
    present = [w in words or _stem(w) in words for w in distinctive or parts]
    return all(present) or (len(distinctive) >= 2 and present[-1])


def missing_entities(claim: str, evidence: str) -> list[str]:
    """Names in the claim of which the evidence mentions none of the distinctive words."""
    words = _word_bag(evidence)
    return [e for e in entities(claim) if not _entity_present(e, words)]


def role_swap(claim: str, evidence: str) -> tuple[str, str] | None:
    """Two names that the claim and the evidence join by the same words in the opposite order:
    ("Italy", "Spain") for "Italy defeated Spain in the final." against "Spain defeated Italy in the
    final." (the roles of a relation reversed). A passive restatement ("Spain was defeated by
    Italy") joins them by other words, so it is no swap. None otherwise."""
    lowered = evidence.lower()
    names = [(claim.find(n), n) for n in entities(claim)]
    names = sorted((i, n) for i, n in names if i >= 0 and n.lower() in lowered)
    for (i1, a), (i2, b) in itertools.combinations(names, 2):
        between = " ".join(claim[i1 + len(a) : i2].split()).lower()
        if not between or len(between.split()) > 6 or not _WORD.search(between):
            continue
        if f"{b.lower()} {between} {a.lower()}" in " ".join(lowered.split()):
            return a, b
    return None


def substituted_entity(claim: str, evidence: str) -> tuple[str, str] | None:
    """A name of the claim (not its opening subject) that the evidence does not mention where the
    evidence names someone or something else of the same shape (one word, or several) that the claim does not mention:
    ("Brad Pitt", "Leonardo DiCaprio") for "It starred Brad Pitt and Kate Winslet." against "It
    stars Kate Winslet and Leonardo DiCaprio." Whether the rest of the claim matches the evidence
    closely enough for that to be a contradiction is the caller's rule (see ``overlap``)."""
    # A name at the very start of the claim is its subject; a lone evidence sentence often names
    # its subject by a pronoun only ("She took a teaching position..."), so its absence says nothing.
    missing = [m for m in missing_entities(claim, evidence) if len(claim[: max(0, claim.find(m))].split()) >= 2]
    if not missing:
        return None
    claim_words = _word_bag(claim)
    extra = [e for e in entities(evidence) if not _entity_present(e, claim_words)]
    for name in missing:
        multi = len(name.split()) > 1
        for other in extra:
            if (len(other.split()) > 1) == multi:
                return name, other
    return None
