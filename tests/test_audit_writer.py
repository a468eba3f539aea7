"""The audit writer: rows queued without blocking, kept and retried while another process holds the
store's lock, a bounded queue whose overflow is counted and logged, and the CLI exiting non-zero
when decisions could not be recorded.

The lock is held the way another process holds it: a second SQLite connection in a write
transaction (SQLite's locks are on the file, whichever connection takes them)."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from guardrail.apps.cli import app
from guardrail.core.schema import FetchedPage, Label, UrlVerdict
from guardrail.runtime import build_runtime
from guardrail.settings import Settings
from guardrail.store import AuditStore, AuditWriter, StoreError
from guardrail.testing import LoopbackSite
from guardrail.verifier import DecisionRecord

CLAIM = "At sea level pure water boils at 100 degrees Celsius."


def decision(n: int = 0, text: str = "Pure water boils at 100 degrees Celsius.") -> DecisionRecord:
    url = f"https://a.example/{n}"
    page = FetchedPage(url=url, final_url=url, original_status=200, text=text)
    verdict = UrlVerdict(url=url, label=Label.supported, evidence_quote=text[:20], confidence=0.9)
    return DecisionRecord(
        claim=f"{CLAIM} ({n})",
        source=url,
        verdict=verdict,
        page=page,
        passages_shown=[text[:200]],
        judge_name="overlap",
        judge_model="m",
        fetcher_name="direct",
    )


class HeldLock:
    """Another writer holding the store's write lock until :meth:`release`."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[AuditStore]:
    audit = AuditStore(tmp_path / "audit.sqlite3", busy_timeout=0.05)
    audit.count()  # the file exists, with its schema
    yield audit
    audit.close()


class TriesOf:
    """Counts the writes ``store`` is asked for that fail (the real write still runs)."""

    def __init__(self, store: AuditStore) -> None:
        self.failed = 0
        record = store.record

        def counted(decision: DecisionRecord) -> int:
            try:
                return record(decision)
            except Exception:
                self.failed += 1
                raise

        store.record = counted  # type: ignore[method-assign]


def wait_for(condition: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_rows_wait_while_the_store_is_locked_and_are_written_once_it_is_free(tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "audit.sqlite3", busy_timeout=2.0)
    store.count()
    assert store.path is not None
    ids: list[int] = []
    writer = AuditWriter(store, on_audit=ids.append, retry_delay=0.02, max_retry_delay=0.05)
    lock = HeldLock(store.path)
    start = time.perf_counter()
    for n in range(20):
        writer(decision(n))
    # Queued, never waiting on the lock: a caller writing inline would wait out the busy timeout
    # (2 s) twenty times; the bound is far from both, so a loaded machine cannot trip it.
    assert time.perf_counter() - start < 20
    wait_for(lambda: writer.status().error is not None)
    status = writer.status()
    assert not status.ok and status.pending == 20 and status.written == 0 and "locked" in (status.error or "")
    lock.release()
    assert writer.flush(10)
    status = writer.status()
    assert status.ok and (status.written, status.pending, status.lost, status.error) == (20, 0, 0, None)
    assert writer.close().ok
    assert store.count() == 20 and len(ids) == 20
    assert [r.claim for r in store.iter_records()] == [f"{CLAIM} ({n})" for n in range(20)]  # in order
    store.close()


def test_a_full_queue_counts_and_logs_what_it_drops(store: AuditStore, caplog: pytest.LogCaptureFixture) -> None:
    assert store.path is not None
    writer = AuditWriter(store, max_pending=3, retry_delay=0.02, max_retry_delay=0.05)
    lock = HeldLock(store.path)
    with caplog.at_level(logging.ERROR, logger="guardrail.store"):
        for n in range(5):
            writer(decision(n))
    status = writer.status()
    assert (status.pending, status.lost, status.ok) == (3, 2, False)
    assert any("not recorded" in r.getMessage() for r in caplog.records)
    lock.release()
    assert writer.flush(10)
    assert writer.status().lost == 2 and not writer.status().ok  # a loss stays reported
    writer.close()
    assert store.count() == 3


def test_the_queue_counts_a_shared_page_text_once(store: AuditStore) -> None:
    assert store.path is not None
    big = "word " * 20_000  # 100 kB
    writer = AuditWriter(store, max_pending_bytes=300_000, retry_delay=0.02)
    lock = HeldLock(store.path)
    shared = decision(0, big)
    for _ in range(20):  # 20 rows citing one page: 100 kB of text, not 2 MB
        writer(shared)
    assert writer.status().lost == 0
    for n in range(1, 4):  # one more distinct page fits; the next two pass the bound
        writer(decision(n, big + str(n)))
    assert writer.status().lost == 2
    lock.release()
    writer.close(10)
    assert store.count() == 21


def test_close_gives_up_on_rows_it_cannot_write_and_says_so(
    store: AuditStore, caplog: pytest.LogCaptureFixture
) -> None:
    assert store.path is not None
    writer = AuditWriter(store, retry_delay=0.02, max_retry_delay=0.05)
    lock = HeldLock(store.path)
    for n in range(4):
        writer(decision(n))
    with caplog.at_level(logging.ERROR, logger="guardrail.store"):
        status = writer.close(timeout=0.3)
    assert (status.lost, status.pending, status.ok) == (4, 0, False) and "locked" in (status.error or "")
    assert any("not written before close" in r.getMessage() for r in caplog.records)
    writer(decision(9))  # after close: refused and counted
    assert writer.status().lost == 5
    lock.release()


def test_a_store_unusable_at_start_keeps_its_rows_when_deferred(tmp_path: Path) -> None:
    blocker = tmp_path / "stores"
    blocker.write_text("a file where the store's folder should be")
    path = blocker / "audit.sqlite3"
    settings = Settings(audit_path=path, cache_path="off")  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        build_runtime(settings, audit=True)
    runtime = build_runtime(settings, audit=True, defer_audit_errors=True)
    assert runtime.audit_writer is not None
    status = runtime.audit_status
    assert status is not None and not status.ok and status.error
    tries = TriesOf(runtime.audit_writer.store)
    runtime.audit_writer(decision(1))
    wait_for(lambda: tries.failed >= 2)  # written, failed, and tried again
    assert runtime.audit_writer.status().pending == 1  # kept, not dropped
    assert runtime.audit_writer.status().lost == 0
    blocker.unlink()
    blocker.mkdir()  # the operator fixes the folder: the row is written on a retry
    assert runtime.audit_writer.flush(15)
    assert runtime.audit_status is not None and runtime.audit_status.ok
    runtime.close()
    assert AuditStore(path).count() == 1


# -- the CLI --------------------------------------------------------------------------------------


def _env(tmp_path: Path) -> dict[str, str]:
    return {"GUARDRAIL_CACHE": "off", "GUARDRAIL_AUDIT_DB": str(tmp_path / "audit.sqlite3")}


def test_cli_exits_4_when_decisions_could_not_be_recorded(pages: LoopbackSite, tmp_path: Path) -> None:
    """Another process holds the audit store's lock for the whole run (past the CLI's wait)."""
    path = tmp_path / "audit.sqlite3"
    store = AuditStore(path)
    store.count()
    store.close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            f"c = sqlite3.connect({str(path)!r}, isolation_level=None); c.execute('BEGIN IMMEDIATE')\n"
            "print('locked', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        env = {**_env(tmp_path), "GUARDRAIL_AUDIT_WAIT": "1"}
        args = ["verify", "--claim", CLAIM, "--allow-private-hosts", pages.url("/gone-410")]
        result = CliRunner().invoke(app, args, env=env)
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 4, result.output
    assert "1 decision(s) could not be recorded in the audit store" in result.stderr and "locked" in result.stderr
    assert "http_410" in result.stdout  # the verdict itself was printed


def test_cli_with_a_damaged_audit_file_exits_non_zero_with_a_message(pages: LoopbackSite, tmp_path: Path) -> None:
    from tests.test_store import damage

    path = tmp_path / "audit.sqlite3"
    store = AuditStore(path)
    store.record(decision(1))
    store.close()
    damage(path)
    for args in (
        ["verify", "--claim", CLAIM, "--allow-private-hosts", pages.url("/gone-410")],
        ["audit", "list", "--db", str(path)],
        ["replay", "1", "--db", str(path)],
    ):
        result = CliRunner().invoke(app, args, env=_env(tmp_path))
        assert result.exit_code == 2, (args, result.output)
        assert "audit.sqlite3" in result.stderr and "malformed" in result.stderr
        assert result.exception is None or isinstance(result.exception, SystemExit)
