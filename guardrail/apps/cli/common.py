"""What the ``guardrail`` commands share: exit codes, flags, settings, the run's verifier, labels."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from guardrail.apps.cli.console import ui
from guardrail.core.policy import missing_text
from guardrail.core.schema import AnswerReport, Label, UrlVerdict, VerdictKind, describe_reason
from guardrail.extras import install_command
from guardrail.runtime import Runtime, build_runtime
from guardrail.settings import ConfigurationError, Settings
from guardrail.store import StoreError
from guardrail.verifier import Verifier

EXIT_BAD_INPUT = 2


LABEL_STYLE = {
    Label.supported: "green",
    Label.contradicted: "red",
    Label.not_found: "yellow",
    Label.unreachable: "magenta",
}
"""The rich style each label is printed in, by every ``guardrail`` command."""

AllowPrivate = Annotated[
    bool,
    typer.Option(
        "--allow-private-hosts",
        help="Allow fetching loopback/private addresses (local testing only; SSRF risk).",
    ),
]
UseCache = Annotated[bool, typer.Option("--cache/--no-cache", help="Use the page cache, as for `guardrail verify`.")]
UseArchive = Annotated[
    str | None,
    typer.Option(
        "--archive",
        metavar="wayback|off",
        help="Look dead links up in the Wayback Machine and judge their archived copy (it is sent "
        "their URLs); default GUARDRAIL_ARCHIVE, off.",
        show_default=False,
    ),
]
UseAudit = Annotated[
    bool, typer.Option("--audit/--no-audit", help="Record decisions in the audit store, as for `verify`.")
]


def bad_input(message: str) -> typer.Exit:
    """Print ``message`` as an input error and return the exit to raise (code 2)."""
    # Text, not markup: a message quoting the input ("[1]", "[bold]") is shown as written.
    ui.err.print(Text.assemble(("error:", "red"), " ", message))
    return typer.Exit(EXIT_BAD_INPUT)


def load_settings(allow_private_hosts: bool = False, archive: str | None = None, suggest: bool = False) -> Settings:
    """Settings from the environment, with CLI flags applied (``--allow-private-hosts``,
    ``--archive``, a repairing run's suggestions); configuration errors exit 2."""
    env = dict(os.environ)
    if archive is not None:
        env[Settings.variable("archive")] = archive  # read like the variable: "wayback", "off"
    try:
        settings = Settings.from_env(env)
    except ConfigurationError as exc:
        raise bad_input(str(exc).replace(Settings.variable("archive"), "--archive")) from None
    if allow_private_hosts:
        settings = settings.model_copy(update={"allow_private_hosts": True})
    if suggest:
        settings = settings.model_copy(update={"suggest": True})
    return settings


def warn_if_no_judge(verifier: Verifier, console: Console | None = None) -> None:
    """Say clearly, on stderr (``console``), when nothing can be judged (rather than letting every
    label read not_found)."""
    if verifier.judge is None:
        (console or ui.err).print(
            "[yellow]warning:[/yellow] no judge is available (set GUARDRAIL_JUDGE, or "
            f"{escape(install_command('local'))} for the embedded one); pages are fetched but nothing can be judged."
        )


def label_text(label: Label) -> str:
    """``label`` in its rich style."""
    return f"[{LABEL_STYLE[label]}]{label.value}[/]"


def verdict_text(verdict: UrlVerdict) -> str:
    """The verdict's label, and how it reads when that is not the label itself (an unreachable page
    is a dead link or could not be checked now; an internal error could not be checked)."""
    text = label_text(verdict.label)
    if verdict.kind.value != verdict.label.value:
        text += f" ({verdict.kind.value.replace('_', ' ')})"
    return text


def unchecked_lines(report: AnswerReport) -> list[str]:
    """One line per reason a citation of ``report`` could not be checked, with how many and the
    reason's plain sentence (for ``blocked_address``, how to allow private hosts)."""
    counts: dict[str, int] = {}
    for claim in report.claims:
        for verdict in claim.verdicts:
            if verdict.kind == VerdictKind.could_not_check and verdict.reason:
                counts[verdict.reason] = counts.get(verdict.reason, 0) + 1
    return [
        f"could not check {n} citation{'s' if n != 1 else ''} ({reason}): {describe_reason(reason) or reason}"
        for reason, n in counts.items()
    ]


def explain(verdict: UrlVerdict) -> str:
    """Why a verdict is what it is, in one cell: its evidence quote, else its reason code and the
    reason's sentence; then the parts of the claim its page does not back."""
    why = verdict.evidence_quote or ": ".join(p for p in (verdict.reason, verdict.reason_text) if p)
    return " ".join(p for p in (why, missing_text(verdict.missing_parts)) if p)


EXIT_INTERNAL_ERROR = 3
"""Exit code of ``check`` and ``demo`` when a verdict rests on a failure of our own code."""


def fail_on_internal_errors(report: AnswerReport) -> None:
    """Exit 3 after saying so when any verdict of ``report`` rests on a failure of our own code
    (logged above with its traceback): such an answer was not really checked."""
    if report.internal_errors:
        ui.err.print(
            f"[red]error:[/red] {report.internal_errors} citation(s) could not be checked because of a "
            "failure of our own (internal_error, traceback logged above); this is not the pages' fault.",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_INTERNAL_ERROR)


# -- the verifier of ``guardrail verify``, ``check`` and ``batch`` -------------------------------


@dataclass
class CliRun:
    """The verifier one CLI run uses (from :func:`guardrail.runtime.build_runtime`), its stores,
    and the audit ids it recorded."""

    runtime: Runtime
    audit_ids: list[int] = field(default_factory=list)

    @property
    def verifier(self) -> Verifier:
        """The run's verifier."""
        return self.runtime.verifier

    def hint(self) -> None:
        """Tell the user where the decisions went and how to replay them (on stderr)."""
        audit = self.runtime.audit
        if audit is None or not self.audit_ids:
            return
        ids = ", ".join(str(i) for i in self.audit_ids)
        ui.err.print(
            Text(f"audit: recorded as {ids} in {audit.path}; see `guardrail replay {self.audit_ids[0]}`"),
            style="dim",
        )

    def close(self) -> None:
        """Close the stores, once the audit rows still queued are written (or given up on)."""
        self.runtime.close()

    def fail_if_not_recorded(self) -> None:
        """Exit 4 after saying so when decisions could not be recorded in the audit store (call
        after :meth:`close`): the user asked for a record, and it is incomplete."""
        status = self.runtime.audit_status
        if status is None or not status.lost:
            return
        why = status.error or "the store was too slow"
        ui.err.print(
            Text.assemble(
                ("error:", "red"),
                f" {status.lost} decision(s) could not be recorded in the audit store {status.path} ({why}); "
                "the results above are complete, their audit record is not.",
            ),
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_NOT_RECORDED)


EXIT_NOT_RECORDED = 4
"""Exit code when decisions could not be recorded in the audit store."""


def open_run(settings: Settings, *, cache: bool, audit: bool, batch_judge_calls: bool = False) -> CliRun:
    """The verifier of a CLI run: page cache and audit store on by default in the user cache
    folder, off with the flags or ``GUARDRAIL_CACHE=off`` / ``GUARDRAIL_AUDIT_DB=off``.

    An unusable cache is skipped with a warning (it only saves time); an unusable audit store
    is an input error naming the file, since the user asked for a record. ``batch_judge_calls``:
    concurrent rows share judge calls (a batch run).
    """
    ids: list[int] = []
    try:
        runtime = build_runtime(
            settings,
            cache=cache,
            audit=audit,
            on_audit=ids.append,
            audit_flush_timeout=settings.audit_wait,
            batch_judge_calls=batch_judge_calls,
        )
    except StoreError as exc:
        raise bad_input(f"{exc} (pass --no-audit, or set GUARDRAIL_AUDIT_DB to another file)") from None
    return CliRun(runtime, ids)
