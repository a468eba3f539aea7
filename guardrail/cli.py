"""The ``guardrail`` command line: verify claims, guard answers, serve, batch, audit."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from guardrail.schema import ClaimReport, Label
from guardrail.settings import ConfigurationError, Settings

app = typer.Typer(
    name="guardrail",
    help="Check that the URLs an LLM cites really say what its answer claims.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

out = Console()
err = Console(stderr=True)

EXIT_BAD_INPUT = 2

_LABEL_STYLE = {
    Label.supported: "green",
    Label.contradicted: "red",
    Label.not_found: "yellow",
    Label.unreachable: "magenta",
}

AllowPrivate = Annotated[
    bool,
    typer.Option(
        "--allow-private-hosts",
        help="Allow fetching loopback/private addresses (local testing only; SSRF risk).",
    ),
]


@app.callback()
def _root() -> None:
    """Check that the URLs an LLM cites really say what its answer claims."""


def bad_input(message: str) -> typer.Exit:
    """Print ``message`` as an input error and return the exit to raise (code 2)."""
    err.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(EXIT_BAD_INPUT)


def load_settings(allow_private_hosts: bool = False) -> Settings:
    """Settings from the environment, with CLI flags applied; configuration errors exit 2."""
    try:
        settings = Settings.from_env()
    except ConfigurationError as exc:
        raise bad_input(str(exc)) from None
    if allow_private_hosts:
        settings = settings.model_copy(update={"allow_private_hosts": True})
    return settings


def _label_text(label: Label) -> str:
    return f"[{_LABEL_STYLE[label]}]{label.value}[/]"


def render_claim_report(report: ClaimReport, console: Console) -> None:
    """A readable table: one row per citation with its evidence quote, then the overall label."""
    table = Table(title=report.claim, title_justify="left", show_lines=True, expand=True)
    table.add_column("URL", overflow="fold", ratio=3)
    table.add_column("label", no_wrap=True)
    table.add_column("reason", overflow="fold")
    table.add_column("conf.", justify="right", no_wrap=True)
    table.add_column("evidence quote", overflow="fold", ratio=4)
    for c in report.citations:
        url = c.url if not c.final_url or c.final_url == c.url else f"{c.url}\n→ {c.final_url}"
        table.add_row(url, _label_text(c.label), c.reason or "", f"{c.confidence:.2f}", c.evidence_quote or "")
    console.print(table)
    console.print(f"overall: {_label_text(report.overall)}")


@app.command()
def verify(
    urls: Annotated[list[str], typer.Argument(help="The URLs the claim cites.", show_default=False)],
    claim: Annotated[str, typer.Option("--claim", "-c", help="The claim to check.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    allow_private_hosts: AllowPrivate = False,
) -> None:
    """Verify one claim against the URLs it cites (exit 0 whatever the verdict, 2 on bad input)."""
    from guardrail.verifier import Verifier

    if not claim.strip():
        raise bad_input("--claim must not be empty")
    if not urls:
        raise bad_input("give at least one URL")
    settings = load_settings(allow_private_hosts)
    try:
        verifier = Verifier(settings=settings)
        if verifier.judge is None:
            err.print(
                "[yellow]warning:[/yellow] no judge is available (set GUARDRAIL_JUDGE or install the "
                "embedded model); pages are fetched but nothing can be judged."
            )
        report = verifier.verify(claim, urls)
    except (ConfigurationError, ValueError) as exc:
        raise bad_input(str(exc)) from None
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        render_claim_report(report, out)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
