"""The ``guardrail`` command line (typer): verify, check, demo, serve, batch, replay, audit.

It needs the ``[cli]`` extra (typer, rich, Jinja2); without it the command says which install
command brings it, instead of failing on an import.
"""

from __future__ import annotations

import sys
from typing import Any

from guardrail.extras import MissingExtraError, require_extra

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point: the command line, or exit 2 naming the ``[cli]`` extra."""
    try:
        require_extra("cli", "the guardrail command")
    except MissingExtraError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(2) from None
    from guardrail.apps.cli.main import main as run

    run()


def __getattr__(name: str) -> Any:
    # ``app`` (the typer application) is imported on first use, so that ``main`` can explain a
    # missing [cli] extra before anything imports typer.
    if name == "app":
        require_extra("cli", "the guardrail command")
        from guardrail.apps.cli.main import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
