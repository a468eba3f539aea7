"""Citation guardrail: check that cited URLs really say what an LLM's answer claims."""

from __future__ import annotations

from guardrail.extract import ExtractedAnswer, Source, extract_claims, needs_grounding, normalize_sources, stream_cut
from guardrail.policy import (
    Action,
    AppliedAction,
    Badges,
    CitationBlocked,
    GuardedAnswer,
    Policy,
    apply_policy,
    render_badge,
)
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
    Reference,
    SourceInfo,
    UrlVerdict,
)
from guardrail.settings import ConfigurationError, Settings
from guardrail.verifier import ClaimTask, Fact, PageMemo, Verifier

__all__ = [
    "Action",
    "AnswerClaim",
    "AnswerReport",
    "AppliedAction",
    "Badges",
    "CitationBlocked",
    "CitationRef",
    "ClaimReport",
    "ClaimTask",
    "ConfigurationError",
    "ExtractedAnswer",
    "Fact",
    "FetchedPage",
    "GuardedAnswer",
    "JudgeRequest",
    "JudgeVerdict",
    "Label",
    "PageMemo",
    "Policy",
    "Reason",
    "Reference",
    "Settings",
    "Source",
    "SourceInfo",
    "UrlVerdict",
    "Verifier",
    "apply_policy",
    "extract_claims",
    "needs_grounding",
    "normalize_sources",
    "render_badge",
    "stream_cut",
]
__version__ = "0.1.0"
