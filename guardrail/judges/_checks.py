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
from guardrail.judges._lexicon import KINDS, opposites

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
    """A number found in text: its value, a normalised unit (``year`` for years), the raw text, and
    how the text bounds it: ``exact``, ``about`` ("about 120 million", "nearly 40%"), ``above``
    ("more than 200 million", "over 40%") or ``below`` ("less than $100 million", "up to 5 km")."""

    value: float
    unit: str | None
    raw: str
    bound: str = "exact"

    def interval(self) -> tuple[float, float]:
        """The values the text allows (``about``: within :data:`HEDGE_TOLERANCE`)."""
        v = self.value
        if self.bound == "about":
            return v - HEDGE_TOLERANCE * abs(v), v + HEDGE_TOLERANCE * abs(v)
        if self.bound == "above":
            return v, math.inf
        if self.bound == "below":
            return -math.inf, v
        return v, v


_BOUNDS = (
    # A negated bound first: "no more than 40%" ends in "more than 40%".
    ("below", re.compile(r"\b(?:no|not)\s+(?:more|greater|higher|over|above)(?:\s+than)?\s*$")),
    ("above", re.compile(r"\b(?:no|not)\s+(?:less|fewer|lower|under|below)(?:\s+than)?\s*$")),
    (
        "above",
        re.compile(r"\b(?:more than|over|above|at least|exceeding|in excess of|upwards of|greater than|beyond)\s*$"),
    ),
    ("below", re.compile(r"\b(?:less than|fewer than|under|below|at most|up to)\s*$")),
    (
        "about",
        re.compile(
            r"(?:\b(?:about|around|approximately|roughly|some|circa|nearly|almost|close to|an estimated"
            r"|estimated)|~)\s*$"
        ),
    ),
)


def _bound(before: str) -> str:
    """How the words just before a number bound it (see :class:`Quantity`)."""
    tail = before[-24:].lower()  # the longest bound, "no greater than", and its spaces
    return next((name for name, pattern in _BOUNDS if pattern.search(tail)), "exact")


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
        bound = _bound(m.string[max(0, m.start() - 24) : m.start()])
        out.append(Quantity(value=value, unit=unit, raw=m.group(0).strip(), bound=bound))
    return tuple(out)


def _same_value(a: float, b: float) -> bool:
    # Exact up to float noise ("1.84 billion" == "1,840 million"); a year or count off by one is
    # another value, and rounded prose ("about 1.8 billion") is left to the model.
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _states(claim: Quantity, stated: Quantity) -> bool:
    """Whether a value the evidence states says what the claim's quantity says: the same value, or
    one within the claim's bound ("over 203 million" states "more than 200 million")."""
    if _same_value(claim.value, stated.value):
        return True
    if claim.bound in ("above", "below") and not (0.1 * abs(claim.value) <= abs(stated.value) <= 10 * abs(claim.value)):
        return False  # "40 countries" says nothing of "fewer than 1,000 employees"
    low, high = claim.interval()
    s_low, s_high = stated.interval()
    slack = 1e-9 * max(abs(claim.value), abs(stated.value))
    return low - slack <= s_low and s_high <= high + slack


def _compatible(a: Quantity, b: Quantity) -> bool:
    """Whether two quantities can be the same value ("about 40%" and "43%"; "over 200" and "250")."""
    if _same_value(a.value, b.value):
        return True
    a_low, a_high = a.interval()
    b_low, b_high = b.interval()
    return a_low <= b_high and b_low <= a_high


def missing_numbers(claim: str, evidence: str) -> list[Quantity]:
    """Quantities of the claim that no value of the evidence states (in any unit; a bound such as
    "more than 200 million" is stated by any value within it)."""
    have = quantities(evidence)
    return [q for q in quantities(claim) if not any(_states(q, v) for v in have)]


def conflicting_quantity(claim: str, evidence: str) -> tuple[Quantity, Quantity] | None:
    """A claim quantity that the evidence does not state while it states another value for the
    same unit that cannot be the claim's (``50 degrees`` vs ``100 degrees``; "less than $100
    million" vs "$412 million"; "about 120 million people" vs "over 203 million people"): the
    claim's number and the evidence's."""
    if _RANGE.search(evidence):
        return None  # "95-100%", "between 36 and 72": not one value to differ from
    ev = quantities(evidence)
    for q in missing_numbers(claim, evidence):
        if q.unit is None or q.unit == "year":
            continue
        if q.unit == "times":
            continue  # "over 200 times more CO2" beside "84 times greater than CO2": two ratios of other things
        same_unit = [other for other in ev if other.unit == q.unit]
        if any(_compatible(q, other) for other in same_unit):
            continue  # "increased by about 40% and 150%" states the claim's "43 percent", rounded
        if q.bound == "about":
            # A rounded claim is at odds only with a value far from it: "around 29 billion tonnes"
            # beside "around 21.3 billion tonnes" is more often another quantity than another value.
            same_unit = [o for o in same_unit if _ratio(q.value, o.value) >= _FAR]
        if same_unit:
            return q, same_unit[0]
    return None


_FAR = 1.5
"""How many times larger (or smaller) a value must be to be at odds with a rounded claim's."""


def _ratio(a: float, b: float) -> float:
    low, high = sorted((abs(a), abs(b)))
    return math.inf if low == 0 else high / low


HEDGE_TOLERANCE = 0.15
"""How far from a hedged value ("about 40%", "nearly 2 million") another may be and still be the
same: rounded prose is not another value."""


_RANGE = re.compile(r"\d\s*(?:-|–|—|to)\s*[$€£]?\d|\bbetween\s+[$€£]?\d", re.IGNORECASE)

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
    r"\b(?:not|no|never|none|neither|nor|nobody|nothing|without|cannot|n['’]t|failed to|unable to|"
    r"denied|denies|refused|lacks?|absent)\b|n['’]t\b",
    re.IGNORECASE,
)


_MONTH_NAMES = "(?:" + "|".join(sorted(_MONTHS)) + ")"
_FULL_DATE = re.compile(
    r"\b(?:(?P<day>[0-3]?\d)(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>" + _MONTH_NAMES + r")"
    r"|(?P<month2>" + _MONTH_NAMES + r")\s+(?P<day2>[0-3]?\d)(?:st|nd|rd|th)?,?)\s+(?P<year>1\d{3}|20\d{2})\b",
    re.IGNORECASE,
)


def _full_dates(text: str) -> dict[tuple[int, str, int], str]:
    """Each day-month-year date of ``text`` ("28 September 1066", "July 20, 1969") and its words."""
    out: dict[tuple[int, str, int], str] = {}
    for m in _FULL_DATE.finditer(text):
        day, month = m.group("day") or m.group("day2"), (m.group("month") or m.group("month2")).lower()
        out.setdefault((int(day), month, int(m.group("year"))), m.group(0))
    return out


def conflicting_date(claim: str, evidence: str) -> tuple[str, str] | None:
    """A day of the claim that the evidence gives as another day of the same year ("28 October
    1066" against "landed ... at Pevensey on 28 September 1066"), what :func:`conflicting_year`
    cannot see: the claim's date and the evidence's. Only when each states a single date; with
    several, they are usually about different events."""
    ours, theirs = _full_dates(claim), _full_dates(evidence)
    if len(ours) != 1 or len(theirs) != 1:
        return None
    (day, month, year), (other_day, other_month, other_year) = next(iter(ours)), next(iter(theirs))
    if year != other_year or (day, month) == (other_day, other_month):
        return None
    return ours[(day, month, year)], theirs[(other_day, other_month, other_year)]


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


_DENYING = frozenset({"not", "no", "never", "n't", "cannot", "nor", "neither"})
_DENIAL_BRIDGE = frozenset(
    {
        "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "has", "have", "had",
        "will", "would", "can", "could", "may", "might", "should", "a", "an", "the", "to", "shown",
        "found", "proven", "proved", "appear", "appears", "appeared", "seem", "seems", "seemed",
    }
)  # fmt: skip
"""Words that may stand between a negation and the word it denies ("did not significantly reduce",
"has not been shown to reduce", "is not the father of")."""
_NOT_DENYING_BEFORE = frozenset({"may", "might", "should", "or"})
"""Words that, right before a negation, keep it from stating the opposite: "may not reduce" hedges,
"should not be given" advises, "whether or not" asks."""
_PRIVATIVE = frozenset(
    {
        "quit", "quitting", "stop", "stopping", "stopped", "cessation", "abstinence", "absence", "withdrawal",
        "discontinuation", "discontinuing", "avoiding", "avoidance", "non",
    }
)  # fmt: skip
"""Words that, before a negation, make its subject the lack of the claim's ("quitting smoking did not
increase the risk of stroke" does not deny "smoking increases the risk of stroke")."""
_SCOPE_ADVERBS = frozenset(
    {
        "merely", "simply", "solely", "purely", "exclusively", "necessarily", "usually", "generally",
        "typically", "entirely", "completely", "fully", "consistently", "invariably", "always",
    }
)  # fmt: skip
"""Adverbs after which a negation denies how far or how often, not the word ("did not simply reduce",
"does not necessarily cause")."""
_EXTENT = frozenset({"until", "till", "before", "further", "alone", "again", "fully", "completely", "entirely"})
"""Words that, later in the clause, make a negation deny a time, degree or manner rather than the
word ("did not win the title until 1990", "did not reduce pressure further", "did not walk alone")."""
_SUBJECT_PRONOUNS = frozenset({"he", "she", "it", "they", "we", "this", "these"})
_SENTENCE_TOKEN = re.compile(r"[A-Za-z\u00c0-\u024f]+(?:'[a-z]+)?|\d[\d,.]*|[^\sA-Za-z\d]")


def _sentence_tokens(text: str) -> list[str]:
    """Lower-case words, numbers and punctuation of ``text``, "n't" apart ("doesn't" -> "does", "n't")."""
    return [t.lower() for t in _SENTENCE_TOKEN.findall(matchable(text).replace("\u2019", "'").replace("n't", " n't"))]


def _negation_at(tokens: Sequence[str], i: int) -> int:
    """The index of a negation that governs the word at ``i``, else -1: it stands before it with only
    auxiliaries, articles and adverbs between ("did not significantly reduce"; not "not only reduced")."""
    j = i - 1
    while j >= 0 and i - j <= 5:
        token = tokens[j]
        if token in _DENYING:
            return j
        adverb = token.endswith("ly") and len(token) > 4 and token not in _SCOPE_ADVERBS
        if token not in _DENIAL_BRIDGE and not adverb:
            return -1
        j -= 1
    return -1


def _denied_at(tokens: Sequence[str], i: int) -> bool:
    """Whether a negation governs the word at ``i`` (:func:`_negation_at`)."""
    return _negation_at(tokens, i) >= 0


_CLAUSE_BREAK = frozenset(
    {
        "and", "but", "or", "nor", "while", "whereas", "although", "though", "which", "who", "whom",
        "whose", "that", "because", "when", "if", "unless", "than", "compared", "versus", "vs",
    }
)  # fmt: skip


_PASSED_OVER = frozenset({"among", "amongst", "across", "within", "via", "per", "toward", "towards", "upon", "onto"})
"""Prepositions that are no content of their own: "employment among women" says it of "women"."""


def _next_contents(tokens: Sequence[str], i: int, n: int = 3) -> tuple[str, ...]:
    """The :func:`_root` of the first ``n`` content words after ``i`` in the same clause (what the
    word at ``i`` says something of: "reduce 28-day mortality", "reduce the risk", "born in Hawaii")."""
    found: list[str] = []
    for token in tokens[i + 1 :]:
        if token in "-/" or token in _PASSED_OVER:
            continue  # "28-day mortality", "employment among women"
        if not token[0].isalnum() or token in _CLAUSE_BREAK or token in _DENYING or len(found) == n:
            break  # "who did not exercise did not lower": what follows "exercise" is another denial
        if token not in STOPWORDS and not (token.endswith("ly") and len(token) > 4):
            found.append(_root(token))
    return tuple(found)


def _same_next(claimed: tuple[str, ...], following: tuple[str, ...]) -> bool:
    """Whether a word says something of what the claim's word does: the claim's next content words
    (``claimed``, up to two: "risk of fractures", not "risk of falls") among the few that follow it
    (``following``), or neither has any."""
    return set(claimed) <= set(following) if claimed else not following


def _clause_before(tokens: Sequence[str], i: int) -> list[str]:
    """The words before ``i`` back to the clause's start (a punctuation mark or a conjunction; a
    relative "who", "which" or "that" does not end it: "patients who did not exercise")."""
    j = i
    while (
        j > 0
        and tokens[j - 1][0].isalnum()
        and (tokens[j - 1] not in _CLAUSE_BREAK or tokens[j - 1] in {"that", "which", "who", "whom", "whose"})
    ):
        j -= 1
    return list(tokens[j:i])


def _subject_kept(claim_before: frozenset[str], before: Sequence[str]) -> bool:
    """Whether the denial is said of the claim's subject: one of the claim's words before its word
    (``claim_before``) is among the sentence's words before the negation, or that subject is a pronoun
    ("In the trial, placebo did not reduce pain" is said of another; "It did not reduce pain" may be
    the claim's). A subject that shares a word with the claim's but names another thing ("Placebo
    patches" for "Nicotine patches") is :func:`_about_another`'s to tell."""
    if not claim_before:
        return True
    roots = {_root(t) for t in before if t[0].isalpha() and t not in STOPWORDS}
    return bool(roots & claim_before) if roots else bool(_SUBJECT_PRONOUNS & set(before))


def _denies_only_extent(tokens: Sequence[str], i: int) -> bool:
    """Whether the rest of the clause after ``i`` makes the negation deny a time, degree or manner
    (:data:`_EXTENT`; an equative "as much as", "as well as": "did not reduce pain as much as surgery")."""
    after: list[str] = []
    for token in tokens[i + 1 :]:
        if not token[0].isalnum() or token in _CLAUSE_BREAK:
            break
        after.append(token)
    if _EXTENT & set(after):
        return True
    return any(t == "as" and "as" in after[k + 2 : k + 4] for k, t in enumerate(after))


_PAST_FORMS = {
    "won": "win", "rose": "rise", "risen": "rise", "fell": "fall", "fallen": "fall", "flew": "fly", "flown": "fly",
    "made": "make", "sank": "sink", "grew": "grow", "grown": "grow", "took": "take", "taken": "take",
    "gave": "give", "given": "give", "wrote": "write", "written": "write", "ran": "run", "began": "begin",
    "begun": "begin", "became": "become", "came": "come", "went": "go", "gone": "go", "held": "hold",
    "led": "lead", "left": "leave", "lost": "lose", "met": "meet", "paid": "pay", "sold": "sell",
    "told": "tell", "brought": "bring", "bought": "buy", "built": "build", "chose": "choose",
    "chosen": "choose", "drew": "draw", "drawn": "draw", "drove": "drive", "driven": "drive", "found": "find",
    "got": "get", "kept": "keep", "knew": "know", "known": "know", "saw": "see", "seen": "see", "sent": "send",
    "spoke": "speak", "spoken": "speak", "stood": "stand", "struck": "strike", "taught": "teach",
    "threw": "throw", "thrown": "throw", "wore": "wear", "worn": "wear", "spent": "spend", "sang": "sing",
    "sung": "sing", "shot": "shoot", "caught": "catch", "fought": "fight", "broke": "break", "broken": "break",
}  # fmt: skip
"""Irregular past forms, read as the verb: "did not win" denies "won"."""


@functools.lru_cache(maxsize=65536)
def _root(word: str) -> str:
    """One form of a word for every form of a verb: :func:`_stem` without a final "e" ("reduce",
    "reduces", "reduced"), with short and irregular past forms ("filed", "won", "rose") and "-ied"
    ("qualified") read as the verb."""
    w = _PAST_FORMS.get(word, word)
    if len(w) > 4 and w.endswith(("ied", "ies")):
        w = w[:-3] + "y"
    elif len(w) in (4, 5) and w.endswith("ed") and w[-3] != "e":
        w = w[:-1]  # "filed" -> "file", "voted" -> "vote" (too short for _stem)
    return _stem(w).rstrip("e") or w


_SUBGROUP = re.compile(r"\bsub-?(?:groups?|sets?)\b", re.IGNORECASE)
"""A result in part of a study ("in the subgroup of women"): it denies nothing of the whole."""


@functools.lru_cache(maxsize=_TEXT_CACHE)
def denial(claim: str, sentence: str, min_overlap: float = 0.5) -> str | None:
    """A word of a claim that states no negation that ``sentence`` denies while saying the rest of the
    claim (at least ``min_overlap`` of its other content words): "reduces" for "Vitamin D reduces the
    risk of fractures." against "Vitamin D did not reduce the risk of fractures compared with
    placebo." The negation must govern the word ("did not significantly reduce", "has not been
    shown to reduce"; "not only reduced" denies nothing), the word must be followed by what follows
    it in the claim (:func:`_same_next`: what is reduced; "patients who did not exercise had higher
    blood pressure" does not deny "exercise lowers blood pressure", nor "was not born in Kenya" "was
    born in Hawaii"), and the sentence must not also state it ("did not
    reduce mortality but reduced admissions" says the claim "reduces admissions"). None otherwise."""
    if negation_count(claim) or _SUBGROUP.search(sentence):
        return None
    claim_tokens = _sentence_tokens(claim)
    tokens = _sentence_tokens(sentence)
    ours: dict[str, tuple[str, ...]] = {}
    subjects: dict[str, frozenset[str]] = {}
    for i, token in enumerate(claim_tokens):
        if token[0].isalpha() and token not in STOPWORDS:
            ours.setdefault(_root(token), _next_contents(claim_tokens, i, 2))
            subjects.setdefault(
                _root(token),
                frozenset(_root(t) for t in _clause_before(claim_tokens, i) if t[0].isalpha() and t not in STOPWORDS),
            )
    denied: list[str] = []
    stated: set[str] = set()
    for i, token in enumerate(tokens):
        stem = _root(token)
        if stem not in ours or token in STOPWORDS:
            continue
        at = _negation_at(tokens, i)
        if at < 0:
            stated.add(stem)
        elif (
            _same_next(ours[stem], _next_contents(tokens, i, 6))
            and not (token in _DIRECTION and tokens[i + 1 : i + 2] == ["than"])  # "no more than 200": a bound
            and not negation_count(" ".join(tokens[:at]))  # "it is not true that ... does not", "without X, ..."
            and not (at and tokens[at - 1] in _NOT_DENYING_BEFORE)  # "may not", "should not", "or not"
            and _subject_kept(subjects[stem], before := _clause_before(tokens, at))
            and not _PRIVATIVE & set(before)
            and not _denies_only_extent(tokens, i)
        ):
            denied.append(token)
    if denied and _about_another(claim, sentence):
        return None
    for token in denied:
        root = _root(token)
        rest = " ".join(w for w in _WORD.findall(claim) if _root(w.lower()) != root)
        if root not in stated and overlap(rest, sentence) >= min_overlap:
            return token
    return None


def _about_another(claim: str, sentence: str) -> bool:
    """Whether ``sentence`` is about another instance than the claim: another value or year of the
    same quantity ("did not win the 200 metres" for "won the 100 metres", "in 2012" for "in 2010"),
    another word of the claim's kind ("among adolescents" for "among adults"), or a name of the claim
    that it lacks where it names another ("the Oscar for Best Director" for "... Best Picture")."""
    if conflicting_quantity(claim, sentence) or conflicting_year(claim, sentence) or kind_swap(claim, sentence):
        return True
    missing = [e for e in _plain_names(claim) if not names_the_same(e, sentence)]
    return bool(missing) and any(
        not names_the_same(e, claim) and not _abbreviates(e, claim) for e in _plain_names(sentence)
    )


_STATISTICS = frozenset(
    {"HR", "CI", "RR", "OR", "SD", "SE", "SEM", "IQR", "AOR", "AHR", "ARR", "RRR", "NNT", "NNH", "SMD", "MD", "WMD",
     "IRR", "ICC", "AUC"}
)  # fmt: skip
"""Abbreviations of a statistic ("HR 0.96, 95% CI 0.80-1.15"): no names of anything a claim is about."""


_OPENING_MARKS = " \t\n\"'“‘(*_"
"""What may stand before a text's first word: spaces, quotes, a bracket, markdown emphasis."""


def opens_with(text: str, name: str) -> bool:
    """Whether ``name`` is a single word opening ``text``: a capitalised word there is as often an
    ordinary word ("Daily low-dose aspirin ...", "Habitual coffee consumption ...") as a name."""
    opening = text.lstrip(_OPENING_MARKS)
    return " " not in name and opening.startswith(name) and opening[len(name) : len(name) + 1] in (" ", ",")


def _plain_names(text: str) -> list[str]:
    """The :func:`entities` of ``text`` that name something: not the label a structured abstract
    opens a sentence with ("Results: ...") and no statistic (:data:`_STATISTICS`)."""
    return [e for e in entities(_SECTION_LABEL.sub("", text, count=1)) if e not in _STATISTICS]


def _abbreviates(name: str, text: str) -> bool:
    """Whether ``name`` is the initials of consecutive content words of ``text``, as a study
    abbreviates a treatment ("CBT" for "cognitive behavioural therapy")."""
    if not (2 <= len(name) <= 6 and name.isalpha() and name.isupper()):
        return False
    initials = "".join(w[0] for w in _WORD.findall(text) if w.lower() not in STOPWORDS)
    return name.lower() in initials.lower()


_SECTION_LABEL = re.compile(r"^\s*(?:[A-Z][A-Za-z]*\s){0,2}[A-Z][A-Za-z]*:\s")
"""The label a structured abstract opens a sentence with: "Results: ", "Main outcome measures: "."""


_EFFECT_TEXT = (
    "improve improves improved improving worsen worsens worsened relieve relieves relieved prevent prevents "
    "prevented protect protects protected benefit benefits benefited benefitted cause causes caused shorten "
    "shortens shortened lengthen lengthens lengthened extend extends extended slow slows slowed affect affects "
    "affected alter alters altered associated linked related effective efficacious better superior outperform "
    "outperforms outperformed"
)
_EFFECT_WORDS = frozenset(_EFFECT_TEXT.split())
"""Words by which a claim says that something has an effect or does better (beside the direction
words: "reduces", "higher"): what a study's null result says otherwise."""
_NULL_RESULT = re.compile(
    r"\b(?:(?:did|does|do)\s+not\s+(?:\w+ly\s+)?(?:differ|change|improve|affect|alter|vary)"
    r"|(?:did|does|do)\s+not\s+(?:lead\s+to|result\s+in)"
    r"|(?:was|were|is|are)\s+not\s+(?:\w+ly\s+)?(?:different|superior|better|associated|related|linked"
    r"|effective(?:\s+(?:in|at|for)\s+\w+ing)?)"
    r"|(?:was|were|is|are|proved|proven)\s+ineffective"
    r"|not\s+followed\s+by\s+(?:a|any)\s+(?:\w+\s+)?(?:change|reduction|decrease|increase|improvement|difference)"
    r"|no\s+(?:\w+\s+)?evidence\s+(?:of|for)\s+(?:an?\s+|any\s+)?(?:\w+\s+)?"
    r"(?:link|association|effect|benefit|relationship|connection)"
    r"|no\s+(?:\w+ly\s+(?:or\s+\w+ly\s+)?)?"
    r"(?:significant\s+|clinically\s+meaningful\s+|meaningful\s+|detectable\s+|measurable\s+)?"
    r"(?:differences?|effects?|changes?|improvements?|benefits?|associations?|advantages?)"
    r"(?:\s+(?:was|were)\s+(?:found|seen|observed|detected|shown))?(?=\s+(?:in|on|of|for|between|with|over)\b)"
    r"|(?:was|were|is|are)\s+no\s+(?:greater|better|higher|lower|more\s+effective)\s+than\b(?!\s*[$€£\d])"
    r"|failed\s+to\s+(?:\w+ly\s+)?(?:improve|reduce|lower|increase|raise|prevent|relieve|shorten|affect|change)"
    r"|(?:similar|comparable)\s+(?:in|between|across|among)\s+(?:the\s+)?(?:two\s+|three\s+|both\s+|all\s+)?"
    r"(?:groups|arms))\b",
    re.IGNORECASE,
)
"""How a study says that it found no effect: "did not differ", "was not superior", "no significant
difference in", "was no greater than" (not a bound: "no more than 200"), "failed to improve",
"similar between groups", "was ineffective", "did not lead to", "was not followed by a meaningful
change", "no evidence of any link". The preposition after "no difference" is looked at, not taken:
"no benefit in reducing colds" states no "reducing" (:data:`_PURPOSE`)."""
_PARENTHESES = re.compile(r"\([^()]*\)")
"""A bracketed aside: in a study's sentence, its statistics and abbreviations ("(HR 0.99 per additional
cup/day, 95% CI 0.96-1.02)"), which are no part of what the sentence says."""
_BASELINE = re.compile(
    r"\b(?:baseline|at\s+entry|at\s+enrol+ment|at\s+randomi[sz]ation|before\s+(?:treatment|randomi[sz]ation)"
    r"|before\s+(?:the\s+)?(?:[\w-]+\s+){0,3}(?:began|begun|started|opened|campaign|programme|program|intervention))\b",
    re.I,
)
"""A comparison before the study's intervention ("did not differ at baseline", "similar in both groups
before the vaccination campaign"): no result."""
_EQUAL_CLAIM = re.compile(
    r"\bas\s+(?:\w+\s+)?(?:effective|efficacious|good|well|safe|beneficial)\s+as\b|\b(?:equally|similar(?:ly)?|"
    r"comparable|equivalent|non-?inferior|little|rarely|marginal(?:ly)?|minimal(?:ly)?|negligible|slight(?:ly)?)\b",
    re.I,
)
"""A claim that something works no better than another or hardly at all ("as effective as", "equally
effective", "little benefit"): a study's null result says what it says."""
_NOT_THE_EFFECT = re.compile(
    r"\b(?:plus|adding|added\s+to|in\s+addition\s+to|additional|further|alone"
    r"|between\s+(?:the\s+)?(?:men\s+and\s+women|women\s+and\s+men|males\s+and\s+females|sexes))\b",
    re.I,
)
"""A null result that is not the intervention's effect: in a subgroup, of an add-on ("plus", "alone"),
or the same in men and women."""
_IN_CONTROL_ARM = re.compile(
    r"\b(?:in|with|for|among)\s+(?:the\s+)?(?:control|placebo|usual[\s-]+care|sham|comparison)\s+(?:group|arm)s?\b",
    re.I,
)
_BY_SUBGROUP = re.compile(r"\s+(?:significantly\s+)?(?:by|across|according\s+to)\b", re.I)
_BETWEEN = re.compile(r"\bbetween\s+(?:the\s+)?([\w-]+(?:\s+[\w-]+){0,3}?)\s+and\s+([^,;:()]+)", re.I)
_BETWEEN_END = re.compile(r"\s(?:in|at|for|among|with|on|after|during|over|who|which)\s.*", re.I | re.S)
_LEVELS = frozenset(
    {"high", "higher", "low", "lower", "more", "less", "heavy", "light", "frequent", "infrequent", "regular",
     "occasional", "any", "no", "with"}
)  # fmt: skip
_MEASURES = frozenset(_root(w) for w in ("risk", "rate", "score", "level", "event", "incidence", "outcome", "symptom"))
"""Words that name a measure, not what is measured ("the risk of fracture", "pain scores")."""
_OUTCOME_END = frozenset(
    {"in", "among", "amongst", "for", "than", "compared", "versus", "vs", "at", "within", "after", "during",
     "when", "while", "over", "by", "across", "if", "but"}
)  # fmt: skip
_GOOD_WORDS = frozenset(_root(w) for w in ("improve", "better", "superior", "benefit", "beneficial"))
_CHANGE_NOUN = ("tion", "ment")
_PURPOSE = re.compile(r"\b(?:in|at|for)\s+\w+ing\b", re.IGNORECASE)
_IN_STUDY = re.compile(
    r"\b(?:between|across|among)\s+(?:the\s+)?(?:two\s+|three\s+|both\s+|all\s+|treatment\s+|study\s+)?"
    r"(?:groups|arms)\b|\b(?:with|than|to|versus|vs\.?|over)\s+(?:the\s+)?(?:placebo|sham|control|usual\s+care)\b"
    r"|\bwith\s+and\s+without\b",
    re.IGNORECASE,
)
"""A comparison within the study that the page reports: its subject is the study's intervention."""


def speaks_of_the_study(sentence: str) -> bool:
    """Whether ``sentence`` compares a study's own groups ("between groups", "with placebo"), so speaks
    of what the study tested without naming it."""
    return _IN_STUDY.search(sentence) is not None


@functools.lru_cache(maxsize=_TEXT_CACHE)
def null_result(claim: str, sentence: str, min_overlap: float = 0.4, topic: str = "") -> str | None:
    """A word by which a claim that states no negation says that something has an effect or does
    better ("improves", "reduces", "better than") where ``sentence`` reports that a study found no
    such effect on the claim's outcome: "improves" for "Mindfulness training improves working memory
    in adolescents." against "Working memory scores did not differ between groups." The clause of the
    null result must name the outcome (a content word that follows the claim's word), the sentence
    must name the claim's subject (the words before it) or compare the study's groups ("between
    groups", "with placebo"), say at least ``min_overlap`` of the rest of the claim, and not state
    the claim's word itself or its direction elsewhere ("although cardiac deaths were reduced"). No
    result: a comparison at baseline, in a subgroup or the control arm, of an add-on, of two forms of
    the subject ("between aerobic and resistance exercise"), on another outcome of the same kind
    ("rectal cancer" for "colon cancer"), or against a claim of equal or little effect ("as effective
    as"). ``topic`` (the page's title or the sentence's heading) counts toward the rest of the claim:
    a study's title names the population and the treatment that its results leave unsaid. None
    otherwise."""
    if (
        negation_count(claim)
        or _EQUAL_CLAIM.search(claim)
        or _BASELINE.search(sentence)
        or _SUBGROUP.search(sentence)
        or _NOT_THE_EFFECT.search(plain := _PARENTHESES.sub(" ", sentence))
        or _about_another(claim, plain)
    ):
        return None
    tokens = _sentence_tokens(claim)
    words = [t for t in tokens if t.isalpha() and t not in STOPWORDS]
    effects = [t for t in words if t in _EFFECT_WORDS or t in _DIRECTION]
    # "Sodium reduction lowers ...": a noun of change names the subject; the verb after it is the effect.
    effect = next((t for t in effects if not t.endswith(_CHANGE_NOUN)), effects[0] if effects else None)
    nulls = list(_NULL_RESULT.finditer(plain))
    if effect is None or not nulls:
        return None
    # "failed to lower" does not state "lowers", nor "no more effective than sham in reducing" "reduces"
    outside = _PURPOSE.sub(" ", _NULL_RESULT.sub(" ", plain))
    if any(_root(t) == _root(effect) for t in _sentence_tokens(outside)):
        return None
    at = tokens.index(effect)
    subject = {_root(t) for t in tokens[:at] if t.isalpha() and t not in STOPWORDS}
    found = _outcome_words(tokens[at + 1 :])
    outcome = set(found) - subject
    outcome = (outcome - _MEASURES) or outcome
    head = found[-1] if found and found[-1] in outcome else None
    said = {_root(t) for t in _sentence_tokens(sentence)}
    clauses = [(m, _clause_around(plain, m.start(), m.end())) for m in nulls]
    named = bool(subject) and (
        2 * len(subject & said) >= len(subject)
        or any(_abbreviates(e, " ".join(tokens[:at])) for e in entities(sentence))
        or any(_null_said_of(subject, claim, clause, m) for m, clause in clauses)
    )
    if not (named or speaks_of_the_study(sentence)):
        return None
    rest = " ".join(w for w in _WORD.findall(claim) if w.lower() != effect)
    if overlap(rest, f"{topic} {sentence}") < min_overlap:
        return None
    rest_of_sentence = plain
    for _, clause in clauses:
        rest_of_sentence = rest_of_sentence.replace(clause, " ")
    sign = _DIRECTION.get(effect)
    good = _root(effect) in _GOOD_WORDS
    for t in _sentence_tokens(rest_of_sentence):  # "..., although cardiac deaths were reduced"
        if _root(t) in subject:
            continue  # "Sodium reduction failed to lower ...": the subject's own word, not a result
        if (sign is not None and _DIRECTION.get(t) == sign) or (good and _root(t) in _GOOD_WORDS):
            return None
    outcome_text = " ".join(tokens[at + 1 :])
    for m, clause in clauses:
        if _BY_SUBGROUP.match(plain, m.end()) or _IN_CONTROL_ARM.search(clause):
            continue  # "did not differ by age group", "did not change in the control group"
        if any(_other_arms(subject, b) for b in _BETWEEN.finditer(clause)):
            continue  # "between aerobic and resistance exercise": two forms of the claim's subject
        said_here = {_root(t) for t in _sentence_tokens(clause)}
        if any(_abbreviates(e, outcome_text) for e in entities(clause)):
            said_here |= outcome  # "not associated with AF risk" for "the risk of atrial fibrillation"
        # Most of the outcome's words, or the last of three or more ("pain" of "chronic back pain"):
        # "rectal cancer" is not "colon cancer".
        if 2 * len(outcome & said_here) > len(outcome) or (len(outcome) >= 3 and head in said_here):
            return effect
    return None


_NOT_A_SUBJECT = frozenset(
    _root(w)
    for w in (
        "patient", "participant", "people", "person", "adult", "child", "children", "women", "men", "group",
        "arm", "trial", "study", "use", "user", "treatment", "therapy", "intervention", "daily", "regular",
        "high", "low", "dose",
    )
)  # fmt: skip
"""Words of a claim's subject that name no treatment or exposure of their own ("patients", "daily")."""
_CONTROL_WORDS = frozenset(_root(w) for w in ("placebo", "sham", "control", "comparison", "usual", "standard"))


def _null_said_of(subject: set[str], claim: str, clause: str, null: re.Match[str]) -> bool:
    """Whether the words before a null result in its ``clause`` are the claim's subject in other words:
    they hold a word of it that names the treatment or exposure ("Adjunctive omega-3
    supplementation did not improve ..." for "Omega-3 fatty acid supplements ..."; "training failed
    to improve ..." for "brain-training games"), no control ("placebo", "sham") and no name the claim
    lacks ("Vitamin D supplements" for "Omega-3 supplements")."""
    before = clause[: max(0, clause.find(null.group(0)))]
    roots = {_root(t) for t in _sentence_tokens(before) if t.isalpha() and t not in STOPWORDS}
    if not roots & (subject - _NOT_A_SUBJECT) or roots & _CONTROL_WORDS:
        return False
    return all(names_the_same(e, claim) or _abbreviates(e, claim) for e in _plain_names(before.strip()))


def _outcome_words(after: Sequence[str]) -> list[str]:
    """What the claim's word acts on: the :func:`_root` of the content words after it, up to a phrase
    of place, time or comparison ("working memory" of "... working memory in adolescents"). A direction
    word qualifies what follows it ("lower risk of cancer") unless it is the outcome ("reduces falls")."""
    found: list[str] = []
    for t in after:
        if found and (t in _OUTCOME_END or not (t[0].isalnum() or t in "-/'")):
            break
        if t.isalpha() and t not in STOPWORDS and t not in _EFFECT_WORDS:
            found.append(t)
    return [_root(t) for t in found if t not in _DIRECTION] or [_root(t) for t in found]


def _other_arms(subject: set[str], between: re.Match[str]) -> bool:
    """Whether "between A and B" compares two forms of the claim's subject ("between high-dose and
    standard-dose statins"): B names it and A does not, where A is no level of an exposure ("between
    high and low physical activity") and B is no absence of it ("non-users of aspirin")."""
    first, second = between.group(1), _BETWEEN_END.sub("", between.group(2))
    a = [t for t in _sentence_tokens(first) if t.isalpha()]
    b = [t for t in _sentence_tokens(second) if t.isalpha()]
    if not a or not b or a[-1] in _LEVELS or b[0] in {"non", "no", "without", "never"}:
        return False
    return bool(subject & {_root(t) for t in b}) and not subject & {_root(t) for t in a}


_CLAUSE_EDGE = re.compile(r"[;:,()]|\b(?:but|while|whereas|although|though|however)\b", re.IGNORECASE)


def _clause_around(sentence: str, start: int, end: int) -> str:
    """The clause of ``sentence`` that holds ``sentence[start:end]``: from the last comma, colon,
    bracket or contrast word before it to the first after it."""
    before = [m.end() for m in _CLAUSE_EDGE.finditer(sentence, 0, start)]
    after = _CLAUSE_EDGE.search(sentence, end)
    return sentence[(before[-1] if before else 0) : (after.start() if after else len(sentence))]


_CURE_WORD = re.compile(r"\b(?:cure[sd]?|curing|curable)\b", re.IGNORECASE)
_NO_CURE = re.compile(
    r"\b(?:(?:there\s+is|there['’]s|there\s+are)\s+(?:currently\s+|still\s+|as\s+yet\s+)?no\s+"
    r"(?:known\s+|effective\s+|permanent\s+)?cures?|(?:cannot|can['’]t|can\s+not)\s+(?:yet\s+)?be\s+cured"
    r"|(?:is|are)\s+(?:currently\s+|still\s+)?(?:incurable|not\s+curable)|no\s+(?:known\s+)?cure\s+(?:exists|is\s+known"
    r"|has\s+(?:yet\s+)?been\s+found))\b(?:\s+for\s+(?P<what>[^,.;:]+))?",
    re.IGNORECASE,
)


def no_cure(claim: str, sentence: str, topic: str = "") -> str | None:
    """The claim's word of curing ("cured") where ``sentence`` says that what the claim cures has
    no cure ("There is currently no cure, but treatment can help" on the page "Asthma", for
    "Asthma can now be cured by using a preventer inhaler"; "there is no cure for viral infections"
    for "Antibiotics cure viral infections"). What has no cure must be the claim's: each of the first
    words after "no cure for" is the claim's, else the claim's words before its cure word are said
    in the sentence or its ``topic``. None for a claim that itself denies, or where nothing says so."""
    word = _CURE_WORD.search(claim)
    if word is None or negation_count(claim):
        return None
    said = _NO_CURE.search(sentence)
    if said is None:
        return None
    if said.group("what"):
        # Each word naming it is the claim's: "hepatitis B" is not "hepatitis C".
        named = [w for w in _WORD.findall(said.group("what").lower())[:3] if w not in STOPWORDS]
        claimed = {_stem(w) for w in _WORD.findall(claim.lower())}
        about = bool(named) and all(_stem(w) in claimed for w in named)
    else:
        about = bool(content_words(claim[: word.start()]) & content_words(f"{topic} {sentence}"))
    return word.group(0) if about else None


def no_difference(claim: str, sentence: str, topic: str = "") -> str | None:
    """The claim's comparison word ("more") where ``sentence`` reports no difference between the
    two things the claim compares: "more" for "Vertically migrating fish species ingested
    microplastics more frequently than non-migratory species" against "Ingestion frequency did not
    differ between species that migrate vertically each night and non-migratory species". The
    sentence must name what the claim compares with and something of its other side, say at least
    half of the claim with the page's ``topic``, and not compare them itself. No result at
    baseline or in a subgroup, and none for a claim that denies or claims no difference. None
    otherwise."""
    if negation_count(claim) or _EQUAL_CLAIM.search(claim) or _BASELINE.search(sentence) or _SUBGROUP.search(sentence):
        return None
    plain = _PARENTHESES.sub(" ", sentence)
    if not _NULL_RESULT.search(plain) or _comparisons(plain):
        return None
    said = content_words(plain)
    for comp in _comparisons(claim):
        other = content_words(comp.other.replace("-", " ")) or {comp.other}  # "non-migratory"
        if other <= said and (comp.subject - other) & said and overlap(claim, f"{topic} {plain}") >= 0.5:
            return comp.word
    return None


def says_otherwise(claim: str, sentence: str, topic: str = "") -> str | None:
    """The claim's word that ``sentence`` denies (:func:`denial`), reports no effect or no
    difference for (:func:`null_result`, :func:`no_difference`, read with the ``topic`` of its page)
    or says there is no cure for (:func:`no_cure`), else None: either way the sentence states the
    opposite of the claim."""
    return (
        denial(claim, sentence)
        or null_result(claim, sentence, topic=topic)
        or no_difference(claim, sentence, topic)
        or no_cure(claim, sentence, topic)
    )


@functools.lru_cache(maxsize=_TEXT_CACHE)
def denies(claim: str, text: str) -> bool:
    """Whether a sentence of ``text`` says otherwise than the claim (:func:`says_otherwise`): a window
    or joined reading that holds "Vitamin D did not reduce the risk of fractures" backs no claim that
    it does, whatever its other sentences say (the model reads such windows of a structured abstract
    as support more often than the sentence)."""
    return any(says_otherwise(claim, text[a:b]) is not None for a, b in sentence_spans(text))


# -- what a sentence does not assert -----------------------------------------

_ASKING_CUE = (
    r"\b(?:determin|assess|examin|investigat|evaluat|test|explor|establish|ascertain|clarif|address|ask"
    r"|know|see|understand|stud|compar|unknown|unclear|uncertain|question|debat|controvers|doubt|decid"
    r"|disagree|divided|wonder|unsure|not\s+sure|find\s+out|(?:not|n['’]t)\s+(?:yet\s+)?clear|(?:not|n['’]t|never"
    r"|refused\s+to)\s+(?:say|disclose|reveal|confirm))\w*"
)
# No comma right before "whether" ("decided to retire, whether ..." concedes); "test" only right before
# "whether" ("tests detect whether" is a diagnostic); an "if" only after a verb of asking in the to-/past form
# or an adjective of doubt ("let your doctor know if", "a blood test if" state conditions).
_IF_CUE = (
    r"\b(?:to\s+(?:determin|assess|examin|investigat|evaluat|test|explor|establish|ascertain|clarif|see|know"
    r"|understand|decid|ask)\w*"
    r"|(?:determin|assess|examin|investigat|evaluat|explor|establish|ascertain|clarif)\w*|tested|asked|wondered"
    r"|unknown|unclear|uncertain)"
)
_ASKING = re.compile(
    rf"(?!\btests?\b(?!\s+whether)){_ASKING_CUE}(?:\s+[\w'’-]+){{0,3}}?\s+whether\b|{_IF_CUE}\s+if\b"
    r"|^\W*whether\b(?![^.;?]*\bor\b[^.;?]*,)",
    re.IGNORECASE,
)
"""A question put, not answered: "to determine whether ...", "it is unclear if ...", "Whether ... is
unknown". A bare "whether" is not enough ("whether measured by A or B", "Whether he planned it or
not, ..." concede, they do not ask), nor an "if" after other words ("known to cause harm if
swallowed" states a condition)."""
_AIMING = re.compile(
    r"^\W*(?:aims?|objectives?|purpose|goals?)\s*[:.-]?\s+to\s+\w+"
    r"|\b(?:aims?|objectives?|purpose|goals?|intent(?:ion)?)\s+of\s+(?:this|the|our|the\s+present"
    r"|these)\s+(?:\w+\s+)?"
    r"(?:study|studies|trial|review|analysis|work|paper|research|project|survey|experiment"
    r"|investigation)\b(?:\s+[\w,'’-]+){0,3}?\s+(?:was|is|were|are)\s+to\b(?!\s+be\b)"
    r"|\b(?:our|its|their|(?:[\w-]+['’]s))\s+(?:(?:main|primary|principal|stated|overall)\s+)?(?:aims?|objectives?"
    r"|purpose|goals?|intent(?:ion)?)\b(?:\s+[\w,'’-]+){0,3}?\s+(?:was|is|were|are)\s+to\b(?!\s+be\b)"
    r"|^\W*the\s+(?:(?:main|primary|principal|overall)\s+)?(?:aims?|objectives?|goals?|intent(?:ion)?)\s+(?:was|is"
    r"|were|are)\s+to\b(?!\s+be\b)"
    r"|\b(?:we|study|trial|review|analysis|authors|researchers|investigators)\s+(?:\w+\s+)?"
    r"(?:aim(?:s|ed)?|sought|seeks?|set\s+out|intend(?:s|ed)?|(?:was|were|is|are)\s+designed)\s+to\b"
    r"|\b(?:evaluat|examin|assess|review|test|investigat|explor|revisit|consider)\w*\s+(?:the\s+)?"
    r"(?:evidence|claim|hypothesis|idea|notion|view|possibility|assumption|proposition|question)\s+that\b"
    r"|\b(?:this|the|our)\s+(?:\w+\s+)?(?:study|trial|review|analysis)\s+(?:investigat|examin|assess|evaluat"
    r"|explor)\w*\s+(?:the\s+)?"
    r"(?:effects?|association|efficacy|impact|role|relationship)\b"
    r"|\b(?:which|that)\s+(?:aims?|seeks?|intends?)\s+to\b|\baiming\s+to\b"
    r"|\b(?:is|are|was|were)\s+(?:planned|scheduled|intended)\s+to\s+(?:assess|evaluate|examine|test|investigate"
    r"|determine|study|explore|establish)\b"
    r"|\bwill\s+(?:assess|evaluate|examine|test|investigate|determine|explore|establish)\b",
    re.IGNORECASE,
)
"""What a study or a programme set out to do ("The aim of this trial was to test ...", "We sought
to ...", "This review evaluates the evidence that ...", "the Pledge, which aims to cut emissions by
30%", "Larger trials are planned to assess long-term safety"): its finding, if any, is elsewhere."""
_SUPPOSING = re.compile(
    r"\b(?:hypothes[ie][sz]e[ds]?|postulated|speculated)\s+that\b|\bhypothesis\s+(?:is\s+|was\s+)?that\b"
    r"|\bit\s+(?:has\s+been|had\s+been|was)\s+(?:suggested|proposed|hypothesi[sz]ed|speculated|postulated)\b"
    r"|\bit\s+is\s+(?:hypothesi[sz]ed|speculated|postulated)\b|\bhypothesis\s+(?:proposes|suggests|holds|states"
    r"|posits)\s+that\b"
    r"|\b(?:previous|prior|earlier|past|some|several|many|other)\s+(?:\w+\s+)?(?:studies|research|reports|work|trials"
    r"|authors|investigators|researchers|historians|scholars|scientists|experts|critics|commentators|sceptics"
    r"|skeptics|theorists)\s+(?:have\s+|has\s+|had\s+)?(?:suggested|proposed|hypothesi[sz]ed"
    r"|speculated|postulated)\b"
    r"|\b(?:some|many|other|most)\s+(?:\w+\s+)?(?:people|patients|parents|users|proponents|supporters|advocates"
    r"|believers)\s+(?:still\s+|also\s+)?(?:believe|believed|think|thought|claim|claimed|feel|felt)\b",
    re.IGNORECASE,
)
"""A supposition, the study's own or others' ("We hypothesised that ...", "Previous studies have
suggested that ...", "Some people believe that ..."): the background a study tests or a popular
belief, not what the text finds."""
_FINDING = re.compile(
    r"\b(?:found|find|finds|finding|show(?:s|ed|n)?|demonstrat\w*|observ(?:ed|es|e|ing|ations?)|confirm\w*"
    r"|reveal\w*|conclud\w*"
    r"|results?(?!\s+in\b)|ruled|determined\s+that|established\s+that|held\s+that|said|says|accepted)\b"
    r"|\b(?:it|they|he|she|this)\s+(?:did|does|do|was|were|is|are|can|could|has|had)"
    r"(?:\s*n['’]?t|\s+not)?\s*[.!]?\s*$",
    re.IGNORECASE,
)
_ENDORSING = re.compile(
    r"\b(?:confirm\w*|support\w*|contrary\s+to|consistent\s+with|in\s+line\s+with|refut\w*|reject\w*)\b",
    re.IGNORECASE,
)
"""Words before a hypothesis that say what became of it ("The results confirmed the hypothesis that ...")."""
_CLAUSE_END = re.compile(
    r"\s*;|,?\s+(?:but|although|though|however|whereas|yet)\b|,\s+and\s+(?:it|they|he|she|this|these|we)\b",
    re.IGNORECASE,
)
"""Where an asserted clause may follow the question ("It is unclear whether X, but it clearly Y")."""
_ANSWER = re.compile(
    r"\s*(?:(?:yes|no)\b(?=\s*[,.!;:—–-])|(?:absolutely|definitely|certainly|very|not\s+really)\b"
    r"|[^?]*?\b(?:says?|show(?:s|ed|n)?|suggests?|found|finds)\s+(?:yes|no|(?:that\s+)?(?:it|they)\s+"
    r"(?:do|does|did|is|are|can|can['’]t|cannot|isn['’]t|aren['’]t)\b))",
    re.IGNORECASE,
)
"""An answer that follows a question ("Yes,", "Studies show it does"): the question is answered."""
_QUESTION = re.compile(
    r"^\W*(?:[A-Za-z][\w ]{0,20}:\s*|[^?:]{0,80}\bquestions?\s*:\s*)?(?:(?:but|and|so|yet|then|or)\s+"
    r"|(?:in|among|for)\s+[^,?]{1,60},\s*"
    r"(?=(?:does|do|did|is|are|can|could|should|will|would|has|have|may|might)\b))?"
    r"(?!did\s+you\s+know\b|who\s+(?:could|can)\s+(?:forget|deny)\b)(?:does|do|did|is|are|was|were|am|can|could"
    r"|should|shall|will|would|has"
    r"|have|had|may|might|must|how|what|why|when|where|which|who|whom|whose)\b[^?]*\?\W*$",
    re.IGNORECASE,
)
"""A sentence that asks ("Does X improve Y?", "Question: Can ...?", "This review will address the
question: does X improve Y?"); one that ends in a title with a
question mark ("... in the film Dude, Where's My Car?") does not."""
_SPEAKS_OF_AIMS = re.compile(
    r"\?\W*$|\b(?:aims?|aimed|goals?|purpose|objectives?|intend\w*|hypothes\w*|whether|suggest\w*|propos\w*"
    r"|speculat\w*|postulat\w*|seeks?|sought|pledg\w*|commit\w*|plans?|planned|planning|targets?|targeted|mission"
    r"|(?:launched|designed|built|created|founded|set\s+up|set\s+out)\s+to)\b",
    re.IGNORECASE,
)
"""A claim about an aim, a question or a supposition ("The programme aims to promote ..."): an aim
on the page is what backs it."""


@_Memoised
def _unasserted_spans(text: str) -> tuple[tuple[int, int], ...]:
    """The spans of ``text`` that put a question, an aim or a supposition without asserting it:
    from the cue to the end of its clause (:data:`_CLAUSE_END`), where no finding follows the cue
    in the sentence (:data:`_FINDING`) and no verdict precedes it (:data:`_ENDORSING`); or a whole
    question (:data:`_QUESTION`) that no answer follows (:data:`_ANSWER`) and that is no title
    ("Who's Afraid of Virginia Woolf? is a play")."""
    spans: list[tuple[int, int]] = []
    for start, end in sentence_spans(text):
        sentence = text[start:end]
        if _QUESTION.match(sentence):
            if re.match(r"\s*[a-z]", text[end:]):
                continue  # a title: "Who's Afraid of Virginia Woolf? is a play by ..."
            if not _ANSWER.match(text, end):  # "Can exercise ease anxiety? Yes." is answered
                spans.append((start, end))
            continue
        cues = [m for pattern in (_ASKING, _AIMING, _SUPPOSING) for m in pattern.finditer(sentence)]
        if not cues:
            continue
        cue = min(cues, key=lambda m: m.start())
        if _FINDING.search(sentence, cue.end()) or _ENDORSING.search(sentence, 0, cue.start()):
            continue
        stop = _CLAUSE_END.search(sentence, cue.end())
        spans.append((start + cue.start(), start + (stop.start() if stop else len(sentence))))
    return tuple(spans)


@functools.lru_cache(maxsize=_TEXT_CACHE)
def unasserted(claim: str, text: str) -> bool:
    """Whether ``text`` says what the claim says only inside a question, an aim or a supposition
    ("This study examined whether vitamin D reduces fractures", "Does X improve Y?", "We
    hypothesised that ..."): more of the claim's content words there than in the rest of the text,
    and fewer than half in the rest. Such a text tells what a study asked, not what it found, so it
    can neither back the claim nor contradict it. A claim that itself speaks of an aim, a question
    or a supposition ("The programme aims to ...", "Whether X helps is unknown") is never read so."""
    spans = _unasserted_spans(text)
    if not spans or _SPEAKS_OF_AIMS.search(claim):
        return False
    inside = " ".join(text[start:end] for start, end in spans)
    said_inside, said_outside = overlap(claim, inside), overlap(claim, asserted_text(text))
    return said_inside > said_outside and said_outside < 0.5


@_Memoised
def asserted_text(text: str) -> str:
    """``text`` without the spans that only ask, aim at or suppose something (those
    :func:`unasserted` reads): what it asserts."""
    kept, pos = [], 0
    for start, end in _unasserted_spans(text):
        kept.append(text[pos:start])
        pos = end
    kept.append(text[pos:])
    return " ".join(kept)


def speaks_of_aims(claim: str) -> bool:
    """Whether the claim itself is about an aim, a question or a supposition ("The programme aims to
    ..."): an aim on the page is then what backs it."""
    return _SPEAKS_OF_AIMS.search(claim) is not None


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
    last") are not read for opposites. Words that say which way something moves ("increases",
    "lower") are read with what they move (:func:`direction_flip`). None otherwise."""
    ours, theirs = _than_anchor(claim), _than_anchor(evidence)
    if ours and theirs and ours != theirs:
        return None  # "the Nile is longer than the Amazon" told from the Amazon's side
    claim_words = {w for w in _LOWER_WORD.findall(_IDIOMS.sub(" ", claim).lower())}
    ev_words = {w for w in _LOWER_WORD.findall(_IDIOMS.sub(" ", evidence).lower())}
    # The claim's word need not be missing from the evidence (a sentence may hold both words).
    new_words = ev_words - claim_words
    pairs = sorted(
        (other, word)
        for word in claim_words
        for other in opposites(word) & new_words
        if not (word in _DIRECTION and other in _DIRECTION)
    )
    for other, word in pairs:
        if _rest_overlap(claim, word, evidence) >= min_overlap:
            return word, other
    return direction_flip(claim, evidence, min_overlap)


_KIND_TOKEN = re.compile(r"[a-z]+")


def _kind_tokens(text: str) -> list[str]:
    """Lower-case words, hyphenated ones split ("singer-guitarist" -> "singer", "guitarist"), without "'s"."""
    return [w for w in _KIND_TOKEN.findall(matchable(text).lower()) if w != "s"]


def _slots(tokens: list[str], forms: set[str]) -> list[tuple[str | None, str | None]]:
    """The content words either side of each occurrence of a word whose form is in ``forms``."""
    content = [_form(w) for w in tokens if w not in STOPWORDS]
    return [
        (content[i - 1] if i > 0 else None, content[i + 1] if i + 1 < len(content) else None)
        for i, f in enumerate(content)
        if f in forms
    ]


def _same_slot(claim_tokens: list[str], word: str, ev_tokens: list[str], other: str) -> bool:
    """Whether ``other`` stands where the claim has ``word``: the same content word just before it or
    just after it ("symptoms of depression" for "symptoms of anxiety"), or the claim is the word alone.
    Another of the kind mentioned in passing ("after studies in mice, the trial tested the drug in
    40 volunteers") is in no slot of the claim's."""
    ours, theirs = _slots(claim_tokens, {_form(word)}), _slots(ev_tokens, {_form(other)})
    if theirs and (None, None) in ours:
        return True
    return any(
        (left is not None and left == ev_left) or (right is not None and right == ev_right)
        for left, right in ours
        for ev_left, ev_right in theirs
    )


@functools.lru_cache(maxsize=_TEXT_CACHE)
def kind_swap(claim: str, evidence: str, min_overlap: float = 0.6) -> tuple[str, str] | None:
    """A word of the claim that the evidence leaves out where it says another of the same kind
    (:data:`~guardrail.judges._lexicon.KINDS`) in the claim word's place (:func:`_same_slot`) that
    the claim leaves out, while matching the rest of the claim (at least ``min_overlap`` of its other
    content words): ("anxiety", "depression") for "Exercise reduces symptoms of anxiety." against
    "Exercise reduced symptoms of depression." Words are compared by their form (:func:`_form`: "rat"
    and "rats", "guitarist" says "guitar", "obese" says "obesity"), hyphenated ones split. A sentence
    that names both ("played guitar and piano") swaps nothing. None otherwise."""
    claim_tokens, ev_tokens = _kind_tokens(claim), _kind_tokens(evidence)
    claim_words, ev_words = set(claim_tokens), set(ev_tokens)
    ev_forms = {_form(w) for w in ev_words}
    claim_forms = {_form(w) for w in claim_words}
    for word in sorted(claim_words - ev_words):
        if _form(word) in ev_forms:
            continue
        others = sorted(w for w in ev_words if _form(w) in _kind_forms(_form(word)) and _form(w) not in claim_forms)
        if not others or _rest_overlap(claim, word, evidence) < min_overlap:
            continue
        for other in others:
            if _same_slot(claim_tokens, word, ev_tokens, other):
                return word, other
    return None


_FORMS = {
    # Irregular plurals.
    "men": "man",
    "women": "woman",
    "wives": "wife",
    "mice": "mouse",
    "children": "child",
    # A player says the instrument; an adjective says the condition.
    "guitarist": "guitar",
    "guitarists": "guitar",
    "pianist": "piano",
    "pianists": "piano",
    "drummer": "drum",
    "drummers": "drum",
    "violinist": "violin",
    "cellist": "cello",
    "saxophonist": "saxophone",
    "trumpeter": "trumpet",
    "flautist": "flute",
    "flutist": "flute",
    "harpist": "harp",
    "clarinetist": "clarinet",
    "clarinettist": "clarinet",
    "obese": "obesity",
    "depressive": "depression",
    "depressed": "depression",
    "autistic": "autism",
    "asthmatic": "asthma",
    "epileptic": "epilepsy",
    "schizophrenic": "schizophrenia",
    "hypertensive": "hypertension",
    "insomniac": "insomnia",
}


def _form(word: str) -> str:
    """The word as one form of it: "women" and "woman", "rats" and "rat", "drummer" and "drum" (a
    player says the instrument), "obese" and "obesity"."""
    if word in _FORMS:
        return _FORMS[word]
    if word.endswith("sses"):
        return word[:-2]  # "princesses" -> "princess" (not "princes")
    if word.endswith("ss"):
        return word  # "princess", "actress" keep their "ss"
    if len(word) == 4 and word.endswith("s") and not word.endswith(("us", "is")):
        return word[:-1]  # "rats", "pigs": too short for _stem
    return _stem(word)


@functools.lru_cache(maxsize=4096)
def _kind_forms(form: str) -> frozenset[str]:
    """The forms of the other words of the kind of any word whose form is ``form``."""
    out = {_form(other) for word, others in KINDS.items() if _form(word) == form for other in others}
    out.discard(form)
    return frozenset(out)


def _rest_overlap(claim: str, word: str, evidence: str) -> float:
    """:func:`overlap` of the claim without every occurrence of ``word`` (lower case, whole words):
    how much of the rest of the claim the evidence says."""
    return overlap(" ".join(w for w in _WORD.findall(claim) if w.lower() != word), evidence)


_THAN = re.compile(r"\bthan\s+((?:[\w'\-]+\s*){1,4})", re.IGNORECASE)
_THAN_SKIP = frozenset({"the", "a", "an", "in", "that", "those", "of", "for", "at", "on"})


def _than_anchor(text: str) -> tuple[str, ...]:
    """What a comparison compares with: the words after its "than" ("than Team B" -> ("team", "b"),
    "than in Japan" -> ("japan",)); empty when the text compares nothing. A capital "A" is a name
    here, not an article."""
    m = _THAN.search(text)
    if m is None:
        return ()
    words = [w for w in re.findall(r"[\w'\-]+", m.group(1)) if w == "A" or w.lower() not in _THAN_SKIP]
    return tuple(w.lower() for w in words[:2])


_UP_WORDS = (
    "increase increases increased increasing rise rises rose risen rising grow grows grew grown growing growth "
    "higher highest more greater greatest larger largest bigger biggest raise raises raised raising boost boosts "
    "boosted boosting elevate elevates elevated elevating enhance enhances enhanced enhancing expand expands "
    "expanded expanding accelerate accelerates accelerated accelerating gain gains gained gaining"
)
_DOWN_WORDS = (
    "decrease decreases decreased decreasing reduce reduces reduced reducing reduction reductions lower lowers "
    "lowered lowering lowest less lesser least fewer fewest smaller smallest fall falls fell fallen falling drop "
    "drops dropped dropping decline declines declined declining shrink shrinks shrank shrunk shrinking diminish "
    "diminishes diminished diminishing lessen lessens lessened weaken weakens weakened slower slowest"
)
_DIRECTION: dict[str, int] = {**{w: 1 for w in _UP_WORDS.split()}, **{w: -1 for w in _DOWN_WORDS.split()}}
"""Words that say which way a quantity moves or compares: +1 up, -1 down."""
_BREAK_WORDS = (
    "and but or while whereas although though than compared versus vs which who that when because if "
    "after before during since until following by from to at for among within across over per with in on as "
    "between into through amid despite"
)
_TARGET_BREAK = frozenset(_BREAK_WORDS.split())
"""Words that end what a direction word moves: a new clause, or a phrase of time, place, agent or
measure ("rose after the treatment" moves what came before it, not the treatment)."""
_DIRECTION_TOKEN = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|\d[\d,.]*|[$€£,;:.!?()]")
_AUXILIARY = frozenset({"is", "are", "was", "were", "has", "have", "had", "will", "would", "can", "could", "may", "be"})
_NEGATOR = frozenset({"not", "no", "never", "without", "nor", "neither", "n't", "cannot"})
_RELATIVE = frozenset({"which", "that", "who"})


@_Memoised
def _directions(text: str) -> tuple[tuple[int, str, frozenset[str], bool], ...]:
    """Each direction word of ``text`` that no negation governs, with its sign and what it moves: the
    content words after it up to a clause break ("lower risk of diabetes", "increased blood
    pressure"), or, when none follow, those before it ("blood pressure rose"); an empty set where
    the sentence does not say ("Prices, which had fallen, rose": the "rose" moves the prices too);
    and whether it was read ahead of the word (False: "... and conceded fewer", where the word
    before may be a verb, not the thing moved)."""
    cased = _DIRECTION_TOKEN.findall(_IDIOMS.sub(" , ", text.replace("\u2019", "'")).replace("n't", " n't"))
    tokens = [t.lower() for t in cased]
    found: list[tuple[int, str, frozenset[str], bool]] = []
    for i, token in enumerate(tokens):
        sign = _DIRECTION.get(token)
        if sign is None or any(t in _NEGATOR for t in tokens[max(0, i - 3) : i]):
            continue
        mid_sentence = i > 0 and tokens[i - 1] not in ".!?:;"
        if cased[i][0].isupper() and (mid_sentence or (cased[i + 1 : i + 2] and cased[i + 1][0].isupper())):
            continue  # "the Fall enrollment", "Greater Manchester": a name, not a direction
        if tokens[i - 1 : i] == ["of"]:
            continue  # "the risk of falls", "a rate of decline": the name of what is counted
        if tokens[i + 1 : i + 2] == ["than"] and tokens[i + 2 : i + 3] and not tokens[i + 2][0].isalpha():
            continue  # "more than 200 million": a bound on a value, which the quantity checks read
        after = tokens[i + 1 : i + 2]
        if after and after[0] in _AUXILIARY:
            # "tree-ring growth is discussed": a noun, which moves what qualifies it
            target, ahead = _direction_target(tokens[:i][::-1], backward=True), False
        else:
            following = tokens[i + 1 :]
            if tokens[i - 1 : i] in (["a"], ["an"], ["the"]) and following[:1] == ["in"]:
                following = following[1:]  # "an increase in the birth rate": a noun, and what it moves
            target = _direction_target(following)
            ahead = bool(target)
            if not ahead:
                target = _direction_target(tokens[:i][::-1], backward=True)
        found.append((sign, token, target, ahead))
    return tuple(found)


def _direction_target(tokens: Sequence[str], backward: bool = False) -> frozenset[str]:
    """Up to three content words (stemmed) from the start of ``tokens``, stopping at a clause break or
    another direction word. ``backward`` (``tokens`` reversed, read towards the sentence's start)
    also reads past a comma, a relative pronoun or an auxiliary to the noun they follow ("a median
    income of $87,894, which is higher")."""
    words: list[str] = []
    for token in tokens:
        if (
            token[0].isdigit()
            or token in "$€£"
            or (backward and (token == "," or token in _RELATIVE or token in _AUXILIARY))
        ):
            continue
        if not token[0].isalpha() or token in _TARGET_BREAK or token in _DIRECTION:
            break
        if token not in STOPWORDS and len(token) > 1 and not (token.endswith("ly") and len(token) > 4):
            words.append(_stem(token))  # adverbs ("rose sharply") say how, not what
            if len(words) == 3:
                break
    return frozenset(words)


def direction_flip(claim: str, evidence: str, min_overlap: float = 0.6) -> tuple[str, str] | None:
    """A direction word of the claim and one of the evidence that move the same thing opposite ways
    ("increases the risk of diabetes" against "associated with a lower risk of diabetes"), where the
    evidence never moves it the claim's way and matches the rest of the claim (``min_overlap`` of its
    other content words). What each word moves decides: "higher coffee consumption was associated
    with a lower risk" states no opposite of "a lower risk". A claim whose every direction is
    turned ("higher income, lower mortality" against "lower income, higher mortality") states the
    same link from its other end. None otherwise."""
    theirs = _directions(evidence)
    if not theirs:
        return None
    ours = [(sign, word, target) for sign, word, target, _ in _directions(claim) if target]
    flips: list[tuple[str, str]] = []
    for sign, word, target in ours:
        against = [(other, t) for s, other, t, _ in theirs if s != sign and t and _same_target(target, t)]
        # A direction word that does not say what it moves ("..., then rose"), or says it only by the
        # words before it ("scored more goals and conceded fewer"), may move the claim's.
        if not against or any(s == sign and (not ahead or _same_target(target, t)) for s, _, t, ahead in theirs):
            continue
        if any(s != sign and _same_target(mine, t) for s, _, mine in ours for _, t in against):
            continue  # the claim moves it that way too ("raised HDL levels and lowered LDL levels")
        if _rest_overlap(claim, word, evidence) >= min_overlap:
            flips.append((word, against[0][0]))
    if not flips or (len(flips) >= 2 and len(flips) == len(ours)):
        return None
    return flips[0]


def _same_target(claimed: frozenset[str], other: frozenset[str]) -> bool:
    """Whether a direction word moves what one of the claim moves (``claimed``): at least half of
    the claim's words for it ("sea ice" of "Antarctic sea ice" is not "ice in the Greenland ice
    sheet"; "blood pressure" is "systolic blood pressure")."""
    shared = len(claimed & other)
    return shared > 0 and 2 * shared >= len(claimed)


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
    if text[:start].strip(_OPENING_MARKS):
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
    does not name "the Alder River"; "William" names "William of Normandy"). A name made of generic
    words only needs all of them."""
    words = _word_bag(evidence)
    parts = [w.lower() for w in re.findall(r"[\w\u00c0-\u024f]+", name) if w.lower() not in _NOT_ENTITY]
    distinctive = [w for w in parts if w not in GENERIC_NAME_WORDS]
    present = [w in words or _stem(w) in words for w in distinctive or parts]
    # "William" names "William of Normandy" as a surname names a person: the words after "of" are a title.
    titled = (
        len(distinctive) >= 2
        and _TITLED.match(name) is not None
        and distinctive[0] == parts[0]
        and parts[0] not in _TITLE_HEADS
    )
    return all(present) or (len(distinctive) >= 2 and present[-1]) or (titled and present[0])


_TITLED = re.compile(r"^\s*(?:the\s+)?[A-Z][\w\u00c0-\u024f'-]*\s+of\s+[A-Z]")
"""A name made of a name and a title ("William of Normandy", "Catherine of Aragon")."""
_TITLE_HEADS = frozenset(
    {
        "duke", "duchess", "earl", "count", "countess", "king", "queen", "prince", "princess", "lord", "lady",
        "baron", "bishop", "archbishop", "pope", "emperor", "empress", "sultan", "tsar", "president", "governor",
        "mayor", "chancellor", "minister", "secretary", "house", "isle", "siege", "treaty", "order", "department",
        "ministry", "office", "port", "fort", "point", "mouth", "head", "book", "gospel", "statue", "tomb",
    }
)  # fmt: skip
"""Words that open a title rather than a name ("Duke of Wellington", "Isle of Wight"): alone, they
name nothing in particular."""


def missing_entities(claim: str, evidence: str) -> list[str]:
    """Names in the claim of which the evidence mentions none of the distinctive words."""
    words = _word_bag(evidence)
    return [e for e in entities(claim) if not _entity_present(e, words)]


def role_swap(claim: str, evidence: str) -> tuple[str, str] | None:
    """Two names that the claim and the evidence join by the same words in the opposite order:
    ("Italy", "Spain") for "Italy defeated Spain in the final." against "Spain defeated Italy in the
    final." (the roles of a relation reversed). A passive restatement ("Spain was defeated by
    Italy") joins them by other words, so it is no swap. Failing that, the other ways a sentence
    reverses a relation: a comparison (:func:`compared_swap`), a preference
    (:func:`preferred_swap`) or a change (:func:`swapped_change`). None otherwise."""
    lowered = evidence.lower()
    names = [(claim.find(n), n) for n in entities(claim)]
    names = sorted((i, n) for i, n in names if i >= 0 and n.lower() in lowered)
    for (i1, a), (i2, b) in itertools.combinations(names, 2):
        between = " ".join(claim[i1 + len(a) : i2].split()).lower()
        if not between or len(between.split()) > 6 or not _WORD.search(between):
            continue
        if f"{b.lower()} {between} {a.lower()}" in " ".join(lowered.split()):
            return a, b
    return compared_swap(claim, evidence) or preferred_swap(claim, evidence) or swapped_change(claim, evidence)


_PREFERRING = re.compile(r"\b(?:rather\s+than|instead\s+of)\b", re.IGNORECASE)
_PREFERENCE_END = re.compile(
    r"[.;:(),]|\s(?:but|whereas|while|although|though|and\s+(?:it|they|this))\s", re.IGNORECASE
)
_PREFERENCE_WORDS = 6
"""How many words on each side of "rather than" name one of the two things (the clause's tail
before it, its head after it)."""


def _preferences(text: str) -> list[tuple[frozenset[str], frozenset[str]]]:
    """(what is preferred, what is passed over) for each "A rather than B" or "A instead of B" of
    ``text``, as the content words of up to :data:`_PREFERENCE_WORDS` words each side."""
    out = []
    for m in _PREFERRING.finditer(text):
        before = _PREFERENCE_END.split(text[: m.start()].rstrip(" ,"))[-1].split()[-_PREFERENCE_WORDS:]
        after = _PREFERENCE_END.split(text[m.end() :])[0].split()[:_PREFERENCE_WORDS]
        chosen, passed = content_words(" ".join(before)), content_words(" ".join(after))
        if chosen and passed:
            out.append((chosen, passed))
    return out


def preferred_swap(claim: str, evidence: str) -> tuple[str, str] | None:
    """A word of what the claim prefers and of what it passes over (stemmed), where the evidence
    puts the two the other way round: ("issu", "current") for "CBT focuses on issues from a
    person's past rather than their current problems" against "CBT deals with your current
    problems, rather than focusing on issues from your past": each side of the claim's "rather
    than" (or "instead of") shares words with the other side of the evidence's, and more than with
    its own side. None otherwise, and where the evidence says it the claim's way too."""
    theirs = _preferences(evidence)
    for chosen, passed in _preferences(claim):
        for their_chosen, their_passed in theirs:
            crossed_chosen, crossed_passed = chosen & their_passed, passed & their_chosen
            kept = len(chosen & their_chosen) + len(passed & their_passed)
            if crossed_chosen and crossed_passed and len(crossed_chosen) + len(crossed_passed) > kept:
                return min(crossed_chosen), min(crossed_passed)
    return None


_CHANGE = re.compile(
    r"\bfrom\s+(?:about\s+|around\s+|roughly\s+|approximately\s+)?(?P<start>[$€£]?(?:" + _NUM + r"))"
    r"(?![\d,.])[^.;:]{0,60}?\bto\s+(?:about\s+|around\s+|roughly\s+|approximately\s+)?"
    r"(?P<end>[$€£]?(?:" + _NUM + r"))(?![\d,])",
    re.IGNORECASE,
)


def _changes(text: str) -> list[tuple[str, str, float, float]]:
    """(start, end, start value, end value) of each "from A ... to B" with numbers of ``text``."""
    out = []
    for m in _CHANGE.finditer(matchable(text)):
        start, end = m.group("start"), m.group("end")
        a, b = (float(x.lstrip("$€£").replace(",", "")) for x in (start, end))
        if not _same_value(a, b):
            out.append((start, end, a, b))
    return out


def swapped_change(claim: str, evidence: str) -> tuple[str, str] | None:
    """A change the evidence states the other way round, as the claim's (start, end) in
    :func:`matchable`'s writing ("$1200" for "$1,200"): ("3.6", "1.4")
    for "has slowed from 3.6 millimetres per year to 1.4" against "has more than doubled from 1.4
    millimetres per year ... to 3.6 millimetres per year". None where no "from A to B" of the
    claim's numbers is reversed in the evidence, or where the evidence also states it the claim's
    way."""
    theirs = [(a, b) for _, _, a, b in _changes(evidence)]
    for start, end, a, b in _changes(claim):
        if any(_same_value(a, x) and _same_value(b, y) for x, y in theirs):
            continue
        if any(_same_value(a, y) and _same_value(b, x) for x, y in theirs):
            return start, end
    return None


_COMPARATIVE_WORDS = (
    "more greater higher larger bigger longer faster older later stronger heavier richer taller wider deeper hotter "
    "warmer better fewer less lower smaller shorter slower younger earlier weaker lighter cheaper poorer narrower "
    "shallower colder cooler worse"
)
_COMPARATIVES = frozenset(_COMPARATIVE_WORDS.split())
"""Comparison words ("fewer ... than", "more ... than")."""
_COMPARISON = re.compile(
    r"\b(" + "|".join(sorted(_COMPARATIVES)) + r")\b((?:\s+[\w'\-]+){0,5}?)\s+than\s+(?![\d$€£])", re.IGNORECASE
)
_CLAUSE = re.compile(r"[;:(),]|\s(?:but|whereas|while|although|though)\s", re.IGNORECASE)
"""Where one comparison's clause ends and another's may begin."""


@dataclass(frozen=True)
class _Compared:
    word: str  # the comparison word, lower case
    subject: frozenset[str]  # content words of its clause before the comparison word (what is compared)
    other: str  # the first content word after "than" (what it is compared with), stemmed
    words: frozenset[str]  # all content words of its clause


def _comparisons(text: str) -> list[_Compared]:
    """Every comparison of ``text``, clause by clause ("fewer major bleeding events than apixaban");
    a comparison with a number ("more than 200 people") is a quantity, not one."""
    out = []
    for clause in _CLAUSE.split(text):
        for m in _COMPARISON.finditer(clause):
            anchor = _than_anchor(clause[m.start() :])
            if anchor:
                subject = content_words(clause[: m.start()])
                out.append(_Compared(m.group(1).lower(), subject, _stem(anchor[0]), content_words(clause)))
    return out


def compared_swap(claim: str, evidence: str) -> tuple[str, str] | None:
    """The two things a comparison puts the other way round, lower case: ("warfarin", "apixaban")
    for "Warfarin was associated with fewer bleeding events than apixaban." against "Apixaban was
    associated with significantly fewer bleeding events than warfarin.": a clause of the evidence
    holds every content word of the claim's comparison clause, with the same comparison word and
    each thing in the other's place. Told from the other side ("Apixaban ... more bleeding events
    than warfarin", "more slowly" for "more quickly"), a clause that also says it the claim's way
    ("Warfarin is cheaper than apixaban, but apixaban caused fewer strokes than warfarin") or one
    that leaves a word out ("Women are more likely than men to attempt suicide" for "Men are more
    likely than women to die by suicide"): None."""
    theirs = _comparisons(evidence)
    if not theirs:
        return None
    for ours in _comparisons(claim):
        same = [c for c in theirs if c.word == ours.word and ours.words <= c.words]
        if any(c.other == ours.other for c in same):
            continue  # the evidence also compares them the claim's way
        for c in same:
            if c.other != ours.other and ours.other in c.subject and c.other in ours.subject:
                return c.other, ours.other
    return None


def substituted_entity(claim: str, evidence: str) -> tuple[str, str] | None:
    """A name of the claim (not its opening subject) that the evidence does not mention where the
    evidence names someone or something else of the same shape (one word, or several) that the claim does not mention:
    ("Brad Pitt", "Leonardo DiCaprio") for "It starred Brad Pitt and Kate Winslet." against "It
    stars Kate Winslet and Leonardo DiCaprio."; else another doer of the claim's act
    (:func:`other_agent`). A name the evidence lists beside one of the claim's ("in Sydney, Canberra,
    Kununurra, and Bowen" for the claim's "Canberra") is in no other name's place, unless the claim
    lists the two as well. Whether the rest of the claim matches the evidence closely enough for
    that to be a contradiction is the caller's rule (see ``overlap``)."""
    # A name at the very start of the claim is its subject; a lone evidence sentence often names
    # its subject by a pronoun only ("She took a teaching position..."), so its absence says nothing.
    missing = [m for m in missing_entities(claim, evidence) if len(claim[: max(0, claim.find(m))].split()) >= 2]
    if not missing:
        return other_agent(claim, evidence)
    claim_words = _word_bag(claim)
    # A section label ("Results: ") or a statistic ("95% CI 19 to 49") is no one in the claim's name's place.
    names = _plain_names(evidence)
    extra = [e for e in names if not _entity_present(e, claim_words)]
    kept = [e for e in names if e not in extra]
    for name in missing:
        multi = len(name.split()) > 1
        # "Production took place in Sydney, Canberra and Bowen": Sydney stands beside the claim's
        # Canberra, not in the place of its film "Australia" (unless the claim lists the two).
        apart = [k for k in kept if not _listed_together(claim, name, k)]
        for other in extra:
            if (len(other.split()) > 1) != multi:
                continue
            if any(_listed_together(evidence, other, k) for k in apart):
                continue
            return name, other
    return other_agent(claim, evidence)


_LIST_GAP = re.compile(r"(?:\s|,|;|&|\band\b|\bor\b|\bthe\b|[A-Z][\w'\u2019.-]*)+")


def _listed_together(text: str, a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` stand in one list of names in ``text`` ("Sydney, Canberra,
    Kununurra, and Bowen"; "Brad Pitt and Kate Winslet"; "the East and the South"): only names,
    commas, "the" and "and" / "or" between them, and the list joined by "and" or "or"."""
    first, second = text.find(a), text.find(b)
    if first < 0 or second < 0 or first == second:
        return False
    if first > second:
        first, second, a, b = second, first, b, a
    gap = text[first + len(a) : second]
    if _LIST_GAP.fullmatch(gap) is None:
        return False
    # A list joins its last names with "and" or "or", between the two or after them: "Born in New
    # Orleans, Rice spent ..." is a phrase and a subject, not a list.
    return _CONJUNCTION.search(gap) is not None or _LIST_GOES_ON.match(text, second + len(b)) is not None


_CONJUNCTION = re.compile(r"&|\b(?:and|or)\b")
_LIST_GOES_ON = re.compile(r",\s*(?:(?:and|or)\s+)?[A-Z]")


_ACT_BY = r"\b(?P<verb>[a-z]{3,}ed|led|won|held|built|made|written|sung|drawn|taken|given)\s+by\s+"
_AGENT = re.compile(
    _ACT_BY + r"(?:the\s+)?(?P<names>[A-Z][\w'\u2019.-]*"
    r"(?:(?:\s+|,\s*|\s+and\s+)(?:(?:de|da|van|von|of|the)\s+)?[A-Z][\w'\u2019.-]*)*)"
)
_AGENT_IN_EVIDENCE = re.compile(_ACT_BY + r"(?P<doer>[^.;:()]{1,80})")


def other_agent(claim: str, evidence: str) -> tuple[str, str] | None:
    """The name the claim gives as the doer of an act ("led by Edmund Hillary") and the other name
    the evidence gives for the same act ("a British expedition led by John Hunt"), where the
    evidence names the claim's elsewhere (Hillary climbed; Hunt led): what
    :func:`substituted_entity` cannot see, the claim's name being on the page. None where the
    evidence's words after the act hold the claim's name ("founded by Jobs, Wozniak and Wayne" for
    "founded by Jobs", "recorded by American singer Katy Perry") or it states no doer of that act."""
    for m in _AGENT.finditer(claim):
        verb, name = m.group("verb").lower(), m.group("names").rstrip(".")
        doers = [a.group("doer") for a in _AGENT_IN_EVIDENCE.finditer(evidence) if a.group("verb").lower() == verb]
        others = [n for doer in doers for n in entities(doer.split(",")[0])]
        if others and not any(names_the_same(name, doer) for doer in doers):
            return name, others[0]
    return None
