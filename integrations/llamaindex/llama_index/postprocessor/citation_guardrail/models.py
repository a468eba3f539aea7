"""Your LlamaIndex models as the guard's judge and embedder.

``LlamaIndexJudge(llm)`` judges through the core's :class:`~guardrail.PromptedJudge`: the
built-in LLM judges' prompt (fenced, neutralised claim and passages), their strict parsing, their
retry budget, and the verifier's quote guard after it. ``LlamaIndexEmbedder(embed_model)`` embeds
the claims and passages retrieval compares.
"""

from __future__ import annotations

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM

from guardrail import ChatPrompt, FunctionEmbedder, PromptedJudge, RetryPolicy, VerdictAnswer

__all__ = ["LlamaIndexEmbedder", "LlamaIndexJudge"]


class LlamaIndexJudge(PromptedJudge):
    """Any LlamaIndex LLM you configured, as the guard's judge.

    ``structured``: ask for the verdict as structured output (``llm.as_structured_llm`` with the
    built-in judges' answer schema as a pydantic model) - by default where the model calls
    functions (``llm.metadata.is_function_calling_model``), else as text, parsed as strictly as the
    OpenAI judge parses its answers. A verdict then needs a quote that is in the passages shown
    (the verifier's quote guard), whatever the model says. ``timeout``, ``retry`` and
    ``concurrency`` bound the calls (defaults: 60 s, 3 attempts, 4 at once); a failed request
    reads ``not_found`` / ``judge_error``.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        structured: bool | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        concurrency: int = 4,
    ) -> None:
        self.llm = llm
        self.structured = llm.metadata.is_function_calling_model if structured is None else structured
        super().__init__(
            self._ask,
            name="llamaindex",
            model=llm.metadata.model_name,
            timeout=timeout,
            retry=retry,
            concurrency=concurrency,
            credentials=f"the API key of {type(llm).__name__}",
        )

    async def _ask(self, prompt: ChatPrompt) -> object:
        messages = [
            ChatMessage(role=MessageRole.SYSTEM, content=prompt.system),
            ChatMessage(role=MessageRole.USER, content=prompt.user),
        ]
        if self.structured:
            response = await self.llm.as_structured_llm(VerdictAnswer).achat(messages)
            return response.raw
        response = await self.llm.achat(messages)
        return response.message.content or ""


class LlamaIndexEmbedder(FunctionEmbedder):
    """Any LlamaIndex embedding model as the guard's embedder (``get_text_embedding_batch``,
    vectors L2-normalised by the core)."""

    def __init__(self, embed_model: BaseEmbedding) -> None:
        self.embed_model = embed_model
        super().__init__(embed_model.get_text_embedding_batch, name=f"llamaindex:{embed_model.model_name}")
