"""The answer's own references: definitions (``[1]: url``) anywhere, and a trailing reference section.

Both are line-based: a definition is one line, a section is the run of entry lines (optionally
under a heading such as ``Sources:``) that ends the answer. Neither holds claims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from guardrail.core.extract.inline import AUTOLINK, HTTP, MARKER, LinkTails, bare_urls, norm_label
from guardrail.core.extract.text import Lines, any_set, mark

_DEF = re.compile(r"[ \t]{0,3}\[(\^?[^\]\s]+)\]:[ \t]*(.*)")
_ENTRY_LABELLED = re.compile(r"[ \t]*(?:[-*+][ \t]+)?\^?\[\^?(\d{1,3})\]:?[ \t]*(.*)")
_ENTRY_NUMBERED = re.compile(r"[ \t]*(\d{1,3})[.)][ \t]+(.*)")
_ENTRY_BULLET = re.compile(r"[ \t]*[-*+][ \t]+(.*)")
_HEADING = re.compile(
    r"[ \t]*(?:#{1,6}[ \t]*)?(?:(?:\*\*|__|\*|_)[ \t]*)?"  # no two runs of blanks side by side: no backtracking
    r"(?:sources?|references?|citations?|links?|bibliography|works cited|further reading|"
    r"sources cited|sources used|reference list)"
    r"[ \t]*(?:\*\*|__|\*|_)?[ \t]*(:?)[ \t]*(?:\*\*|__|\*|_)?[ \t]*(.*)",
    re.I,
)
_INLINE_LABEL = re.compile(r"\^?\[\^?(\d{1,3})\]:?")
_SEPARATORS = " \t-–—:|,;()[]\"'“”‘’<>*_"

Style = Literal["def", "labelled", "numbered", "url_only", "bullet"]


@dataclass
class Ref:
    """One reference: a definition or a section entry (character offsets of its line)."""

    label: str | None
    url: str | None
    title: str | None
    start: int
    end: int


@dataclass
class References:
    """Definitions and the trailing section of one answer."""

    defs: dict[str, Ref] = field(default_factory=dict)
    entries: list[Ref] = field(default_factory=list)  # the section's, top to bottom
    section: tuple[int, int] | None = None
    zone: bytearray = field(default_factory=bytearray)  # 1 on every character of their lines
    zone_lines: bytearray = field(default_factory=bytearray)  # 1 for every such line


def _rest(m: re.Match[str], group: int) -> tuple[str, int, int]:
    """A group running to the end of the line, without its trailing blanks: (text, start, end)."""
    value = m.group(group).rstrip(" \t")
    return value, m.start(group), m.start(group) + len(value)


def could_start_section(line: str) -> bool:
    """Whether ``line`` could be (the start of) a reference section or a definition."""
    return bool(_HEADING.match(line) or _ENTRY_LABELLED.match(line) or _DEF.match(line))


def find_references(text: str, lines: Lines, fenced: bytearray, code: bytearray) -> References:
    """The definitions anywhere outside fenced code, then the reference section at the end."""
    found = References(zone=bytearray(len(text)), zone_lines=bytearray(len(lines)))
    for k in range(len(lines)):
        s, ce = lines.starts[k], lines.content_ends[k]
        if any_set(fenced, s, ce):
            continue
        m = _DEF.match(text[s:ce])
        if m:
            url, title = entry_url(_rest(m, 2)[0])
            ref = Ref(norm_label(m.group(1)), url, title, s, lines.ends[k])
            found.defs.setdefault(ref.label or "", ref)
            _claim_lines(found, lines, k, k)
    _Section(text, lines, fenced, code, found).find()
    for r in found.entries:
        if r.label is not None:
            found.defs.setdefault(r.label, r)
    return found


def _claim_lines(found: References, lines: Lines, first: int, last: int) -> None:
    mark(found.zone, lines.starts[first], lines.ends[last])
    mark(found.zone_lines, first, last + 1)


class _Section:
    """Finds the trailing reference section, walking up from the last line."""

    def __init__(self, text: str, lines: Lines, fenced: bytearray, code: bytearray, found: References) -> None:
        self.text, self.lines, self.fenced, self.code, self.found = text, lines, fenced, code, found

    def line(self, k: int) -> str:
        return self.text[self.lines.starts[k] : self.lines.content_ends[k]]

    def free(self, k: int) -> bool:
        return not any_set(self.fenced, self.lines.starts[k], self.lines.content_ends[k])

    def find(self) -> None:
        k, entries = self._entries()
        heading, inline = self._heading(k) if k >= 0 else (None, [])
        if not entries and not inline:
            return
        if heading is None:
            entries = self._unheaded(entries)
            if not entries:
                return
        lines = self.lines
        start = lines.starts[heading] if heading is not None else entries[0][1].start
        end = entries[-1][1].end if entries else lines.ends[heading or 0]
        self.found.entries = inline + [ref for _, ref, _ in entries]
        self.found.section = (start, end)
        _claim_lines(self.found, lines, lines.index_of(start), lines.index_of(end - 1))

    def _entries(self) -> tuple[int, list[tuple[int, Ref, Style]]]:
        """The entry lines ending the answer, top to bottom, and the index of the line above them."""
        entries: list[tuple[int, Ref, Style]] = []
        k = len(self.lines) - 1
        while k >= 0:
            line = self.line(k)
            if not line.strip():
                k -= 1
                continue
            if not self.free(k) or self._is_heading(line):
                break
            parsed = self._definition(k, line) or self._entry(line, self.lines.starts[k], self.lines.ends[k])
            if parsed is None:
                break
            entries.append((k, *parsed))
            k -= 1
        entries.reverse()
        return k, entries

    @staticmethod
    def _is_heading(line: str) -> bool:
        hm = _HEADING.match(line)
        if not hm:
            return False
        rest = _rest(hm, 2)[0]
        return not rest or bool(hm.group(1) and bare_urls(rest, limit=1))

    def _definition(self, k: int, line: str) -> tuple[Ref, Style] | None:
        m = _DEF.match(line) if self.found.zone_lines[k] else None
        if m is None:
            return None
        url, title = entry_url(_rest(m, 2)[0])
        return Ref(norm_label(m.group(1)), url, title, self.lines.starts[k], self.lines.ends[k]), "def"

    @staticmethod
    def _entry(line: str, s: int, e: int) -> tuple[Ref, Style] | None:
        m = _ENTRY_LABELLED.match(line)
        if m:
            url, title = entry_url(_rest(m, 2)[0])
            return Ref(norm_label(m.group(1)), url, title or None, s, e), "labelled"
        m = _ENTRY_NUMBERED.match(line)
        if m:
            url, title = entry_url(_rest(m, 2)[0])
            if url is None:
                return None
            return Ref(m.group(1), url, title, s, e), ("url_only" if title is None else "numbered")
        m = _ENTRY_BULLET.match(line)
        content = _rest(m, 1)[0] if m else line.strip()
        url, title = entry_url(content)
        if url is None:
            return None
        return Ref(None, url, title, s, e), ("url_only" if title is None or _is_link_only(content) else "bullet")

    def _heading(self, k: int) -> tuple[int | None, list[Ref]]:
        """Line ``k`` as the section's heading (and the entries written on it), if it is one."""
        hm = _HEADING.match(self.line(k)) if self.free(k) else None
        if not hm:
            return None, []
        rest, rs, re_ = _rest(hm, 2)
        if rest and not hm.group(1):
            return None, []
        s = self.lines.starts[k]
        inline = self._inline_entries(s + rs, s + re_, self.lines.ends[k]) if rest else []
        return (k if not rest or inline else None), inline

    def _unheaded(self, entries: list[tuple[int, Ref, Style]]) -> list[tuple[int, Ref, Style]]:
        """Without a heading: the bottom run of entries that cannot be ordinary list items."""
        has_markers = self._body_has_markers(self.lines.starts[entries[0][0]])
        kept: list[tuple[int, Ref, Style]] = []
        for k, ref, style in reversed(entries):
            listed = style == "numbered" and has_markers
            if not (style == "def" or (ref.url is not None and (style in ("labelled", "url_only") or listed))):
                break
            kept.append((k, ref, style))
        return list(reversed(kept))

    def _body_has_markers(self, upto: int) -> bool:
        zone, code = self.found.zone, self.code
        return any(not (code[m.start()] or zone[m.start()]) for m in MARKER.finditer(self.text, 0, upto))

    def _inline_entries(self, cs: int, ce: int, line_end: int) -> list[Ref]:
        """Entries written on the heading line itself: ``Sources: [1] url, [2] url`` or ``url, url``."""
        content = self.text[cs:ce]
        pieces = _inline_pieces(content)
        out: list[Ref] = []
        for k, (ps, pcs, label) in enumerate(pieces):
            last = k + 1 == len(pieces)
            pe = len(content) if last else pieces[k + 1][0]
            url, title = entry_url(content[pcs:pe])
            if url is None and label is None:
                return []
            out.append(Ref(label, url, title, cs + ps, line_end if last else cs + pe))
        # The last entry's span takes the separator before it, so removing any subset of entries
        # leaves a well-formed list.
        if len(out) > 1:
            last_ref, prev = out[-1], out[-2]
            sep_start = cs + len(content[: last_ref.start - cs].rstrip(" \t,;|"))
            out[-2] = Ref(prev.label, prev.url, prev.title, prev.start, sep_start)
            out[-1] = Ref(last_ref.label, last_ref.url, last_ref.title, sep_start, last_ref.end)
        return out


def _inline_pieces(content: str) -> list[tuple[int, int, str | None]]:
    """(start, content start, label) of each entry on a heading line; empty when it holds none."""
    labelled = list(_INLINE_LABEL.finditer(content))
    if labelled:
        if labelled[0].start() != 0:
            return []
        return [(m.start(), m.end(), norm_label(m.group(1))) for m in labelled]
    urls = bare_urls(content)
    if not urls:
        return []
    pieces: list[tuple[int, int, str | None]] = [(0, 0, None)]
    prev_end = urls[0][1]
    for us, ue, _ in urls[1:]:
        sep = content[prev_end:us]
        cut = max(sep.rfind(","), sep.rfind(";"), sep.rfind("|"))
        at = prev_end + (cut + 1 if cut >= 0 else 0)
        pieces.append((at, at, None))
        prev_end = ue
    return pieces


def entry_url(content: str) -> tuple[str | None, str | None]:
    """The URL and title of one reference entry's content, e.g. ``Title - https://...``."""
    opened = _first_link_open(content)
    if opened:
        lb, rb = opened
        tail = LinkTails(content).parse(rb + 1)
        if tail and HTTP.match(content[tail[0] : tail[1]]):
            rest = (content[:lb] + " " + content[tail[2] :]).strip(_SEPARATORS)
            return content[tail[0] : tail[1]], content[lb + 1 : rb].strip() or rest or None
    m = AUTOLINK.search(content)
    if m:
        url, s, e = m.group(1), m.start(), m.end()
    else:
        urls = bare_urls(content, limit=1)
        if not urls:
            return None, None
        s, e, url = urls[0]
    before, after = content[:s].strip(_SEPARATORS), content[e:].strip(_SEPARATORS)
    return url, " ".join(t for t in (before, after) if t) or None


def _first_link_open(content: str) -> tuple[int, int] | None:
    """``(position of "[", position of "]")`` of the first ``[text](``: the leftmost ``[`` whose
    next ``]`` is followed by ``(`` (what ``re.search(r"\\[([^\\]]*)\\]\\(")`` finds, in linear time)."""
    search = 0
    while True:
        lb = content.find("[", search)
        rb = content.find("]", lb + 1) if lb >= 0 else -1
        if rb < 0:
            return None
        if content.startswith("(", rb + 1):
            return lb, rb
        search = rb + 1


def _is_link_only(content: str) -> bool:
    """Whether the entry is one link and nothing else: ``[Title](url)``, the URL's parentheses
    balanced one level deep (the old ``\\[[^\\]]*\\]\\([^)]*(?:\\([^)]*\\)[^)]*)*\\)``, without backtracking)."""
    rb = content.find("]")
    if not content.startswith("[") or rb < 0 or not content.startswith("(", rb + 1) or not content.endswith(")"):
        return False
    return all("(" in segment for segment in content[rb + 2 : -1].split(")")[:-1])
