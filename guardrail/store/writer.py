"""Audit rows written off the caller's thread, kept and retried while the store cannot take them.

The verifier calls its recorders on its event loop. An :class:`AuditWriter` only queues the
decision there (never blocks, never raises) and a thread of its own writes the queue to the
:class:`~guardrail.store.AuditStore` in order. A row that fails (another process holding the
write lock, a full disk, a damaged file) stays at the head of the queue and is tried again, with
a growing pause, until it is written; :meth:`AuditWriter.status` says meanwhile that the store is
failing and why. The queue is bounded (rows, and the bytes of the texts they hold, each page
counted once): past the bound a row is dropped, counted in ``lost`` and logged, never silently.
:meth:`AuditWriter.close` waits a while for the queue to drain and counts what is left as lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from guardrail.store.audit import AuditStore

if TYPE_CHECKING:
    from guardrail.verifier import DecisionRecord

__all__ = ["AuditStatus", "AuditWriter"]

log = logging.getLogger("guardrail.store")

DEFAULT_MAX_PENDING = 10_000
DEFAULT_MAX_PENDING_BYTES = 256 * 1024 * 1024
_DROP_LOG_INTERVAL = 5.0


class AuditStatus(BaseModel):
    """How the audit store is doing: rows written, waiting and lost, and the last failure."""

    path: str = Field(description="The audit store file.")
    ok: bool = Field(description="Writing works and no row was lost.")
    written: int = 0
    pending: int = Field(default=0, description="Rows waiting to be written (kept and retried).")
    lost: int = Field(default=0, description="Rows that could not be kept: the queue was full, or at close.")
    error: str | None = Field(default=None, description="Why the last write failed; None once one succeeds.")


class AuditWriter:
    """A verifier recorder writing to ``store`` from a thread of its own (see the module docs).

    ``on_audit`` is told each row id once written (from the writer's thread). ``max_pending`` and
    ``max_pending_bytes`` bound the queue; ``retry_delay`` grows to ``max_retry_delay`` between
    tries of a failing row. ``error`` starts the status as failing (a store found unusable at open).
    """

    def __init__(
        self,
        store: AuditStore,
        *,
        on_audit: Callable[[int], None] | None = None,
        max_pending: int = DEFAULT_MAX_PENDING,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        retry_delay: float = 0.1,
        max_retry_delay: float = 5.0,
        error: str | None = None,
    ) -> None:
        if max_pending < 1 or max_pending_bytes < 1:
            raise ValueError("the audit queue bounds must be positive")
        self.store = store
        self.on_audit = on_audit
        self.max_pending = max_pending
        self.max_pending_bytes = max_pending_bytes
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self._cond = threading.Condition()
        self._queue: deque[tuple[DecisionRecord, int]] = deque()
        self._texts: dict[int, list[int]] = {}  # id(page text) -> [queued rows holding it, its size]
        self._bytes = 0
        self._written = 0
        self._lost = 0
        self._error = error
        self._closing = False
        self._abandon = False
        self._thread: threading.Thread | None = None
        self._last_drop_log = float("-inf")

    # -- the caller's side ---------------------------------------------------------------------

    def __call__(self, decision: DecisionRecord) -> None:
        """Queue ``decision`` (the recorder hook); past the bound it is counted lost and logged."""
        with self._cond:
            if self._closing:
                self._drop(1, "the audit writer is closed")
                return
            size, text = self._size(decision)
            if len(self._queue) >= self.max_pending or self._bytes + size > self.max_pending_bytes:
                self._drop(1, f"{len(self._queue)} rows already wait ({self._error or 'the store is slow'})")
                return
            if text:
                self._texts.setdefault(id(text), [0, len(text)])[0] += 1
            self._queue.append((decision, size - len(text)))
            self._bytes += size
            self._start()
            self._cond.notify_all()

    def status(self) -> AuditStatus:
        """The store's state now."""
        with self._cond:
            return AuditStatus(
                path=str(self.store.path or ":memory:"),
                ok=self._error is None and self._lost == 0,
                written=self._written,
                pending=len(self._queue),
                lost=self._lost,
                error=self._error,
            )

    def flush(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every queued row to be written; True when none waits."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue and not self._abandon:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return not self._queue

    def close(self, timeout: float = 5.0) -> AuditStatus:
        """Write what is queued (waiting up to ``timeout`` seconds), then stop; rows still waiting
        are counted lost and logged as an error. Later rows are refused (and counted lost)."""
        self.flush(timeout)
        with self._cond:
            self._closing = True
            left = len(self._queue)
            if left:
                self._abandon = True
                self._drop(left, f"not written before close ({self._error or 'the store was slow'})")
                self._queue.clear()
                self._texts.clear()
                self._bytes = 0
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=1.0)
        return self.status()

    # -- the writer's thread -------------------------------------------------------------------

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="guardrail-audit-writer", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        delay = self.retry_delay
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue or self._abandon:
                    return
                decision = self._queue[0][0]
            try:
                row = self.store.record(decision)
            except Exception as exc:  # kept at the head of the queue and tried again
                delay = self._failed(exc, delay)
                continue
            delay = self.retry_delay
            self._done(decision)
            if self.on_audit is not None:
                try:
                    self.on_audit(row)
                except Exception:
                    log.exception("on_audit failed for audit row %d", row)

    def _failed(self, exc: Exception, delay: float) -> float:
        """Note the failure and wait before the next try (less when closing); the next delay."""
        message = f"{type(exc).__name__}: {exc}"
        with self._cond:
            if self._error != message:
                log.warning(
                    "audit store %s: %s; %d row(s) kept and retried", self.store.path, message, len(self._queue)
                )
            self._error = message
            if not self._abandon:
                self._cond.wait(delay)
        return min(delay * 2, self.max_retry_delay)

    def _done(self, decision: DecisionRecord) -> None:
        with self._cond:
            if self._queue and self._queue[0][0] is decision:
                _, size = self._queue.popleft()
                self._bytes -= size
                self._release_text(decision)
            self._written += 1
            if self._error is not None:
                log.info("audit store %s writes again", self.store.path)
            self._error = None
            self._cond.notify_all()

    # -- bookkeeping (with the lock held) ------------------------------------------------------

    def _size(self, decision: DecisionRecord) -> tuple[int, str]:
        """Bytes the row adds to the queue (with its page text unless a queued row holds it), and
        that text."""
        size = len(decision.claim) + sum(len(p) for p in decision.passages_shown) + 512
        text = decision.page.text if decision.page is not None else ""
        if not text or id(text) in self._texts:
            return size, ""
        return size + len(text), text

    def _release_text(self, decision: DecisionRecord) -> None:
        text = decision.page.text if decision.page is not None else ""
        entry = self._texts.get(id(text)) if text else None
        if entry is not None:
            entry[0] -= 1
            if entry[0] <= 0:
                self._bytes -= entry[1]
                del self._texts[id(text)]

    def _drop(self, count: int, why: str) -> None:
        """Count rows lost; say so at once, then at most every few seconds (a full queue drops many)."""
        self._lost += count
        now = time.monotonic()
        if now - self._last_drop_log >= _DROP_LOG_INTERVAL:
            self._last_drop_log = now
            log.error(
                "audit store %s: %d decision(s) not recorded (%d lost so far): %s",
                self.store.path,
                count,
                self._lost,
                why,
            )
