"""``guardrail batch``: a JSONL file of model outputs verified resumably, with a progress bar and the
precision figures (the engine is :mod:`guardrail.apps.batch`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from guardrail.apps.batch import (
    BatchInputError,
    BatchResult,
    BatchSummary,
    RowResult,
    arun_batch_file,
    read_rows,
)
from guardrail.apps.cli.common import (
    AllowPrivate,
    UseAudit,
    UseCache,
    bad_input,
    load_settings,
    open_run,
    warn_if_no_judge,
)
from guardrail.apps.cli.console import ui
from guardrail.bridges import run_sync
from guardrail.core.schema import Label
from guardrail.settings import ConfigurationError, Settings
from guardrail.verifier import Verifier


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
    concurrency: Annotated[int, typer.Option("--concurrency", help="Rows verified at once.", min=1)] = 4,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Ignore the checkpoint of an earlier run and verify every row again.")
    ] = False,
    allow_private_hosts: AllowPrivate = False,
    cache: UseCache = True,
    audit: UseAudit = True,
) -> None:
    """Verify every row of a JSONL file and report citation precision (supported / all citations).

    Resumable: each finished row is checkpointed next to --out (OUT.checkpoint.jsonl); a rerun skips
    the rows already done. One run at a time per --out (OUT.lock). Exit 0 when every row was verified,
    1 when some failed, 2 on bad input (or an --out that cannot be written, or is in use), 4 when
    decisions could not be recorded in the audit store.
    """
    try:
        code = run_batch_cli(
            input_file,
            out_path,
            html_path=html_out,
            concurrency=concurrency,
            fresh=fresh,
            settings=load_settings(allow_private_hosts),
            cache=cache,
            audit=audit,
            console=ui.out,
            err_console=ui.err,
        )
    except (BatchInputError, ConfigurationError) as exc:
        raise bad_input(str(exc)) from None
    except OSError as exc:  # the report could not be written at the end (disk full, folder gone)
        raise bad_input(f"cannot write the report: {exc}") from None
    if code:
        raise typer.Exit(code)


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
) -> int:
    """``guardrail batch``: verify with the settings' verifier and stores, show a progress bar on
    ``err_console``, print the figures and the summary on ``console``. Returns the exit code
    (0; 1 when some rows failed; 4 when decisions could not be recorded in the audit store);
    raises BatchInputError (also for an ``out`` that cannot be written or is locked by another
    run) / ConfigurationError for bad input."""
    read_rows(input_path)  # bad input is reported before any store is opened
    run = open_run(settings, cache=cache, audit=audit)
    try:
        warn_if_no_judge(run.verifier, err_console)
        outcome = _run_with_progress(
            run.verifier, input_path, out, html_path=html_path, concurrency=concurrency, fresh=fresh, err=err_console
        )
    finally:
        run.close()
    _print_summary(outcome.summary, out, html_path, console)
    code = 0
    if outcome.summary.rows_failed:
        err_console.print(
            f"[red]{outcome.summary.rows_failed} row(s) failed[/red]; they are listed in the CSV's error column "
            "and are verified again on the next run."
        )
        code = 1
    try:
        run.fail_if_not_recorded()
    except typer.Exit as exit_:
        code = exit_.exit_code
    return code


def _run_with_progress(
    verifier: Verifier,
    input_path: Path,
    out: Path,
    *,
    html_path: Path | None,
    concurrency: int,
    fresh: bool,
    err: Console,
) -> BatchResult:
    """The batch run, with a progress bar and the running counts on ``err``."""
    counts = {"supported": 0, "citations": 0, "failed": 0}
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:
        task = progress.add_task("verifying", total=None, status="")

        def on_start(total: int, already: int) -> None:
            progress.update(task, total=total, completed=already, status=f"{already} from checkpoint")

        def on_row(result: RowResult) -> None:
            verdicts = result.verdicts() if result.error is None else []
            counts["citations"] += len(verdicts)
            counts["supported"] += sum(1 for _, _, v in verdicts if v.label == Label.supported)
            counts["failed"] += result.error is not None
            status = f"{counts['supported']}/{counts['citations']} supported"
            if counts["failed"]:
                status += f", {counts['failed']} failed"
            progress.update(task, advance=1, status=status)

        return run_sync(
            lambda: arun_batch_file(
                input_path,
                out,
                verifier=verifier,
                html_path=html_path,
                concurrency=concurrency,
                fresh=fresh,
                on_start=on_start,
                on_row=on_row,
            )
        )


def _print_summary(summary: BatchSummary, out: Path, html_path: Path | None, console: Console) -> None:
    """The precision figures, the table of citations by label and reason, and what was written."""
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
