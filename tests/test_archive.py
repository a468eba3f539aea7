"""Archived copies of dead links (issue 22): the Wayback availability API spoken by a local server
(guardrail.testing.WaybackSite), the snapshot fetched through the verifier's own fetcher, the claim
judged against it. The judge and embedder are the test doubles; nothing leaves 127.0.0.1."""

from __future__ import annotations

import csv
import json
from collections.abc import AsyncIterator, Iterator
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from guardrail import AnswerStream, Label, Policy, Settings, VerdictKind, Verifier, apply_policy, build_verifier
from guardrail.apps.batch.engine import arun_batch
from guardrail.apps.batch.rows import row_from_data
from guardrail.apps.cli import app as cli
from guardrail.apps.demo import article
from guardrail.apps.server import create_app
from guardrail.archive import WaybackArchive, raw_snapshot_url, wayback_timestamp
from guardrail.fetch.direct import DirectFetcher
from guardrail.runtime import build_archive
from guardrail.testing import WAYBACK_TIMESTAMP, HashEmbedder, LoopbackSite, OverlapJudge, Route, WaybackSite
from tests.fixtures.llm_server import FakeLLMServer, Received, Reply, openai_judge_env, openai_verdict

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
WATER = "Water boils at 100 degrees Celsius at sea level"
STATED = "The Alder River is 217 kilometres long"


@pytest.fixture
def wayback() -> Iterator[WaybackSite]:
    with WaybackSite() as server:
        yield server


@pytest.fixture
def origin(pages: LoopbackSite) -> LoopbackSite:
    """The cited site: the session's fixture pages, where /alder is gone (404) and /live is not."""
    pages.routes.setdefault("/live", Route(body=article("Tomatoes", ["Tomatoes need sunlight."])))
    return pages


def verifier(
    origin: LoopbackSite, wayback: WaybackSite, *, stage: Any = "wayback", snapshots_allowed: bool = True, **kw: Any
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
    origin: LoopbackSite, wayback: WaybackSite
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
    assert raw.endswith(f"/web/{WAYBACK_TIMESTAMP}id_/{dead}") and wayback.snapshot_hits() == 1  # the raw form, fetched


def test_a_dead_link_whose_snapshot_contradicts_the_claim_reads_contradicted(
    origin: LoopbackSite, wayback: WaybackSite
) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, CONTRADICTS)
    v = verifier(origin, wayback).verify(CLAIM, [dead]).citations[0]
    assert (v.label, v.reason, v.archived_at) == (Label.contradicted, "archived_copy", TAKEN)
    assert v.evidence_quote is not None and "190 kilometres" in v.evidence_quote


@pytest.mark.parametrize("failure", ["no snapshot", "503", "timeout"])
def test_the_archive_failing_leaves_the_dead_link(origin: LoopbackSite, wayback: WaybackSite, failure: str) -> None:
    dead = origin.url("/alder")
    if failure == "503":
        wayback.archive(dead, SUPPORTS)
        wayback.status = 503
    elif failure == "timeout":
        wayback.archive(dead, SUPPORTS)
        wayback.hold = True  # the lookup waits until the test ends; the client gives up first
    # Only the held lookup needs a short limit; the others answer at once, and a loaded machine
    # must not turn them into a timeout before the archive was even asked.
    limit = 1.0 if failure == "timeout" else 15.0
    v = verifier(origin, wayback, archive_timeout=limit).verify(CLAIM, [dead]).citations[0]
    assert (v.label, v.kind, v.reason) == (Label.unreachable, VerdictKind.dead_link, "http_404")
    assert v.archived_url is None and v.archived_at is None
    # Asked once, never again; a lookup given up on may not have reached the held archive yet.
    assert len(wayback.asked) == 1 or (failure == "timeout" and not wayback.asked)
    assert wayback.snapshot_hits() == 0


def test_the_snapshot_url_passes_the_ssrf_guard_like_any_other(origin: LoopbackSite, wayback: WaybackSite) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, SUPPORTS)
    # The archive answers a snapshot on a loopback port the guard does not let through.
    v = verifier(origin, wayback, snapshots_allowed=False).verify(CLAIM, [dead]).citations[0]
    assert (v.label, v.kind, v.reason, v.archived_url) == (Label.unreachable, VerdictKind.dead_link, "http_404", None)
    assert wayback.lookups == 1 and wayback.snapshot_hits() == 0  # refused before any connection


def test_archive_off_sends_the_archive_nothing(origin: LoopbackSite, wayback: WaybackSite) -> None:
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


def test_links_that_are_not_gone_or_are_private_are_never_looked_up(origin: LoopbackSite, wayback: WaybackSite) -> None:
    private = "http://127.0.0.1:9/alder"  # a loopback port the guard refuses: blocked_address
    report = verifier(origin, wayback).verify(CLAIM, [origin.url("/live"), private, "ftp://example.org/x"])
    assert [v.reason for v in report.citations] == ["no_relevant_passage", "blocked_address", "invalid_url"]
    assert wayback.hits == {}


def test_one_lookup_per_unique_url_per_run_and_the_answer_date_is_asked_for(
    origin: LoopbackSite, wayback: WaybackSite
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


async def test_a_batch_run_looks_each_dead_link_up_once(origin: LoopbackSite, wayback: WaybackSite) -> None:
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


def test_the_service_guards_with_archived_copies(origin: LoopbackSite, wayback: WaybackSite) -> None:
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


def test_repair_points_a_dead_reference_at_its_archived_copy(origin: LoopbackSite, wayback: WaybackSite) -> None:
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


async def test_a_stream_looks_a_dead_link_up_once_at_the_answer_date_and_mends_each_piece(
    origin: LoopbackSite, wayback: WaybackSite
) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, SUPPORTS)
    answer = f"{CLAIM} ({dead})\n\nIndeed, the Alder River is 217 kilometres long ({dead}).\n"

    async def chunks() -> AsyncIterator[str]:
        for line in answer.splitlines(keepends=True):
            yield line

    stream = AnswerStream(
        verifier(origin, wayback), policy=Policy.preset("repair"), answer_date=date(2024, 5, 1), concurrency=0
    )
    text = "".join([piece.text async for piece in stream.pieces(chunks())])
    assert text == answer.replace(f"{dead})", f"{wayback.snapshot_url(dead)} 🗄 archived copy)")
    assert wayback.asked == [(dead, "20240501000000")]  # two pieces, judged at once: one lookup


def test_without_an_answer_date_the_archive_is_asked_for_now(origin: LoopbackSite, wayback: WaybackSite) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, SUPPORTS)
    before = datetime.now(timezone.utc).replace(microsecond=0)
    verifier(origin, wayback).verify(CLAIM, [dead])
    after = datetime.now(timezone.utc)
    ((url, asked),) = wayback.asked
    assert url == dead and before <= datetime.strptime(asked, "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc) <= after


def test_the_service_re_points_a_misattributed_citation_and_asks_for_the_answer_date(
    origin: LoopbackSite, wayback: WaybackSite
) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, SUPPORTS)
    sources = [origin.url("/boiling"), origin.url("/titanic")]
    answer = f"{WATER} [2]. {CLAIM} ([notes]({dead}))"
    mended = f"{WATER} [1] ↪ citation corrected. {CLAIM} ([notes]({wayback.snapshot_url(dead)}) 🗄 archived copy)"
    request = {"answer": answer, "sources": sources, "answer_date": "2024-05-01"}
    with TestClient(create_app(verifier=verifier(origin, wayback))) as client:
        for policy in ("repair", {"preset": "default", "repair": True}):
            body = client.post("/v1/guard", json={**request, "policy": policy}).json()
            assert body["text"] == mended
            assert [(r["why"], r["old_citation"], r["new_citation"], r["new_url"]) for r in body["repairs"]] == [
                ("repointed", "[2]", "[1]", sources[0]),
                ("archived_copy", f"[notes]({dead})", wayback.snapshot_url(dead), wayback.snapshot_url(dead)),
            ]
            (suggestion,) = body["report"]["claims"][0]["suggested_citations"]
            assert (suggestion["source"], suggestion["marker"]) == (sources[0], "[1]")
        plain = client.post("/v1/guard", json=request).json()  # not repairing: nothing more is checked
    assert plain["repairs"] == [] and plain["report"]["claims"][0]["suggested_citations"] == []
    assert wayback.asked == [(dead, "20240501000000")] * 3  # one lookup per request, at the answer's date


def alder_model(received: Received) -> Reply:
    """A tiny 'model' for the fake LLM server: the Alder claim is supported by passages stating it
    (a verbatim quote, so the quote guard keeps it); anything else is not found."""
    claim, passages = received.claim_and_passages
    if claim and "217 kilometres" in claim and STATED in passages:
        return openai_verdict("supported", STATED)
    return openai_verdict("not_found", "")


@pytest.fixture
def llm_env() -> Iterator[dict[str, str]]:
    """Settings, as environment variables, whose judge is the fake LLM server's alder_model."""
    with FakeLLMServer() as llm:
        llm.responder = alder_model
        yield openai_judge_env(llm)


def test_a_service_built_from_settings_follows_guardrail_archive(
    origin: LoopbackSite, wayback: WaybackSite, llm_env: dict[str, str]
) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, SUPPORTS)
    env = {**llm_env, "GUARDRAIL_WAYBACK_URL": wayback.base, "GUARDRAIL_ALLOW_PRIVATE_HOSTS": "1"}
    request = {"answer": f"{CLAIM} ([notes]({dead}))", "policy": "repair", "answer_date": "2024-05-01T06:07:08Z"}
    with TestClient(create_app(Settings.from_env(env), warm=False)) as client:
        assert client.post("/v1/guard", json=request).json()["repairs"] == []
    assert wayback.hits == {}  # GUARDRAIL_ARCHIVE unset: nothing is sent to the archive
    with TestClient(create_app(Settings.from_env({**env, "GUARDRAIL_ARCHIVE": "wayback"}), warm=False)) as client:
        body = client.post("/v1/guard", json=request).json()
    assert body["text"] == f"{CLAIM} ([notes]({wayback.snapshot_url(dead)}) 🗄 archived copy)"
    assert wayback.asked == [(dead, "20240501060708")]


def test_cli_batch_archive_wayback_reads_dead_links_from_their_snapshots(
    origin: LoopbackSite, wayback: WaybackSite, llm_env: dict[str, str], tmp_path: Path
) -> None:
    dead = origin.url("/alder")
    wayback.archive(dead, SUPPORTS)
    rows = [{"id": "a", "claim": CLAIM, "urls": [dead]}, {"id": "b", "answer": f"{CLAIM} [1]", "sources": [dead]}]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "out.csv"
    args = ["batch", str(data), "--out", str(out), "--allow-private-hosts", "--fresh"]
    env = {**llm_env, "GUARDRAIL_WAYBACK_URL": wayback.base}
    off = CliRunner().invoke(cli, args, env=env)
    assert off.exit_code == 0, off.output
    assert wayback.hits == {}  # off unless asked for
    result = CliRunner().invoke(cli, [*args, "--archive", "wayback", "--repair"], env=env)
    assert result.exit_code == 0, result.output
    with out.open(newline="", encoding="utf-8") as fh:
        assert [(r["id"], r["label"], r["reason"], r["archived_url"]) for r in csv.DictReader(fh)] == [
            ("a", "supported", "archived_copy", wayback.snapshot_url(dead)),
            ("b", "supported", "archived_copy", wayback.snapshot_url(dead)),
        ]
    assert "repairs=1 archived_copy, 0 repointed" in result.stdout.splitlines()
    assert wayback.lookups == 1  # one lookup for the run, the two rows citing one URL
