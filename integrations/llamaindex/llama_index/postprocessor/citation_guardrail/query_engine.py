"""CitationGuardQueryEngine: verify the answer of any query engine before it reaches the user."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Generator, Sequence
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import (
    RESPONSE_TYPE,
    AsyncStreamingResponse,
    PydanticResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle
from typing_extensions import Unpack

from guardrail import AnswerReport, GuardedAnswer, Verifier
from llama_index.postprocessor.citation_guardrail._guard import (
    BLOCKED_KEY,
    REPORT_KEY,
    GuardedEngine,
    GuardOptions,
    aguarded_pieces,
    guarded_pieces,
)

__all__ = ["BLOCKED_KEY", "REPORT_KEY", "CitationGuardQueryEngine", "report_of"]


class CitationGuardQueryEngine(GuardedEngine, BaseQueryEngine):
    """Wraps any query engine: verifies the citations of its answer, applies the policy, and
    returns the same kind of response with the guarded text.

    Citations are everything the core recognises (:func:`guardrail.extract_claims`): links and
    URLs in the answer, and ``[n]`` markers as ``CitationQueryEngine`` writes them, resolved to
    ``response.source_nodes[n - 1]`` - the node's page is fetched when its metadata names a URL
    (``url_key``, as for :class:`CitationGuardPostprocessor`), otherwise the
    node's text (without its ``Source n:`` label) is checked as a fact. An answer without any
    citation is checked against every source node (``cite_unmarked``, as in the core).

    * ``Response``: ``response.response`` is the guarded text; ``metadata["citation_report"]`` the
      :class:`~guardrail.AnswerReport` (offsets into the original answer) and
      ``metadata["citation_blocked"]`` whether the policy blocked it.
    * ``StreamingResponse`` / ``AsyncStreamingResponse``: guarded as it streams - text flows out
      claim by claim once each claim's citations are verified (:class:`guardrail.AnswerStream`);
      the report lands in ``metadata`` when the stream ends (or stops).
    * block: the text is the policy's block message (a stream ends with it), or
      :class:`~guardrail.CitationBlocked` is raised when ``raise_on_block`` (here or in the
      policy) is set - for a stream, while it is being read.
    * ``PydanticResponse`` (structured output) has no text to guard: ``TypeError``.

    Options (:class:`GuardOptions`): ``policy``, ``fmt`` (markdown or html badges), ``url_key``,
    ``cite_unmarked``, ``raise_on_block``, and, when no ``verifier`` is given, ``guard_settings``
    (a :class:`guardrail.Settings`; ``settings=`` is its deprecated name), ``judge`` and
    ``embedder`` for the one built on first use. Each check is a span of LlamaIndex's
    instrumentation with a :class:`CitationVerdictEvent` per verdict and a
    :class:`CitationReportEvent` (for a stream: when it ends).

    ``get_prompts()``/``update_prompts()`` show and change the wrapped engine's prompts under the
    same keys, and its callback manager is used unless one is given.
    """

    def __init__(
        self,
        query_engine: BaseQueryEngine,
        verifier: Verifier | None = None,
        *,
        callback_manager: CallbackManager | None = None,
        **options: Unpack[GuardOptions],
    ) -> None:
        if not isinstance(query_engine, BaseQueryEngine):
            raise TypeError(f"query_engine must be a LlamaIndex BaseQueryEngine, not {type(query_engine).__name__}")
        self._query_engine = query_engine
        self._set_guard(verifier, options)
        super().__init__(callback_manager=callback_manager or getattr(query_engine, "callback_manager", None))

    @property
    def query_engine(self) -> BaseQueryEngine:
        """The wrapped query engine."""
        return self._query_engine

    # The guard adds no prompts; it shows the wrapped engine's under the same keys, so that code
    # tuning prompts works unchanged (LlamaIndex's update_prompts resolves one "module:" level only).
    def _get_prompts(self) -> PromptDictType:
        return self._query_engine._get_prompts()

    def _update_prompts(self, prompts: PromptDictType) -> None:
        self._query_engine._update_prompts(prompts)

    def _get_prompt_modules(self) -> PromptMixinType:
        return self._query_engine._get_prompt_modules()

    # -- querying ------------------------------------------------------------------------------

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return self.guard(self._query_engine.query(query_bundle))

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return await self.aguard(await self._query_engine.aquery(query_bundle))

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """The wrapped engine's retrieval (nothing to guard before there is an answer)."""
        return self._query_engine.retrieve(query_bundle)

    def synthesize(
        self,
        query_bundle: QueryBundle,
        nodes: list[NodeWithScore],
        additional_source_nodes: Sequence[NodeWithScore] | None = None,
    ) -> RESPONSE_TYPE:
        """The wrapped engine's synthesis, guarded."""
        return self.guard(self._query_engine.synthesize(query_bundle, nodes, additional_source_nodes))

    async def asynthesize(
        self,
        query_bundle: QueryBundle,
        nodes: list[NodeWithScore],
        additional_source_nodes: Sequence[NodeWithScore] | None = None,
    ) -> RESPONSE_TYPE:
        """The wrapped engine's async synthesis, guarded."""
        return await self.aguard(await self._query_engine.asynthesize(query_bundle, nodes, additional_source_nodes))

    # -- guarding a response -------------------------------------------------------------------

    def guard(self, response: RESPONSE_TYPE) -> RESPONSE_TYPE:
        """Guard a response some query engine returned (see the class docs)."""
        if isinstance(response, (StreamingResponse, AsyncStreamingResponse)) and response.response_txt is None:
            return self._guard_stream(response)
        return self._finish(response, self._guard.check(_text_of(response), response.source_nodes))

    async def aguard(self, response: RESPONSE_TYPE) -> RESPONSE_TYPE:
        """Async :meth:`guard`."""
        if isinstance(response, (StreamingResponse, AsyncStreamingResponse)) and response.response_txt is None:
            return self._guard_stream(response)
        return self._finish(response, await self._guard.acheck(_text_of(response), response.source_nodes))

    def _finish(self, response: RESPONSE_TYPE, guarded: GuardedAnswer) -> RESPONSE_TYPE:
        metadata = {**(response.metadata or {}), REPORT_KEY: guarded.report, BLOCKED_KEY: guarded.blocked}
        if isinstance(response, Response):
            new_text = None if response.response is None else guarded.text
            return dataclasses.replace(response, response=new_text, metadata=metadata)
        if not isinstance(response, (StreamingResponse, AsyncStreamingResponse)):
            raise TypeError(f"unsupported response type {type(response).__name__}")
        return _replay(response, guarded.text, metadata)

    def _guard_stream(self, response: StreamingResponse | AsyncStreamingResponse) -> RESPONSE_TYPE:
        metadata: dict[str, Any] = dict(response.metadata or {})
        stream = self._guard.stream(response.source_nodes)

        def record() -> None:
            metadata[REPORT_KEY] = self._guard.finished(stream)
            metadata[BLOCKED_KEY] = stream.blocked

        if isinstance(response, StreamingResponse):
            tokens = response.response_gen

            def sync_gen() -> Generator[str, None, None]:
                try:
                    yield from guarded_pieces(stream, tokens)
                finally:
                    record()

            return dataclasses.replace(response, response_gen=sync_gen(), metadata=metadata)

        async def async_gen() -> AsyncGenerator[str, None]:
            try:
                async for text in aguarded_pieces(stream, response.response_gen):
                    yield text
            finally:
                record()

        return dataclasses.replace(response, response_gen=async_gen(), metadata=metadata)


def _text_of(response: RESPONSE_TYPE) -> str:
    if isinstance(response, PydanticResponse):
        raise TypeError(
            "CitationGuardQueryEngine cannot guard a PydanticResponse (structured output has no answer "
            "text with citations); use a query engine that answers in text"
        )
    if isinstance(response, Response):
        return response.response or ""
    if isinstance(response, (StreamingResponse, AsyncStreamingResponse)):
        return response.response_txt or ""
    raise TypeError(f"unsupported response type {type(response).__name__}")


def _replay(response: StreamingResponse | AsyncStreamingResponse, text: str, metadata: dict[str, Any]) -> RESPONSE_TYPE:
    """A streaming response that was already read: hand back the guarded text, as text and as a stream."""
    if isinstance(response, StreamingResponse):

        def replay() -> Generator[str, None, None]:
            yield text

        return dataclasses.replace(response, response_gen=replay(), response_txt=text, metadata=metadata)

    async def once() -> AsyncGenerator[str, None]:
        yield text

    return dataclasses.replace(response, response_gen=once(), response_txt=text, metadata=metadata)


def report_of(response: RESPONSE_TYPE) -> AnswerReport | None:
    """The :class:`~guardrail.AnswerReport` a guarded response carries (None before a stream ends)."""
    report = (response.metadata or {}).get(REPORT_KEY)
    return report if isinstance(report, AnswerReport) else None
