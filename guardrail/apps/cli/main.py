"""The ``guardrail`` command line: verify claims, guard answers, serve, batch, audit."""

from __future__ import annotations

import inspect
import json
import re
import sys
import time
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from guardrail.apps.cli.audit import audit_app, replay_command
from guardrail.apps.cli.batch import batch_command
from guardrail.apps.cli.common import (
    AllowPrivate,
    UseArchive,
    UseAudit,
    UseCache,
    bad_input,
    explain,
    fail_on_internal_errors,
    label_text,
    load_settings,
    open_run,
    unchecked_lines,
    verdict_text,
    warn_if_no_judge,
)
from guardrail.apps.cli.console import show_logs, ui
from guardrail.core.policy import missing_text
from guardrail.core.report import support_summary
from guardrail.core.schema import ClaimReport
from guardrail.extras import MissingExtraError, require_extra
from guardrail.settings import ConfigurationError

if TYPE_CHECKING:
    pass

app = typer.Typer(
    name="guardrail",
    help="Check that the URLs an LLM cites really say what its answer claims.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(ctx: typer.Context) -> None:
    """Check that the URLs an LLM cites really say what its answer claims."""
    ui.reset()  # read the terminal width now, not at import
    ctx.call_on_close(show_logs())


def render_claim_report(report: ClaimReport, console: Console) -> None:
    """A readable table: one row per citation with its reason (code and sentence), its evidence
    quote and the parts of the claim its page does not back; then the overall label, why, and the
    parts no cited page backs."""
    table = Table(title=escape(report.claim), title_justify="left", show_lines=True, expand=True)
    table.add_column("URL", overflow="fold", ratio=3)
    table.add_column("label", no_wrap=True)
    table.add_column("reason", overflow="fold", ratio=3)
    table.add_column("conf.", justify="right", no_wrap=True)
    table.add_column("evidence quote", overflow="fold", ratio=4)
    for c in report.citations:
        url = c.url if not c.final_url or c.final_url == c.url else f"{c.url}\n→ {c.final_url}"
        # The code, then the sentence a person reads (for blocked_address: how to allow private hosts).
        reason = "\n".join(escape(part) for part in (c.reason, c.reason_text) if part)
        # Page text and URLs are data: escape them so "[bold]" in a quote is not rich markup.
        evidence = "\n".join(escape(part) for part in (c.evidence_quote, missing_text(c.missing_parts)) if part)
        table.add_row(escape(url), verdict_text(c), reason, f"{c.confidence:.2f}", evidence)
    console.print(table)
    why = f" ({escape(report.reason)}: {escape(report.reason_text or '')})" if report.reason else ""
    console.print(f"overall: {label_text(report.overall)}{why}")
    if report.missing_parts:
        console.print(Text(f"not backed by any cited page: {'; '.join(report.missing_parts)}"))


@app.command()
def verify(
    urls: Annotated[list[str], typer.Argument(help="The URLs the claim cites.", show_default=False)],
    claim: Annotated[str, typer.Option("--claim", "-c", help="The claim to check.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    allow_private_hosts: AllowPrivate = False,
    cache: Annotated[
        bool,
        typer.Option(
            "--cache/--no-cache",
            help="Reuse pages fetched within GUARDRAIL_CACHE_TTL (24 h) from the page cache at "
            "GUARDRAIL_CACHE (default ~/.cache/guardrail/pages.sqlite3; 'off' disables).",
        ),
    ] = True,
    audit: Annotated[
        bool,
        typer.Option(
            "--audit/--no-audit",
            help="Record each decision and what the judge saw in the audit store at GUARDRAIL_AUDIT_DB "
            "(default ~/.cache/guardrail/audit.sqlite3; 'off' disables); see `guardrail replay`.",
        ),
    ] = True,
    archive: UseArchive = None,
) -> None:
    """Verify one claim against the URLs it cites (exit 0 whatever the verdict, 2 on bad input, 4 when
    the decisions could not be recorded in the audit store)."""

    if not claim.strip():
        raise bad_input("--claim must not be empty")
    if not urls:
        raise bad_input("give at least one URL")
    settings = load_settings(allow_private_hosts, archive)
    run = open_run(settings, cache=cache, audit=audit)
    try:
        warn_if_no_judge(run.verifier)
        report = run.verifier.verify(claim, urls)
    except (ConfigurationError, ValueError) as exc:
        raise bad_input(str(exc)) from None
    finally:
        run.close()
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        render_claim_report(report, ui.out)
        run.hint()
    run.fail_if_not_recorded()


EXIT_BLOCKED = 1
GRACEFUL_TIMEOUT = 5
"""Seconds ``guardrail serve`` gives in-flight requests on SIGTERM before cancelling their work."""


class PolicyChoice(Enum):
    """``guardrail check --policy``: the presets of :data:`guardrail.core.policy.POLICY_PRESETS`
    (a plain Enum: a ``str`` one's ``strip`` member would shadow ``str.strip``)."""

    annotate = "annotate"
    default = "default"
    strip = "strip"
    block = "block"
    strict = "strict"
    repair = "repair"


class CheckFormat(str, Enum):
    """``guardrail check --format``."""

    markdown = "markdown"
    html = "html"
    json = "json"


def read_input_file(path: Path | str, what: str) -> str:
    """The UTF-8 text of ``path``; one that cannot be read or decoded exits 2, naming ``what`` and ``path``."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise bad_input(f"cannot read {what} {path}: {exc}") from None


def load_sources_file(path: Path) -> list[object]:
    """Sources for ``check --sources``: a JSON list (of URLs or ``{"url", "text"}`` objects), or a
    text file with one URL per line (blank lines and ``#`` comments skipped); errors exit 2."""
    raw = read_input_file(path, "sources file")
    if raw.lstrip().startswith(("[", "{")):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise bad_input(f"{path}: invalid JSON: {exc}") from None
        if not isinstance(data, list):
            raise bad_input(f"{path}: the JSON must be a list of URLs or {{url, text}} objects")
        return list(data)
    sources: list[object] = []
    for n, line in enumerate(raw.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not re.match(r"^https?://\S+$", line, re.I):
            raise bad_input(f"{path}:{n}: not an http(s) URL: {line[:80]!r}")
        sources.append(line)
    return sources


SourcesOption = Annotated[
    Path | None,
    typer.Option(
        "--sources",
        help="Sources the answer's \\[n] markers refer to: a JSON list of URLs or {url, text} objects, "
        "or a text file with one URL per line.",
        show_default=False,
    ),
]
CheckPolicyOption = Annotated[
    PolicyChoice,
    typer.Option(
        "--policy",
        help="default (as Policy() and the service): flag doubtful citations, replace dead links "
        "with a badge; annotate: a badge on every citation; strip: remove every citation that is not "
        "supported; block: withhold the answer unless every citation is supported; strict: default, "
        "but withhold on a contradiction; repair: default, after mending citations (a dead link's "
        "archived copy, another source that backs the claim).",
        case_sensitive=False,
    ),
]
CheckFormatOption = Annotated[
    CheckFormat,
    typer.Option(
        "--format",
        help="markdown or html badges in the guarded answer; json: the guarded answer, the actions "
        "and the full report as JSON.",
        case_sensitive=False,
    ),
]
MinConfidenceOption = Annotated[
    float,
    typer.Option(
        "--min-confidence",
        min=0.0,
        max=1.0,
        help="A supported or contradicted verdict less confident than this counts as unverified (not_found).",
    ),
]


@app.command()
def check(
    answer_file: Annotated[
        str, typer.Argument(metavar="ANSWER_FILE|-", help="The answer to guard (markdown), or - for stdin.")
    ],
    sources_file: SourcesOption = None,
    # The preset named default is the default everywhere: Policy(), the service, the demo, here.
    policy: CheckPolicyOption = PolicyChoice.default,
    fmt: CheckFormatOption = CheckFormat.markdown,
    min_confidence: MinConfidenceOption = 0.0,
    allow_private_hosts: AllowPrivate = False,
    cache: UseCache = True,
    audit: UseAudit = True,
    archive: UseArchive = None,
    answer_date: Annotated[
        datetime | None,
        typer.Option(
            "--answer-date",
            formats=["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"],
            help="When the answer was written (UTC): with --archive, a dead link's copy closest to it.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Guard a whole answer: verify every citation in it and print it with the policy applied.

    Exit 0 when the guarded answer is printed, 1 when the policy blocked it (still printed), 2 on bad input,
    3 when a citation could not be checked because of a failure of our own (internal_error), 4 when
    decisions could not be recorded in the audit store.
    """
    from guardrail.core.policy import GuardedAnswer, Policy, apply_policy

    answer = sys.stdin.read() if answer_file == "-" else read_input_file(answer_file, "answer file")
    if not answer.strip():
        raise bad_input("the answer is empty")
    sources = load_sources_file(sources_file) if sources_file is not None else None
    settings = load_settings(allow_private_hosts, archive)
    chosen = Policy.preset(policy.value, min_confidence=min_confidence)
    run = open_run(settings, cache=cache, audit=audit)
    try:
        warn_if_no_judge(run.verifier)
        suggest = True if chosen.repair else None
        report = run.verifier.verify_answer(answer, sources, answer_date=answer_date, suggest=suggest)
    except (ConfigurationError, ValueError, TypeError) as exc:
        raise bad_input(str(exc)) from None
    finally:
        run.close()
    guarded: GuardedAnswer = apply_policy(report, chosen, "html" if fmt == CheckFormat.html else "markdown")
    if fmt == CheckFormat.json:
        sys.stdout.write(guarded.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(guarded.text if guarded.text.endswith("\n") else guarded.text + "\n")
        counts = ", ".join(f"{n} {label}" for label, n in sorted(report.label_counts.items())) or "none"
        ui.err.print(
            f"overall: {label_text(report.overall)} - {escape(support_summary(report))}; citations: {counts}"
            + (" - blocked" if guarded.blocked else ""),
            soft_wrap=True,
        )
        for line in unchecked_lines(report):
            ui.err.print(Text(line), soft_wrap=True)
        for repair in guarded.repairs:
            ui.err.print(
                Text(f"repaired ({repair.why}): {repair.old_citation} -> {repair.new_citation} in {repair.claim!r}"),
                soft_wrap=True,
            )
        run.hint()
    fail_on_internal_errors(report)
    run.fail_if_not_recorded()
    if guarded.blocked:
        raise typer.Exit(EXIT_BLOCKED)


@app.command()
def demo(
    policy: Annotated[
        PolicyChoice,
        typer.Option(
            "--policy", help="The policy preset to apply (see `guardrail check --help`).", case_sensitive=False
        ),
    ] = PolicyChoice.default,
) -> None:
    """Guard a bundled answer end to end, offline and with no keys: its citations point at pages this
    command serves on 127.0.0.1, and the embedded judge decides. Exits 3 when a citation could not
    be checked because of a failure of our own (internal_error)."""
    from guardrail.apps.demo import LoopbackSite, demo_answer, demo_routes, demo_verifier, describe_judge
    from guardrail.core.policy import Policy, apply_policy

    settings = load_settings()
    with LoopbackSite(demo_routes()) as site:
        # Only the demo's own origin is let through the SSRF guard, not loopback in general.
        verifier = demo_verifier(site, settings)
        warn_if_no_judge(verifier)
        answer = demo_answer(site)
        ui.out.rule("the model's answer")
        ui.out.print(Text(answer.rstrip()))
        with ui.err.status("verifying citations (the first run loads the embedded models)..."):
            started = time.perf_counter()
            report = verifier.verify_answer(answer, suggest=True if policy == PolicyChoice.repair else None)
            elapsed = time.perf_counter() - started
    guarded = apply_policy(report, Policy.preset(policy.value))
    ui.out.rule(f"guarded answer (policy: {policy.value})")
    ui.out.print(Text(guarded.text.rstrip()))
    ui.out.rule("report")
    table = Table(show_lines=True, expand=True)
    table.add_column("claim", overflow="fold", ratio=3)
    table.add_column("citation", overflow="fold", ratio=2)
    table.add_column("label", no_wrap=True)
    table.add_column("reason / evidence quote", overflow="fold", ratio=4)
    for claim in report.claims:
        for verdict in claim.verdicts:
            table.add_row(
                escape(claim.text),
                escape(verdict.url.replace(site.base, "")),
                verdict_text(verdict),
                escape(explain(verdict)),
            )
    ui.out.print(table)
    ui.out.print(
        f"overall: {label_text(report.overall)} - {escape(support_summary(report))} - in {elapsed:.1f} s "
        f"(judge: {describe_judge(verifier.judge)}, embedder: {verifier.embedder.name})"
    )
    fail_on_internal_errors(report)


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.", min=1, max=65535)] = 8000,
    workers: Annotated[
        int, typer.Option("--workers", help="Worker processes (each loads the models once).", min=1)
    ] = 1,
    allow_private_hosts: AllowPrivate = False,
    max_body_bytes: Annotated[
        int | None,
        typer.Option("--max-body-bytes", help="Request body cap (default GUARDRAIL_MAX_BODY_BYTES, 8 MiB).", min=1),
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
    graceful_timeout: Annotated[
        int,
        typer.Option(
            "--graceful-timeout",
            help="Seconds in-flight requests get to finish on SIGTERM before their work is cancelled.",
            min=0,
        ),
    ] = GRACEFUL_TIMEOUT,
) -> None:
    """Serve the HTTP API: /v1/verify, /v1/check-grounding (Vertex compatible), /v1/guard, /v1/health, /docs.

    On SIGTERM the service stops accepting connections, gives in-flight requests --graceful-timeout
    seconds, cancels their work, writes the audit rows still queued (briefly) and exits. Request
    heads over 32 KiB answer 431; a head not complete within 10 s of the connection (or of its first
    byte, on a kept-alive one), or a body not complete within GUARDRAIL_BODY_TIMEOUT, closes the
    connection; connections past GUARDRAIL_MAX_CONNECTIONS, or GUARDRAIL_MAX_CLIENT_CONNECTIONS from
    one address, answer 503. The access log leaves out query strings.
    """
    import os

    require_extra("server", "guardrail serve")
    import uvicorn

    from guardrail.apps.server.protocol import MAX_HEAD_BYTES, GuardedH11Protocol

    # The app is built by a factory in each worker process: flags travel as environment settings.
    if allow_private_hosts:
        os.environ["GUARDRAIL_ALLOW_PRIVATE_HOSTS"] = "1"
    if max_body_bytes is not None:
        os.environ["GUARDRAIL_MAX_BODY_BYTES"] = str(max_body_bytes)
    settings = load_settings(allow_private_hosts)
    if host not in ("127.0.0.1", "localhost", "::1") and settings.api_key is None:
        ui.err.print(
            f"[yellow]warning:[/yellow] listening on {escape(host)} without GUARDRAIL_API_KEY: anyone who can "
            "reach this port can make the service fetch URLs."
        )
    uvicorn.run(
        "guardrail.apps.server:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        http=GuardedH11Protocol,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        timeout_graceful_shutdown=graceful_timeout,
    )


app.command("batch")(batch_command)
app.command("replay")(replay_command)
app.add_typer(audit_app, name="audit")


def _one_line_paragraphs(typer_app: typer.Typer) -> None:
    """Give every command of ``typer_app`` its docstring with each paragraph on one line, for the
    terminal to wrap: typer keeps the source's line breaks after a help text's first paragraph, so
    at any other width than the source's the help came out ragged."""
    for info in typer_app.registered_commands:
        text = info.help if info.help is not None else inspect.getdoc(info.callback) if info.callback else None
        if text:
            info.help = "\n\n".join(" ".join(paragraph.split()) for paragraph in text.split("\n\n"))


_one_line_paragraphs(app)
_one_line_paragraphs(audit_app)


def main() -> None:
    """Console-script entry point; a missing extra (``guardrail serve`` without ``[server]``, a judge
    without ``[llm]`` or ``[local]``) is an input error naming the install command (exit 2)."""
    try:
        app()
    except MissingExtraError as exc:
        raise SystemExit(bad_input(str(exc)).exit_code) from None


if __name__ == "__main__":
    main()
