"""An LLM judge over the OpenAI chat completions API: OpenAI, Ollama's /v1, vLLM, llama.cpp alike.

Servers differ in the structured output they accept, so the answer format is negotiated per base
URL and model (a gateway such as LiteLLM or OpenRouter serves models that accept different formats
behind one URL): strict ``json_schema`` first; a server that refuses it (HTTP 400, 415, 422, 500 or
501 with an error naming the response format, since some servers answer a refusal with a 500), or
accepts it but answers with something that is not a verdict (it ignored the format), is asked again
at once with ``json_object`` and the schema in the prompt, then with plain text, whose JSON is
extracted and validated (:func:`guardrail.judges.prompt.parse_verdict_text`). The mode that worked
is remembered for the base URL and model (process-wide), so later calls start there.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Literal

import openai

from guardrail.core.schema import JudgeRequest, JudgeVerdict
from guardrail.judges.api import ApiJudge, sdk_errors
from guardrail.judges.prompt import (
    SCHEMA_INSTRUCTION,
    SYSTEM_PROMPT,
    VERDICT_SCHEMA,
    VERDICT_SCHEMA_NAME,
    JudgeParseError,
    parse_verdict_text,
    render_user_message,
)
from guardrail.judges.retry import TransientJudgeError
from guardrail.settings import Settings

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_OLLAMA_MODEL = "llama3.1"

RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": VERDICT_SCHEMA_NAME, "strict": True, "schema": VERDICT_SCHEMA},
}
"""The strict structured-output request, the first answer format tried."""

ResponseMode = Literal["json_schema", "json_object", "text"]
RESPONSE_MODES: tuple[ResponseMode, ...] = ("json_schema", "json_object", "text")
"""The answer formats tried, richest first."""

_REFUSAL_STATUS = frozenset({400, 415, 422, 500, 501})
_FORMAT_WORDS = re.compile(r"response.?format|json.?schema|json.?object|structured|grammar|schema", re.IGNORECASE)
_MODES: dict[tuple[str, str], ResponseMode] = {}
_MODES_LOCK = threading.Lock()


def negotiated_mode(base_url: str | None, model: str) -> ResponseMode:
    """The answer format that last worked for ``model`` at ``base_url`` (``json_schema`` until one
    was refused or ignored there)."""
    with _MODES_LOCK:
        return _MODES.get((base_url or "", model), "json_schema")


def _remember_mode(base_url: str | None, model: str, mode: ResponseMode) -> None:
    with _MODES_LOCK:
        _MODES[(base_url or "", model)] = mode


def forget_modes(base_url: str | None = None) -> None:
    """Forget the answer formats negotiated at ``base_url`` (every model there), or everywhere when
    it is None (the next calls start from ``json_schema`` again)."""
    with _MODES_LOCK:
        if base_url is None:
            _MODES.clear()
        else:
            for key in [key for key in _MODES if key[0] == base_url]:
                del _MODES[key]


def refuses_format(exc: openai.APIStatusError) -> bool:
    """Whether an error answer is the server refusing the requested answer format."""
    if exc.status_code not in _REFUSAL_STATUS:
        return False
    return bool(_FORMAT_WORDS.search(f"{exc.message} {exc.body}"))


def request_format(mode: ResponseMode) -> tuple[str, dict[str, Any] | None]:
    """The system prompt and ``response_format`` for one answer format (None: not sent)."""
    if mode == "json_schema":
        return SYSTEM_PROMPT, RESPONSE_FORMAT
    if mode == "json_object":
        return SYSTEM_PROMPT + SCHEMA_INSTRUCTION, {"type": "json_object"}
    return SYSTEM_PROMPT + SCHEMA_INSTRUCTION, None


class OpenAIJudge(ApiJudge[openai.AsyncOpenAI]):
    """Judges claims with a chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Every call asks for the strict JSON schema of :mod:`guardrail.judges.prompt` at temperature 0,
    or the richest answer format the server accepts (see the module docs).
    Failures are retried under ``retry`` (the SDK's own retries are off) and end as
    ``not_found``/``judge_error``; ``judge`` never raises for one bad answer. The API key is
    held as a ``SecretStr`` and never logged.
    """

    client_class = openai.AsyncOpenAI
    default_name = "openai"
    default_key_setting = "OPENAI_API_KEY"

    def __init__(self, model: str = DEFAULT_OPENAI_MODEL, *, temperature: float = 0.0, **options: Any) -> None:
        """``temperature`` is what every call asks for; ``options`` are
        :class:`~guardrail.judges.api.ApiJudge`'s (``api_key``, ``base_url``, ``timeout``, ...)."""
        super().__init__(model, **options)
        self.temperature = temperature

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIJudge:
        """The OpenAI judge from OPENAI_API_KEY, OPENAI_BASE_URL, GUARDRAIL_JUDGE_MODEL, GUARDRAIL_JUDGE_TIMEOUT.

        Raises ConfigurationError naming OPENAI_API_KEY when it is not set.
        """
        return cls.configured(
            settings,
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
            default_model=DEFAULT_OPENAI_MODEL,
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

    @property
    def response_mode(self) -> ResponseMode:
        """The answer format this judge's next call starts with (negotiated per base URL and model)."""
        return negotiated_mode(self.base_url, self.model)

    async def _create(
        self, client: openai.AsyncOpenAI, request: JudgeRequest, timeout: float, first: ResponseMode
    ) -> tuple[Any, ResponseMode]:
        """One chat completion, from answer format ``first``, stepping down to the next format at
        once when the server refuses one; the format that worked is remembered and returned."""
        start = RESPONSE_MODES.index(first)
        for n, mode in enumerate(RESPONSE_MODES[start:], start=start):
            system, response_format = request_format(mode)
            options: dict[str, Any] = {"response_format": response_format} if response_format else {}
            messages: Any = [
                {"role": "system", "content": system},
                {"role": "user", "content": render_user_message(request)},
            ]
            with sdk_errors(openai, self.key_setting):
                try:
                    completion = await client.chat.completions.create(
                        model=self.model, messages=messages, temperature=self.temperature, timeout=timeout, **options
                    )
                except openai.APIStatusError as exc:
                    if n + 1 < len(RESPONSE_MODES) and refuses_format(exc):
                        continue
                    raise
            if n != start:
                _remember_mode(self.base_url, self.model, mode)
            return completion, mode
        raise TransientJudgeError("no answer format accepted")  # not reached: the last mode raises

    async def _attempt(self, client: openai.AsyncOpenAI, request: JudgeRequest, timeout: float) -> JudgeVerdict:
        """One attempt: a completion in the negotiated format, read into a verdict. A server that
        accepts a structured format but ignores it (llama.cpp's Python server answers
        ``json_schema`` requests with free text) is asked again at once in the next format when
        its answer is malformed, and that format is remembered, as for a refusal."""
        mode = negotiated_mode(self.base_url, self.model)
        while True:
            completion, mode = await self._create(client, request, timeout, mode)
            try:
                return self._read(completion)
            except JudgeParseError:
                step = RESPONSE_MODES.index(mode) + 1
                if step >= len(RESPONSE_MODES):
                    raise
                mode = RESPONSE_MODES[step]
                _remember_mode(self.base_url, self.model, mode)

    @staticmethod
    def _read(completion: Any) -> JudgeVerdict:
        """The verdict in a completion; JudgeParseError when the answer is not one."""
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
