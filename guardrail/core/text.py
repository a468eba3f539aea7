"""One text normalisation for everything that is matched: claims, page passages, quotes.

A zero-width space, a soft hyphen or a zero-width joiner inside "1\u200b00" or "Cel\u00adsius"
is invisible to a reader but splits the number or the name for any matcher (the judge's number
and name checks, the quote guard). :func:`normalize_text` removes the Unicode *format* characters
(category Cf) and applies NFKC, so that full-width digits, ligatures and non-breaking spaces read
as their plain forms too. Pure and fast: one regular-expression pass and one C-level
normalisation, no per-character Python loop.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["FORMAT_CHARACTERS", "normalize_text"]

FORMAT_CHARACTERS = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
"""Every character of Unicode category Cf (format: invisible controls such as U+200B ZERO WIDTH
SPACE, U+00AD SOFT HYPHEN, U+200D ZERO WIDTH JOINER, U+FEFF, the bidirectional controls), as of
Unicode 15.1; a test checks it against the running Python's ``unicodedata``."""


def normalize_text(text: str) -> str:
    """``text`` without format characters (Unicode category Cf), in NFKC.

    Idempotent; ASCII text comes back unchanged (and unchanged text is returned as is).
    """
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", FORMAT_CHARACTERS.sub("", text))
