"""Streaming: how much of a growing answer is final, so it can be verified and emitted."""

from __future__ import annotations

from collections.abc import Sequence

from guardrail.core.extract.claims import Analysis, analyse
from guardrail.core.extract.references import could_start_section
from guardrail.core.extract.sources import Source, normalize_sources
from guardrail.core.schema import AnswerClaim


def stream_cut(
    text: str,
    sources: Sequence[object] | None = None,
    *,
    url_key: str | None = None,
    language: str = "en",
) -> int:
    """How many leading *characters* of ``text`` - an answer still arriving - are final.

    ``text[:cut]`` is a run of whole claims whose extraction cannot change when more text arrives,
    so a streaming guard can verify that chunk on its own
    (``await verifier.averify_answer(text[emitted:cut], sources, memo=memo)``), apply the policy to
    it (:func:`guardrail.core.policy.apply_policy`), emit the result and carry on from ``cut``; the
    guarded chunks concatenate to the guarded answer. A claim is final when the next claim has
    begun (its sentence boundary is confirmed), every marker in it resolves against ``sources``
    (without sources, numbered markers wait for the reference list at the end, so such answers are
    held until the stream ends; a chunk is verified without the answer's reference definitions, so
    a label is never resolved through them early), and - if it has no citation of its own - its
    paragraph has ended and the rest of the paragraph is final too (a marker at the paragraph's end
    may still cover it). A line that could start a trailing
    reference section, and anything after an unclosed code fence, is never final. Cuts fall at the
    start of the next claim's line when it begins one, so markdown prefixes (``- ``, ``## ``) stay
    with their claim. When the stream ends, the rest is the last chunk. Pass the same explicit
    ``cite_unmarked`` to every chunk's verification: its default ("only when the answer cites
    nothing") would otherwise be decided chunk by chunk.
    """
    srcs = normalize_sources(sources, url_key=url_key)
    analysis = analyse(text, srcs, cite_unmarked=False, language=language)
    if len(analysis.spans) < 2:
        return 0
    return _cut(text, analysis, _final_limit(text, analysis), srcs)


def _final_limit(text: str, analysis: Analysis) -> int:
    """Nothing at or after this character is final: a reference section, an open fence, a last
    line that could begin a reference section."""
    limit = len(text)
    if analysis.section is not None:
        limit = min(limit, analysis.section[0])
    if analysis.unclosed_fence_at is not None:
        limit = min(limit, analysis.unclosed_fence_at)
    last_start, last_end = _last_line(text)
    if last_end > last_start and could_start_section(text[last_start:last_end]):
        limit = min(limit, last_start)
    return limit


def _last_line(text: str) -> tuple[int, int]:
    """Start and content end of the last line (a final line break ends it, it does not begin one)."""
    end = len(text) - 1 if text.endswith("\n") else len(text)
    start = text.rfind("\n", 0, end) + 1
    return start, end - 1 if end > start and text[end - 1] == "\r" else end


def _unresolved(claim: AnswerClaim, srcs: list[Source]) -> bool:
    """Whether the claim names a label that ``sources`` cannot resolve (it may be defined later)."""
    own = [c for c in claim.citations if not c.inherited]
    return any(c.ref is not None and not (c.ref.isdigit() and 1 <= int(c.ref) <= len(srcs)) for c in own)


def _cut(text: str, analysis: Analysis, limit: int, srcs: list[Source]) -> int:
    claims, spans, block_of = analysis.extracted.claims, analysis.spans, analysis.block_of
    cut = 0
    # The cut before the first uncited claim of the current block: a chunk must not end inside
    # a block after such a claim, or the marker that ends the block could not cover it.
    block_start_cut: int | None = None
    for k, claim in enumerate(claims[:-1]):
        if k > 0 and block_of[k] != block_of[k - 1]:
            block_start_cut = None
        end, next_start = spans[k][1], spans[k + 1][0]
        uncited = not any(not c.inherited for c in claim.citations) and claim.grounding_check_required
        paragraph_ended = block_of[-1] != block_of[k]  # some later claim is in another block
        if next_start > limit or _unresolved(claim, srcs) or (uncited and not paragraph_ended):
            return block_start_cut if block_start_cut is not None else cut
        if uncited and block_start_cut is None:
            block_start_cut = cut
        nl = text.rfind("\n", end, next_start)
        cut = nl + 1 if nl >= 0 else next_start
    return cut
