"""Deprecated: :mod:`langchain_citation_guardrail.guard` (importing the package warns)."""

from __future__ import annotations

from langchain_citation_guardrail.guard import (
    CITATION_REPORT_EVENT,
    REPORT_METADATA_KEY,
    CitationGuard,
    get_citation_report,
)

__all__ = ["CITATION_REPORT_EVENT", "REPORT_METADATA_KEY", "CitationGuard", "get_citation_report"]
