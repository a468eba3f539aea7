"""FetchOnce's single flight: concurrent callers share one fetch of a URL, and cancellation of one
caller never breaks the others."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from guardrail.fetch.crawlbase import CrawlbaseFetcher
from guardrail.fetch.direct import DirectFetcher
from guardrail.fetch.once import FetchOnce, PageMemo
from guardrail.settings import ConfigurationError
from guardrail.testing import LoopbackSite, Route
from tests.fixtures.crawlbase_server import NORMAL_TOKEN, FakeCrawlbase, FakeTarget
from tests.fixtures.server import HeldPage
from tests.fixtures.tasks import innermost_code, until

SLOW_PAGE = "<html><body><p>Slow page about water.</p></body></html>"


@pytest.fixture
def held() -> HeldPage:
    """``/held``: answered once the test releases it (at most 20 s on)."""
    return HeldPage(SLOW_PAGE, limit=20.0)


@pytest.fixture
def site(held: HeldPage) -> Iterator[LoopbackSite]:
    server = LoopbackSite(
        {
            "/slow": Route(body=SLOW_PAGE, delay=0.4),
            "/held": Route(handler=held),
            "/fast": Route(body="<html><body><p>Fast page.</p></body></html>"),
        }
    ).start()
    try:
        yield server
    finally:
        held.release.set()
        server.stop()


WAITING = {FetchOnce._shared.__code__, FetchOnce._memoized.__code__}


async def waits_for_the_owner(task: asyncio.Task[object]) -> None:
    """Until ``task`` is suspended waiting for another caller's fetch of its page."""
    await until(lambda: innermost_code(task) in WAITING, "the caller waits for the owner's fetch")


def shared() -> FetchOnce:
    return FetchOnce(DirectFetcher(allow_private_hosts=True))


async def asked(site: LoopbackSite, path: str) -> None:
    """Until the server has received the request for ``path`` (the owner is mid-fetch), not a
    guessed delay: how long a fetch takes to start depends on the machine's load."""
    for _ in range(500):
        if site.hits.get(path):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} was never requested")


async def test_concurrent_callers_share_one_fetch(site: LoopbackSite) -> None:
    fetcher = shared()
    slow, fast = site.url("/slow"), site.url("/fast")
    results = await asyncio.gather(*(fetcher.fetch_all([slow, fast, slow]) for _ in range(5)))
    assert site.hits["/slow"] == 1 and site.hits["/fast"] == 1
    assert all(list(r) == [slow, fast] and r[slow].original_status == 200 for r in results)
    await fetcher.fetch_all([slow])  # nothing is kept once done: a later call fetches again
    assert site.hits["/slow"] == 2


async def test_a_cancelled_waiter_does_not_cancel_the_fetch(site: LoopbackSite, held: HeldPage) -> None:
    fetcher = shared()
    url = site.url("/held")
    owner = asyncio.create_task(fetcher.fetch_all([url]))
    await asked(site, "/held")
    waiter = asyncio.create_task(fetcher.fetch_all([url]))
    await waits_for_the_owner(waiter)
    waiter.cancel()
    held.release.set()
    page = (await owner)[url]
    assert page.original_status == 200 and site.hits["/held"] == 1
    with pytest.raises(asyncio.CancelledError):
        await waiter


async def test_when_the_fetching_caller_is_cancelled_waiters_fetch_themselves(
    site: LoopbackSite, held: HeldPage
) -> None:
    fetcher = shared()
    url = site.url("/held")
    owner = asyncio.create_task(fetcher.fetch_all([url]))
    await asked(site, "/held")
    waiter = asyncio.create_task(fetcher.fetch_all([url]))
    await waits_for_the_owner(waiter)
    owner.cancel()
    held.release.set()
    page = (await waiter)[url]
    assert page.original_status == 200 and "Slow page" in page.text
    assert site.hits["/held"] == 2


async def test_a_bounded_memo_keeps_the_pages_used_last(site: LoopbackSite) -> None:
    fetcher = shared()
    slow, fast = site.url("/slow"), site.url("/fast")
    memo = PageMemo(limit=1)
    await fetcher.fetch_all([fast], memo)
    await fetcher.fetch_all([fast], memo)
    assert site.hits["/fast"] == 1  # kept: fetched once for the memo
    await fetcher.fetch_all([slow], memo)  # over the limit: the page used least recently goes
    assert list(memo.tasks) == [slow]
    await fetcher.fetch_all([fast], memo)
    assert site.hits["/fast"] == 2 and site.hits["/slow"] == 1


async def test_a_bounded_memo_never_lets_go_of_a_page_being_fetched(site: LoopbackSite) -> None:
    fetcher = shared()
    slow, fast = site.url("/slow"), site.url("/fast")
    memo = PageMemo(limit=1)
    owner = asyncio.create_task(fetcher.fetch_all([slow], memo))
    await asked(site, "/slow")
    await fetcher.fetch_all([fast], memo)  # two entries now: the one in flight cannot go
    assert slow in memo.tasks
    await owner
    await fetcher.fetch_all([slow], memo)
    assert site.hits["/slow"] == 1


async def test_through_a_memo_a_waiter_whose_owner_is_cancelled_fetches_the_page_itself(
    site: LoopbackSite, held: HeldPage
) -> None:
    # A batch run that ends cancels the pages it was fetching ahead; another run sharing the memo
    # (a Ray actor's blocks) must get the page, not a CancelledError.
    fetcher = shared()
    url = site.url("/held")
    memo = PageMemo(limit=8)
    owner = asyncio.create_task(fetcher.fetch_all([url], memo))
    await asked(site, "/held")
    waiter = asyncio.create_task(fetcher.fetch_all([url], memo))
    await waits_for_the_owner(waiter)
    owner.cancel()
    held.release.set()
    page = (await waiter)[url]
    assert page.original_status == 200 and "Slow page" in page.text
    assert site.hits["/held"] == 2 and memo.tasks[url].done()
    with pytest.raises(asyncio.CancelledError):
        await owner


async def test_through_a_memo_a_cancelled_waiter_does_not_cancel_the_page(site: LoopbackSite, held: HeldPage) -> None:
    fetcher = shared()
    url = site.url("/held")
    memo = PageMemo()
    owner = asyncio.create_task(fetcher.fetch_all([url], memo))
    await asked(site, "/held")
    waiters = [asyncio.create_task(fetcher.fetch_all([url], memo)) for _ in range(2)]
    for waiter in waiters:
        await waits_for_the_owner(waiter)
    waiters[0].cancel()
    held.release.set()
    assert (await owner)[url].original_status == 200
    assert (await waiters[1])[url].original_status == 200
    assert site.hits["/held"] == 1
    with pytest.raises(asyncio.CancelledError):
        await waiters[0]


async def test_through_a_memo_a_rejected_token_reaches_the_waiters_as_itself() -> None:
    # The fetch of the page's owner ends in ConfigurationError: a caller waiting for the same page
    # gets that error (the run stops and says why), not a CancelledError.
    api = FakeCrawlbase().start()
    try:
        url = "https://example.org/b"
        # The API answers after 2 s: the waiter joins within that (seen waiting, not guessed).
        api.targets[url] = FakeTarget(readable="x", api_failures=[401], delay=2.0)
        fetcher = FetchOnce(CrawlbaseFetcher(NORMAL_TOKEN, api_url=api.api_url, retry_base_delay=0.01))
        memo = PageMemo(limit=8)
        owner = asyncio.create_task(fetcher.fetch_all([url], memo))
        await until(lambda: api.calls_for(url), "the owner asks the API")
        waiter = asyncio.create_task(fetcher.fetch_all([url], memo))
        await waits_for_the_owner(waiter)
        for task in (owner, waiter):
            with pytest.raises(ConfigurationError, match="CRAWLBASE_TOKEN"):
                await task
        assert url not in memo.tasks and len(api.calls_for(url)) == 1  # asked once, not kept
    finally:
        api.stop()


def test_a_memo_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match=r"PageMemo\.limit"):
        PageMemo(limit=0)
