"""FetchOnce: the one layer between the verifier and a fetcher that makes each page one fetch.

A cited page is fetched at most once:

* **within a memo** (:class:`PageMemo`: one answer, one stream, one batch): a page already fetched,
  or being fetched, for that memo is awaited, not fetched again;
* **across concurrent callers** on one event loop (single flight): a URL being fetched for one
  caller is awaited by the others. A caller cancelled while waiting does not cancel the fetch;
  when the caller fetching it fails or is cancelled, the waiters fetch it themselves;
* **across calls and processes** through an optional page store (the SQLite page cache,
  :class:`~guardrail.store.PageCache`): fresh stored pages are served, fetched ones stored. The
  store never fails a fetch: when it cannot be read or written, the page is fetched (or returned
  unstored) and a warning is logged.

URLs that differ only in a ``#fragment`` share one fetch (the fragment never reaches the server),
unless the fragment is an app route (``#/``, ``#!``); each keeps its own URL in its page.

A fetcher must not raise for one page; when one raises anyway, that is a failure of our own code:
every URL of the call becomes ``internal_error`` (logged once with its traceback), never the
page's fault. So does an answer of the wrong type (``None``, a string, a dict missing a URL or
holding something else than a :class:`~guardrail.core.schema.FetchedPage`): the pages concerned
read ``internal_error`` with a ``detail`` naming the fetcher and what it returned. A
:class:`~guardrail.settings.ConfigurationError` (a rejected token) is raised as is.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from guardrail.core.schema import ArchivedSnapshot, FetchedPage, Reason
from guardrail.fetch.base import Fetcher, PageStore
from guardrail.settings import ConfigurationError

log = logging.getLogger("guardrail.fetch")

__all__ = ["FetchOnce", "FetchStats", "PageMemo", "page_key"]


@dataclass
class PageMemo:
    """Pages already fetched (or being fetched) for one answer, stream or batch, by page key.

    ``limit`` bounds a memo that lives long (a batch run's, over many rows): past it, the pages
    used least recently are let go (a page still being fetched is kept), so memory stays flat
    while a page cited by many neighbouring rows is still fetched once. None: every page is kept.

    ``lookups`` holds the archive lookups of the run (by page key and the date asked for), so a
    dead link is looked up once per run however many claims cite it; they are small and kept."""

    tasks: dict[str, asyncio.Future[FetchedPage]] = field(default_factory=dict)
    limit: int | None = None
    lookups: dict[tuple[str, str], asyncio.Future[ArchivedSnapshot | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"PageMemo.limit must be at least 1 or None, not {self.limit}")

    def used(self, keys: Sequence[str]) -> list[asyncio.Future[FetchedPage]]:
        """The futures of ``keys`` (all in the memo), marked as used now; then the memo is
        trimmed to its ``limit``."""
        futures = [self.tasks[k] for k in keys]
        if self.limit is None:
            return futures
        for k, future in zip(keys, futures, strict=True):
            del self.tasks[k]
            self.tasks[k] = future  # dicts keep insertion order: the end is the most recent
        excess = len(self.tasks) - self.limit
        for k in [k for k, f in self.tasks.items() if f.done()][: max(0, excess)]:
            del self.tasks[k]
        return futures


@dataclass
class FetchStats:
    """Counters of one :class:`FetchOnce`: pages served from the store, fetched, stored, and the
    store errors that were worked around."""

    hits: int = 0
    misses: int = 0
    stored: int = 0
    errors: int = 0


class _OwnerFailed(Exception):
    """The caller that was fetching a URL failed or was cancelled: fetch it yourself."""


def page_key(url: str) -> str:
    """The URL to fetch for a cited URL: without its ``#fragment``, unless the fragment is an app
    route (``#/path``, ``#!/path``) that a rendering fetcher would follow to other content."""
    base, sep, fragment = url.partition("#")
    if not sep or fragment.startswith(("/", "!")):
        return url
    return base


class FetchOnce:
    """A :class:`~guardrail.fetch.base.Fetcher` around ``inner`` that fetches each page once (see
    the module docs), optionally through a page ``store``; ``stats`` counts what it did."""

    def __init__(self, inner: Fetcher, *, store: PageStore | None = None) -> None:
        if isinstance(inner, FetchOnce):
            raise TypeError("the fetcher is already a FetchOnce; wrap the inner fetcher instead")
        self.inner = inner
        self.store = store
        self.name: str = inner.name
        self.stats = FetchStats()
        self._options: Mapping[str, object] | None = None
        self._inflight: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future[FetchedPage]]]
        self._inflight = weakref.WeakKeyDictionary()
        if store is not None:
            self._options = dict(inner.cache_options())

    def __repr__(self) -> str:
        return f"FetchOnce({self.inner!r}, store={self.store!r})"

    def cache_options(self) -> Mapping[str, object]:
        """The inner fetcher's options that change a page."""
        return self.inner.cache_options()

    async def fetch_all(self, urls: Sequence[str], memo: PageMemo | None = None) -> dict[str, FetchedPage]:
        """Every unique URL of ``urls``, each page fetched at most once per ``memo`` (default: a
        memo for this call alone) and per in-flight fetch; keyed by the URL as given."""
        keys = {u: page_key(u) for u in dict.fromkeys(urls)}
        pages = await self._memoized(list(dict.fromkeys(keys.values())), memo or PageMemo())
        return {u: pages[k] if k == u else pages[k].model_copy(update={"url": u}) for u, k in keys.items()}

    async def _memoized(self, keys: list[str], memo: PageMemo) -> dict[str, FetchedPage]:
        """The pages of ``keys`` through ``memo``: each fetched by the first caller asking for it
        (its owner), awaited by the others. When the owner fails, its waiters get the same error (a
        rejected token is every caller's); when it was cancelled (a run that ended, a client that
        left), they fetch the page themselves instead of being cancelled too."""
        pages: dict[str, FetchedPage] = {}
        pending = list(keys)
        while pending:
            missing = [k for k in pending if k not in memo.tasks]
            if missing:
                await self._own(missing, memo)
            present = [k for k in pending if k in memo.tasks]
            retry = [k for k in pending if k not in memo.tasks]  # let go meanwhile by a failed owner
            for k, future in zip(present, memo.used(present), strict=True):
                try:
                    pages[k] = await asyncio.shield(future)  # a waiter's cancellation is its own
                except _OwnerFailed:
                    retry.append(k)
            pending = retry
        return {k: pages[k] for k in keys}

    async def _own(self, keys: list[str], memo: PageMemo) -> None:
        """Fetch ``keys`` for ``memo`` as their owner: their futures in the memo get the pages, or
        on failure are let go from the memo holding the error (``_OwnerFailed`` when cancelled)."""
        loop = asyncio.get_running_loop()
        futures = {k: loop.create_future() for k in keys}
        memo.tasks.update(futures)
        try:
            pages = await self._shared(keys)
        except BaseException as exc:
            for k, future in futures.items():
                if memo.tasks.get(k) is future:
                    del memo.tasks[k]
                if not future.done():
                    future.set_exception(exc if isinstance(exc, Exception) else _OwnerFailed(type(exc).__name__))
                    future.exception()  # mark retrieved: nobody may be waiting
            raise
        for k, future in futures.items():
            future.set_result(pages[k])

    async def _shared(self, keys: list[str]) -> dict[str, FetchedPage]:
        """Single flight: each key fetched by one caller, awaited by the concurrent others."""
        loop = asyncio.get_running_loop()
        inflight = self._inflight.setdefault(loop, {})
        theirs = {k: inflight[k] for k in keys if k in inflight}
        mine = {k: loop.create_future() for k in keys if k not in theirs}
        inflight.update(mine)
        pages: dict[str, FetchedPage] = {}
        try:
            if mine:
                try:
                    pages.update(await self._fetch(list(mine)))
                except BaseException as exc:
                    for future in mine.values():
                        if not future.done():
                            future.set_exception(_OwnerFailed(type(exc).__name__))
                            future.exception()  # mark retrieved: nobody may be waiting
                    raise
                for k, future in mine.items():
                    future.set_result(pages[k])
        finally:
            for k, future in mine.items():
                if inflight.get(k) is future:
                    del inflight[k]
        retry: list[str] = []
        for k, future in theirs.items():
            try:
                # shield: a waiter being cancelled must not cancel the owner's future.
                pages[k] = await asyncio.shield(future)
            except _OwnerFailed:
                retry.append(k)
        if retry:
            pages.update(await self._shared(retry))
        return pages

    async def _fetch(self, keys: list[str]) -> dict[str, FetchedPage]:
        """The stored pages, and the others fetched by the inner fetcher (and stored)."""
        hits = await self._stored(keys)
        misses = [k for k in keys if k not in hits]
        fetched: dict[str, FetchedPage] = {}
        if misses:
            problem: str | None = None
            try:
                answer: object = await self.inner.fetch_all(misses)
            except ConfigurationError:
                raise  # a bad token fails every page alike: say so, not N failures
            except Exception as exc:
                log.exception("internal error in fetcher %s", self.name)
                answer, problem = {}, f"fetcher {self.name} raised {type(exc).__name__}"
            fetched = self._checked(answer, misses, problem)
            await self._store(fetched)
        return {**hits, **fetched}

    def _checked(self, answer: object, keys: list[str], problem: str | None) -> dict[str, FetchedPage]:
        """The fetcher's pages for ``keys``; each one it did not give as a FetchedPage (``problem``:
        none, for that reason) is an ``internal_error`` page whose ``detail`` says what came instead."""
        raised = problem is not None  # logged with its traceback already
        if problem is None and not isinstance(answer, Mapping):
            problem = f"fetcher {self.name} returned {type(answer).__name__}, not a dict of FetchedPage"
        pages: dict[str, FetchedPage] = {}
        wrong: dict[str, int] = {}
        for k in keys:
            page = answer.get(k) if problem is None and isinstance(answer, Mapping) else None
            if isinstance(page, FetchedPage):
                pages[k] = page
                continue
            detail = problem or (
                f"fetcher {self.name} returned no page for a URL it was given"
                if page is None
                else f"fetcher {self.name} returned a {type(page).__name__} for a URL, not a FetchedPage"
            )
            wrong[detail] = wrong.get(detail, 0) + 1
            pages[k] = FetchedPage(url=k, reason=Reason.internal_error.value, fetcher=self.name, detail=detail)
        for detail, count in wrong.items() if not raised else ():
            log.error("internal error: %s (%d URL(s))", detail, count)  # nothing raised: no traceback
        return pages

    async def _stored(self, keys: list[str]) -> dict[str, FetchedPage]:
        if self.store is None:
            return {}
        try:
            hits = await asyncio.to_thread(self.store.get_many, keys, fetcher=self.name, options=self._options)
        except Exception as exc:  # the store only saves time: whatever went wrong, fetch instead
            hits = self._store_failed("unreadable, fetching instead", exc)
        self.stats.hits += len(hits)
        self.stats.misses += len(keys) - len(hits)
        return hits

    async def _store(self, pages: dict[str, FetchedPage]) -> None:
        if self.store is None or not pages:
            return
        try:
            self.stats.stored += await asyncio.to_thread(
                self.store.put_many, pages, fetcher=self.name, options=self._options
            )
        except Exception as exc:  # the store only saves time: the fetched page is returned unstored
            self._store_failed("not written", exc)

    def _store_failed(self, what: str, exc: Exception) -> dict[str, FetchedPage]:
        self.stats.errors += 1
        log.warning("page cache %s %s: %s", self.store, what, exc)
        return {}
