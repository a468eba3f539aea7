"""An LLM judge over the OpenAI chat completions API: OpenAI, Ollama's /v1, vLLM, llama.cpp alike."""

from __future__ import annotations

from typing import Any

import openai
from pydantic import SecretStr

from guardrail.core.schema import JudgeRequest, JudgeVerdict
from guardrail.judges.api import ApiJudge, sdk_errors
from guardrail.judges.prompt import (
    SYSTEM_PROMPT,
    VERDICT_SCHEMA,
    VERDICT_SCHEMA_NAME,
    parse_verdict_text,
    render_user_message,
)
from guardrail.judges.retry import RetryPolicy, TransientJudgeError
from guardrail.settings import ConfigurationError, Settings

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_OLLAMA_MODEL = "llama3.1"

RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": VERDICT_SCHEMA_NAME, "strict": True, "schema": VERDICT_SCHEMA},
}
"""The strict structured-output request sent with every call."""


class OpenAIJudge(ApiJudge[openai.AsyncOpenAI]):
    """Judges claims with a chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Every call asks for the strict JSON schema of :mod:`guardrail.judges.prompt` at temperature 0.
    Failures are retried under ``retry`` (the SDK's own retries are off) and end as
    ``not_found``/``judge_error``; ``judge`` never raises for one bad answer. The API key is
    held as a ``SecretStr`` and never logged.
    """

    client_class = openai.AsyncOpenAI

    def __init__(
        self,
        model: str = DEFAULT_OPENAI_MODEL,
        *,
        api_key: str | SecretStr,
        base_url: str | None = None,
        name: str = "openai",
        key_setting: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        concurrency: int = 8,
        temperature: float = 0.0,
    ) -> None:
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            name=name,
            key_setting=key_setting,
            timeout=timeout,
            retry=retry,
            concurrency=concurrency,
        )
        self.temperature = temperature

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIJudge:
        """The OpenAI judge from OPENAI_API_KEY, OPENAI_BASE_URL, GUARDRAIL_JUDGE_MODEL, GUARDRAIL_JUDGE_TIMEOUT.

        Raises ConfigurationError naming OPENAI_API_KEY when it is not set.
        """
        if settings.openai_api_key is None or not settings.openai_api_key.get_secret_value().strip():
            raise ConfigurationError("GUARDRAIL_JUDGE=openai needs OPENAI_API_KEY, which is not set")
        return cls(
            settings.judge_model or DEFAULT_OPENAI_MODEL,
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
            timeout=settings.judge_timeout,
        )

    @classmethod
    def for_ollama(cls, settings: Settings) -> OpenAIJudge:
        """A judge on Ollama's OpenAI-compatible API at OLLAMA_BASE_URL (default model llama3.1)."""
        return cls(
            settings.judge_model or DEFAULT_OLLAMA_MODEL,
            api_key="ollama",  # Ollama ignores the key, the SDK insists on one
            base_url=settings.ollama_base_url,
            name="ollama",
            key_setting="OLLAMA_BASE_URL (Ollama itself needs no key; a proxy in front of it does)",
            timeout=settings.judge_timeout,
        )

    async def _attempt(self, client: openai.AsyncOpenAI, request: JudgeRequest, timeout: float) -> JudgeVerdict:
        messages: Any = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": render_user_message(request)},
        ]
        response_format: Any = RESPONSE_FORMAT
        with sdk_errors(openai, self.key_setting):
            completion = await client.chat.completions.create(
                model=self.model,
                messages=messages,
                response_format=response_format,
                temperature=self.temperature,
                timeout=timeout,
            )
        choices = getattr(completion, "choices", None) or []
        if not choices:
            raise TransientJudgeError("response has no choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise TransientJudgeError("the model refused")
        if getattr(choice, "finish_reason", None) == "length":
            raise TransientJudgeError("answer cut off (finish_reason=length)")
        return parse_verdict_text(getattr(message, "content", None))
