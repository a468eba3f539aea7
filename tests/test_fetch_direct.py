"""DirectFetcher against real HTTP(S) servers on 127.0.0.1: conversion, statuses through
interpret(), redirects, timeouts, the body cap, concurrency, headers, charsets and TLS."""

from __future__ import annotations

import gzip
import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from guardrail.core.interpret import interpret
from guardrail.core.schema import FetchedPage, Label, Reason, VerdictKind, verdict_kind
from guardrail.fetch.direct import DirectFetcher
from guardrail.fetch.ssrf import Resolver
from guardrail.retry import RetryPolicy
from guardrail.testing import LoopbackSite, Route
from tests.fixtures.pages import BOILING_PDF, article, default_routes

BOILING_SENTENCE = "pure water boils at 100 degrees Celsius (212 degrees Fahrenheit)"


async def fetch(url: str, **options: object) -> FetchedPage:
    options.setdefault("allow_private_hosts", True)
    fetcher = DirectFetcher(**options)  # type: ignore[arg-type]
    return (await fetcher.fetch_all([url]))[url]


def outcome(p: FetchedPage) -> tuple[Label | None, str | None]:
    a = interpret(p)
    return (None, None) if a.usable else (a.label, a.reason)


# -- the shared fixture pages --------------------------------------------------------------


async def test_supporting_article_becomes_clean_markdown(pages: LoopbackSite) -> None:
    p = await fetch(pages.url("/boiling"))
    assert p.original_status == 200
    assert BOILING_SENTENCE in p.text
    assert p.title == "The boiling point of water"
    assert p.content_type == "text/html"
    assert p.final_url == pages.url("/boiling") and p.redirects == []
    for boilerplate in ("About us", "Contact", "All rights reserved", "Privacy policy", "cookies"):
        assert boilerplate not in p.text
    assert interpret(p).usable


@pytest.mark.parametrize(
    ("path", "status"), [("/gone-404", 404), ("/gone-410", 410), ("/error-500", 500), ("/unavailable-503", 503)]
)
async def test_origin_errors_are_unreachable(pages: LoopbackSite, path: str, status: int) -> None:
    p = await fetch(pages.url(path))
    assert p.original_status == status
    assert outcome(p) == (Label.unreachable, f"http_{status}")


async def test_slow_page_times_out(pages: LoopbackSite) -> None:
    p = await fetch(pages.url("/slow"), timeout=0.5)  # the page answers after 3 s: only the timeout ends it
    assert p.reason == Reason.fetch_timeout.value
    assert outcome(p) == (Label.unreachable, "fetch_timeout")


async def test_redirect_chain_is_followed_and_recorded(pages: LoopbackSite) -> None:
    p = await fetch(pages.url("/redirect-1"))
    assert p.redirects == [pages.url("/redirect-1"), pages.url("/redirect-2"), pages.url("/redirect-3")]
    assert p.final_url == pages.url("/boiling")
    assert BOILING_SENTENCE in p.text
    assert interpret(p).usable


async def test_redirect_limit(pages: LoopbackSite) -> None:
    too_strict = await fetch(pages.url("/redirect-1"), max_redirects=2)
    assert too_strict.reason == Reason.too_many_redirects.value
    assert too_strict.redirects == [pages.url("/redirect-1"), pages.url("/redirect-2"), pages.url("/redirect-3")]
    exact = await fetch(pages.url("/redirect-1"), max_redirects=3)
    assert exact.reason is None and exact.final_url == pages.url("/boiling")


async def test_redirect_loop_is_too_many_redirects(pages: LoopbackSite) -> None:
    p = await fetch(pages.url("/loop-a"))
    assert p.reason == Reason.too_many_redirects.value
    assert len(p.redirects) == 6  # the default limit of 5 redirects was followed, the 6th refused
    assert outcome(p) == (Label.unreachable, "too_many_redirects")


MALFORMED_LOCATIONS = [
    "mailto:someone@example.org",
    "about:blank",
    "data:text/html,<p>hi</p>",
    "javascript:alert(1)",
    "tel:+15550100",
    "http:\\\\evil.example\\path",
]


@pytest.mark.parametrize("location", MALFORMED_LOCATIONS)
async def test_a_malformed_redirect_target_is_an_invalid_url_dead_link(
    location: str, caplog: pytest.LogCaptureFixture
) -> None:
    """httpx raises InvalidURL (not an HTTPError) out of send() for these: that is the page's broken
    link, never internal_error, and no page can fill the log with ERROR tracebacks."""
    moved = Route(status=302, headers={"Location": location})
    with LoopbackSite({"/moved": moved}) as site, caplog.at_level(logging.DEBUG):
        p = await fetch(site.url("/moved"))
    assert p.reason == Reason.invalid_url.value, p
    assert outcome(p) == (Label.unreachable, "invalid_url")
    assert verdict_kind(Label.unreachable, p.reason) == VerdictKind.dead_link
    assert max(r.levelno for r in caplog.records if r.name.startswith("guardrail")) <= logging.WARNING
    assert not any(r.exc_info for r in caplog.records), [r.getMessage() for r in caplog.records]


async def test_deep_link_redirected_to_homepage(pages: LoopbackSite) -> None:
    p = await fetch(pages.url("/articles/2019/boiling-water-deep-link"))
    assert p.final_url == pages.url("/")
    assert outcome(p) == (Label.not_found, "redirected_to_homepage")


async def test_soft_404(pages: LoopbackSite) -> None:
    p = await fetch(pages.url("/soft-404"))
    assert p.original_status == 200
    assert outcome(p) == (Label.not_found, "soft_404")


async def test_long_article_about_404_is_usable(pages: LoopbackSite) -> None:
    p = await fetch(pages.url("/article-about-404"))
    assert "404" in p.text
    assert interpret(p).usable


async def test_app_shell_is_empty_page(pages: LoopbackSite) -> None:
    assert outcome(await fetch(pages.url("/app-shell"))) == (Label.not_found, "empty_page")


async def test_bot_check_is_bot_challenge(pages: LoopbackSite) -> None:
    assert outcome(await fetch(pages.url("/bot-check"))) == (Label.not_found, "bot_challenge")


async def test_pdf_text_is_extracted(pages: LoopbackSite) -> None:
    p = await fetch(pages.url("/handbook.pdf"))
    assert p.content_type == "application/pdf"
    assert "pure water boils at 100 degrees Celsius" in p.text
    assert interpret(p).usable


async def test_plain_text_passes_through(pages: LoopbackSite) -> None:
    p = await fetch(pages.url("/notes.txt"))
    assert p.content_type == "text/plain"
    assert p.text == "Field notes.\n\nAt sea level pure water boils at 100 degrees Celsius."
    assert interpret(p).usable


async def test_image_is_unsupported(pages: LoopbackSite) -> None:
    p = await fetch(pages.url("/image.png"))
    assert p.content_type == "image/png"
    assert outcome(p) == (Label.not_found, "unsupported_content_type")


BROKEN_PDF = BOILING_PDF[: len(BOILING_PDF) // 2]  # cut off mid-file: no cross-reference table, no trailer


@pytest.mark.parametrize("content_type", ["application/pdf", "application/octet-stream"])
async def test_a_broken_pdf_is_a_verdict_naming_the_error(content_type: str, caplog: pytest.LogCaptureFixture) -> None:
    with LoopbackSite({"/broken.pdf": Route(body=BROKEN_PDF, content_type=content_type)}) as site:
        caplog.set_level(logging.WARNING, logger="guardrail")
        p = await fetch(site.url("/broken.pdf"))
    assert p.content_type == "application/pdf"
    assert outcome(p) == (Label.not_found, "unreadable_document")
    assert re.fullmatch(r"pypdf could not read the PDF: Pdf\w*Error", p.detail or ""), p.detail
    assert [r for r in caplog.records if r.name.startswith("guardrail")] == []  # the verdict says it


async def test_oversized_body_stops_at_the_cap(pages: LoopbackSite) -> None:
    p = await fetch(pages.url("/oversized"), max_bytes=1_000_000)
    assert outcome(p) == (Label.not_found, "too_large")  # stopping the read is held by the streamed test below


async def test_refused_connection_is_fetch_error() -> None:
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    p = await fetch(f"http://127.0.0.1:{port}/")
    assert outcome(p) == (Label.unreachable, "fetch_error")


def _resolver_failing_with(code: int) -> Resolver:
    async def resolve(host: str, port: int) -> list[str]:
        raise socket.gaierror(code, "resolver says no")

    return resolve


async def test_a_host_that_does_not_exist_is_host_not_found() -> None:
    fetcher = DirectFetcher(resolver=_resolver_failing_with(socket.EAI_NONAME))
    [page] = (await fetcher.fetch_all(["http://nonexistent.example/page"])).values()
    assert outcome(page) == (Label.unreachable, "host_not_found")
    assert verdict_kind(Label.unreachable, page.reason) == VerdictKind.dead_link


async def test_a_temporary_dns_failure_is_fetch_error_and_retried() -> None:
    calls: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        raise socket.gaierror(socket.EAI_AGAIN, "temporary failure in name resolution")

    fetcher = DirectFetcher(resolver=resolve, retry=RetryPolicy(attempts=3, backoff=0.01))
    [page] = (await fetcher.fetch_all(["http://flaky-dns.example/page"])).values()
    assert outcome(page) == (Label.unreachable, "fetch_error")
    assert verdict_kind(Label.unreachable, page.reason) == VerdictKind.could_not_check
    assert calls == ["flaky-dns.example"] * 3


async def test_fetch_all_never_raises_and_keys_by_url(pages: LoopbackSite) -> None:
    urls = [
        pages.url("/boiling"),
        "not a url",
        "ftp://example.org/",
        pages.url("/gone-404"),
        "http://nonexistent.invalid/",
    ]
    fetcher = DirectFetcher(allow_private_hosts=True, resolver=_resolver_failing_with(socket.EAI_NONAME))
    result = await fetcher.fetch_all(urls)
    assert list(result) == urls
    assert result["http://nonexistent.invalid/"].reason == Reason.host_not_found.value
    assert result["not a url"].reason == Reason.invalid_url.value
    assert result["ftp://example.org/"].reason == Reason.invalid_url.value
    assert all(p.url == u and p.fetcher == "direct" for u, p in result.items())


# -- a server of our own for behaviour the shared fixtures do not cover ------------------------


class Probe:
    """Counters shared with the handlers of :func:`probe_server`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.headers: list[dict[str, str]] = []
        self.oversized_written = 0
        self.oversized_done = threading.Event()


@pytest.fixture(scope="module")
def probe() -> Probe:
    return Probe()


@pytest.fixture(scope="module")
def probe_server(probe: Probe) -> Iterator[LoopbackSite]:
    def slow_counted(handler: BaseHTTPRequestHandler) -> None:
        with probe.lock:
            probe.in_flight += 1
            probe.max_in_flight = max(probe.max_in_flight, probe.in_flight)
        deadline = time.monotonic() + 10  # until three are in flight: the bound is reached however slowly
        while probe.max_in_flight < 3 and time.monotonic() < deadline:  # requests come
            time.sleep(0.005)
        time.sleep(0.3)  # then more could pile up, were the bound not kept
        with probe.lock:
            probe.in_flight -= 1
        _respond(handler, 200, article("Waiting", ["A page that took a while to serve to this client."]).encode())

    def echo_headers(handler: BaseHTTPRequestHandler) -> None:
        with probe.lock:
            probe.headers.append(dict(handler.headers.items()))
        _respond(handler, 200, b"headers recorded", "text/plain")

    def counted_oversized(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Connection", "close")
        handler.end_headers()
        chunk = b"<p>" + b"water boils " * 8000 + b"</p>\n"
        try:
            for _ in range(2000):  # ~190 MB if nobody hangs up
                handler.wfile.write(chunk)
                probe.oversized_written += len(chunk)
        except OSError:
            pass
        finally:
            probe.oversized_done.set()
        handler.close_connection = True

    def lying_length(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", "50000000")
        handler.end_headers()
        handler.wfile.write(b"<p>only a little</p>")
        handler.close_connection = True

    def drip(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.end_headers()
        try:
            for _ in range(100):
                handler.wfile.write(b"x")
                handler.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass
        handler.close_connection = True

    latin1 = article("Café au lait", ["Le café crème coûte 3 €, à déguster près de la fenêtre du château."])
    cyrillic = (
        '<html><head><meta charset="windows-1251"><title>Вода</title></head><body><article>'
        "<p>Вода кипит при температуре 100 градусов Цельсия на уровне моря.</p></article></body></html>"
    )
    table = article(
        "Boiling points",
        ['Boiling points at sea level, from <a href="https://example.org/data">the handbook data</a>.'],
    ).replace(
        "</article>",
        "<table><tr><th>Liquid</th><th>Boiling point</th></tr><tr><td>Water</td><td>100 °C</td></tr>"
        "<tr><td>Ethanol</td><td>78 °C</td></tr></table></article>",
    )
    routes = {
        "/slow-counted": Route(handler=slow_counted),
        "/echo-headers": Route(handler=echo_headers),
        "/counted-oversized": Route(handler=counted_oversized),
        "/lying-length": Route(handler=lying_length),
        "/drip": Route(handler=drip),
        "/once": Route(body=article("Once", ["Fetched once, however many times it is cited in one call."])),
        "/latin1": Route(body=latin1.encode("cp1252"), content_type="text/html; charset=ISO-8859-1"),
        "/cyrillic": Route(body=cyrillic.encode("cp1251"), content_type="text/html"),
        "/utf8-undeclared": Route(body=latin1.encode("utf-8"), content_type="text/html"),
        "/text-as-html": Route(body="Water boils at 100 degrees Celsius at sea level.", content_type="text/html"),
        "/readme.md": Route(
            body="# Field manual\n\nWater boils at 100 degrees Celsius at sea level.\n",
            content_type="text/markdown; charset=utf-8",
        ),
        "/octet-pdf": Route(body=BOILING_PDF, content_type="application/octet-stream"),
        "/gzipped": Route(
            body=gzip.compress(article("Compressed", ["This page travelled gzip-compressed over the wire."]).encode()),
            headers={"Content-Encoding": "gzip"},
        ),
        "/table": Route(body=table),
        "/json": Route(body='{"boiling_point": 100}', content_type="application/json"),
        "/no-location": Route(status=302, body=""),
    }
    server = LoopbackSite(routes).start()
    yield server
    server.stop()


def _respond(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str = "text/html") -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


async def test_each_unique_url_is_fetched_once(probe_server: LoopbackSite) -> None:
    url = probe_server.url("/once")
    result = await DirectFetcher(allow_private_hosts=True).fetch_all([url, url, url])
    assert list(result) == [url]
    assert probe_server.hits["/once"] == 1


async def test_concurrency_is_bounded(probe_server: LoopbackSite, probe: Probe) -> None:
    urls = [probe_server.url(f"/slow-counted?i={i}") for i in range(9)]
    result = await DirectFetcher(allow_private_hosts=True, concurrency=3).fetch_all(urls)
    assert all(p.reason is None for p in result.values())
    assert probe.max_in_flight == 3  # never more than the bound, and the bound was used


async def test_sends_user_agent_and_accept(probe_server: LoopbackSite, probe: Probe) -> None:
    await fetch(probe_server.url("/echo-headers"))
    sent = {k.lower(): v for k, v in probe.headers[-1].items()}
    assert "citation-guardrail" in sent["user-agent"]
    assert "text/html" in sent["accept"] and "application/pdf" in sent["accept"]
    assert sent["host"] == f"127.0.0.1:{probe_server.port}"
    custom = await fetch(probe_server.url("/echo-headers"), user_agent="my-bot/1.0")
    assert custom.reason is None
    assert {k.lower(): v for k, v in probe.headers[-1].items()}["user-agent"] == "my-bot/1.0"


async def test_host_header_carries_the_name_while_connecting_to_the_vetted_ip(
    probe_server: LoopbackSite, probe: Probe
) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    fetcher = DirectFetcher(allowed_hosts=[f"docs.example.test:{probe_server.port}"], resolver=resolver)
    url = f"http://docs.example.test:{probe_server.port}/echo-headers"
    assert (await fetcher.fetch_all([url]))[url].reason is None
    assert {k.lower(): v for k, v in probe.headers[-1].items()}["host"] == f"docs.example.test:{probe_server.port}"


async def test_streamed_body_is_cut_at_the_cap(probe_server: LoopbackSite, probe: Probe) -> None:
    """The server counts what it managed to send: far less than the ~190 MB it would send to a
    reader that did not stop (the slack is the kernel's socket buffers)."""
    p = await fetch(probe_server.url("/counted-oversized"), max_bytes=1_000_000)
    assert p.reason == Reason.too_large.value
    assert probe.oversized_done.wait(10)
    assert probe.oversized_written < 20_000_000, probe.oversized_written


async def test_declared_length_over_the_cap_is_refused_before_reading(probe_server: LoopbackSite) -> None:
    # The body is truncated: reading it would end in a protocol error, not too_large.
    p = await fetch(probe_server.url("/lying-length"), max_bytes=1_000_000)
    assert p.reason == Reason.too_large.value


async def test_total_time_per_page_is_bounded(probe_server: LoopbackSite) -> None:
    """A body dripping one byte every 0.2 s never trips the read timeout; the page budget stops it."""
    p = await fetch(probe_server.url("/drip"), timeout=1.0, total_timeout=1.5)
    assert p.reason == Reason.fetch_timeout.value  # the whole drip takes 20 s: only the budget ends it sooner


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/latin1", "Le café crème coûte 3 €, à déguster près de la fenêtre du château."),
        ("/cyrillic", "Вода кипит при температуре 100 градусов Цельсия на уровне моря."),
        ("/utf8-undeclared", "Le café crème coûte 3 €, à déguster près de la fenêtre du château."),
    ],
)
async def test_charsets_are_decoded(probe_server: LoopbackSite, path: str, expected: str) -> None:
    p = await fetch(probe_server.url(path))
    assert expected in p.text


async def test_text_served_as_html_falls_back_to_its_visible_text(probe_server: LoopbackSite) -> None:
    p = await fetch(probe_server.url("/text-as-html"))
    assert p.text == "Water boils at 100 degrees Celsius at sea level."
    assert interpret(p).usable


async def test_markdown_passes_through_with_its_title(probe_server: LoopbackSite) -> None:
    p = await fetch(probe_server.url("/readme.md"))
    assert p.content_type == "text/markdown"
    assert p.title == "Field manual"
    assert "Water boils at 100 degrees Celsius at sea level." in p.text


async def test_pdf_served_as_octet_stream_is_sniffed(probe_server: LoopbackSite) -> None:
    p = await fetch(probe_server.url("/octet-pdf"))
    assert p.content_type == "application/pdf"
    assert "pure water boils at 100 degrees Celsius" in p.text


async def test_gzip_bodies_are_decoded(probe_server: LoopbackSite) -> None:
    p = await fetch(probe_server.url("/gzipped"))
    assert "This page travelled gzip-compressed over the wire." in p.text


async def test_links_and_tables_survive_conversion(probe_server: LoopbackSite) -> None:
    p = await fetch(probe_server.url("/table"))
    assert "[the handbook data](https://example.org/data)" in p.text
    assert "| Water | 100 °C |" in p.text


async def test_json_is_unsupported_and_not_downloaded(probe_server: LoopbackSite) -> None:
    p = await fetch(probe_server.url("/json"))
    assert outcome(p) == (Label.not_found, "unsupported_content_type")


async def test_redirect_status_without_location_is_an_http_reason(probe_server: LoopbackSite) -> None:
    assert outcome(await fetch(probe_server.url("/no-location"))) == (Label.unreachable, "http_302")


def test_constructor_validates_options() -> None:
    with pytest.raises(ValueError):
        DirectFetcher(concurrency=0)
    with pytest.raises(ValueError):
        DirectFetcher(max_bytes=0)
    with pytest.raises(ValueError):
        DirectFetcher(timeout=0)
    from guardrail.fetch.ssrf import SsrfPolicy

    with pytest.raises(ValueError):
        DirectFetcher(policy=SsrfPolicy(), allow_private_hosts=True)


def test_from_settings_reads_the_fetch_settings() -> None:
    from guardrail.settings import Settings

    settings = Settings.from_env(
        {
            "GUARDRAIL_FETCH_TIMEOUT": "3.5",
            "GUARDRAIL_MAX_BYTES": "12345",
            "GUARDRAIL_MAX_REDIRECTS": "2",
            "GUARDRAIL_CONCURRENCY": "4",
            "GUARDRAIL_ALLOW_PRIVATE_HOSTS": "yes",
        }
    )
    f = DirectFetcher.from_settings(settings)
    assert (f.timeout, f.max_bytes, f.max_redirects, f.concurrency) == (3.5, 12345, 2, 4)
    assert f.policy.allow_private is True
    assert DirectFetcher.from_settings(Settings()).policy.allow_private is False
    assert "DirectFetcher(" in repr(f)


# -- TLS: connect to the vetted IP, verify the certificate against the cited name ---------------


@pytest.fixture(scope="module")
def tls_server() -> Iterator[tuple[LoopbackSite, ssl.SSLContext, list[str]]]:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("pinned.test").configure_cert(server_ctx)
    names: list[str] = []
    server_ctx.sni_callback = lambda sock, name, ctx: names.append(name)  # type: ignore[assignment,misc,return-value]
    server = LoopbackSite(default_routes())
    server._httpd.socket = server_ctx.wrap_socket(server._httpd.socket, server_side=True)
    server.start()
    client_ctx = ssl.create_default_context()
    ca.configure_trust(client_ctx)
    yield server, client_ctx, names
    server.stop()


async def _loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


async def test_https_verifies_the_cited_name_on_the_pinned_address(
    tls_server: tuple[LoopbackSite, ssl.SSLContext, list[str]],
) -> None:
    server, client_ctx, names = tls_server
    fetcher = DirectFetcher(allow_private_hosts=True, resolver=_loopback, verify=client_ctx)
    good = f"https://pinned.test:{server.port}/boiling"
    wrong = f"https://other-name.test:{server.port}/boiling"
    result = await fetcher.fetch_all([good, wrong])
    assert result[good].reason is None and BOILING_SENTENCE in result[good].text
    assert "pinned.test" in names  # the TLS server name was the cited host, not the IP
    assert result[wrong].reason == Reason.fetch_error.value  # certificate is not for that name


async def test_https_with_an_untrusted_certificate_is_fetch_error(
    tls_server: tuple[LoopbackSite, ssl.SSLContext, list[str]],
) -> None:
    server, _, _ = tls_server
    url = f"https://pinned.test:{server.port}/boiling"
    p = (await DirectFetcher(allow_private_hosts=True, resolver=_loopback).fetch_all([url]))[url]
    assert p.reason == Reason.fetch_error.value


# -- through the Verifier ----------------------------------------------------------------------


async def test_verifier_end_to_end_with_the_direct_fetcher(pages: LoopbackSite) -> None:
    from guardrail.testing import HashEmbedder, OverlapJudge
    from guardrail.verifier import Verifier

    claim = "Water boils at 100 degrees Celsius at sea level."
    verifier = Verifier(allow_private_hosts=True, judge=OverlapJudge(), embedder=HashEmbedder())
    assert verifier.fetcher.name == "direct"
    urls = [pages.url("/boiling"), pages.url("/old-report"), pages.url("/gone-404")]
    report = await verifier.averify(claim, urls)
    by_url = {c.url: c for c in report.citations}
    assert by_url[urls[0]].label == Label.supported
    assert "100 degrees Celsius" in (by_url[urls[0]].evidence_quote or "")
    assert by_url[urls[1]].label == Label.contradicted
    assert (by_url[urls[2]].label, by_url[urls[2]].reason) == (Label.unreachable, "http_404")
    assert by_url[urls[2]].original_status == 404
    assert report.overall == Label.contradicted


def test_verifier_sync_entry_point(pages: LoopbackSite) -> None:
    from guardrail.testing import HashEmbedder, OverlapJudge
    from guardrail.verifier import Verifier

    verifier = Verifier(allow_private_hosts=True, judge=OverlapJudge(), embedder=HashEmbedder())
    report = verifier.verify("Water boils at 100 degrees Celsius at sea level.", [pages.url("/boiling")])
    assert report.overall == Label.supported


async def test_the_tls_context_is_built_once_per_fetcher_off_the_event_loop() -> None:
    """Loading the CA bundle takes ~0.1 s: done once per fetcher (in a thread), not per call."""
    import ssl

    fetcher = DirectFetcher()
    first = await fetcher._tls()
    assert await fetcher._tls() is first and first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname
    custom = ssl.create_default_context()
    assert await DirectFetcher(verify=custom)._tls() is custom
    assert (await DirectFetcher(verify=False)._tls()).verify_mode == ssl.CERT_NONE


# -- charsets that are no text encodings of the web ---------------------------------------------

CAFE = "Le café crème coûte 3 €, à déguster près de la fenêtre du château."


@pytest.fixture(scope="module")
def charset_server() -> Iterator[LoopbackSite]:
    page = article("Café", [CAFE]).replace('<meta charset="utf-8">', "")  # the header alone declares
    cyrillic = (
        '<html><head><meta charset="windows-1251"><title>Вода</title></head><body><article>'
        "<p>Вода кипит при температуре 100 градусов Цельсия на уровне моря.</p></article></body></html>"
    )
    routes: dict[str, Route] = {}
    for label in ("rot13", "zlib", "idna", "utf-7", "unicode_escape", "undefined", "punycode", "base64", "x-no-such"):
        routes[f"/utf8/{label}"] = Route(body=page.encode("utf-8"), content_type=f"text/html; charset={label}")
        routes[f"/cp1252/{label}"] = Route(body=page.encode("cp1252"), content_type=f"text/html; charset={label}")
        routes[f"/text/{label}"] = Route(body=CAFE.encode("utf-8"), content_type=f"text/plain; charset={label}")
    routes["/meta-after-bogus-header"] = Route(body=cyrillic.encode("cp1251"), content_type="text/html; charset=rot13")
    routes["/bogus-meta"] = Route(
        body=page.replace("<head>", '<head><meta charset="zlib">').encode(), content_type="text/html"
    )
    routes["/whatwg-label"] = Route(
        body=page.encode("cp874", errors="replace"), content_type="text/html; charset=windows-874"
    )
    server = LoopbackSite(routes).start()
    yield server
    server.stop()


@pytest.mark.parametrize(
    "label", ["rot13", "zlib", "idna", "utf-7", "unicode_escape", "undefined", "punycode", "base64"]
)
@pytest.mark.parametrize("encoding", ["utf8", "cp1252", "text"])
async def test_a_charset_that_is_no_web_text_encoding_falls_back_to_detection(
    charset_server: LoopbackSite, label: str, encoding: str
) -> None:
    """Python has codecs named rot13, zlib, idna...: a page declaring one is read as UTF-8, or in
    the detected encoding when it is not UTF-8 (here windows-1252), like a page declaring nothing."""
    p = await fetch(charset_server.url(f"/{encoding}/{label}"))
    assert p.reason is None, p.reason
    assert CAFE in p.text
    assert interpret(p).usable


async def test_a_bogus_header_charset_gives_way_to_the_meta_charset(charset_server: LoopbackSite) -> None:
    p = await fetch(charset_server.url("/meta-after-bogus-header"))
    assert "Вода кипит при температуре 100 градусов Цельсия на уровне моря." in p.text


async def test_a_bogus_meta_charset_is_passed_over(charset_server: LoopbackSite) -> None:
    assert CAFE in (await fetch(charset_server.url("/bogus-meta"))).text


UNDECLARED = {
    "cp1251": (
        "Вода",
        "Вода кипит при температуре 100 градусов Цельсия на уровне моря. Это известно каждому школьнику.",
    ),
    "shift_jis": ("水", "水は海面で摂氏100度で沸騰します。これは誰もが知っていることです。"),
    "koi8-r": ("Лёд", "Лёд тает при нуле градусов Цельсия, если давление нормальное."),
    "cp1252": ("Café", CAFE),
}


@pytest.mark.parametrize("content_type", ["text/html", "text/plain"])
@pytest.mark.parametrize("encoding", list(UNDECLARED))
async def test_a_page_that_declares_no_charset_is_read_in_the_one_detected(encoding: str, content_type: str) -> None:
    title, sentence = UNDECLARED[encoding]
    html_page = f"<html><head><title>{title}</title></head><body><article><p>{sentence}</p></article></body></html>"
    body = (html_page if content_type == "text/html" else sentence).encode(encoding)
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")  # the case detection is for: not UTF-8, nothing declared
    with LoopbackSite({"/page": Route(body=body, content_type=content_type)}) as site:
        p = await fetch(site.url("/page"))
    assert sentence in p.text


def test_the_web_encodings_are_text_codecs_python_knows() -> None:
    import codecs

    from guardrail.fetch.convert import WEB_ENCODINGS, decode_body

    for name in WEB_ENCODINGS:
        info = codecs.lookup(name)
        assert info.name == name and info._is_text_encoding, name  # type: ignore[attr-defined]
    assert decode_body("ภาษาไทย".encode("cp874"), "text/plain; charset=windows-874") == "ภาษาไทย"
    assert decode_body("Вода".encode("mac-cyrillic"), "text/plain; charset=x-mac-cyrillic") == "Вода"
