"""LangChain integration of the citation guardrail (distribution ``langchain-citation-guardrail``).

* :class:`CitationGuard` - a Runnable to append to a chain (``prompt | model | parser | CitationGuard()``)
  or to wrap one with (``CitationGuard().wrap(chain)``, a :class:`GuardedRunnable`);
* :class:`LangChainJudge` and :class:`LangChainEmbedder` - your chat model and embeddings as the
  guard's judge and embedder.
"""

from __future__ import annotations

from langchain_citation_guardrail._tracing import REPORT_RUN_NAME
from langchain_citation_guardrail.guard import (
    CITATION_REPORT_EVENT,
    REPORT_METADATA_KEY,
    CitationGuard,
    get_citation_report,
)
from langchain_citation_guardrail.models import LangChainEmbedder, LangChainJudge
from langchain_citation_guardrail.wrap import GuardedRunnable

__all__ = [
    "CITATION_REPORT_EVENT",
    "REPORT_METADATA_KEY",
    "REPORT_RUN_NAME",
    "CitationGuard",
    "GuardedRunnable",
    "LangChainEmbedder",
    "LangChainJudge",
    "get_citation_report",
]

__version__ = "0.1.0"
