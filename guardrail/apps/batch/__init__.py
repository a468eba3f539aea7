"""Batch runs: verify a JSONL file of model outputs, resumably, and report citation precision."""

from __future__ import annotations

from guardrail.apps.batch.engine import (
    BatchInputError,
    BatchResult,
    BatchRow,
    BatchSummary,
    Checkpoint,
    CitationRow,
    RowResult,
    arun_batch,
    arun_batch_file,
    checkpoint_path,
    read_rows,
    render_html,
    summarize,
    write_csv,
)

__all__ = [
    "BatchInputError",
    "BatchResult",
    "BatchRow",
    "BatchSummary",
    "Checkpoint",
    "CitationRow",
    "RowResult",
    "arun_batch",
    "arun_batch_file",
    "checkpoint_path",
    "read_rows",
    "render_html",
    "summarize",
    "write_csv",
]
