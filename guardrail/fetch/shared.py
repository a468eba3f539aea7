"""SingleFlightFetcher: concurrent callers share the fetch of a URL instead of each fetching it.

The verifier's ``PageMemo`` already fetches each URL once within one call; a service or a batch
run makes many calls at once, and before the first of them has filled the page cache every call
would fetch the same cited page. This wrapper lets the first caller fetch it and the others await
that result.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence

from guardrail.core.schema import FetchedPage, Reason
from guardrail.fetch.base import Fetcher


class _OwnerFailed(Exception):
    """The caller that was fetching a URL failed or was cancelled: fetch it yourself."""


class SingleFlightFetcher:
    """A :class:`~guardrail.fetch.base.Fetcher` that shares in-flight fetches between concurrent
    ``fetch_all`` calls on the same event loop; nothing is kept once a fetch is done (put a
    :class:`~guardrail.store.CachedFetcher` inside it for that).

    A caller cancelled while waiting for another's fetch does not cancel that fetch; when the
    caller doing the fetch fails or is cancelled, the waiting callers fetch the URL themselves.
    """

    def __init__(self, inner: Fetcher) -> None:
        self.inner = inner
        self.name: str = inner.name
        self._inflight: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future[FetchedPage]]]
        self._inflight = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"SingleFlightFetcher({self.inner!r})"

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, FetchedPage]:
        """Every unique URL of ``urls``: awaited from a concurrent caller's fetch, or fetched now."""
        unique = list(dict.fromkeys(urls))
        if not unique:
            return {}
        loop = asyncio.get_running_loop()
        inflight = self._inflight.setdefault(loop, {})
        theirs = {u: inflight[u] for u in unique if u in inflight}
        mine = {u: loop.create_future() for u in unique if u not in theirs}
        inflight.update(mine)
        pages: dict[str, FetchedPage] = {}
        try:
            if mine:
                try:
                    fetched = await self.inner.fetch_all(list(mine))
                except BaseException as exc:
                    for fut in mine.values():
                        if not fut.done():
                            fut.set_exception(_OwnerFailed(str(type(exc).__name__)))
                            fut.exception()  # mark retrieved: nobody may be waiting
                    raise
                for u, fut in mine.items():
                    page = fetched.get(u) or FetchedPage(url=u, reason=Reason.internal_error.value, fetcher=self.name)
                    pages[u] = page
                    if not fut.done():
                        fut.set_result(page)
        finally:
            for u, fut in mine.items():
                if inflight.get(u) is fut:
                    del inflight[u]
        retry: list[str] = []
        for u, fut in theirs.items():
            try:
                # shield: a waiter being cancelled must not cancel the owner's future.
                pages[u] = await asyncio.shield(fut)
            except _OwnerFailed:
                retry.append(u)
        if retry:
            pages.update(await self.fetch_all(retry))
        return {u: pages[u] for u in unique}


__all__ = ["SingleFlightFetcher"]
