"""HTTP details shared by the fetchers: request headers and a body read that stops at a cap."""

from __future__ import annotations

from importlib import metadata

import httpx

try:
    __version__ = metadata.version("citation-guardrail")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0"

DEFAULT_USER_AGENT = (
    f"Mozilla/5.0 (compatible; citation-guardrail/{__version__}; +https://pypi.org/project/citation-guardrail/)"
)
"""Says who is fetching (sites block anonymous clients more often than named ones)."""

DEFAULT_ACCEPT = (
    "text/html,application/xhtml+xml;q=0.9,application/pdf;q=0.9,"
    "text/markdown;q=0.8,text/plain;q=0.8,*/*;q=0.1"
)
"""The formats the fetchers can read, best first."""

DEFAULT_ACCEPT_LANGUAGE = "en;q=0.9,*;q=0.5"


class BodyTooLarge(Exception):
    """The body passed the cap; ``read`` is how many bytes had arrived when reading stopped."""

    def __init__(self, limit: int, read: int) -> None:
        super().__init__(f"body passed the {limit}-byte cap ({read} bytes read, download stopped)")
        self.limit = limit
        self.read = read


def declared_length(response: httpx.Response) -> int | None:
    """The Content-Length the server announced, if it is a number."""
    value = response.headers.get("content-length")
    if value is None:
        return None
    try:
        return int(value.split(",")[0].strip())
    except ValueError:
        return None


async def read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    """Read a streamed body, raising :class:`BodyTooLarge` as soon as it passes ``max_bytes``.

    Counts decoded bytes (after gzip/deflate), so a compressed bomb is stopped as well; the
    caller closes the response, which drops the connection instead of draining it.
    """
    length = declared_length(response)
    if length is not None and length > max_bytes:
        raise BodyTooLarge(max_bytes, 0)
    chunks: list[bytes] = []
    total = 0
    async for chunk in response.aiter_bytes():
        total += len(chunk)
        if total > max_bytes:
            raise BodyTooLarge(max_bytes, total)
        chunks.append(chunk)
    return b"".join(chunks)
