"""Running a batch: the rows verified a few at a time, each checkpointed as it finishes, then the
CSV and, if asked, the HTML report.

A rerun of the same command verifies only the rows the checkpoint does not hold (see
:mod:`guardrail.apps.batch.checkpoint`); ``fresh=True`` starts over. A row that fails (an
unexpected error, not a verdict) is recorded as failed, reported, and retried by the next run; so
is a row any of whose verdicts rests on a failure of ours (``internal_error``, ``judge_error``):
its verdicts are kept in the CSV, marked with the error, but not counted.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from guardrail.apps.batch.checkpoint import Checkpoint, checkpoint_path
from guardrail.apps.batch.files import atomic_text_file
from guardrail.apps.batch.results import RowResult
from guardrail.apps.batch.rows import BatchRow, read_rows
from guardrail.apps.batch.summary import BatchSummary, summarize, write_csv
from guardrail.core.schema import Reason
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
near their neighbours (the Ray engine orders them by page), so a few hundred cover the pages in use."""

_OUR_FAILURES = frozenset({Reason.internal_error.value, Reason.judge_error.value})


async def _verify_row(verifier: Verifier, row: BatchRow, memo: PageMemo) -> RowResult:
    start = time.perf_counter()
    base: dict[str, Any] = {"id": row.id, "line": row.line, "kind": row.kind, "digest": row.digest}
    try:
        if row.claim is not None:
            result = RowResult(**base, claim_report=await verifier.averify(row.claim, row.urls, memo=memo))
        elif row.answer is not None:
            result = RowResult(**base, answer_report=await verifier.averify_answer(row.answer, row.sources, memo=memo))
        else:
            raise ValueError(f"row {row.id} has neither a claim nor an answer")
        ours = [v.reason for _, _, v in result.verdicts() if v.reason in _OUR_FAILURES]
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

    Rows share one page ``memo`` (default: one for this run, holding the ``MEMO_PAGES`` pages used
    last): a page cited by many rows is fetched and read once while its rows are verified, page
    cache or not."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    memo = memo if memo is not None else PageMemo(limit=MEMO_PAGES)
    done = checkpoint.load() if checkpoint is not None else {}
    results: dict[str, RowResult] = {}
    queue: asyncio.Queue[BatchRow] = asyncio.Queue()
    for row in rows:
        if is_done(row, done):
            results[row.id] = done[row.id].model_copy(update={"line": row.line})
        else:
            queue.put_nowait(row)
    resumed = len(results)

    async def worker() -> None:
        """Verify and record rows from the queue until it is empty."""
        while True:
            try:
                row = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            result = await _verify_row(verifier, row, memo)
            if checkpoint is not None:
                checkpoint.append(result)
            results[row.id] = result
            if on_row is not None:
                on_row(result)

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, queue.qsize()))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
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
