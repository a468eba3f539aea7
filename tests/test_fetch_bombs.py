"""Decompression bombs and endless bodies against the DirectFetcher, from real loopback servers:
the decoded size is capped step by step, only the codings we ask for are read, and the memory a
fetch takes (traced by tracemalloc) stays near the cap whatever the body would decode to."""

from __future__ import annotations

import contextlib
import gzip
import tracemalloc
import zlib
from collections.abc import Awaitable, Iterator
from http.server import BaseHTTPRequestHandler

import httpx
import pytest

from guardrail.core.interpret import interpret
from guardrail.core.schema import FetchedPage, Label, Reason
from guardrail.fetch._http import DECODE_STEP, UnsupportedEncoding, _Decoder, content_coding
from guardrail.fetch.direct import DirectFetcher
from guardrail.retry import RetryPolicy
from guardrail.testing import LoopbackSite, Route
from tests.fixtures import bombs
from tests.fixtures.pages import article

CAP = 1_000_000
"""The body cap the bomb tests fetch with."""
SLACK = 4 * CAP
"""What a fetch may take above its start: the decoded body, its join, buffers (measured: 1.5 MB;
2.5 MB on the first fetch of a process)."""
MIB = 1 << 20
PAGE = article("Compressed", ["This page travelled compressed over the wire and reads the same."]).encode()


def _twice_declared(handler: BaseHTTPRequestHandler) -> None:
    """``Content-Encoding: gzip`` sent as two headers: stacked codings all the same."""
    body = bombs.gzip_of_gzip(64 * MIB)
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Encoding", "gzip")
    handler.send_header("Content-Encoding", "gzip")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    with contextlib.suppress(OSError):
        handler.wfile.write(body)


def _encoded(body: bytes, coding: str) -> Route:
    return Route(body=body, content_type="text/html", headers={"Content-Encoding": coding})


@pytest.fixture(scope="module")
def bomb_server() -> Iterator[LoopbackSite]:
    exact = b"<p>" + b"x" * (CAP - 7) + b"</p>"  # decodes to exactly the cap
    routes = {
        "/gzip": _encoded(bombs.gzip_zeros(128 * MIB), "gzip"),
        "/x-gzip": _encoded(bombs.gzip_zeros(128 * MIB), "x-gzip"),
        "/deflate": _encoded(bombs.zlib_zeros(128 * MIB), "deflate"),
        "/raw-deflate": _encoded(bombs.raw_deflate_zeros(128 * MIB), "deflate"),
        "/gzip-gzip": _encoded(bombs.gzip_of_gzip(64 * MIB), "gzip, gzip"),
        "/gzip-twice-declared": Route(handler=_twice_declared),
        "/zstd": _encoded(bombs.zstd_zeros(256 * MIB), "zstd"),
        # The coding is refused by its name before a byte is read, so any body stands for a
        # brotli bomb here (no brotli module is installed to build a real one).
        "/br": _encoded(b"\x1b\xff\xff\xff" * 4096, "br"),
        "/compress": _encoded(b"\x1f\x9d\x90" + bytes(4096), "compress"),
        "/endless": Route(handler=bombs.endless_chunked),
        "/page-gzip": _encoded(gzip.compress(PAGE), "gzip"),
        "/page-deflate": _encoded(zlib.compress(PAGE), "deflate"),
        "/page-raw-deflate": _encoded(zlib.compress(PAGE, wbits=-15), "deflate"),
        "/page-identity": _encoded(PAGE, "identity"),
        "/exact-cap": _encoded(gzip.compress(exact), "gzip"),
        "/over-cap-by-one": _encoded(gzip.compress(exact + b" "), "gzip"),
        "/corrupt-gzip": _encoded(b"\x1f\x8b\x08\x00" + bytes(64), "gzip"),
    }
    server = LoopbackSite(routes).start()
    yield server
    server.stop()


async def _traced(work: Awaitable[FetchedPage]) -> tuple[FetchedPage, int]:
    """Run ``work``; return its page and the peak of traced memory above the start, in bytes."""
    started_here = not tracemalloc.is_tracing()
    if started_here:
        tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        page = await work
        return page, tracemalloc.get_traced_memory()[1] - base
    finally:
        if started_here:
            tracemalloc.stop()


async def _fetch(server: LoopbackSite, path: str) -> FetchedPage:
    url = server.url(path)
    fetcher = DirectFetcher(allow_private_hosts=True, max_bytes=CAP, timeout=10, retry=RetryPolicy(attempts=1))
    return (await fetcher.fetch_all([url]))[url]


@pytest.mark.parametrize("path", ["/gzip", "/x-gzip", "/deflate", "/raw-deflate", "/endless"])
async def test_a_bomb_in_a_coding_we_asked_for_stops_at_the_cap(bomb_server: LoopbackSite, path: str) -> None:
    """128 MiB of zeros (an endless body for identity): too_large, with memory near the cap."""
    page, peak = await _traced(_fetch(bomb_server, path))
    assert page.reason == Reason.too_large.value
    assert (interpret(page).label, interpret(page).reason) == (Label.not_found, "too_large")
    assert peak < SLACK, f"{path}: the fetch took {peak / MIB:.1f} MiB for a {CAP / MIB:.1f} MiB cap"


@pytest.mark.parametrize("path", ["/gzip-gzip", "/gzip-twice-declared", "/zstd", "/br", "/compress"])
async def test_a_coding_we_did_not_ask_for_is_refused_unread(bomb_server: LoopbackSite, path: str) -> None:
    """Stacked codings (one header or two), zstd, brotli, compress: refused before decoding."""
    page, peak = await _traced(_fetch(bomb_server, path))
    assert page.reason == Reason.unsupported_content_encoding.value
    assert page.original_status == 200 and page.text == ""
    assert (interpret(page).label, interpret(page).reason) == (Label.not_found, "unsupported_content_encoding")
    assert peak < SLACK


@pytest.mark.parametrize("path", ["/page-gzip", "/page-deflate", "/page-raw-deflate", "/page-identity"])
async def test_pages_in_the_codings_we_ask_for_read_normally(bomb_server: LoopbackSite, path: str) -> None:
    page = await _fetch(bomb_server, path)
    assert page.reason is None
    assert "This page travelled compressed over the wire and reads the same." in page.text


async def test_the_cap_counts_decoded_bytes_exactly(bomb_server: LoopbackSite) -> None:
    """A body decoding to exactly the cap is read; one byte more is too large."""
    exact = await _fetch(bomb_server, "/exact-cap")
    assert exact.reason is None and "xxxx" in exact.text
    over = await _fetch(bomb_server, "/over-cap-by-one")
    assert over.reason == Reason.too_large.value


async def test_a_corrupt_gzip_body_is_a_fetch_error(bomb_server: LoopbackSite) -> None:
    page = await _fetch(bomb_server, "/corrupt-gzip")
    assert page.reason == Reason.fetch_error.value


def test_decoding_advances_in_bounded_steps() -> None:
    """Each step of a bomb yields at most DECODE_STEP bytes, so the cap is checked that often."""
    decoder = _Decoder("gzip")
    body = bombs.gzip_zeros(16 * MIB)
    pieces = [len(p) for p in decoder.feed(body)] + [len(p) for p in decoder.finish()]
    assert sum(pieces) == 16 * MIB
    assert max(pieces) == DECODE_STEP and len(pieces) == 16 * MIB // DECODE_STEP


@pytest.mark.parametrize(
    ("header", "coding"),
    [(None, None), ("", None), ("identity", None), ("GZIP", "gzip"), (" x-gzip ", "x-gzip"), ("deflate", "deflate")],
)
def test_the_codings_we_read(header: str | None, coding: str | None) -> None:
    headers = {} if header is None else {"Content-Encoding": header}
    assert content_coding(httpx.Response(200, headers=headers)) == coding


@pytest.mark.parametrize("header", ["gzip, gzip", "deflate, gzip", "gzip, br", "br", "zstd", "compress", "xz"])
def test_other_codings_are_refused(header: str) -> None:
    with pytest.raises(UnsupportedEncoding):
        content_coding(httpx.Response(200, headers={"Content-Encoding": header}))
