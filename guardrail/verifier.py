"""The orchestrator: the only module that knows the order of the stages.

extract -> fetch (-> archive, for dead links when an archive is given) -> interpret -> passages
-> retrieve -> judge -> quote guard -> aggregate (-> suggestions, for failing claims when asked)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from datetime import time as time_of_day
from typing import Any, Protocol, TypeVar

from pydantic import ValidationError

from guardrail._bridges import CpuGate, run_sync
from guardrail.archive import Archive
from guardrail.core.aggregate import aggregate_claim, aggregate_text
from guardrail.core.extract import ExtractedAnswer, Source, extract_claims, normalize_sources
from guardrail.core.interpret import interpret
from guardrail.core.passages import split_passages
from guardrail.core.quote_guard import apply_quote_guard
from guardrail.core.report import assemble_report
from guardrail.core.schema import (
    AnswerClaim,
    AnswerReport,
    ArchivedSnapshot,
    CitationRef,
    ClaimReport,
    FetchedPage,
    JudgeRequest,
    JudgeVerdict,
    Label,
    Reason,
    SuggestedCitation,
    TextReport,
    UrlVerdict,
    VerdictKind,
    judged_reason,
    verdict_kind,
)
from guardrail.core.text import normalize_text
from guardrail.fetch.base import Fetcher, PageStore
from guardrail.fetch.once import FetchOnce, PageMemo, page_key
from guardrail.judges.base import Judge
from guardrail.limits import check_count, check_size, check_text, check_texts
from guardrail.observe import observed
from guardrail.retrieval import Embedder, best_indices, similarities
from guardrail.settings import Settings

log = logging.getLogger("guardrail")

T = TypeVar("T")

JUDGE_CHUNK = 32
"""Most requests one call to an in-process (CPU-bound) judge gets: a call runs to its end in a
worker thread, so a cancelled request (a client gone, a deadline passed, Ctrl-C) stops costing CPU
after the chunk being judged. The price: one call of 256 hard requests took 33 s with the embedded
judge on 2 shared cores, chunks of 32 took 39 s in all (about 5 s each), chunks of 64 44 s (11 s
each). The service's :class:`~guardrail.judges._batching.BatchingJudge` merges concurrent
requests' chunks up to the same size, so under load nothing changes."""


@dataclass(frozen=True)
class _Deadline:
    """When the current call must end (``time.monotonic()``), and the setting it came from."""

    end: float
    seconds: float


_DEADLINE: ContextVar[_Deadline | None] = ContextVar("guardrail_deadline", default=None)
"""The deadline of the public call in progress: set by the outermost one, seen by the stages it
runs (and by the tasks they start, which copy the context)."""


class _Late(Exception):
    """The call's deadline passed while a stage was still running."""

    def __init__(self, deadline: _Deadline, stage: str) -> None:
        super().__init__(stage)
        self.detail = f"{stage} had not finished when GUARDRAIL_DEADLINE ({deadline.seconds:g} s) passed"


async def _in_time(awaitable: Awaitable[T], stage: str) -> T:
    """``await awaitable``, cancelled when the current call's deadline passes (:class:`_Late`)."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return await awaitable
    left = deadline.end - time.monotonic()
    if left <= 0:
        if asyncio.iscoroutine(awaitable):
            awaitable.close()  # never started: no "was never awaited" warning
        raise _Late(deadline, stage)
    try:
        return await asyncio.wait_for(awaitable, left)
    except asyncio.TimeoutError:
        if time.monotonic() < deadline.end:
            raise  # the stage's own timeout, not the deadline
        raise _Late(deadline, stage) from None


_REASONS = frozenset(r.value for r in Reason)


@dataclass(frozen=True)
class Fact:
    """Evidence text given directly (a retrieved chunk, a grounding fact): checked without fetching."""

    text: str
    source: str = "fact"
    title: str | None = None
    """The title of the document the text comes from, when known (a page title, a grounding fact's
    ``title`` attribute, a retrieved node's ``title`` metadata): the judge reads the text as part of it."""


Evidence = str | Fact
"""A citation target: a URL to fetch, or a Fact to check as it is."""


@dataclass(frozen=True)
class ClaimTask:
    """One claim and the evidence it cites, as the verifier's unit of work (``settle_at``: see
    :attr:`JudgeRequest.settle_at <guardrail.core.schema.JudgeRequest.settle_at>`)."""

    claim: str
    evidence: Sequence[Evidence]
    settle_at: float | None = None


@dataclass(frozen=True)
class DecisionRecord:
    """Everything behind one decided citation, for audit stores and observers."""

    claim: str
    source: str
    verdict: UrlVerdict
    page: FetchedPage | None
    passages_shown: list[str]
    judge_name: str | None
    judge_model: str | None
    fetcher_name: str | None


Recorder = Callable[[DecisionRecord], None]


@dataclass(frozen=True)
class Stages:
    """The built stages a :class:`Verifier` runs, as :func:`guardrail.runtime.wire_stages` builds
    them: the fetcher behind its :class:`~guardrail.fetch.once.FetchOnce`, the embedder, the judge
    (or, with ``build_judge``, how to build it on first use: loading a model takes seconds, and a
    verifier that only meets dead links never needs one), and the archive of dead links."""

    fetcher: FetchOnce
    embedder: Embedder
    judge: Judge | None = None
    build_judge: Callable[[], Judge | None] | None = None
    archive: Archive | None = None
    batch_judge_calls: bool = False
    """Whether the judge queues concurrent calls into one (it is then a
    :class:`~guardrail.judges._batching.BatchingJudge`)."""


class StageWiring(Protocol):
    """How a :class:`Verifier` built from stage arguments (``Verifier(judge=...)``) gets its
    :class:`Stages`: :func:`guardrail.runtime.wire_stages`, given what the caller passed (None:
    the settings' stage)."""

    def __call__(
        self,
        settings: Settings,
        *,
        fetcher: Fetcher | None,
        embedder: Embedder | None,
        judge: Judge | None,
        page_store: PageStore | None,
        batch_judge_calls: bool,
        archive: Archive | None,
    ) -> Stages: ...


_WIRING: list[StageWiring] = []


def install_wiring(wire: StageWiring) -> None:
    """Have ``wire`` build the stages of every :class:`Verifier` constructed without ``stages``.

    Called once, by :mod:`guardrail.runtime` as it is imported (``import guardrail`` imports it):
    the runtime is the one place stages are built, and it imports this module to build verifiers,
    so this module importing it back would close an import circle."""
    _WIRING[:] = [wire]


def _wiring() -> StageWiring:
    if not _WIRING:
        raise RuntimeError("no stage wiring installed: import guardrail.runtime (import guardrail does)")
    return _WIRING[0]


AnswerDate = datetime | date | None
"""When an answer was written: the archive's snapshot closest to it is used for a dead link (a
date means its midnight UTC, a naive datetime UTC); None: now."""

_FAILING = frozenset({Label.not_found, Label.contradicted, Label.unreachable})
"""A claim's overall labels that ask for suggested citations: its own citations do not back it."""
_NOT_ARCHIVED = frozenset({Reason.blocked_address.value, Reason.invalid_url.value})
"""Dead links never sent to an archive: a private address is nobody else's business, and a URL
that is not one cannot have been archived."""


@dataclass(frozen=True)
class _Archived:
    """A dead link read from the archive: the snapshot, and what the cited URL itself gave."""

    snapshot: ArchivedSnapshot
    original: FetchedPage


@dataclass(frozen=True)
class _Pages:
    """The pages of a call, by URL as cited (a dead link read from the archive: its snapshot),
    and the dead links that were."""

    pages: dict[str, FetchedPage]
    archived: dict[str, _Archived] = field(default_factory=dict)


def _title_of(evidence: Evidence, pages: dict[str, FetchedPage]) -> str | None:
    """The title of a cited page or fact, which the judge reads as the passages' topic."""
    if isinstance(evidence, Fact):
        return evidence.title
    page = pages.get(evidence)
    return page.title if page is not None else None


class Verifier:
    """Checks claims against the pages they cite and returns evidence-backed verdicts.

    The verifier builds no stage: it runs the :class:`Stages` it is given, which
    :mod:`guardrail.runtime` (the composition root) builds. :func:`guardrail.runtime.build_verifier`
    is the usual way to get one, with its stores; ``Verifier(...)`` is its shorthand without stores,
    the runtime building whatever is left out from ``settings``.

    Args:
        fetcher: how pages are fetched (default: direct HTTP, or Crawlbase when a token is set). It
            always sits behind one :class:`~guardrail.fetch.once.FetchOnce` (each page fetched once
            per answer and per in-flight fetch).
        embedder: ranks a page's passages against a claim (default: all-MiniLM-L6-v2).
        judge: decides each (claim, passages) pair (default: the settings' judge, built on first use).
        settings: the settings (default: read from the environment).
        allow_private_hosts: overrides ``settings.allow_private_hosts``.
        top_k: overrides ``settings.top_k`` (passages judged per claim and page; at least 1).
        recorders: audit recorders, told of every decision.
        page_store: keeps fetched pages between calls (a page cache).
        batch_judge_calls: queue concurrent judge calls into one (a service). The embedded judge
            does this itself (:meth:`~guardrail.judges.local.LocalJudge.judge`).
        archive: asked for a snapshot of each dead link, which is then fetched and judged in its
            place (:mod:`guardrail.archive`); off unless given (:func:`guardrail.runtime.build_verifier`
            gives one for ``GUARDRAIL_ARCHIVE``).
        stages: stages built by :func:`guardrail.runtime.wire_stages`, instead of all of the above
            stage arguments (``ValueError`` when both are given).

    Stores and other resources handed to :meth:`on_close` are closed by :meth:`close`.

    Every entry point checks its input against the settings' work limits before any work
    (:mod:`guardrail.limits`: :class:`~guardrail.limits.RequestLimitError` above one, ``ValueError``
    naming the field for text that is not valid Unicode). CPU-heavy steps (extracting claims,
    reading pages into passages) run in worker threads, a few at a time, never on the event loop.

    Every call ends within ``settings.deadline`` (``GUARDRAIL_DEADLINE``): a stage still running
    then is cancelled, and the citations it had not decided read ``not_found`` / ``deadline``
    (kind ``could_not_check``), the others keep their verdicts. A stage that answers the wrong types
    (a judge's ``[None]``, a dict, an unknown label, a NaN confidence; a fetcher's ``None``; NaN
    embeddings) never raises out of a call: its citations read ``internal_error``, with a
    ``detail`` naming the stage and what was wrong.
    """

    def __init__(
        self,
        *,
        fetcher: Fetcher | None = None,
        embedder: Embedder | None = None,
        judge: Judge | None = None,
        settings: Settings | None = None,
        allow_private_hosts: bool | None = None,
        top_k: int | None = None,
        recorders: Sequence[Recorder] = (),
        page_store: PageStore | None = None,
        batch_judge_calls: bool = False,
        archive: Archive | None = None,
        stages: Stages | None = None,
    ) -> None:
        settings = settings or Settings.from_env()
        if allow_private_hosts is not None:
            settings = settings.model_copy(update={"allow_private_hosts": allow_private_hosts})
        if top_k is not None:
            if top_k < 1:
                raise ValueError("top_k must be at least 1")
            settings = settings.model_copy(update={"top_k": top_k})
        self.settings = settings
        if stages is None:
            stages = _wiring()(
                settings,
                fetcher=fetcher,
                embedder=embedder,
                judge=judge,
                page_store=page_store,
                batch_judge_calls=batch_judge_calls,
                archive=archive,
            )
        elif batch_judge_calls or any(s is not None for s in (fetcher, embedder, judge, page_store, archive)):
            raise ValueError("pass either built stages or the stages to build (fetcher=..., judge=...), not both")
        self.stages = stages
        self.fetcher = stages.fetcher
        self.embedder = stages.embedder
        self.archive = stages.archive
        self._judge = stages.judge
        self._judge_resolved = stages.build_judge is None
        self.recorders = list(recorders)
        self._closers: list[Callable[[], None]] = []
        self._cpu = CpuGate()

    @property
    def batch_judge_calls(self) -> bool:
        """Whether concurrent judge calls are queued into one (:class:`Stages.batch_judge_calls`)."""
        return self.stages.batch_judge_calls

    @property
    def judge(self) -> Judge | None:
        """The judge in use (built on first use when the wiring deferred it); None when none is available."""
        build = self.stages.build_judge
        if not self._judge_resolved and build is not None:
            self._judge = build()
            self._judge_resolved = True
        return self._judge

    def on_close(self, close: Callable[[], None]) -> None:
        """Have :meth:`close` call ``close`` (a store the verifier writes to)."""
        self._closers.append(close)

    def close(self) -> None:
        """Close what was handed to :meth:`on_close`, each once, newest first; never raises."""
        while self._closers:
            close = self._closers.pop()
            try:
                close()
            except Exception:
                log.exception("closing a store of the verifier failed")

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def run_cpu(self, fn: Callable[..., T], /, *args: object) -> T:
        """``fn(*args)`` in a worker thread, a few at a time (:class:`~guardrail._bridges.CpuGate`):
        how CPU-heavy steps stay off the event loop."""
        return await self._cpu.run(fn, *args)

    @contextlib.contextmanager
    def _deadline(self) -> Iterator[None]:
        """The call's deadline for the block, unless an outer call of this context set one."""
        if _DEADLINE.get() is not None:
            yield
            return
        seconds = self.settings.deadline
        token = _DEADLINE.set(_Deadline(end=time.monotonic() + seconds, seconds=seconds))
        try:
            yield
        finally:
            _DEADLINE.reset(token)

    # -- public entry points -------------------------------------------------

    async def averify(
        self, claim: str, urls: Sequence[str], *, memo: PageMemo | None = None, answer_date: AnswerDate = None
    ) -> ClaimReport:
        """Verify one claim against each cited URL; one verdict per unique URL, in order.
        ``urls`` is a list: a single string raises ``TypeError`` (it would be read as its characters).
        Pass a ``memo`` to share fetches across calls (see :meth:`averify_many`); ``answer_date``
        picks the archived copy of a dead link (see :data:`AnswerDate`)."""
        if isinstance(urls, (str, bytes)):
            raise TypeError("urls must be a list of URLs, not a single string")
        reports = await self.averify_many(
            [ClaimTask(claim=claim, evidence=list(urls))], memo=memo, answer_date=answer_date
        )
        return reports[0]

    def verify(self, claim: str, urls: Sequence[str], *, answer_date: AnswerDate = None) -> ClaimReport:
        """Synchronous :meth:`averify`."""
        return run_sync(lambda: self.averify(claim, urls, answer_date=answer_date))

    async def averify_many(
        self, tasks: Sequence[ClaimTask], memo: PageMemo | None = None, *, answer_date: AnswerDate = None
    ) -> list[ClaimReport]:
        """Verify many claims at once: every unique URL fetched once, all passages embedded
        in one batch, all (claim, source) pairs judged in one judge call."""
        checked = [self._check_task(task, f"tasks[{n}]" if len(tasks) > 1 else "") for n, task in enumerate(tasks)]
        self._check_work(checked)
        with self._deadline():
            return await self._verify_checked(checked, memo, answer_date)

    async def _verify_checked(
        self, checked: Sequence[ClaimTask], memo: PageMemo | None, answer_date: AnswerDate = None
    ) -> list[ClaimReport]:
        memo = memo or PageMemo()
        urls = list(dict.fromkeys(e for task in checked for e in task.evidence if isinstance(e, str)))
        return await self._judge_tasks(checked, await self._gather(urls, memo, answer_date))

    def verify_many(self, tasks: Sequence[ClaimTask], *, answer_date: AnswerDate = None) -> list[ClaimReport]:
        """Synchronous :meth:`averify_many`."""
        return run_sync(lambda: self.averify_many(tasks, answer_date=answer_date))

    async def aprefetch(self, urls: Sequence[str], memo: PageMemo) -> None:
        """Fetch ``urls`` into ``memo`` now (each once), so that later calls given the same memo
        find them fetched: lets I/O start early while judging is deliberately queued."""
        await self._fetch(list(dict.fromkeys(u.strip() for u in urls if u and u.strip())), memo)

    async def averify_answer(
        self,
        answer: str,
        sources: Sequence[object] | None = None,
        *,
        memo: PageMemo | None = None,
        url_key: str | None = None,
        cite_unmarked: bool | None = None,
        answer_date: AnswerDate = None,
        suggest: bool | None = None,
    ) -> AnswerReport:
        """Verify a whole answer: extract its claims and citations (:func:`guardrail.core.extract.extract_claims`),
        fetch every unique URL once, judge all claims together, and report.

        Each checked claim gets one verdict per citation, in order (an unresolvable marker gets
        ``not_found`` / ``unresolved_citation``) and ``overall`` from :func:`aggregate`; claims that
        cite nothing or assert nothing keep ``overall=None``, except a sentence asserting nothing
        whose links are all dead: its links are fetched (not judged) and read ``unreachable``.
        ``sources`` resolve ``[n]`` markers and back answers without markers; a source with only
        text is checked as a :class:`Fact`.
        Pass a ``memo`` to share fetches across calls (a streaming guard verifying chunk by chunk).
        Bad ``sources`` raise ``TypeError``/``ValueError`` naming the index. ``answer_date`` picks
        the archived copy of a dead link (see :data:`AnswerDate`).

        ``suggest`` (default ``GUARDRAIL_SUGGEST``, off; a repairing policy asks for it): each
        claim its own citations do not back (``not_found``, ``contradicted``, ``unreachable``) is
        also checked against the other sources at hand - the answer's other citations and
        reference entries, and ``sources`` - at most ``GUARDRAIL_SUGGEST_BUDGET`` (claim, source)
        pairs per answer, the likeliest first; those that support it are its
        ``suggested_citations``, best first. Claims that pass cost nothing more.
        """
        self._check_answer(answer, sources, url_key)
        with self._deadline():
            return await self._verify_answer(answer, sources, memo, url_key, cite_unmarked, answer_date, suggest)

    async def _verify_answer(
        self,
        answer: str,
        sources: Sequence[object] | None,
        memo: PageMemo | None,
        url_key: str | None,
        cite_unmarked: bool | None,
        answer_date: AnswerDate,
        suggest: bool | None,
    ) -> AnswerReport:
        extracted = await self._cpu.run(
            functools.partial(extract_claims, answer, sources, url_key=url_key, cite_unmarked=cite_unmarked)
        )
        plan = _AnswerPlan.of(extracted.claims)
        link_urls = list(dict.fromkeys(u for urls in plan.link_only.values() for u in urls))
        task_urls = {ev for task in plan.tasks for ev in task.evidence if isinstance(ev, str)}
        check_count(self.settings, "max_urls", "unique URLs", len(task_urls | set(link_urls)))
        memo = memo or PageMemo()
        reports, link_pages = await asyncio.gather(
            self.averify_many(plan.tasks, memo=memo, answer_date=answer_date) if plan.tasks else _nothing(),
            self._fetch(link_urls, memo) if link_urls else _nothing_fetched(),
        )
        claims = []
        for i, claim in enumerate(extracted.claims):
            if i in plan.link_only:
                dead = self._dead_links(claim.plain_text or claim.text, plan.link_only[i], link_pages)
                if dead is not None:
                    claim = claim.model_copy(update={"verdicts": dead, "overall": Label.unreachable})
            elif claim.grounding_check_required and claim.citations:
                report = reports[plan.task_of[i]] if i in plan.task_of else None
                verdicts = _verdicts_in_citation_order(claim.citations, plan.tasks, plan.task_of.get(i), report)
                outcome = aggregate_claim(verdicts)
                update = {"verdicts": verdicts, "overall": outcome.label, "reason": outcome.reason}
                claim = claim.model_copy(update={**update, "missing_parts": outcome.missing_parts})
            claims.append(claim)
        if self.settings.suggest if suggest is None else suggest:
            used = _Used(urls=task_urls | set(link_urls), pairs=sum(len(t.evidence) for t in plan.tasks))
            pool = _CandidatePool.of(extracted, normalize_sources(sources, url_key=url_key))
            claims = await self._suggest(claims, pool, memo, answer_date, used)
        return assemble_report(
            answer,
            claims,
            references=extracted.references,
            references_start=extracted.references_start,
            references_end=extracted.references_end,
            sources=extracted.sources,
        )

    async def _suggest(
        self, claims: list[AnswerClaim], pool: _CandidatePool, memo: PageMemo, answer_date: AnswerDate, used: _Used
    ) -> list[AnswerClaim]:
        """``claims`` with the suggested citations of those their own citations do not back: the
        other sources at hand, within the work limits and the suggestion budget (see
        :meth:`averify_answer`)."""
        budget = min(self.settings.suggest_budget, self.settings.max_checks - used.pairs)
        wanted = {
            i: pool.others(claim)
            for i, claim in enumerate(claims)
            if claim.grounding_check_required and claim.verdicts and claim.overall in _FAILING
        }
        # Pages not fetched yet count against the call's URL limit: past it they are not tried.
        new = [u for u in dict.fromkeys(ev for evs in wanted.values() for ev in evs if isinstance(ev, str))]
        new = [u for u in new if u not in used.urls]
        over = set(new[max(0, self.settings.max_urls - len(used.urls)) :])
        wanted = {i: kept for i, evs in wanted.items() if (kept := [ev for ev in evs if ev not in over])}
        if not wanted or budget <= 0:
            return claims
        text = {i: claims[i].plain_text or claims[i].text for i in wanted}
        urls = list(dict.fromkeys(ev for evs in wanted.values() for ev in evs if isinstance(ev, str)))
        fetched = await self._gather(urls, memo, answer_date)
        probe = [ClaimTask(text[i], evs) for i, evs in wanted.items()]
        passages, _ = await self._cpu.run(self._read_sources, probe, fetched.pages)
        readable = {i: kept for i, evs in wanted.items() if (kept := [ev for ev in evs if ev in passages])}
        if not readable:
            return claims  # nothing at hand could be read
        chosen = await self._choose(text, readable, passages, budget)
        order = list(chosen)
        # The sources were read above (each page's passages, once): judged as they are.
        reports = await self._judge_tasks([ClaimTask(text[i], chosen[i]) for i in order], fetched, (passages, {}))
        out = list(claims)
        for i, report in zip(order, reports, strict=True):
            backers = [
                pool.suggestion(ev, verdict)
                for ev, verdict in zip(chosen[i], report.citations, strict=True)
                if verdict.label == Label.supported
            ]
            if backers:
                backers.sort(key=lambda s: -s.verdict.confidence)  # stable: the pool's order on ties
                out[i] = out[i].model_copy(update={"suggested_citations": backers})
        return out

    async def _choose(
        self,
        text: dict[int, str],
        readable: dict[int, list[Evidence]],
        passages: dict[Evidence, list[str]],
        budget: int,
    ) -> dict[int, list[Evidence]]:
        """The (claim, source) pairs to judge for suggestions: all of them when they fit the
        budget; else each claim's sources ranked by their passages' best similarity to it, taken in
        turns (every claim's likeliest first), up to the budget."""
        if sum(len(evs) for evs in readable.values()) <= budget:
            return readable
        ids = list(readable)
        sources = list(dict.fromkeys(ev for evs in readable.values() for ev in evs))
        ranked = readable
        try:
            scores = await similarities(
                self.embedder, [normalize_text(text[i]) for i in ids], [passages[ev] for ev in sources]
            )
            best = {ev: matrix.max(axis=1) for ev, matrix in zip(sources, scores, strict=True)}
            ranked = {i: _by_score(evs, best, n) for n, (i, evs) in enumerate(readable.items())}
        except Exception:
            log.exception("internal error: ranking the other sources for suggestions failed; taken in order")
        chosen: dict[int, list[Evidence]] = {i: [] for i in ids}
        for turn in range(max(len(evs) for evs in ranked.values())):
            for i, evs in ranked.items():
                if turn < len(evs) and budget > 0:
                    chosen[i].append(evs[turn])
                    budget -= 1
        return {i: evs for i, evs in chosen.items() if evs}

    def _check_answer(self, answer: object, sources: Sequence[object] | None, url_key: str | None) -> None:
        """TypeError/ValueError naming what is wrong with an answer or its sources, before any work."""
        if not isinstance(answer, str):
            raise TypeError(f"answer must be a string, not {type(answer).__name__}")
        check_size(self.settings, "answer", answer)
        check_text("answer", answer)
        for source in normalize_sources(sources, url_key=url_key):  # TypeError/ValueError naming the index
            for name in ("url", "text", "title"):
                check_texts(f"sources[{source.index}].{name}", getattr(source, name))

    def _dead_links(self, claim: str, urls: list[str], pages: dict[str, FetchedPage]) -> list[UrlVerdict] | None:
        """Verdicts for the links of a sentence that asserts nothing, when every one of them is
        unreachable (recorded like any decided citation); None when any can be read."""
        verdicts: list[UrlVerdict] = []
        for url in urls:
            assessment = interpret(pages[url])
            if assessment.label != Label.unreachable:
                return None
            verdicts.append(_page_verdict(pages[url], Label.unreachable, assessment.reason or Reason.fetch_error.value))
        for url, verdict in zip(urls, verdicts, strict=True):
            self._record(claim, url, verdict, pages, [])
        return verdicts

    def verify_answer(
        self,
        answer: str,
        sources: Sequence[object] | None = None,
        *,
        memo: PageMemo | None = None,
        url_key: str | None = None,
        cite_unmarked: bool | None = None,
        answer_date: AnswerDate = None,
        suggest: bool | None = None,
    ) -> AnswerReport:
        """Synchronous :meth:`averify_answer`."""
        return run_sync(
            lambda: self.averify_answer(
                answer,
                sources,
                memo=memo,
                url_key=url_key,
                cite_unmarked=cite_unmarked,
                answer_date=answer_date,
                suggest=suggest,
            )
        )

    async def averify_texts(
        self,
        items: Sequence[tuple[str, Evidence]],
        *,
        memo: PageMemo | None = None,
        min_supported: float = 0.5,
        max_sentences: int | None = 12,
    ) -> list[TextReport]:
        """Whether each source still supports a text written from it (a retrieved chunk and the
        page it was indexed from): one :class:`TextReport` per ``(text, url_or_fact)``, in order.

        The text's sentences that assert something (as :func:`guardrail.core.extract.extract_claims`
        finds them; when none does, every sentence with letters) are checked as claims against the
        source - at most ``max_sentences`` of them, spread evenly over the text - and combined by
        :func:`guardrail.core.aggregate.aggregate_text`. All items are checked together: every unique
        URL fetched once, one judge call. A text with nothing to check gets ``not_found`` /
        ``nothing_to_check`` and its source is not fetched.
        """
        if not 0.0 < min_supported <= 1.0:
            raise ValueError(f"min_supported must be in (0, 1], got {min_supported}")
        if max_sentences is not None and max_sentences < 1:
            raise ValueError("max_sentences must be at least 1 (or None for all)")
        tasks: list[ClaimTask] = []
        spans: list[tuple[int, int]] = []
        sources: list[str] = []
        for n, item in enumerate(items):
            if not (isinstance(item, tuple) and len(item) == 2):
                raise TypeError(f"items[{n}] must be a (text, url or Fact) pair")
            text, ev = item
            if not isinstance(text, str):
                raise TypeError(f"items[{n}]: the text must be a string, not {type(text).__name__}")
            check_size(self.settings, f"items[{n}] text", text)
            check_text(f"items[{n}] text", text)
            if isinstance(ev, str):
                ev = ev.strip()
                sources.append(ev)
            elif isinstance(ev, Fact):
                sources.append(ev.source)
            else:
                raise TypeError(f"items[{n}]: the source must be a URL string or a Fact, not {type(ev).__name__}")
            sentences = await self._cpu.run(_text_sentences, text, max_sentences)
            spans.append((len(tasks), len(tasks) + len(sentences)))
            tasks.extend(ClaimTask(claim=sentence, evidence=[ev]) for sentence in sentences)
        checked = [self._check_task(task) for task in tasks]
        self._check_work(checked, count_claims=False)  # sentences of texts: bounded by max_sentences
        with self._deadline():
            reports = await self._verify_checked(checked, memo) if checked else []
        return [
            _text_report(source, reports[start:end], min_supported)
            for (start, end), source in zip(spans, sources, strict=True)
        ]

    def verify_texts(
        self,
        items: Sequence[tuple[str, Evidence]],
        *,
        memo: PageMemo | None = None,
        min_supported: float = 0.5,
        max_sentences: int | None = 12,
    ) -> list[TextReport]:
        """Synchronous :meth:`averify_texts`."""
        return run_sync(
            lambda: self.averify_texts(items, memo=memo, min_supported=min_supported, max_sentences=max_sentences)
        )

    # -- stages --------------------------------------------------------------

    def _check_task(self, task: ClaimTask, where: str = "") -> ClaimTask:
        """The task with its claim and URLs stripped and its evidence deduplicated; ValueError or
        TypeError for what cannot be checked, naming it (``tasks[2].evidence[0]``)."""
        prefix = f"{where}." if where else ""
        if not isinstance(task.claim, str) or not task.claim.strip():
            raise ValueError(f"{prefix}claim must be a non-empty string")
        check_size(self.settings, f"{prefix}claim", task.claim)
        check_text(f"{prefix}claim", task.claim)
        if isinstance(task.evidence, (str, bytes)):
            raise TypeError(f"{prefix}evidence must be a list of URLs or Facts, not a single string")
        evidence: list[Evidence] = []
        for n, item in enumerate(task.evidence):
            if isinstance(item, Fact):
                check_text(f"{prefix}evidence[{n}].text", item.text)
                check_text(f"{prefix}evidence[{n}].source", item.source)
                evidence.append(item)
            elif isinstance(item, str):
                check_text(f"{prefix}evidence[{n}]", item)
                evidence.append(item.strip())
            else:
                raise TypeError(f"evidence must be a URL string or a Fact, not {type(item).__name__}")
        if task.settle_at is not None and not 0.0 <= task.settle_at <= 1.0:
            raise ValueError(f"settle_at must be in [0, 1], not {task.settle_at}")
        return ClaimTask(claim=task.claim.strip(), evidence=list(dict.fromkeys(evidence)), settle_at=task.settle_at)

    def _check_work(self, tasks: Sequence[ClaimTask], *, count_claims: bool = True) -> None:
        """RequestLimitError when the tasks ask for more claims, URLs or judged pairs than allowed."""
        if count_claims:
            check_count(self.settings, "max_claims", "claims", len(tasks))
        urls = {ev for task in tasks for ev in task.evidence if isinstance(ev, str)}
        check_count(self.settings, "max_urls", "unique URLs", len(urls))
        check_count(self.settings, "max_checks", "(claim, source) pairs", sum(len(task.evidence) for task in tasks))

    async def _fetch(self, urls: Sequence[str], memo: PageMemo) -> dict[str, FetchedPage]:
        """The pages of ``urls``; those not fetched by the call's deadline read ``deadline``."""
        fetching = observed(
            "fetch", lambda: {"urls": list(urls)}, lambda: self.fetcher.fetch_all(urls, memo), _describe_pages
        )
        try:
            return await _in_time(fetching, "fetching the pages")
        except _Late as late:
            log.warning("deadline: %s (%d URLs)", late.detail, len(urls))
            late_page = FetchedPage(url="", reason=Reason.deadline.value, detail=late.detail, fetcher=self.fetcher.name)
            return {u: late_page.model_copy(update={"url": u}) for u in urls}

    async def _gather(self, urls: Sequence[str], memo: PageMemo, answer_date: AnswerDate) -> _Pages:
        """The pages of ``urls``; with an archive, each dead link's snapshot in its place when the
        archive holds a readable one (looked up once per URL and date per memo, fetched like any
        cited page: SSRF guard, caps, politeness, page cache)."""
        pages = await self._fetch(urls, memo)
        if self.archive is None:
            return _Pages(pages)
        dead = [u for u in urls if _worth_archiving(pages[u])]
        if not dead:
            return _Pages(pages)
        archive = self.archive
        snapshots = await observed(
            "archive",
            lambda: {"archive": archive.name, "urls": dead},
            lambda: self._lookups(archive, dead, memo, answer_date),
            lambda found: {"snapshots": [s.model_dump(mode="json") if s else None for s in found]},
        )
        found = {u: snap for u, snap in zip(dead, snapshots, strict=True) if snap is not None}
        if not found:
            return _Pages(pages)
        copies = await self._fetch(list(dict.fromkeys(snap.raw_url for snap in found.values())), memo)
        merged, archived = dict(pages), {}
        for url, snap in found.items():
            copy = copies[snap.raw_url]
            if not interpret(copy).usable:
                log.info("the archived copy of %s cannot be read (%s); the link stays dead", url, copy.reason)
                continue
            # Keyed and named by the URL cited, so every verdict and record speaks of the citation.
            merged[url] = copy.model_copy(update={"url": url, "final_url": copy.final_url or snap.raw_url})
            archived[url] = _Archived(snap, pages[url])
        return _Pages(merged, archived)

    @staticmethod
    async def _lookups(
        archive: Archive, urls: Sequence[str], memo: PageMemo, answer_date: AnswerDate
    ) -> list[ArchivedSnapshot | None]:
        """The archive's snapshot of each URL, asked once per URL and date per memo."""
        when, key = _archive_moment(answer_date)
        futures = []
        for url in urls:
            future = memo.lookups.get((page_key(url), key))
            if future is None:
                future = memo.lookups[(page_key(url), key)] = asyncio.ensure_future(_lookup(archive, url, when))
            futures.append(future)
        # shield: a caller cancelled mid-lookup leaves it to the others citing the URL.
        return list(await asyncio.gather(*(asyncio.shield(f) for f in futures)))

    async def _judge_tasks(
        self,
        tasks: Sequence[ClaimTask],
        fetched: _Pages,
        read: tuple[dict[Evidence, list[str]], dict[Evidence, UrlVerdict]] | None = None,
    ) -> list[ClaimReport]:
        """Judge every task against its evidence; ``read``: the sources already read (passages,
        decided verdicts) when the caller has them."""
        pages = fetched.pages
        judged: dict[tuple[int, Evidence], tuple[UrlVerdict, list[str]]] = {}
        # Not under the deadline: our own quick CPU step, and it decides the pages already fetched
        # (a dead link stays a dead link, whenever the deadline passes).
        source_passages, decided = read if read is not None else await self._cpu.run(self._read_sources, tasks, pages)
        # What the embedder and the judge see: the claims normalised like the passages (reports keep them as given).
        seen = [ClaimTask(normalize_text(t.claim), t.evidence, t.settle_at) for t in tasks]
        pairs: list[tuple[int, Evidence]] = [
            (i, ev) for i, task in enumerate(tasks) for ev in task.evidence if ev in source_passages
        ]
        try:
            shown = await _in_time(self._retrieve(seen, pairs, source_passages), "retrieving passages")
        except _Late as late:
            log.warning("deadline: %s", late.detail)
            judged.update({pair: (_late_verdict(pair[1], pages, late), []) for pair in pairs})
            return self._claim_reports(tasks, judged, decided, pages)
        except Exception as exc:
            log.exception("internal error: retrieving passages failed")
            detail = f"retrieving passages failed: {type(exc).__name__}: {exc}"
            judged.update({pair: (_internal_verdict(pair[1], pages, detail), []) for pair in pairs})
            return self._claim_reports(tasks, judged, decided, pages)
        verdicts = await self._run_judge(
            [
                JudgeRequest(
                    claim=seen[i].claim, passages=shown[n], title=_title_of(ev, pages), settle_at=tasks[i].settle_at
                )
                for n, (i, ev) in enumerate(pairs)
            ]
        )
        for n, (i, ev) in enumerate(pairs):
            guarded = apply_quote_guard(verdicts[n], shown[n])
            archived = fetched.archived.get(ev) if isinstance(ev, str) else None
            judged[(i, ev)] = (self._source_verdict(ev, pages, guarded, archived), shown[n])
        return self._claim_reports(tasks, judged, decided, pages)

    def _claim_reports(
        self,
        tasks: Sequence[ClaimTask],
        judged: dict[tuple[int, Evidence], tuple[UrlVerdict, list[str]]],
        decided: dict[Evidence, UrlVerdict],
        pages: dict[str, FetchedPage],
    ) -> list[ClaimReport]:
        """One report per task from its citations' verdicts (judged per claim, or decided per
        source), each recorded."""
        reports: list[ClaimReport] = []
        for i, task in enumerate(tasks):
            citations: list[UrlVerdict] = []
            for ev in task.evidence:
                verdict, passages_shown = judged[(i, ev)] if (i, ev) in judged else (decided[ev], [])
                citations.append(verdict)
                self._record(task.claim, ev, verdict, pages, passages_shown)
            outcome = aggregate_claim(citations)
            reports.append(
                ClaimReport(
                    claim=task.claim,
                    overall=outcome.label,
                    citations=citations,
                    reason=outcome.reason,
                    missing_parts=outcome.missing_parts,
                )
            )
        return reports

    def _read_sources(
        self, tasks: Sequence[ClaimTask], pages: dict[str, FetchedPage]
    ) -> tuple[dict[Evidence, list[str]], dict[Evidence, UrlVerdict]]:
        """Passages of every source worth judging, and the verdicts decided without a judge."""
        source_passages: dict[Evidence, list[str]] = {}
        decided: dict[Evidence, UrlVerdict] = {}
        for ev in dict.fromkeys(ev for task in tasks for ev in task.evidence):
            try:
                passages, verdict = _passages_or_verdict(ev, pages)
            except Exception as exc:
                log.exception("internal error reading %s", ev.source if isinstance(ev, Fact) else ev)
                passages, verdict = [], _internal_verdict(ev, pages, f"reading the page failed: {type(exc).__name__}")
            if verdict is not None:
                decided[ev] = verdict
            else:
                source_passages[ev] = passages
        return source_passages, decided

    async def _retrieve(
        self,
        tasks: Sequence[ClaimTask],
        pairs: Sequence[tuple[int, Evidence]],
        source_passages: dict[Evidence, list[str]],
    ) -> list[list[str]]:
        """Top-k passages per (claim, source), with every text of the call embedded in one batch."""
        if not pairs:
            return []
        k = self.settings.top_k
        ranked = [ev for ev in dict.fromkeys(ev for _, ev in pairs) if len(source_passages[ev]) > k]
        if not ranked:
            return [source_passages[ev] for _, ev in pairs]
        claim_ids = sorted({i for i, _ in pairs})
        row = {i: n for n, i in enumerate(claim_ids)}
        scores = await similarities(
            self.embedder, [tasks[i].claim for i in claim_ids], [source_passages[ev] for ev in ranked]
        )
        by_source = dict(zip(ranked, scores, strict=True))
        shown: list[list[str]] = []
        for i, ev in pairs:
            passages = source_passages[ev]
            if ev in by_source:
                passages = [passages[j] for j in sorted(best_indices(by_source[ev][row[i]], k))]
            shown.append(passages)
        return shown

    async def _run_judge(self, requests: list[JudgeRequest]) -> list[JudgeVerdict]:
        if not requests:
            return []
        judge = self.judge
        if judge is None:
            return [
                JudgeVerdict(label="not_found", confidence=0.0, reason=Reason.no_judge_configured.value)
                for _ in requests
            ]
        # An in-process judge gets the requests a chunk at a time: between chunks a cancelled
        # request (a client gone, a deadline passed) stops here instead of judging on for minutes.
        size = JUDGE_CHUNK if judge.cpu_bound else len(requests)
        verdicts: list[JudgeVerdict] = []
        for start in range(0, len(requests), size):
            try:
                verdicts.extend(await _in_time(self._judge_chunk(judge, requests[start : start + size]), "judging"))
            except _Late as late:
                log.warning("deadline: %s (%d of %d requests left)", late.detail, len(requests) - start, len(requests))
                late_verdict = JudgeVerdict(label="not_found", reason=Reason.deadline.value, detail=late.detail)
                verdicts.extend(late_verdict for _ in requests[start:])
                break
        return verdicts

    @staticmethod
    async def _judge_chunk(judge: Judge, requests: list[JudgeRequest]) -> list[JudgeVerdict]:
        try:
            answer: object = await observed(
                "judge", lambda: _describe_requests(judge, requests), lambda: judge.judge(requests), _describe_verdicts
            )
        except Exception as exc:
            # Judges answer failures of their model with judge_error verdicts; an exception out of
            # one is a failure of our own code.
            log.exception("internal error in judge %s", judge.name)
            detail = f"judge {judge.name} raised {type(exc).__name__}"
            return [_internal_judge_verdict(detail) for _ in requests]
        return _checked_verdicts(judge, requests, answer)

    @staticmethod
    def _source_verdict(
        ev: Evidence, pages: dict[str, FetchedPage], verdict: JudgeVerdict, archived: _Archived | None = None
    ) -> UrlVerdict:
        label = Label(verdict.label)
        if isinstance(ev, Fact):
            return UrlVerdict(
                url=ev.source,
                label=label,
                evidence_quote=verdict.evidence_quote,
                context=verdict.context,
                confidence=verdict.confidence,
                reason=verdict.reason or judged_reason(label),
                supported_parts=verdict.supported_parts,
                missing_parts=verdict.missing_parts,
                detail=verdict.detail,
            )
        page = pages[ev]
        # A dead link judged on its archived copy: where the citation itself led, and the copy.
        origin = archived.original if archived is not None else page
        return UrlVerdict(
            url=ev,
            label=label,
            evidence_quote=verdict.evidence_quote,
            context=verdict.context,
            confidence=verdict.confidence,
            final_url=origin.final_url,
            original_status=origin.original_status,
            rid=page.rid,
            reason=verdict.reason or (Reason.archived_copy.value if archived is not None else judged_reason(label)),
            supported_parts=verdict.supported_parts,
            missing_parts=verdict.missing_parts,
            archived_url=archived.snapshot.url if archived is not None else None,
            archived_at=archived.snapshot.archived_at if archived is not None else None,
            detail=verdict.detail,
        )

    def _record(
        self,
        claim: str,
        ev: Evidence,
        verdict: UrlVerdict,
        pages: dict[str, FetchedPage],
        passages_shown: list[str],
    ) -> None:
        if not self.recorders:
            return
        judge = self._judge if self._judge_resolved else None
        record = DecisionRecord(
            claim=claim,
            source=ev.source if isinstance(ev, Fact) else ev,
            verdict=verdict,
            page=None if isinstance(ev, Fact) else pages.get(ev),
            passages_shown=passages_shown,
            judge_name=judge.name if judge and passages_shown else None,
            judge_model=judge.model if judge and passages_shown else None,
            fetcher_name=None if isinstance(ev, Fact) else self.fetcher.name,
        )
        for recorder in self.recorders:
            try:
                recorder(record)
            except Exception:
                log.exception("audit recorder failed")


def _by_score(evidence: list[Evidence], best: dict[Evidence, Any], row: int) -> list[Evidence]:
    """``evidence`` by its best passage's similarity to claim ``row``, highest first (stable)."""
    return sorted(evidence, key=lambda ev: -float(best[ev][row]))


def _worth_archiving(page: FetchedPage) -> bool:
    """Whether a fetched page is a dead link worth asking an archive about (see ``_NOT_ARCHIVED``)."""
    assessment = interpret(page)
    return (
        assessment.label == Label.unreachable
        and verdict_kind(Label.unreachable, assessment.reason) == VerdictKind.dead_link
        and assessment.reason not in _NOT_ARCHIVED
    )


def _archive_moment(answer_date: AnswerDate) -> tuple[datetime, str]:
    """The moment to ask the archive about (UTC), and the memo's key for it ('' for now: one
    lookup per URL in a run without dates)."""
    if answer_date is None:
        return datetime.now(timezone.utc), ""
    if isinstance(answer_date, datetime):
        moment = answer_date if answer_date.tzinfo is not None else answer_date.replace(tzinfo=timezone.utc)
    else:
        moment = datetime.combine(answer_date, time_of_day(), tzinfo=timezone.utc)
    moment = moment.astimezone(timezone.utc)
    return moment, moment.isoformat()


async def _lookup(archive: Archive, url: str, when: datetime) -> ArchivedSnapshot | None:
    """``archive.lookup``, where an archive that raises (it should answer None) is a failure of
    our own code: logged with its traceback, and the link stays dead."""
    try:
        return await archive.lookup(url, when)
    except Exception:
        log.exception("internal error in archive %s looking up %s", getattr(archive, "name", archive), url)
        return None


def _describe_pages(pages: dict[str, FetchedPage]) -> dict[str, object]:
    """What a fetch came to, for a stage observer (no page text)."""
    return {
        "pages": [
            {"url": url, "status": page.original_status, "final_url": page.final_url, "reason": page.reason}
            for url, page in pages.items()
        ]
    }


def _describe_requests(judge: Judge, requests: Sequence[JudgeRequest]) -> dict[str, object]:
    """What a judge call is asked, for a stage observer."""
    return {
        "judge": judge.name,
        "model": judge.model,
        "requests": [{"claim": r.claim, "passages": list(r.passages)} for r in requests],
    }


def _describe_verdicts(verdicts: object) -> dict[str, object]:
    """A judge call's verdicts (before the quote guard and the type check), for a stage observer."""
    if not isinstance(verdicts, Sequence) or isinstance(verdicts, (str, bytes)):
        return {"verdicts": f"<{type(verdicts).__name__}>"}
    return {
        "verdicts": [
            v.model_dump(mode="json", warnings=False) if isinstance(v, JudgeVerdict) else f"<{type(v).__name__}>"
            for v in verdicts
        ]
    }


def _internal_judge_verdict(detail: str) -> JudgeVerdict:
    return JudgeVerdict(label="not_found", confidence=0.0, reason=Reason.internal_error.value, detail=detail)


def _checked_verdicts(judge: Judge, requests: Sequence[JudgeRequest], answer: object) -> list[JudgeVerdict]:
    """A judge's answer, one valid :class:`JudgeVerdict` per request: a verdict of the wrong type or
    with invalid values (an unknown label or reason, a confidence that is NaN or out of [0, 1], a
    quote that is not a string) becomes an ``internal_error`` verdict saying so; an answer that is
    not a list of as many verdicts as requests makes every verdict one."""
    name = judge.name
    if isinstance(answer, (str, bytes, Mapping)) or not isinstance(answer, Sequence):
        problem = f"judge {name} returned {type(answer).__name__}, not a list of JudgeVerdict"
        log.error("internal error: %s", problem)
        return [_internal_judge_verdict(problem) for _ in requests]
    if len(answer) != len(requests):
        problem = f"judge {name} returned {len(answer)} verdicts for {len(requests)} requests"
        log.error("internal error: %s", problem)
        return [_internal_judge_verdict(problem) for _ in requests]
    verdicts: list[JudgeVerdict] = []
    problems: dict[str, int] = {}
    for item in answer:
        verdict, problem = _valid_verdict(item)
        if verdict is None:
            problem = f"judge {name} answered {problem}"
            problems[problem] = problems.get(problem, 0) + 1
            verdict = _internal_judge_verdict(problem)
        verdicts.append(verdict)
    for problem, count in problems.items():
        log.error("internal error: %s (%d of %d verdicts)", problem, count, len(requests))
    return verdicts


def _valid_verdict(item: object) -> tuple[JudgeVerdict | None, str]:
    """``item`` validated again as a JudgeVerdict (one made with ``model_construct`` or changed
    after it was made skipped validation), or None and what is wrong with it."""
    if not isinstance(item, JudgeVerdict):
        return None, f"a {type(item).__name__}, not a JudgeVerdict"
    try:
        verdict = JudgeVerdict.model_validate({name: getattr(item, name, None) for name in JudgeVerdict.model_fields})
    except ValidationError as exc:
        errors = exc.errors(include_input=False, include_url=False)
        return None, "an invalid verdict (" + "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in errors) + ")"
    if not math.isfinite(verdict.confidence):
        return None, "an invalid verdict (confidence: not a finite number)"
    if verdict.reason is not None and verdict.reason not in _REASONS:
        return None, "an invalid verdict (reason: not one of the reason codes of guardrail.core.schema.Reason)"
    return verdict, ""


async def _nothing() -> list[ClaimReport]:
    return []


async def _nothing_fetched() -> dict[str, FetchedPage]:
    return {}


def _text_report(source: str, claims: Sequence[ClaimReport], min_supported: float) -> TextReport:
    """Whether ``source`` still backs a text, from its sentences' reports (see ``averify_texts``)."""
    if not claims:
        return TextReport(source=source, label=Label.not_found, reason=Reason.nothing_to_check.value)
    verdicts = [c.citations[0] for c in claims]
    label = aggregate_text([v.label for v in verdicts], min_supported)
    supported = [v for v in verdicts if v.label == Label.supported]
    contradicted = [v for v in verdicts if v.label == Label.contradicted]
    reason: str | None = None
    if label in (Label.unreachable, Label.not_found):
        reasons = [v.reason for v in verdicts if v.reason]
        # A page-level outcome (http_404, soft_404, no judge) is the same for every sentence.
        if reasons and len(reasons) == len(verdicts) and len(set(reasons)) == 1:
            reason = reasons[0]
        elif supported:
            reason = Reason.insufficient_support.value
    return TextReport(
        source=source,
        label=label,
        reason=reason,
        evidence_quote=next((v.evidence_quote for v in contradicted + supported if v.evidence_quote), None),
        final_url=verdicts[0].final_url,
        original_status=verdicts[0].original_status,
        sentences_checked=len(verdicts),
        sentences_supported=len(supported),
        sentences_contradicted=len(contradicted),
        claims=list(claims),
    )


def _text_sentences(text: str, limit: int | None) -> list[str]:
    """The sentences of a text to check against its source, at most ``limit``, spread evenly."""
    claims = extract_claims(text, cite_unmarked=False).claims
    sentences = [c.plain_text or c.text for c in claims if c.grounding_check_required]
    if not sentences:
        sentences = [c.plain_text or c.text for c in claims if any(ch.isalpha() for ch in c.plain_text or c.text)]
    sentences = [s.strip() for s in sentences if s.strip()]
    if limit is not None and len(sentences) > limit:
        if limit == 1:
            return [sentences[0]]
        step = (len(sentences) - 1) / (limit - 1)
        sentences = [sentences[round(i * step)] for i in range(limit)]
    return sentences


@dataclass(frozen=True)
class _Used:
    """What an answer's own citations already take of the call's work limits."""

    urls: set[str]
    pairs: int


@dataclass(frozen=True)
class _Candidate:
    """A source at hand for suggestions, and how the answer can cite it."""

    evidence: Evidence
    marker: str | None
    source_index: int | None


@dataclass
class _CandidatePool:
    """The sources at hand in one answer, in the order they are offered: the ``sources`` passed
    in, then the answer's citations, then its reference entries; each with its marker (``[n]``)
    where the answer can cite it by one."""

    candidates: dict[Evidence, _Candidate] = field(default_factory=dict)

    @classmethod
    def of(cls, extracted: ExtractedAnswer, sources: Sequence[Source]) -> _CandidatePool:
        pool = cls()
        labels = {r.label for r in extracted.references if r.label is not None}
        for source in sources:
            ev: Evidence | None = source.url.strip() if source.url else None
            if ev is None and source.text and source.text.strip():
                ev = Fact(text=source.text, source=f"fact:{source.index}")
            # A number the answer's own references define is theirs, not the source's.
            marker = None if str(source.index + 1) in labels else f"[{source.index + 1}]"
            if ev is not None:
                pool.add(ev, marker, source.index)
        for claim in extracted.claims:
            for ref in claim.citations:
                ev = _citation_evidence(ref)
                if ev is not None:
                    pool.add(ev, f"[{ref.ref}]" if ref.kind == "numbered" and ref.ref else None, ref.source_index)
        for entry in extracted.references:
            if entry.url and entry.url.strip():
                pool.add(entry.url.strip(), f"[{entry.label}]" if entry.label else None, None)
        return pool

    def add(self, ev: Evidence, marker: str | None, source_index: int | None) -> None:
        known = self.candidates.get(ev)
        if known is None:
            self.candidates[ev] = _Candidate(ev, marker, source_index)
        elif known.marker is None and marker is not None:
            self.candidates[ev] = _Candidate(
                ev, marker, known.source_index if known.source_index is not None else source_index
            )

    def others(self, claim: AnswerClaim) -> list[Evidence]:
        """The sources at hand that ``claim`` does not cite itself."""
        own = {_citation_evidence(ref) for ref in claim.citations}
        return [ev for ev in self.candidates if ev not in own]

    def suggestion(self, ev: Evidence, verdict: UrlVerdict) -> SuggestedCitation:
        candidate = self.candidates[ev]
        return SuggestedCitation(
            source=verdict.url, marker=candidate.marker, source_index=candidate.source_index, verdict=verdict
        )


@dataclass
class _AnswerPlan:
    """What an answer's claims ask for: one task per claim to judge (``task_of``: claim index ->
    task index), and the links of the sentences that assert nothing (fetched, not judged)."""

    tasks: list[ClaimTask] = field(default_factory=list)
    task_of: dict[int, int] = field(default_factory=dict)
    link_only: dict[int, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, claims: Sequence[AnswerClaim]) -> _AnswerPlan:
        plan = cls()
        for i, claim in enumerate(claims):
            if not claim.grounding_check_required:
                # "See <url> for details." asserts nothing, but a reader still follows its links:
                # they are fetched with the rest, and reported when all are dead.
                if claim.citations and all(ref.url for ref in claim.citations):
                    plan.link_only[i] = [ref.url.strip() for ref in claim.citations if ref.url]
                continue
            evidence = [ev for ev in map(_citation_evidence, claim.citations) if ev is not None]
            if evidence:
                plan.task_of[i] = len(plan.tasks)
                plan.tasks.append(ClaimTask(claim=claim.plain_text or claim.text, evidence=evidence))
        return plan


def _verdicts_in_citation_order(
    citations: Sequence[CitationRef], tasks: Sequence[ClaimTask], task: int | None, report: ClaimReport | None
) -> list[UrlVerdict]:
    """One verdict per citation of a claim, in order: its evidence's verdict from the claim's
    report, or ``not_found`` / ``unresolved_citation`` for a marker that resolves nowhere."""
    by_evidence: dict[Evidence, UrlVerdict] = {}
    if task is not None and report is not None:
        by_evidence = dict(zip(dict.fromkeys(tasks[task].evidence), report.citations, strict=True))
    verdicts = []
    for ref in citations:
        ev = _citation_evidence(ref)
        if ev is None:
            verdicts.append(
                UrlVerdict(
                    url=ref.marker or (ref.ref or ""), label=Label.not_found, reason=Reason.unresolved_citation.value
                )
            )
        else:
            verdicts.append(by_evidence[ev])
    return verdicts


def _citation_evidence(ref: CitationRef) -> Evidence | None:
    """What a citation points to: a URL to fetch, a source's text as a Fact, or None (unresolved)."""
    if ref.url:
        return ref.url.strip()
    if ref.source_text is not None and ref.source_text.strip():
        return Fact(text=ref.source_text, source=f"fact:{ref.source_index}")
    return None


def _passages_or_verdict(ev: Evidence, pages: dict[str, FetchedPage]) -> tuple[list[str], UrlVerdict | None]:
    """A source's passages to judge, or the verdict it earns without a judge (an unusable page)."""
    if isinstance(ev, Fact):
        passages = split_passages(normalize_text(ev.text))
        if passages:
            return passages, None
        return [], UrlVerdict(url=ev.source, label=Label.not_found, reason=Reason.empty_page.value)
    page = pages[ev]
    assessment = interpret(page)
    passages = split_passages(normalize_text(page.text)) if assessment.usable else []
    if assessment.usable and passages:
        return passages, None
    return [], _page_verdict(page, assessment.label or Label.not_found, assessment.reason or Reason.empty_page.value)


def _internal_verdict(ev: Evidence, pages: dict[str, FetchedPage], detail: str) -> UrlVerdict:
    """The verdict for a source that a failure of our own code kept from being checked."""
    return _unchecked_verdict(ev, pages, Reason.internal_error, detail)


def _late_verdict(ev: Evidence, pages: dict[str, FetchedPage], late: _Late) -> UrlVerdict:
    """The verdict for a source the call's deadline left unchecked."""
    return _unchecked_verdict(ev, pages, Reason.deadline, late.detail)


def _unchecked_verdict(ev: Evidence, pages: dict[str, FetchedPage], reason: Reason, detail: str) -> UrlVerdict:
    if isinstance(ev, Fact):
        return UrlVerdict(url=ev.source, label=Label.not_found, reason=reason.value, detail=detail)
    return _page_verdict(pages[ev], Label.not_found, reason.value, detail)


def _page_verdict(page: FetchedPage, label: Label, reason: str, detail: str | None = None) -> UrlVerdict:
    return UrlVerdict(
        url=page.url,
        label=label,
        confidence=0.0,
        final_url=page.final_url,
        original_status=page.original_status,
        rid=page.rid,
        reason=reason,
        detail=detail if detail is not None else page.detail,
    )
