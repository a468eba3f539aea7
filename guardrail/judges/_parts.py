"""Split a claim into atomic parts, each checked on its own (a claim is supported only when every
part is), by rules rather than a parser: coordinated clauses and predicates, lists of names,
non-restrictive relative clauses, appositions, and a place and a date in one clause.

Each part is a short sentence that stands alone ("The band's third album was released on November
2, 2004", "The band's third album is Emotive"), so the model can read it and a report can name it.
A claim the rules cannot split is its own single part. Pure functions of text.
"""

from __future__ import annotations

import re

_AUX_WORDS = (
    "is are was were be been has have had will would can could may might must shall should does did do "
    "became becomes become remains remained won wins went goes made makes took takes gave gives left began "
    "begins wrote writes lives lived died includes included holds held features featured served serves "
    "plays played founded received receives appeared appears earned earns reached reaches sold sells"
)
_AUX = frozenset(_AUX_WORDS.split())
_NOT_VERB_ED = frozenset({"red", "bed", "need", "seed", "speed", "feed", "hundred", "united", "limited", "based"})
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_DATE = re.compile(rf"\s(?:in|on|during|by)\s+(?:(?:early|late|mid)\s+)?(?:{_MONTH}\s+)?(?:\d{{1,2}},?\s+)?\d{{4}}\b")
_PLACE = re.compile(r"\s(?:in|at)\s+(?:the\s+)?[A-Z][\w'\-]*(?:\s+[A-Z][\w'\-]*)*(?:,\s+[A-Z][\w'\-]*)?")
_NAME = r"[A-Z][\w.'\-]*(?:\s+(?:of|de|van|von|the)?\s*[A-Z][\w.'\-]*)*"
_NAME_LIST = re.compile(rf"^(?P<head>.*?\s)(?P<items>{_NAME}(?:,\s+{_NAME})*,?\s+and\s+{_NAME})$")


def _verbish(word: str, first: bool = False) -> bool:
    w = word.lower().strip(",.;:\"'()")
    if w in _AUX:
        return True
    if "-" in w:
        return False  # "chocolate-based", "well-known": modifiers
    return not first and word[:1].islower() and w.endswith("ed") and len(w) > 4 and w not in _NOT_VERB_ED


def _has_verb(text: str) -> bool:
    words = text.split()
    return any(_verbish(w, i == 0) for i, w in enumerate(words[:8]))


def subject_of(clause: str) -> str:
    """The words before the clause's first verb-like word (its subject), or '' when none is found."""
    words = clause.split()
    if words and _verbish(words[0]):
        return ""  # opens with its verb: a predicate without a subject
    for i, w in enumerate(words):
        if i > 0 and _verbish(w):
            return " ".join(words[:i])
    return ""


def _clauses(text: str) -> list[str]:
    """Independent clauses: split on ';' and on ', and' / ', but' / ', while' before a clause."""
    out: list[str] = []
    for piece in re.split(r"\s*;\s*", text):
        rest = piece
        while True:
            m = next(
                (m for m in re.finditer(r",\s+(?:and|but|while|whereas)\s+", rest) if _has_verb(rest[m.end() :])),
                None,
            )
            if m is None or not subject_of(rest[m.end() :]):
                break
            out.append(rest[: m.start()])
            rest = rest[m.end() :]
        out.append(rest)
    return [c.strip() for c in out if c.strip()]


def _antecedent(before: str) -> str:
    """The noun phrase right before a comma: a trailing run of capitalised words, else the last 3 words."""
    quoted = re.search(r"(\"[^\"]+\"|“[^”]+”)\s*$", before)
    if quoted:
        return quoted.group(1)
    m = re.search(rf"({_NAME})$", before)
    if m and len(m.group(1).split()) <= 5:
        return m.group(1)
    words = before.split()
    for i in range(len(words) - 1, max(-1, len(words) - 7), -1):
        if words[i].lower() in ("the", "a", "an", "its", "his", "her", "their", "this"):
            return " ".join(words[i:])
    return " ".join(words[-3:])


def _asides(clause: str) -> tuple[str, list[str]]:
    """Take non-restrictive relative clauses (', which ...', ', who ...') and appositions (', a ...,',
    ', one of ...') out of a clause: the clause without them, and each as a part of its own."""
    extra: list[str] = []
    rel = re.compile(r",\s+(?:which|who)\s+([^,]+)(?=,|$)")
    while (m := rel.search(clause)) is not None:
        extra.append(f"{_antecedent(clause[: m.start()])} {m.group(1).strip()}")
        clause = clause[: m.start()] + clause[m.end() :]
    subject = subject_of(clause)
    app = re.compile(r",\s+((?:a|an|the|one|its|his|her|their)\s+[^,]+|\"[^\"]+\"|“[^”]+”)(?:,|$)")
    for m in list(app.finditer(clause)):
        inner = m.group(1).strip()
        if _has_verb(inner) or len(inner.split()) > 16:
            continue
        head = clause[: m.start()]
        if not m.group(0).endswith(",") and not _has_verb(head):
            # "From its source in the hills, the river runs to the sea": the comma closes an
            # opening phrase, and what follows it is the main clause, not an apposition.
            continue
        noun = subject if subject and head.strip() == subject.strip(" ,") else _antecedent(head)
        extra.append(f"{noun} is {inner.strip(chr(34) + '“”')}")
        clause = clause.replace(m.group(0), " ", 1)
    return " ".join(clause.split()).strip(" ,"), extra


def _predicates(clause: str) -> list[str]:
    """'S V1 ... and V2 ...' -> 'S V1 ...', 'S V2 ...'."""
    subject = subject_of(clause)
    if not subject:
        return [clause]
    for m in re.finditer(r",?\s+and\s+", clause):
        after = clause[m.end() :].split()
        if m.start() > len(subject) and after and _verbish(after[0]) and not after[0][:1].isupper():
            return [clause[: m.start()], *_predicates(f"{subject} {clause[m.end() :]}")]
    return [clause]


def _names(clause: str) -> list[str]:
    """'It starred A, B and C' -> one part per name."""
    m = _NAME_LIST.match(clause)
    if m is None or not _has_verb(m.group("head")):
        return [clause]
    items = re.split(r",\s+and\s+|,\s+|\s+and\s+", m.group("items"))
    if len(items) < 2 or any(not i[:1].isupper() for i in items):
        return [clause]
    return [f"{m.group('head').rstrip()} {item.strip()}" for item in items]


def _place_and_date(clause: str) -> list[str]:
    """A clause stating both where and when ('married in New York in December 2012') -> one part each."""
    date, place = _DATE.search(clause), _PLACE.search(clause)
    if date is None or place is None or place.start() == date.start():
        return [clause]
    without_date = _tidy(clause[: date.start()] + clause[date.end() :])
    without_place = _tidy(clause[: place.start()] + clause[place.end() :])
    if len(without_date.split()) < 3 or len(without_place.split()) < 3:
        return [clause]
    return [without_place, without_date]


def _tidy(text: str) -> str:
    """Collapse the spaces and commas a removed phrase leaves ("It aired, in Australia" -> "It aired in Australia")."""
    text = re.sub(r"\s*,\s*(?=(?:in|at|on|by|during)\b)", " ", text)
    return " ".join(re.sub(r"\s+,", ",", text).split()).strip(" ,")


def claim_parts(claim: str, max_parts: int = 4) -> list[str]:
    """The atomic parts of ``claim``, in order (``[claim]`` when it has one part or more than
    ``max_parts``, which usually means the rules misread it)."""
    text = " ".join(claim.split()).rstrip(" .!")
    parts: list[str] = []
    for clause in _clauses(text):
        main, asides = _asides(clause)
        for pred in _predicates(main):
            for named in _names(pred):
                parts.extend(_place_and_date(named))
        parts.extend(asides)
    cleaned = list(dict.fromkeys(p.strip(" ,") for p in parts if len(p.split()) >= 2))
    if len(cleaned) < 2 or len(cleaned) > max_parts:
        return [claim.strip()]
    return cleaned


__all__ = ["claim_parts", "subject_of"]
