"""Antonyms and the English check for the embedded judge: small, offline, tested word lists.

The antonym pairs are a curated list (built here, tested in ``tests/test_judge_parts.py``), not a
WordNet dump: WordNet's antonym relation is sparse for the predicates and quantifiers claims turn
on ("a large majority" / "a small minority", "legal" / "illegal", "before" / "after"), its data
packages download at run time, and a short list is auditable. Words formed with a negative prefix
("illegal", "unlikely", "disagree", "non-profit") are antonyms of their stem by rule.

Language: the embedded judge reads English only. English text is told by its function words
(nearly every English sentence has one of ``_ENGLISH``, other languages' sentences seldom do); text
that has none is classified by ``py3langid`` (BSD-3, offline, loaded on first need), and text in a
non-Latin script is not English.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

_PAIRS_TEXT = """
increase decrease|increased decreased|increases decreases|increasing decreasing|rise fall|rises falls
rising falling|rose fell|risen fallen|grow shrink|grew shrank|growth decline|gain loss|gained lost
expand contract|expanded contracted|higher lower|highest lowest|high low|more less|more fewer|most fewest
many few|majority minority|large small|larger smaller|largest smallest|big small|bigger smaller|biggest smallest
long short|longer shorter|longest shortest|wide narrow|deep shallow|thick thin|thicker thinner|heavy light
warm cool|warmer cooler|warming cooling|hot cold|hotter colder|wet dry|wetter drier|fast slow|faster slower
accelerate decelerate|accelerating slowing|before after|earlier later|earliest latest|early late|first last
begin end|began ended|start finish|started finished|north south|northern southern|east west|eastern western
above below|over under|inside outside|upper lower|maximum minimum|max min|major minor|positive negative
win lose|won lost|wins loses|winner loser|victory defeat|success failure|succeeded failed|pass fail|passed failed
true false|correct incorrect|right wrong|legal illegal|lawful unlawful|allowed forbidden|allowed banned
permitted prohibited|accept reject|accepted rejected|approve reject|approved rejected|support oppose
supported opposed|supports opposes|agree disagree|agreed disagreed|include exclude|included excluded
increase reduce|increased reduced|increases reduces|increasing reducing|improve worsen|improves worsens
improved worsened|improving worsening|boost reduce|boosts reduces
raise lower|raised lowered|strengthen weaken|strengthened weakened|advance delay|advanced delayed
advances delays|widen narrow|widened narrowed|expand shrink|expanded shrank|benefit harm|benefits harms
benefited harmed|beneficial harmful
strong weak|stronger weaker|strongest weakest|rich poor|richer poorer|cheap expensive|cheaper costlier
safe dangerous|safer riskier|healthy unhealthy|alive dead|living dead|born died|male female|men women
private public|domestic foreign|modern ancient|old new|older newer|old young|older younger|oldest youngest
entire partial|full empty|always never|all none|everyone nobody|everything nothing|same different
present absent|presence absence|open closed|opened closed|import export|imports exports|buy sell|bought sold
arrive depart|arrived departed|enter exit|entered left|join leave|joined left|hire fire|hired fired
add remove|added removed|attack defend|internal external|input output|maximal minimal|superior inferior
possible impossible|likely unlikely|probable improbable|able unable|visible invisible|known unknown
common rare|frequent rare|often rarely|usual unusual|natural artificial|organic synthetic|manual automatic
profit loss|profitable unprofitable|surplus deficit|asset liability|credit debit|export import
"""
_PAIRS = re.split(r"[|\n]", _PAIRS_TEXT)

_PREFIXES = ("un", "in", "il", "im", "ir", "dis", "non", "non-")


def _antonym_table() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for pair in _PAIRS:
        words = pair.split()
        if len(words) != 2:
            continue
        a, b = words
        table.setdefault(a, set()).add(b)
        table.setdefault(b, set()).add(a)
    return {k: frozenset(v) for k, v in table.items()}


ANTONYMS: dict[str, frozenset[str]] = _antonym_table()
"""Each word's antonyms (lower case, both directions)."""


def are_antonyms(a: str, b: str) -> bool:
    """Whether two words are opposites: a listed pair, or one is the other with a negative prefix
    ("legal" / "illegal", "likely" / "unlikely"; stems of five letters or more)."""
    return b.lower() in opposites(a.lower())


@functools.lru_cache(maxsize=8192)
def opposites(word: str) -> frozenset[str]:
    """Every word that :func:`are_antonyms` pairs with the lower-case ``word`` (looked up, not
    tried pair by pair: a claim is checked against each word of many sentences)."""
    found = set(ANTONYMS.get(word, ()))
    if len(word) >= 5:
        found.update(p + word for p in _PREFIXES)
    found.update(word[len(p) :] for p in _PREFIXES if word.startswith(p) and len(word) - len(p) >= 5)
    return frozenset(found)


# -- words of one kind -------------------------------------------------------------

_KINDS_TEXT = """
man woman|men women|boy girl|boys girls|father mother|fathers mothers|son daughter|sons daughters
brother sister|brothers sisters|husband wife|husbands wives|king queen|kings queens|prince princess
uncle aunt|nephew niece|grandfather grandmother|grandson granddaughter
guitar piano drums violin cello viola saxophone trumpet trombone flute clarinet harmonica banjo mandolin harp
  oboe bassoon tuba accordion ukulele
guitarist pianist drummer violinist cellist saxophonist trumpeter bassist keyboardist vocalist trombonist harpist
  flautist
gold silver bronze platinum
summer winter autumn
anxiety depression schizophrenia dementia asthma obesity hypertension insomnia autism epilepsy diabetes alzheimer
  parkinson migraine arthritis osteoporosis
lung breast prostate colorectal liver kidney pancreatic ovarian cervical bladder stomach brain
humans mice rats monkeys pigs dogs cats rabbits sheep zebrafish
children adults adolescents infants
boyfriend girlfriend|stepfather stepmother|stepson stepdaughter
melanoma leukemia lymphoma
"""
"""Words of one kind, one group a line (an indented line goes on the one before) or between bars:
in an otherwise identical sentence, one in the place of another states something else ("played the
drums" for "played the guitar", "symptoms of depression" for "symptoms of anxiety", "in mice" for
"in humans"). Never two words for the same thing in one group. Curated for the swaps issue
21 names (a sex, an instrument, a condition, who was studied); words with a second common sense
("bass", "organ", "spring", "fall") are left out."""


def _kind_table() -> dict[str, frozenset[str]]:
    table: dict[str, frozenset[str]] = {}
    for group in re.split(r"[|\n]", re.sub(r"\n[ \t]+", " ", _KINDS_TEXT)):
        words = frozenset(group.split())
        for word in words:
            table[word] = table.get(word, frozenset()) | (words - {word})
    return table


KINDS: dict[str, frozenset[str]] = _kind_table()
"""Each word's others of its kind (lower case), as listed; :func:`guardrail.judges._checks.kind_swap`
compares them by form."""


# -- language ---------------------------------------------------------------------

_ENGLISH_TEXT = (
    "the is was were are been has have had of and which who that this these with from by its their "
    "it he she they would could should will not also but than into during between about after before "
    "became born made such there"
)
_ENGLISH = frozenset(_ENGLISH_TEXT.split())
_FOREIGN_TEXT = (
    "der die das und ist wurde nicht mit ein eine dem den des auf für von zum zur "  # German
    "le la les est et une des du au aux sont dans pour pas qui "  # French
    "el los las es y una del por con para que fue "  # Spanish
    "il lo gli è e una della di che per sono "  # Italian
    "o os é um uma do da dos das em não "  # Portuguese
    "het een en van zijn werd niet "  # Dutch
)
_FOREIGN = frozenset(_FOREIGN_TEXT.split())
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")

_LOCK = threading.Lock()
_IDENTIFIER: list[Any] = []


def _identifier() -> Any:
    with _LOCK:
        if not _IDENTIFIER:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _IDENTIFIER.append(LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True))
        return _IDENTIFIER[0]


def detect_language(text: str) -> tuple[str, float]:
    """``py3langid``'s language code and probability for ``text``."""
    code, prob = _identifier().classify(text)
    return str(code), float(prob)


def is_english(text: str, min_words: int = 3) -> bool:
    """Whether ``text`` reads as English; text too short to tell (fewer than ``min_words`` words)
    counts as English, so a name or a number is never refused."""
    words = _WORD.findall(text[:4000])
    letters = "".join(words)
    if len(letters) >= 4 and len(_LATIN.findall(letters)) < 0.5 * len(letters):
        return False  # mostly another script (CJK, Cyrillic, Arabic, ...)
    if len(words) < min_words:
        return True
    lowered = [w.lower() for w in words]
    share = sum(w in _ENGLISH for w in lowered) / len(lowered)
    if share >= 0.08:
        return True
    if not any(w in _FOREIGN for w in lowered):
        return True  # no function word of any common language: a headline-like English claim
    code, prob = detect_language(text[:4000])
    return code == "en" or prob < 0.2


__all__ = ["ANTONYMS", "KINDS", "are_antonyms", "detect_language", "is_english", "opposites"]
