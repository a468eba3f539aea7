"""Inline markdown syntax, scanned in linear time: code spans, brackets, link destinations, URLs.

Each scanner makes one pass over the text (or is logarithmic per query on tables built in one
pass), so hostile answers (``"[a](" * n``, ``"[" * n``, unmatched backticks) stay linear.
"""

from __future__ import annotations

import ipaddress
import re
from bisect import bisect_left
from collections.abc import Iterable

from linkify_it import LinkifyIt

from guardrail.core.extract.text import mark

MARKER = re.compile(
    r"(\^)?\[(\^[\w-]+|\d{1,3}(?:[ \t]*[-–][ \t]*\d{1,3})?(?:[ \t]*[,;][ \t]*\d{1,3}"
    r"(?:[ \t]*[-–][ \t]*\d{1,3})?)*)\]"
)
"""Numbered markers: ``[1]``, ``[1, 3]``, ``[1-3]``, ``^[1]``, ``[^note]``."""
MARKERISH = re.compile(r"^(?:\^?\[?\^?\d{1,3}\]?|\^[\w-]+)$")
"""Link text that is only a marker (``[1](url)``): the link is a citation, not prose."""
AUTOLINK = re.compile(r"<(https?://[^<>\s]+)>", re.I)
REF_LINK = re.compile(r"\[([^\[\]\n]+)\]\[([^\[\]\n]*)\]")
HTTP = re.compile(r"^https?://", re.I)

_BACKTICKS = re.compile(r"`+")
_BRACKET_TOKENS = re.compile(r"[\\\[\]]|\n(?=\n)")
_PAREN_TOKENS = re.compile(r"\\.|[()]|\s+", re.S)
_NOT_BLANK = re.compile(r"[^ \t\n]")

_LINKIFY = LinkifyIt(options={"fuzzy_link": False, "fuzzy_email": False, "fuzzy_ip": False})
_SCHEMA = re.compile(_LINKIFY.re["schema_search"], re.I)
_URL_TRAIL = "*_~.,;:!?'\"”’"
_URL_WINDOW = 256  # characters a URL is first validated in; grown (x4) while a URL fills it


def norm_label(label: str) -> str:
    """A reference label as compared: ``"^Note "`` -> ``"note"``."""
    return label.strip().lstrip("^").strip().lower()


# -- code spans ----------------------------------------------------------------------------------


def mark_code_spans(text: str, segments: Iterable[tuple[int, int]], code: bytearray) -> None:
    """Flag the inline code spans of each ``[start, end)`` segment in ``code``.

    A run of backticks opens a span closed by the next run of the same length; a run preceded by
    a backslash opens nothing (its would-be span is skipped whole, closer included).
    """
    for start, end in segments:
        runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text, start, end)]
        closer = _next_same_length(runs)
        i = 0
        while i < len(runs):
            j = closer[i]
            if j < 0:
                i += 1
                continue
            s = runs[i][0]
            if not (s > start and text[s - 1] == "\\"):
                mark(code, s, runs[j][1])
            i = j + 1


def _next_same_length(runs: list[tuple[int, int]]) -> list[int]:
    """For each run, the index of the next run of the same length (-1: none)."""
    nxt = [-1] * len(runs)
    seen: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        length = runs[i][1] - runs[i][0]
        nxt[i] = seen.get(length, -1)
        seen[length] = i
    return nxt


# -- brackets --------------------------------------------------------------------------------------


def match_brackets(text: str, code: bytearray) -> dict[int, int]:
    """``[`` position -> its ``]``, skipping code and escaped characters; a blank line closes none."""
    close_of: dict[int, int] = {}
    stack: list[int] = []
    escaped = -1  # the position a backslash escapes
    for m in _BRACKET_TOKENS.finditer(text):
        at = m.start()
        if code[at] or at == escaped:
            continue
        token = m.group()
        if token == "\\":
            escaped = at + 1
        elif token == "[":
            stack.append(at)
        elif token == "]":
            if stack:
                close_of[stack.pop()] = at
        else:  # a line break followed by another: a blank line
            stack.clear()
    return close_of


# -- link destinations -------------------------------------------------------------------------------


class LinkTails:
    """Parses ``(dest "title")`` after a link's ``]``, in logarithmic time per link.

    Built in one pass over the text: matching parentheses within each run of non-space
    characters, the unmatched ``)``, and where the runs end.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.paren_close: dict[int, int] = {}
        self.unmatched: list[int] = []
        self.run_ends: list[int] = []
        self._built = False
        self._positions: dict[str, list[int]] = {}
        self._skips: dict[int, int] = {}

    def _build(self) -> None:
        """The tables, made on the first query (most answers have no link)."""
        stack: list[int] = []
        for m in _PAREN_TOKENS.finditer(self.text):
            token = m.group()
            if token == "(":
                stack.append(m.start())
            elif token == ")":
                if stack:
                    self.paren_close[stack.pop()] = m.start()
                else:
                    self.unmatched.append(m.start())
            elif token.isspace():
                stack.clear()
                self.run_ends.append(m.start())
        self._built = True

    def parse(self, i: int) -> tuple[int, int, int] | None:
        """``(dest_start, dest_end, end)`` of the tail opening at ``text[i] == "("`` (right after a
        ``]``, so never escaped), or None when it is not a link tail."""
        text, n = self.text, len(self.text)
        j = i + 1
        while j < n and text[j] in " \t":
            j += 1
        if j < n and text[j] == "<":
            k = self._next(">", j)
            if k < 0 or 0 <= self._next("\n", j) < k:
                return None
            dest, j = (j + 1, k), k + 1
        else:
            dest = (j, self._dest_end(i, j))
            j = dest[1]
        if dest[1] <= dest[0]:
            return None
        j = self._skip(j)
        if j < n and text[j] in "\"'(":
            k = self._next(")" if text[j] == "(" else text[j], j + 1)
            if k < 0:
                return None
            j = self._skip(k + 1)
        if j < n and text[j] == ")":
            return dest[0], dest[1], j + 1
        return None

    def _dest_end(self, i: int, j: int) -> int:
        """Where a destination starting at ``j`` ends: white space or an unbalanced ``)``."""
        if j >= len(self.text) or self.text[j].isspace():
            return j
        if not self._built:
            self._build()
        run_end = self._first_at_or_after(self.run_ends, j, len(self.text))
        if j == i + 1:  # right after the "(": its partner closes the destination
            return self.paren_close.get(i, run_end)
        return min(self._first_at_or_after(self.unmatched, j, run_end), run_end)

    @staticmethod
    def _first_at_or_after(positions: list[int], j: int, default: int) -> int:
        k = bisect_left(positions, j)
        return positions[k] if k < len(positions) else default

    def _next(self, char: str, j: int) -> int:
        positions = self._positions.get(char)
        if positions is None:
            positions = self._positions[char] = [m.start() for m in re.finditer(re.escape(char), self.text)]
        return self._first_at_or_after(positions, j, -1)

    def _skip(self, j: int) -> int:
        """The first position at or after ``j`` that is not a space, tab or line break."""
        if j not in self._skips:
            m = _NOT_BLANK.search(self.text, j)
            self._skips[j] = m.start() if m else len(self.text)
        return self._skips[j]


# -- bare URLs -----------------------------------------------------------------------------------


def bare_urls(text: str, limit: int | None = None) -> list[tuple[int, int, str]]:
    """``(start, end, url)`` of every http(s) URL linkify-it-py finds (the first ``limit`` of them),
    trailing punctuation trimmed.

    Same spans as ``LinkifyIt.match``, but each candidate is validated in a bounded window
    (grown only while the URL fills it) and candidates inside a found link are not validated.
    """
    out: list[tuple[int, int, str]] = []
    taken = 0
    for m in _SCHEMA.finditer(text):
        start = m.start(2)
        if start < taken:
            continue
        length = _tail_length(text, m.group(2), m.end()) or _ipv6_tail_length(text, m.group(2), m.end())
        if not length:
            continue
        taken = m.end() + length
        if m.group(2).lower() in ("http:", "https:"):
            url = text[start:taken].rstrip(_URL_TRAIL)
            if HTTP.match(url):
                out.append((start, start + len(url), url))
                if len(out) == limit:
                    break
    return out


_IPV6_HOST = re.compile(r"//\[([0-9A-Fa-f:.]{2,45})(?:%25[0-9A-Za-z._~-]{1,32})?\]")
"""An IPv6 literal host after a scheme (``//[2001:db8::1]``, a zone id ``%25eth0`` allowed)."""


def _ipv6_tail_length(text: str, schema: str, pos: int) -> int:
    """:func:`_tail_length` for a URL whose host is an IPv6 literal, which linkify-it-py does not
    know: the literal is read here and the rest of the URL (port, path, query) by linkify, with a
    host name of the same length in the literal's place (so the spans are the text's)."""
    m = _IPV6_HOST.match(text, pos)
    if m is None or schema.lower() not in ("http:", "https:") or not _is_ipv6(m.group(1)):
        return 0
    host = m.end() - pos - 2
    stand_in = "a" * (host - 4) + ".com" if host > 4 else "a.io"
    lo = max(0, pos - 8)
    size = _URL_WINDOW
    while True:
        hi = min(len(text), m.end() + size)
        window = text[lo:pos] + "//" + stand_in + text[m.end() : hi]
        length = int(_LINKIFY.test_schema_at(window, schema, pos - lo) or 0)
        if hi == len(text) or pos + length < hi - 32:
            return length
        size *= 4


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _tail_length(text: str, schema: str, pos: int) -> int:
    """How many characters after ``pos`` (the end of ``schema``) belong to the link."""
    lo = max(0, pos - 8)  # the validators look back a few characters
    size = _URL_WINDOW
    while True:
        hi = min(len(text), pos + size)
        length = int(_LINKIFY.test_schema_at(text[lo:hi], schema, pos - lo) or 0)
        if hi == len(text) or pos + length < hi - 32:
            return length
        size *= 4
