"""Judges: the Judge protocol, the embedded local model and the LLM judges."""

from __future__ import annotations

from guardrail.judges.base import Judge
from guardrail.settings import Settings

__all__ = ["Judge", "judge_from_settings"]


def judge_from_settings(settings: Settings) -> Judge | None:
    """The judge named by ``GUARDRAIL_JUDGE``; the embedded local judge when none is named.

    Returns None only when no judge is named and the local model is not installed.
    """
    name = settings.judge
    if name == "openai":
        from guardrail.judges.openai import OpenAIJudge

        return OpenAIJudge.from_settings(settings)
    if name == "ollama":
        from guardrail.judges.openai import OpenAIJudge

        return OpenAIJudge.for_ollama(settings)
    if name == "anthropic":
        from guardrail.judges.anthropic import AnthropicJudge

        return AnthropicJudge.from_settings(settings)
    try:
        from guardrail.judges.local import LocalJudge
    except ImportError:
        return None
    return LocalJudge.from_settings(settings) if LocalJudge.available() else None
