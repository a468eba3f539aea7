"""What a ``guardrail`` command shows of the library's log records on its stderr console: the first
run's model preparation and warnings, not other INFO records nor pypdf's notes on a damaged PDF;
and everything put back once the command is over."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from rich.console import Console

from guardrail.apps.cli.console import show_logs, ui


@pytest.fixture
def stderr() -> Iterator[io.StringIO]:
    screen = io.StringIO()
    before = ui.err
    ui.err = Console(file=screen, width=300)
    try:
        yield screen
    finally:
        ui.err = before


def test_a_command_shows_model_preparation_and_warnings(stderr: io.StringIO) -> None:
    onnx = logging.getLogger("guardrail.onnx")
    level = onnx.level
    restore = show_logs()
    try:
        onnx.info("preparing the judge model (first run only, usually 5-15 s)")
        logging.getLogger("guardrail.fetch").info("an INFO record of another logger")
        logging.getLogger("guardrail.fetch").warning("trafilatura failed on %s", "https://example.org/")
        logging.getLogger("pypdf._reader").warning("EOF marker not found")
    finally:
        restore()
    onnx.info("after the command")
    assert stderr.getvalue().splitlines() == [
        "preparing the judge model (first run only, usually 5-15 s)",
        "warning: trafilatura failed on https://example.org/",
    ]
    assert onnx.level == level and not any(type(h).__name__ == "ConsoleLog" for h in logging.getLogger().handlers)
