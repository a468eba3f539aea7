"""CLI: the page cache and audit store behind ``guardrail verify``, ``guardrail replay`` and
``guardrail audit list|show|export``."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from guardrail import ClaimTask, Fact, FetchedPage, Settings, Verifier
from guardrail.apps.cli import app
from guardrail.fetch.direct import DirectFetcher
from guardrail.store import AuditStore
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge, Route
from tests.fixtures.storage_api import JS_TOKEN, TOKEN, StorageAPI

runner = CliRunner(env={"COLUMNS": "200"})  # tables and panels are laid out for a known width
CLAIM = "At sea level pure water boils at 100 degrees Celsius."


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "GUARDRAIL_CACHE": str(tmp_path / "pages.sqlite3"),
        "GUARDRAIL_AUDIT_DB": str(tmp_path / "audit.sqlite3"),
        **extra,
    }


# -- guardrail verify with the stores ---------------------------------------------------------
# Only URLs decided without a judge, so no model is loaded whatever judge is installed.


def test_verify_caches_pages_and_records_decisions(pages: LoopbackSite, tmp_path: Path) -> None:
    gone, bad = pages.url("/gone-410"), "ftp://files.example/x"
    args = ["verify", "--claim", CLAIM, "--allow-private-hosts", gone, bad]
    first = runner.invoke(app, args, env=_env(tmp_path))
    assert first.exit_code == 0, first.output
    hits = pages.hits["/gone-410"]
    second = runner.invoke(app, [*args, "--json"], env=_env(tmp_path))
    assert second.exit_code == 0, second.output
    assert pages.hits["/gone-410"] == hits  # served from the page cache
    report = json.loads(second.stdout)
    assert [c["reason"] for c in report["citations"]] == ["http_410", "invalid_url"]
    rows = AuditStore(tmp_path / "audit.sqlite3").list_records()
    assert [(r.url, r.reason) for r in rows] == [(bad, "invalid_url"), (gone, "http_410")] * 2
    assert "guardrail replay 1" in first.stderr and "recorded as 1, 2" in first.stderr


def test_no_cache_and_no_audit(pages: LoopbackSite, tmp_path: Path) -> None:
    gone = pages.url("/gone-410")
    args = ["verify", "--claim", CLAIM, "--allow-private-hosts", "--no-cache", "--no-audit", gone]
    for _ in range(2):
        before = pages.hits.get("/gone-410", 0)
        result = runner.invoke(app, args, env=_env(tmp_path))
        assert result.exit_code == 0, result.output
        assert pages.hits["/gone-410"] == before + 1
    assert not (tmp_path / "pages.sqlite3").exists() and not (tmp_path / "audit.sqlite3").exists()


def test_env_off_turns_the_stores_off(pages: LoopbackSite, tmp_path: Path) -> None:
    env = {"GUARDRAIL_CACHE": "off", "GUARDRAIL_AUDIT_DB": "off", "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    result = runner.invoke(app, ["verify", "--claim", CLAIM, "--allow-private-hosts", pages.url("/gone-410")], env=env)
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "xdg").exists() and "audit:" not in result.stderr


def test_defaults_live_in_the_user_cache_folder(pages: LoopbackSite, tmp_path: Path) -> None:
    env = {"GUARDRAIL_CACHE": "", "GUARDRAIL_AUDIT_DB": "", "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    result = runner.invoke(app, ["verify", "--claim", CLAIM, "--allow-private-hosts", pages.url("/gone-404")], env=env)
    assert result.exit_code == 0, result.output
    folder = tmp_path / "xdg" / "guardrail"
    assert (folder / "pages.sqlite3").is_file() and (folder / "audit.sqlite3").is_file()
    assert (folder.stat().st_mode & 0o777) == 0o700
    listed = runner.invoke(app, ["audit", "list", "--json"], env=env)
    assert [r["reason"] for r in json.loads(listed.stdout)] == ["http_404"]


def test_an_unusable_audit_store_is_an_input_error(pages: LoopbackSite, tmp_path: Path) -> None:
    (tmp_path / "audit.sqlite3").write_bytes(b"not a database at all" * 50)
    result = runner.invoke(
        app, ["verify", "--claim", CLAIM, "--allow-private-hosts", pages.url("/gone-410")], env=_env(tmp_path)
    )
    assert result.exit_code == 2
    assert "audit.sqlite3" in result.stderr and "--no-audit" in result.stderr


# -- browsing a populated store -------------------------------------------------------------------


@pytest.fixture
def populated(pages: LoopbackSite, tmp_path: Path) -> Iterator[tuple[Path, OverlapJudge]]:
    """An audit store holding a supported, a contradicted, an unreachable and a fact decision."""
    db = tmp_path / "audit.sqlite3"
    audit = AuditStore(db)
    judge = OverlapJudge()
    verifier = Verifier(
        fetcher=DirectFetcher(allow_private_hosts=True),
        judge=judge,
        embedder=HashEmbedder(),
        recorders=[audit],
        settings=Settings(),
    )
    verifier.verify_many(
        [
            ClaimTask(CLAIM, [pages.url("/boiling"), pages.url("/gone-404")]),
            ClaimTask("Water boils at 50 degrees Celsius at sea level.", [pages.url("/boiling")]),
            ClaimTask("Markup [bold]stays[/bold] text.", [Fact("Markup [bold]stays[/bold] text.", "fact:0")]),
        ]
    )
    audit.close()
    yield db, judge


def test_audit_list_table_json_and_filters(populated: tuple[Path, OverlapJudge], pages: LoopbackSite) -> None:
    db, _ = populated
    table = runner.invoke(app, ["audit", "list", "--db", str(db)], env={"COLUMNS": "160"})
    assert table.exit_code == 0, table.output
    for word in ("supported", "contradicted", "unreachable", "http_404", "/boiling"):
        assert word in table.stdout
    rows = json.loads(runner.invoke(app, ["audit", "list", "--db", str(db), "--json"]).stdout)
    assert [r["id"] for r in rows] == [4, 3, 2, 1]
    contradicted = runner.invoke(app, ["audit", "list", "--db", str(db), "--label", "contradicted", "--json"])
    [row] = json.loads(contradicted.stdout)
    assert row["claim"].startswith("Water boils at 50") and row["evidence_quote"]
    limited = runner.invoke(app, ["audit", "list", "--db", str(db), "--limit", "1", "--json"])
    assert [r["id"] for r in json.loads(limited.stdout)] == [4]
    by_url = runner.invoke(app, ["audit", "list", "--db", str(db), "--url", "gone-404", "--json"])
    assert [r["reason"] for r in json.loads(by_url.stdout)] == ["http_404"]
    assert json.loads(runner.invoke(app, ["audit", "list", "--db", str(db), "--since", "1h", "--json"]).stdout)
    bad = runner.invoke(app, ["audit", "list", "--db", str(db), "--label", "great"])
    assert bad.exit_code == 2 and "label must be one of" in bad.stderr


def test_audit_show(populated: tuple[Path, OverlapJudge]) -> None:
    db, judge = populated
    shown = runner.invoke(app, ["audit", "show", "1", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert CLAIM in shown.stdout and "overlap (overlap-test-judge)" in shown.stdout
    assert "What the judge saw" in shown.stdout
    as_json = json.loads(runner.invoke(app, ["audit", "show", "1", "--db", str(db), "--json"]).stdout)
    assert as_json["passages"] == judge.calls[0][0].passages
    fact = runner.invoke(app, ["audit", "show", "4", "--db", str(db)])
    assert "[bold]stays[/bold]" in fact.stdout  # page/fact text is never rich markup
    missing = runner.invoke(app, ["audit", "show", "99", "--db", str(db)])
    assert missing.exit_code == 2 and "no audit row with id 99" in missing.stderr


def test_audit_export(populated: tuple[Path, OverlapJudge], tmp_path: Path) -> None:
    db, _ = populated
    out = tmp_path / "out" / "audit.csv"
    result = runner.invoke(app, ["audit", "export", "--format", "csv", "--out", str(out), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "exported 4 rows" in result.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [r["id"] for r in rows] == ["1", "2", "3", "4"]
    assert rows[1]["reason"] == "http_404" and rows[1]["rid"] == "" and json.loads(rows[0]["passages"])
    jsonl = runner.invoke(app, ["audit", "export", "--db", str(db), "--label", "supported"])
    lines = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert [r["id"] for r in lines] == [1, 4]
    bad = runner.invoke(app, ["audit", "export", "--format", "xml", "--db", str(db)])
    assert bad.exit_code == 2 and "jsonl or csv" in bad.stderr


def test_replay_shows_what_the_judge_saw(populated: tuple[Path, OverlapJudge], pages: LoopbackSite) -> None:
    db, judge = populated
    result = runner.invoke(app, ["replay", "1", "--db", str(db), "--page"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())  # rich wraps lines; compare words
    assert CLAIM in text and pages.url("/boiling") in text and "supported" in text
    for passage in judge.calls[0][0].passages:
        assert passage in result.stdout  # verbatim, line breaks and all
    assert "matches the recorded hash" in text and "local copy" in text
    [replay] = json.loads(runner.invoke(app, ["replay", "1", "--db", str(db), "--json"]).stdout)
    assert replay["passages"] == judge.calls[0][0].passages
    assert replay["text_source"] == "local" and replay["content_hash_ok"] is True
    not_judged = runner.invoke(app, ["replay", "2", "--db", str(db)])
    assert "decided without judging" in not_judged.stdout


def test_replay_errors(tmp_path: Path, populated: tuple[Path, OverlapJudge]) -> None:
    db, _ = populated
    missing = runner.invoke(app, ["replay", "1", "--db", str(tmp_path / "nope.sqlite3")])
    assert missing.exit_code == 2 and "no audit store at" in missing.stderr
    assert not (tmp_path / "nope.sqlite3").exists()  # reading never creates a store
    unknown = runner.invoke(app, ["replay", "424242", "--db", str(db)])
    assert unknown.exit_code == 2 and "no audit row with id or rid '424242'" in unknown.stderr
    off = runner.invoke(app, ["replay", "1"], env={"GUARDRAIL_AUDIT_DB": "off"})
    assert off.exit_code == 2 and "audit store is off" in off.stderr


def test_replay_by_env_path(populated: tuple[Path, OverlapJudge]) -> None:
    db, _ = populated
    result = runner.invoke(app, ["replay", "3", "--json"], env={"GUARDRAIL_AUDIT_DB": str(db)})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["record"]["label"] == "contradicted"


BOILING_MD = "# Boiling\n\nAt standard atmospheric pressure, pure water boils at 100 degrees Celsius."


class _CrawlbaseLike:
    """Pages as the Crawlbase fetcher returns them (markdown text, a rid)."""

    name = "crawlbase"

    async def fetch_all(self, urls: list[str]) -> dict[str, FetchedPage]:
        return {
            u: FetchedPage(url=u, final_url=u, original_status=200, text=BOILING_MD, rid="RIDCLI7", fetcher="crawlbase")
            for u in urls
        }


def test_replay_a_rid_through_the_storage_api(tmp_path: Path) -> None:
    api = StorageAPI()
    server = LoopbackSite({"/storage": Route(handler=api.handler)}).start()
    try:
        db = tmp_path / "audit.sqlite3"
        url = "https://science.example/boiling"
        audit = AuditStore(db)
        Verifier(
            fetcher=_CrawlbaseLike(),  # type: ignore[arg-type]
            judge=OverlapJudge(),
            embedder=HashEmbedder(),
            recorders=[audit],
            settings=Settings(),
        ).verify("Pure water boils at 100 degrees Celsius.", [url])
        api.silos[JS_TOKEN]["RIDCLI7"] = (url, BOILING_MD)
        env = {
            "GUARDRAIL_AUDIT_DB": str(db),
            "CRAWLBASE_TOKEN": TOKEN,
            "CRAWLBASE_JS_TOKEN": JS_TOKEN,
            "CRAWLBASE_STORAGE_URL": server.url("/storage"),
        }
        result = runner.invoke(app, ["replay", "RIDCLI7", "--page"], env=env)
        assert result.exit_code == 0, result.output
        assert "Crawlbase Storage API" in result.stdout and "matches the recorded hash" in result.stdout
        assert "pure water boils at 100 degrees Celsius" in result.stdout
        assert api.requests, "the Storage API was asked"
        api.fail_with = 503
        fallback = runner.invoke(app, ["replay", "RIDCLI7"], env=env)
        assert fallback.exit_code == 0 and "local copy" in fallback.output and "HTTP 503" in fallback.stderr
        for output in (result.output, fallback.output):
            assert TOKEN not in output and JS_TOKEN not in output
    finally:
        server.stop()
