"""LlamaIndex integration of the citation guardrail.

* :class:`CitationGuardPostprocessor` - re-checks retrieved nodes against the live pages named in
  their metadata, records the verdict in the node's metadata and drops dead or contradicted ones.
* :class:`CitationGuardQueryEngine` - wraps any query engine and verifies the citations of its
  answer (``[n]`` markers resolved to the response's source nodes), streaming included.
"""

from __future__ import annotations

from guardrail_llamaindex.postprocessor import VERDICT_KEYS, CitationGuardPostprocessor
from guardrail_llamaindex.query_engine import BLOCKED_KEY, REPORT_KEY, CitationGuardQueryEngine, report_of

__all__ = [
    "BLOCKED_KEY",
    "REPORT_KEY",
    "VERDICT_KEYS",
    "CitationGuardPostprocessor",
    "CitationGuardQueryEngine",
    "report_of",
]
