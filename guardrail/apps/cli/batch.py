"""``guardrail batch``: a JSONL file of model outputs verified resumably, with a progress bar and the
precision figures (the engine is :mod:`guardrail.apps.batch`)."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from guardrail._bridges import run_sync
from guardrail.apps.batch import BatchInputError, BatchSummary, RowResult, arun_batch_file, read_rows
from guardrail.apps.batch.ray_engine import RayOptions, require_ray, run_ray_batch_file
from guardrail.apps.cli.common import (
    AllowPrivate,
    UseArchive,
    UseAudit,
    UseCache,
    bad_input,
    load_settings,
    open_run,
    warn_if_no_judge,
)
from guardrail.apps.cli.console import ui
from guardrail.core.schema import Label
from guardrail.settings import ConfigurationError, Settings

PROGRESS_EVERY = 10.0
"""Seconds between progress lines when stderr is not a terminal."""


# Long only by its typer options (declarative); the body is short.
def batch_command(
    input_file: Annotated[
        Path,
        typer.Argument(
            metavar="OUTPUTS.jsonl", help='JSON lines: {"id", "claim", "urls"} or {"id", "answer", "sources"?}.'
        ),
    ],
    out_path: Annotated[Path, typer.Option("--out", help="The CSV report: one row per citation.", dir_okay=False)],
    html_out: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained HTML report.", dir_okay=False)
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Rows verified at once (per worker).", min=1)] = 4,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Ignore the checkpoint of an earlier run and verify every row again.")
    ] = False,
    engine: Annotated[
        str,
        typer.Option(
            "--engine", help="local: this process; ray: a Ray actor pool (pip install 'citation-guardrail\\[ray]')."
        ),
    ] = "local",
    address: Annotated[
        str | None,
        typer.Option(
            "--address", help="Ray only: 'auto' (this machine's cluster) or 'ray://host:10001'; default: a local Ray."
        ),
    ] = None,
    workers: Annotated[int | None, typer.Option("--workers", help="Ray only: actors in the pool.", min=1)] = None,
    cpus_per_worker: Annotated[int, typer.Option("--cpus-per-worker", help="Ray only: CPUs per actor.", min=1)] = 1,
    allow_private_hosts: AllowPrivate = False,
    cache: UseCache = True,
    audit: UseAudit = True,
    archive: UseArchive = None,
    progress_every: Annotated[
        float,
        typer.Option(
            "--progress-every",
            help="When stderr is not a terminal (a CI log), print a progress line every this many seconds.",
            min=0.01,
        ),
    ] = PROGRESS_EVERY,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Check the claims that fail against the other sources at hand, and report what the "
            "repair policy would mend (suggested citations, archived copies). Rows already in the "
            "checkpoint are not checked again: add --fresh.",
        ),
    ] = False,
) -> None:
    """Verify every row of a JSONL file and report citation precision (supported / all citations).

    Resumable: each finished row is checkpointed next to --out (OUT.checkpoint.jsonl); a rerun skips
    the rows already done. One run at a time per --out (OUT.lock), whatever the engine. Exit 0 when
    every row was verified, 1 when some failed, 2 on bad input (or an --out that cannot be written, or
    is in use, or --engine ray without Ray installed), 4 when decisions could not be recorded in the
    audit store.
    """
    if engine not in ("local", "ray"):
        raise bad_input(f"--engine must be local or ray (got {engine!r})")
    ray_options = None
    if engine == "ray":
        try:
            ray_options = RayOptions(
                address=address,
                workers=workers,
                cpus_per_worker=cpus_per_worker,
                rows_at_once=concurrency,
                cache=cache,
            )
            require_ray()
        except (ConfigurationError, ValueError) as exc:
            raise bad_input(str(exc)) from None
    try:
        code = run_batch_cli(
            input_file,
            out_path,
            html_path=html_out,
            concurrency=concurrency,
            fresh=fresh,
            settings=load_settings(allow_private_hosts, archive, suggest=repair),
            cache=cache,
            audit=audit,
            console=ui.out,
            err_console=ui.err,
            ray_options=ray_options,
            progress_every=progress_every,
        )
    except (BatchInputError, ConfigurationError) as exc:
        raise bad_input(str(exc)) from None
    except OSError as exc:  # the report could not be written at the end (disk full, folder gone)
        raise bad_input(f"cannot write the report: {exc}") from None
    if code:
        raise typer.Exit(code)


class RateColumn(ProgressColumn):
    """Rows per second, as rich estimates a task's speed (over its last 30 s)."""

    def render(self, task: Task) -> Text:
        """``1.5 rows/s``; ``-`` before the first row is done."""
        speed = task.finished_speed or task.speed
        return Text("-" if speed is None else f"{speed:.2g} rows/s", style="progress.data.speed")


class _Progress:
    """The progress of a batch run on ``console``: rows done, rate, time left, supported citations
    and failures. On a terminal, rich's live progress bar; otherwise (a CI log, where a live bar
    draws nothing until the end) the same figures as a plain line every ``every`` seconds."""

    def __init__(self, console: Console, every: float = 10.0) -> None:
        self.console = console
        self.every = every
        self.bar = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.task = self.bar.add_task("verifying", total=None, status="")
        self.supported = self.citations = self.failed = 0
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> _Progress:
        if self.console.is_interactive:
            self.bar.start()
        else:
            self._ticker = threading.Thread(target=self._tick, name="batch-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ticker is None:
            self.bar.stop()
            return
        self._stop.set()
        self._ticker.join()
        self.console.print(Text(self.line()))

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self.console.print(Text(self.line()))

    def line(self) -> str:
        """The progress as one plain line: ``verifying: 3/10 rows, 1.5 rows/s, ETA 0:00:05, ...``."""
        task = self.bar.tasks[0]
        total = "?" if task.total is None else f"{task.total:.0f}"
        speed = task.finished_speed or task.speed
        rate = "-" if speed is None else f"{speed:.2g}"
        left = task.time_remaining
        eta = "-" if left is None else str(timedelta(seconds=round(left)))
        status = task.fields.get("status") or ""
        return f"verifying: {task.completed:.0f}/{total} rows, {rate} rows/s, ETA {eta}" + (
            f", {status}" if status else ""
        )

    def on_start(self, total: int, already: int) -> None:
        # reset: the rows from the checkpoint are not counted in the rate
        self.bar.reset(self.task, total=total, completed=already, status=f"{already} from checkpoint")

    def on_row(self, result: RowResult) -> None:
        verdicts = result.verdicts() if result.error is None else []
        self.citations += len(verdicts)
        self.supported += sum(1 for _, _, v in verdicts if v.label == Label.supported)
        self.failed += result.error is not None
        status = f"{self.supported}/{self.citations} supported" + (f", {self.failed} failed" if self.failed else "")
        self.bar.update(self.task, advance=1, status=status)


def run_batch_cli(
    input_path: Path,
    out: Path,
    *,
    html_path: Path | None,
    concurrency: int,
    fresh: bool,
    settings: Settings,
    cache: bool,
    audit: bool,
    console: Console,
    err_console: Console,
    ray_options: RayOptions | None = None,
    progress_every: float = PROGRESS_EVERY,
) -> int:
    """``guardrail batch``: verify with the settings' verifier and stores (or on Ray, given
    ``ray_options``), show the progress on ``err_console`` (a line every ``progress_every`` seconds
    when it is not a terminal), print the figures and the summary on
    ``console``. Returns the exit code (0; 1 when some rows failed; 4 when decisions could not be
    recorded in the audit store); raises BatchInputError (also for an ``out`` that cannot be written
    or is locked by another run) / ConfigurationError for bad input."""
    read_rows(input_path)  # bad input is reported before any store is opened
    progress = _Progress(err_console, progress_every)
    if ray_options is not None:
        if audit:
            err_console.print("note: the Ray engine keeps no audit store; the results are in the checkpoint and CSV.")
        with progress:
            outcome = run_ray_batch_file(
                input_path,
                out,
                settings=settings,
                options=ray_options,
                html_path=html_path,
                fresh=fresh,
                on_start=progress.on_start,
                on_row=progress.on_row,
            )
        return _print_summary(outcome.summary, out, html_path, console, err_console)
    run = open_run(settings, cache=cache, audit=audit, batch_judge_calls=True)  # rows share judge calls
    try:
        warn_if_no_judge(run.verifier, err_console)
        with progress:
            outcome = run_sync(
                lambda: arun_batch_file(
                    input_path,
                    out,
                    verifier=run.verifier,
                    html_path=html_path,
                    concurrency=concurrency,
                    fresh=fresh,
                    on_start=progress.on_start,
                    on_row=progress.on_row,
                )
            )
    finally:
        run.close()  # waits a while for audit rows still queued
    code = _print_summary(outcome.summary, out, html_path, console, err_console)
    try:
        run.fail_if_not_recorded()
    except typer.Exit as exit_:
        code = exit_.exit_code
    return code


def _print_summary(
    summary: BatchSummary, out: Path, html_path: Path | None, console: Console, err_console: Console
) -> int:
    """The figures, the label/reason table and what was written; the exit code (1: failed rows)."""
    for line in summary.lines():
        console.print(line, markup=False, highlight=False)
    table = Table(title="citations by label and reason", title_justify="left")
    table.add_column("label")
    table.add_column("reason")
    table.add_column("citations", justify="right")
    table.add_column("share", justify="right")
    for label, reason, n in summary.by_label_reason:
        share = f"{100 * n / summary.citations:.1f}%" if summary.citations else ""
        table.add_row(label, escape(reason), str(n), share)
    console.print(table)
    labels = ", ".join(f"{n} {label}" for label, n in summary.labels.items())
    console.print(
        f"{summary.rows} rows ({summary.rows_resumed} from the checkpoint, {summary.rows_failed} failed); "
        f"{summary.citations} citations: {labels}",
        markup=False,
        highlight=False,
    )
    console.print(f"wrote {out}" + (f" and {html_path}" if html_path else ""), markup=False, highlight=False)
    if summary.rows_failed:
        err_console.print(
            f"[red]{summary.rows_failed} row(s) failed[/red]; they are listed in the CSV's error column "
            "and are verified again on the next run."
        )
        return 1
    return 0
