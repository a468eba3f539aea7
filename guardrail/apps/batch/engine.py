"""Running a batch: the rows verified a few at a time, each checkpointed as it finishes, then the
CSV and, if asked, the HTML report.

A rerun of the same command verifies only the rows the checkpoint does not hold (see
:mod:`guardrail.apps.batch.checkpoint`); ``fresh=True`` starts over. A row that fails (an
unexpected error, not a verdict) is recorded as failed, reported, and retried by the next run; so
is a row any of whose verdicts rests on a failure of ours (``internal_error``, ``judge_error``,
``deadline``: :func:`~guardrail.core.schema.is_our_failure`):
its verdicts are kept in the CSV, marked with the error, but not counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from guardrail.apps.batch.checkpoint import Checkpoint, checkpoint_path
from guardrail.apps.batch.files import atomic_text_file
from guardrail.apps.batch.results import RowResult
from guardrail.apps.batch.rows import BatchRow, page_order, read_rows, row_urls
from guardrail.apps.batch.summary import BatchSummary, summarize, write_csv
from guardrail.core.schema import is_our_failure
from guardrail.extras import require_extra
from guardrail.fetch.once import PageMemo
from guardrail.limits import RequestLimitError
from guardrail.settings import ConfigurationError

if TYPE_CHECKING:
    from guardrail.verifier import Verifier

__all__ = ["BatchResult", "arun_batch", "arun_batch_file", "finish_run", "is_done"]

log = logging.getLogger("guardrail.batch")

MEMO_PAGES = 256
"""Pages a batch run keeps in memory between its rows (see :func:`arun_batch`): rows are verified
in page order, so a few hundred cover the pages in use."""

PREFETCH_ROWS_PER_WORKER = 4
"""How far ahead of the rows being verified a batch run fetches pages (see :func:`arun_batch`),
per row verified at once: far enough that a page is in before its rows run, few enough that the
pages fetched ahead stay well inside ``MEMO_PAGES``."""


async def _verify_row(verifier: Verifier, row: BatchRow, memo: PageMemo) -> RowResult:
    start = time.perf_counter()
    base: dict[str, Any] = {"id": row.id, "line": row.line, "kind": row.kind, "digest": row.digest}
    try:
        if row.claim is not None:
            report = await verifier.averify(row.claim, row.urls, memo=memo, answer_date=row.date)
            result = RowResult(**base, claim_report=report)
        elif row.answer is not None:
            # Suggestions (a repairing run) as the settings say: GUARDRAIL_SUGGEST, `batch --repair`.
            answer = await verifier.averify_answer(row.answer, row.sources, memo=memo, answer_date=row.date)
            result = RowResult(**base, answer_report=answer)
        else:
            raise ValueError(f"row {row.id} has neither a claim nor an answer")
        ours = [v.reason for _, _, v in result.verdicts() if is_our_failure(v.reason)]
        if ours:
            counted = ", ".join(f"{n} {reason}" for reason, n in Counter(ours).items())
            result.error = f"verdicts rest on failures of ours ({counted}); verified again on the next run"
    except ConfigurationError:
        raise  # a missing token fails every row alike: stop the run, keep the checkpoint
    except RequestLimitError as exc:  # the row asks for more work than allowed: its own error, no traceback
        log.warning("row %s (line %d): %s", row.id, row.line, exc)
        result = RowResult(**base, error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:
        log.exception("row %s (line %d) failed", row.id, row.line)
        result = RowResult(**base, error=f"{type(exc).__name__}: {exc}")
    result.seconds = round(time.perf_counter() - start, 4)
    return result


class _RowFeed:
    """The rows of a run handed to its workers in order, and their pages fetched ahead into the
    run's memo: in page order the rows running together share a page or two, so without this
    each new page would stall them for its download. At most ``PREFETCH_ROWS_PER_WORKER`` rows per
    worker ahead, and pages for a quarter of a bounded memo, so that a page fetched ahead is not
    let go before its rows run."""

    def __init__(self, rows: list[BatchRow], verifier: Verifier, memo: PageMemo, concurrency: int) -> None:
        self.rows = rows
        self.verifier = verifier
        self.memo = memo
        self.taken = 0  # rows handed to a worker
        self.ahead_rows = PREFETCH_ROWS_PER_WORKER * concurrency
        self.ahead_pages = memo.limit // 4 if memo.limit is not None else None
        self._moved = asyncio.Event()  # set when a worker takes a row: the prefetcher may move on
        self._window: deque[tuple[int, int]] = deque()  # (row index, pages asked for) fetched ahead

    def take(self) -> BatchRow | None:
        """The next row to verify (None when every row was taken)."""
        if self.taken >= len(self.rows):
            return None
        self.taken += 1
        self._moved.set()
        return self.rows[self.taken - 1]

    async def prefetch(self) -> None:
        """Fetch the pages of the rows next in line, as far ahead as allowed, until every row is taken."""
        if self.ahead_pages == 0:
            return  # a memo this small would let go of the pages fetched ahead
        fetching: set[asyncio.Task[None]] = set()
        try:
            for index, row in enumerate(self.rows):
                urls = list(dict.fromkeys(row_urls(row)))
                while self._too_far(index, len(urls)):
                    self._moved.clear()
                    await self._moved.wait()
                if index < self.taken or not urls or len(urls) > self.verifier.settings.max_urls:
                    continue  # taken already, nothing known to fetch, or a row over the limit (it fails as is)
                self._window.append((index, len(urls)))
                task = asyncio.create_task(_prefetch(self.verifier, urls, self.memo))
                fetching.add(task)
                task.add_done_callback(fetching.discard)
            await asyncio.gather(*fetching)  # the last rows' pages: until they are in, or the run ends
        finally:
            for task in fetching:
                task.cancel()  # a row waiting for one of these pages fetches it itself (FetchOnce)
            await asyncio.gather(*fetching, return_exceptions=True)

    def _too_far(self, index: int, pages: int) -> bool:
        while self._window and self._window[0][0] < self.taken:
            self._window.popleft()
        if index >= self.taken + self.ahead_rows:
            return True
        in_window = sum(n for _, n in self._window)
        return self.ahead_pages is not None and bool(self._window) and in_window + pages > self.ahead_pages


async def _prefetch(verifier: Verifier, urls: list[str], memo: PageMemo) -> None:
    """Fetch ``urls`` into ``memo`` ahead of their row. A failure is not lost: a page that could
    not be fetched is a page with its reason in the memo, a rejected token reaches a row waiting
    for the page as the same error (``FetchOnce``), and a row that asks later meets it again."""
    with contextlib.suppress(Exception):
        await verifier.aprefetch(urls, memo)


def is_done(row: BatchRow, done: dict[str, RowResult]) -> bool:
    """Whether the checkpoint holds ``row`` verified, with the same content."""
    prior = done.get(row.id)
    return prior is not None and prior.digest == row.digest


async def arun_batch(
    rows: Sequence[BatchRow],
    verifier: Verifier,
    *,
    checkpoint: Checkpoint | None = None,
    concurrency: int = 4,
    on_row: Callable[[RowResult], None] | None = None,
    memo: PageMemo | None = None,
) -> tuple[list[RowResult], int]:
    """Verify every row not already in ``checkpoint`` (same id and content), ``concurrency`` at a
    time, appending each to the checkpoint as it finishes. Returns the results in input order and
    how many came from the checkpoint. A ConfigurationError stops the run (finished rows stay).

    Rows are verified in :func:`~guardrail.apps.batch.rows.page_order` and share one page ``memo``
    (default: one for this run, holding the ``MEMO_PAGES`` pages used last): a page cited by many
    rows is fetched and read once, page cache or not, however far apart its rows are in the input."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    memo = memo if memo is not None else PageMemo(limit=MEMO_PAGES)
    done = checkpoint.load() if checkpoint is not None else {}
    results: dict[str, RowResult] = {}
    pending: list[BatchRow] = []
    for row in page_order(rows):
        if is_done(row, done):
            results[row.id] = done[row.id].model_copy(update={"line": row.line})
        else:
            pending.append(row)
    resumed = len(results)
    feed = _RowFeed(pending, verifier, memo, concurrency)

    async def worker() -> None:
        """Verify and record the next pending row until none is left."""
        while (row := feed.take()) is not None:
            result = await _verify_row(verifier, row, memo)
            if checkpoint is not None:
                checkpoint.append(result)
            results[row.id] = result
            if on_row is not None:
                on_row(result)

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(pending)))]
    ahead = asyncio.create_task(feed.prefetch())
    try:
        await asyncio.gather(*workers)
    finally:
        for task in (*workers, ahead):
            task.cancel()
        outcome = (await asyncio.gather(ahead, return_exceptions=True))[0]
        if isinstance(outcome, Exception):  # a failure of the prefetcher itself: rows fetch their own pages
            log.error("fetching pages ahead stopped: %s", outcome, exc_info=outcome)
    return [results[row.id] for row in rows], resumed


@dataclass
class BatchResult:
    """A finished batch run: every row's result and the figures."""

    results: list[RowResult]
    summary: BatchSummary
    csv_path: Path
    html_path: Path | None = None


async def arun_batch_file(
    input_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    verifier: Verifier,
    html_path: str | os.PathLike[str] | None = None,
    concurrency: int = 4,
    fresh: bool = False,
    on_start: Callable[[int, int], None] | None = None,
    on_row: Callable[[RowResult], None] | None = None,
) -> BatchResult:
    """Read ``input_path``, verify its rows (resuming from the checkpoint beside ``out`` unless
    ``fresh``), then write the CSV to ``out`` and, if asked, the HTML report.

    ``on_start(total_rows, rows_already_done)`` is called once before verifying. Raises
    :class:`~guardrail.apps.batch.rows.BatchInputError` for a bad input file,
    :class:`~guardrail.apps.batch.checkpoint.BatchOutputError` for an ``out`` that cannot be
    written and :class:`~guardrail.apps.batch.checkpoint.BatchLockedError` while another run
    writes the same ``out``, all before verifying anything.
    """
    rows = read_rows(input_path)
    checkpoint = Checkpoint(checkpoint_path(out))
    with checkpoint.locked(out):
        if fresh:
            checkpoint.reset()
        if on_start is not None:
            done = checkpoint.load()
            on_start(len(rows), sum(1 for r in rows if is_done(r, done)))
        results, resumed = await arun_batch(
            rows, verifier, checkpoint=checkpoint, concurrency=concurrency, on_row=on_row
        )
    return finish_run(input_path, out, results, resumed=resumed, html_path=html_path)


def finish_run(
    input_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    results: list[RowResult],
    *,
    resumed: int,
    html_path: str | os.PathLike[str] | None = None,
) -> BatchResult:
    """The figures, the CSV at ``out`` and, if asked, the HTML report of a run's results (in input
    order): the same for every engine."""
    summary = summarize(results, resumed=resumed)
    write_csv(results, out)
    html_out = None
    if html_path is not None:
        html_out = Path(html_path)
        require_extra("cli", "the batch HTML report (--html)", ("jinja2", "markupsafe"))
        from guardrail.apps.batch.report import render_html

        page = render_html(results, summary, title=f"Citation report: {Path(input_path).name}")
        with atomic_text_file(html_out) as fh:
            fh.write(page)
    return BatchResult(results=results, summary=summary, csv_path=Path(out), html_path=html_out)
