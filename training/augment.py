"""Synthetic training pairs for the judge (FactCC-style edits of supported claims).

From a claim that its evidence supports, small edits make a claim that the same evidence
**contradicts** (a number or year changed to a value the evidence does not state, a name
swapped for another name the evidence does not mention, a negation added or removed, a word
swapped for its antonym), and edits make a claim the evidence leaves **neutral** (an
unsupported clause or year added, or one of the claim's details taken out of the evidence), and
edits of the evidence that keep it **supporting** (the claim's subject named by a pronoun, as a
sentence on the subject's own page does). Every edit is checked against the evidence so that the new
label holds: a swapped number must differ from every value the evidence states, a swapped-in name
must be absent from the evidence, a bounded quantity ("more than 100") is never edited.

Used only by :mod:`training.train`; pure functions of text and a seeded ``random.Random``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from guardrail.judges import _checks as checks

_BOUNDED = re.compile(
    r"(?:more|less|fewer|greater|higher|lower|larger|smaller)\s+than\s*$|"
    r"(?:over|under|above|below|about|around|almost|nearly|approximately|roughly|some|up to|at least|at most|"
    r"than|c\.|circa|~)\s*$",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
# The spelled-out numbers a claim's number may be swapped with (order matters: seeded choices).
_WORD_NUMBERS = {
    w: int(checks._NUMBER_WORDS[w])
    for w in ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "twenty")
}
_WORD_NUMBER_RE = re.compile(r"\b(" + "|".join(_WORD_NUMBERS) + r")\b", re.IGNORECASE)


def _format_like(original: str, value: float) -> str:
    """``value`` written the way ``original`` was (thousands commas, decimals)."""
    decimals = len(original.split(".")[1]) if "." in original else 0
    if decimals:
        text = f"{value:,.{decimals}f}" if "," in original else f"{value:.{decimals}f}"
    else:
        text = f"{round(value):,}" if "," in original else str(round(value))
    return text


def _new_value(value: float, is_year: bool, rng: random.Random) -> float:
    if is_year:
        return value + rng.choice([-1, 1]) * rng.randint(1, 12)
    if value == int(value) and value < 20:
        return float(rng.choice([v for v in range(1, 25) if v != value]))
    factor = rng.choice([0.25, 0.5, 0.6, 0.75, 1.3, 1.5, 2.0, 3.0, 10.0])
    return value * factor


def number_swap(claim: str, evidence: str, rng: random.Random) -> str | None:
    """The claim with one number or year that the evidence states changed to a value the evidence
    does not state (so the evidence contradicts it), or None when there is no such number."""
    have = [q.value for q in checks.quantities(evidence)]
    spots: list[tuple[int, int, str, bool]] = []
    for m in _DIGITS.finditer(claim):
        raw = m.group(0)
        try:
            value = float(raw.replace(",", ""))
        except ValueError:
            continue
        if not any(checks._same_value(value, v) for v in have):
            continue
        before = claim[max(0, m.start() - 25) : m.start()]
        if _BOUNDED.search(before) or claim[m.end() : m.end() + 1] in ("-", "–", "+"):
            continue  # "more than 100", ranges and "100+" stay true under many other values
        if re.match(r"[\w\-–/.\[]", claim[max(0, m.start() - 1) : m.start()] or " ") or re.match(
            r"[A-Za-z\]]", claim[m.end() : m.end() + 1]
        ):
            continue  # part of a token ("CO2", "[4]", "3-2"), not a quantity
        is_year = bool(re.fullmatch(r"1[0-9]{3}|20[0-9]{2}", raw))
        spots.append((m.start(), m.end(), raw, is_year))
    for m in _WORD_NUMBER_RE.finditer(claim):
        value = float(_WORD_NUMBERS[m.group(1).lower()])
        if claim[m.end() : m.end() + 1] in ("-", "–") or claim[max(0, m.start() - 1) : m.start()] in ("-", "–"):
            continue  # "two-thirds"
        if any(checks._same_value(value, v) for v in have) and not _BOUNDED.search(claim[: m.start()]):
            spots.append((m.start(), m.end(), m.group(0), False))
    if not spots:
        return None
    start, end, raw, is_year = rng.choice(spots)
    if raw.isalpha():
        choices = [w for w, v in _WORD_NUMBERS.items() if not any(checks._same_value(float(v), h) for h in have)]
        new = rng.choice(choices)
        new = new.capitalize() if raw[0].isupper() else new
    else:
        value = float(raw.replace(",", ""))
        for _ in range(10):
            candidate = _new_value(value, is_year, rng)
            text = _format_like(raw, candidate)
            parsed = float(text.replace(",", ""))
            if parsed > 0 and not any(checks._same_value(parsed, h) for h in have) and text != raw:
                new = text
                break
        else:
            return None
    return claim[:start] + new + claim[end:]


def _entity_spans(claim: str) -> list[tuple[int, int, str]]:
    out = []
    for name in checks.entities(claim):
        idx = claim.find(name)
        if idx >= 0:
            out.append((idx, idx + len(name), name))
    return out


def entity_swap(claim: str, evidence: str, pool: Sequence[str], rng: random.Random) -> str | None:
    """The claim with one name that the evidence mentions replaced by a name from ``pool`` (same
    number of words) that neither the evidence nor the claim mentions. The claim's subject (a name
    at its very start) is left alone: "Avatar was directed by Cameron" is not contradicted by a
    sentence about Titanic, it is about something else."""
    spans = [
        (s, e, name)
        for s, e, name in _entity_spans(claim)
        if name not in checks.missing_entities(name, evidence) and len(claim[:s].split()) >= 2
    ]
    if not spans:
        return None
    start, end, name = rng.choice(spans)
    width = len(name.split())
    options = [
        p
        for p in pool
        if len(p.split()) == width
        and p.lower() != name.lower()
        and checks.missing_entities(p, evidence) == [p]
        and checks.missing_entities(p, claim) == [p]
    ]
    if not options:
        return None
    return claim[:start] + rng.choice(options) + claim[end:]


_AUX = re.compile(
    r"\b(is|are|was|were|has|have|had|can|could|will|would|should|does|did|may|might|must)\b(?!\s+(?:not|n't|never)\b)"
)
_NEGATED = re.compile(r"\b(is|are|was|were|has|have|had|can|could|will|would|should|does|did)\s+not\b")


def negate(claim: str, rng: random.Random) -> str | None:
    """The claim with its negation flipped: ``was`` -> ``was not``, or ``is not`` -> ``is``."""
    negated = list(_NEGATED.finditer(claim))
    if checks.negation_count(claim) == 1 and len(negated) == 1:
        m = negated[0]
        return claim[: m.start()] + m.group(1) + claim[m.end() :]
    if checks.negation_count(claim):
        return None
    hits = list(_AUX.finditer(claim))
    if not hits:
        return None
    m = hits[0] if rng.random() < 0.7 else rng.choice(hits)
    return claim[: m.end()] + " not" + claim[m.end() :]


_ANTONYMS = [
    ("increase", "decrease"),
    ("increased", "decreased"),
    ("increases", "decreases"),
    ("increasing", "decreasing"),
    ("rise", "fall"),
    ("rises", "falls"),
    ("rising", "falling"),
    ("rose", "fell"),
    ("higher", "lower"),
    ("highest", "lowest"),
    ("more", "less"),
    ("larger", "smaller"),
    ("largest", "smallest"),
    ("bigger", "smaller"),
    ("warmer", "colder"),
    ("warming", "cooling"),
    ("warm", "cool"),
    ("before", "after"),
    ("first", "last"),
    ("north", "south"),
    ("northern", "southern"),
    ("east", "west"),
    ("eastern", "western"),
    ("positive", "negative"),
    ("won", "lost"),
    ("gain", "loss"),
    ("above", "below"),
    ("maximum", "minimum"),
    ("major", "minor"),
    ("earliest", "latest"),
    ("strengthen", "weaken"),
    ("accelerating", "slowing"),
    ("expand", "shrink"),
    ("thicker", "thinner"),
    ("wetter", "drier"),
    ("faster", "slower"),
    ("older", "younger"),
    ("oldest", "youngest"),
    ("success", "failure"),
    ("successful", "unsuccessful"),
    ("supported", "opposed"),
    ("agree", "disagree"),
    ("true", "false"),
    ("male", "female"),
    ("private", "public"),
    ("dead", "alive"),
    ("always", "never"),
    ("entire", "partial"),
    ("modern", "ancient"),
    ("domestic", "foreign"),
]
_ANTONYM = {a: b for a, b in _ANTONYMS} | {b: a for a, b in _ANTONYMS}
_ANTONYM_RE = re.compile(r"\b(" + "|".join(sorted(_ANTONYM, key=len, reverse=True)) + r")\b", re.IGNORECASE)


def antonym_swap(claim: str, evidence: str, rng: random.Random) -> str | None:
    """The claim with one word that the evidence also uses swapped for its antonym
    ("increased" -> "decreased"), or None."""
    ev_words = {w.lower() for w in re.findall(r"[A-Za-z]+", evidence)}
    hits = [m for m in _ANTONYM_RE.finditer(claim) if m.group(1).lower() in ev_words]
    if not hits:
        return None
    m = rng.choice(hits)
    word = m.group(1)
    new = _ANTONYM[word.lower()]
    if word[0].isupper():
        new = new.capitalize()
    return claim[: m.start()] + new + claim[m.end() :]


def add_clause(claim: str, other: str) -> str | None:
    """The claim joined with another claim ("<claim>, and <other>"): the evidence of the first
    part covers only half of it, so the pair is neutral (every part must be covered)."""
    head = claim.strip().rstrip(".!?;: ")
    tail = other.strip()
    if len(head.split()) < 3 or len(tail.split()) < 3 or len(head.split()) + len(tail.split()) > 60:
        return None
    if tail[:1].isupper() and not (len(tail) > 1 and tail[1].isupper()) and not checks.entities(tail.split()[0]):
        tail = tail[0].lower() + tail[1:]
    tail = tail.rstrip(".!?;: ")
    return f"{head}, and {tail}."


def add_year(claim: str, evidence: str, rng: random.Random) -> str | None:
    """The claim with "in <year>" added at its end, when the evidence states no number at all
    (so the added year is unsupported, not contradicted)."""
    if checks.quantities(evidence) or checks.quantities(claim):
        return None
    head = claim.strip().rstrip(".!?;: ")
    if len(head.split()) < 3:
        return None
    return f"{head} in {rng.randint(1950, 2022)}."


def _opening_subject(claim: str) -> str | None:
    """The name a claim opens with ("Titanic was directed..." -> "Titanic"), if any."""
    spans = _entity_spans(claim)
    if spans and len(claim[: spans[0][0]].split()) <= 1:
        return spans[0][2]
    return None


def pronoun_subject(claim: str, evidence: str, common: set[str] | frozenset[str] = frozenset()) -> str | None:
    """The evidence with the claim's opening subject, where the evidence opens with it too, replaced
    by a pronoun ("Titanic is a 1997 film directed by James Cameron" -> "It is a 1997 film directed
    by James Cameron"): a sentence taken from the subject's own page names it so, and still
    supports the claim. None when claim or evidence opens with no such name (a one-word "name"
    found in ``common``, the lower-case words of a corpus, is a common word)."""
    subject = _opening_subject(claim)
    if subject is None or (len(subject.split()) == 1 and subject.lower() in common):
        return None  # "Independent filmmakers...": a capitalised common word, not a name
    lowered = f" {claim.lower()} {evidence.lower()} "
    if " she " in lowered or " her " in lowered:
        pronoun, possessive = "She", "Her"
    elif " he " in lowered or " his " in lowered:
        pronoun, possessive = "He", "His"
    else:
        pronoun, possessive = "It", "Its"
    m = re.match(
        r"\s*(?:The\s+)?" + re.escape(subject) + r"(?P<pos>'s|\u2019s)?(?:\s*\([^()]*\))?,?\s+(?=[a-z])", evidence
    )
    if m is not None:
        return (possessive if m.group("pos") else pronoun) + " " + evidence[m.end() :]
    # Elsewhere in the evidence: its first mention as a clause's subject (followed by a verb-like
    # lower-case word, not inside brackets, not a possessive).
    m = re.search(r"(?:\b[Tt]he\s+)?(?<![(\w])" + re.escape(subject) + r"(?=\s+[a-z])(?![^()]*\))", evidence)
    if m is None:
        return None
    before = evidence[: m.start()]
    if re.search(r"[A-Z][\w'\-]*\s+$", before):
        return None  # part of a longer name ("Niko Giantsopoulos" for "Giantsopoulos")
    at_start = not before.strip() or before.rstrip()[-1] in '.!?;:"\u201c'
    word = pronoun if at_start else pronoun.lower()
    return before + word + evidence[m.end() :]


def _remove(text: str, phrase: str) -> str:
    """``text`` without ``phrase`` (and a preposition or conjunction left dangling before it)."""
    prefix = r"(?:\b(?:by|of|in|at|from|with|and|to|for|on)\s+)?(?<![\w.,])"
    out = re.sub(prefix + re.escape(phrase) + r"(?![\w]|[.,]\d)", "", text)
    out = re.sub(r"\s+([,.;:!?])", r"\1", out)
    out = re.sub(r",\s*,", ",", out)
    return " ".join(out.split())


def drop_detail(claim: str, evidence: str, rng: random.Random) -> str | None:
    """The evidence with one of the claim's details removed, a name (not its opening subject) or a
    number, where the evidence names nothing else of its kind in its place: the evidence then
    leaves that detail unsupported, not contradicted (it states no other value or name)."""
    options: list[str] = []
    for start, _, name in _entity_spans(claim):
        if len(claim[:start].split()) >= 2 and name in evidence:
            multi = len(name.split()) > 1
            rest = _remove(evidence, name)
            if not [e for e in checks.entities(rest) if (len(e.split()) > 1) == multi and e not in claim]:
                options.append(name)
    for q in checks.quantities(claim):
        digits = _DIGITS.search(q.raw)
        if digits and re.search(r"(?<![\w.,\[])" + re.escape(digits.group(0)) + r"(?![\w\]]|[.,]\d)", evidence):
            same_kind = [x for x in checks.quantities(evidence) if x.unit == q.unit]
            if len(same_kind) == 1:
                options.append(digits.group(0))
    if not options:
        return None
    new = _remove(evidence, rng.choice(options))
    return new if len(new.split()) >= 4 and new != evidence else None


__all__ = [
    "add_clause",
    "add_year",
    "antonym_swap",
    "drop_detail",
    "entity_swap",
    "negate",
    "number_swap",
    "pronoun_subject",
]
