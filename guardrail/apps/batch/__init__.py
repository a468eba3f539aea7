"""Batch runs: verify a JSONL file of model outputs, resumably, and report citation precision.

The rooms: :mod:`~guardrail.apps.batch.rows` reads and validates the input,
:mod:`~guardrail.apps.batch.engine` verifies the rows a few at a time,
:mod:`~guardrail.apps.batch.checkpoint` remembers finished rows so a rerun resumes,
:mod:`~guardrail.apps.batch.results` holds what each row came to,
:mod:`~guardrail.apps.batch.summary` counts the figures and writes the CSV, and
:mod:`~guardrail.apps.batch.report` renders the HTML report from the templates in ``templates/``.
"""

from __future__ import annotations

from typing import Any

from guardrail.apps.batch.checkpoint import (
    BatchLockedError,
    BatchOutputError,
    Checkpoint,
    checkpoint_path,
    lock_path,
)
from guardrail.apps.batch.engine import BatchResult, arun_batch, arun_batch_file
from guardrail.apps.batch.results import CitationRow, RowResult
from guardrail.apps.batch.rows import BatchInputError, BatchRow, read_rows
from guardrail.apps.batch.summary import BatchSummary, summarize, write_csv

__all__ = [
    "BatchInputError",
    "BatchLockedError",
    "BatchOutputError",
    "BatchResult",
    "BatchRow",
    "BatchSummary",
    "Checkpoint",
    "CitationRow",
    "RowResult",
    "arun_batch",
    "arun_batch_file",
    "checkpoint_path",
    "lock_path",
    "read_rows",
    "render_html",
    "summarize",
    "write_csv",
]


def __getattr__(name: str) -> Any:
    # The HTML report needs Jinja2 (the [cli] extra): imported when it is asked for.
    if name == "render_html":
        from guardrail.apps.batch.report import render_html

        return render_html
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
