"""Politeness per host: a fetcher never sends one host more than its concurrency and rate, and a
429 (or a 503 with Retry-After) holds back every request to that host, not only the one retried."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from guardrail.fetch.direct import DirectFetcher
from guardrail.fetch.politeness import HostLimiter, HostLimits
from guardrail.retry import RetryPolicy
from guardrail.settings import Settings
from guardrail.testing import LoopbackSite, Route

BODY = b"<html><body><article><p>Pure water boils at 100 degrees Celsius at sea level.</p></article></body></html>"


class Meter:
    """A route that counts requests in flight, records arrival times, and answers after ``delay``;
    ``first`` statuses (with headers) are answered before the 200s."""

    def __init__(
        self, delay: float = 0.0, first: list[tuple[int, dict[str, str]]] | None = None, company: int = 0
    ) -> None:
        self.delay = delay
        self.company = company
        self.first = list(first or [])
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self.in_flight = 0
        self.most_in_flight = 0
        self.arrivals: list[tuple[float, str]] = []

    def __call__(self, handler: BaseHTTPRequestHandler) -> None:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.arrivals.append((time.monotonic(), handler.path))
            status, headers = self.first.pop(0) if self.first else (200, {})
            # Wait (up to 10 s) for ``company`` requests in flight at once, so the cap is reached
            # however slowly the requests come; then hold for ``delay`` so more could pile up.
            self.arrived.notify_all()
            self.arrived.wait_for(lambda: self.most_in_flight >= self.company, timeout=10)
        try:
            time.sleep(self.delay)
            body = BODY if status == 200 else b"slow down"
            handler.send_response(status)
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Type", "text/html; charset=utf-8")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite(routes={}) as server:
        yield server


def mount(site: LoopbackSite, meter: Meter, paths: list[str]) -> list[str]:
    for path in paths:
        site.routes[path] = Route(handler=meter)
    return [site.url(path) for path in paths]


def fetcher(site: LoopbackSite, limits: HostLimits, **options: object) -> DirectFetcher:
    return DirectFetcher(
        allowed_hosts=[f"127.0.0.1:{site.port}"],
        concurrency=16,
        host_limits=limits,
        **options,  # type: ignore[arg-type]
    )


async def test_no_more_requests_in_flight_to_a_host_than_its_concurrency(site: LoopbackSite) -> None:
    meter = Meter(delay=0.3, company=2)
    urls = mount(site, meter, [f"/p{i}" for i in range(8)])
    pages = await fetcher(site, HostLimits(concurrency=2, rate=None)).fetch_all(urls)
    assert all(page.original_status == 200 for page in pages.values())
    assert meter.most_in_flight == 2  # the fetcher's own concurrency (16) would have sent all 8


async def test_requests_to_a_host_keep_to_its_rate_after_a_burst(site: LoopbackSite) -> None:
    meter = Meter()
    urls = mount(site, meter, [f"/r{i}" for i in range(10)])
    await fetcher(site, HostLimits(concurrency=10, rate=4.0)).fetch_all(urls)
    times = sorted(at for at, _ in meter.arrivals)
    assert len(times) == 10
    # A burst of 4, then 4 per second: the 10th request cannot start before ~1.5 s.
    assert times[-1] - times[0] >= 1.3
    # The burst is not spread out: at 4 per second a spread-out one cannot take under 0.75 s.
    assert times[3] - times[0] < 0.7


async def test_a_429_with_retry_after_holds_back_every_request_to_the_host(site: LoopbackSite) -> None:
    meter = Meter(first=[(429, {"Retry-After": "1"})])
    first, second = mount(site, meter, ["/busy", "/other"])
    polite = fetcher(site, HostLimits(concurrency=4, rate=None), retry=RetryPolicy(attempts=1))
    assert (await polite.fetch_all([first]))[first].original_status == 429
    refused_at = meter.arrivals[0][0]
    page = (await polite.fetch_all([second]))[second]
    assert page.original_status == 200
    assert meter.arrivals[1][0] - refused_at >= 0.9  # /other waited out the pause /busy was given


async def test_a_429_is_retried_after_the_pause_and_then_read(site: LoopbackSite) -> None:
    meter = Meter(first=[(429, {"Retry-After": "0.5"})])
    (url,) = mount(site, meter, ["/busy"])
    page = (await fetcher(site, HostLimits(), retry=RetryPolicy(attempts=2, budget=10)).fetch_all([url]))[url]
    assert page.original_status == 200 and "boils at 100 degrees" in page.text
    assert meter.arrivals[1][0] - meter.arrivals[0][0] >= 0.5


async def test_a_plain_503_does_not_pause_the_host(site: LoopbackSite) -> None:
    meter = Meter(first=[(503, {})])
    first, second = mount(site, meter, ["/down", "/other"])
    # Were a plain 503 to pause the host, the pause would be a minute: past the bound below.
    limits = HostLimits(concurrency=4, rate=None, default_pause=60.0, max_pause=60.0)
    polite = fetcher(site, limits, retry=RetryPolicy(attempts=1))
    await polite.fetch_all([first])
    page = (await asyncio.wait_for(polite.fetch_all([second]), 30))[second]
    assert page.original_status == 200 and len(meter.arrivals) == 2


async def test_a_pause_is_capped() -> None:
    limiter = HostLimiter(HostLimits(max_pause=2.0))
    assert limiter.pause("example.org", 3600) == 2.0
    assert limiter.pause("example.org", None) == 1.0
    assert limiter.pause("example.org", -5) == 0.0


def test_limits_reject_nonsense() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        HostLimits(concurrency=0)
    with pytest.raises(ValueError, match="rate"):
        HostLimits(rate=0)


def test_the_limiter_works_across_event_loops() -> None:
    """Sync entry points run one loop per call: one fetcher's limiter must serve each of them."""
    import asyncio

    limiter = HostLimiter(HostLimits(concurrency=1, rate=2.0))

    async def use() -> None:
        async with limiter.slot("example.org"):
            pass

    asyncio.run(use())
    asyncio.run(use())


def test_settings_set_the_host_limits() -> None:
    settings = Settings.from_env({"GUARDRAIL_HOST_CONCURRENCY": "2", "GUARDRAIL_HOST_RATE": "0"})
    limits = DirectFetcher.from_settings(settings).hosts.limits
    assert (limits.concurrency, limits.rate) == (2, None)
    default = DirectFetcher.from_settings(Settings.from_env({})).hosts.limits
    assert (default.concurrency, default.rate) == (4, 5.0)
