"""Deprecated name of :mod:`llama_index.postprocessor.citation_guardrail` (distribution
``llama-index-postprocessor-citation-guardrail``).

Kept for one release: importing it warns (``DeprecationWarning``) and gives the same objects.
"""

from __future__ import annotations

import warnings

from llama_index.postprocessor.citation_guardrail import (
    BLOCKED_KEY,
    REPORT_KEY,
    VERDICT_KEYS,
    CitationGuardPostprocessor,
    CitationGuardQueryEngine,
    report_of,
)

warnings.warn(
    "guardrail_llamaindex is deprecated and will be removed in the next release: import from "
    "llama_index.postprocessor.citation_guardrail (pip install llama-index-postprocessor-citation-guardrail)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "BLOCKED_KEY",
    "REPORT_KEY",
    "VERDICT_KEYS",
    "CitationGuardPostprocessor",
    "CitationGuardQueryEngine",
    "report_of",
]
