"""Markdown block structure from markdown-it-py's block tokens and their line maps.

Only the block parser runs (no inline parsing), with indented code, reference definitions and raw
HTML switched off: a 4-space indented line stays text, definition lines are found (and kept out
of claims) by :mod:`.references`, and ``<div>`` lines are text too. The leaf blocks that hold
claims are paragraphs, headings (ATX and setext) and table rows; fenced code is neither.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token

from guardrail.core.extract.text import Lines, mark

# Containers nested deeper than maxNesting are dropped (markdown-it-py's guard on its recursion).
_MD = MarkdownIt("commonmark", {"html": False, "maxNesting": 50}).enable("table")
_MD.disable(["code", "reference", "html_block", "inline", "text_join"])

# Container markers in front of a block's first line: block quotes, list markers, task boxes.
_PREFIX = re.compile(r"[ \t]*(?:(?:>[ \t]?|(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)(?:\[[ xX]\][ \t]+)?)[ \t]*)*")
_CLOSING_FENCE = re.compile(r"[ \t>]*(`{3,}|~{3,})[ \t]*$")

LeafKind = Literal["paragraph", "atx", "setext", "row"]


@dataclass(frozen=True)
class Leaf:
    """A leaf block as markdown-it-py saw it: lines ``first``..``last`` (inclusive)."""

    kind: LeafKind
    first: int
    last: int
    content: str = ""  # an ATX heading's text


@dataclass(frozen=True)
class Block:
    """Where sentences may be found: a sentence never crosses a block (character offsets)."""

    start: int
    end: int
    heading: bool = False


@dataclass
class Layout:
    """The block structure of an answer."""

    text: str
    lines: Lines
    leaves: list[Leaf]
    fenced: bytearray  # 1 on every character of a fenced code block
    unclosed_fence_at: int | None  # start of a fence left open at the end of the answer

    def leaf_span(self, leaf: Leaf) -> tuple[int, int]:
        """The characters of a leaf block's lines (line breaks inside included)."""
        return self.lines.starts[leaf.first], self.lines.content_ends[leaf.last]

    def blocks(self, skip_line: bytearray) -> list[Block]:
        """The blocks holding claims; lines flagged in ``skip_line`` (reference lines) split them."""
        out: list[Block] = []
        for leaf in self.leaves:
            if leaf.kind == "atx":
                if not skip_line[leaf.first]:
                    out.extend(self._atx(leaf))
                continue
            run_start: int | None = None
            for k in range(leaf.first, leaf.last + 2):
                if k <= leaf.last and not skip_line[k]:
                    run_start = k if run_start is None else run_start
                elif run_start is not None:
                    out.extend(self._run(run_start, k - 1, heading=leaf.kind == "setext"))
                    run_start = None
        return out

    def _run(self, first: int, last: int, *, heading: bool) -> list[Block]:
        line_start = self.lines.starts[first]
        prefix = _PREFIX.match(self.text, line_start, self.lines.content_ends[first])
        start = prefix.end() if prefix else line_start
        end = self.lines.content_ends[last]
        return [Block(start, end, heading=heading)] if end > start else []

    def _atx(self, leaf: Leaf) -> list[Block]:
        s, e = self.lines.starts[leaf.first], self.lines.content_ends[leaf.first]
        if not leaf.content:
            return []
        at = self.text.find(leaf.content, s, e)
        if at >= 0:
            return [Block(at, at + len(leaf.content), heading=True)]
        # The parser normalised the text (NUL characters): strip the markup instead.
        line = self.text[s:e]
        opening = len(line) - len(line.lstrip(" \t").lstrip("#"))
        body = line[opening:].rstrip(" \t")
        unclosed = body.rstrip("#")
        if not unclosed or unclosed[-1] in " \t":  # a closing sequence of #s
            body = unclosed.rstrip(" \t")
        lead = len(body) - len(body.lstrip(" \t"))
        start, end = s + opening + lead, s + opening + len(body)
        return [Block(start, end, heading=True)] if end > start else []


def parse_blocks(text: str) -> Layout:
    """The leaf blocks and fenced code of ``text`` (markdown), in document order."""
    lines = Lines(text)
    tokens = _MD.parse(text)
    leaves: list[Leaf] = []
    fenced = bytearray(len(text))
    unclosed: int | None = None
    text_end = len(text.rstrip())
    for i, token in enumerate(tokens):
        if token.map is None:
            continue
        first, end = token.map
        if token.type == "fence":
            mark(fenced, lines.starts[first], lines.ends[end - 1])
            if not _closes(text, lines, first, end - 1, token.markup) and _runs_to_the_end(lines, end, text_end):
                unclosed = lines.starts[first]
        elif token.type in ("paragraph_open", "tr_open"):
            leaves.append(Leaf("paragraph" if token.type == "paragraph_open" else "row", first, end - 1))
        elif token.type == "heading_open":
            leaves.append(_heading(token, tokens[i + 1], first, end))
    return Layout(text, lines, leaves, fenced, unclosed)


def _heading(token: Token, inline: Token, first: int, end: int) -> Leaf:
    if token.markup.startswith("#"):
        return Leaf("atx", first, first, inline.content)
    return Leaf("setext", first, end - 2)  # the last line is the underline


def _runs_to_the_end(lines: Lines, end: int, text_end: int) -> bool:
    """Whether nothing but blank lines follows line ``end - 1`` (``text_end``: end of the last non-blank)."""
    return end >= len(lines) or lines.starts[end] >= text_end


def _closes(text: str, lines: Lines, first: int, last: int, markup: str) -> bool:
    """Whether line ``last`` closes the fence opened on line ``first`` with ``markup``."""
    if last == first:
        return False
    m = _CLOSING_FENCE.match(text, lines.starts[last], lines.content_ends[last])
    return m is not None and m.group(1)[0] == markup[0] and len(m.group(1)) >= len(markup)
