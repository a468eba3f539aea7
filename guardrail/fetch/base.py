"""The Fetcher protocol (URLs in, one FetchedPage per unique URL out) and the PageStore protocol a
page cache speaks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from guardrail.core.schema import FetchedPage


@runtime_checkable
class Fetcher(Protocol):
    """Fetches cited pages and turns them into readable markdown.

    ``fetch_all`` fetches each unique URL once, concurrently under the fetcher's
    bound, and never raises for a page that fails: the failure is a FetchedPage
    with ``reason`` set. ``cache_options`` names what changes the page a URL gives
    (size cap, SSRF openings, API endpoint...: never a secret), so that a page cache
    never serves a page fetched under other options.
    """

    name: str

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, FetchedPage]:
        """Fetch every unique URL of ``urls``; the result is keyed by the URL as given."""
        ...

    def cache_options(self) -> Mapping[str, object]:
        """The options that change the page fetched for a URL (JSON values, no secrets)."""
        ...


class PageStore(Protocol):
    """Where fetched pages are kept between calls (the SQLite page cache speaks it).

    Both methods block (callers run them in a worker thread) and may raise: a store that cannot
    be used only costs time, so its failures are logged and worked around, never fatal.
    """

    def get_many(
        self, urls: Iterable[str], *, fetcher: str, options: Mapping[str, object] | None = None
    ) -> dict[str, FetchedPage]:
        """The fresh stored pages of those ``urls`` that have one, keyed by URL."""
        ...

    def put_many(
        self, pages: Mapping[str, FetchedPage], *, fetcher: str, options: Mapping[str, object] | None = None
    ) -> int:
        """Store the pages worth keeping; returns how many were stored."""
        ...
