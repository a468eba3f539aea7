"""CitationGuardMiddleware: check a LangChain 1.x agent's final answer (``create_agent(middleware=...)``).

Needs ``langchain`` (``pip install 'langchain-citation-guardrail[agents]'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, Runtime
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from langchain_citation_guardrail.guard import CitationGuard

__all__ = ["CitationGuardMiddleware"]


def _documents(artifact: Any) -> list[Document]:
    if isinstance(artifact, Document):
        return [artifact]
    if isinstance(artifact, (list, tuple)):
        return [item for item in artifact if isinstance(item, Document)]
    return []


def final_answer(messages: Sequence[AnyMessage]) -> tuple[AIMessage, list[Document]] | None:
    """The agent's final answer (the last message, an AI message calling no tool) and the
    Documents the tools of this turn returned as artifacts (a retriever tool's documents); None
    when the agent did not end on an answer."""
    if not messages:
        return None
    last = messages[-1]
    if not isinstance(last, AIMessage) or last.tool_calls:
        return None
    documents: list[Document] = []
    for message in reversed(messages[:-1]):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, ToolMessage):
            documents[:0] = _documents(message.artifact)
    return last, documents


class CitationGuardMiddleware(AgentMiddleware):
    """Checks the citations of a LangChain 1.x agent's final answer with a :class:`CitationGuard`.

    ``create_agent(model, tools, middleware=[CitationGuardMiddleware(policy="strict")])``: once
    the agent has answered (``after_agent``), its last message is guarded and replaced (same
    id) by the guarded copy, the report in its ``response_metadata["citation_report"]``
    (:func:`~langchain_citation_guardrail.get_citation_report`). With ``context_from_tools``
    (default), Documents returned by this turn's tools as artifacts (a retriever tool,
    ``response_format="content_and_artifact"``) are the answer's context: its ``[n]`` markers
    resolve to them, in the order they came. A policy that blocks replaces the answer with its
    block message, or raises :class:`~guardrail.CitationBlocked` out of the agent with
    ``raise_on_block``. Tokens already streamed to a client are not recalled: for streamed
    answers, put a ``CitationGuard`` on the stream instead.

    ``guard``: the guard to use; otherwise one is built from ``guard_options``
    (``CitationGuard``'s fields: ``policy``, ``verifier``, ``judge``, ``embedder``, ...).
    """

    def __init__(
        self, guard: CitationGuard | None = None, *, context_from_tools: bool = True, **guard_options: Any
    ) -> None:
        super().__init__()
        if guard is not None and guard_options:
            raise ValueError("give a guard or its options, not both")
        self.guard = guard if guard is not None else CitationGuard(**guard_options)
        self.context_from_tools = context_from_tools

    def _input(self, state: AgentState[Any]) -> tuple[Any, bool] | None:
        found = final_answer(state["messages"])
        if found is None:
            return None
        answer, documents = found
        if self.context_from_tools and documents:
            return {self.guard.answer_key: answer, self.guard.context_key: documents}, True
        return answer, False

    def _update(self, guarded: Any, as_dict: bool) -> dict[str, Any]:
        key = self.guard.output_key or self.guard.answer_key
        return {"messages": [guarded[key] if as_dict else guarded]}

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Guard the final answer; the guarded message replaces it."""
        found = self._input(state)
        if found is None:
            return None
        value, as_dict = found
        return self._update(self.guard.invoke(value), as_dict)

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`after_agent`."""
        found = self._input(state)
        if found is None:
            return None
        value, as_dict = found
        return self._update(await self.guard.ainvoke(value), as_dict)
