"""Positions in the answer: its lines, UTF-8 byte offsets and per-character flags.

Everything here is linear in the length of the answer, or logarithmic per query.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable

_BREAK = re.compile(r"\r\n|\r|\n")
_SET_RUN = re.compile(rb"\x01+")


class Lines:
    """The lines of a text as markdown-it-py counts them (``\\r\\n``, ``\\r`` and ``\\n`` end a line)."""

    def __init__(self, text: str) -> None:
        self.starts = [0]
        self.content_ends: list[int] = []
        for m in _BREAK.finditer(text):
            self.content_ends.append(m.start())
            self.starts.append(m.end())
        self.content_ends.append(len(text))
        self.ends = [*self.starts[1:], len(text)]

    def __len__(self) -> int:
        return len(self.starts)

    def index_of(self, pos: int) -> int:
        """The index of the line holding character ``pos``."""
        return bisect_right(self.starts, pos) - 1


class ByteOffsets:
    """Character offset -> UTF-8 byte offset, with a checkpoint every ``_STEP`` characters."""

    _STEP = 64

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii = text.isascii()
        self.marks: list[int] = []
        if not self.ascii:
            total = 0
            for k in range(0, len(text) + 1, self._STEP):
                self.marks.append(total)
                total += len(text[k : k + self._STEP].encode("utf-8"))

    def __call__(self, i: int) -> int:
        if self.ascii:
            return i
        k, r = divmod(i, self._STEP)
        base = k * self._STEP
        return self.marks[k] + len(self.text[base : base + r].encode("utf-8"))


def mark(flags: bytearray, start: int, end: int) -> None:
    """Set ``flags[start:end]`` to 1."""
    if end > start:
        flags[start:end] = b"\x01" * (end - start)


def any_set(flags: bytearray, start: int, end: int) -> bool:
    """Whether any of ``flags[start:end]`` is set."""
    return flags.find(1, start, end) >= 0


class Intervals:
    """Sorted, disjoint ``[start, end)`` intervals with a logarithmic overlap test."""

    def __init__(self, spans: Iterable[tuple[int, int]]) -> None:
        merged: list[tuple[int, int]] = []
        for s, e in sorted(spans):
            if merged and s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            elif e > s:
                merged.append((s, e))
        self.starts = [s for s, _ in merged]
        self.ends = [e for _, e in merged]

    def overlaps(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` shares a character with an interval."""
        k = bisect_right(self.starts, end - 1) - 1
        return k >= 0 and self.ends[k] > start


def either(a: bytearray, b: bytearray) -> bytearray:
    """The character-wise OR of two flag arrays of the same length."""
    return bytearray((int.from_bytes(a, "big") | int.from_bytes(b, "big")).to_bytes(len(a), "big"))


def but_not(a: bytearray, b: bytearray) -> bytearray:
    """The characters flagged in ``a`` and not in ``b``."""
    return bytearray((int.from_bytes(a, "big") & ~int.from_bytes(b, "big")).to_bytes(len(a), "big"))


def runs(flags: bytearray) -> list[tuple[int, int]]:
    """The ``[start, end)`` runs of set flags."""
    return [m.span() for m in _SET_RUN.finditer(flags)]
