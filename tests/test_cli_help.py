"""``guardrail ... --help``: each paragraph of a command's help is one text for the terminal to wrap,
whatever the width (typer keeps the source's line breaks after the first paragraph)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from guardrail.apps.cli.audit import audit_app
from guardrail.apps.cli.main import app

COMMANDS: list[tuple[list[str], Callable[..., Any]]] = [
    ([*group, info.name or info.callback.__name__], info.callback)
    for group, typer_app in (([], app), (["audit"], audit_app))
    for info in typer_app.registered_commands
    if info.callback is not None
]


@pytest.mark.parametrize(("words", "callback"), COMMANDS, ids=[" ".join(w) for w, _ in COMMANDS])
def test_each_paragraph_of_a_commands_help_is_wrapped_by_the_terminal(
    words: list[str], callback: Callable[..., Any]
) -> None:
    # So wide that no paragraph needs wrapping: each must then come out on one line.
    result = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "2000"})
    assert result.exit_code == 0, result.output
    lines = [" ".join(line.split()) for line in result.output.splitlines()]
    paragraphs = [" ".join(p.split()) for p in (inspect.getdoc(callback) or "").split("\n\n")]
    assert len(paragraphs) >= 1 and paragraphs[0]
    for paragraph in paragraphs:
        assert any(paragraph in line for line in lines), f"{paragraph!r} is not on one line of:\n{result.output}"


@pytest.mark.parametrize(("words", "callback"), COMMANDS, ids=[" ".join(w) for w, _ in COMMANDS])
def test_each_options_help_is_printed_as_written(words: list[str], callback: Callable[..., Any]) -> None:
    # Rich reads [word] as markup and drops it (`pip install 'citation-guardrail[ray]'` once came
    # out without `[ray]`): a literal bracket in a help text must be escaped (\\[) to be printed.
    result = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "2000"})
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    command = typer.main.get_command(app)
    for word in words:
        command = command.commands[word]  # type: ignore[attr-defined]
    helps = [getattr(param, "help", None) for param in command.params]
    assert any(helps)
    for text in filter(None, helps):
        written = " ".join(text.replace("\\[", "[").split())
        assert written in output, f"{written!r} is not in:\n{result.output}"
