"""The quote guard: a verdict counts only with a quote that really is in the passages shown."""

from __future__ import annotations

import re
from collections.abc import Sequence

from guardrail.core.schema import JudgeVerdict, Reason
from guardrail.core.text import normalize_text

_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u00a0": " ",
    }
)
_WHITESPACE = re.compile(r"\s+")


def normalize_for_match(text: str) -> str:
    """:func:`~guardrail.core.text.normalize_text` (format characters out, NFKC), then straighten
    curly quotes and collapse whitespace, so formatting cannot hide a real match. Case is kept:
    a quote must be the page's own words, letter for letter."""
    return _WHITESPACE.sub(" ", normalize_text(text).translate(_QUOTES)).strip()


def quote_in_passages(quote: str, passages: Sequence[str]) -> bool:
    """True when the normalised, non-empty ``quote`` is a substring of one normalised passage."""
    needle = normalize_for_match(quote)
    if not needle:
        return False
    return any(needle in normalize_for_match(p) for p in passages)


def apply_quote_guard(verdict: JudgeVerdict, passages: Sequence[str]) -> JudgeVerdict:
    """Demote a supported/contradicted verdict whose quote is not in ``passages`` to not_found.

    The demoted verdict has confidence 0 and reason ``evidence_quote_not_in_source``;
    the judge's quote is kept so an auditor can see what it claimed.
    """
    if verdict.label == "not_found":
        return verdict
    if verdict.evidence_quote and quote_in_passages(verdict.evidence_quote, passages):
        return verdict
    return JudgeVerdict(
        label="not_found",
        evidence_quote=verdict.evidence_quote,
        confidence=0.0,
        reason=Reason.evidence_quote_not_in_source.value,
    )
