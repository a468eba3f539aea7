"""Fetching cited pages: the Fetcher protocol and its implementations."""

from __future__ import annotations

from guardrail.fetch.base import Fetcher
from guardrail.settings import Settings

__all__ = ["Fetcher", "fetcher_from_settings"]


def fetcher_from_settings(settings: Settings) -> Fetcher:
    """Crawlbase when ``CRAWLBASE_TOKEN`` is set, else direct HTTP."""
    if settings.crawlbase_token is not None:
        from guardrail.fetch.crawlbase import CrawlbaseFetcher

        return CrawlbaseFetcher.from_settings(settings)
    from guardrail.fetch.direct import DirectFetcher

    return DirectFetcher.from_settings(settings)
