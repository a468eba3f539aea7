"""Citations in the body: inline links, reference-style links, autolinks, bare URLs, numbered markers.

Found in that order; a span taken by one kind is not looked at again, and nothing inside code, a
definition line or the reference section is a citation.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field

from guardrail.core.extract.inline import (
    AUTOLINK,
    HTTP,
    MARKER,
    MARKERISH,
    REF_LINK,
    LinkTails,
    bare_urls,
    match_brackets,
    norm_label,
)
from guardrail.core.extract.references import References
from guardrail.core.extract.text import Intervals, any_set, either, mark, runs
from guardrail.core.schema import CitationKind

_OPENER = re.compile(r"!?\[")
_GROUP_SPLIT = re.compile(r"[ \t]*[,;][ \t]*")
_RANGE = re.compile(r"(\d+)[ \t]*[-–][ \t]*(\d+)")


@dataclass
class Cite:
    """One citation found in the answer (character offsets)."""

    start: int
    end: int
    kind: CitationKind
    url: str | None = None
    refs: list[str] = field(default_factory=list)  # normalised labels; one citation per label
    link_text: str | None = None
    propagates: bool = False  # may cover the sentences before it at a paragraph's end


@dataclass
class Citations:
    """Every citation of an answer, by start, and which characters they take."""

    cites: list[Cite]
    consumed: bytearray  # 1 inside a found citation or link
    markers: bytearray  # 1 inside a numbered marker

    def __post_init__(self) -> None:
        self.cites.sort(key=lambda c: c.start)
        self.starts = [c.start for c in self.cites]

    def within(self, start: int, end: int) -> list[Cite]:
        """The citations starting in ``[start, end)``."""
        return self.cites[bisect_left(self.starts, start) : bisect_left(self.starts, end)]


def expand(group: str) -> list[str]:
    """The labels of a marker's inside: ``"1, 3-5"`` -> ``["1", "3", "4", "5"]`` (ranges of at most 20)."""
    if group.startswith("^"):
        return [norm_label(group)]
    labels: list[str] = []
    for part in _GROUP_SPLIT.split(group.strip()):
        rng = _RANGE.fullmatch(part)
        if rng:
            a, b = int(rng.group(1)), int(rng.group(2))
            if a <= b and b - a < 20:
                labels.extend(str(k) for k in range(a, b + 1))
            else:
                labels.append(f"{a}-{b}")
        else:
            labels.append(str(int(part)))
    return list(dict.fromkeys(labels))


def find_citations(text: str, code: bytearray, fenced: bytearray, refs: References) -> Citations:
    """Every citation outside code and the answer's references, first kind first."""
    finder = _Finder(text, code, fenced, refs)
    finder.links()
    finder.reference_links()
    finder.urls()
    finder.markers()
    return Citations(finder.cites, finder.consumed, finder.markers_at)


class _Finder:
    def __init__(self, text: str, code: bytearray, fenced: bytearray, refs: References) -> None:
        self.text = text
        self.code = code
        self.fenced = fenced
        self.defs = refs.defs
        self.excluded = either(code, refs.zone)
        self.off_limits = Intervals(runs(either(fenced, refs.zone)))  # no link may reach into these
        self.consumed = bytearray(len(text))
        self.markers_at = bytearray(len(text))
        self.tails = LinkTails(text)
        self.cites: list[Cite] = []

    def free(self, s: int, e: int) -> bool:
        return not any_set(self.excluded, s, e) and not any_set(self.consumed, s, e)

    def take(self, cite: Cite) -> None:
        mark(self.consumed, cite.start, cite.end)
        self.cites.append(cite)

    def links(self) -> None:
        """Inline links ``[text](url)`` and images; only http(s) links are citations."""
        text = self.text
        close_of = match_brackets(text, self.code)
        for m in _OPENER.finditer(text):
            s, b = m.start(), m.end() - 1
            if self.excluded[b] or self.consumed[b] or (b > 0 and text[b - 1] == "\\" and text[s] != "!"):
                continue
            close = close_of.get(b, -1)
            if close < 0 or not text.startswith("(", close + 1):
                continue
            tail = self.tails.parse(close + 1)
            if tail is None or self.off_limits.overlaps(s, tail[2]):
                continue
            mark(self.consumed, s, tail[2])
            dest = text[tail[0] : tail[1]]
            if text[s] == "!" or not HTTP.match(dest):
                continue  # images and non-web links are not citations
            label = text[b + 1 : close]
            marker_like = bool(MARKERISH.match(label.strip())) or bool(HTTP.match(label.strip()))
            self.cites.append(
                Cite(
                    s, tail[2], "markdown_link", dest, link_text=None if marker_like else label, propagates=marker_like
                )
            )

    def reference_links(self) -> None:
        """``[text][label]`` and ``[text][]`` whose label is a number or a definition."""
        for m in REF_LINK.finditer(self.text):
            s, e = m.span()
            if not self.free(s, e) or MARKER.fullmatch(f"[{m.group(1)}]"):
                continue
            label = norm_label(m.group(2) or m.group(1))
            if label.isdigit() or label in self.defs:
                self.take(Cite(s, e, "markdown_link", refs=[label], link_text=m.group(1)))

    def urls(self) -> None:
        """Autolinks ``<https://...>``, then bare URLs."""
        for m in AUTOLINK.finditer(self.text):
            if self.free(m.start(), m.end()):
                self.take(Cite(m.start(), m.end(), "autolink", url=m.group(1), propagates=True))
        for us, ue, url in bare_urls(self.text):
            if self.free(us, ue):
                self.take(Cite(us, ue, "bare_url", url=url, propagates=True))

    def markers(self) -> None:
        """``[1]``, ``[1, 3]``, ``[1-3]``, ``^[1]``, ``[^note]`` (not escaped, not a link's text)."""
        text = self.text
        for m in MARKER.finditer(text):
            s, e = m.span()
            if not self.free(s, e) or (s > 0 and text[s - 1] == "\\"):
                continue
            if text.startswith("(", e) and self.tails.parse(e) is not None:
                continue
            mark(self.markers_at, s, e)
            self.take(Cite(s, e, "numbered", refs=expand(m.group(2)), propagates=True))
