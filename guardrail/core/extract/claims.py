"""From an answer to its claims: blocks -> sentences -> claims with their resolved citations.

Runs the steps in order (blocks, code, references, citations, sentences) and then applies the
paragraph-end rule and the sources-without-markers rule; the rules are in the package docstring.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from guardrail.core.extract.assertive import needs_grounding
from guardrail.core.extract.blocks import Block, parse_blocks
from guardrail.core.extract.citations import Citations, Cite, find_citations
from guardrail.core.extract.inline import mark_code_spans
from guardrail.core.extract.plain import plain_text
from guardrail.core.extract.references import Ref, References, find_references
from guardrail.core.extract.sentences import sentence_spans
from guardrail.core.extract.sources import Source, normalize_sources
from guardrail.core.extract.text import ByteOffsets, but_not, either, runs
from guardrail.core.schema import AnswerClaim, CitationRef, Reference, SourceInfo


class ExtractedAnswer(BaseModel):
    """The claims and citations of one answer, before verification; byte offsets into ``answer``."""

    answer: str
    claims: list[AnswerClaim] = Field(default_factory=list)
    references: list[Reference] = Field(default_factory=list)
    references_start: int | None = None
    references_end: int | None = None
    sources: list[SourceInfo] = Field(default_factory=list)


@dataclass
class Analysis:
    """An extraction and what streaming needs to know about it (character offsets)."""

    extracted: ExtractedAnswer
    spans: list[tuple[int, int]]  # each claim's characters
    block_of: list[int]  # each claim's block
    section: tuple[int, int] | None  # the trailing reference section
    unclosed_fence_at: int | None


def extract_claims(
    answer: str,
    sources: Sequence[object] | None = None,
    *,
    url_key: str | None = None,
    cite_unmarked: bool | None = None,
    language: str = "en",
    extra_non_assertive: Sequence[re.Pattern[str] | str] = (),
) -> ExtractedAnswer:
    """Split ``answer`` into claims (sentences with UTF-8 byte spans) and tie each citation to the
    claim(s) it supports; the rules are in the docstring of :mod:`guardrail.core.extract`.

    ``sources`` (URLs, dicts, LangChain Documents, LlamaIndex nodes; see :func:`normalize_sources`)
    resolve ``[n]`` markers the answer's reference list does not, and - when the answer cites
    nothing, or with ``cite_unmarked=True`` - are cited by every uncited claim. Pure: no I/O.
    ``extra_non_assertive`` adds whole-sentence patterns to :data:`NON_ASSERTIVE_PATTERNS`.
    """
    if not isinstance(answer, str):
        raise TypeError(f"answer must be a string, not {type(answer).__name__}")
    srcs = normalize_sources(sources, url_key=url_key)
    patterns = [re.compile(p, re.I) if isinstance(p, str) else p for p in extra_non_assertive]
    return analyse(answer, srcs, cite_unmarked=cite_unmarked, language=language, patterns=patterns).extracted


def analyse(
    answer: str,
    srcs: list[Source],
    *,
    cite_unmarked: bool | None,
    language: str,
    patterns: Sequence[re.Pattern[str]] = (),
) -> Analysis:
    """Extract ``answer``'s claims against normalised sources."""
    layout = parse_blocks(answer)
    code = bytearray(layout.fenced)
    mark_code_spans(answer, (layout.leaf_span(leaf) for leaf in layout.leaves), code)
    refs = find_references(answer, layout.lines, layout.fenced, code)
    found = find_citations(answer, code, layout.fenced, refs)
    builder = _Claims(answer, _Resolver(answer, srcs, refs), found, code, language, patterns)
    for index, block in enumerate(layout.blocks(refs.zone_lines)):
        builder.add(index, block)
    builder.inherit_paragraph_end_citations()
    if cite_unmarked or (cite_unmarked is None and not found.cites):
        builder.cite_sources(_source_pool(srcs, refs.entries))
    extracted = ExtractedAnswer(
        answer=answer,
        claims=builder.claims,
        references=_references(refs, builder.resolver.bytes),
        references_start=builder.resolver.bytes(refs.section[0]) if refs.section else None,
        references_end=builder.resolver.bytes(refs.section[1]) if refs.section else None,
        sources=[s.info() for s in srcs],
    )
    return Analysis(extracted, builder.spans, builder.block_of, refs.section, layout.unclosed_fence_at)


class _Resolver:
    """Turns a found citation into :class:`CitationRef` s: definitions first, then ``sources[n - 1]``."""

    def __init__(self, answer: str, srcs: list[Source], refs: References) -> None:
        self.answer = answer
        self.srcs = srcs
        self.defs = refs.defs
        self.bytes = ByteOffsets(answer)
        self.source_by_url = {s.url: s.index for s in srcs if s.url}

    def refs_for(self, c: Cite, *, inherited: bool = False) -> list[CitationRef]:
        """One reference per label of ``c`` (one for a link or URL), resolved."""
        marker = self.answer[c.start : c.end]
        start, end = self.bytes(c.start), self.bytes(c.end)
        targets: list[tuple[str | None, str | None, int | None, str | None]]
        if c.url is not None:
            targets = [(None, c.url, self.source_by_url.get(c.url), None)]
        else:
            targets = [(label, *self._target(label)) for label in c.refs]
        return [
            CitationRef(
                kind=c.kind,
                start=start,
                end=end,
                marker=marker,
                url=url,
                source_index=source_index,
                source_text=source_text,
                ref=label,
                link_text=c.link_text,
                inherited=inherited,
            )
            for label, url, source_index, source_text in targets
        ]

    def _target(self, label: str) -> tuple[str | None, int | None, str | None]:
        """(url, source index, source text) a label resolves to; all None when it resolves nowhere."""
        ref = self.defs.get(label)
        if ref is not None and ref.url:
            return ref.url, self.source_by_url.get(ref.url), None
        if label.isdigit() and 1 <= int(label) <= len(self.srcs):
            src = self.srcs[int(label) - 1]
            return src.url, src.index, None if src.url else src.text
        return None, None, None


class _Claims:
    """Collects the claims block by block."""

    def __init__(
        self,
        answer: str,
        resolver: _Resolver,
        found: Citations,
        code: bytearray,
        language: str,
        patterns: Sequence[re.Pattern[str]],
    ) -> None:
        self.answer = answer
        self.resolver = resolver
        self.found = found
        self.language = language
        self.patterns = patterns
        self.masked = _masked(answer, code, found)
        self.claims: list[AnswerClaim] = []
        self.spans: list[tuple[int, int]] = []
        self.block_of: list[int] = []

    def plain(self, s: int, e: int) -> str:
        return plain_text(self.answer, s, e, self.found.within(s, e))

    def add(self, index: int, block: Block) -> None:
        """The claims of one block: its sentences, a citation-only fragment joined to the one before."""
        for s, e, plain in self._sentences(block):
            own = self.found.within(s, e)
            if not own and not _has_alnum(self.answer[s:e]):
                continue
            plain = self.plain(s, e) if plain is None else plain
            self.claims.append(
                AnswerClaim(
                    text=self.answer[s:e],
                    start=self.resolver.bytes(s),
                    end=self.resolver.bytes(e),
                    plain_text=plain,
                    grounding_check_required=needs_grounding(
                        plain, heading=block.heading, extra_patterns=self.patterns
                    ),
                    citations=[r for c in own for r in self.resolver.refs_for(c)],
                )
            )
            self.spans.append((s, e))
            self.block_of.append(index)

    def _sentences(self, block: Block) -> list[tuple[int, int, str | None]]:
        """The block's sentences with their plain text (None where a fragment was joined on)."""
        merged: list[tuple[int, int, str | None]] = []
        for s, e in sentence_spans(self.masked[block.start : block.end], self.language):
            s, e = s + block.start, e + block.start
            plain = self.plain(s, e)
            if merged and not _has_alnum(plain):
                merged[-1] = (merged[-1][0], e, None)
            else:
                merged.append((s, e, plain))
        return merged

    def inherit_paragraph_end_citations(self) -> None:
        """Citations ending a block also cover its earlier sentences that cite nothing and need checking."""
        members: dict[int, list[int]] = {}
        for ci, bi in enumerate(self.block_of):
            members.setdefault(bi, []).append(ci)
        for claim_indices in members.values():
            if len(claim_indices) < 2:
                continue
            trailing = self._trailing(*self.spans[claim_indices[-1]])
            if not trailing:
                continue
            for ci in claim_indices[:-1]:
                claim = self.claims[ci]
                if not claim.citations and claim.grounding_check_required:
                    claim.citations = [r for c in trailing for r in self.resolver.refs_for(c, inherited=True)]

    def _trailing(self, s: int, e: int) -> list[Cite]:
        """The citations that end the sentence ``[s, e)``: only punctuation and other such citations follow."""
        trailing: list[Cite] = []
        pos = e
        for c in reversed(self.found.within(s, e)):
            if not c.propagates or _has_alnum(self.answer[c.end : pos]):
                break
            trailing.append(c)
            pos = c.start
        return trailing[::-1]

    def cite_sources(self, pool: list[CitationRef]) -> None:
        """Every uncited claim that needs checking cites every source (an empty span at its end)."""
        for claim in self.claims:
            if pool and claim.grounding_check_required and not claim.citations:
                claim.citations = [r.model_copy(update={"start": claim.end, "end": claim.end}) for r in pool]


def _has_alnum(text: str) -> bool:
    return any(map(str.isalnum, text))


def _masked(answer: str, code: bytearray, found: Citations) -> str:
    """The answer as the sentence splitter reads it: code, links and URLs as ``x``, no line breaks.

    Numbered markers stay visible (sentencex knows ``[1]`` after a full stop).
    """
    parts: list[str] = []
    pos = 0
    for s, e in runs(either(code, but_not(found.consumed, found.markers))):
        parts.append(answer[pos:s])
        parts.append("x" * (e - s))
        pos = e
    parts.append(answer[pos:])
    return "".join(parts).replace("\r", " ").replace("\n", " ")


def _source_pool(srcs: list[Source], entries: list[Ref]) -> list[CitationRef]:
    """The sources passed in, then the reference section's entries not among them, as ``source`` citations."""
    pool = [
        CitationRef(
            kind="source",
            start=0,
            end=0,
            marker="",
            url=src.url,
            source_index=src.index,
            source_text=None if src.url else src.text,
        )
        for src in srcs
    ]
    seen = {src.url for src in srcs if src.url}
    for ref in entries:
        if ref.url and ref.url not in seen:
            seen.add(ref.url)
            pool.append(CitationRef(kind="source", start=0, end=0, marker="", url=ref.url, ref=ref.label))
    return pool


def _references(refs: References, to_bytes: ByteOffsets) -> list[Reference]:
    """The section's entries and the definitions written elsewhere, in answer order."""
    in_section = {id(r) for r in refs.entries}
    section = refs.section
    elsewhere = [
        r
        for r in refs.defs.values()
        if id(r) not in in_section and not (section and section[0] <= r.start < section[1])
    ]
    ordered = sorted([*refs.entries, *elsewhere], key=lambda r: r.start)
    return [
        Reference(label=r.label, url=r.url, title=r.title, start=to_bytes(r.start), end=to_bytes(r.end))
        for r in ordered
    ]
