"""The README's promise about origin statuses, written from the README, literal by literal: 401,
403, 407, 451 and every 5xx (500 to 599) read ``could_not_check`` - the page refused us or did not
answer now, it is not a dead link; 404, 410 and other 4xx read ``dead_link``. The statuses are
typed here, not taken from the code's tables, so dropping one from a table fails a test.

Each page is served by a real loopback HTTP server and fetched by the direct fetcher (one attempt:
retries only cost time here)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from guardrail import Verifier
from guardrail.core.schema import Label, VerdictKind
from guardrail.fetch.direct import DirectFetcher
from guardrail.retry import RetryPolicy
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge, Route

CLAIM = "Pure water boils at 100 degrees Celsius at sea level."

# README, "Verdicts": "could_not_check (it did not answer now or refused us: timeout, refused
# connection, 429, 5xx, 401/403, ...)"; "Reasons": "http_429, 5xx, http_401/403/407/451: could not check".
REFUSED_US = (401, 403, 407, 451)
EVERY_5XX = (500, 501, 502, 503, 504, 505, 507, 508, 510, 511, 520, 522, 530, 599)
NOW_UNANSWERED = (429,)
# "http_404, http_410 and other 4xx: a dead link."
GONE = (400, 404, 410, 418, 422)


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackSite]:
    statuses = REFUSED_US + EVERY_5XX + NOW_UNANSWERED + GONE
    routes = {f"/status-{s}": Route(status=s, body=f"<html><body>status {s}</body></html>") for s in statuses}
    with LoopbackSite(routes) as server:
        yield server


def verdict_for(site: LoopbackSite, status: int) -> tuple[Label, str | None, VerdictKind]:
    fetcher = DirectFetcher(allowed_hosts=[f"127.0.0.1:{site.port}"], retry=RetryPolicy(attempts=1))
    verifier = Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder())
    [verdict] = verifier.verify(CLAIM, [site.url(f"/status-{status}")]).citations
    return verdict.label, verdict.reason, verdict.kind


@pytest.mark.parametrize("status", REFUSED_US + EVERY_5XX + NOW_UNANSWERED)
def test_a_status_that_refuses_us_or_a_5xx_reads_could_not_check(site: LoopbackSite, status: int) -> None:
    assert verdict_for(site, status) == (Label.unreachable, f"http_{status}", VerdictKind.could_not_check)


@pytest.mark.parametrize("status", GONE)
def test_404_410_and_other_4xx_read_dead_link(site: LoopbackSite, status: int) -> None:
    assert verdict_for(site, status) == (Label.unreachable, f"http_{status}", VerdictKind.dead_link)
