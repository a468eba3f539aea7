"""Links in an answer that must never reach a reader live: ``javascript:``, ``vbscript:``,
``data:`` and ``file:`` targets.

Extraction reports http(s) citations only, so a model (or a page injecting into it) could put
``[click](javascript:alert(1))`` into an answer and every policy would pass it through. This module
finds such links by their scheme, so the policy can strip, badge or block them
(:func:`guardrail.core.policy.apply_policy`):

* inline links and images: ``[text](target "title")``, ``![alt](target)``;
* autolinks: ``<javascript:alert(1)>``;
* reference definitions: ``[1]: javascript:alert(1)`` (which ``[text][1]`` would use);
* raw HTML attributes that hold a URL: ``href``, ``src``, ``action``, ``formaction``,
  ``xlink:href``, ``poster``, ``background``, ``data``, ``cite``.

The scheme is read the way browsers and markdown renderers read it: HTML character references
decoded (``&#106;avascript:``), markdown backslash escapes undone, leading spaces and control
characters dropped, tabs and newlines inside ignored (``java\\tscript:``), case ignored. Code spans
and fenced code blocks are skipped: nothing in them is rendered as a link. Offsets are UTF-8 byte
offsets into the answer, like the rest of the report. Every pattern is bounded, so the scan stays
linear in the answer's length.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["UNSAFE_SCHEMES", "UnsafeLink", "find_unsafe_links", "unsafe_scheme"]

UNSAFE_SCHEMES = frozenset({"javascript", "vbscript", "data", "file"})
"""URL schemes never left live in a guarded answer."""

LinkKind = Literal["link", "image", "autolink", "definition", "html_attribute"]

_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]{0,31}):")
_IGNORED_IN_URL = re.compile(r"[\t\n\r]")
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_PREFIX = 256  # how much of a target is decoded to read its scheme
_C0_AND_SPACE = "".join(map(chr, range(0x21)))  # what browsers strip from the front of a URL

_FENCE = re.compile(rb"^[ ]{0,3}(`{3,}|~{3,})[^\n]*$", re.M)
_BACKTICKS = re.compile(rb"`+")
_INLINE = re.compile(rb"\]\([ \t]*\n?[ \t]*(<[^<>\n]{0,2048}>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.){0,2048}\)){1,2048})")
_TITLE_CLOSE = re.compile(rb"[ \t]*\n?[ \t]*(?:\"[^\"]{0,1024}\"|'[^']{0,1024}'|\([^()]{0,1024}\))?[ \t]*\)")
_AUTOLINK = re.compile(rb"<([A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]{0,4096})>")
_DEFINITION = re.compile(
    rb"^[ ]{0,3}\[(?:[^\[\]\\\n]|\\.){1,999}\]:[ \t]*\n?[ \t]*(<[^<>\n]{0,2048}>|\S{1,4096})[^\n]*(?:\n|\Z)", re.M
)
_ATTRIBUTE = re.compile(
    rb"(?i)(?<![\w:-])(?:href|src|action|formaction|xlink:href|poster|background|data|cite)[ \t\n]*=[ \t\n]*"
    rb"(\"[^\"<>]{0,2048}\"|'[^'<>]{0,2048}'|[^\s\"'=<>`]{1,2048})"
)


@dataclass(frozen=True)
class UnsafeLink:
    """One unsafe link: its byte span in the answer, the scheme, what kind of markup it is, and
    ``text``: what stays when it is stripped (the link text or image alt; nothing otherwise)."""

    start: int
    end: int
    scheme: str
    kind: LinkKind
    text: str = ""


def unsafe_scheme(target: str) -> str | None:
    """The scheme of ``target`` when it is one of :data:`UNSAFE_SCHEMES` (read as a browser reads
    it: references decoded, escapes undone, controls and spaces dropped), else None."""
    head = html.unescape(_MD_ESCAPE.sub(r"\1", target[:_PREFIX]))
    head = _IGNORED_IN_URL.sub("", head).lstrip(_C0_AND_SPACE)
    if len(target) > _PREFIX and len(head) < 32:
        return "javascript"  # little but padding in the part we read: assume the worst
    match = _SCHEME.match(head.lower())
    if match is None:
        return None
    return match.group(1) if match.group(1) in UNSAFE_SCHEMES else None


def find_unsafe_links(answer: str) -> list[UnsafeLink]:
    """Every unsafe link of ``answer`` outside code, in order of position, none overlapping."""
    data = answer.encode("utf-8", "surrogatepass")
    if not _maybe_unsafe(data):
        return []
    code = _code_ranges(data)
    found = _inline_links(data) + _autolinks(data) + _definitions(data) + _attributes(data)
    found.sort(key=lambda link: (link.start, -link.end))
    kept: list[UnsafeLink] = []
    for link in found:
        if _inside(code, link.start):
            continue
        if kept and link.start < kept[-1].end:
            continue  # inside one already found (an attribute inside a stripped link's text...)
        kept.append(link)
    return kept


def _maybe_unsafe(data: bytes) -> bool:
    """A cheap first look: could the answer hold an unsafe scheme at all (plain, with tabs or
    newlines inside, or written with character references)?"""
    squeezed = data.lower().translate(None, b"\t\r\n")
    return b"&" in data or any(scheme.encode() in squeezed for scheme in UNSAFE_SCHEMES)


def _text(data: bytes, start: int, end: int) -> str:
    return data[start:end].decode("utf-8", "surrogatepass")


def _code_ranges(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of fenced code blocks (to the closing fence or the end) and code spans."""
    ranges: list[tuple[int, int]] = []
    opened: re.Match[bytes] | None = None
    for fence in _FENCE.finditer(data):
        marker = fence.group(1)
        if opened is None:
            opened = fence
        elif marker[:1] == opened.group(1)[:1] and len(marker) >= len(opened.group(1)):
            ranges.append((opened.start(), fence.end()))
            opened = None
    if opened is not None:
        ranges.append((opened.start(), len(data)))
    ranges += [span for span in _code_spans(data) if not _inside(ranges, span[0])]
    return sorted(ranges)


def _code_spans(data: bytes) -> list[tuple[int, int]]:
    """Code spans: a run of backticks up to the next run of the same length (CommonMark), found
    in one pass over the runs."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(data)]
    following: list[int | None] = [None] * len(runs)
    last_of_length: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        following[index] = last_of_length.get(length)
        last_of_length[length] = index
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(runs):
        closing = following[index]
        if closing is None:
            index += 1
            continue
        spans.append((runs[index][0], runs[closing][1]))
        index = closing + 1
    return spans


def _inside(ranges: list[tuple[int, int]], position: int) -> bool:
    return any(start <= position < end for start, end in ranges)


def _inline_links(data: bytes) -> list[UnsafeLink]:
    found: list[UnsafeLink] = []
    for match in _INLINE.finditer(data):
        scheme = _target_scheme(match.group(1))
        if scheme is None:
            continue
        close = _TITLE_CLOSE.match(data, match.end())
        end = close.end() if close is not None else match.end()
        opening = _opening_bracket(data, match.start())
        if opening is None:
            found.append(UnsafeLink(match.start() + 1, end, scheme, "link"))  # "(target)" only
            continue
        image = opening > 0 and data[opening - 1 : opening] == b"!"
        start = opening - 1 if image else opening
        text = _text(data, opening + 1, match.start())
        found.append(UnsafeLink(start, end, scheme, "image" if image else "link", text))
    return found


def _opening_bracket(data: bytes, close: int) -> int | None:
    """The ``[`` that the ``]`` at ``close`` ends (balanced brackets may sit between), within one
    paragraph and 1 KB; None when there is none. A few C-level searches, whatever the input."""
    floor = max(0, close - 1024)
    floor = max(floor, data.rfind(b"\n\n", floor, close) + 1)
    end = close
    for _ in range(8):  # brackets nested in the link text
        position = data.rfind(b"[", floor, end)
        if position < 0:
            return None
        inner = data[position + 1 : close].replace(b"\\[", b"").replace(b"\\]", b"")
        if inner.count(b"]") <= inner.count(b"[") and data[position - 1 : position] != b"\\":
            return position
        end = position
    return None


def _autolinks(data: bytes) -> list[UnsafeLink]:
    found: list[UnsafeLink] = []
    for match in _AUTOLINK.finditer(data):
        scheme = match.group(1).split(b":", 1)[0].decode("ascii").lower()
        if scheme in UNSAFE_SCHEMES:
            found.append(UnsafeLink(match.start(), match.end(), scheme, "autolink"))
    return found


def _definitions(data: bytes) -> list[UnsafeLink]:
    return [
        UnsafeLink(m.start(), m.end(), scheme, "definition")
        for m in _DEFINITION.finditer(data)
        if (scheme := _target_scheme(m.group(1))) is not None
    ]


def _attributes(data: bytes) -> list[UnsafeLink]:
    found: list[UnsafeLink] = []
    for match in _ATTRIBUTE.finditer(data):
        scheme = _target_scheme(match.group(1))
        if scheme is not None:
            start = match.start()
            while start > 0 and data[start - 1 : start] in (b" ", b"\t", b"\n"):
                start -= 1  # the space before the attribute goes with it
            found.append(UnsafeLink(start, match.end(), scheme, "html_attribute"))
    return found


def _target_scheme(raw: bytes) -> str | None:
    """:func:`unsafe_scheme` of a link target as written: ``<...>`` or quotes taken off."""
    if len(raw) >= 2 and (raw[:1], raw[-1:]) in ((b"<", b">"), (b'"', b'"'), (b"'", b"'")):
        raw = raw[1:-1]
    return unsafe_scheme(raw.decode("utf-8", "replace"))
