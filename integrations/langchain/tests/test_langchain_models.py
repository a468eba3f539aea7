"""LangChainJudge and LangChainEmbedder: langchain-core's fake chat models and embeddings as the
verifier's judge and embedder, labelling the seed examples (the demo answer's claims against the
loopback demo pages) through the built-in judges' prompt, strict parsing and quote guard."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field

from guardrail import Label, RetryPolicy, Settings, Verifier
from guardrail.apps.demo import LoopbackSite, demo_routes, site_fetcher
from guardrail.judges.prompt import SYSTEM_PROMPT
from guardrail.testing import HashEmbedder
from integrations.seed_examples import JUDGE_SEEDS, SEED_QUOTE_100, SEED_QUOTE_120
from integrations.seed_examples import verdict_json as verdict
from langchain_citation_guardrail import CitationGuard, LangChainEmbedder, LangChainJudge, get_citation_report

FAST = RetryPolicy(attempts=2, attempt_timeout=5.0, backoff=0.01, max_backoff=0.02)
QUOTE_100, QUOTE_120 = SEED_QUOTE_100, SEED_QUOTE_120


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite(demo_routes()) as served:
        yield served


class Prompts(BaseCallbackHandler):
    """The messages each chat model call was given."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.calls += messages


def verifier_with(site: LoopbackSite, *answers: str, prompts: Prompts | None = None) -> Verifier:
    model = FakeListChatModel(responses=list(answers), callbacks=[prompts] if prompts else None)
    judge = LangChainJudge(model, retry=FAST, concurrency=1)
    return Verifier(fetcher=site_fetcher(site, Settings()), judge=judge, embedder=HashEmbedder())


@pytest.mark.parametrize(("claim", "path", "answers", "label", "reason"), JUDGE_SEEDS)
def test_a_fake_chat_model_labels_the_seed_examples(
    site: LoopbackSite, claim: str, path: str, answers: list[str], label: str, reason: str | None
) -> None:
    prompts = Prompts()
    verifier = verifier_with(site, *(answers or ["unused"]), prompts=prompts)
    [citation] = verifier.verify(claim, [site.url(path)]).citations
    assert (citation.label.value, citation.reason) == (label, reason)
    if label in ("supported", "contradicted"):
        assert citation.evidence_quote in (QUOTE_100, QUOTE_120)
    assert len(prompts.calls) == len(answers)  # a dead link never reaches the model
    for system, user in prompts.calls:
        assert system.text == SYSTEM_PROMPT  # the built-in judges' prompt, with fenced claim and passages
        assert user.text.startswith(f"<claim>\n{claim}\n</claim>") and "<passage id=1>" in user.text


class StructuredFake(GenericFakeChatModel):
    """A fake chat model that calls tools (so it answers in structured output) and records them."""

    bound: list[Any] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> StructuredFake:
        self.bound.append((list(tools), kwargs.get("tool_choice")))
        return self


def test_structured_output_where_the_model_supports_it(site: LoopbackSite) -> None:
    call = {"name": "citation_verdict", "args": {"label": "contradicted", "evidence_quote": QUOTE_120, "confidence": 1}}
    model = StructuredFake(messages=iter([AIMessage("", tool_calls=[{**call, "id": "c1"}])]))
    judge = LangChainJudge(model, retry=FAST)
    assert judge.structured_model is not None
    [(tools, choice)] = model.bound
    assert choice == "any"  # the verdict is forced
    assert tools[0]["title"] == "citation_verdict" and tools[0]["required"] == ["label", "evidence_quote", "confidence"]
    verifier = Verifier(fetcher=site_fetcher(site, Settings()), judge=judge, embedder=HashEmbedder())
    claim = "A pressure cooker lets water reach 150 degrees Celsius before it boils."
    [citation] = verifier.verify(claim, [site.url("/boiling")]).citations
    assert (citation.label, citation.evidence_quote) == (Label.contradicted, QUOTE_120)
    assert LangChainJudge(FakeListChatModel(responses=["x"])).structured_model is None  # no tools: text
    with pytest.raises(ValueError, match="does not support structured output"):
        LangChainJudge(FakeListChatModel(responses=["x"]), structured=True)


class Failing(FakeListChatModel):
    """A chat model whose provider answers 401 every time."""

    calls: int = 0

    def _call(self, *args: Any, **kwargs: Any) -> str:
        self.calls += 1
        error = RuntimeError("Incorrect API key provided: sk-abc...")
        error.status_code = 401  # type: ignore[attr-defined]
        raise error


def test_a_rejected_key_is_not_retried_and_reads_judge_error(site: LoopbackSite) -> None:
    model = Failing(responses=["x"])
    verifier = Verifier(
        fetcher=site_fetcher(site, Settings()), judge=LangChainJudge(model, retry=FAST), embedder=HashEmbedder()
    )
    [citation] = verifier.verify("Water boils at 100 degrees Celsius.", [site.url("/boiling")]).citations
    assert (citation.label, citation.reason) == (Label.not_found, "judge_error")
    assert model.calls == 1


def test_langchain_embeddings_as_the_embedder(site: LoopbackSite) -> None:
    embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=16))
    vectors = embedder.embed(["one text", "another text", "one text"])
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0) and np.allclose(vectors[0], vectors[2])
    assert embedder.embed([]).shape == (0, 16)
    guard = CitationGuard(
        settings=Settings(allow_private_hosts=True),
        judge=LangChainJudge(FakeListChatModel(responses=[verdict("supported", QUOTE_100)])),
        embedder=embedder,
    )
    out = guard.invoke(f"Water boils at 100 degrees Celsius at sea level ({site.url('/boiling')}).")
    assert out.endswith(f"({site.url('/boiling')}).")  # kept as written: supported
    assert guard._verifier().embedder is embedder


class Ragged(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] * (i + 1) for i, _ in enumerate(texts)]

    def embed_query(self, text: str) -> list[float]:
        return [1.0]


def test_vectors_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="vectors of different lengths"):
        LangChainEmbedder(Ragged()).embed(["a", "b"])


def test_the_old_import_name_warns_and_gives_the_same_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("guardrail_langchain", "guardrail_langchain.guard"):
        monkeypatch.delitem(sys.modules, name, raising=False)  # imported afresh, restored afterwards
    with pytest.warns(DeprecationWarning, match="import from langchain_citation_guardrail") as caught:
        old = importlib.import_module("guardrail_langchain")
        old_guard = importlib.import_module("guardrail_langchain.guard")
    assert old.CitationGuard is old_guard.CitationGuard is CitationGuard
    assert old.get_citation_report is get_citation_report
    assert [w.filename for w in caught] == [importlib.__file__]  # blamed on the importer, not the shim
