"""Citation guardrail: check that cited URLs really say what an LLM's answer claims."""

from __future__ import annotations

from guardrail.schema import (
    AnswerClaim,
    AnswerReport,
    CitationRef,
    ClaimReport,
    FetchedPage,
    JudgeRequest,
    JudgeVerdict,
    Label,
    Reason,
    UrlVerdict,
)
from guardrail.settings import ConfigurationError, Settings
from guardrail.verifier import ClaimTask, Fact, PageMemo, Verifier

__all__ = [
    "AnswerClaim",
    "AnswerReport",
    "CitationRef",
    "ClaimReport",
    "ClaimTask",
    "ConfigurationError",
    "Fact",
    "FetchedPage",
    "JudgeRequest",
    "JudgeVerdict",
    "Label",
    "PageMemo",
    "Reason",
    "Settings",
    "UrlVerdict",
    "Verifier",
]
__version__ = "0.1.0"
