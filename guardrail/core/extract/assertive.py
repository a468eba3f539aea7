"""Which sentences assert something to check, and which are filler, lead-ins, questions or headings."""

from __future__ import annotations

import re
from collections.abc import Iterable

_INTERJECTION = (
    r"(?:sure|certainly|of course|absolutely|okay|ok|thanks|thank you|you're welcome|"
    r"happy to help|glad to help|great|good news)"
)

NON_ASSERTIVE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.I)
    for p in (
        rf"{_INTERJECTION}",
        rf"(?:{_INTERJECTION}[,!.]? )?(?:great|good) question",
        rf"(?:{_INTERJECTION}[,!.]? )?here(?:'s|’s| is| are) (?:what i (?:found|know|could find)|"
        r"some|a|an|the|my|everything|more)\b[^.!?:]{0,80}",
        r"(?:below|above) (?:is|are) [^.!?:]{0,80}",
        r"(?:i|we) (?:found|have found|could find|was able to find|were able to find)(?: the following|"
        r" some| several| a few| these| a number of)?(?: relevant| useful)? (?:sources|results|articles|"
        r"pages|information|references|studies|links|documents)[^.!?:]{0,60}",
        r"let me (?:know|explain|break|summarize|summarise|check|look|help)\b[^.!?]{0,100}",
        r"(?:i )?hope (?:this|that|it) (?:helps|answers|clarifies)[^.!?]{0,60}",
        r"feel free to [^.!?]{0,100}",
        r"(?:please )?(?:don't|don’t|do not) hesitate to [^.!?]{0,100}",
        r"if you (?:have|need|want|would like)(?: any)?(?: more| other| further| additional)? "
        r"(?:questions?|help|information|assistance|clarification|details)\b[^.!?]{0,80}",
        r"(?:is there )?anything else (?:i can|you(?:'d| would) like)[^.!?]{0,60}",
        r"(?:in )?(?:summary|short|conclusion|brief)|to (?:summarize|summarise|sum up|conclude)",
        r"(?:(?:please )?(?:see|read|visit|check(?: out)?)(?: also)?|more|details|source|sources|via|"
        r"learn more)(?: (?:here|this|it|them|the (?:source|sources|link|links|article|page)))?"
        r"(?: (?:for|to learn) (?:more|details|more (?:details|information)))?",
    )
)
"""Whole-sentence patterns for filler that asserts nothing; matched against the sentence's plain
text without its final punctuation (and only when it has at most 25 words)."""
_ANY_FILLER = re.compile("|".join(f"(?:{p.pattern})" for p in NON_ASSERTIVE_PATTERNS), re.I)


def needs_grounding(plain_text: str, *, heading: bool = False, extra_patterns: Iterable[re.Pattern[str]] = ()) -> bool:
    """Whether a sentence (its plain text: markup and citations removed) asserts something to check.

    False for a heading, a sentence with no letters, one ending in ``:`` or ``?`` (a lead-in or a
    question), and short filler matching :data:`NON_ASSERTIVE_PATTERNS` or ``extra_patterns``.
    """
    if heading:
        return False
    text = plain_text.strip()
    if not any(map(str.isalpha, text)):
        return False
    if text[-1] in ":：?？":
        return False
    core = _without_trailing_punctuation(text)
    if len(core.split()) > 25:
        return True
    return not (_ANY_FILLER.fullmatch(core) or any(p.fullmatch(core) for p in extra_patterns))


def _without_trailing_punctuation(text: str) -> str:
    """``text`` without the run of non-alphanumeric characters ending it (``"Hi!!"`` -> ``"Hi"``)."""
    end = len(text)
    while end and not text[end - 1].isalnum():
        end -= 1
    return text[:end]
