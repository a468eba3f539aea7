"""LlamaIndexJudge and LlamaIndexEmbedder: LlamaIndex's mock models (MockLLM, MockFunctionCallingLLM,
MockEmbedding) as the verifier's judge and embedder, labelling the seed examples (the demo answer's
claims against the loopback demo pages) through the built-in judges' prompt, strict parsing and
quote guard; and the deprecated import name."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.schema import NodeWithScore, TextNode

from guardrail import Label, RetryPolicy, Settings, Verifier
from guardrail.apps.demo import LoopbackSite, demo_routes, site_fetcher
from guardrail.judges.prompt import SYSTEM_PROMPT
from guardrail.testing import HashEmbedder
from integrations.seed_examples import JUDGE_SEEDS, SEED_QUOTE_100, SEED_QUOTE_120
from integrations.seed_examples import verdict_json as verdict
from llama_index.postprocessor.citation_guardrail import (
    CitationGuardPostprocessor,
    CitationGuardQueryEngine,
    LlamaIndexEmbedder,
    LlamaIndexJudge,
)
from llama_index.postprocessor.citation_guardrail.testing import ScriptedLLM

FAST = RetryPolicy(attempts=2, attempt_timeout=5.0, backoff=0.01, max_backoff=0.02)
QUOTE_100, QUOTE_120 = SEED_QUOTE_100, SEED_QUOTE_120


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite(demo_routes()) as served:
        yield served


@pytest.mark.parametrize(("claim", "path", "answers", "label", "reason"), JUDGE_SEEDS)
def test_a_mock_llm_labels_the_seed_examples(
    site: LoopbackSite, claim: str, path: str, answers: list[str], label: str, reason: str | None
) -> None:
    llm = ScriptedLLM(answers or ["unused"])
    judge = LlamaIndexJudge(llm, retry=FAST, concurrency=1)
    assert judge.structured is False  # MockLLM calls no functions: text, parsed strictly
    verifier = Verifier(fetcher=site_fetcher(site, Settings()), judge=judge, embedder=HashEmbedder())
    [citation] = verifier.verify(claim, [site.url(path)]).citations
    assert (citation.label.value, citation.reason) == (label, reason)
    assert len(llm.prompts) == len(answers)
    for prompt in llm.prompts:
        assert SYSTEM_PROMPT.splitlines()[0] in prompt and f"<claim>\n{claim}\n</claim>" in prompt
        assert "<passage id=1>" in prompt


def test_a_function_calling_llm_answers_in_structured_output(site: LoopbackSite) -> None:
    tools_seen: list[list[str]] = []

    def answer(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        tools = kwargs.get("tools") or []
        tools_seen.append([tool.metadata.name for tool in tools])
        args = {"label": "contradicted", "evidence_quote": QUOTE_120, "confidence": 0.8}
        call = ToolCallBlock(tool_call_id="c1", tool_name=tools[0].metadata.name, tool_kwargs=args)
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])

    judge = LlamaIndexJudge(MockFunctionCallingLLM(response_generator=answer), retry=FAST)
    assert judge.structured is True
    verifier = Verifier(fetcher=site_fetcher(site, Settings()), judge=judge, embedder=HashEmbedder())
    claim = "A pressure cooker lets water reach 150 degrees Celsius before it boils."
    [citation] = verifier.verify(claim, [site.url("/boiling")]).citations
    assert (citation.label, citation.evidence_quote) == (Label.contradicted, QUOTE_120)
    assert tools_seen == [["citation_verdict"]]


def test_a_llamaindex_embed_model_as_the_embedder(site: LoopbackSite) -> None:
    embedder = LlamaIndexEmbedder(MockEmbedding(embed_dim=8))
    vectors = embedder.embed(["a", "b"])
    assert vectors.shape == (2, 8) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    post = CitationGuardPostprocessor(
        guard_settings=Settings(allow_private_hosts=True),
        judge=LlamaIndexJudge(ScriptedLLM([verdict("supported", QUOTE_100)])),
        embedder=embedder,
    )
    node = NodeWithScore(
        node=TextNode(text="Water boils at 100 degrees Celsius.", metadata={"url": site.url("/boiling")})
    )
    [kept] = post.postprocess_nodes([node])
    assert kept.node.metadata["citation_verdict"] == "supported"
    assert post.verifier.embedder is embedder


def test_the_old_import_name_warns_and_gives_the_same_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("guardrail_llamaindex", "guardrail_llamaindex.query_engine"):
        monkeypatch.delitem(sys.modules, name, raising=False)  # imported afresh, restored afterwards
    with pytest.warns(DeprecationWarning, match="import from llama_index.postprocessor.citation_guardrail") as caught:
        old = importlib.import_module("guardrail_llamaindex")
        old_engine = importlib.import_module("guardrail_llamaindex.query_engine")
    assert old.CitationGuardPostprocessor is CitationGuardPostprocessor
    assert old_engine.CitationGuardQueryEngine is CitationGuardQueryEngine
    assert [w.filename for w in caught] == [importlib.__file__]  # blamed on the importer, not the shim
