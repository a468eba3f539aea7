"""CitationGuardChatEngine: a real LlamaIndex chat engine (ContextChatEngine over fixed retrieved
nodes) answering through LlamaIndex's MockLLM, guarded against the loopback demo pages; the test
judge and embedder decide."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.chat_engine import ContextChatEngine
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from guardrail import CitationBlocked, Label, Policy, Settings, Verifier
from guardrail.apps.demo import LoopbackSite, demo_routes, site_fetcher
from guardrail.testing import HashEmbedder, OverlapJudge
from llama_index.postprocessor.citation_guardrail import (
    BLOCKED_KEY,
    CitationGuardChatEngine,
    GuardedStreamingChatResponse,
    report_of,
)
from llama_index.postprocessor.citation_guardrail.testing import ScriptedLLM

ANSWER = (
    "Water boils at 100 degrees Celsius at sea level [1]. "
    "A pressure cooker lets water reach 150 degrees Celsius before it boils [1]. "
    "Titanic was directed by James Cameron [2]."
)


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite(demo_routes()) as served:
        yield served


def offline_verifier(site: LoopbackSite) -> Verifier:
    return Verifier(fetcher=site_fetcher(site, Settings()), judge=OverlapJudge(), embedder=HashEmbedder())


class FixedRetriever(BaseRetriever):
    """Retrieves the same nodes, in order, for every query."""

    def __init__(self, nodes: list[NodeWithScore]) -> None:
        super().__init__()
        self.nodes = nodes

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return list(self.nodes)


def chat_engine(site: LoopbackSite) -> ContextChatEngine:
    nodes = [
        NodeWithScore(node=TextNode(text="Boiling point of water.", metadata={"url": site.url("/boiling")}), score=1.0),
        NodeWithScore(node=TextNode(text="Titanic (1997 film).", metadata={"url": site.url("/titanic")}), score=0.9),
    ]
    # A plain buffer, not the default Memory: that keeps an aiosqlite database whose worker thread
    # outlives an async test's loop ("Event loop is closed" in the thread, seen once in CI).
    memory = ChatMemoryBuffer.from_defaults()
    return ContextChatEngine.from_defaults(retriever=FixedRetriever(nodes), llm=ScriptedLLM([ANSWER]), memory=memory)


def _check(text: str, report: Any) -> None:
    assert "[1] ❌ contradicted" in text and text.count("❌") == 1
    assert [c.overall for c in report.claims] == [Label.supported, Label.contradicted, Label.supported]


def test_chat_is_guarded_against_the_source_nodes(site: LoopbackSite) -> None:
    inner = chat_engine(site)
    engine = CitationGuardChatEngine(inner, offline_verifier(site))
    response = engine.chat("How hot does water get?")
    _check(response.response, report_of(response))
    assert response.metadata is not None and response.metadata[BLOCKED_KEY] is False
    assert engine.chat_history == inner.chat_history and len(engine.chat_history) == 2
    engine.reset()
    assert inner.chat_history == []


async def test_achat_with_a_blocking_policy(site: LoopbackSite) -> None:
    engine = CitationGuardChatEngine(chat_engine(site), offline_verifier(site), policy=Policy.strict())
    response = await engine.achat("How hot does water get?")
    assert response.response == Policy().block_message and report_of(response) is not None


def test_stream_chat_is_guarded_as_it_streams(site: LoopbackSite) -> None:
    engine = CitationGuardChatEngine(chat_engine(site), offline_verifier(site))
    response = engine.stream_chat("How hot does water get?")
    assert isinstance(response, GuardedStreamingChatResponse) and report_of(response) is None
    pieces = list(response.response_gen)
    assert len(pieces) == 3  # claim by claim
    _check("".join(pieces), report_of(response))
    assert response.response == "".join(pieces).strip()


async def test_astream_chat_raises_on_block(site: LoopbackSite) -> None:
    engine = CitationGuardChatEngine(
        chat_engine(site), offline_verifier(site), policy=Policy.strict(), raise_on_block=True
    )
    response = await engine.astream_chat("How hot does water get?")
    pieces: list[str] = []
    with pytest.raises(CitationBlocked):
        async for piece in response.async_response_gen():
            pieces.append(piece)
    assert pieces == ["Water boils at 100 degrees Celsius at sea level [1]. "]
    assert response.metadata[BLOCKED_KEY] is True


def test_only_chat_engines_are_wrapped(site: LoopbackSite) -> None:
    with pytest.raises(TypeError, match="BaseChatEngine"):
        CitationGuardChatEngine(object())  # type: ignore[arg-type]
