"""A judge over any chat model: the built-in LLM judges' prompt, parsing and retries, the model given.

The framework adapters (``LangChainJudge``, ``LlamaIndexJudge``) are this judge with an ``ask``
that sends a :class:`ChatPrompt` to the user's own model. Everything that makes a verdict
trustworthy is shared with the OpenAI and Anthropic judges: the system prompt and the fenced,
neutralised claim and passages (:mod:`guardrail.judges.prompt`), the strict parsing of the answer
(``parse_verdict_text`` / ``parse_verdict_data``), the retry budget (``judge_all``), and, after
the judge, the verifier's quote guard (a verdict needs a quote that is in the passages shown).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from guardrail.core.schema import JudgeRequest, JudgeVerdict
from guardrail.judges.prompt import (
    SYSTEM_PROMPT,
    VERDICT_SCHEMA,
    VERDICT_SCHEMA_NAME,
    JudgeParseError,
    parse_verdict_data,
    parse_verdict_text,
    render_user_message,
)
from guardrail.judges.retry import JudgeCallError, RetryPolicy, TransientJudgeError, error_for_status, judge_all

__all__ = ["ANSWER_SCHEMA", "Ask", "ChatPrompt", "PromptedJudge", "VerdictAnswer", "model_error", "parse_answer"]

ANSWER_SCHEMA: dict[str, Any] = {
    "title": VERDICT_SCHEMA_NAME,
    "description": "Record the verdict on whether the passages support the claim.",
    **VERDICT_SCHEMA,
}
"""The built-in judges' strict answer schema, with the title and description that tool-calling and
structured-output APIs want (the name the Anthropic judge's tool has)."""


class VerdictAnswer(BaseModel):
    """The answer schema as a pydantic model, for frameworks whose structured output wants a class
    (its fields are checked again by ``parse_verdict_data``)."""

    model_config = ConfigDict(extra="forbid", title=VERDICT_SCHEMA_NAME)

    label: Literal["supported", "contradicted", "not_found"] = Field(
        description="supported, contradicted or not_found."
    )
    evidence_quote: str = Field(description="A contiguous span copied verbatim from one passage; empty for not_found.")
    confidence: float = Field(description="How sure you are of the label, from 0 to 1.")


@dataclass(frozen=True)
class ChatPrompt:
    """What the judge asks the model for one request: the system message (the instructions), the
    user message (the fenced claim and passages) and the JSON schema of the answer, for models
    that answer in structured output (``schema`` has a ``title`` and a ``description``, as tool
    and structured-output APIs want)."""

    system: str
    user: str
    schema: Mapping[str, Any] = field(default_factory=lambda: dict(ANSWER_SCHEMA))

    @staticmethod
    def answer_schema() -> Mapping[str, Any]:
        """The answer's JSON schema (:data:`ANSWER_SCHEMA`), for a model set up before any prompt."""
        return ANSWER_SCHEMA

    @classmethod
    def for_request(cls, request: JudgeRequest) -> ChatPrompt:
        """The prompt the built-in LLM judges send for ``request``."""
        return cls(system=SYSTEM_PROMPT, user=render_user_message(request))


Ask = Callable[[ChatPrompt], Awaitable[object]]
"""One call to the model: its answer as text (a JSON object, parsed strictly) or as structured
output (a mapping or a pydantic model). Raising ends the attempt (see :func:`model_error`)."""


def parse_answer(answer: object) -> JudgeVerdict:
    """A model's answer as a verdict: text through ``parse_verdict_text``, structured output (a
    mapping or a pydantic model) through ``parse_verdict_data``; :class:`JudgeParseError` otherwise."""
    if isinstance(answer, str):
        return parse_verdict_text(answer)
    if isinstance(answer, BaseModel):
        answer = answer.model_dump()
    if isinstance(answer, Mapping):
        return parse_verdict_data(dict(answer))
    raise JudgeParseError(f"answer is a {type(answer).__name__}, not text or an object")


def model_error(error: Exception, credentials: str) -> JudgeCallError:
    """A model's exception as a judge error. An HTTP status on it (``status_code``, as the provider
    SDKs carry) decides as for the built-in judges: 401/403 end the call naming ``credentials``,
    429 and 5xx are retried, other 4xx are not. Anything else is worth another attempt. The
    exception's own message is never kept: it can echo a key."""
    status = getattr(error, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        headers = getattr(getattr(error, "response", None), "headers", None)
        return error_for_status(status, headers if isinstance(headers, Mapping) else None, credentials)
    return TransientJudgeError(f"the model raised {type(error).__name__}")


class PromptedJudge:
    """A :class:`~guardrail.judges.base.Judge` over any chat model, reached through ``ask``.

    Each request is asked once per attempt, under ``retry`` (default: 3 attempts, ``timeout``
    seconds each), at most ``concurrency`` at a time; a malformed answer, a timeout or a model
    error is tried again, and a request that cannot be answered ends as ``not_found`` /
    ``judge_error`` (``judge`` never raises for one bad answer). ``credentials`` names what to
    check when the model's API rejects the credentials.
    """

    cpu_bound = False  # the model runs elsewhere, or in its own framework: calls may overlap

    def __init__(
        self,
        ask: Ask,
        *,
        name: str = "chat-model",
        model: str = "unknown",
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        concurrency: int = 4,
        credentials: str = "the chat model's API key",
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.ask = ask
        self.name = name
        self.model = model
        self.retry = retry or RetryPolicy(attempt_timeout=timeout)
        self.concurrency = concurrency
        self.credentials = credentials

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r})"

    def load(self) -> None:
        """Nothing to load: the model is the caller's."""

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """One verdict per request, in order."""
        if not requests:
            return []

        async def attempt(request: JudgeRequest, timeout: float) -> JudgeVerdict:
            try:
                answer = await self.ask(ChatPrompt.for_request(request))
            except (JudgeCallError, JudgeParseError):
                raise
            except Exception as exc:
                raise model_error(exc, self.credentials) from None
            return parse_answer(answer)

        return await judge_all(requests, attempt, policy=self.retry, concurrency=self.concurrency, judge_name=self.name)
