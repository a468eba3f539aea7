"""The orchestrator: the only module that knows the order of the stages.

extract -> fetch -> interpret -> passages -> retrieve -> judge -> quote guard -> aggregate
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from guardrail.aggregate import aggregate, aggregate_claim, aggregate_text
from guardrail.extract import extract_claims
from guardrail.fetch.base import Fetcher
from guardrail.fetch.interpret import interpret
from guardrail.guard import apply_quote_guard
from guardrail.judges.base import Judge
from guardrail.passages import split_passages
from guardrail.retrieval import Embedder, shared_embedder, top_k
from guardrail.schema import (
    AnswerClaim,
    AnswerReport,
    CitationRef,
    ClaimReport,
    FetchedPage,
    JudgeRequest,
    JudgeVerdict,
    Label,
    Reason,
    TextReport,
    UrlVerdict,
)
from guardrail.settings import ConfigurationError, Settings

log = logging.getLogger("guardrail")

T = TypeVar("T")


def run_sync(coro_factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code, even inside a running event loop.

    Inside a running loop (Jupyter, an async framework calling sync code) the
    coroutine runs on a fresh loop in a worker thread instead of nesting loops.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_factory())
    result: list[T] = []
    error: list[BaseException] = []

    def worker() -> None:
        try:
            result.append(asyncio.run(coro_factory()))
        except BaseException as exc:
            error.append(exc)

    thread = threading.Thread(target=worker, name="guardrail-sync")
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]


@dataclass(frozen=True)
class Fact:
    """Evidence text given directly (a retrieved chunk, a grounding fact): checked without fetching."""

    text: str
    source: str = "fact"


Evidence = str | Fact
"""A citation target: a URL to fetch, or a Fact to check as it is."""


@dataclass(frozen=True)
class ClaimTask:
    """One claim and the evidence it cites, as the verifier's unit of work (``settle_at``: see
    :attr:`JudgeRequest.settle_at <guardrail.schema.JudgeRequest.settle_at>`)."""

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


@dataclass
class PageMemo:
    """Pages already fetched (or being fetched) within one answer or batch: one fetch per URL."""

    tasks: dict[str, asyncio.Future[FetchedPage]] = field(default_factory=dict)


def _default_fetcher(settings: Settings) -> Fetcher:
    from guardrail.fetch import fetcher_from_settings

    return fetcher_from_settings(settings)


def _default_judge(settings: Settings) -> Judge | None:
    from guardrail.judges import judge_from_settings

    return judge_from_settings(settings)


class Verifier:
    """Checks claims against the pages they cite and returns evidence-backed verdicts.

    Every stage can be swapped: pass a ``fetcher``, ``embedder`` or ``judge``;
    anything left out is built from ``settings`` (default: the environment).
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
    ) -> None:
        settings = settings or Settings.from_env()
        if allow_private_hosts is not None:
            settings = settings.model_copy(update={"allow_private_hosts": allow_private_hosts})
        if top_k is not None:
            if top_k < 1:
                raise ValueError("top_k must be at least 1")
            settings = settings.model_copy(update={"top_k": top_k})
        self.settings = settings
        self.fetcher: Fetcher = fetcher or _default_fetcher(settings)
        self.embedder: Embedder = embedder or shared_embedder()
        self._judge = judge
        self._judge_resolved = judge is not None
        self.recorders = list(recorders)

    @property
    def judge(self) -> Judge | None:
        """The judge in use (built lazily from settings); None when none is available."""
        if not self._judge_resolved:
            self._judge = _default_judge(self.settings)
            self._judge_resolved = True
        return self._judge

    # -- public entry points -------------------------------------------------

    async def averify(self, claim: str, urls: Sequence[str]) -> ClaimReport:
        """Verify one claim against each cited URL; one verdict per unique URL, in order."""
        reports = await self.averify_many([ClaimTask(claim=claim, evidence=list(urls))])
        return reports[0]

    def verify(self, claim: str, urls: Sequence[str]) -> ClaimReport:
        """Synchronous :meth:`averify`."""
        return run_sync(lambda: self.averify(claim, urls))

    async def averify_many(
        self, tasks: Sequence[ClaimTask], memo: PageMemo | None = None
    ) -> list[ClaimReport]:
        """Verify many claims at once: every unique URL fetched once, all passages embedded
        in one batch, all (claim, source) pairs judged in one judge call."""
        checked = [self._check_task(task) for task in tasks]
        memo = memo or PageMemo()
        urls = list(dict.fromkeys(e for task in checked for e in task.evidence if isinstance(e, str)))
        pages = await self._fetch(urls, memo)
        return await self._judge_tasks(checked, pages)

    def verify_many(self, tasks: Sequence[ClaimTask]) -> list[ClaimReport]:
        """Synchronous :meth:`averify_many`."""
        return run_sync(lambda: self.averify_many(tasks))

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
    ) -> AnswerReport:
        """Verify a whole answer: extract its claims and citations (:func:`guardrail.extract.extract_claims`),
        fetch every unique URL once, judge all claims together, and report.

        Each checked claim gets one verdict per citation, in order (an unresolvable marker gets
        ``not_found`` / ``unresolved_citation``) and ``overall`` from :func:`aggregate`; claims that
        cite nothing or assert nothing keep ``overall=None``, except a sentence asserting nothing
        whose links are all dead: its links are fetched (not judged) and read ``unreachable``.
        ``sources`` resolve ``[n]`` markers and back answers without markers; a source with only
        text is checked as a :class:`Fact`.
        Pass a ``memo`` to share fetches across calls (a streaming guard verifying chunk by chunk).
        Bad ``sources`` raise ``TypeError``/``ValueError`` naming the index.
        """
        extracted = extract_claims(answer, sources, url_key=url_key, cite_unmarked=cite_unmarked)
        tasks: list[ClaimTask] = []
        task_of: dict[int, int] = {}
        for i, claim in enumerate(extracted.claims):
            if not claim.grounding_check_required:
                continue
            evidence = [ev for ev in map(_citation_evidence, claim.citations) if ev is not None]
            if evidence:
                task_of[i] = len(tasks)
                tasks.append(ClaimTask(claim=claim.plain_text or claim.text, evidence=evidence))
        # A sentence that asserts nothing ("See <url> for details.") is not judged, but a reader
        # still follows its links: they are fetched with the rest, and dead ones reported.
        link_only = {
            i: [ref.url.strip() for ref in claim.citations if ref.url]
            for i, claim in enumerate(extracted.claims)
            if not claim.grounding_check_required and claim.citations and all(ref.url for ref in claim.citations)
        }
        memo = memo or PageMemo()
        link_urls = list(dict.fromkeys(u for urls in link_only.values() for u in urls))
        reports, link_pages = await asyncio.gather(
            self.averify_many(tasks, memo=memo) if tasks else _nothing(),
            self._fetch(link_urls, memo) if link_urls else _nothing_fetched(),
        )

        claims: list[AnswerClaim] = []
        counts: dict[str, int] = {}
        for i, claim in enumerate(extracted.claims):
            if i in link_only:
                dead = self._dead_links(claim.plain_text or claim.text, link_only[i], link_pages)
                if dead is not None:
                    for verdict in dead:
                        counts[verdict.label.value] = counts.get(verdict.label.value, 0) + 1
                    claim = claim.model_copy(update={"verdicts": dead, "overall": Label.unreachable})
                claims.append(claim)
                continue
            if not claim.grounding_check_required or not claim.citations:
                claims.append(claim)
                continue
            by_evidence: dict[Evidence, UrlVerdict] = {}
            if i in task_of:
                unique = list(dict.fromkeys(tasks[task_of[i]].evidence))
                by_evidence = dict(zip(unique, reports[task_of[i]].citations, strict=True))
            verdicts: list[UrlVerdict] = []
            for ref in claim.citations:
                ev = _citation_evidence(ref)
                if ev is None:
                    verdict = UrlVerdict(
                        url=ref.marker or (ref.ref or ""),
                        label=Label.not_found,
                        reason=Reason.unresolved_citation.value,
                    )
                else:
                    verdict = by_evidence[ev]
                verdicts.append(verdict)
                counts[verdict.label.value] = counts.get(verdict.label.value, 0) + 1
            outcome = aggregate_claim(verdicts)
            claims.append(
                claim.model_copy(
                    update={
                        "verdicts": verdicts,
                        "overall": outcome.label,
                        "reason": outcome.reason,
                        "missing_parts": outcome.missing_parts,
                    }
                )
            )
        return AnswerReport(
            answer=answer,
            claims=claims,
            overall=aggregate(c.overall for c in claims if c.overall is not None),
            label_counts=counts,
            references=extracted.references,
            references_start=extracted.references_start,
            references_end=extracted.references_end,
            sources=extracted.sources,
        )

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
    ) -> AnswerReport:
        """Synchronous :meth:`averify_answer`."""
        return run_sync(
            lambda: self.averify_answer(answer, sources, memo=memo, url_key=url_key, cite_unmarked=cite_unmarked)
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

        The text's sentences that assert something (as :func:`guardrail.extract.extract_claims`
        finds them; when none does, every sentence with letters) are checked as claims against the
        source - at most ``max_sentences`` of them, spread evenly over the text - and combined by
        :func:`guardrail.aggregate.aggregate_text`. All items are checked together: every unique
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
            if isinstance(ev, str):
                ev = ev.strip()
                sources.append(ev)
            elif isinstance(ev, Fact):
                sources.append(ev.source)
            else:
                raise TypeError(f"items[{n}]: the source must be a URL string or a Fact, not {type(ev).__name__}")
            sentences = _text_sentences(text, max_sentences)
            spans.append((len(tasks), len(tasks) + len(sentences)))
            tasks.extend(ClaimTask(claim=sentence, evidence=[ev]) for sentence in sentences)
        reports = await self.averify_many(tasks, memo=memo) if tasks else []
        out: list[TextReport] = []
        for (start, end), source in zip(spans, sources, strict=True):
            claims = reports[start:end]
            if not claims:
                out.append(TextReport(source=source, label=Label.not_found, reason=Reason.nothing_to_check.value))
                continue
            verdicts = [c.citations[0] for c in claims]
            label = aggregate_text([v.label for v in verdicts], min_supported)
            supported = [v for v in verdicts if v.label == Label.supported]
            contradicted = [v for v in verdicts if v.label == Label.contradicted]
            quote = next((v.evidence_quote for v in contradicted + supported if v.evidence_quote), None)
            reason: str | None = None
            if label in (Label.unreachable, Label.not_found):
                reasons = [v.reason for v in verdicts if v.reason]
                # A page-level outcome (http_404, soft_404, no judge) is the same for every sentence.
                if reasons and len(reasons) == len(verdicts) and len(set(reasons)) == 1:
                    reason = reasons[0]
                elif supported:
                    reason = Reason.insufficient_support.value
            out.append(
                TextReport(
                    source=source,
                    label=label,
                    reason=reason,
                    evidence_quote=quote,
                    final_url=verdicts[0].final_url,
                    original_status=verdicts[0].original_status,
                    sentences_checked=len(verdicts),
                    sentences_supported=len(supported),
                    sentences_contradicted=len(contradicted),
                    claims=list(claims),
                )
            )
        return out

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

    @staticmethod
    def _check_task(task: ClaimTask) -> ClaimTask:
        if not isinstance(task.claim, str) or not task.claim.strip():
            raise ValueError("claim must be a non-empty string")
        evidence: list[Evidence] = []
        for item in task.evidence:
            if isinstance(item, Fact):
                evidence.append(item)
            elif isinstance(item, str):
                evidence.append(item.strip())
            else:
                raise TypeError(f"evidence must be a URL string or a Fact, not {type(item).__name__}")
        if task.settle_at is not None and not 0.0 <= task.settle_at <= 1.0:
            raise ValueError(f"settle_at must be in [0, 1], not {task.settle_at}")
        return ClaimTask(claim=task.claim.strip(), evidence=list(dict.fromkeys(evidence)), settle_at=task.settle_at)

    async def _fetch(self, urls: Sequence[str], memo: PageMemo) -> dict[str, FetchedPage]:
        """Each page once: URLs that differ only in a ``#fragment`` share one fetch (the fragment
        never reaches the server); each keeps its own URL in its page and verdict."""
        keys = {u: page_key(u) for u in urls}
        pages = await self._fetch_keys(list(dict.fromkeys(keys.values())), memo)
        return {u: pages[k] if k == u else pages[k].model_copy(update={"url": u}) for u, k in keys.items()}

    async def _fetch_keys(self, urls: Sequence[str], memo: PageMemo) -> dict[str, FetchedPage]:
        missing = [u for u in urls if u not in memo.tasks]
        if missing:
            loop = asyncio.get_running_loop()
            futures = {u: loop.create_future() for u in missing}
            memo.tasks.update(futures)
            fetched: dict[str, FetchedPage] = {}
            try:
                fetched = await self.fetcher.fetch_all(missing)
            except ConfigurationError:
                # A bad token or account fails every page alike: say so instead of N fetch_errors.
                for u in missing:
                    memo.tasks.pop(u).cancel()
                raise
            except Exception:
                # A fetcher must not raise for one page; if it does anyway, every URL of the
                # call becomes a fetch_error rather than an exception out of verify.
                log.exception("fetcher %s failed", getattr(self.fetcher, "name", "?"))
            except BaseException:
                for u in missing:
                    memo.tasks.pop(u).cancel()
                raise
            name = getattr(self.fetcher, "name", "direct")
            for u, fut in futures.items():
                fut.set_result(
                    fetched.get(u) or FetchedPage(url=u, reason=Reason.fetch_error.value, fetcher=name)
                )
        return {u: await memo.tasks[u] for u in urls}

    async def _judge_tasks(
        self, tasks: Sequence[ClaimTask], pages: dict[str, FetchedPage]
    ) -> list[ClaimReport]:
        # Decide what can be decided without a judge; collect passages for the rest.
        source_passages: dict[Evidence, list[str]] = {}
        decided: dict[Evidence, UrlVerdict] = {}
        for task in tasks:
            for ev in task.evidence:
                if ev in source_passages or ev in decided:
                    continue
                if isinstance(ev, Fact):
                    passages = split_passages(ev.text)
                    if passages:
                        source_passages[ev] = passages
                    else:
                        decided[ev] = UrlVerdict(
                            url=ev.source, label=Label.not_found, reason=Reason.empty_page.value
                        )
                    continue
                page = pages[ev]
                assessment = interpret(page)
                passages = split_passages(page.text) if assessment.usable else []
                if assessment.usable and passages:
                    source_passages[ev] = passages
                else:
                    decided[ev] = _page_verdict(
                        page,
                        assessment.label or Label.not_found,
                        assessment.reason or Reason.empty_page.value,
                    )

        pairs: list[tuple[int, Evidence]] = [
            (i, ev) for i, task in enumerate(tasks) for ev in task.evidence if ev in source_passages
        ]
        shown = await self._retrieve(tasks, pairs, source_passages)
        verdicts = await self._run_judge(
            [
                JudgeRequest(claim=tasks[i].claim, passages=shown[n], settle_at=tasks[i].settle_at)
                for n, (i, _) in enumerate(pairs)
            ]
        )
        judged: dict[tuple[int, Evidence], tuple[UrlVerdict, list[str]]] = {}
        for n, (i, ev) in enumerate(pairs):
            guarded = apply_quote_guard(verdicts[n], shown[n])
            judged[(i, ev)] = (self._source_verdict(ev, pages, guarded), shown[n])

        reports: list[ClaimReport] = []
        for i, task in enumerate(tasks):
            citations: list[UrlVerdict] = []
            for ev in task.evidence:
                if (i, ev) in judged:
                    verdict, passages_shown = judged[(i, ev)]
                else:
                    verdict, passages_shown = decided[ev], []
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
        claim_ids = sorted({i for i, _ in pairs})
        sources = list(dict.fromkeys(ev for _, ev in pairs))
        needs_ranking = [ev for ev in sources if len(source_passages[ev]) > k]
        if not needs_ranking:
            return [source_passages[ev] for _, ev in pairs]
        texts = [tasks[i].claim for i in claim_ids]
        offsets: dict[Evidence, int] = {}
        for ev in needs_ranking:
            offsets[ev] = len(texts)
            texts.extend(source_passages[ev])
        vectors = await asyncio.to_thread(self.embedder.embed, texts)
        claim_row = {i: n for n, i in enumerate(claim_ids)}
        shown: list[list[str]] = []
        for i, ev in pairs:
            passages = source_passages[ev]
            if ev not in offsets:
                shown.append(passages)
                continue
            start = offsets[ev]
            best = top_k(vectors[claim_row[i]], vectors[start : start + len(passages)], k)
            shown.append([passages[j] for j in sorted(best)])
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
        try:
            verdicts = await judge.judge(requests)
            if len(verdicts) != len(requests):
                raise RuntimeError(f"judge returned {len(verdicts)} verdicts for {len(requests)} requests")
            return verdicts
        except Exception:
            log.exception("judge %s failed", judge.name)
            return [
                JudgeVerdict(label="not_found", confidence=0.0, reason=Reason.judge_error.value)
                for _ in requests
            ]

    @staticmethod
    def _source_verdict(ev: Evidence, pages: dict[str, FetchedPage], verdict: JudgeVerdict) -> UrlVerdict:
        label = Label(verdict.label)
        if isinstance(ev, Fact):
            return UrlVerdict(
                url=ev.source,
                label=label,
                evidence_quote=verdict.evidence_quote,
                confidence=verdict.confidence,
                reason=verdict.reason,
                supported_parts=verdict.supported_parts,
                missing_parts=verdict.missing_parts,
            )
        page = pages[ev]
        return UrlVerdict(
            url=ev,
            label=label,
            evidence_quote=verdict.evidence_quote,
            confidence=verdict.confidence,
            final_url=page.final_url,
            original_status=page.original_status,
            rid=page.rid,
            reason=verdict.reason,
            supported_parts=verdict.supported_parts,
            missing_parts=verdict.missing_parts,
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
            fetcher_name=None if isinstance(ev, Fact) else getattr(self.fetcher, "name", None),
        )
        for recorder in self.recorders:
            try:
                recorder(record)
            except Exception:
                log.exception("audit recorder failed")


async def _nothing() -> list[ClaimReport]:
    return []


async def _nothing_fetched() -> dict[str, FetchedPage]:
    return {}


def page_key(url: str) -> str:
    """The URL to fetch for a cited URL: without its ``#fragment``, unless the fragment is an app
    route (``#/path``, ``#!/path``) that a rendering fetcher would follow to other content."""
    base, sep, fragment = url.partition("#")
    if not sep or fragment.startswith(("/", "!")):
        return url
    return base


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


def _citation_evidence(ref: CitationRef) -> Evidence | None:
    """What a citation points to: a URL to fetch, a source's text as a Fact, or None (unresolved)."""
    if ref.url:
        return ref.url.strip()
    if ref.source_text is not None and ref.source_text.strip():
        return Fact(text=ref.source_text, source=f"fact:{ref.source_index}")
    return None


def _page_verdict(page: FetchedPage, label: Label, reason: str) -> UrlVerdict:
    return UrlVerdict(
        url=page.url,
        label=label,
        confidence=0.0,
        final_url=page.final_url,
        original_status=page.original_status,
        rid=page.rid,
        reason=reason,
    )
