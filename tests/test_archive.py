"""Archived copies of dead links (issue 22): the Wayback availability API spoken by a local server
(tests/fixtures/wayback.py), the snapshot fetched through the verifier's own fetcher, the claim
judged against it. The judge and embedder are the test doubles; nothing leaves 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timezone
from typing import Any

import pytest
from fastapi.testclient import TestClient

from guardrail import Label, Policy, Settings, VerdictKind, Verifier, apply_policy, build_verifier
from guardrail.apps.batch.engine import arun_batch
from guardrail.apps.batch.rows import row_from_data
from guardrail.apps.demo import article
from guardrail.apps.server import create_app
from guardrail.archive import WaybackArchive, raw_snapshot_url, wayback_timestamp
from guardrail.fetch.direct import DirectFetcher
from guardrail.runtime import build_archive
from tests.fakes import HashEmbedder, OverlapJudge
from tests.fixtures.server import FixtureServer, Route
from tests.fixtures.wayback import TIMESTAMP, FakeWayback

CLAIM = "The Alder River is 217 kilometres long."
SUPPORTS = article(
    "The Alder River",
    [
        "The Alder River is a river of the northern provinces. The Alder River is 217 kilometres long "
        "from its source in the Grey Mountains to its mouth in the Northern Sea.",
        "Its valley has been farmed since the Bronze Age, and water mills still stand on its banks.",
    ],
)
CONTRADICTS = SUPPORTS.replace("217 kilometres", "190 kilometres")
TAKEN = datetime(2013, 9, 19, 4, 46, 12, tzinfo=timezone.utc)


@pytest.fixture
def wayback() -> Iterator[FakeWayback]:
    with FakeWayback() as server:
        yield server


@pytest.fixture
def origin(pages: FixtureServer) -> FixtureServer:
    """The cited site: the session's fixture pages, where /alder is gone (404) and /live is not."""
    pages.routes.setdefault("/live", Route(body=article("Tomatoes", ["Tomatoes need sunlight."])))
    return pages


def verifier(
    origin: FixtureServer, wayback: FakeWayback, *, stage: Any = "wayback", snapshots_allowed: bool = True, **kw: Any
) -> Verifier:
    """A verifier whose fetcher lets the origin through the SSRF guard (and the archive's
    snapshots when ``snapshots_allowed``), its archive ``stage`` (build_verifier's ``archive``)
    at the local Wayback; ``kw`` are settings."""
    settings = Settings(wayback_url=wayback.base, **kw)
    hosts = [f"127.0.0.1:{origin.port}"] + ([f"127.0.0.1:{wayback.port}"] if snapshots_allowed else [])
    fetcher = DirectFetcher.from_settings(settings, allowed_hosts=hosts)
    return build_verifier(
        settings,
        cache=False,
        audit=False,
        fetcher=fetcher,
        judge=OverlapJudge(),
        embedder=HashEmbedder(),
        archive=stage,
    )


def test_a_dead_link_whose_snapshot_supports_the_claim_reads_supported_against_the_copy(
    origin: FixtureServer, wayback: FakeWayback
) -> None:
    dead = origin.url("/alder")
    raw = wayback.archive(dead, SUPPORTS)
    report = verifier(origin, wayback).verify(CLAIM, [dead])
    v = report.citations[0]
    assert (v.label, v.reason, report.overall) == (Label.supported, "archived_copy", Label.supported)
    assert v.archived_url == wayback.snapshot_url(dead) and v.archived_at == TAKEN
    assert v.url == dead and v.original_status == 404  # the citation itself is still dead
    assert v.evidence_quote is not None and v.evidence_quote.startswith("The Alder River is 217 kilometres long from")
    assert report.model_dump(mode="json")["citations"][0]["archived_at"] == "2013-09-19T04:46:12Z"
    assert [url for url, _ in wayback.asked] == [dead]
    assert raw.endswith(f"/web/{TIMESTAMP}id_/{dead}") and wayback.snapshot_hits() == 1  # the raw form, fetched


def test_a_dead_link_whose_snapshot_contradicts_the_claim_reads_contradicted(
    origin: FixtureServer, wayback: FakeWayback
) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, CONTRADICTS)
    v = verifier(origin, wayback).verify(CLAIM, [dead]).citations[0]
    assert (v.label, v.reason, v.archived_at) == (Label.contradicted, "archived_copy", TAKEN)
    assert v.evidence_quote is not None and "190 kilometres" in v.evidence_quote


@pytest.mark.parametrize("failure", ["no snapshot", "503", "timeout"])
def test_the_archive_failing_leaves_the_dead_link(origin: FixtureServer, wayback: FakeWayback, failure: str) -> None:
    dead = origin.url("/alder")
    if failure == "503":
        wayback.archive(dead, SUPPORTS)
        wayback.status = 503
    elif failure == "timeout":
        wayback.archive(dead, SUPPORTS)
        wayback.hold = True  # the lookup waits until the test ends; the client gives up first
    v = verifier(origin, wayback, archive_timeout=0.5).verify(CLAIM, [dead]).citations[0]
    assert (v.label, v.kind, v.reason) == (Label.unreachable, VerdictKind.dead_link, "http_404")
    assert v.archived_url is None and v.archived_at is None
    assert len(wayback.asked) == 1 and wayback.snapshot_hits() == 0


def test_the_snapshot_url_passes_the_ssrf_guard_like_any_other(origin: FixtureServer, wayback: FakeWayback) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, SUPPORTS)
    # The archive answers a snapshot on a loopback port the guard does not let through.
    v = verifier(origin, wayback, snapshots_allowed=False).verify(CLAIM, [dead]).citations[0]
    assert (v.label, v.kind, v.reason, v.archived_url) == (Label.unreachable, VerdictKind.dead_link, "http_404", None)
    assert wayback.lookups == 1 and wayback.snapshot_hits() == 0  # refused before any connection


def test_archive_off_sends_the_archive_nothing(origin: FixtureServer, wayback: FakeWayback) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, SUPPORTS)
    for off in (None, False, "off"):  # the default (GUARDRAIL_ARCHIVE unset) and off on purpose
        v = verifier(origin, wayback, stage=off).verify(CLAIM, [dead]).citations[0]
        assert (v.label, v.archived_url) == (Label.unreachable, None)
    assert wayback.hits == {}
    # And on when the settings say so, as GUARDRAIL_ARCHIVE=wayback does.
    on = Settings.from_env({"GUARDRAIL_ARCHIVE": "wayback", "GUARDRAIL_WAYBACK_URL": wayback.base})
    assert isinstance(build_archive(None, on), WaybackArchive) and build_archive(None, Settings()) is None
    assert verifier(origin, wayback, stage=None, archive="wayback").verify(CLAIM, [dead]).overall == Label.supported


def test_links_that_are_not_gone_or_are_private_are_never_looked_up(
    origin: FixtureServer, wayback: FakeWayback
) -> None:
    private = "http://127.0.0.1:9/alder"  # a loopback port the guard refuses: blocked_address
    report = verifier(origin, wayback).verify(CLAIM, [origin.url("/live"), private, "ftp://example.org/x"])
    assert [v.reason for v in report.citations] == ["no_relevant_passage", "blocked_address", "invalid_url"]
    assert wayback.hits == {}


def test_one_lookup_per_unique_url_per_run_and_the_answer_date_is_asked_for(
    origin: FixtureServer, wayback: FakeWayback
) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, SUPPORTS)
    v = verifier(origin, wayback)
    answer = (
        f"{CLAIM} [1] It flows into the Northern Sea [2]. It rises in the Grey Mountains ({dead}#source).\n\n"
        f"[1]: {dead}\n[2]: {dead}\n"
    )
    report = v.verify_answer(answer, answer_date=date(2024, 5, 1))
    assert report.claims[0].verdicts[0].archived_url == wayback.snapshot_url(dead)
    assert wayback.asked == [(dead, "20240501000000")]


async def test_a_batch_run_looks_each_dead_link_up_once(origin: FixtureServer, wayback: FakeWayback) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, SUPPORTS)
    rows = [
        row_from_data(1, {"id": "a", "claim": CLAIM, "urls": [dead]}),
        row_from_data(2, {"id": "b", "answer": f"{CLAIM} [1]", "sources": [dead]}),
        row_from_data(3, {"id": "c", "claim": CLAIM, "urls": [dead], "date": "2020-01-02T03:04:05Z"}),
    ]
    results, _ = await arun_batch(rows, verifier(origin, wayback), concurrency=2)
    assert [r.verdicts()[0][2].reason for r in results] == ["archived_copy"] * 3
    # One lookup for the rows without a date (now), one for the dated row.
    assert len(wayback.asked) == 2 and (dead, "20200102030405") in wayback.asked
    csv_row = results[0].citation_rows()[0]
    assert (csv_row.archived_url, csv_row.archived_at) == (wayback.snapshot_url(dead), "2013-09-19T04:46:12+00:00")


def test_the_service_guards_with_archived_copies(origin: FixtureServer, wayback: FakeWayback) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, SUPPORTS)
    answer = f"{CLAIM} ([notes]({dead}))"
    with TestClient(create_app(verifier=verifier(origin, wayback))) as client:
        body = client.post("/v1/guard", json={"answer": answer, "policy": "repair"}).json()
        plain = client.post("/v1/guard", json={"answer": answer}).json()
    assert body["text"] == f"{CLAIM} ([notes]({wayback.snapshot_url(dead)}) 🗄 archived copy)"
    assert [(r["why"], r["old_url"], r["new_url"]) for r in body["repairs"]] == [
        ("archived_copy", dead, wayback.snapshot_url(dead))
    ]
    # Without repair the verdict is the copy's (supported), the link as written, nothing mended.
    assert plain["text"] == answer and plain["repairs"] == []
    assert plain["report"]["claims"][0]["verdicts"][0]["reason"] == "archived_copy"


def test_repair_points_a_dead_reference_at_its_archived_copy(origin: FixtureServer, wayback: FakeWayback) -> None:
    dead, live = origin.url("/alder"), origin.url("/live")
    wayback.archive(dead, SUPPORTS)
    answer = f"{CLAIM} [1] Tomatoes need sunlight [2].\n\n[1]: {dead}\n[2]: {live}\n"
    guarded = apply_policy(verifier(origin, wayback).verify_answer(answer), Policy.preset("repair"), "html")
    assert f"[1]: {wayback.snapshot_url(dead)}\n[2]: {live}\n" in guarded.text
    assert '[1] <span class="citation-verdict citation-verdict--archived-copy" title="The Alder River' in guarded.text
    assert [(r.why.value, r.old_citation, r.new_citation) for r in guarded.repairs] == [("archived_copy", "[1]", "[1]")]
    # A support weaker than the policy's min_confidence mends nothing: the reference stays as written.
    report = verifier(origin, wayback).verify_answer(answer)
    claim = report.claims[0]
    weak = claim.model_copy(update={"verdicts": [claim.verdicts[0].model_copy(update={"confidence": 0.4})]})
    report = report.model_copy(update={"claims": [weak, *report.claims[1:]]})
    guarded = apply_policy(report, Policy(repair=True, min_confidence=0.5))
    assert guarded.repairs == [] and f"[1]: {dead}\n" in guarded.text


def test_wayback_helpers() -> None:
    assert raw_snapshot_url("http://web.archive.org/web/20130919044612/http://example.com/") == (
        "http://web.archive.org/web/20130919044612id_/http://example.com/"
    )
    assert raw_snapshot_url("https://web.archive.org/web/20130919044612im_/https://x.org/a?b=1") == (
        "https://web.archive.org/web/20130919044612id_/https://x.org/a?b=1"
    )
    assert raw_snapshot_url("https://example.org/not/a/snapshot") is None
    assert wayback_timestamp(datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc)) == "20240501123000"
    with pytest.raises(ValueError, match="http"):
        WaybackArchive("ftp://archive.example")
