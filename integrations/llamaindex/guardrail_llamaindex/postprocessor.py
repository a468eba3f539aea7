"""Deprecated: :mod:`llama_index.postprocessor.citation_guardrail.postprocessor` (importing the package warns)."""

from __future__ import annotations

from llama_index.postprocessor.citation_guardrail.postprocessor import VERDICT_KEYS, CitationGuardPostprocessor

__all__ = ["VERDICT_KEYS", "CitationGuardPostprocessor"]
