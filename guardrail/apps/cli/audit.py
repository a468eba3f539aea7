"""CLI faces of the stores: ``guardrail replay``, ``guardrail audit list|show|export``, and the
page cache and audit store that ``guardrail verify`` uses.

Defaults for the CLI (the library itself writes nothing unless given a store):

* page cache **on**, at ``GUARDRAIL_CACHE`` or ``$XDG_CACHE_HOME/guardrail/pages.sqlite3``
  (``~/.cache/guardrail/pages.sqlite3``), TTL ``GUARDRAIL_CACHE_TTL`` (24 h); only pages that
  would come out the same again are kept (timeouts, 5xx and SSRF refusals never are);
* audit store **on**, at ``GUARDRAIL_AUDIT_DB`` or ``$XDG_CACHE_HOME/guardrail/audit.sqlite3``,
  so that the ids ``verify`` prints can be replayed.

Both live in the user's own cache folder (created 0700, files 0600); ``--no-cache`` /
``--no-audit`` or ``GUARDRAIL_CACHE=off`` / ``GUARDRAIL_AUDIT_DB=off`` turn them off.

Page text is untrusted: it is always printed as plain text, never as rich markup.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, cast

import typer
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from guardrail.apps.cli.common import LABEL_STYLE, bad_input, load_settings
from guardrail.apps.cli.console import ui
from guardrail.core.schema import Label
from guardrail.replay import Replay
from guardrail.replay import replay as replay_audit
from guardrail.runtime import open_audit_store
from guardrail.store import (
    AuditRecord,
    AuditStore,
    ExportFormat,
    StoreError,
    default_audit_path,
    resolve_path,
)

audit_app = typer.Typer(
    name="audit",
    help="Browse and export the audit store: one row per decided citation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="The audit store (default: GUARDRAIL_AUDIT_DB, else ~/.cache/guardrail/audit.sqlite3).",
        dir_okay=False,
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _open_audit(db: Path | None) -> AuditStore:
    """The existing audit store named by ``--db`` or the settings; never creates one."""
    settings = load_settings()
    path = db.expanduser() if db is not None else resolve_path(settings.audit_path, default_audit_path())
    if path is None:
        raise bad_input("the audit store is off (GUARDRAIL_AUDIT_DB=off); pass --db FILE")
    if not path.is_file():
        raise bad_input(f"no audit store at {path} (run `guardrail verify` first, or pass --db FILE)")
    store = open_audit_store(path)
    try:
        store.count()
    except StoreError as exc:
        raise bad_input(str(exc)) from None
    return store


@contextmanager
def _reading_audit(db: Path | None, *errors: type[Exception]) -> Iterator[AuditStore]:
    """The audit store of :func:`_open_audit` for the block, closed after it; ``errors`` raised in
    the block exit 2 with their message."""
    store = _open_audit(db)
    try:
        yield store
    except errors as exc:
        raise bad_input(str(exc)) from None
    finally:
        store.close()


def _label(label: Label) -> Text:
    return Text(label.value, style=LABEL_STYLE[label])


def _record_table(record: AuditRecord) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    url = (
        record.url if not record.final_url or record.final_url == record.url else f"{record.url}\n→ {record.final_url}"
    )
    judge = record.judge or "(not judged)"
    if record.judge and record.judge_model:
        judge = f"{record.judge} ({record.judge_model})"
    rows: list[tuple[str, Text | str]] = [
        ("id", str(record.id)),
        ("time", record.created_at.isoformat(timespec="seconds")),
        ("claim", Text(record.claim)),
        ("url", Text(url)),
        ("label", _label(record.label)),
        ("reason", Text(record.reason or "")),
        ("confidence", f"{record.confidence:.2f}"),
        ("evidence quote", Text(record.evidence_quote or "")),
        ("judge", Text(judge)),
        ("fetcher", Text(record.fetcher or "(given text, not fetched)")),
        ("original status", "" if record.original_status is None else str(record.original_status)),
        ("rid", Text(record.rid)),
        ("content sha256", record.content_hash),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def _print_passages(passages: list[str]) -> None:
    """Each passage verbatim (soft-wrapped: no line breaks added), under a rule naming it."""
    if not passages:
        ui.out.print(Text("No passages were shown to the judge (decided without judging).", style="dim"))
        return
    for n, passage in enumerate(passages, start=1):
        ui.out.rule(Text(f"passage {n} of {len(passages)}"), align="left")
        ui.out.print(Text(passage), soft_wrap=True)
    ui.out.rule()


def _render_replay(replay: Replay, *, show_page: bool) -> None:
    if replay.record is not None:
        ui.out.print(Panel(_record_table(replay.record), title=f"audit {replay.record.id}", title_align="left"))
    elif replay.stored is not None:
        ui.out.print(Text(f"rid {replay.stored.rid}: no audit row here; the stored page of {replay.stored.url}"))
    if replay.note:
        ui.err.print(Text(f"note: {replay.note}"), style="yellow")
    if replay.record is not None:
        ui.out.print(Text("What the judge saw:", style="bold"))
        _print_passages(replay.passages)
    if replay.text is None:
        return
    check = {True: "matches the recorded hash", False: "DIFFERS from the recorded hash", None: ""}[
        replay.content_hash_ok
    ]
    where = "Crawlbase Storage API" if replay.text_source == "crawlbase_storage" else "local copy"
    summary = f"page text ({where}, {len(replay.text)} characters){': ' + check if check else ''}"
    if show_page or replay.record is None:
        ui.out.rule(Text(summary), align="left")
        ui.out.print(Text(replay.text), soft_wrap=True)
        ui.out.rule()
    else:
        ui.out.print(Text(f"{summary}; --page prints it", style="dim"))


def replay_command(
    id_or_rid: Annotated[
        str, typer.Argument(help="An audit row id, or a Crawlbase rid.", metavar="ID_OR_RID", show_default=False)
    ],
    db: DbOption = None,
    page: Annotated[bool, typer.Option("--page", help="Also print the whole page text.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Show what the judge saw for a decision: claim, URL, verdict and the exact passages.

    With a Crawlbase rid the page is read back through the Storage API (CRAWLBASE_TOKEN or
    CRAWLBASE_JS_TOKEN), falling back to the local copy.
    """
    with _reading_audit(db, StoreError) as store:
        try:
            replays = replay_audit(store, id_or_rid, settings=load_settings())
        except (LookupError, ValueError) as exc:
            raise bad_input(str(exc).strip("'\"")) from None
    if as_json:
        sys.stdout.write(json.dumps([r.model_dump(mode="json") for r in replays], indent=2) + "\n")
        return
    for replay in replays:
        _render_replay(replay, show_page=page)


@audit_app.command("list")
def list_command(
    label: Annotated[
        str | None, typer.Option("--label", help="Only this label: supported, contradicted, not_found, unreachable.")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only rows since an ISO date/time or an age (24h, 7d).")
    ] = None,
    url: Annotated[str | None, typer.Option("--url", help="Only rows whose URL contains this text.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many rows, newest first.")] = 20,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """List recorded decisions, newest first."""
    with _reading_audit(db, ValueError, StoreError) as store:
        records = store.list_records(label=label, since=since, url_contains=url, limit=limit)
    if as_json:
        sys.stdout.write(json.dumps([r.model_dump(mode="json") for r in records], indent=2) + "\n")
        return
    if not records:
        ui.err.print("no matching audit rows")
        return
    table = Table(show_lines=True, expand=True)
    table.add_column("id", justify="right", no_wrap=True)
    table.add_column("time (UTC)", no_wrap=True)
    table.add_column("label / reason", no_wrap=True)
    table.add_column("conf.", justify="right", no_wrap=True)
    table.add_column("claim / URL", overflow="fold", ratio=1)
    for r in records:
        verdict = _label(r.label)
        if r.reason:
            verdict.append("\n" + r.reason, style="dim")
        table.add_row(
            str(r.id),
            r.created_at.strftime("%Y-%m-%d\n%H:%M:%S"),
            verdict,
            f"{r.confidence:.2f}",
            Text.assemble(r.claim, "\n", (r.final_url or r.url, "dim")),
        )
    ui.out.print(table)


@audit_app.command("show")
def show_command(
    record_id: Annotated[int, typer.Argument(help="The audit row id.", metavar="ID", show_default=False)],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one recorded decision and the passages its judge was shown."""
    with _reading_audit(db, StoreError) as store:
        record = store.get(record_id)
    if record is None:
        raise bad_input(f"no audit row with id {record_id} in {store.path}")
    if as_json:
        sys.stdout.write(record.model_dump_json(indent=2) + "\n")
        return
    ui.out.print(Panel(_record_table(record), title=f"audit {record.id}", title_align="left"))
    ui.out.print(Text("What the judge saw:", style="bold"))
    _print_passages(record.passages)


@audit_app.command("export")
def export_command(
    fmt: Annotated[str, typer.Option("--format", "-f", help="jsonl or csv.")] = "jsonl",
    out_file: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write here instead of stdout.", dir_okay=False)
    ] = None,
    label: Annotated[str | None, typer.Option("--label", help="Only this label.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only rows since an ISO date/time or age.")] = None,
    url: Annotated[str | None, typer.Option("--url", help="Only rows whose URL contains this text.")] = None,
    db: DbOption = None,
) -> None:
    """Export recorded decisions, oldest first, as JSON lines or CSV (passages included)."""
    if fmt.strip().lower() not in ("jsonl", "csv"):
        raise bad_input(f"--format must be jsonl or csv (got {fmt!r})")
    kind = cast(ExportFormat, fmt.strip().lower())
    with _reading_audit(db, ValueError, StoreError, OSError) as store:
        if out_file is None:
            count = store.export(sys.stdout, kind, label=label, since=since, url_contains=url)
        else:
            out_file.parent.mkdir(parents=True, exist_ok=True)
            with out_file.open("w", encoding="utf-8", newline="") as fh:
                count = store.export(fh, kind, label=label, since=since, url_contains=url)
    where = str(out_file) if out_file is not None else "stdout"
    ui.err.print(Text(f"exported {count} rows to {where}"), style="dim")
