"""Citation guardrail: check that cited URLs really say what an LLM's answer claims."""

from __future__ import annotations

from guardrail._bridges import aiter_from_sync, iterate_sync, run_sync
from guardrail.archive import Archive, WaybackArchive
from guardrail.core.extract import (
    ExtractedAnswer,
    Source,
    extract_claims,
    needs_grounding,
    normalize_sources,
    stream_cut,
)
from guardrail.core.policy import (
    Action,
    AppliedAction,
    Badges,
    CitationBlocked,
    GuardedAnswer,
    OutputFormat,
    Policy,
    apply_policy,
    render_badge,
    render_summary,
)
from guardrail.core.repair import Repair, plan_repairs
from guardrail.core.report import merge_reports, support_summary
from guardrail.core.schema import (
    AnswerClaim,
    AnswerReport,
    ArchivedSnapshot,
    CitationRef,
    ClaimReport,
    FetchedPage,
    JudgeRequest,
    JudgeVerdict,
    Label,
    Reason,
    Reference,
    RepairKind,
    SourceInfo,
    SuggestedCitation,
    TextReport,
    UrlVerdict,
    VerdictKind,
)
from guardrail.extras import MissingExtraError
from guardrail.fetch.once import FetchOnce, PageMemo
from guardrail.grounding import (
    CheckGroundingRequest,
    CheckGroundingResponse,
    GroundingFact,
    GroundingJudgeError,
    GroundingLimitError,
    GroundingSpec,
    acheck_grounding,
    check_grounding,
)
from guardrail.judges import ChatPrompt, Judge, PromptedJudge, VerdictAnswer
from guardrail.observe import StageObserver, StageSpan, observing
from guardrail.retrieval import Embedder, FunctionEmbedder
from guardrail.retry import RetryPolicy
from guardrail.runtime import Runtime, build_runtime, build_verifier
from guardrail.settings import ConfigurationError, Settings
from guardrail.streaming import AnswerStream, StreamPiece
from guardrail.verifier import ClaimTask, Fact, Verifier

__all__ = [
    "Action",
    "AnswerClaim",
    "AnswerReport",
    "AnswerStream",
    "AppliedAction",
    "Archive",
    "ArchivedSnapshot",
    "Badges",
    "ChatPrompt",
    "CheckGroundingRequest",
    "CheckGroundingResponse",
    "CitationBlocked",
    "CitationRef",
    "ClaimReport",
    "ClaimTask",
    "ConfigurationError",
    "Embedder",
    "ExtractedAnswer",
    "Fact",
    "FetchOnce",
    "FetchedPage",
    "FunctionEmbedder",
    "GroundingFact",
    "GroundingJudgeError",
    "GroundingLimitError",
    "GroundingSpec",
    "GuardedAnswer",
    "Judge",
    "JudgeRequest",
    "JudgeVerdict",
    "Label",
    "MissingExtraError",
    "OutputFormat",
    "PageMemo",
    "Policy",
    "PromptedJudge",
    "Reason",
    "Reference",
    "Repair",
    "RepairKind",
    "RetryPolicy",
    "Runtime",
    "Settings",
    "Source",
    "SourceInfo",
    "StageObserver",
    "StageSpan",
    "StreamPiece",
    "SuggestedCitation",
    "TextReport",
    "UrlVerdict",
    "VerdictAnswer",
    "VerdictKind",
    "Verifier",
    "WaybackArchive",
    "acheck_grounding",
    "aiter_from_sync",
    "apply_policy",
    "build_runtime",
    "build_verifier",
    "check_grounding",
    "extract_claims",
    "iterate_sync",
    "merge_reports",
    "needs_grounding",
    "normalize_sources",
    "observing",
    "plan_repairs",
    "render_badge",
    "render_summary",
    "run_sync",
    "stream_cut",
    "support_summary",
]
__version__ = "0.2.0"
