"""LangChain integration of the citation guardrail: ``CitationGuard``, a Runnable to append to a chain.

>>> from guardrail_langchain import CitationGuard
>>> chain = prompt | model | StrOutputParser() | CitationGuard()  # doctest: +SKIP
"""

from __future__ import annotations

from guardrail_langchain.guard import CITATION_REPORT_EVENT, REPORT_METADATA_KEY, CitationGuard, get_citation_report

__all__ = ["CITATION_REPORT_EVENT", "REPORT_METADATA_KEY", "CitationGuard", "get_citation_report"]
