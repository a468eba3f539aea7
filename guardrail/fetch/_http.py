"""HTTP details shared by the fetchers: request headers, and a body read that decodes its content
coding in small bounded steps and stops at a cap on the *decoded* size.

Only the content codings we ask for are read (``Accept-Encoding: gzip, deflate``), one layer
deep: a body in any other coding (``br``, ``zstd``, ``compress``) or in stacked codings
(``gzip, gzip``) raises :class:`UnsupportedEncoding` before a byte of it is read. Decoding is
ours, not httpx's: httpx inflates a whole network chunk at once (and each stacked layer in turn),
so a 3.5 KB ``gzip, gzip`` body grew to gigabytes before any cap could look at it. Here each
step inflates at most :data:`DECODE_STEP` bytes, the cap is checked after every step, and the
event loop gets a turn between steps, so memory stays near the cap and no step blocks for long.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Iterator
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
    "text/html,application/xhtml+xml;q=0.9,application/pdf;q=0.9,text/markdown;q=0.8,text/plain;q=0.8,*/*;q=0.1"
)
"""The formats the fetchers can read, best first."""

DEFAULT_ACCEPT_LANGUAGE = "en;q=0.9,*;q=0.5"

ACCEPT_ENCODING = "gzip, deflate"
"""The content codings the fetchers ask for, and the only ones :func:`read_capped` reads."""

DECODE_STEP = 64 * 1024
"""The most bytes one decoding step produces before the cap is checked again."""

_GZIP = frozenset({"gzip", "x-gzip"})
_DEFLATE = frozenset({"deflate"})


class BodyTooLarge(Exception):
    """The body passed the cap; ``read`` is how many bytes had arrived when reading stopped."""

    def __init__(self, limit: int, read: int) -> None:
        super().__init__(f"body passed the {limit}-byte cap ({read} bytes read, download stopped)")
        self.limit = limit
        self.read = read


class UnsupportedEncoding(Exception):
    """The body comes in a content coding we did not ask for, or in several stacked; not read."""

    def __init__(self, encoding: str) -> None:
        super().__init__(f"Content-Encoding {encoding!r} is not one we accept ({ACCEPT_ENCODING}, one layer)")
        self.encoding = encoding


def declared_length(response: httpx.Response) -> int | None:
    """The Content-Length the server announced, if it is a number."""
    value = response.headers.get("content-length")
    if value is None:
        return None
    try:
        return int(value.split(",")[0].strip())
    except ValueError:
        return None


class _Decoder:
    """Undoes one content coding in bounded steps: :meth:`feed` and :meth:`finish` yield pieces of
    at most :data:`DECODE_STEP` bytes. Identity when ``coding`` is None."""

    _HEAD_KEPT = 1024

    def __init__(self, coding: str | None) -> None:
        self.coding = coding
        self._zlib: zlib._Decompress | None = None
        self._head: bytes | None = None  # deflate: the input so far, until output shows its framing
        if coding in _GZIP:
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding in _DEFLATE:
            self._zlib = zlib.decompressobj()  # zlib-wrapped, as the RFC says; raw deflate tried next
            self._head = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of the next ``data``."""
        if self._zlib is None:
            if data:
                yield data
            return
        if self._head is not None:
            self._head += data  # kept while no output has shown the framing (a few bytes in practice)
        yield from self._inflate(data)
        if self._head is not None and len(self._head) > self._HEAD_KEPT:
            self._head = None

    def finish(self) -> Iterator[bytes]:
        """Whatever output the decompressor still holds, in bounded pieces."""
        if self._zlib is not None:
            yield from self._inflate(b"")

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        while self._zlib is not None and not self._zlib.eof:
            try:
                piece = self._zlib.decompress(data, DECODE_STEP)
            except zlib.error as exc:
                if self._head is None:
                    raise httpx.DecodingError(f"could not decode the {self.coding} body: {exc}") from None
                # Many servers send raw deflate under "deflate": start again without the wrapper.
                self._zlib, data, self._head = zlib.decompressobj(-zlib.MAX_WBITS), self._head, None
                continue
            if piece:
                self._head = None  # output came: the framing is settled
                yield piece
            data = self._zlib.unconsumed_tail
            if not data and len(piece) < DECODE_STEP:
                return  # input used up and no output held back


def content_coding(response: httpx.Response) -> str | None:
    """The one content coding of ``response`` we will undo (None: identity); raises
    :class:`UnsupportedEncoding` for any other coding, or several stacked (repeated headers too)."""
    header = response.headers.get("content-encoding") or ""
    codings = [c.strip().lower() for c in header.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return None
    if len(codings) > 1 or codings[0] not in _GZIP | _DEFLATE:
        raise UnsupportedEncoding(header.strip())
    return codings[0]


async def read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    """Read and decode a streamed body, raising :class:`BodyTooLarge` as soon as the decoded bytes
    pass ``max_bytes`` (a compressed bomb is stopped one step past the cap) and
    :class:`UnsupportedEncoding` before reading a body in a coding we did not ask for.

    The caller closes the response, which drops the connection instead of draining it.
    """
    decoder = _Decoder(content_coding(response))
    length = declared_length(response)
    if length is not None and length > max_bytes:
        raise BodyTooLarge(max_bytes, 0)
    chunks: list[bytes] = []
    total = 0

    def take(pieces: Iterator[bytes]) -> Iterator[None]:
        nonlocal total
        for piece in pieces:
            total += len(piece)
            if total > max_bytes:
                raise BodyTooLarge(max_bytes, total)
            chunks.append(piece)
            yield

    async for raw in response.aiter_raw():
        for _ in take(decoder.feed(raw)):
            await asyncio.sleep(0)  # one bounded step at a time: let the event loop breathe
    for _ in take(decoder.finish()):
        await asyncio.sleep(0)
    return b"".join(chunks)
