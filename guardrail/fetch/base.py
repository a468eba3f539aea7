"""The Fetcher protocol: URLs in, one FetchedPage per unique URL out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from guardrail.core.schema import FetchedPage


@runtime_checkable
class Fetcher(Protocol):
    """Fetches cited pages and turns them into readable markdown.

    ``fetch_all`` fetches each unique URL once, concurrently under the fetcher's
    bound, and never raises for a page that fails: the failure is a FetchedPage
    with ``reason`` set.
    """

    name: str

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, FetchedPage]:
        """Fetch every unique URL of ``urls``; the result is keyed by the URL as given."""
        ...
