"""Deprecated: :mod:`llama_index.postprocessor.citation_guardrail.query_engine` (importing the package warns)."""

from __future__ import annotations

from llama_index.postprocessor.citation_guardrail.query_engine import (
    BLOCKED_KEY,
    REPORT_KEY,
    CitationGuardQueryEngine,
    report_of,
)

__all__ = ["BLOCKED_KEY", "REPORT_KEY", "CitationGuardQueryEngine", "report_of"]
