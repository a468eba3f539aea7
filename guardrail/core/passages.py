"""Split page text into passages: blank-line paragraphs packed to at most ``max_words`` words."""

from __future__ import annotations

import re

MAX_WORDS = 200

_BLANK_LINE = re.compile(r"\n\s*\n")


def _cut_long(paragraph: str, max_words: int) -> list[str]:
    words = paragraph.split()
    return [" ".join(words[i : i + max_words]) for i in range(0, len(words), max_words)]


def split_passages(text: str, max_words: int = MAX_WORDS) -> list[str]:
    """Split ``text`` on blank lines and pack consecutive paragraphs into passages.

    Every passage has at most ``max_words`` words (counted with ``str.split``);
    a paragraph longer than that is cut on word boundaries. Order is kept and
    no text is dropped except whitespace.
    """
    if max_words < 1:
        raise ValueError("max_words must be at least 1")
    passages: list[str] = []
    current: list[str] = []
    current_words = 0
    for raw in _BLANK_LINE.split(text):
        paragraph = raw.strip()
        if not paragraph:
            continue
        n = len(paragraph.split())
        if n > max_words:
            if current:
                passages.append("\n\n".join(current))
                current, current_words = [], 0
            passages.extend(_cut_long(paragraph, max_words))
            continue
        if current and current_words + n > max_words:
            passages.append("\n\n".join(current))
            current, current_words = [], 0
        current.append(paragraph)
        current_words += n
    if current:
        passages.append("\n\n".join(current))
    return passages
