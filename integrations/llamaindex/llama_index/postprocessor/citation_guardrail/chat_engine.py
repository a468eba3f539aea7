"""CitationGuardChatEngine: verify the answers of any chat engine before they reach the user."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Generator
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.chat_engine.types import (
    AGENT_CHAT_RESPONSE_TYPE,
    AgentChatResponse,
    BaseChatEngine,
    StreamingAgentChatResponse,
)
from typing_extensions import Unpack

from guardrail import AnswerStream, GuardedAnswer, Verifier
from llama_index.postprocessor.citation_guardrail._guard import (
    BLOCKED_KEY,
    REPORT_KEY,
    AnswerGuard,
    GuardedEngine,
    GuardOptions,
    aguarded_pieces,
    guarded_pieces,
)

__all__ = ["CitationGuardChatEngine", "GuardedStreamingChatResponse"]


@dataclasses.dataclass
class GuardedStreamingChatResponse(StreamingAgentChatResponse):
    """A guarded :class:`StreamingAgentChatResponse`: its stream is the guarded text, and
    ``metadata`` gets the report (``citation_report``) and ``citation_blocked`` when it ends."""

    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)


def _chat_response(text: str, delta: str) -> ChatResponse:
    return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta)


class CitationGuardChatEngine(GuardedEngine, BaseChatEngine):
    """Wraps any chat engine (``index.as_chat_engine(...)``, ``ContextChatEngine``,
    ``CondensePlusContextChatEngine``...): verifies the citations of each answer against the
    response's ``source_nodes`` (``[n]`` is ``source_nodes[n - 1]``; a node's page is fetched
    when its metadata names a URL, else its text is checked as a fact), applies the policy, and
    returns the same kind of response with the guarded text.

    * ``chat``/``achat``: an ``AgentChatResponse`` whose ``response`` is the guarded text and
      whose ``metadata`` holds ``citation_report`` (an :class:`~guardrail.AnswerReport`) and
      ``citation_blocked``.
    * ``stream_chat``/``astream_chat``: a :class:`GuardedStreamingChatResponse` whose
      ``response_gen`` / ``async_response_gen()`` yield the guarded text claim by claim as each
      claim is verified; the report lands in its ``metadata`` when the stream ends.
    * block: the policy's block message (a stream ends with it), or
      :class:`~guardrail.CitationBlocked` with ``raise_on_block``.

    The options (:class:`GuardOptions`), the span and the events are the query engine guard's
    (:class:`~llama_index.postprocessor.citation_guardrail.CitationGuardQueryEngine`).

    The wrapped engine keeps its own memory: the history holds the answer as the model wrote it.
    ``reset()`` and ``chat_history`` are the wrapped engine's.
    """

    def __init__(
        self, chat_engine: BaseChatEngine, verifier: Verifier | None = None, **options: Unpack[GuardOptions]
    ) -> None:
        if not isinstance(chat_engine, BaseChatEngine):
            raise TypeError(f"chat_engine must be a LlamaIndex BaseChatEngine, not {type(chat_engine).__name__}")
        self._chat_engine = chat_engine
        self._set_guard(verifier, options)

    @property
    def chat_engine(self) -> BaseChatEngine:
        """The wrapped chat engine."""
        return self._chat_engine

    @property
    def chat_history(self) -> list[ChatMessage]:
        """The wrapped engine's history."""
        return self._chat_engine.chat_history

    def reset(self) -> None:
        """Reset the wrapped engine's conversation."""
        self._chat_engine.reset()

    # -- whole answers -------------------------------------------------------------------------

    def chat(self, message: str, chat_history: list[ChatMessage] | None = None) -> AGENT_CHAT_RESPONSE_TYPE:
        """The wrapped engine's answer, guarded."""
        response = self._chat_engine.chat(message, chat_history)
        if isinstance(response, StreamingAgentChatResponse):
            return self._guard_stream(response)
        return _finish(response, self._guard.check(response.response, response.source_nodes))

    async def achat(self, message: str, chat_history: list[ChatMessage] | None = None) -> AGENT_CHAT_RESPONSE_TYPE:
        """Async :meth:`chat`."""
        response = await self._chat_engine.achat(message, chat_history)
        if isinstance(response, StreamingAgentChatResponse):
            return self._aguard_stream(response)
        return _finish(response, await self._guard.acheck(response.response, response.source_nodes))

    # -- streams -------------------------------------------------------------------------------

    def stream_chat(self, message: str, chat_history: list[ChatMessage] | None = None) -> StreamingAgentChatResponse:
        """The wrapped engine's answer, guarded as it streams."""
        return self._guard_stream(self._chat_engine.stream_chat(message, chat_history))

    async def astream_chat(
        self, message: str, chat_history: list[ChatMessage] | None = None
    ) -> StreamingAgentChatResponse:
        """Async :meth:`stream_chat`."""
        return self._aguard_stream(await self._chat_engine.astream_chat(message, chat_history))

    def _guard_stream(self, response: StreamingAgentChatResponse) -> GuardedStreamingChatResponse:
        stream = self._guard.stream(response.source_nodes)
        guarded = _streaming_response(response)

        def chats() -> Generator[ChatResponse, None, None]:
            text = ""
            try:
                for delta in guarded_pieces(stream, response.response_gen):
                    text += delta
                    yield _chat_response(text, delta)
            finally:
                _record(guarded, stream, self._guard)

        guarded.chat_stream = chats()
        return guarded

    def _aguard_stream(self, response: StreamingAgentChatResponse) -> GuardedStreamingChatResponse:
        stream = self._guard.stream(response.source_nodes)
        guarded = _streaming_response(response)

        async def chats() -> AsyncGenerator[ChatResponse, None]:
            text = ""
            try:
                async for delta in aguarded_pieces(stream, response.async_response_gen()):
                    text += delta
                    yield _chat_response(text, delta)
            finally:
                _record(guarded, stream, self._guard)

        guarded.achat_stream = chats()
        return guarded


def _streaming_response(response: StreamingAgentChatResponse) -> GuardedStreamingChatResponse:
    """A response streaming from ``chat_stream`` (not a queue: the wrapped one writes the memory)."""
    return GuardedStreamingChatResponse(
        sources=response.sources, source_nodes=response.source_nodes, is_writing_to_memory=False
    )


def _record(response: GuardedStreamingChatResponse, stream: AnswerStream, guard: AnswerGuard) -> None:
    response.metadata[REPORT_KEY] = guard.finished(stream)
    response.metadata[BLOCKED_KEY] = stream.blocked


def _finish(response: AgentChatResponse, guarded: GuardedAnswer) -> AgentChatResponse:
    metadata = {**(response.metadata or {}), REPORT_KEY: guarded.report, BLOCKED_KEY: guarded.blocked}
    return dataclasses.replace(response, response=guarded.text, metadata=metadata)
