"""The LlamaIndex integration: CitationGuardPostprocessor and CitationGuardQueryEngine.

Real LlamaIndex objects (VectorStoreIndex, CitationQueryEngine, MockLLM, MockEmbedding), the real
DirectFetcher against the loopback fixture pages, and the test judge/embedder swapped in through
their protocols. No network.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncGenerator, Generator, Iterator
from datetime import datetime
from typing import Any

import pytest
from llama_index.core import Document, PromptTemplate, Settings, VectorStoreIndex
from llama_index.core.base.response.schema import (
    RESPONSE_TYPE,
    AsyncStreamingResponse,
    PydanticResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import CitationQueryEngine, CustomQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from pydantic import BaseModel, Field

from guardrail import AnswerReport, CitationBlocked, Label, Policy, Verifier
from guardrail import Settings as GuardrailSettings
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge, WaybackSite
from llama_index.postprocessor.citation_guardrail import (
    VERDICT_KEYS,
    CitationGuardPostprocessor,
    CitationGuardQueryEngine,
    report_of,
)
from llama_index.postprocessor.citation_guardrail.testing import CitingLLM

S, C, N, U = Label.supported, Label.contradicted, Label.not_found, Label.unreachable
BLOCK = Policy().block_message


def fixture_verifier() -> Verifier:
    """A verifier over loopback pages (private hosts allowed) with the test judge and embedder."""
    return Verifier(allow_private_hosts=True, judge=OverlapJudge(), embedder=HashEmbedder())


@pytest.fixture
def li_settings() -> Iterator[None]:
    """LlamaIndex's global LLM and embedding model for one test, restored afterwards."""
    saved = (Settings._llm, Settings._embed_model)
    Settings.llm = CitingLLM()
    Settings.embed_model = MockEmbedding(embed_dim=8)
    try:
        yield
    finally:
        Settings._llm, Settings._embed_model = saved


PURE = "Pure water boils at 100 degrees Celsius at sea level."
FIFTY = "Water boils at 50 degrees Celsius at sea level."
TITANIC = "Titanic is a 1997 film directed by James Cameron."
TOMATOES = "Tomatoes need at least six hours of direct sunlight a day."


def documents(pages: LoopbackSite) -> list[Document]:
    u = pages.url
    return [
        Document(text=PURE, metadata={"url": u("/boiling"), "title": "Boiling"}),  # still says so
        Document(text=FIFTY, metadata={"url": u("/boiling")}),  # the page now says 100
        Document(text=TITANIC, metadata={"url": u("/gone-404")}),  # the page died
        Document(text=TOMATOES, metadata={"file_name": "garden.md"}),  # no URL: untouched
        Document(text=TITANIC, metadata={"source": u("/titanic")}),  # URL under "source"
        Document(text=TOMATOES, metadata={"source": "notes/garden.md"}),  # a path, not a URL
        Document(text=TITANIC, metadata={"url": u("/tomatoes")}),  # the page says nothing of it
    ]


def retrieve_all(index: VectorStoreIndex) -> list[NodeWithScore]:
    nodes = index.as_retriever(similarity_top_k=20).retrieve("water")
    assert len(nodes) == 7
    return nodes


def meta(item: NodeWithScore) -> dict[str, Any]:
    return {k: v for k, v in item.node.metadata.items() if k.startswith("citation_")}


# --------------------------------------------------------------------------------------------
# CitationGuardPostprocessor
# --------------------------------------------------------------------------------------------


def test_postprocessor_verdicts_dropping_and_untouched_nodes(pages: LoopbackSite, li_settings: None) -> None:
    index = VectorStoreIndex.from_documents(documents(pages))
    nodes = retrieve_all(index)
    post = CitationGuardPostprocessor(fixture_verifier())
    with pages.counting() as hits:
        kept = post.postprocess_nodes(nodes)
    # Each unique URL fetched once, although /boiling backs two nodes; URL-less nodes fetch nothing.
    assert hits == {"/boiling": 1, "/gone-404": 1, "/titanic": 1, "/tomatoes": 1}

    def key(item: NodeWithScore) -> tuple[str, str | None]:
        md = item.node.metadata
        return item.node.get_content(), md.get("url") or md.get("source") or md.get("file_name")

    # Contradicted (the page changed) and unreachable (404) nodes dropped; order kept.
    expected = [key(n) for n in nodes if key(n)[0] != FIFTY and key(n)[1] != pages.url("/gone-404")]
    assert [key(n) for n in kept] == expected
    by_key = {key(n): n for n in kept}

    pure = by_key[(PURE, pages.url("/boiling"))]
    verdict = meta(pure)
    assert verdict["citation_verdict"] == "supported"
    assert verdict["citation_reason"] is None
    assert "100 degrees Celsius" in verdict["citation_evidence"]
    assert verdict["citation_checked_url"] == pages.url("/boiling")
    assert verdict["citation_support"] == "1/1"
    assert datetime.fromisoformat(verdict["citation_checked_at"]).tzinfo is not None
    assert pure.node.metadata["title"] == "Boiling"  # the node's own metadata is kept

    assert meta(by_key[(TITANIC, pages.url("/titanic"))])["citation_verdict"] == "supported"
    not_found = meta(by_key[(TITANIC, pages.url("/tomatoes"))])
    assert (not_found["citation_verdict"], not_found["citation_support"]) == ("not_found", "0/1")

    # Nodes without a URL pass through untouched: the same objects, no verdict keys.
    originals = {key(n): n for n in nodes}
    for k in [(TOMATOES, "garden.md"), (TOMATOES, "notes/garden.md")]:
        assert by_key[k] is originals[k] and meta(by_key[k]) == {}

    # The verdict never reaches an embedding or a prompt, and the index's own nodes are unchanged.
    assert set(VERDICT_KEYS) <= set(pure.node.excluded_llm_metadata_keys)
    assert set(VERDICT_KEYS) <= set(pure.node.excluded_embed_metadata_keys)
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        content = pure.node.get_content(metadata_mode=mode)
        assert "citation_" not in content and PURE in content
    stored = index.docstore.get_node(pure.node.node_id)
    assert not any(k.startswith("citation_") for k in stored.metadata)
    assert not any(k.startswith("citation_") for k in originals[(PURE, pages.url("/boiling"))].node.metadata)


def test_postprocessor_drop_labels_are_configurable(pages: LoopbackSite, li_settings: None) -> None:
    nodes = retrieve_all(VectorStoreIndex.from_documents(documents(pages)))
    keep_all = CitationGuardPostprocessor(fixture_verifier(), drop_labels=[]).postprocess_nodes(nodes)
    assert len(keep_all) == 7
    labels = sorted(meta(n).get("citation_verdict", "-") for n in keep_all)
    assert labels == ["-", "-", "contradicted", "not_found", "supported", "supported", "unreachable"]
    dead = next(n for n in keep_all if meta(n).get("citation_verdict") == "unreachable")
    assert meta(dead)["citation_reason"] == "http_404" and meta(dead)["citation_evidence"] is None
    changed = next(n for n in keep_all if meta(n).get("citation_verdict") == "contradicted")
    assert "100 degrees Celsius" in meta(changed)["citation_evidence"]

    only_unverified = CitationGuardPostprocessor(fixture_verifier(), drop_labels={"not_found"})
    assert sorted(meta(n).get("citation_verdict", "-") for n in only_unverified.postprocess_nodes(nodes)) == [
        "-",
        "-",
        "contradicted",
        "supported",
        "supported",
        "unreachable",
    ]
    with pytest.raises(ValueError, match="drop_labels"):
        CitationGuardPostprocessor(fixture_verifier(), drop_labels=["dead"])
    # Serialisable like any LlamaIndex component (the verifier is not part of it).
    restored = CitationGuardPostprocessor.from_json(only_unverified.to_json())
    assert restored.drop_labels == [N] and restored.url_key is None


def test_postprocessor_drops_what_a_policy_strips_or_blocks(pages: LoopbackSite, li_settings: None) -> None:
    nodes = retrieve_all(VectorStoreIndex.from_documents(documents(pages)))

    def verdicts(post: CitationGuardPostprocessor) -> list[str]:
        return sorted(meta(n).get("citation_verdict", "-") for n in post.postprocess_nodes(nodes))

    default = CitationGuardPostprocessor(fixture_verifier(), policy=Policy())  # strips unreachable only
    assert default.drop_labels == [Label.unreachable]
    assert verdicts(default) == ["-", "-", "contradicted", "not_found", "supported", "supported"]
    strict = CitationGuardPostprocessor(fixture_verifier(), policy=Policy.strict())  # blocks contradicted
    assert strict.drop_labels == [Label.contradicted, Label.unreachable]
    assert verdicts(strict) == ["-", "-", "not_found", "supported", "supported"]
    with pytest.raises(ValueError, match="not both"):
        CitationGuardPostprocessor(fixture_verifier(), policy=Policy(), drop_labels=[])


def test_postprocessor_url_key_and_long_nodes(pages: LoopbackSite) -> None:
    long_text = (
        "At standard atmospheric pressure, which is the pressure at sea level, pure water boils at 100 degrees "
        "Celsius. At higher altitudes the air pressure is lower, so water boils at a lower temperature. "
        "Tomatoes need six hours of direct sunlight a day."
    )
    nodes = [
        NodeWithScore(node=TextNode(text=long_text, metadata={"link": pages.url("/boiling")}), score=1.0),
        NodeWithScore(node=TextNode(text=long_text, metadata={"url": pages.url("/gone-404")}), score=0.5),
    ]
    post = CitationGuardPostprocessor(fixture_verifier(), url_key="link")
    out = post.postprocess_nodes(nodes)
    # Only "link" names the URL now: the second node has none under that key and passes untouched.
    assert out[1] is nodes[1]
    assert (meta(out[0])["citation_verdict"], meta(out[0])["citation_support"]) == ("supported", "2/3")
    strict = CitationGuardPostprocessor(fixture_verifier(), url_key="link", min_supported=1.0, drop_labels=[])
    verdict = meta(strict.postprocess_nodes(nodes)[0])
    assert (verdict["citation_verdict"], verdict["citation_reason"]) == ("not_found", "insufficient_support")


async def test_postprocessor_async_and_inside_a_query_engine(pages: LoopbackSite, li_settings: None) -> None:
    index = VectorStoreIndex.from_documents(documents(pages))
    nodes = retrieve_all(index)
    post = CitationGuardPostprocessor(fixture_verifier())
    with pages.counting() as hits:
        kept = await post.apostprocess_nodes(nodes)
    assert hits == {"/boiling": 1, "/gone-404": 1, "/titanic": 1, "/tomatoes": 1}
    assert len(kept) == 5 and all(meta(n).get("citation_verdict") != "unreachable" for n in kept)

    # As an ordinary node postprocessor; MockLLM echoes its prompt, so we can read what the LLM saw.
    engine = index.as_query_engine(similarity_top_k=20, node_postprocessors=[post], llm=MockLLM())
    for response in (engine.query("water?"), await engine.aquery("water?")):
        assert isinstance(response, Response) and response.response
        assert len(response.source_nodes) == 5
        assert FIFTY not in response.response  # the contradicted chunk never reached the prompt
        assert PURE in response.response
        assert "citation_" not in response.response  # nor did the verdict keys


# --------------------------------------------------------------------------------------------
# CitationGuardQueryEngine
# --------------------------------------------------------------------------------------------


def source_nodes(pages: LoopbackSite) -> list[NodeWithScore]:
    """Source nodes as CitationQueryEngine makes them ("Source n:" chunks)."""
    chunks = [
        ("Source 1:\nAt sea level pure water boils at 100 degrees Celsius.\n", {"url": pages.url("/boiling")}),
        ("Source 2:\nTitanic was directed by James Cameron.\n", {"url": pages.url("/gone-404")}),
        ("Source 3:\n" + TOMATOES + "\n", {"file_name": "garden.md"}),
    ]
    return [NodeWithScore(node=TextNode(text=t, metadata=m), score=1.0) for t, m in chunks]


ANSWER = (
    "Pure water boils at 100 degrees Celsius at sea level [1]. "
    "Water boils at 50 degrees Celsius at sea level [1]. "
    "Titanic was directed by James Cameron [2]. "
    "Tomatoes need six hours of direct sunlight [3]. "
    "Ice melts at 0 degrees Celsius [4]."
)


class FixedEngine(CustomQueryEngine):
    """Answers every query with ``answer`` and ``nodes``, as text or as a stream of small chunks."""

    answer: str
    nodes: list[NodeWithScore]
    mode: str = "text"  # text | stream | astream
    chunk: int = 9
    gate_after: int | None = None  # stream: wait for `gate` after this many characters
    gate: Any = None
    consumed: list[str] = Field(default_factory=list)

    def _pieces(self) -> list[str]:
        return [self.answer[i : i + self.chunk] for i in range(0, len(self.answer), self.chunk)]

    def custom_query(self, query_str: str) -> RESPONSE_TYPE | str:
        if self.mode == "text":
            return Response(self.answer, source_nodes=list(self.nodes), metadata={"engine": "fixed"})

        def gen() -> Generator[str, None, None]:
            sent = 0
            for piece in self._pieces():
                if self.gate_after is not None and sent >= self.gate_after and not self.gate.is_set():
                    assert self.gate.wait(10), "the guard held all text back until the stream ended"
                self.consumed.append(piece)
                sent += len(piece)
                yield piece

        return StreamingResponse(gen(), source_nodes=list(self.nodes), metadata={"engine": "fixed"})

    async def acustom_query(self, query_str: str) -> RESPONSE_TYPE | str:
        if self.mode != "astream":
            return self.custom_query(query_str)

        async def agen() -> AsyncGenerator[str, None]:
            sent = 0
            for piece in self._pieces():
                if self.gate_after is not None and sent >= self.gate_after and not self.gate.is_set():
                    await asyncio.wait_for(self.gate.wait(), 10)
                self.consumed.append(piece)
                sent += len(piece)
                yield piece

        return AsyncStreamingResponse(agen(), source_nodes=list(self.nodes), metadata={"engine": "fixed"})


def check_answer_report(report: AnswerReport, pages: LoopbackSite) -> None:
    by_claim = {c.plain_text: c for c in report.claims}
    pure = by_claim["Pure water boils at 100 degrees Celsius at sea level."]
    assert [(c.url, c.source_index) for c in pure.citations] == [(pages.url("/boiling"), 0)]
    assert pure.overall == S
    assert by_claim["Water boils at 50 degrees Celsius at sea level."].overall == C
    titanic = by_claim["Titanic was directed by James Cameron."]
    assert (titanic.overall, titanic.verdicts[0].reason) == (U, "http_404")
    # A node without a URL is checked as a fact: its text, without CitationQueryEngine's label.
    tomatoes = by_claim["Tomatoes need six hours of direct sunlight."]
    assert tomatoes.citations[0].url is None and tomatoes.citations[0].source_text == TOMATOES + "\n"
    assert tomatoes.overall == S
    ice = by_claim["Ice melts at 0 degrees Celsius."]  # [4]: there is no fourth source node
    assert (ice.overall, ice.verdicts[0].reason) == (N, "unresolved_citation")
    assert report.overall == C
    # The answer-level figures: 2 of its 5 checked claims are supported (the dead link counts).
    assert (report.support_score, report.checked_claims) == (0.4, 5)
    kinds = {"supported": 2, "contradicted": 1, "not_found": 1, "dead_link": 1, "could_not_check": 0}
    assert report.kind_counts == kinds
    assert [(src.kind, src.url) for src in report.sources] == [
        ("url", pages.url("/boiling")),
        ("url", pages.url("/gone-404")),
        ("text", None),
    ]
    raw = report.answer.encode()
    assert all(raw[c.start : c.end].decode() == c.text for c in report.claims)


GUARDED_DEFAULT = (
    "Pure water boils at 100 degrees Celsius at sea level [1]. "
    "Water boils at 50 degrees Celsius at sea level [1] ❌ contradicted. "
    "Titanic was directed by James Cameron ⛔ dead link. "
    "Tomatoes need six hours of direct sunlight [3]. "
    "Ice melts at 0 degrees Celsius [4] ⚠️ unverified."
)


def test_query_engine_report_markers_and_default_policy(pages: LoopbackSite) -> None:
    inner = FixedEngine(answer=ANSWER, nodes=source_nodes(pages))
    guard = CitationGuardQueryEngine(inner, fixture_verifier())
    with pages.counting() as hits:
        response = guard.query("water?")
    assert hits == {"/boiling": 1, "/gone-404": 1}  # [3] is checked without fetching anything
    assert isinstance(response, Response)
    assert response.response == GUARDED_DEFAULT
    assert response.metadata is not None and response.metadata["engine"] == "fixed"
    assert response.metadata["citation_blocked"] is False
    report = response.metadata["citation_report"]
    assert report is report_of(response) and report.answer == ANSWER
    check_answer_report(report, pages)
    assert response.source_nodes == inner.nodes


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (
            Policy.preset("strip"),
            "Pure water boils at 100 degrees Celsius at sea level [1]. "
            "Water boils at 50 degrees Celsius at sea level. "
            "Titanic was directed by James Cameron. "
            "Tomatoes need six hours of direct sunlight [3]. "
            "Ice melts at 0 degrees Celsius.",
        ),
        (
            Policy.preset("annotate"),
            "Pure water boils at 100 degrees Celsius at sea level [1] ✅ supported. "
            "Water boils at 50 degrees Celsius at sea level [1] ❌ contradicted. "
            "Titanic was directed by James Cameron [2] ⛔ dead link. "
            "Tomatoes need six hours of direct sunlight [3] ✅ supported. "
            "Ice melts at 0 degrees Celsius [4] ⚠️ unverified.",
        ),
        (Policy.strict(), BLOCK),
    ],
    ids=["strip", "annotate", "block"],
)
def test_query_engine_policies(pages: LoopbackSite, policy: Policy, expected: str) -> None:
    inner = FixedEngine(answer=ANSWER, nodes=source_nodes(pages))
    guard = CitationGuardQueryEngine(inner, fixture_verifier(), policy=policy)
    response = guard.query("water?")
    assert isinstance(response, Response) and response.response == expected
    assert response.metadata is not None
    assert response.metadata["citation_blocked"] is (expected == BLOCK)
    assert response.metadata["citation_report"].overall == C


def test_query_engine_html_badges(pages: LoopbackSite) -> None:
    guard = CitationGuardQueryEngine(
        FixedEngine(answer=ANSWER, nodes=source_nodes(pages)), fixture_verifier(), fmt="html"
    )
    text = str(guard.query("water?"))
    assert '[1] <span class="citation-verdict citation-verdict--contradicted" title="' in text


def test_query_engine_raise_on_block(pages: LoopbackSite) -> None:
    inner = FixedEngine(answer=ANSWER, nodes=source_nodes(pages))
    guard = CitationGuardQueryEngine(inner, fixture_verifier(), policy=Policy.strict(), raise_on_block=True)
    with pytest.raises(CitationBlocked) as info:
        guard.query("water?")
    check_answer_report(info.value.report, pages)
    # The same, asked for through the policy.
    with pytest.raises(CitationBlocked):
        CitationGuardQueryEngine(inner, fixture_verifier(), policy=Policy.strict(raise_on_block=True)).query("q")


async def test_query_engine_aquery(pages: LoopbackSite) -> None:
    guard = CitationGuardQueryEngine(FixedEngine(answer=ANSWER, nodes=source_nodes(pages)), fixture_verifier())
    with pages.counting() as hits:
        response = await guard.aquery("water?")
    assert hits == {"/boiling": 1, "/gone-404": 1}
    assert isinstance(response, Response) and response.response == GUARDED_DEFAULT
    assert response.metadata is not None
    check_answer_report(response.metadata["citation_report"], pages)
    # The sync path also works from inside a running event loop.
    assert guard.query("water?").response == GUARDED_DEFAULT


def test_streaming_is_guarded_as_it_streams(pages: LoopbackSite) -> None:
    gate = threading.Event()
    inner = FixedEngine(
        answer=ANSWER, nodes=source_nodes(pages), mode="stream", gate_after=len(ANSWER) // 2, gate=gate, consumed=[]
    )
    guard = CitationGuardQueryEngine(inner, fixture_verifier())
    response = guard.query("water?")
    assert isinstance(response, StreamingResponse)
    assert "citation_report" not in (response.metadata or {})  # not before the stream has run
    received: list[str] = []
    for piece in response.response_gen:
        if not received:
            # The first guarded sentence comes out while the model is still writing the answer.
            assert len("".join(inner.consumed)) < len(ANSWER)
            gate.set()
        received.append(piece)
    assert len(received) >= 4  # sentence by sentence, not one block at the end
    assert "".join(received) == GUARDED_DEFAULT
    assert received[0] == "Pure water boils at 100 degrees Celsius at sea level [1]. "
    assert response.metadata is not None and response.metadata["engine"] == "fixed"
    report = response.metadata["citation_report"]
    assert report.answer == ANSWER
    check_answer_report(report, pages)
    assert response.metadata["citation_blocked"] is False


async def test_async_streaming_is_guarded_as_it_streams(pages: LoopbackSite) -> None:
    gate = asyncio.Event()
    inner = FixedEngine(
        answer=ANSWER, nodes=source_nodes(pages), mode="astream", gate_after=len(ANSWER) // 2, gate=gate, consumed=[]
    )
    guard = CitationGuardQueryEngine(inner, fixture_verifier())
    response = await guard.aquery("water?")
    assert isinstance(response, AsyncStreamingResponse)
    received: list[str] = []
    async for piece in response.async_response_gen():
        if not received:
            assert len("".join(inner.consumed)) < len(ANSWER)
            gate.set()
        received.append(piece)
    assert len(received) >= 4
    assert "".join(received) == GUARDED_DEFAULT
    check_answer_report(response.metadata["citation_report"], pages)  # type: ignore[index]

    # aquery on an engine that streams synchronously: still guarded, as a sync stream.
    inner.mode = "stream"
    sync_stream = await guard.aquery("water?")
    assert isinstance(sync_stream, StreamingResponse)
    assert "".join(sync_stream.response_gen) == GUARDED_DEFAULT
    assert report_of(sync_stream) is not None


def test_streaming_block_stops_the_stream(pages: LoopbackSite) -> None:
    inner = FixedEngine(answer=ANSWER, nodes=source_nodes(pages), mode="stream", consumed=[])
    guard = CitationGuardQueryEngine(inner, fixture_verifier(), policy=Policy.strict())
    response = guard.query("water?")
    assert isinstance(response, StreamingResponse)
    text = str(response)  # StreamingResponse.__str__ reads the whole (guarded) stream
    assert text == "Pure water boils at 100 degrees Celsius at sea level [1]. \n\n" + BLOCK
    assert response.metadata is not None and response.metadata["citation_blocked"] is True
    assert response.metadata["citation_report"].overall == C

    raising = CitationGuardQueryEngine(inner, fixture_verifier(), policy=Policy.strict(), raise_on_block=True)
    stream = raising.query("water?")
    assert isinstance(stream, StreamingResponse)
    pieces: list[str] = []
    with pytest.raises(CitationBlocked) as info:
        for piece in stream.response_gen:
            pieces.append(piece)
    assert pieces == ["Pure water boils at 100 degrees Celsius at sea level [1]. "]
    assert info.value.report.overall == C


def test_citation_query_engine_end_to_end(pages: LoopbackSite, li_settings: None) -> None:
    """The realistic path: VectorStoreIndex -> CitationQueryEngine (numbered "Source n:" chunks) ->
    an LLM that cites them with [n] -> the guard, with the postprocessor in the retrieval step."""
    index = VectorStoreIndex.from_documents(documents(pages))
    post = CitationGuardPostprocessor(fixture_verifier(), drop_labels=[])
    for streaming in (False, True):
        engine = CitationQueryEngine.from_args(
            index, similarity_top_k=20, node_postprocessors=[post], streaming=streaming
        )
        guard = CitationGuardQueryEngine(engine, fixture_verifier())
        response = guard.query("What do we know?")
        text = "".join(response.response_gen) if isinstance(response, StreamingResponse) else str(response)
        report = report_of(response)
        assert report is not None
        sources = response.source_nodes
        assert len(sources) == 7
        # Every [n] resolved to source_nodes[n - 1]: its URL when it has one, else its text.
        for claim in report.claims:
            (ref,) = claim.citations
            node = sources[int(ref.ref or 0) - 1].node
            url = node.metadata.get("url") or (
                node.metadata["source"] if str(node.metadata.get("source", "")).startswith("http") else None
            )
            assert ref.url == url
            assert (ref.source_text is None) == (url is not None)
            assert node.get_content().split("\n", 1)[1].startswith(claim.plain_text.rstrip("."))
        labels = sorted(c.overall.value for c in report.claims if c.overall is not None)
        assert labels == ["contradicted", "not_found", *["supported"] * 4, "unreachable"]
        assert "❌ contradicted" in text and "⛔ dead link" in text and "⚠️ unverified" in text


def test_prompts_callbacks_and_bad_input(pages: LoopbackSite, li_settings: None) -> None:
    index = VectorStoreIndex.from_documents(documents(pages)[:2])
    engine = CitationQueryEngine.from_args(index)
    guard = CitationGuardQueryEngine(engine, fixture_verifier())
    # The wrapped engine's prompts, under the same keys.
    assert guard.get_prompts().keys() == engine.get_prompts().keys()
    assert "response_synthesizer:text_qa_template" in guard.get_prompts()
    guard.update_prompts({"response_synthesizer:text_qa_template": PromptTemplate("{context_str}{query_str}")})
    assert engine.get_prompts()["response_synthesizer:text_qa_template"].get_template() == "{context_str}{query_str}"
    assert guard.callback_manager is engine.callback_manager

    class Structured(BaseModel):
        answer: str

    class PydanticEngine(CustomQueryEngine):
        def custom_query(self, query_str: str) -> RESPONSE_TYPE | str:
            return PydanticResponse(Structured(answer="x"))

    with pytest.raises(TypeError, match="PydanticResponse"):
        CitationGuardQueryEngine(PydanticEngine(), fixture_verifier()).query("q")
    with pytest.raises(TypeError, match="BaseQueryEngine"):
        CitationGuardQueryEngine("not an engine", fixture_verifier())


class MisattributingLLM(CitingLLM):
    """Answers like CitingLLM, but cites each source's sentence with the next source's number."""

    def answer(self, prompt: str) -> str:
        context = prompt.split("Now it's your turn")[-1]
        found = re.findall(r"Source (\d+):\n(.*?)(?=\nSource \d+:|\n------)", context, re.S)
        parts = []
        for n, body in found:
            first = re.split(r"(?<=[.!?])\s", body.strip())[0].rstrip(".")
            parts.append(f"{first} [{int(n) % len(found) + 1}].")
        return " ".join(parts)


def test_a_query_engine_repairs_from_its_own_source_nodes(li_settings: None) -> None:
    """A CitationQueryEngine whose LLM swaps the numbers: each sentence cites the other node. With
    the repair policy each marker is re-pointed to the node that states it."""
    index = VectorStoreIndex.from_documents([Document(text=PURE), Document(text=TITANIC)])
    engine = CitationQueryEngine.from_args(index, similarity_top_k=2, llm=MisattributingLLM())
    response = CitationGuardQueryEngine(engine, fixture_verifier(), policy=Policy.preset("repair")).query("q?")
    report = report_of(response)
    assert report is not None and len(report.claims) == 2
    for claim in report.claims:  # each sentence's own node backs it, the cited one does not
        assert claim.overall == N
        (suggestion,) = claim.suggested_citations
        assert claim.plain_text in response.source_nodes[suggestion.source_index or 0].node.get_content()
    text = str(response)
    assert text.count("↪ citation corrected") == 2 and "⚠️ unverified" not in text
    plain = CitationGuardQueryEngine(engine, fixture_verifier()).query("q?")
    assert str(plain).count("⚠️ unverified") == 2


def test_the_engine_it_builds_honours_archived_copies(pages: LoopbackSite) -> None:
    dead = pages.url("/gone-404")
    nodes = [NodeWithScore(node=TextNode(text=PURE, metadata={"url": dead}), score=1.0)]
    inner = FixedEngine(answer=f"{PURE[:-1]} [1].", nodes=nodes)
    with WaybackSite() as wayback:
        wayback.archive(dead, pages.routes["/boiling"].body)  # type: ignore[arg-type]
        settings = GuardrailSettings(archive="wayback", wayback_url=wayback.base, allow_private_hosts=True)
        guard = CitationGuardQueryEngine(inner, guard_settings=settings, judge=OverlapJudge(), embedder=HashEmbedder())
        report = report_of(guard.query("q?"))
        assert report is not None
        verdict = report.claims[0].verdicts[0]
        assert (verdict.label, verdict.reason, verdict.archived_url) == (S, "archived_copy", wayback.snapshot_url(dead))
