"""LangChain integration of the citation guardrail (distribution ``langchain-citation-guardrail``).

* :class:`CitationGuard` - a Runnable to append to a chain (``prompt | model | parser | CitationGuard()``)
  or to wrap one with (``CitationGuard().wrap(chain)``, a :class:`GuardedRunnable`);
* :class:`CitationGuardMiddleware` - checks a LangChain 1.x agent's final answer
  (``create_agent(..., middleware=[CitationGuardMiddleware()])``; needs ``langchain``, the
  ``[agents]`` extra);
* :class:`LangChainJudge` and :class:`LangChainEmbedder` - your chat model and embeddings as the
  guard's judge and embedder.
"""

from __future__ import annotations

from typing import Any

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
    "CitationGuardMiddleware",
    "GuardedRunnable",
    "LangChainEmbedder",
    "LangChainJudge",
    "get_citation_report",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The middleware needs `langchain` (not only langchain-core): imported when asked for.
    if name == "CitationGuardMiddleware":
        try:
            from langchain_citation_guardrail.middleware import CitationGuardMiddleware
        except ImportError as exc:
            if (exc.name or "").split(".")[0] not in ("langchain", "langgraph"):
                raise
            raise ImportError(
                "CitationGuardMiddleware needs langchain (LangChain 1.x agents): "
                "pip install 'langchain-citation-guardrail[agents]'"
            ) from exc
        return CitationGuardMiddleware
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
