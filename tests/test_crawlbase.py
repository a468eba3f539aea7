"""CrawlbaseFetcher against a local server speaking the Crawling and Storage API protocol:
parameters, headers, thin-page and JS-token fallbacks, retries, token errors, token hygiene."""

from __future__ import annotations

import logging
import tracemalloc
from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from guardrail.core.interpret import interpret
from guardrail.core.schema import FetchedPage, Label, Reason
from guardrail.fetch.crawlbase import CrawlbaseError, CrawlbaseFetcher, read_stored, redact
from guardrail.runtime import build_fetcher
from guardrail.settings import ConfigurationError, Settings
from tests.fixtures import bombs
from tests.fixtures.crawlbase_server import JS_TOKEN, NORMAL_TOKEN, FakeCrawlbase, FakeTarget

ARTICLE_MD = (
    "# The boiling point of water\n\n"
    "At standard atmospheric pressure, which is the pressure at sea level, pure water boils at 100 "
    "degrees Celsius (212 degrees Fahrenheit).\n\n"
    "At higher altitudes the air pressure is lower, so water boils at a lower temperature. In Denver, "
    "about 1,600 metres above sea level, water boils at roughly 95 degrees Celsius.\n"
)
THIN_MD = "# Boiling\n\nLoading..."


@pytest.fixture()
def api() -> Iterator[FakeCrawlbase]:
    server = FakeCrawlbase().start()
    yield server
    server.stop()


def make(api: FakeCrawlbase, **options: object) -> CrawlbaseFetcher:
    options.setdefault("retry_base_delay", 0.01)
    options.setdefault("timeout", 5.0)
    return CrawlbaseFetcher(NORMAL_TOKEN, api_url=api.api_url, **options)  # type: ignore[arg-type]


async def fetch(fetcher: CrawlbaseFetcher, url: str) -> FetchedPage:
    return (await fetcher.fetch_all([url]))[url]


async def test_article_through_the_crawling_api(api: FakeCrawlbase) -> None:
    url = "https://example.org/science/boiling?ref=answer&x=1"
    api.targets[url] = FakeTarget(readable=ARTICLE_MD)
    page = await fetch(make(api), url)
    assert page.fetcher == "crawlbase"
    assert page.original_status == 200
    assert "pure water boils at 100 degrees Celsius" in page.text
    assert page.title == "The boiling point of water"
    assert page.rid == "rid000001"
    assert page.final_url == url and page.redirects == []
    assert interpret(page).usable
    (call,) = api.calls_for(url)
    assert call.params == {
        "token": NORMAL_TOKEN,
        "url": url,  # sent URL-encoded, decoded here: the exact URL arrives
        "format": "md",
        "md_readability": "true",
        "store": "true",
    }
    assert "citation-guardrail" in call.headers.get("User-Agent", "")


async def test_final_url_and_status_come_from_headers(api: FakeCrawlbase) -> None:
    url = "https://example.org/articles/2019/boiling"
    api.targets[url] = FakeTarget(readable=ARTICLE_MD, final_url="https://example.org/")
    page = await fetch(make(api), url)
    assert page.final_url == "https://example.org/"
    assert page.redirects == [url]
    assessment = interpret(page)
    assert (assessment.label, assessment.reason) == (Label.not_found, Reason.redirected_to_homepage.value)


async def test_legacy_pc_status_header_is_read(api: FakeCrawlbase) -> None:
    url = "https://example.org/legacy"
    api.targets[url] = FakeTarget(readable=ARTICLE_MD, cb_status=207, legacy_headers=True)
    page = await fetch(make(api, js_token=JS_TOKEN), url)
    # cb_status 207 arrived as pc_status only, and still sent the page to the JS token
    assert [c.token for c in api.calls_for(url)] == [NORMAL_TOKEN, JS_TOKEN]
    assert page.reason is None


@pytest.mark.parametrize(("status", "calls"), [(404, 1), (410, 1), (500, 1), (503, 4)])
async def test_origin_errors_are_reported_and_only_transient_ones_retried(
    api: FakeCrawlbase, status: int, calls: int
) -> None:
    url = f"https://example.org/status-{status}"
    api.targets[url] = FakeTarget(readable="# Error\n", original_status=status, cb_status=status)
    page = await fetch(make(api), url)
    assert page.original_status == status
    assessment = interpret(page)
    assert (assessment.label, assessment.reason) == (Label.unreachable, f"http_{status}")
    assert len(api.calls_for(url)) == calls  # 503: the first call and max_retries (3) more


async def test_unknown_page_is_http_404(api: FakeCrawlbase) -> None:
    page = await fetch(make(api), "https://example.org/nowhere")
    assert interpret(page).reason == "http_404"


async def test_thin_page_is_fetched_again_without_readability(api: FakeCrawlbase) -> None:
    url = "https://example.org/short-page"
    api.targets[url] = FakeTarget(readable=THIN_MD, full=ARTICLE_MD)
    page = await fetch(make(api), url)
    assert "pure water boils" in page.text
    calls = api.calls_for(url)
    assert [c.params.get("md_readability") for c in calls] == ["true", None]
    assert all(c.token == NORMAL_TOKEN for c in calls)


async def test_still_thin_page_goes_to_the_js_token(api: FakeCrawlbase) -> None:
    url = "https://example.org/spa"
    api.targets[url] = FakeTarget(readable=THIN_MD, full=THIN_MD, js=ARTICLE_MD)
    page = await fetch(make(api, js_token=JS_TOKEN), url)
    assert "pure water boils" in page.text
    calls = api.calls_for(url)
    assert [(c.token, c.params.get("md_readability")) for c in calls] == [
        (NORMAL_TOKEN, "true"),
        (NORMAL_TOKEN, None),
        (JS_TOKEN, "true"),
    ]
    assert page.rid == "rid000003"  # the rid of the answer that was used


async def test_thin_page_without_js_token_is_interpreted_as_it_is(api: FakeCrawlbase) -> None:
    url = "https://example.org/spa-no-js"
    api.targets[url] = FakeTarget(readable="Loading...", full="Loading...", js=ARTICLE_MD)
    page = await fetch(make(api), url)
    assert len(api.calls_for(url)) == 2
    assert all(c.token == NORMAL_TOKEN for c in api.calls_for(url))
    assert interpret(page).reason == Reason.empty_page.value


async def test_520_goes_to_the_js_token(api: FakeCrawlbase) -> None:
    url = "https://example.org/needs-browser"
    api.targets[url] = FakeTarget(readable=ARTICLE_MD, api_failures=[520])
    page = await fetch(make(api, js_token=JS_TOKEN), url)
    assert page.reason is None and "pure water boils" in page.text
    assert [c.token for c in api.calls_for(url)] == [NORMAL_TOKEN, JS_TOKEN]


async def test_520_without_js_token_is_fetch_error_without_retry(api: FakeCrawlbase) -> None:
    url = "https://example.org/needs-browser-2"
    api.targets[url] = FakeTarget(readable=ARTICLE_MD, api_failures=[520])
    page = await fetch(make(api), url)
    assert (interpret(page).label, interpret(page).reason) == (Label.unreachable, "fetch_error")
    assert len(api.calls_for(url)) == 1


async def test_cb_status_207_goes_to_the_js_token(api: FakeCrawlbase) -> None:
    url = "https://example.org/partial"
    partial = ARTICLE_MD.split("\n\n")[0] + "\n\n" + "Partial content that stops short of the point. " * 5
    api.targets[url] = FakeTarget(readable=partial, cb_status=207, js=ARTICLE_MD)
    page = await fetch(make(api, js_token=JS_TOKEN), url)
    assert "pure water boils" in page.text
    assert [c.token for c in api.calls_for(url)] == [NORMAL_TOKEN, JS_TOKEN]


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_transient_statuses_are_retried_with_backoff(api: FakeCrawlbase, status: int) -> None:
    url = f"https://example.org/busy-{status}"
    api.targets[url] = FakeTarget(readable=ARTICLE_MD, api_failures=[status, status])
    page = await fetch(make(api), url)
    assert page.reason is None and "pure water boils" in page.text
    assert len(api.calls_for(url)) == 3


async def test_retries_are_bounded(api: FakeCrawlbase) -> None:
    url = "https://example.org/always-busy"
    api.targets[url] = FakeTarget(readable=ARTICLE_MD, api_failures=[429] * 10)
    page = await fetch(make(api, max_retries=2), url)
    assert (interpret(page).label, interpret(page).reason) == (Label.unreachable, "fetch_error")
    assert len(api.calls_for(url)) == 3


async def test_retry_after_is_honoured(api: FakeCrawlbase) -> None:
    import time

    url = "https://example.org/retry-after"
    api.targets[url] = FakeTarget(readable=ARTICLE_MD, api_failures=[429], retry_after="0.3")
    started = time.monotonic()
    page = await fetch(make(api), url)
    assert page.reason is None
    assert time.monotonic() - started >= 0.3


async def test_malformed_url_answer_is_invalid_url_without_retry(api: FakeCrawlbase) -> None:
    url = "https://example.org/four-twenty-two"
    api.targets[url] = FakeTarget(readable=ARTICLE_MD, api_failures=[422])
    page = await fetch(make(api), url)
    assert page.reason == Reason.invalid_url.value
    assert len(api.calls_for(url)) == 1


# -- token and account errors: configuration errors that surface --------------------------------


async def test_bad_token_raises_a_configuration_error_naming_the_variable(
    api: FakeCrawlbase, caplog: pytest.LogCaptureFixture
) -> None:
    bad = "tcp-BAD-token-0000deadbeef"
    fetcher = CrawlbaseFetcher(bad, api_url=api.api_url, retry_base_delay=0.01)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ConfigurationError) as info:
        await fetcher.fetch_all(["https://example.org/a", "https://example.org/b"])
    message = str(info.value)
    assert "CRAWLBASE_TOKEN" in message and "401" in message
    assert bad not in message and bad not in repr(info.value)
    assert bad not in caplog.text
    assert len(api.requests) <= 2  # never retried


@pytest.mark.parametrize(("kind", "status"), [("no_credit_tokens", 402), ("wrong_product_tokens", 403)])
async def test_account_errors_are_configuration_errors(api: FakeCrawlbase, kind: str, status: int) -> None:
    getattr(api, kind).add(NORMAL_TOKEN)
    with pytest.raises(ConfigurationError) as info:
        await make(api).fetch_all(["https://example.org/a"])
    assert "CRAWLBASE_TOKEN" in str(info.value) and str(status) in str(info.value)
    assert NORMAL_TOKEN not in str(info.value)
    assert len(api.requests) == 1


async def test_bad_js_token_names_crawlbase_js_token(api: FakeCrawlbase) -> None:
    url = "https://example.org/spa-bad-js"
    api.targets[url] = FakeTarget(readable=THIN_MD, full=THIN_MD)
    fetcher = make(api, js_token="js-BAD-token-feedface")
    with pytest.raises(ConfigurationError) as info:
        await fetcher.fetch_all([url])
    assert "CRAWLBASE_JS_TOKEN" in str(info.value)
    assert "feedface" not in str(info.value)


async def test_invalid_token_answer_in_the_body_is_recognised(api: FakeCrawlbase) -> None:
    """Some API answers say "invalid token" with a non-account status (here 400)."""
    from http.server import BaseHTTPRequestHandler

    from guardrail.testing import LoopbackSite, Route

    def invalid(handler: BaseHTTPRequestHandler) -> None:
        body = b'{"error": "Invalid token. Check the token on your dashboard."}'
        handler.send_response(400)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    with LoopbackSite({"/": Route(handler=invalid)}) as server:
        fetcher = CrawlbaseFetcher(NORMAL_TOKEN, api_url=server.url("/"), retry_base_delay=0.01)
        with pytest.raises(ConfigurationError, match="CRAWLBASE_TOKEN"):
            await fetcher.fetch_all(["https://example.org/a"])


async def test_verifier_surfaces_the_configuration_error(api: FakeCrawlbase) -> None:
    from guardrail.testing import HashEmbedder, OverlapJudge
    from guardrail.verifier import Verifier

    settings = Settings(crawlbase_token=SecretStr("tcp-BAD-xyz"), crawlbase_api_url=api.api_url)
    verifier = Verifier(settings=settings, judge=OverlapJudge(), embedder=HashEmbedder())
    assert verifier.fetcher.name == "crawlbase"
    with pytest.raises(ConfigurationError, match="CRAWLBASE_TOKEN"):
        await verifier.averify("Water boils at 100 degrees Celsius.", ["https://example.org/a"])


async def test_verifier_with_crawlbase_end_to_end(api: FakeCrawlbase) -> None:
    from guardrail.testing import HashEmbedder, OverlapJudge
    from guardrail.verifier import Verifier

    url = "https://example.org/boiling"
    api.targets[url] = FakeTarget(readable=ARTICLE_MD)
    settings = Settings(crawlbase_token=SecretStr(NORMAL_TOKEN), crawlbase_api_url=api.api_url)
    verifier = Verifier(settings=settings, judge=OverlapJudge(), embedder=HashEmbedder())
    report = await verifier.averify("Water boils at 100 degrees Celsius at sea level.", [url])
    assert report.overall == Label.supported
    assert report.citations[0].rid == "rid000001"
    assert NORMAL_TOKEN not in report.model_dump_json()


# -- secrets -------------------------------------------------------------------------------------


async def test_token_never_reaches_logs_pages_or_reprs(api: FakeCrawlbase, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # includes httpx's "HTTP Request: GET <url>" lines
    urls = ["https://example.org/ok", "https://example.org/busy", "https://example.org/missing"]
    api.targets[urls[0]] = FakeTarget(readable=ARTICLE_MD)
    api.targets[urls[1]] = FakeTarget(readable=ARTICLE_MD, api_failures=[429])
    fetcher = make(api, js_token=JS_TOKEN)
    pages = await fetcher.fetch_all(urls)
    assert any("HTTP Request" in r.getMessage() for r in caplog.records)  # httpx did log the calls
    assert NORMAL_TOKEN not in caplog.text and JS_TOKEN not in caplog.text
    for page in pages.values():
        assert NORMAL_TOKEN not in page.model_dump_json() and JS_TOKEN not in page.model_dump_json()
    assert NORMAL_TOKEN not in repr(fetcher) and JS_TOKEN not in repr(fetcher)
    # ... and without touching the host's loggers: the token is added only on the wire.
    assert not logging.getLogger("httpx").filters and not logging.getLogger("httpcore").filters
    assert {c.token for c in api.calls_for(urls[0])} == {NORMAL_TOKEN}


async def test_transport_errors_are_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    caplog.set_level(logging.DEBUG)
    fetcher = CrawlbaseFetcher(NORMAL_TOKEN, api_url=f"http://127.0.0.1:{port}/", retry_base_delay=0.01, max_retries=1)
    page = (await fetcher.fetch_all(["https://example.org/a"]))["https://example.org/a"]
    assert page.reason == Reason.fetch_error.value
    assert NORMAL_TOKEN not in caplog.text
    assert NORMAL_TOKEN not in page.model_dump_json()


def test_redact_masks_token_parameters() -> None:
    assert (
        redact("GET https://api.crawlbase.com/?token=abc123&url=x") == "GET https://api.crawlbase.com/?token=***&url=x"
    )
    assert redact("something abc123 else", ["abc123"]) == "something *** else"


# -- SSRF: what can be refused without DNS is refused before anything is sent --------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/", Reason.blocked_address),
        ("http://2130706433/", Reason.blocked_address),
        ("http://[::ffff:10.0.0.1]/", Reason.blocked_address),
        ("http://localhost:8080/admin", Reason.blocked_address),
        ("http://metadata.google.internal/", Reason.blocked_address),
        ("file:///etc/passwd", Reason.invalid_url),
        ("gopher://example.org/", Reason.invalid_url),
        ("not a url", Reason.invalid_url),
    ],
)
async def test_blocked_urls_are_not_forwarded(api: FakeCrawlbase, url: str, reason: Reason) -> None:
    page = await fetch(make(api), url)
    assert page.reason == reason.value
    assert interpret(page).label == Label.unreachable
    assert api.requests == []


async def test_each_unique_url_is_crawled_once(api: FakeCrawlbase) -> None:
    url = "https://example.org/once"
    api.targets[url] = FakeTarget(readable=ARTICLE_MD)
    result = await make(api).fetch_all([url, url, url])
    assert list(result) == [url]
    assert len(api.calls_for(url)) == 1


async def test_concurrency_is_bounded(api: FakeCrawlbase) -> None:
    urls = [f"https://example.org/slow-{i}" for i in range(7)]
    for url in urls:
        api.targets[url] = FakeTarget(readable=ARTICLE_MD, delay=0.2)
    api.company = 3  # the bound is reached however slowly requests come; the delay lets more pile up
    result = await make(api, concurrency=3).fetch_all(urls)
    assert all(p.reason is None for p in result.values())
    assert api.max_in_flight == 3  # never more than the bound, and the bound was used


async def test_oversized_markdown_is_too_large(api: FakeCrawlbase) -> None:
    url = "https://example.org/huge"
    api.targets[url] = FakeTarget(readable="water boils " * 20_000)
    page = await fetch(make(api, max_bytes=50_000), url)
    assert page.reason == Reason.too_large.value


@pytest.mark.parametrize(
    ("coding", "body", "reason"),
    [
        ("gzip", bombs.gzip_zeros(64 << 20), Reason.too_large),
        ("deflate", bombs.zlib_zeros(64 << 20), Reason.too_large),
        ("gzip, gzip", bombs.gzip_of_gzip(64 << 20), Reason.unsupported_content_encoding),
        ("zstd", bombs.zstd_zeros(64 << 20), Reason.unsupported_content_encoding),
    ],
)
async def test_a_compressed_bomb_through_the_api_is_stopped_at_the_cap(
    api: FakeCrawlbase, coding: str, body: bytes, reason: Reason
) -> None:
    """The API's answer is decoded by us, in steps, one layer of the codings we asked for."""
    url = "https://example.org/bomb"
    api.targets[url] = FakeTarget(readable="unused", encoded=(coding, body))
    tracemalloc.start()
    try:
        page = await fetch(make(api, max_bytes=1_000_000), url)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert page.reason == reason.value
    assert peak < 8_000_000, f"{peak / 1e6:.1f} MB traced for a 1 MB cap"
    assert {k.lower(): v for k, v in api.calls_for(url)[0].headers.items()}["accept-encoding"] == "gzip, deflate"


# -- settings ------------------------------------------------------------------------------------


def test_build_fetcher_prefers_crawlbase_when_a_token_is_set(api: FakeCrawlbase) -> None:
    env = {"CRAWLBASE_TOKEN": NORMAL_TOKEN, "CRAWLBASE_JS_TOKEN": JS_TOKEN, "CRAWLBASE_API_URL": api.api_url}
    fetcher = build_fetcher(Settings.from_env(env))
    assert isinstance(fetcher, CrawlbaseFetcher)
    assert fetcher.api_url == api.api_url and fetcher.has_js_token
    # Crawlbase's advice (90 s per call, unless GUARDRAIL_FETCH_TIMEOUT is set), with the page's calls
    # together cut to fit inside the deadline (0.6 x 100 s): a hung API is a fetch_timeout, not a 504.
    assert fetcher.timeout == 60.0 and fetcher.page_budget == 60.0 and fetcher.retry.budget == 60.0
    roomy = CrawlbaseFetcher.from_settings(Settings.from_env({**env, "GUARDRAIL_DEADLINE": "600"}))
    assert roomy.timeout == 90.0 and roomy.page_budget == 180.0
    explicit = CrawlbaseFetcher.from_settings(Settings.from_env({**env, "GUARDRAIL_FETCH_TIMEOUT": "20"}))
    assert explicit.timeout == 20.0
    assert build_fetcher(Settings.from_env({})).name == "direct"
    with pytest.raises(ConfigurationError, match="CRAWLBASE_TOKEN"):
        CrawlbaseFetcher.from_settings(Settings())
    with pytest.raises(ConfigurationError, match="CRAWLBASE_TOKEN"):
        CrawlbaseFetcher("   ")


# -- Storage API ---------------------------------------------------------------------------------


async def test_read_stored_returns_the_page_by_rid(api: FakeCrawlbase, caplog: pytest.LogCaptureFixture) -> None:
    url = "https://example.org/boiling"
    api.targets[url] = FakeTarget(readable=ARTICLE_MD)
    page = await fetch(make(api), url)
    assert page.rid is not None
    caplog.set_level(logging.DEBUG)
    settings = Settings(crawlbase_token=SecretStr(NORMAL_TOKEN), crawlbase_storage_url=api.storage_url)
    stored = await read_stored(page.rid, settings=settings)
    assert stored.rid == page.rid and stored.url == url
    assert "pure water boils at 100 degrees Celsius" in stored.text
    assert stored.original_status == 200
    (call,) = [r for r in api.requests if r.path == "/storage"]
    assert call.params == {"token": NORMAL_TOKEN, "rid": page.rid}
    assert NORMAL_TOKEN not in caplog.text


async def test_read_stored_errors(api: FakeCrawlbase) -> None:
    settings = Settings(crawlbase_token=SecretStr(NORMAL_TOKEN), crawlbase_storage_url=api.storage_url)
    with pytest.raises(LookupError):
        await read_stored("rid999999", settings=settings)
    bad = Settings(crawlbase_token=SecretStr("tcp-BAD-1234567"), crawlbase_storage_url=api.storage_url)
    with pytest.raises(ConfigurationError) as info:
        await read_stored("rid000001", settings=bad)
    assert "CRAWLBASE_TOKEN" in str(info.value) and "tcp-BAD-1234567" not in str(info.value)
    with pytest.raises(ConfigurationError):
        await read_stored("rid000001", settings=Settings())
    with pytest.raises(ValueError):
        await read_stored("../etc/passwd", settings=settings)


async def test_read_stored_transport_error_is_scrubbed() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(CrawlbaseError) as info:
        await read_stored("rid1", token=NORMAL_TOKEN, storage_url=f"http://127.0.0.1:{port}/storage")
    assert NORMAL_TOKEN not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
