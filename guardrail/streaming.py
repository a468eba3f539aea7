"""Guard an answer while it streams: verify each final sentence as soon as it is complete.

:class:`AnswerStream` consumes the text chunks of an answer as a model writes them and yields
guarded pieces in order. The answer is cut into pieces by :func:`guardrail.core.extract.stream_cut`;
each piece is verified on its own (``Verifier.averify_answer``, with one :class:`PageMemo` for the
whole answer so a URL cited twice is fetched once) and the policy applied to it
(:func:`guardrail.core.policy.apply_policy`). Verification of a piece runs as a task while later
chunks keep arriving, so checking one sentence overlaps the writing of the next; pieces are still
emitted strictly in order. A piece's pages are fetched as soon as it is released; with the
in-process judge, judging is queued one piece at a time (see ``AnswerStream(concurrency=...)``).

**What is held back, and until when.** A piece is released for verification only once its
extraction cannot change (the rule of :func:`~guardrail.core.extract.stream_cut`):

* a sentence is final once the next sentence has begun;
* a sentence with a numbered marker (``[2]``) waits until the marker resolves: against the
  ``sources`` passed in, or - without sources - against the reference list at the end of the
  answer, so such an answer is held until the stream ends and then verified in one piece;
* a sentence with no citation of its own waits for the end of its paragraph, where a marker may
  still cover it (the paragraph-end rule);
* nothing inside an unclosed code fence or a trailing reference section is released early.

When the stream ends, everything not yet released is the last piece. The guarded pieces
concatenate to the guarded answer.

**Sources without markers** (``cite_unmarked=None``): for a whole answer the sources cover every
uncited sentence only when the answer cites nothing at all. A stream cannot know that in advance,
so each piece decides for itself until the answer's first citation has been seen; from then on
uncited sentences are left unchecked, as for the whole answer. A sentence streamed *before* the
first citation is therefore checked against the sources, where a whole-answer check would not
check it; pass ``cite_unmarked=True``/``False`` for identical results.

**Blocking.** When a piece's verdicts call for ``block``, text already emitted cannot be unsent:
the stream stops, and its last piece is the policy's ``block_message`` (after a blank line when
text was emitted before it). With ``policy.raise_on_block`` the stream raises
:class:`~guardrail.core.policy.CitationBlocked` instead, carrying :meth:`AnswerStream.report`.

Sync code can use :func:`guardrail._bridges.iterate_sync` (drive an async iterator from a worker
thread) and :func:`guardrail._bridges.aiter_from_sync` (feed a blocking iterator into async code).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Sequence

from pydantic import BaseModel, Field

from guardrail.core.extract import extract_claims, stream_cut
from guardrail.core.policy import CitationBlocked, GuardedAnswer, OutputFormat, Policy, apply_policy
from guardrail.core.report import merge_reports
from guardrail.core.schema import AnswerReport
from guardrail.fetch.once import PageMemo
from guardrail.limits import check_text
from guardrail.verifier import AnswerDate, Verifier

__all__ = ["AnswerStream", "StreamPiece", "merge_reports"]


class StreamPiece(BaseModel):
    """One guarded piece of a streamed answer, in order.

    ``text`` is what to emit; ``original`` the piece as the model wrote it, starting at UTF-8
    byte ``start`` of the answer. ``guarded`` is the policy's result for this piece alone (its
    report's offsets are relative to the piece). When ``blocked`` is true ``text`` is the block
    message and this is the stream's last piece.
    """

    text: str
    original: str
    start: int = Field(description="UTF-8 byte offset of the piece in the whole answer.")
    blocked: bool = False
    guarded: GuardedAnswer


class AnswerStream:
    """Verifies and guards one answer as its text streams in; see the module docs for the rules.

    Use :meth:`pieces` once per answer; :meth:`report` is the report of everything verified so
    far, with byte offsets into the whole answer. ``sources`` may be reassigned before the
    pieces that need them are released (a RAG stream whose context arrives first).

    ``concurrency`` is how many pieces are judged at once (0: no limit). Pages are always fetched
    as soon as a piece is released; only judging queues, in order. By default (None) a judge
    running on this machine (``cpu_bound``, as the embedded one) judges one piece at a time, so the
    first sentence is not slowed down by the ones after it; remote judges (I/O-bound) get no limit.

    A repairing ``policy`` has each piece's failing claims checked against the other sources at
    hand (the ``sources``, the piece's own citations) and mends what it can; ``answer_date`` picks
    a dead link's archived copy when the verifier looks dead links up.
    """

    def __init__(
        self,
        verifier: Verifier,
        sources: Sequence[object] | None = None,
        *,
        policy: Policy | None = None,
        fmt: OutputFormat = "markdown",
        url_key: str | None = None,
        cite_unmarked: bool | None = None,
        memo: PageMemo | None = None,
        concurrency: int | None = None,
        answer_date: AnswerDate = None,
    ) -> None:
        if fmt not in ("markdown", "html"):
            raise ValueError(f"unknown format {fmt!r}; choose markdown or html")
        self.verifier = verifier
        self.sources = sources
        self.policy = policy or Policy()
        self.fmt: OutputFormat = fmt
        self.url_key = url_key
        self.cite_unmarked = cite_unmarked
        self.memo = memo
        self.answer_date = answer_date
        if concurrency is not None and concurrency < 0:
            raise ValueError("concurrency must be >= 0 (0: no limit)")
        self.concurrency = concurrency
        self._done: list[StreamPiece] = []
        self._used = False

    @property
    def blocked(self) -> bool:
        """Whether the stream stopped on a block."""
        return bool(self._done) and self._done[-1].blocked

    @property
    def text(self) -> str:
        """The guarded text emitted so far (the block message included, when blocked)."""
        return "".join(p.text for p in self._done)

    def report(self) -> AnswerReport:
        """The report of every piece verified and emitted so far, as one answer."""
        return merge_reports([(p.start, p.guarded.report) for p in self._done])

    async def pieces(self, chunks: AsyncIterable[str]) -> AsyncIterator[StreamPiece]:
        """Consume ``chunks`` (the answer's text, in order) and yield guarded pieces in order.

        Chunks are read in a task of their own, so a slow model and slow verification overlap.
        Closing this iterator early cancels outstanding verification and stops reading ``chunks``.
        """
        if self._used:
            raise RuntimeError("an AnswerStream guards one answer; create a new one per stream")
        self._used = True
        limit = self.concurrency if self.concurrency is not None else _default_concurrency(self.verifier)
        run = _Run(self, self.memo or PageMemo(), asyncio.Semaphore(limit) if limit else None)
        pump_task = asyncio.create_task(run.pump(chunks))
        try:
            while True:
                item = await run.ready.get()
                if item is None:
                    break
                if isinstance(item, BaseException):
                    raise item
                piece = self._settle(await item)
                yield piece
                if piece.blocked:
                    break
        finally:
            pump_task.cancel()
            for task in run.launched:
                task.cancel()
            await asyncio.gather(pump_task, *run.launched, return_exceptions=True)

    def _settle(self, piece: StreamPiece) -> StreamPiece:
        """Record a verified piece as emitted; a blocking one becomes the block message, or raises
        :class:`CitationBlocked` carrying the whole stream's report."""
        if piece.blocked:
            if self.policy.raise_on_block:
                self._done.append(piece)
                raise CitationBlocked(self.report(), self.policy.block_message)
            piece = piece.model_copy(update={"text": _block_text(self.text, self.policy.block_message)})
        self._done.append(piece)
        return piece

    async def _guard_piece(
        self,
        piece: str,
        start: int,
        memo: PageMemo,
        cite_unmarked: bool | None,
        urls: list[str],
        gate: asyncio.Semaphore | None,
    ) -> StreamPiece:
        # Pages are fetched at once; judging waits for its turn (pieces queue in order).
        if urls:
            await self.verifier.aprefetch(urls, memo)
        async with gate or contextlib.nullcontext():
            report = await self.verifier.averify_answer(
                piece,
                self.sources,
                memo=memo,
                url_key=self.url_key,
                cite_unmarked=cite_unmarked,
                answer_date=self.answer_date,
                suggest=True if self.policy.repair else None,
            )
        # Raising is decided by pieces(), so the exception can carry the whole stream's report.
        policy = self.policy.model_copy(update={"raise_on_block": False}) if self.policy.raise_on_block else self.policy
        guarded = apply_policy(report, policy, self.fmt)
        return StreamPiece(text=guarded.text, original=piece, start=start, blocked=guarded.blocked, guarded=guarded)


class _Run:
    """One stream being guarded: the answer so far, cut into pieces whose claims are final, each
    verified in a task of its own; ``ready`` holds those tasks in order, then None (the end) or
    the exception that stopped reading the chunks."""

    def __init__(self, stream: AnswerStream, memo: PageMemo, gate: asyncio.Semaphore | None) -> None:
        self.stream, self.memo, self.gate = stream, memo, gate
        self.ready: asyncio.Queue[asyncio.Task[StreamPiece] | BaseException | None] = asyncio.Queue()
        self.launched: list[asyncio.Task[StreamPiece]] = []
        self.buf = ""
        self.taken = 0  # characters of buf handed to a verification task
        self.offset = 0  # their UTF-8 length
        self.seen_citation = False
        self.prev_space = True

    async def pump(self, chunks: AsyncIterable[str]) -> None:
        try:
            async for chunk in chunks:
                if not isinstance(chunk, str):
                    raise TypeError(f"answer chunks must be strings, not {type(chunk).__name__}")
                check_text("answer chunk", chunk)
                if chunk:
                    self._feed(chunk)
            if self.taken < len(self.buf):
                self._launch(self.buf[self.taken :])
            self.ready.put_nowait(None)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self.ready.put_nowait(exc)

    def _feed(self, chunk: str) -> None:
        self.buf += chunk
        # A new claim can only begin after whitespace: skip the cut for chunks that neither hold
        # nor follow any (most tokens of a word).
        if self.prev_space or any(ch.isspace() for ch in chunk):
            cut = stream_cut(self.buf[self.taken :], self.stream.sources, url_key=self.stream.url_key)
            if cut > 0:
                self._launch(self.buf[self.taken : self.taken + cut])
                self.taken += cut
        self.prev_space = chunk[-1].isspace()

    def _launch(self, piece: str) -> None:
        stream = self.stream
        flag = stream.cite_unmarked
        if flag is None and self.seen_citation:
            flag = False
        pre = extract_claims(piece, stream.sources, url_key=stream.url_key, cite_unmarked=flag)
        cited = [r for c in pre.claims if c.grounding_check_required for r in c.citations]
        self.seen_citation = self.seen_citation or any(r.kind != "source" for c in pre.claims for r in c.citations)
        urls = [r.url for r in cited if r.url]
        task = asyncio.create_task(stream._guard_piece(piece, self.offset, self.memo, flag, urls, self.gate))
        self.launched.append(task)
        self.ready.put_nowait(task)
        self.offset += len(piece.encode("utf-8", "surrogatepass"))


def _default_concurrency(verifier: Verifier) -> int:
    """1 for an in-process judge (CPU-bound: judging pieces side by side is no faster, and the
    first sentence would wait for the others), else 0 (no limit: remote judges wait on I/O)."""
    judge = verifier.judge
    return 1 if judge is not None and judge.cpu_bound else 0


def _block_text(emitted: str, message: str) -> str:
    if not emitted or emitted.endswith("\n\n"):
        return message
    return ("\n" if emitted.endswith("\n") else "\n\n") + message
