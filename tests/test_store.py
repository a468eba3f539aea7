"""Page cache and audit store: cache hits, TTL, keys, concurrent writers, audit rows and replay.

Pages come from the loopback fixture server; the Crawlbase Storage API is a small local
HTTP server that behaves as documented (per-token storage, metadata in headers, 404 when
the rid is not stored).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from pydantic import SecretStr

from guardrail import ClaimTask, Fact, FetchedPage, Label, Reason, Settings, UrlVerdict, Verifier
from guardrail.fetch.crawlbase import CrawlbaseFetcher
from guardrail.fetch.direct import DirectFetcher
from guardrail.fetch.once import FetchOnce
from guardrail.replay import areplay
from guardrail.replay import replay as replay_audit
from guardrail.retry import RetryPolicy
from guardrail.runtime import build_runtime
from guardrail.store import (
    AuditStore,
    PageCache,
    StoreError,
    cache_class,
    cache_key,
    content_hash,
    parse_since,
    resolve_path,
)
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge, Route
from guardrail.verifier import DecisionRecord
from tests.fixtures.storage_api import JS_TOKEN, TOKEN, StorageAPI

CLAIM = "At sea level pure water boils at 100 degrees Celsius."


# -- test doubles implementing the Fetcher protocol ------------------------------------------


class CountingFetcher:
    """The real DirectFetcher (private hosts allowed, for the loopback server), recording each call."""

    def __init__(self, **options: object) -> None:
        self.direct = DirectFetcher(allow_private_hosts=True, **options)  # type: ignore[arg-type]
        self.name = self.direct.name
        self.policy = self.direct.policy
        self.max_bytes = self.direct.max_bytes
        self.max_redirects = self.direct.max_redirects
        self.calls: list[list[str]] = []

    def cache_options(self) -> dict[str, object]:
        return self.direct.cache_options()

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, FetchedPage]:
        self.calls.append(list(dict.fromkeys(urls)))
        return await self.direct.fetch_all(urls)


class ScriptedFetcher:
    """Serves canned pages (as a Crawlbase-like fetcher would, rids included), counting calls."""

    def __init__(self, pages: dict[str, FetchedPage], name: str = "crawlbase") -> None:
        self.pages = pages
        self.name = name
        self.calls: list[list[str]] = []

    def cache_options(self) -> dict[str, object]:
        return {}

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, FetchedPage]:
        self.calls.append(list(urls))
        return {u: self.pages[u] for u in urls}


def _verifier(fetcher: object, *recorders: AuditStore, judge: OverlapJudge | None = None) -> Verifier:
    return Verifier(
        allow_private_hosts=True,
        judge=judge or OverlapJudge(),
        embedder=HashEmbedder(),
        fetcher=fetcher,  # type: ignore[arg-type]
        recorders=list(recorders),
        settings=Settings(),
    )


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _page(url: str, text: str = "Pure water boils at 100 degrees Celsius.", **kw: object) -> FetchedPage:
    return FetchedPage(url=url, final_url=url, original_status=200, text=text, **kw)  # type: ignore[arg-type]


# -- page cache -------------------------------------------------------------------------------


async def test_second_fetch_is_served_from_the_cache(pages: LoopbackSite, tmp_path: Path) -> None:
    inner = CountingFetcher()
    fetcher = FetchOnce(inner, store=PageCache(tmp_path / "pages.sqlite3"))
    url = pages.url("/boiling")
    first = await fetcher.fetch_all([url, url])
    hits_after_first = pages.hits.get("/boiling", 0)
    second = await fetcher.fetch_all([url])
    assert pages.hits.get("/boiling", 0) == hits_after_first
    assert second == first and "100 degrees Celsius" in second[url].text
    assert (fetcher.stats.hits, fetcher.stats.misses, fetcher.stats.stored) == (1, 1, 1)
    assert inner.calls == [[url]]
    assert fetcher.name == "direct"


async def test_verifier_with_cached_fetcher_fetches_once_across_calls(pages: LoopbackSite, tmp_path: Path) -> None:
    cache = PageCache(tmp_path / "pages.sqlite3")
    url = pages.url("/titanic")
    first = await _verifier(FetchOnce(CountingFetcher(), store=cache)).averify(
        "Titanic was directed by James Cameron.", [url]
    )
    before = pages.hits.get("/titanic", 0)
    # A fresh verifier and fetcher (as a second CLI run would build) share the file.
    second = await _verifier(FetchOnce(CountingFetcher(), store=PageCache(cache.path or ""))).averify(
        "Titanic was directed by James Cameron.", [url]
    )
    assert pages.hits.get("/titanic", 0) == before
    assert first == second and second.overall == Label.supported


async def test_misses_are_fetched_in_one_call(pages: LoopbackSite, tmp_path: Path) -> None:
    inner = CountingFetcher()
    fetcher = FetchOnce(inner, store=PageCache(tmp_path / "c.sqlite3"))
    a, b, c = pages.url("/boiling"), pages.url("/titanic"), pages.url("/tomatoes")
    await fetcher.fetch_all([a])
    result = await fetcher.fetch_all([a, b, c, b])
    assert inner.calls == [[a], [b, c]]
    assert list(result) == [a, b, c]


def test_ttl_expiry(tmp_path: Path) -> None:
    clock = Clock()
    cache = PageCache(tmp_path / "c.sqlite3", ttl=60, clock=clock)
    page = _page("https://a.example/x")
    assert cache.put(page, fetcher="direct")
    clock.now += 59
    assert cache.get(page.url, fetcher="direct") == page
    clock.now += 2
    assert cache.get(page.url, fetcher="direct") is None
    assert cache.purge() == 1 and len(cache) == 0


def test_default_ttl_is_24_hours_everywhere(tmp_path: Path) -> None:
    day = 24 * 3600
    assert Settings().cache_ttl == day and Settings.from_env({}).cache_ttl == day
    assert Settings.from_env({"GUARDRAIL_CACHE_TTL": "60"}).cache_ttl == 60
    for cache_choice in (None, True):  # the library's and the service's / the CLI's
        with build_runtime(Settings(cache_path=tmp_path / "p.sqlite3"), cache=cache_choice, audit=False) as runtime:
            assert runtime.cache is not None and runtime.cache.ttl == day
    clock = Clock()
    cache = PageCache(tmp_path / "c.sqlite3", clock=clock)
    assert cache.ttl == day
    page = _page("https://a.example/x")
    assert cache.put(page, fetcher="direct")
    clock.now += day - 1
    assert cache.get(page.url, fetcher="direct") == page
    clock.now += 2
    assert cache.get(page.url, fetcher="direct") is None


def test_expired_entries_are_swept_during_writes(tmp_path: Path) -> None:
    clock = Clock()
    cache = PageCache(tmp_path / "c.sqlite3", ttl=60, clock=clock)
    cache.put_many({f"https://a.example/{i}": _page(f"https://a.example/{i}") for i in range(5)}, fetcher="direct")
    clock.now += PageCache.SWEEP_INTERVAL + 1
    cache.put(_page("https://b.example/"), fetcher="direct")
    assert len(cache) == 1


def test_lowering_the_ttl_expires_older_entries(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "c.sqlite3"
    PageCache(path, ttl=3600, clock=clock).put(_page("https://a.example/x"), fetcher="direct")
    clock.now += 120
    assert PageCache(path, ttl=3600, clock=clock).get("https://a.example/x", fetcher="direct") is not None
    assert PageCache(path, ttl=60, clock=clock).get("https://a.example/x", fetcher="direct") is None


def test_keyed_by_url_fetcher_and_options(tmp_path: Path) -> None:
    cache = PageCache(tmp_path / "c.sqlite3")
    url = "https://a.example/x"
    readable = {"md_readability": True, "js": False}
    cache.put(_page(url, "readable text"), fetcher="crawlbase", options=readable)
    assert cache.get(url, fetcher="crawlbase", options={"js": False, "md_readability": True}) is not None
    assert cache.get(url, fetcher="crawlbase", options={"md_readability": False, "js": False}) is None
    assert cache.get(url, fetcher="crawlbase", options={"md_readability": True, "js": True}) is None
    assert cache.get(url, fetcher="direct", options=readable) is None
    assert cache.get(url + "/", fetcher="crawlbase", options=readable) is None
    cache.put(_page(url, "raw text"), fetcher="crawlbase", options={"md_readability": False, "js": False})
    got = cache.get(url, fetcher="crawlbase", options=readable)
    assert got is not None and got.text == "readable text"


def test_options_of_the_fetcher_are_part_of_the_key() -> None:
    def key(fetcher: DirectFetcher) -> str:
        return cache_key("https://a.example/", "direct", fetcher.cache_options())

    assert key(DirectFetcher()) == key(DirectFetcher(timeout=3, concurrency=2))  # transient-only options
    assert key(DirectFetcher()) != key(DirectFetcher(max_bytes=10))
    assert key(DirectFetcher()) != key(DirectFetcher(max_redirects=1))
    assert key(DirectFetcher()) != key(DirectFetcher(allow_private_hosts=True))
    assert key(DirectFetcher()) != key(DirectFetcher(allowed_hosts=["127.0.0.1"]))
    with_js = CrawlbaseFetcher(TOKEN, js_token=JS_TOKEN).cache_options()
    assert with_js["js_token"] is True and CrawlbaseFetcher(TOKEN).cache_options()["js_token"] is False
    assert TOKEN not in json.dumps(with_js) and JS_TOKEN not in json.dumps(with_js)


async def test_a_page_fetched_with_private_hosts_allowed_is_not_served_to_a_guarded_fetcher(
    pages: LoopbackSite, tmp_path: Path
) -> None:
    cache = PageCache(tmp_path / "c.sqlite3")
    url = pages.url("/boiling")
    opened = await FetchOnce(DirectFetcher(allow_private_hosts=True), store=cache).fetch_all([url])
    assert opened[url].original_status == 200
    guarded = await FetchOnce(DirectFetcher(), store=cache).fetch_all([url])
    assert guarded[url].reason == Reason.blocked_address.value
    assert len(cache) == 1  # the refusal itself is never cached


def test_secrets_are_refused_as_options(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="secret") as info:
        PageCache(tmp_path / "c.sqlite3").put(_page("https://a.example/"), fetcher="x", options={"t": SecretStr(TOKEN)})
    assert TOKEN not in str(info.value)


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        (_page("u"), "keep"),
        (FetchedPage(url="u", original_status=404, text="Not Found"), "keep"),
        (FetchedPage(url="u", original_status=410), "keep"),
        (FetchedPage(url="u", reason=Reason.too_large.value), "keep"),
        (FetchedPage(url="u", reason=Reason.unsupported_content_type.value), "keep"),
        (FetchedPage(url="u", original_status=503), "transient"),
        (FetchedPage(url="u", original_status=500), "transient"),
        (FetchedPage(url="u", original_status=429), "transient"),
        (FetchedPage(url="u", original_status=403), "transient"),
        (FetchedPage(url="u", reason=Reason.fetch_timeout.value), "transient"),
        (FetchedPage(url="u", reason=Reason.fetch_error.value), "transient"),
        (FetchedPage(url="u", reason="something_new"), "transient"),
        (FetchedPage(url="u", reason=Reason.blocked_address.value), "never"),
        (FetchedPage(url="u", reason=Reason.invalid_url.value), "never"),
    ],
)
def test_what_is_cached(page: FetchedPage, expected: str) -> None:
    assert cache_class(page) == expected


async def test_transient_failures_are_fetched_again_and_definitive_ones_are_not(
    pages: LoopbackSite, tmp_path: Path
) -> None:
    inner = CountingFetcher(retry=RetryPolicy(attempts=1))  # one request per fetch: counts stay exact
    fetcher = FetchOnce(inner, store=PageCache(tmp_path / "c.sqlite3"))
    gone, down = pages.url("/gone-410"), pages.url("/unavailable-503")
    await fetcher.fetch_all([gone, down])
    hits = (pages.hits["/gone-410"], pages.hits["/unavailable-503"])
    again = await fetcher.fetch_all([gone, down])
    assert pages.hits["/gone-410"] == hits[0]
    assert pages.hits["/unavailable-503"] == hits[1] + 1
    assert again[gone].original_status == 410 and again[down].original_status == 503


def test_transient_ttl_keeps_failures_briefly_but_never_ssrf_refusals(tmp_path: Path) -> None:
    clock = Clock()
    cache = PageCache(tmp_path / "c.sqlite3", ttl=3600, transient_ttl=30, clock=clock)
    down = FetchedPage(url="https://a.example/down", original_status=503)
    blocked = FetchedPage(url="http://169.254.169.254/", reason=Reason.blocked_address.value)
    assert cache.put(down, fetcher="direct") and not cache.put(blocked, fetcher="direct")
    assert cache.get(down.url, fetcher="direct") == down
    clock.now += 31
    assert cache.get(down.url, fetcher="direct") is None


def damage(path: Path) -> None:
    """Overwrite every page of a SQLite file but its header with garbage (its pages overwritten)."""
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.seek(4096)
        fh.write(os.urandom(size - 4096))


def _cache_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "page cache" in r.getMessage()]


async def test_a_broken_cache_file_never_fails_a_fetch_and_warns_once(
    pages: LoopbackSite, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    fetcher = FetchOnce(CountingFetcher(), store=PageCache(path))
    for _ in range(3):
        result = await fetcher.fetch_all([pages.url("/boiling")])
        assert result[pages.url("/boiling")].original_status == 200
    assert len(_cache_warnings(caplog)) == 1, caplog.text  # one warning, not one per read and write
    with pytest.raises(StoreError, match="not a usable page cache"):
        len(PageCache(path))


async def test_a_cache_file_damaged_mid_run_is_given_up_with_one_warning(
    pages: LoopbackSite, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.sqlite3"
    cache = PageCache(path)
    inner = CountingFetcher()
    fetcher = FetchOnce(inner, store=cache)
    urls = [pages.url("/boiling"), pages.url("/tomatoes")]
    await fetcher.fetch_all(urls)
    await fetcher.fetch_all(urls)
    assert len(inner.calls) == 1  # the second call came from the cache
    cache.close()
    damage(path)
    for _ in range(3):
        result = await fetcher.fetch_all(urls)
        assert [p.original_status for p in result.values()] == [200, 200]
    assert len(inner.calls) == 4  # fetched each time now
    assert cache.damaged is not None and "malformed" in cache.damaged
    warnings = _cache_warnings(caplog)
    assert len(warnings) == 1 and str(path) in warnings[0], caplog.text


def test_text_is_stored_compressed(tmp_path: Path) -> None:
    cache = PageCache(tmp_path / "c.sqlite3")
    text = "Water boils at 100 degrees Celsius at sea level. " * 200
    cache.put(_page("https://a.example/x", text), fetcher="direct")
    with sqlite3.connect(tmp_path / "c.sqlite3") as conn:
        meta, body = conn.execute("SELECT meta, body FROM pages").fetchone()
    assert "text" not in json.loads(meta) and len(body) < len(text) / 10
    assert zlib.decompress(body).decode() == text


def test_concurrent_writers_in_threads(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    shared = PageCache(path)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        cache = shared if n % 2 else PageCache(path)  # one shared instance and one per thread
        try:
            for i in range(40):
                page = _page(f"https://t{n}.example/{i}", f"thread {n} page {i}")
                cache.put(page, fetcher="direct")
                assert cache.get(page.url, fetcher="direct") == page
                cache.put_many({f"https://shared.example/{i}": _page(f"https://shared.example/{i}")}, fetcher="direct")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(shared) == 8 * 40 + 40


_WRITER = r"""
import os, sys, time
from guardrail.core.schema import FetchedPage, Label, UrlVerdict
from guardrail.store import AuditStore, PageCache
from guardrail.verifier import DecisionRecord

cache_path, audit_path, worker, count, go = sys.argv[1:]
cache, audit = PageCache(cache_path), AuditStore(audit_path)
while not os.path.exists(go):
    time.sleep(0.002)
for i in range(int(count)):
    url = f"https://w{worker}.example/{i}"
    page = FetchedPage(url=url, original_status=200, text=f"worker {worker} page {i}. " * 30)
    cache.put(page, fetcher="direct")
    assert cache.get(url, fetcher="direct") == page
    shared = FetchedPage(url="https://shared.example/", original_status=200, text="the same page " * 50)
    for p in (page, shared):
        audit.record(DecisionRecord(
            claim=f"claim {worker}-{i}", source=p.url, verdict=UrlVerdict(url=p.url, label=Label.supported),
            page=p, passages_shown=[p.text[:100]], judge_name="j", judge_model="m", fetcher_name="direct"))
print("ok")
"""


def test_concurrent_writers_in_processes(tmp_path: Path) -> None:
    cache_path, audit_path, go = tmp_path / "c.sqlite3", tmp_path / "a.sqlite3", tmp_path / "go"
    workers, count = 4, 25
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(cache_path), str(audit_path), str(n), str(count), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(workers)
    ]
    go.touch()  # release them together
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * workers, [err for _, err in results]
    assert len(PageCache(cache_path)) == workers * count
    audit = AuditStore(audit_path)
    assert audit.count() == 2 * workers * count
    with sqlite3.connect(audit_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        shared_hash = content_hash("the same page " * 50)
        assert conn.execute("SELECT count(*) FROM contents WHERE hash = ?", (shared_hash,)).fetchone()[0] == 1
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# -- audit store ------------------------------------------------------------------------------


async def test_audit_row_for_a_fetched_citation(pages: LoopbackSite, tmp_path: Path) -> None:
    audit = AuditStore(tmp_path / "audit.sqlite3")
    url = pages.url("/boiling")
    report = await _verifier(CountingFetcher(), audit).averify(CLAIM, [url])
    [row] = audit.list_records()
    verdict = report.citations[0]
    assert row.claim == CLAIM and row.url == url and row.final_url == url
    assert row.label == verdict.label == Label.supported
    assert row.evidence_quote == verdict.evidence_quote and row.confidence == verdict.confidence
    assert (row.judge, row.judge_model, row.fetcher) == ("overlap", "overlap-test-judge", "direct")
    assert row.rid == "" and row.original_status == 200
    assert row.content_hash and row.passages and row.created_at.tzinfo is not None


async def test_audit_rows_when_nothing_was_fetched(pages: LoopbackSite, tmp_path: Path) -> None:
    audit = AuditStore(tmp_path / "audit.sqlite3")
    verifier = _verifier(CountingFetcher(), audit)
    await verifier.averify_many(
        [
            ClaimTask(CLAIM, ["ftp://files.example/boiling.txt", pages.url("/gone-404")]),
            ClaimTask(CLAIM, [Fact("At sea level pure water boils at 100 degrees Celsius.", "fact:0")]),
        ]
    )
    invalid, gone, fact = sorted(audit.list_records(), key=lambda r: r.id)
    assert (invalid.label, invalid.reason, invalid.rid, invalid.content_hash) == (
        Label.unreachable,
        "invalid_url",
        "",
        "",
    )
    assert invalid.judge is None and invalid.passages == [] and invalid.fetcher == "direct"
    assert (gone.label, gone.reason, gone.original_status) == (Label.unreachable, "http_404", 404)
    assert gone.judge is None and gone.passages == []
    # The SSRF guard refusing a host is a decision too, recorded with nothing fetched.
    guarded = _verifier(DirectFetcher(), audit)
    report = await guarded.averify(CLAIM, [pages.url("/boiling")])
    assert report.citations[0].reason == Reason.blocked_address.value
    [blocked] = audit.list_records(limit=1)
    assert (blocked.label, blocked.reason, blocked.rid, blocked.content_hash, blocked.judge) == (
        Label.unreachable,
        "blocked_address",
        "",
        "",
        None,
    )
    assert (fact.url, fact.label, fact.fetcher, fact.rid, fact.content_hash) == (
        "fact:0",
        Label.supported,
        None,
        "",
        "",
    )
    assert fact.judge == "overlap" and fact.passages == ["At sea level pure water boils at 100 degrees Celsius."]


async def test_page_text_is_content_addressed_and_deduplicated(pages: LoopbackSite, tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    audit = AuditStore(path)
    fetcher = CountingFetcher()
    url = pages.url("/boiling")
    await _verifier(fetcher, audit).averify_many(
        [ClaimTask(CLAIM, [url]), ClaimTask("Pressure cookers let water reach 120 degrees Celsius.", [url])]
    )
    await _verifier(fetcher, audit).averify(CLAIM, [url])
    rows = audit.list_records()
    assert len(rows) == 3 and len({r.content_hash for r in rows}) == 1
    text = (await CountingFetcher().fetch_all([url]))[url].text
    assert rows[0].content_hash == content_hash(text)
    with sqlite3.connect(path) as conn:
        stored = conn.execute(
            "SELECT count(*), max(length(data)) FROM contents WHERE hash = ?", (rows[0].content_hash,)
        ).fetchone()
        assert stored[0] == 1 and stored[1] < len(text.encode())  # once, compressed
        # the page once, and each distinct list of passages shown once
        distinct_passages = {json.dumps(r.passages) for r in rows}
        assert conn.execute("SELECT count(*) FROM contents").fetchone()[0] == 1 + len(distinct_passages)
    assert audit.content(rows[0].content_hash) == text


async def test_replay_shows_exactly_what_the_judge_saw(pages: LoopbackSite, tmp_path: Path) -> None:
    audit = AuditStore(tmp_path / "audit.sqlite3")
    judge = OverlapJudge()
    fetcher = CountingFetcher()
    claims = [CLAIM, "Titanic was directed by James Cameron."]
    urls = [pages.url("/boiling"), pages.url("/titanic")]
    await _verifier(fetcher, audit, judge=judge).averify_many(
        [ClaimTask(claims[0], [urls[0]]), ClaimTask(claims[1], [urls[1]])]
    )
    [requests] = judge.calls
    fetched = await CountingFetcher().fetch_all(urls)
    for request, url in zip(requests, urls, strict=True):
        [row] = audit.list_records(url_contains=url)
        [replay] = replay_audit(audit, row.id, settings=Settings())
        assert replay.record == row and replay.record.claim == request.claim
        assert replay.passages == request.passages
        assert replay.text == fetched[url].text
        assert (replay.text_source, replay.content_hash_ok, replay.note) == ("local", True, None)


def test_store_texts_false_keeps_hash_and_passages_only(tmp_path: Path) -> None:
    audit = AuditStore(tmp_path / "a.sqlite3", store_texts=False)
    page = _page("https://a.example/x", "Water boils at 100 degrees Celsius. " * 40)
    row_id = audit.record(_decision(page, passages=["Water boils at 100 degrees Celsius."]))
    [replay] = replay_audit(audit, row_id, settings=Settings())
    assert replay.record is not None and replay.record.content_hash == content_hash(page.text)
    assert replay.text is None and replay.passages == ["Water boils at 100 degrees Celsius."]
    assert replay.note is not None and "not stored" in replay.note


def test_damaged_content_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    audit = AuditStore(path)
    page = _page("https://a.example/x", "Water boils at 100 degrees Celsius.")
    row_id = audit.record(_decision(page))
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE contents SET data = ? WHERE hash = ?", (zlib.compress(b"tampered"), content_hash(page.text))
        )
    with pytest.raises(StoreError, match="does not match its hash"):
        replay_audit(audit, row_id, settings=Settings())


def _decision(page: FetchedPage, *, claim: str = CLAIM, passages: list[str] | None = None) -> DecisionRecord:
    return DecisionRecord(
        claim=claim,
        source=page.url,
        verdict=UrlVerdict(
            url=page.url,
            label=Label.supported,
            evidence_quote=page.text[:30],
            confidence=0.9,
            final_url=page.final_url,
            original_status=page.original_status,
            rid=page.rid,
        ),
        page=page,
        passages_shown=passages if passages is not None else [page.text],
        judge_name="overlap",
        judge_model="overlap-test-judge",
        fetcher_name=page.fetcher,
    )


def test_list_filters_and_validation(tmp_path: Path) -> None:
    audit = AuditStore(tmp_path / "a.sqlite3")
    for i in range(5):
        audit.record(_decision(_page(f"https://a.example/{i}")))
    gone = FetchedPage(url="https://b.example/Gone", original_status=410)
    audit.record(
        DecisionRecord(
            CLAIM,
            gone.url,
            UrlVerdict(url=gone.url, label=Label.unreachable, reason="http_410"),
            gone,
            [],
            None,
            None,
            "direct",
        )
    )
    assert [r.url for r in audit.list_records(limit=2)] == ["https://b.example/Gone", "https://a.example/4"]
    assert [r.reason for r in audit.list_records(label="unreachable")] == ["http_410"]
    assert len(audit.list_records(label=Label.supported)) == 5
    assert [r.url for r in audit.list_records(url_contains="B.EXAMPLE/gone")] == ["https://b.example/Gone"]
    assert len(audit.list_records(since="1h")) == 6
    assert audit.list_records(since="2999-01-01") == []
    with pytest.raises(ValueError, match="label must be one of supported"):
        audit.list_records(label="fine")
    with pytest.raises(ValueError, match="limit"):
        audit.list_records(limit=0)
    with pytest.raises(ValueError, match="ISO date/time or an age"):
        audit.list_records(since="yesterday")


def test_parse_since() -> None:
    from datetime import datetime, timedelta, timezone

    now = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)
    assert parse_since("24h", now=now) == now - timedelta(hours=24)
    assert parse_since("7d", now=now) == now - timedelta(days=7)
    assert parse_since("2024-04-01", now=now) == datetime(2024, 4, 1, tzinfo=timezone.utc)
    assert parse_since("2024-04-01T10:00:00Z").tzinfo is not None


def test_export_jsonl_and_csv(tmp_path: Path) -> None:
    import csv
    import io

    audit = AuditStore(tmp_path / "a.sqlite3")
    ids = [
        audit.record(_decision(_page(f"https://a.example/{i}"), passages=[f"p{i}", 'q, "quoted"'])) for i in range(3)
    ]
    buf = io.StringIO()
    assert audit.export(buf, "jsonl") == 3
    lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert [row["id"] for row in lines] == ids
    assert lines[0]["passages"] == ["p0", 'q, "quoted"'] and lines[0]["label"] == "supported"
    buf = io.StringIO()
    assert audit.export(buf, "csv", url_contains="/2") == 1
    [row] = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert row["url"] == "https://a.example/2" and row["rid"] == "" and row["final_url"] == "https://a.example/2"
    assert json.loads(row["passages"]) == ["p2", 'q, "quoted"']
    with pytest.raises(ValueError, match="jsonl or csv"):
        audit.export(buf, "xml")  # type: ignore[arg-type]


def test_resolve_by_id_or_rid(tmp_path: Path) -> None:
    audit = AuditStore(tmp_path / "a.sqlite3")
    a = audit.record(_decision(_page("https://a.example/x", rid="RID123", fetcher="crawlbase")))
    b = audit.record(_decision(_page("https://a.example/x", rid="RID123", fetcher="crawlbase"), claim="Other."))
    assert [r.id for r in audit.resolve(str(a))] == [a]
    assert [r.id for r in audit.resolve("RID123")] == [a, b]
    assert audit.resolve("nothing") == []
    with pytest.raises(LookupError, match="no audit row"):
        replay_audit(audit, "999", settings=Settings())


def test_paths_and_from_settings(tmp_path: Path) -> None:
    default = tmp_path / "default.sqlite3"
    assert resolve_path(None, default) == default
    assert resolve_path("off", default) is None and resolve_path("0", default) is None
    assert resolve_path(str(tmp_path / "x.db"), default) == tmp_path / "x.db"
    with build_runtime(Settings(), audit=False) as runtime:
        assert runtime.cache is None  # the library: no store unless the settings name one
    nested = tmp_path / "deep" / "er" / "audit.sqlite3"
    settings = Settings(audit_path=nested, cache_path=tmp_path / "p.sqlite3", cache_ttl=5)
    with build_runtime(settings) as runtime:
        assert runtime.audit is not None and runtime.audit.count() == 0
        assert nested.exists() and (nested.stat().st_mode & 0o777) == 0o600
        assert runtime.cache is not None and runtime.cache.ttl == 5
    off = Settings(audit_path="off", cache_path="off")  # type: ignore[arg-type]
    with build_runtime(off, cache=True, audit=True) as runtime:
        assert runtime.cache is None and runtime.audit is None


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    AuditStore(path).count()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="schema version 99"):
        AuditStore(path).count()


# -- Crawlbase replay through the Storage API --------------------------------------------------


@pytest.fixture(scope="module")
def storage_server() -> Iterator[tuple[StorageAPI, LoopbackSite]]:
    api = StorageAPI()
    server = LoopbackSite({"/storage": Route(handler=api.handler)}).start()
    try:
        yield api, server
    finally:
        server.stop()


@pytest.fixture
def storage(storage_server: tuple[StorageAPI, LoopbackSite]) -> StorageAPI:
    """The Storage API, emptied for each test."""
    api, server = storage_server
    api.reset()
    api.url = server.url("/storage")
    return api


def _crawlbase_settings(storage: StorageAPI, *, normal: bool = True, js: bool = True) -> Settings:
    values: dict[str, object] = {"crawlbase_storage_url": storage.url}
    if normal:
        values["crawlbase_token"] = TOKEN
    if js:
        values["crawlbase_js_token"] = JS_TOKEN
    return Settings.model_validate(values)


BOILING_MD = (
    "# The boiling point of water\n\nAt standard atmospheric pressure, pure water boils at 100 degrees "
    "Celsius (212 degrees Fahrenheit).\n\nAt higher altitudes water boils at a lower temperature."
)


async def _crawlbase_decisions(tmp_path: Path) -> tuple[AuditStore, OverlapJudge, str]:
    url = "https://science.example/boiling"
    audit = AuditStore(tmp_path / "audit.sqlite3")
    judge = OverlapJudge()
    fetcher = ScriptedFetcher({url: _page(url, BOILING_MD, rid="RIDJS42", fetcher="crawlbase")})
    await _verifier(fetcher, audit, judge=judge).averify("Pure water boils at 100 degrees Celsius.", [url])
    return audit, judge, url


async def test_crawlbase_replay_reads_the_storage_api_with_either_token(storage: StorageAPI, tmp_path: Path) -> None:
    audit, judge, url = await _crawlbase_decisions(tmp_path)
    storage.silos[JS_TOKEN]["RIDJS42"] = (url, BOILING_MD)  # stored by a JS-token crawl
    [replay] = await areplay(audit, "RIDJS42", settings=_crawlbase_settings(storage))
    assert replay.text_source == "crawlbase_storage" and replay.text == BOILING_MD
    assert replay.content_hash_ok is True and replay.note is None
    assert replay.stored is not None and (replay.stored.url, replay.stored.original_status) == (url, 200)
    assert replay.passages == judge.calls[0][0].passages
    assert replay.record is not None and replay.record.rid == "RIDJS42" and replay.record.fetcher == "crawlbase"
    assert [(q["token"], q["rid"]) for q in storage.requests] == [([TOKEN], ["RIDJS42"]), ([JS_TOKEN], ["RIDJS42"])]
    # The JS token alone is enough, and the row id replays the same page.
    storage.requests.clear()
    [by_id] = await areplay(audit, replay.record.id, settings=_crawlbase_settings(storage, normal=False))
    assert by_id.text == BOILING_MD and [q["token"] for q in storage.requests] == [[JS_TOKEN]]


async def test_crawlbase_replay_falls_back_to_the_local_copy(
    storage: StorageAPI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    audit, _, url = await _crawlbase_decisions(tmp_path)
    storage.silos[TOKEN]["RIDJS42"] = (url, BOILING_MD)
    storage.fail_with = 500
    [replay] = await areplay(audit, "RIDJS42", settings=_crawlbase_settings(storage))
    assert replay.text_source == "local" and replay.text == BOILING_MD and replay.content_hash_ok is True
    assert replay.note is not None and "HTTP 500" in replay.note and "local copy" in replay.note
    storage.fail_with = None
    [unknown] = await areplay(audit, "RIDJS42", settings=_crawlbase_settings(storage, normal=False))
    assert unknown.text_source == "local" and "has no page for rid" in (unknown.note or "")
    [no_token] = await areplay(audit, "RIDJS42", settings=Settings())
    assert no_token.text_source == "local" and "CRAWLBASE_TOKEN" in (no_token.note or "")
    bad = Settings.model_validate({"crawlbase_token": "wrong-token-xyz", "crawlbase_storage_url": storage.url})
    [rejected] = await areplay(audit, "RIDJS42", settings=bad)
    assert "rejected CRAWLBASE_TOKEN (HTTP 401)" in (rejected.note or "") and "wrong-token-xyz" not in (
        rejected.note or ""
    )
    assert storage.requests, "the Storage API was asked"
    everything = caplog.text + " ".join(r.model_dump_json() for r in (replay, unknown, no_token, rejected))
    assert TOKEN not in everything and JS_TOKEN not in everything and "wrong-token-xyz" not in everything


async def test_a_rid_without_a_local_row_is_read_from_storage(storage: StorageAPI, tmp_path: Path) -> None:
    audit = AuditStore(tmp_path / "a.sqlite3")
    storage.silos[TOKEN]["ONLYREMOTE"] = ("https://x.example/", "Remote text.")
    [replay] = await areplay(audit, "ONLYREMOTE", settings=_crawlbase_settings(storage))
    assert replay.record is None and replay.text == "Remote text." and replay.text_source == "crawlbase_storage"
    with pytest.raises(LookupError, match="has no page for rid 'MISSING'") as info:
        await areplay(audit, "MISSING", settings=_crawlbase_settings(storage))
    assert TOKEN not in str(info.value) and JS_TOKEN not in str(info.value)


async def test_tokens_never_reach_rows_logs_or_files(
    storage: StorageAPI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    logging.getLogger("httpx").setLevel(logging.DEBUG)
    audit, _, url = await _crawlbase_decisions(tmp_path)
    storage.silos[TOKEN]["RIDJS42"] = (url, BOILING_MD)
    replays = await areplay(audit, "RIDJS42", settings=_crawlbase_settings(storage))
    assert replays[0].text_source == "crawlbase_storage"
    # httpx did log the call, from a URL that never held the token (no filter needed to mask it).
    assert "HTTP Request: GET" in caplog.text and "rid=RIDJS42" in caplog.text and "token=" not in caplog.text
    assert TOKEN not in caplog.text and JS_TOKEN not in caplog.text
    audit.close()
    for f in tmp_path.iterdir():
        data = f.read_bytes()
        assert TOKEN.encode() not in data and JS_TOKEN.encode() not in data, f
    exported = io_export(audit)
    assert TOKEN not in exported


def io_export(audit: AuditStore) -> str:
    import io

    buf = io.StringIO()
    audit.export(buf, "jsonl")
    audit.export(buf, "csv")
    return buf.getvalue()


def test_recorder_is_cheap_enough_to_run_inline(tmp_path: Path) -> None:
    """The verifier calls recorders on the event loop; one row must stay well under a millisecond
    or two once the page text is stored (the text is hashed, compressed and written only once)."""
    import time

    audit = AuditStore(tmp_path / "a.sqlite3")
    page = _page("https://a.example/x", "Water boils at 100 degrees Celsius. " * 2000)
    audit.record(_decision(page))
    start = time.perf_counter()
    for _ in range(200):
        audit.record(_decision(page))
    per_row = (time.perf_counter() - start) / 200
    # About 0.5 ms on an idle machine. A budget, not an event: the bound leaves fifty times that for
    # a loaded one and fails a recorder gone slow by an order of magnitude (a page text compressed
    # again per row costs only ~0.1 ms more and is not what this catches).
    assert per_row < 0.025, f"{per_row * 1000:.2f} ms per audit row"


def test_store_repr_and_env(tmp_path: Path) -> None:
    cache = PageCache(tmp_path / "c.sqlite3")
    assert "c.sqlite3" in repr(cache)
    assert os.fspath(tmp_path) in repr(FetchOnce(ScriptedFetcher({}), store=cache))


def test_a_zero_byte_audit_file_is_taken_as_a_new_store_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    emptied = tmp_path / "audit.sqlite3"
    emptied.write_bytes(b"")  # a store truncated (or touched): whatever it held is gone
    with caplog.at_level(logging.WARNING, logger="guardrail.store"):
        store = AuditStore(emptied)
        assert store.count() == 0
        store.close()
        again = AuditStore(emptied)  # now a store: nothing more to say
        assert again.count() == 0
        again.close()
        fresh = AuditStore(tmp_path / "new.sqlite3")  # a file that did not exist: nothing to say either
        fresh.count()
        fresh.close()
    said = [r.getMessage() for r in caplog.records if r.name == "guardrail.store"]
    assert len(said) == 1 and str(emptied) in said[0] and "empty file (0 bytes)" in said[0], said
