"""Contrastive training pairs at scale (FactCC / VitaminC style), made from text we have.

The judge's model must learn that a sentence sharing nearly every word of a claim can still
refute it (another name, number, direction or role in the claim's place) or leave it open (a
study's aim, a detail the sentence lacks, a page about something else), and that a sentence naming
its subject by "It" supports a claim when the page's topic is that subject. Small models trained
on ordinary NLI data read high word overlap as support; minimal edits that flip the label teach
them to read the words that differ.

Sources (all from the NLI part of the by-claim split, ``training.datasets``):

- **supported pairs**: FEVER pairs with their Wikipedia evidence (entailment), Climate-FEVER and
  FEVER-Symmetric supported pairs, WiCE claims with their gold sentences, AttributionBench
  attributable claims with their best passage;
- **sentences of the pages** (WiCE pages, Climate-FEVER evidence, FEVER evidence): each usable
  sentence is its own supported pair, the claim being its main clause (a pronoun subject replaced
  by the page's topic, the sentence shown with that topic: the page-context case).

From each, edits with the label they make (every edit is checked against the evidence):

- contradiction: a number, year or unit changed; a name swapped for another of the same kind from
  the same page; a direction or comparison word flipped (increase/decrease, before/after, won/lost);
  the two roles of a relation swapped ("A defeated B" -> "B defeated A"); the claim or the evidence
  negated; a study's finding stated the other way;
- entailment (label kept): numbers spelled out, synonyms, passive <-> active, the claim shortened,
  the subject named by a pronoun with the page's topic shown, a finding sentence ("We found that");
- neutral: an unsupported clause or year added, a detail taken out of the evidence, the claim as a
  study's aim or background ("This study examined whether ..."), a pronoun sentence shown under
  another page's topic, a same-page sentence sharing many words but not saying it.

Every random choice comes from the seeded generator passed in. Counts by kind go to the training
record (``training.train``).
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from guardrail.judges import _checks as checks
from guardrail.judges._context import NOT_A_NAME, clean_topic, in_context, topic_name
from guardrail.judges._lexicon import ANTONYMS
from training import augment
from training import datasets as ds
from training.synonyms import Thesaurus, reword, with_article

ENT, NEU, CON = 0, 1, 2
NOT_ENT = -1
"""A pair known only to be *not* an entailment (FEVER's not_entailment: refuted or not enough
information): trained with the loss of "neutral or contradiction"."""


@dataclass(frozen=True)
class Pair:
    """One training pair: hypothesis (claim), premise (evidence as the model reads it), label, kind."""

    claim: str
    evidence: str
    label: int
    kind: str


@dataclass
class Source:
    """A claim its evidence supports, with what else the page says."""

    claim: str
    evidence: str
    topic: str | None
    origin: str
    page: list[str] = field(default_factory=list)  # other sentences of the same page


# -- reading the sources ----------------------------------------------------------------

_META_TITLE = re.compile(r"^\(meta data\)\s*TITLE:\s*(.+)$", re.IGNORECASE)
_REF_TITLE = re.compile(r"^\s*Title:\s*(.+?)\s*\n", re.IGNORECASE)
_JUNK = re.compile(r"[|©@#<>{}\[\]]|https?://|\.\.\.|cookie|javascript|subscribe|sign up|log in", re.IGNORECASE)
_VERBISH = re.compile(
    r"\b(?:is|are|was|were|has|have|had|be|been|became|becomes|can|will|would|could|may|might|must"
    r"|\w{3,}ed|\w{3,}es|\w{3,}s)\b"
)


def usable_sentence(text: str) -> bool:
    """Whether a page sentence reads as a statement worth a claim: 6-40 words, capitalised, ends
    like a sentence, a verb-like word, no markup or boilerplate."""
    words = text.split()
    if not 6 <= len(words) <= 40 or not text[:1].isupper() or text.rstrip()[-1:] not in ".!":
        return False
    if _JUNK.search(text) or text.count('"') % 2:
        return False
    return bool(_VERBISH.search(" ".join(words[1:])))


def wice_topic(sentences: Sequence[str]) -> str | None:
    """The page title WiCE keeps as its first line ("(meta data) TITLE: ...")."""
    for s in sentences[:3]:
        m = _META_TITLE.match(s.strip())
        if m:
            return clean_topic(m.group(1))
    return None


def _nli_part(claim: str) -> bool:
    return ds.in_part(claim, "nli")


def read_fever_rte(data: Path, part: str = "nli") -> list[tuple[str, str, str]]:
    """``fever_rte_dev.jsonl`` rows of one part: (claim, evidence, entailment | not_entailment), de-tokenised."""
    out = []
    path = data / "fever_rte_dev.jsonl"
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            claim = ds.clean_fever_text(row["claim"])
            if ds.in_part(claim, part):  # type: ignore[arg-type]
                out.append((claim, ds.clean_fever_text(row["evidence"]), str(row["label"])))
    return out


def supported_sources(data: Path, part: str = "nli") -> list[Source]:
    """Claims their evidence supports, from every set's ``part``."""
    from guardrail.core.passages import split_passages

    out: list[Source] = []
    for claim, evidence, label in read_fever_rte(data, part):
        if label == "entailment" and len(evidence.split()) <= 120:
            out.append(Source(claim, evidence, None, "fever", [evidence]))
    cf = [r for r in ds.read_climate_fever_rows(data) if ds.in_part(r.claim, part)]  # type: ignore[arg-type]
    for row in cf:
        for ev in row.evidences:
            if ev.label == "supported":
                others = [e.evidence for e in row.evidences if e.evidence != ev.evidence]
                out.append(Source(row.claim, ev.evidence, clean_topic(ev.article), "climate_fever", others))
    for p in ds.read_fever_symmetric(data):
        if ds.in_part(p.claim, part) and p.label == "supported":  # type: ignore[arg-type]
            out.append(Source(p.claim, p.evidence, None, "fever_symmetric"))
    for item in ds.read_wice(data):
        if not ds.in_part(item.claim, part) or not item.supported:  # type: ignore[arg-type]
            continue
        topic = wice_topic(item.sentences)
        for group in item.supporting:
            idx = sorted(i for i in set(group) if 0 <= i < len(item.sentences))
            if idx:
                evidence = " ".join(item.sentences[i] for i in idx)
                out.append(Source(item.claim, evidence, topic, "wice", list(item.sentences)))
    for ab in ds.read_attributionbench(data):
        if not ds.in_part(ab.claim, part) or not ab.attributable or not ab.references:  # type: ignore[arg-type]
            continue
        m = _REF_TITLE.match(ab.references[0])
        topic = clean_topic(m.group(1)) if m else None
        passages = [p for ref in ab.references for p in split_passages(_REF_TITLE.sub("", ref, count=1))]
        if passages:
            best = max(passages, key=lambda p: checks.overlap(ab.claim, p))
            if len(best.split()) <= 150:
                out.append(Source(ab.claim, best, topic, "attributionbench", passages))
    return out


_PAREN = re.compile(r"\s*\([^()]*\)")
_CUT = re.compile(r"(?:;\s|,\s+(?:which|who|where|while|whereas|although|but)\s|\s+–\s|\s+—\s)")
_EXPLETIVE = re.compile(
    r"^It\s+(?:is|was|has been|had been|will be|would be|seems|seemed|appears|appeared)\s+(?:\w+\s+){0,2}?"
    r"(?:that|to|whether|if|how|why|when)\b|^It\s+(?:is|was)\s+\w+\s+(?:that|to)\b"
)
_PRONOUN_VERB = re.compile(
    r"^(?:It|He|She|Its|His|Her)\s+(?:is|was|are|were|has|had|can|could|will|would|may|\w{3,}ed|\w{3,}s)\b"
)
_PRONOUN_START = re.compile(r"^(It|He|She|Its|His|Her)\s+(?=[a-z])")


def names_a_subject(name: str) -> bool:
    """Whether a topic reads as the name of one thing ("Titanic", "Debbie Stabenow", "Urban heat
    island"), not a headline or a site's page title ("About Us", "Netflix Instant Picks 3/29/13")."""
    words = name.split()
    if not 1 <= len(words) <= 5 or re.search(r"[:|/\d!?]", name):
        return False
    return words[0][:1].isupper() and name.lower() not in ("about us", "home", "news", "contact")


def claim_from_sentence(sentence: str, topic: str | None) -> tuple[str, bool] | None:
    """A claim made of a page sentence's main clause (parentheses dropped, cut before a relative or
    contrasting clause), and whether its pronoun subject was replaced by the topic's name (so the
    sentence supports it only with its topic shown). None when nothing claim-like is left."""
    text = _PAREN.sub("", sentence).strip()
    m = _CUT.search(text)
    if m and len(text[: m.start()].split()) >= 5:
        text = text[: m.start()].rstrip(",;: ") + "."
    text = " ".join(text.split())
    resolved = False
    pm = _PRONOUN_START.match(text)
    if pm and _EXPLETIVE.match(text):
        return None  # "It is possible that ...": no subject to resolve
    if pm:
        name = topic_name(topic)
        if not name or not names_a_subject(name):
            return None
        possessive = pm.group(1) in ("Its", "His", "Her")
        text = name + ("'s " if possessive else " ") + text[pm.end() :]
        resolved = True
    if not 5 <= len(text.split()) <= 30 or not text.endswith((".", "!")):
        return None
    return text, resolved


def sentence_sources(data: Path, part: str = "nli", rng: random.Random | None = None) -> list[Source]:
    """Every usable sentence of the pages of ``part`` as its own supported pair (see
    :func:`claim_from_sentence`); the claim's page sentences ride along for swaps and hard neutrals."""
    rng = rng or random.Random(0)
    out: list[Source] = []
    seen: set[str] = set()

    def add(sentence: str, topic: str | None, page: list[str], origin: str) -> None:
        if sentence in seen or not usable_sentence(sentence):
            return
        seen.add(sentence)
        made = claim_from_sentence(sentence, topic)
        if made is None:
            return
        claim, resolved = made
        out.append(Source(claim, sentence, topic, origin + ("_pronoun" if resolved else ""), page))

    for item in ds.read_wice(data):
        if ds.in_part(item.claim, part):  # type: ignore[arg-type]
            topic = wice_topic(item.sentences)
            for s in item.sentences:
                add(s, topic, list(item.sentences), "page_wice")
    for row in ds.read_climate_fever_rows(data):
        if ds.in_part(row.claim, part):  # type: ignore[arg-type]
            for ev in row.evidences:
                add(ev.evidence, clean_topic(ev.article), [e.evidence for e in row.evidences], "page_cf")
    for _claim, evidence, _ in read_fever_rte(data, part):
        sents = [evidence[s:e] for s, e in checks.sentence_spans(evidence)]
        for s in sents:
            add(s, None, sents, "page_fever")
    rng.shuffle(out)
    return out


# -- edits ---------------------------------------------------------------------------------

_ROLE_RELATION = re.compile(
    r"^\s+(?:(?:has|had|have)\s+)?(?:\w{3,}ed|beat|beats|won|wins|led|leads|took|wrote|sold|bought|succeeds"
    r"|precedes|defeats|employs|owns|signed|hired|sued|acquired|replaced)(?:\s+(?:the|a|an))?\s+$"
    r"|^\s+(?:is|was)\s+the\s+(?:father|mother|son|daughter|parent|child|teacher|student|mentor|employer"
    r"|owner|successor|predecessor|boss|creator)\s+of\s+$"
)
_SYMMETRIC_VERB = re.compile(r"\b(?:married|met|tied|drew|partnered|played|joined|merged|teamed|collaborated|faced)\b")
_DEMONYM = re.compile(r"^[A-Z][a-z]+(?:an|ish|ese|ian|ic|i)$")


def role_swap(claim: str, evidence: str, rng: random.Random) -> str | None:
    """The claim with the two names of one relation swapped ("Spain defeated Italy in the final"
    -> "Italy defeated Spain in the final"), when the evidence names both: the roles reversed,
    which the evidence contradicts. Relations that read the same both ways ("A and B", "A married
    B", "A played against B") are left alone."""
    names = [(claim.find(n), n) for n in checks.entities(claim)]
    names = sorted((i, n) for i, n in names if i >= 0)
    options = []
    for (i1, n1), (i2, n2) in itertools.pairwise(names):
        between = claim[i1 + len(n1) : i2]
        m = _ROLE_RELATION.match(between)
        if m is None or _SYMMETRIC_VERB.search(between) or claim[i2 + len(n2) : i2 + len(n2) + 1] in ("'", "’"):
            continue
        before = claim[:i1].split()
        if claim[max(0, i1 - 1) : i1].strip() or (
            before and claim[:i1].rstrip()[-1:].isalnum() and before[-1][:1].isupper()
        ):
            continue
        if any(len(n.split()) == 1 and _DEMONYM.match(n) for n in (n1, n2)) or name_kind(n1) != name_kind(n2):
            continue
        if checks.missing_entities(n1, evidence) or checks.missing_entities(n2, evidence):
            continue
        if n1.lower() == n2.lower() or n1 in n2 or n2 in n1:
            continue
        options.append((i1, n1, i2, n2, between))
    if not options:
        return None
    i1, n1, i2, n2, between = rng.choice(options)
    return claim[:i1] + n2 + between + n1 + claim[i2 + len(n2) :]


_DIRECTION_WORDS = sorted(ANTONYMS, key=len, reverse=True)
_DIRECTION_RE = re.compile(r"\b(" + "|".join(map(re.escape, _DIRECTION_WORDS)) + r")\b", re.IGNORECASE)
_NO_FLIP = {"light", "over", "under", "old", "new", "right", "left", "present", "common", "full", "same", "all"}


def direction_flip(text: str, evidence: str, rng: random.Random, *, require_in_evidence: bool = True) -> str | None:
    """``text`` with one direction or comparison word turned into its opposite ("increases" ->
    "decreases", "before" -> "after", "won" -> "lost"; the curated pairs of
    :mod:`guardrail.judges._lexicon`), a word the evidence uses too when ``require_in_evidence``."""
    ev_words = {w.lower() for w in re.findall(r"[A-Za-z]+", evidence)}
    hits = [
        m
        for m in _DIRECTION_RE.finditer(text)
        if m.group(1).lower() not in _NO_FLIP and (not require_in_evidence or m.group(1).lower() in ev_words)
    ]
    if not hits:
        return None
    m = rng.choice(hits)
    word = m.group(1)
    options = sorted(ANTONYMS[word.lower()])
    new = rng.choice(options)
    if word[0].isupper():
        new = new.capitalize()
    return text[: m.start()] + new + text[m.end() :]


_UNITS = [
    ("km", "miles"),
    ("kilometres", "miles"),
    ("kilometers", "miles"),
    ("metres", "feet"),
    ("meters", "feet"),
    ("kg", "pounds"),
    ("kilograms", "pounds"),
    ("Celsius", "Fahrenheit"),
    ("percent", "times"),
    ("%", " times"),
    ("million", "billion"),
    ("thousand", "million"),
    ("years", "months"),
    ("days", "weeks"),
    ("hours", "minutes"),
]
_UNIT_SWAP = {a: b for a, b in _UNITS} | {b.strip(): a for a, b in _UNITS if b.strip() not in ("times",)}
_UNIT_RE = re.compile(r"(?<=\d)(\s?)(" + "|".join(map(re.escape, sorted(_UNIT_SWAP, key=len, reverse=True))) + r")\b")


def unit_swap(claim: str, evidence: str, rng: random.Random) -> str | None:
    """The claim with the unit (or scale) of a number the evidence states changed ("254 km" ->
    "254 miles", "3 million" -> "3 billion"): another quantity than the evidence states."""
    hits = [m for m in _UNIT_RE.finditer(claim) if m.group(2) in evidence]
    if not hits:
        return None
    m = rng.choice(hits)
    new = _UNIT_SWAP[m.group(2)].strip()
    space = "" if new == "%" else " "
    return claim[: m.start(1)] + space + new + claim[m.end() :]


_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_MONTH_RE = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b(?=\s+\d|\s*,?\s*\d{4}|\s+of\b)")


def month_swap(claim: str, evidence: str, rng: random.Random) -> str | None:
    """The claim with a month of a date the evidence states changed to another month."""
    hits = [m for m in _MONTH_RE.finditer(claim) if m.group(1) in evidence]
    if not hits:
        return None
    m = rng.choice(hits)
    new = rng.choice([x for x in _MONTHS if x != m.group(1) and x not in evidence])
    return claim[: m.start()] + new + claim[m.end() :]


_NAME_KIND_WORDS = {
    "place": {
        "river",
        "city",
        "county",
        "island",
        "lake",
        "mountain",
        "state",
        "province",
        "kingdom",
        "republic",
        "ocean",
        "sea",
        "valley",
        "street",
        "park",
    },
    "org": {
        "university",
        "college",
        "company",
        "inc",
        "corporation",
        "group",
        "party",
        "council",
        "association",
        "fc",
        "club",
        "records",
        "pictures",
        "studios",
        "bank",
        "institute",
        "school",
        "museum",
        "agency",
        "society",
        "league",
        "network",
        "press",
    },
}


def name_kind(name: str) -> str:
    """A rough kind for a name, from its words ("Alder River": place; "Fox 2000 Pictures": org;
    two or three plain words: person; else other): swaps stay within a kind."""
    words = {w.lower().strip(".,") for w in name.split()}
    for kind, cues in _NAME_KIND_WORDS.items():
        if words & cues:
            return kind
    if 2 <= len(name.split()) <= 3 and all(w[:1].isupper() and w.isalpha() for w in name.split()):
        return "person"
    return "other"


def typed_entity_swap(claim: str, evidence: str, pool: Sequence[str], rng: random.Random) -> str | None:
    """:func:`augment.entity_swap` with the pool narrowed to names of the same rough kind
    (:func:`name_kind`) as at least one name of the claim the evidence states."""
    kinds = {name_kind(n) for n in checks.entities(claim) if not checks.missing_entities(n, evidence)}
    typed = [p for p in pool if name_kind(p) in kinds]
    return augment.entity_swap(claim, evidence, typed or pool, rng)


def negate_evidence(evidence: str, claim: str, rng: random.Random) -> str | None:
    """The evidence's sentence that shares most of the claim's words, negated (``augment.negate``):
    the evidence then denies what the claim says."""
    spans = checks.sentence_spans(evidence)
    if not spans:
        return None
    s, e = max(spans, key=lambda sp: checks.overlap(claim, evidence[sp[0] : sp[1]]))
    sentence = evidence[s:e]
    if checks.negation_count(claim) or checks.negation_count(sentence):
        return None
    new = augment.negate(sentence, rng)
    return evidence[:s] + new + evidence[e:] if new else None


_SNLI_ROLES = re.compile(
    r"^(?P<d1>A|An|The|Two|Three|Some)\s+(?P<n1>[a-z]+(?:\s[a-z]+)?)\s+(?P<v>(?:is|are)\s+[a-z]+ing)\s+"
    r"(?P<d2>a|an|the|two|three|some)\s+(?P<n2>[a-z]+)"
    r"(?P<rest>\s+(?:in|on|at|with|while|near|for|through|into|across|down|up|along|over|under|by|and)\b.*|\.)?$"
)


def snli_role_swap(sentence: str) -> str | None:
    """An SNLI-style sentence with its two roles swapped ("A dog is chasing a cat." -> "A cat is
    chasing a dog."), when its agent and patient are plain nouns of one number."""
    m = _SNLI_ROLES.match(sentence.strip())
    if m is None or m.group("n1").split()[-1] == m.group("n2"):
        return None
    plural = m.group("v").startswith("are")
    if plural != (m.group("d2") in ("two", "three", "some")):
        return None
    d1, d2 = m.group("d2").capitalize(), m.group("d1").lower()
    return f"{d1} {m.group('n2')} {m.group('v')} {d2} {m.group('n1')}{m.group('rest') or '.'}"


# -- label-keeping paraphrases ------------------------------------------------------------

_SYNONYMS = [
    ("film", "movie"),
    ("films", "movies"),
    ("began", "started"),
    ("begins", "starts"),
    ("largest", "biggest"),
    ("purchased", "bought"),
    ("approximately", "about"),
    ("established", "founded"),
    ("famous", "well known"),
    ("died", "passed away"),
    ("wrote", "authored"),
    ("several", "a number of"),
    ("children", "kids"),
    ("is located in", "is in"),
    ("was born in", "was born in the town of"),
    ("received", "was given"),
    ("commenced", "began"),
    ("however", "but"),
    ("nearly", "almost"),
    ("roughly", "about"),
    ("award", "prize"),
    ("awards", "prizes"),
    ("country", "nation"),
    ("people", "persons"),
    ("very", "highly"),
    ("assist", "help"),
    ("demonstrated", "showed"),
    ("increase", "rise"),
    ("reduce", "lower"),
    ("reduces", "lowers"),
    ("large", "big"),
    ("small", "little"),
]
_SYN = {a: b for a, b in _SYNONYMS} | {b: a for a, b in _SYNONYMS if b not in ("is in", "was born in the town of")}
_SYN_RE = re.compile(r"\b(" + "|".join(map(re.escape, sorted(_SYN, key=len, reverse=True))) + r")\b")
_SMALL_NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
_SPELL = re.compile(r"(?<![\w.,])(\d{1,2}|100|1,000)(?![\w.,]|\.\d)")


def spell_number(claim: str, rng: random.Random) -> str | None:
    """The claim with one small number written in words ("11" -> "eleven", "100" -> "one hundred")."""
    hits = [m for m in _SPELL.finditer(claim) if m.group(1) in ("100", "1,000") or int(m.group(1)) <= 12]
    if not hits:
        return None
    m = rng.choice(hits)
    raw = m.group(1)
    word = {"100": "one hundred", "1,000": "one thousand"}.get(raw) or _SMALL_NUMBERS[int(raw)]
    return claim[: m.start()] + word + claim[m.end() :]


def synonym_swap(claim: str, rng: random.Random) -> str | None:
    """The claim with one word or phrase replaced by a synonym ("film" -> "movie")."""
    hits = list(_SYN_RE.finditer(claim))
    if not hits:
        return None
    m = rng.choice(hits)
    before, new = claim[: m.start()], _SYN[m.group(1)]
    return with_article(before, new) + new + claim[m.end() :]


_PASSIVE = re.compile(
    r"^(?P<obj>.+?)\s+(?:was|were)\s+(?P<verb>[a-z]+ed)\s+by\s+(?P<agent>[A-Z][^,;]*?)(?P<rest>(?:[,;].*)?\.?)$"
)


def passive_to_active(claim: str) -> str | None:
    """ "Titanic was directed by James Cameron." -> "James Cameron directed Titanic." (regular verbs)."""
    m = _PASSIVE.match(claim.strip())
    if m is None or len(m.group("agent").split()) > 5 or len(m.group("obj").split()) > 8:
        return None
    obj = m.group("obj")
    words = obj.split()
    if words[0] in ("The", "A", "An") and len(words) > 1 and not words[1][:1].isupper():
        obj = obj[0].lower() + obj[1:]
    rest = m.group("rest") or "."
    return f"{m.group('agent')} {m.group('verb')} {obj}{rest}"


def shorten(claim: str) -> str | None:
    """The claim without a parenthesis or an appositive between commas (it then says less than
    the evidence, which still entails it); None for a claim with a negation, or nothing to cut."""
    if checks.negation_count(claim):
        return None
    cut = _PAREN.sub("", claim)
    if cut == claim:
        cut = re.sub(r",\s+[^,]{3,60},\s+", " ", claim, count=1)
    cut = " ".join(cut.split())
    return cut if cut != claim and len(cut.split()) >= 4 else None


_COORDINATED = re.compile(
    r"\b(?P<aux>was|were|is|are|has been|have been)\s+"
    r"(?P<verbs>(?:[a-z\-]+(?:ed|en|wn|ght|lt),?\s+)+and\s+[a-z\-]+(?:ed|en|wn|ght|lt))\b"
)
_LEADING = re.compile(
    r"^(?:In|On|At|During|After|Before|By|Since|From|As of|Following|Today|Currently|Additionally|However|Also)"
    r"\b[^,]{0,45},\s+(?=[A-Za-z])"
)
_DROPPABLE = re.compile(
    r"\s\b(?:also|regular|regularly|currently|generally|still|famous|popular|major|several)\b(?=\s)"
)


def loosen(claim: str, rng: random.Random) -> str | None:
    """The claim saying less than it did, so whatever supported it still does: one of coordinated
    predicates kept ("was directed, written, and co-produced by X" -> "was directed by X"), a
    leading adverbial dropped ("In the final, Italy defeated Spain" -> "Italy defeated Spain"), one
    atomic part kept, or a modifier dropped ("Regular exercise" -> "Exercise"). Edits made after
    this do not leave the claim a copy of its evidence but for one word, which would teach the model
    that near-identity alone tells support from contradiction. None when nothing applies."""
    from guardrail.judges._parts import claim_parts

    options: list[str] = []
    m = _COORDINATED.search(claim)
    if m:
        verbs = [v for v in re.split(r",?\s+(?:and\s+)?", m.group("verbs")) if v and v != "and"]
        if len(verbs) >= 2:
            options.append(claim[: m.start("verbs")] + rng.choice(verbs) + claim[m.end("verbs") :])
    m = _LEADING.match(claim)
    if m and len(claim[m.end() :].split()) >= 4:
        rest = claim[m.end() :]
        options.append(rest[0].upper() + rest[1:])
    parts = claim_parts(claim)
    if len(parts) >= 2:
        part = rng.choice(parts).rstrip(".") + "."
        options.append(part[0].upper() + part[1:])
    hits = list(_DROPPABLE.finditer(" " + claim))
    if hits:
        h = rng.choice(hits)
        text = (" " + claim)[: h.start()] + (" " + claim)[h.end() :]
        text = text.strip()
        options.append(text[0].upper() + text[1:])
    options = [
        o
        for o in options
        if o != claim and len(o.split()) >= 4 and checks.negation_count(o) == checks.negation_count(claim)
    ]
    return rng.choice(options) if options else None


# -- scientific framing: aims, background, findings ---------------------------------------

_AIMS = [
    "This study aimed to determine whether {c}.",
    "We investigated whether {c}.",
    "The aim of this study was to examine whether {c}.",
    "It remains unclear whether {c}.",
    "Few studies have examined whether {c}.",
    "We hypothesized that {c}.",
    "Further research is needed to establish whether {c}.",
    "Here we ask whether {c}.",
    "It is not known whether {c}.",
    "The objective was to assess whether {c}.",
    "Whether {c} has been debated for decades.",
    "Some have speculated that {c}.",
]
_FINDINGS = [
    "Our results show that {c}.",
    "We found that {c}.",
    "The study showed that {c}.",
    "These data demonstrate that {c}.",
    "Analysis revealed that {c}.",
    "Researchers confirmed that {c}.",
]


def _inner(claim: str) -> str | None:
    text = claim.strip().rstrip(".!?;: ")
    if len(text.split()) < 4:
        return None
    first = text.split()[0]
    if first[:1].isupper() and not first[1:2].isupper() and not checks.entities(first):
        text = text[0].lower() + text[1:]
    return text


def aim_sentence(claim: str, rng: random.Random) -> str | None:
    """The claim as a study's aim, hypothesis or open question: evidence that does not state it."""
    inner = _inner(claim)
    return rng.choice(_AIMS).format(c=inner) if inner else None


def finding_sentence(claim: str, rng: random.Random) -> str | None:
    """The claim as a study's finding ("We found that ..."): evidence that states it."""
    inner = _inner(claim)
    return rng.choice(_FINDINGS).format(c=inner) if inner else None


# -- the generator ---------------------------------------------------------------------------

CONTRADICTION_EDITS = ("number", "unit", "month", "entity", "direction", "role", "negation", "evidence_negation")


_GLOBAL_POOL: list[str] = []
"""Names of every source's evidence (set by :func:`generate`): swaps for a page that names too few."""


def _set_name_pool(sources: Sequence[Source]) -> None:
    """Every short name the sources' evidence holds, for the sources whose own page names too few
    (:func:`_pool`)."""
    _GLOBAL_POOL[:] = sorted({n for src in sources for n in checks.entities(src.evidence) if len(n.split()) <= 3})


def _pool(src: Source, rng: random.Random | None = None) -> list[str]:
    names = list(dict.fromkeys(n for s in src.page for n in checks.entities(s)))
    if len(names) < 6 and _GLOBAL_POOL and rng is not None:
        names += rng.sample(_GLOBAL_POOL, min(40, len(_GLOBAL_POOL)))
    return [n for n in names if checks.missing_entities(n, src.evidence) == [n]]


def _contradiction(kind: str, src: Source, rng: random.Random) -> tuple[str, str] | None:
    """(claim, evidence) of one contradiction edit of ``src``, or None when it does not apply."""
    claim, evidence = src.claim, src.evidence
    new: str | None
    if kind == "number":
        new = augment.number_swap(claim, evidence, rng)
    elif kind == "unit":
        new = unit_swap(claim, evidence, rng)
    elif kind == "month":
        new = month_swap(claim, evidence, rng)
    elif kind == "entity":
        pool = _pool(src, rng)
        new = typed_entity_swap(claim, evidence, pool, rng) if pool else None
    elif kind == "direction":
        new = direction_flip(claim, evidence, rng)
    elif kind == "role":
        new = role_swap(claim, evidence, rng)
    elif kind == "negation":
        new = augment.negate(claim, rng)
    else:
        changed = negate_evidence(evidence, claim, rng)
        return (claim, changed) if changed else None
    return (new, evidence) if new and new != claim else None


_OPENING_NAME_VERB = re.compile(
    r"^(?:The\s+)?(?P<name>[A-Z][^\s,;:()]*(?:\s+(?:of|de|the|and|von|van)?\s*[A-Z0-9][^\s,;:()]*){0,5})"
    r"(?:\s*\([^()]*\))?,?\s+(?P<verb>is|was|are|were|has|had|became|won|\w{3,}ed)\b"
)


def pronoun_version(evidence: str) -> tuple[str, str] | None:
    """The evidence with the name it opens with replaced by a pronoun, and that name as the page's
    topic: ("Soul Food is a 1997 film ..." -> ("Soul Food", "It is a 1997 film ...")), as a sentence
    on the subject's own page reads. None when it does not open with a name and a verb."""
    m = _OPENING_NAME_VERB.match(evidence)
    if m is None:
        return None
    name = m.group("name").strip()
    if not names_a_subject(name) or name.split()[0] in NOT_A_NAME:
        return None
    lowered = f" {evidence.lower()} "
    plural = m.group("verb") in ("are", "were")
    if plural:
        pronoun = "They"
    elif " she " in lowered or " her " in lowered:
        pronoun = "She"
    elif " he " in lowered or " his " in lowered:
        pronoun = "He"
    else:
        pronoun = "It"
    return name, pronoun + evidence[m.start("verb") - 1 :]


def _premise(src: Source, evidence: str, rng: random.Random, resolved: bool) -> str:
    """The evidence as the model will read it: with the page's topic (always when the claim names
    what the evidence's pronoun stands for, else most of the time), or alone."""
    if src.topic and (resolved or rng.random() < 0.7):
        return in_context(evidence, src.topic)
    return evidence


def pairs_for(
    src: Source,
    rng: random.Random,
    others: Sequence[Source],
    per_source: int = 2,
    common: frozenset[str] = frozenset(),
) -> list[Pair]:
    """The contrastive pairs of one source: its supporting pair, up to ``per_source`` contradiction
    edits (kinds tried in random order), a label-keeping paraphrase, and hard neutrals."""
    out: list[Pair] = []
    if rng.random() < 0.6 and (looser := loosen(src.claim, rng)) is not None:
        src = Source(looser, src.evidence, src.topic, src.origin, src.page)
    resolved = src.origin.endswith(("_pronoun", "_context"))
    # Half the time, a source whose evidence opens with the name of what it is about is shown as
    # that name's own page shows it: the topic, then "It ..." (the page-context case); everything
    # below is then made against that premise.
    version = pronoun_version(src.evidence) if not resolved else None
    if version is not None and rng.random() < 0.5:
        topic, evidence = version
        src = Source(src.claim, evidence, topic, src.origin + "_context", src.page)
        resolved = True
        other = others[rng.randrange(len(others))]
        if other.topic and checks.overlap(other.topic, src.claim) == 0:
            out.append(Pair(src.claim, in_context(evidence, other.topic), NEU, "context_other_topic"))
    premise = _premise(src, src.evidence, rng, resolved)
    out.append(Pair(src.claim, premise, ENT, f"{src.origin}/support"))
    kinds = list(CONTRADICTION_EDITS)
    rng.shuffle(kinds)
    made = 0
    # A claim worded unlike its evidence (FEVER, Climate-FEVER, WiCE, AttributionBench claims) gets
    # more edits, each twice: a page sentence's own claim is nearly a copy of it, and a model shown
    # mostly those learns that near-identity decides, not the word that differs.
    natural = not src.origin.startswith("page_")
    budget = per_source + 1 if natural else max(1, per_source - 1)
    copies = 2 if natural else 1
    for kind in kinds:
        if made >= budget:
            break
        if kind in ("negation", "evidence_negation") and rng.random() < 0.6:
            continue  # negations apply nearly everywhere: without this they would be half the edits
        hit = _contradiction(kind, src, rng)
        if hit is None:
            continue
        claim, evidence = hit
        shown = _premise(src, evidence, rng, resolved)
        out.extend(Pair(claim, shown, CON, f"contra_{kind}") for _ in range(copies))
        made += 1
    para = None
    for fn in rng.sample([spell_number, synonym_swap, "passive", "shorten"], 4):
        if fn == "passive":
            para = passive_to_active(src.claim)
        elif fn == "shorten":
            para = shorten(src.claim)
        else:
            para = fn(src.claim, rng)  # type: ignore[operator]
        if para and para != src.claim:
            out.append(Pair(para, premise, ENT, f"para_{getattr(fn, '__name__', fn)}"))
            break
    # Pronoun subject with the topic shown: support; under another page's topic: neutral.
    name = topic_name(src.topic) or ""
    opening = augment._opening_subject(src.claim)
    named = bool(names_a_subject(name) and opening and name.lower() in src.claim.lower()[: len(name) + 12])
    pron = augment.pronoun_subject(src.claim, src.evidence, common) if named and not resolved else None
    if pron is not None and _PRONOUN_VERB.match(pron):
        out.append(Pair(src.claim, in_context(pron, src.topic), ENT, "context_pronoun"))
        other = others[rng.randrange(len(others))]
        if other.topic and topic_name(other.topic) and checks.overlap(other.topic, src.claim) == 0:
            out.append(Pair(src.claim, in_context(pron, other.topic), NEU, "context_other_topic"))
    # Neutrals: an added clause or year, a detail removed, the claim as an aim.
    roll = rng.random()
    if roll < 0.3:
        other_claim = others[rng.randrange(len(others))].claim
        added = augment.add_clause(src.claim, other_claim) if other_claim != src.claim else None
        if added:
            out.append(Pair(added, premise, NEU, "neutral_clause"))
    elif roll < 0.45 and (added := augment.add_year(src.claim, src.evidence, rng)) is not None:
        out.append(Pair(added, premise, NEU, "neutral_year"))
    elif roll < 0.75 and (dropped := augment.drop_detail(src.claim, src.evidence, rng)) is not None:
        out.append(Pair(src.claim, _premise(src, dropped, rng, resolved), NEU, "neutral_dropped_detail"))
    if rng.random() < 0.25 and (aim := aim_sentence(src.claim, rng)) is not None:
        out.append(Pair(src.claim, aim, NEU, "neutral_aim"))
        if rng.random() < 0.5 and (finding := finding_sentence(src.claim, rng)) is not None:
            out.append(Pair(src.claim, finding, ENT, "finding"))
            negated = augment.negate(src.claim, rng)
            if negated and (refuting := finding_sentence(negated, rng)) is not None:
                out.append(Pair(src.claim, refuting, CON, "contra_finding"))
    # A same-page sentence sharing many words but lacking one of the claim's names or numbers.
    if rng.random() < 0.4:
        hard = [
            s
            for s in src.page
            if s != src.evidence
            and s not in src.evidence
            and 0.3 <= checks.overlap(src.claim, s) < 0.7
            and (checks.missing_entities(src.claim, s) or checks.missing_numbers(src.claim, s))
            and not checks.conflicting_quantity(src.claim, s)
        ]
        if hard:
            out.append(Pair(src.claim, _premise(src, rng.choice(hard), rng, resolved), NEU, "neutral_same_page"))
    return out


def generate(sources: Sequence[Source], rng: random.Random, per_source: int = 2) -> list[Pair]:
    """Every source's pairs (:func:`pairs_for`), in a seeded order."""
    common = frozenset(w for src in sources for w in re.findall(r"\b[a-z]+\b", src.evidence))
    _set_name_pool(sources)
    out: list[Pair] = []
    for src in sources:
        out.extend(pairs_for(src, rng, sources, per_source, common))
    return out


def real_pairs(data: Path, part: str, rng: random.Random, contra_copies: int = 3, fever_copies: int = 2) -> list[Pair]:
    """The labelled pairs of ``part`` as the model reads them at run time, with the page's topic
    where the set gives one (Climate-FEVER's article, WiCE's page title, AttributionBench's
    reference title; 70 % of the time, so the model also reads evidence without one): Climate-FEVER
    pairs (its rare contradictions ``contra_copies`` times), FEVER-Symmetric pairs
    (``fever_copies`` times), WiCE claims against their gold sets (entailment, or neutral for a
    partly supported claim) and against their most word-sharing other sentences (neutral),
    AttributionBench claims against their best passage, and FEVER's not_entailment pairs (refuted
    or not enough information: trained as "not entailment")."""
    from guardrail.core.passages import split_passages

    label_of = {"supported": ENT, "not_found": NEU, "contradicted": CON}
    out: list[Pair] = []

    def shown(evidence: str, topic: str | None) -> str:
        return in_context(evidence, topic) if topic and rng.random() < 0.7 else evidence

    for row in ds.read_climate_fever_rows(data, part):  # type: ignore[arg-type]
        for ev in row.evidences:
            label = label_of[ev.label]
            for _ in range(contra_copies if label == CON else 1):
                out.append(Pair(row.claim, shown(ev.evidence, clean_topic(ev.article)), label, "climate_fever"))
    for p in ds.read_fever_symmetric(data, part):  # type: ignore[arg-type]
        out.extend(Pair(p.claim, p.evidence, label_of[p.label], "fever_symmetric") for _ in range(fever_copies))
    for item in ds.read_wice(data, part):  # type: ignore[arg-type]
        sents, topic = item.sentences, wice_topic(item.sentences)
        gold = {i for group in item.supporting for i in group}
        label = ENT if item.supported else NEU
        for group in item.supporting:
            idx = sorted(i for i in set(group) if 0 <= i < len(sents))
            if idx:
                out.append(Pair(item.claim, shown(" ".join(sents[i] for i in idx), topic), label, "wice_gold"))
        others = [i for i in range(len(sents)) if i not in gold and len(sents[i].split()) >= 4]
        others.sort(key=lambda i: -checks.overlap(item.claim, sents[i]))
        for i in others[:4] + rng.sample(others[4:], min(2, len(others[4:]))):
            out.append(Pair(item.claim, shown(sents[i], topic), NEU, "wice_other"))
    for ab in ds.read_attributionbench(data, part):  # type: ignore[arg-type]
        if not ab.references:
            continue
        m = _REF_TITLE.match(ab.references[0])
        topic = clean_topic(m.group(1)) if m else None
        passages = [x for ref in ab.references for x in split_passages(_REF_TITLE.sub("", ref, count=1))]
        if passages:
            best = max(passages, key=lambda x: checks.overlap(ab.claim, x))
            out.append(Pair(ab.claim, shown(best, topic), ENT if ab.attributable else NEU, "attributionbench"))
    for claim, evidence, rte_label in read_fever_rte(data, part):
        if rte_label != "entailment" and len(evidence.split()) <= 150:
            out.append(Pair(claim, evidence, NOT_ENT, "fever_not_entailment"))
            refuting = refuting_sentence(claim, evidence)
            if refuting is not None:
                version = pronoun_version(refuting)
                shown_as = in_context(version[1], version[0]) if version and rng.random() < 0.5 else refuting
                out.extend(Pair(claim, shown_as, CON, "fever_refuted_lexical") for _ in range(fever_copies))
    return out


def refuting_sentence(claim: str, evidence: str) -> str | None:
    """The sentence of a FEVER not_entailment pair that refutes its claim by the words alone: it
    shares at least half of the claim's words and states another number, year or name in the
    claim's place, the opposite word, or (sharing 70 %) the claim negated. These are FEVER's
    refuted claims among its not-enough-information ones, labelled contradiction; None otherwise."""
    from guardrail.judges._features import conflicts_of

    for s, e in checks.sentence_spans(evidence):
        sentence = evidence[s:e]
        share = checks.overlap(claim, sentence)
        if share < 0.5:
            continue
        number, year, name, negation, antonym, _role, _rank = conflicts_of(claim, sentence)
        if number or year or name or antonym or (negation and share >= 0.7):
            return sentence
    return None


def snli_pairs(path: Path, limit: int, rng: random.Random, roles: int = 1500) -> list[Pair]:
    """The first ``limit`` SNLI pairs of the file (the forgetting guard) and up to ``roles``
    premises of its entailment pairs with their two roles swapped, as contradictions
    (:func:`snli_role_swap`; "A dog is chasing a cat." against "A cat is chasing a dog.")."""
    label_of = {"entailment": ENT, "neutral": NEU, "contradiction": CON}
    out: list[Pair] = []
    swaps: list[Pair] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            label = label_of.get(row.get("gold_label"))
            if label is None:
                continue
            if len(out) < limit:
                out.append(Pair(row["sentence2"], row["sentence1"], label, "snli"))
            premise = row["sentence1"]
            if len(swaps) < roles and premise not in seen and (swapped := snli_role_swap(premise)) is not None:
                seen.add(premise)
                swaps.append(Pair(swapped, premise, CON, "contra_role_snli"))
            if len(out) >= limit and len(swaps) >= roles:
                break
    rng.shuffle(swaps)
    return out + swaps


def counts(pairs: Iterable[Pair]) -> dict[str, int]:
    """How many pairs of each kind and label (for the training record)."""
    names = {ENT: "entailment", NEU: "neutral", CON: "contradiction", NOT_ENT: "not_entailment"}
    c = Counter(f"{p.kind}/{names[p.label]}" for p in pairs)
    return dict(sorted(c.items()))


# -- minimal pairs: roles and directions ----------------------------------------------------
# The v3 model reads "Spain defeated Italy" as entailed by "Italy defeated Spain" (0.98) and
# "Exercise increases the risk" by "exercise reduces the risk" (0.95): the few hundred role swaps
# and direction flips the page edits yield do not outweigh word overlap. These pairs hold the
# words fixed and change only who did what to whom, or which way a quantity moved, beside
# label-keeping rewrites (the passive, a synonym) so that the order alone decides nothing.

_ROLE_VERBS = {
    # kind: (active, passive participle, object's tail)
    "person": [
        ("defeated", "defeated", " in the {year} election"),
        ("succeeded", "succeeded", " as chair of the committee"),
        ("replaced", "replaced", " as head coach in {year}"),
        ("interviewed", "interviewed", " in {year}"),
        ("hired", "hired", " in {year}"),
        ("taught", "taught", " at the academy"),
        ("sued", "sued", " in {year}"),
        ("endorsed", "endorsed", " before the vote"),
    ],
    "org": [
        ("acquired", "acquired", " in {year}"),
        ("bought", "bought", " for ${n} million"),
        ("sued", "sued", " in {year}"),
        ("outsold", "outsold", " in {year}"),
        ("funded", "funded", " from {year}"),
    ],
    "place": [
        ("defeated", "defeated", " {n}-{m} in the final"),
        ("beat", "beaten", " in the {year} final"),
        ("invaded", "invaded", " in {year}"),
        ("annexed", "annexed", " in {year}"),
        ("overtook", "overtaken", " in population in {year}"),
    ],
}
_UP = ["increases", "raises", "boosts", "elevates"]
_DOWN = ["reduces", "lowers", "decreases", "cuts"]
_CAUSES = [
    "regular exercise",
    "smoking",
    "aspirin",
    "a high-salt diet",
    "the vaccine",
    "sleep deprivation",
    "coffee consumption",
    "the new tariff",
    "urban sprawl",
    "deforestation",
    "the carbon tax",
    "higher interest rates",
    "screen time",
    "air pollution",
    "the drug",
    "vitamin D supplementation",
    "the minimum wage increase",
    "remote work",
    "the policy",
    "meditation",
    "alcohol use",
    "the treatment",
    "ocean warming",
    "the subsidy",
    "fertiliser use",
    "physical therapy",
]
_EFFECTS = [
    "the risk of heart disease",
    "blood pressure",
    "the risk of lung cancer",
    "unemployment",
    "crop yields",
    "global temperatures",
    "sea ice extent",
    "inflation",
    "hospital admissions",
    "the risk of stroke",
    "cholesterol levels",
    "employee productivity",
    "housing prices",
    "rainfall in the region",
    "the risk of dementia",
    "bone density",
    "traffic deaths",
    "carbon emissions",
    "anxiety symptoms",
    "fish populations",
    "the birth rate",
    "exports",
]
_STUDY = ["", "", "A 2019 study found that ", "Researchers report that ", "The trial showed that "]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def role_pairs(names_by_kind: dict[str, list[str]], rng: random.Random, n: int) -> list[Pair]:
    """``n`` pairs about one asymmetric relation between two names of one kind: the premise "A
    defeated B ..."; claims "A defeated B" and "B was defeated by A" (entailment), "B defeated A"
    and "A was defeated by B" (contradiction), "A defeated C" (neutral)."""
    out: list[Pair] = []
    kinds = [k for k in _ROLE_VERBS if len(names_by_kind.get(k, [])) >= 3]
    while kinds and len(out) < n:
        kind = rng.choice(kinds)
        a, b, c = rng.sample(names_by_kind[kind], 3)
        verb, participle, tail = rng.choice(_ROLE_VERBS[kind])
        won = rng.randrange(1, 6)
        tail = tail.format(year=rng.randrange(1950, 2024), n=won, m=rng.randrange(0, won))
        premise = f"{a} {verb} {b}{tail}."
        if rng.random() < 0.3:
            premise = f"{b} was {participle} by {a}{tail}."
        if rng.random() < 0.3:
            premise = in_context(premise, a if rng.random() < 0.5 else b)
        detail = tail if rng.random() < 0.5 else ""
        options = [
            (f"{a} {verb} {b}{detail}.", ENT, "role_same"),
            (f"{b} was {participle} by {a}{detail}.", ENT, "role_passive"),
            (f"{b} {verb} {a}{detail}.", CON, "role_swapped"),
            (f"{a} was {participle} by {b}{detail}.", CON, "role_swapped_passive"),
            (f"{a} {verb} {c}{detail}.", NEU, "role_other_name"),
        ]
        weights = [2, 2, 2, 2, 1]  # as many entailments as contradictions
        claim, label, kind_name = rng.choices(options, weights)[0]
        out.append(Pair(claim, premise, label, f"minimal_{kind_name}"))
    return out


def direction_pairs(rng: random.Random, n: int) -> list[Pair]:
    """``n`` pairs about which way one cause moves one quantity: the premise "X reduces Y";
    claims with a synonym of the same direction (entailment), the opposite direction
    (contradiction), or another quantity (neutral); and "Y rose/fell" statements likewise."""
    out: list[Pair] = []
    while len(out) < n:
        cause, effect, other = rng.choice(_CAUSES), *rng.sample(_EFFECTS, 2)
        up = rng.random() < 0.5
        same, opposite = (_UP, _DOWN) if up else (_DOWN, _UP)
        if rng.random() < 0.75:
            premise = f"{rng.choice(_STUDY)}{cause} {rng.choice(same)} {effect}"
            premise = _cap(premise) + "."
            options = [
                (_cap(f"{cause} {rng.choice(same)} {effect}."), ENT, "direction_same"),
                (_cap(f"{cause} {rng.choice(opposite)} {effect}."), CON, "direction_flipped"),
                (_cap(f"{cause} {rng.choice(same)} {other}."), NEU, "direction_other_quantity"),
            ]
        else:
            year, pct = rng.randrange(1990, 2024), rng.randrange(2, 40)
            moved, unmoved = (("rose", "increased", "grew"), ("fell", "decreased", "declined"))[:: 1 if up else -1]
            premise = f"In {year}, {effect} {rng.choice(moved)} by {pct} percent."
            options = [
                (_cap(f"{effect} {rng.choice(moved)} in {year}."), ENT, "direction_same"),
                (_cap(f"{effect} {rng.choice(unmoved)} in {year}."), CON, "direction_flipped"),
                (_cap(f"{other} {rng.choice(moved)} in {year}."), NEU, "direction_other_quantity"),
            ]
        claim, label, kind_name = rng.choices(options, [3, 3, 1])[0]
        out.append(Pair(claim, premise, label, f"minimal_{kind_name}"))
    return out


_COUNTRIES = [
    "Italy",
    "Spain",
    "France",
    "Germany",
    "Brazil",
    "Argentina",
    "England",
    "Portugal",
    "Japan",
    "Mexico",
    "Chile",
    "Peru",
    "Norway",
    "Sweden",
    "Denmark",
    "Poland",
    "Austria",
    "Hungary",
    "Greece",
    "Turkey",
    "Egypt",
    "Nigeria",
    "Ghana",
    "Kenya",
    "India",
    "Pakistan",
    "China",
    "Korea",
    "Vietnam",
    "Thailand",
    "Canada",
    "Australia",
    "Ireland",
    "Belgium",
    "Croatia",
    "Serbia",
    "Uruguay",
    "Colombia",
]


def minimal_pairs(sources: Sequence[Source], rng: random.Random, n: int) -> list[Pair]:
    """``n`` role and direction minimal pairs (half each): people and organisations named by the
    sources (two or three capitalised words), countries from a fixed list."""
    names: dict[str, list[str]] = {"place": list(_COUNTRIES)}
    for name in sorted({found for src in sources for found in checks.entities(src.evidence)}):
        words = name.split()
        if not 2 <= len(words) <= 3 or not all(w[:1].isupper() and w.isalpha() for w in words):
            continue
        if words[0] in NOT_A_NAME or (kind := name_kind(name)) not in ("person", "org"):
            continue
        names.setdefault(kind, []).append(name)
    return role_pairs(names, rng, n // 2) + direction_pairs(rng, n - n // 2)


def denial_pairs(sources: Sequence[Source], rng: random.Random, n: int) -> list[Pair]:
    """Up to ``n`` pairs whose claim denies something, made from supported sources (the claim and
    the evidence it is entailed by), in equal thirds where each applies:

    * ``denial``: the claim negated against its evidence -> contradiction;
    * ``denial_of_another``: the claim with another name of the page in one of its names' places,
      negated ("Titanic was not directed by Steven Spielberg." against "... directed by James
      Cameron") -> neutral: the evidence does not state it, and it is no contradiction;
    * ``denial_confirmed``: the claim negated against its evidence negated -> entailment.

    Measured on the v3 model: it reads nearly every denial as contradicted by its negation word
    alone (18 of 20 true denials of the eval part of FEVER-Symmetric); these pairs make the same
    negation read three ways, so only what the evidence says can decide."""
    _set_name_pool(sources)
    kinds: dict[str, list[Pair]] = {"denial": [], "denial_of_another": [], "denial_confirmed": []}
    for src in rng.sample(list(sources), len(sources)):
        if min(len(v) for v in kinds.values()) * 3 >= n:
            break
        if checks.negation_count(src.claim) or checks.negation_count(src.evidence):
            continue  # negating a denial would affirm it; evidence that denies is read otherwise
        denied = augment.negate(src.claim, rng)
        if denied is None:
            continue
        kinds["denial"].append(Pair(denied, _premise(src, src.evidence, rng, False), CON, "denial"))
        swapped = _contradiction("entity", src, rng)
        other = augment.negate(swapped[0], rng) if swapped else None
        if other is not None:
            kinds["denial_of_another"].append(
                Pair(other, _premise(src, src.evidence, rng, False), NEU, "denial_of_another")
            )
        evidence = negate_evidence(src.evidence, src.claim, rng)
        if evidence is not None:
            kinds["denial_confirmed"].append(Pair(denied, _premise(src, evidence, rng, False), ENT, "denial_confirmed"))
    third = min(n // 3, *(len(v) for v in kinds.values()))
    return [pair for pairs in kinds.values() for pair in pairs[:third]]


def synonym_pairs(sources: Sequence[Source], rng: random.Random, n: int, thesaurus: Thesaurus) -> list[Pair]:
    """Up to ``n`` pairs made from supported sources with WordNet synonyms
    (:func:`training.synonyms.reword`), in two halves where each applies:

    * ``synonym_reworded``: the claim with up to two of the words it shares with its evidence
      replaced by synonyms, against that evidence -> entailment;
    * ``synonym_reworded_edited``: the reworded claim with a name, number or negation changed
      (:func:`_contradiction`) -> contradiction, so a reworded claim is not read as support either.

    The v3 model reads shared words as support (``bench/probe_readings.py``: right claims reworded
    as a person would word them read lower entailment than wrong claims keeping the page's words);
    these pairs make support rest on what the words mean."""
    kinds: dict[str, list[Pair]] = {"synonym_reworded": [], "synonym_reworded_edited": []}
    for src in rng.sample(list(sources), len(sources)):
        if min(len(v) for v in kinds.values()) * 2 >= n:
            break
        reworded = reword(src.claim, src.evidence, thesaurus, rng)
        if reworded is None:
            continue
        resolved = src.origin.endswith(("_pronoun", "_context"))
        kinds["synonym_reworded"].append(
            Pair(reworded, _premise(src, src.evidence, rng, resolved), ENT, "synonym_reworded")
        )
        edited = Source(reworded, src.evidence, src.topic, src.origin, src.page)
        for kind in rng.sample(["entity", "number", "negation"], 3):
            hit = _contradiction(kind, edited, rng)
            if hit is not None:
                claim, evidence = hit
                shown = _premise(src, evidence, rng, resolved)
                kinds["synonym_reworded_edited"].append(Pair(claim, shown, CON, "synonym_reworded_edited"))
                break
    half = min(n // 2, *(len(v) for v in kinds.values()))
    return [pair for pairs in kinds.values() for pair in pairs[:half]]


__all__ = [
    "CON",
    "ENT",
    "NEU",
    "NOT_ENT",
    "Pair",
    "Source",
    "aim_sentence",
    "claim_from_sentence",
    "counts",
    "denial_pairs",
    "direction_flip",
    "direction_pairs",
    "finding_sentence",
    "generate",
    "loosen",
    "minimal_pairs",
    "month_swap",
    "name_kind",
    "negate_evidence",
    "pairs_for",
    "passive_to_active",
    "pronoun_version",
    "real_pairs",
    "refuting_sentence",
    "role_pairs",
    "role_swap",
    "sentence_sources",
    "shorten",
    "snli_pairs",
    "snli_role_swap",
    "spell_number",
    "supported_sources",
    "synonym_pairs",
    "synonym_swap",
    "unit_swap",
]
