"""What a reader of the page knows about a sentence: the page's topic, as the judge's model reads it.

A sentence on the page "Titanic (1997 film)" that says "It was directed by James Cameron" is about
Titanic; alone it is about nothing. FEVER systems prefix each evidence sentence with its page title
for this reason, and so does the embedded judge: the model was trained on evidence written
``"<topic>: <sentence>"`` (``training.contrastive``), and the decision's subject test resolves a
pronoun or a definite description ("the film", "the river") to the topic.

The topic is the page title (the site's name cut off) or, where the page has none, the nearest
markdown heading above the sentence. Pure text functions: the training script and the judge share
them, so the model reads at run time what it was trained on.
"""

from __future__ import annotations

import re

MAX_TOPIC_WORDS = 12
"""Longer titles are cut: a topic names a subject, it is not a sentence of evidence."""

_SITE_SUFFIX = re.compile(r"\s+[-|–—:·•]\s+[^-|–—:·•]{1,40}$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_PRONOUN_OPENING = re.compile(r"^\W*(?:it|he|she|they|his|her|its|their|this|these)\b", re.IGNORECASE)
_DEFINITE_OPENING = re.compile(r"^\W*(?:the|this|that)\s+([a-z][a-z\-]+)(?:\s+([a-z][a-z\-]+))?\b")


def clean_topic(title: str | None) -> str | None:
    """The subject a page title names: whitespace collapsed, one trailing site name cut ("Titanic
    (1997 film) - Wikipedia" -> "Titanic (1997 film)"), at most ``MAX_TOPIC_WORDS`` words; None for
    an empty title."""
    if not title:
        return None
    text = " ".join(title.split())
    cut = _SITE_SUFFIX.sub("", text)
    if len(cut.split()) >= 1 and cut != text and len(cut) >= 3:
        text = cut
    words = text.split()
    text = " ".join(words[:MAX_TOPIC_WORDS])
    return text or None


def headings(text: str) -> list[tuple[int, str]]:
    """Every markdown heading of ``text``: (character offset, heading text)."""
    return [(m.start(), m.group(1).strip()) for m in _HEADING.finditer(text)]


def nearest_heading(text: str, offset: int) -> str | None:
    """The last markdown heading above ``offset`` in ``text`` (None: none above it)."""
    found = None
    for start, heading in headings(text):
        if start >= offset:
            break
        found = heading
    return found


def in_context(text: str, topic: str | None) -> str:
    """The evidence as the model reads it: ``"<topic>: <text>"``, or the text alone without a topic."""
    if not topic:
        return text
    return f"{topic}: {text}"


def opens_with_reference(sentence: str) -> bool:
    """Whether a sentence names its subject by a pronoun ("It was directed ...") or a definite
    description ("The film was directed ...", "This species ..."): a reader takes the subject from
    the page's topic or the sentence before."""
    return bool(_PRONOUN_OPENING.match(sentence) or _DEFINITE_OPENING.match(sentence))


_OPENING_NAME_VERB = re.compile(
    r"^(?:The\s+)?(?P<name>[A-Z][^\s,;:()]*(?:\s+(?:of|de|the|and|von|van)?\s*[A-Z0-9][^\s,;:()]*){0,5})"
    r"(?:\s*\([^()]*\))?,?\s+(?:is|was|are|were|has|had|became)\b"
)
NOT_A_NAME = frozenset(
    re.findall(
        r"\w+",
        "In On At After During When This These There Here He She It They We I You His Her Its Their Our As By For"
        " From If Since While With Although Because But And Or So Then Thus However Also A An",
    )
)
"""Capitalised words that open sentences without being names."""


def opening_name(sentence: str) -> str | None:
    """The name a sentence opens with as its subject ("Titanic is a 1997 film ..." -> "Titanic"):
    the topic of a passage that has no title, for the sentences after it that say "It"."""
    m = _OPENING_NAME_VERB.match(sentence)
    if m is None:
        return None
    name = m.group("name").strip()
    if name.split()[0] in NOT_A_NAME or len(name.split()) > 6:
        return None
    return name


def topic_name(topic: str | None) -> str | None:
    """A topic without its disambiguation ("Titanic (1997 film)" -> "Titanic")."""
    if not topic:
        return None
    name = re.sub(r"\s*\([^()]*\)\s*$", "", topic).strip()
    return name or None


__all__ = [
    "MAX_TOPIC_WORDS",
    "NOT_A_NAME",
    "clean_topic",
    "headings",
    "in_context",
    "nearest_heading",
    "opening_name",
    "opens_with_reference",
    "topic_name",
]
