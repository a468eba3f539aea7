"""The ``guardrail`` command line (typer): verify, check, demo, serve, batch, replay, audit."""

from __future__ import annotations

from guardrail.apps.cli.main import app, main

__all__ = ["app", "main"]
