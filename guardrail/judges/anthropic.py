"""An LLM judge over the Anthropic Messages API, answering through a forced tool call."""

from __future__ import annotations

from typing import Any

import anthropic

from guardrail.core.schema import JudgeRequest, JudgeVerdict
from guardrail.judges.api import ApiJudge, sdk_errors
from guardrail.judges.prompt import (
    SYSTEM_PROMPT,
    VERDICT_SCHEMA,
    VERDICT_SCHEMA_NAME,
    parse_verdict_data,
    parse_verdict_text,
    render_user_message,
)
from guardrail.judges.retry import TransientJudgeError
from guardrail.settings import Settings

DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"

VERDICT_TOOL: dict[str, Any] = {
    "name": VERDICT_SCHEMA_NAME,
    "description": "Record the verdict on whether the passages support the claim.",
    "input_schema": VERDICT_SCHEMA,
}
"""The one tool the model must call; its input is the verdict."""


class AnthropicJudge(ApiJudge[anthropic.AsyncAnthropic]):
    """Judges claims with a Claude model; the answer is the input of a forced tool call.

    Forcing ``tool_choice`` to the verdict tool makes the model answer with JSON matching
    :data:`guardrail.judges.prompt.VERDICT_SCHEMA`. No sampling parameters are sent: the current
    API version (2026-10-21, SDK 2.x) rejects ``temperature``. Failures are retried under
    ``retry`` (the SDK's own retries are off) and end as ``not_found``/``judge_error``.
    """

    client_class = anthropic.AsyncAnthropic
    default_name = "anthropic"
    default_key_setting = "ANTHROPIC_API_KEY"

    def __init__(self, model: str = DEFAULT_ANTHROPIC_MODEL, *, max_tokens: int = 1024, **options: Any) -> None:
        """``max_tokens`` caps each answer; ``options`` are :class:`~guardrail.judges.api.ApiJudge`'s
        (``api_key``, ``base_url``, ``timeout``, ...)."""
        super().__init__(model, **options)
        self.max_tokens = max_tokens

    @classmethod
    def from_settings(cls, settings: Settings) -> AnthropicJudge:
        """The judge from ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, GUARDRAIL_JUDGE_MODEL, GUARDRAIL_JUDGE_TIMEOUT.

        Raises ConfigurationError naming ANTHROPIC_API_KEY when it is not set.
        """
        return cls.configured(
            settings,
            api_key=settings.anthropic_api_key,
            base_url=settings.anthropic_base_url,
            default_model=DEFAULT_ANTHROPIC_MODEL,
        )

    async def _attempt(self, client: anthropic.AsyncAnthropic, request: JudgeRequest, timeout: float) -> JudgeVerdict:
        messages: Any = [{"role": "user", "content": render_user_message(request)}]
        tools: Any = [VERDICT_TOOL]
        tool_choice: Any = {"type": "tool", "name": VERDICT_SCHEMA_NAME}
        with sdk_errors(anthropic, self.key_setting):
            message = await client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=SYSTEM_PROMPT,
                messages=messages,
                tools=tools,
                tool_choice=tool_choice,
                timeout=timeout,
            )
        if getattr(message, "stop_reason", None) == "refusal":
            raise TransientJudgeError("the model refused")
        blocks = getattr(message, "content", None) or []
        for block in blocks:
            if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == (VERDICT_SCHEMA_NAME):
                return parse_verdict_data(getattr(block, "input", None))
        # A proxy or an older model may answer in text instead of calling the tool.
        text = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", None) == "text")
        if getattr(message, "stop_reason", None) == "max_tokens":
            raise TransientJudgeError("answer cut off (stop_reason=max_tokens)")
        return parse_verdict_text(text)
