"""Judges: the Judge protocol, the embedded local model, the LLM judges, and a judge over any chat model.

The embedded judge needs the ``[local]`` extra, the OpenAI-compatible and Anthropic judges the
``[llm]`` extra; each is imported where it is asked for, and a missing extra raises
:class:`~guardrail.extras.MissingExtraError` naming the install command. ``OpenAIJudge``,
``AnthropicJudge`` and ``LocalJudge`` can be imported from here too, with the same check.
"""

from __future__ import annotations

from typing import Any

from guardrail.extras import require_extra
from guardrail.judges.base import Judge
from guardrail.judges.prompted import ANSWER_SCHEMA, ChatPrompt, PromptedJudge, VerdictAnswer

__all__ = [
    "ANSWER_SCHEMA",
    "ChatPrompt",
    "Judge",
    "PromptedJudge",
    "VerdictAnswer",
    "require_judge_extra",
]

_LAZY = {
    "OpenAIJudge": ("guardrail.judges.openai", "llm", ("openai",), "the OpenAI-compatible judge"),
    "AnthropicJudge": ("guardrail.judges.anthropic", "llm", ("anthropic",), "the Anthropic judge"),
    "LocalJudge": ("guardrail.judges.local", "local", None, "the embedded judge"),
}

_SDK = {"openai": "openai", "ollama": "openai", "anthropic": "anthropic"}


def require_judge_extra(name: str | None) -> None:
    """Raise :class:`~guardrail.extras.MissingExtraError` when the judge ``GUARDRAIL_JUDGE=name``
    (None: the embedded one) is not installed."""
    if name in _SDK:
        require_extra("llm", f"GUARDRAIL_JUDGE={name}", (_SDK[name],))
    else:
        require_extra(
            "local",
            "the embedded judge (GUARDRAIL_JUDGE unset or local)",
            alternative="or set GUARDRAIL_JUDGE=openai|anthropic|ollama, or pass judge=...",
        )


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, extra, modules, what = _LAZY[name]
        require_extra(extra, what, modules)
        import importlib

        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
