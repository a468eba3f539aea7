"""The plain text of a claim: what a judge reads, with citations and markdown markup removed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from guardrail.core.extract.citations import Cite

# Links alone in parentheses are a citation, not part of what the sentence says:
# "([source](url))", "([BBC](u); [AP](v))" leave no "(source)" behind in the claim.
_CITATION_ONLY_PARENS = re.compile(r"\(\s*\x00[^\x00\x01]*\x01(?:\s*(?:(?:[,;]|and|&)\s*)?\x00[^\x00\x01]*\x01)*\s*\)")
_QUOTE_PREFIX = re.compile(r"(?m)^[ \t]*(?:>[ \t]?)+")
_EMPHASIS = re.compile(r"\*\*|__|~~|(?<!\w)[*_]|[*_](?!\w)")
_EMPTY_PAIR = re.compile(r"\(\s*\)|\[\s*\]|<\s*>")
_SPACE_BEFORE_PUNCT = re.compile(r" ([.,;:!?。、，；：！？])")
_DOUBLE_STOP = re.compile(r"(?<!\.)\.\.(?!\.)")


def plain_text(text: str, start: int, end: int, cites: Sequence[Cite]) -> str:
    """``text[start:end]`` without its ``cites`` (a prose link keeps its text), quote markers,
    backticks, emphasis, images, other links' targets and table pipes; white space collapsed."""
    parts: list[str] = []
    i = start
    for c in cites:
        parts.append(text[i : c.start])
        if c.link_text:
            parts.append(f"\x00{c.link_text}\x01")
        i = max(i, c.end)
    parts.append(text[i:end])
    out = "".join(parts)
    if "\x00" in out or "\x01" in out:
        out = _CITATION_ONLY_PARENS.sub("", out).replace("\x00", "").replace("\x01", "")
    # Each rewrite runs only when its characters occur (most sentences have no markup at all).
    if ">" in out:
        out = _QUOTE_PREFIX.sub("", out)
    out = out.replace("`", "")
    if "*" in out or "_" in out or "~" in out:
        out = _EMPHASIS.sub("", out)
    if "](" in out:
        out = _unlink(_unlink(out, image=True), image=False)
    out = out.replace("|", " ")
    if "(" in out or "[" in out or "<" in out:
        out = _EMPTY_PAIR.sub("", out)
    out = " ".join(out.split())
    if " " in out:
        out = _SPACE_BEFORE_PUNCT.sub(r"\1", out)
    if ".." in out:
        out = _DOUBLE_STOP.sub(".", out)
    return out


def _unlink(text: str, *, image: bool) -> str:
    """Images ``![alt](...)`` removed, or links ``[text](...)`` replaced by their text.

    The same as ``re.sub(r"!?\\[([^\\]]*)\\]\\([^)]*\\)", ...)``, in linear time: the leftmost opener
    whose next ``]`` is followed by ``(`` and, later, a ``)``.
    """
    opener = "![" if image else "["
    parts: list[str] = []
    copied = search = 0
    while True:
        at = text.find(opener, search)
        b = at + len(opener) - 1
        close = text.find("]", b + 1) if at >= 0 else -1
        if close < 0:
            break
        if not text.startswith("(", close + 1):
            search = close + 1
            continue
        paren = text.find(")", close + 2)
        if paren < 0:
            break
        parts.append(text[copied:at])
        parts.append("" if image else text[b + 1 : close])
        copied = search = paren + 1
    parts.append(text[copied:])
    return "".join(parts)
