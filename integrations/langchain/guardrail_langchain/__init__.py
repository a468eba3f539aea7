"""Deprecated name of :mod:`langchain_citation_guardrail` (distribution ``langchain-citation-guardrail``).

Kept for one release: importing it warns (``DeprecationWarning``) and gives the same objects.
"""

from __future__ import annotations

import warnings

from langchain_citation_guardrail import (
    CITATION_REPORT_EVENT,
    REPORT_METADATA_KEY,
    CitationGuard,
    get_citation_report,
)

warnings.warn(
    "guardrail_langchain is deprecated and will be removed in the next release: "
    "import from langchain_citation_guardrail (pip install langchain-citation-guardrail)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["CITATION_REPORT_EVENT", "REPORT_METADATA_KEY", "CitationGuard", "get_citation_report"]
