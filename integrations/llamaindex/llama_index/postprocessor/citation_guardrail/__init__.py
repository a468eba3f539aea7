"""LlamaIndex integration of the citation guardrail (distribution
``llama-index-postprocessor-citation-guardrail``).

* :class:`CitationGuardPostprocessor` - re-checks retrieved nodes against the live pages named in
  their metadata, records the verdict in the node's metadata and drops dead or contradicted ones.
* :class:`CitationGuardQueryEngine` - wraps any query engine (``CitationQueryEngine`` included)
  and verifies the citations of its answer (``[n]`` markers resolved to the response's source
  nodes), streaming included.
* :class:`CitationGuardChatEngine` - the same for chat engines (``index.as_chat_engine()``).
* :class:`CitationVerdictEvent` and :class:`CitationReportEvent` - what the guards emit through
  ``llama_index.core.instrumentation`` (a span per guard call).
* :class:`LlamaIndexJudge` and :class:`LlamaIndexEmbedder` - your LLM and embedding model as the
  guard's judge and embedder.
"""

from __future__ import annotations

from llama_index.postprocessor.citation_guardrail._events import CitationReportEvent, CitationVerdictEvent
from llama_index.postprocessor.citation_guardrail._guard import GuardOptions
from llama_index.postprocessor.citation_guardrail.chat_engine import (
    CitationGuardChatEngine,
    GuardedStreamingChatResponse,
)
from llama_index.postprocessor.citation_guardrail.models import LlamaIndexEmbedder, LlamaIndexJudge
from llama_index.postprocessor.citation_guardrail.postprocessor import VERDICT_KEYS, CitationGuardPostprocessor
from llama_index.postprocessor.citation_guardrail.query_engine import (
    BLOCKED_KEY,
    REPORT_KEY,
    CitationGuardQueryEngine,
    report_of,
)

__all__ = [
    "BLOCKED_KEY",
    "REPORT_KEY",
    "VERDICT_KEYS",
    "CitationGuardChatEngine",
    "CitationGuardPostprocessor",
    "CitationGuardQueryEngine",
    "CitationReportEvent",
    "CitationVerdictEvent",
    "GuardOptions",
    "GuardedStreamingChatResponse",
    "LlamaIndexEmbedder",
    "LlamaIndexJudge",
    "report_of",
]

__version__ = "0.1.0"
