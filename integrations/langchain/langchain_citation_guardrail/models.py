"""Your LangChain models as the guard's judge and embedder.

``LangChainJudge(chat_model)`` judges through the core's :class:`~guardrail.PromptedJudge`: the
built-in LLM judges' prompt (fenced, neutralised claim and passages), their strict parsing, their
retry budget, and the verifier's quote guard after it. ``LangChainEmbedder(embeddings)`` embeds
the claims and passages retrieval compares.
"""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable

from guardrail import ChatPrompt, FunctionEmbedder, PromptedJudge, RetryPolicy

__all__ = ["LangChainEmbedder", "LangChainJudge"]


def _model_name(model: object) -> str:
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _structured(model: BaseLanguageModel[Any], schema: dict[str, Any]) -> Runnable[Any, Any] | None:
    """``model.with_structured_output(schema)``, or None where the model does not support it."""
    try:
        return model.with_structured_output(schema)
    except (NotImplementedError, AttributeError):
        return None


class LangChainJudge(PromptedJudge):
    """Any LangChain chat model (or LLM) you configured, as the guard's judge.

    ``structured``: ask for the verdict as structured output (``with_structured_output`` with the
    built-in judges' JSON schema) - by default where the model supports it (tool calling), else
    as text, parsed as strictly as the OpenAI judge parses its answers. A verdict then needs a
    quote that is in the passages shown (the verifier's quote guard), whatever the model says.
    ``timeout``, ``retry`` and ``concurrency`` bound the calls (defaults: 60 s, 3 attempts, 4 at
    once); a failed request reads ``not_found`` / ``judge_error``. The model's own retries and
    settings (temperature...) are yours: set them on the model.
    """

    def __init__(
        self,
        model: BaseLanguageModel[Any],
        *,
        structured: bool | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        concurrency: int = 4,
    ) -> None:
        self.chat_model = model
        self.structured_model = _structured(model, dict(ChatPrompt.answer_schema()))
        if structured and self.structured_model is None:
            raise ValueError(f"{type(model).__name__} does not support structured output (with_structured_output)")
        if structured is False:
            self.structured_model = None
        super().__init__(
            self._ask,
            name="langchain",
            model=_model_name(model),
            timeout=timeout,
            retry=retry,
            concurrency=concurrency,
            credentials=f"the API key of {type(model).__name__}",
        )

    async def _ask(self, prompt: ChatPrompt) -> object:
        messages = [SystemMessage(prompt.system), HumanMessage(prompt.user)]
        if self.structured_model is not None:
            return await self.structured_model.ainvoke(messages)
        answer = await self.chat_model.ainvoke(messages)
        return answer.text if isinstance(answer, BaseMessage) else answer


class LangChainEmbedder(FunctionEmbedder):
    """Any LangChain ``Embeddings`` as the guard's embedder (``embed_documents``, vectors
    L2-normalised by the core)."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        super().__init__(embeddings.embed_documents, name=f"langchain:{_model_name(embeddings)}")
