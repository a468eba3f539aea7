"""Sentence splitting: the package's one splitter, ``sentencex`` fed through a bounded window.

``sentencex`` knows abbreviations ("Dr.", "e.g.", "U.S."), decimals and quotations, but its time
grows with the square of the text on runs of unpaired quote characters. So text longer than
:data:`WINDOW` characters is split window by window: every sentence but the last of a window is
kept and the next window starts at that last sentence. A sentence longer than three quarters of
a window is cut at its last white space inside the window (a longer word is not cut).
A few abbreviations ``sentencex`` does not know ("approx.", "vol.", "Ms.") never end a sentence.
"""

from __future__ import annotations

import re

from sentencex import segment

WINDOW = 2000
"""Characters ``sentencex`` sees at once."""
_SPACE = re.compile(r"\s")
_ABBREVIATION_END = re.compile(r"(?<![\w.])(?:approx|vol|ms)\.\s*$", re.IGNORECASE)
"""A piece ending in an abbreviation that ``sentencex`` takes for a sentence end ("It was approx.
| 20 km long."): the piece and the next are one sentence."""


def split_sentences(text: str, language: str = "en") -> list[str]:
    """The sentences of ``text``, without surrounding white space (a blank line ends a sentence)."""
    return [text[s:e] for s, e in sentence_spans(text, language)]


def sentence_spans(text: str, language: str = "en") -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text``, surrounding white space excluded."""
    if len(text) <= WINDOW:  # most blocks: one call
        return [(s, e) for s, e in (_trimmed(text, s, e) for s, e in _pieces(text, 0, len(text), language)) if e > s]
    out: list[tuple[int, int]] = []
    pos, n = 0, len(text)
    while pos < n:
        end = min(n, pos + WINDOW)
        pieces = _pieces(text, pos, end, language)
        if end < n:
            pieces, end = _settled(text, pieces, pos, end)
        out.extend(_trimmed(text, s, e) for s, e in pieces)
        pos = end
    return [(s, e) for s, e in out if e > s]


def _pieces(text: str, start: int, end: int, language: str) -> list[tuple[int, int]]:
    """``sentencex``'s pieces of ``text[start:end]``, which cover it exactly (else one piece)."""
    pieces: list[tuple[int, int]] = []
    pos = start
    joined = False
    for piece in segment(language, text[start:end]):
        if joined:
            pieces[-1] = (pieces[-1][0], pos + len(piece))
        else:
            pieces.append((pos, pos + len(piece)))
        joined = _ABBREVIATION_END.search(piece) is not None
        pos += len(piece)
    return pieces if pos == end else [(start, end)]


def _settled(text: str, pieces: list[tuple[int, int]], start: int, end: int) -> tuple[list[tuple[int, int]], int]:
    """The pieces of a window that more text cannot change, and where the next window starts."""
    if len(pieces) > 1 and pieces[-1][0] - start >= WINDOW // 4:
        return pieces[:-1], pieces[-1][0]
    # The last sentence fills most of the window: keep the ones before it and cut it at its last
    # white space in the window, or (one long word: a masked URL or code) after that word.
    kept = pieces[:-1]
    start = pieces[-1][0]
    cut = max(text.rfind(" ", start + 1, end), text.rfind("\n", start + 1, end), text.rfind("\t", start + 1, end))
    if cut < 0:
        after = _SPACE.search(text, end)
        cut = after.start() if after else len(text)
    return [*kept, (start, cut)], cut


def _trimmed(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e
