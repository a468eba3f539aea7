"""CI's light LlamaIndex check, in a venv with only `pip install . ./integrations/llamaindex`: no
torch, no FastAPI, no anthropic. A streaming CitationQueryEngine wrapped in CitationGuardQueryEngine
(strict policy) streams its guarded answer, judged by an LLM of the user's own (here a rule-based
stand-in) through LlamaIndexJudge, against the loopback demo site. Exits non-zero when anything is
off."""

from __future__ import annotations

import importlib.util
import re
import time
from typing import Any

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.query_engine import CitationQueryEngine

from guardrail import Policy, Settings, build_verifier
from guardrail.apps.demo import LoopbackSite, demo_routes, site_fetcher
from llama_index.postprocessor.citation_guardrail import (
    CitationGuardQueryEngine,
    LlamaIndexEmbedder,
    LlamaIndexJudge,
    report_of,
)

QUOTES = {
    "100 degrees Celsius at sea level": ("supported", "pure water boils at 100 degrees Celsius"),
    "150 degrees": ("contradicted", "they let water reach about 120 degrees Celsius before it boils"),
}


class TextLLM(MockLLM):
    """A MockLLM answering ``respond(prompt)``, streamed in 8-char deltas."""

    def respond(self, prompt: str) -> str:
        raise NotImplementedError

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.respond(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self.respond(prompt)
        return (CompletionResponse(text=text[: i + 8], delta=text[i : i + 8]) for i in range(0, len(text), 8))


class CitingLLM(TextLLM):
    """Stands in for the user's LLM answering CitationQueryEngine: each source's text with its [n]."""

    def respond(self, prompt: str) -> str:
        context = prompt.split("Now it's your turn")[-1]
        sources = re.findall(r"Source (\d+):\n(.*?)(?=\nSource \d+:|\n------)", context, re.S)
        return " ".join(f"{text.strip().rstrip('.')} [{n}]." for n, text in sorted(sources))


class RuleJudgeLLM(TextLLM):
    """Stands in for the user's judge LLM: answers the judge's prompt by a rule on the claim."""

    def respond(self, prompt: str) -> str:
        claim = prompt.split("<claim>\n", 1)[1].split("\n</claim>", 1)[0]
        label, quote = next((v for k, v in QUOTES.items() if k in claim), ("not_found", ""))
        return f'{{"label": "{label}", "evidence_quote": "{quote}", "confidence": 0.9}}'


def main() -> None:
    for module in ("torch", "fastapi", "anthropic", "transformers"):
        if importlib.util.find_spec(module) is not None:
            raise SystemExit(f"{module} is installed: this is not the light install")
    with LoopbackSite(demo_routes()) as site:
        texts = ["Water boils at 100 degrees Celsius at sea level.", "A pressure cooker lets water reach 150 degrees."]
        documents = [
            Document(text=text, metadata={"url": site.url("/boiling")}, excluded_llm_metadata_keys=["url"])
            for text in texts
        ]
        embed_model = MockEmbedding(embed_dim=8)
        index = VectorStoreIndex.from_documents(documents, embed_model=embed_model)
        citing = CitationQueryEngine.from_args(index, llm=CitingLLM(max_tokens=None), streaming=True)
        verifier = build_verifier(
            fetcher=site_fetcher(site, Settings()),
            judge=LlamaIndexJudge(RuleJudgeLLM(max_tokens=None)),
            embedder=LlamaIndexEmbedder(embed_model),
        )
        engine = CitationGuardQueryEngine(citing, verifier, policy=Policy.strict())
        started = time.perf_counter()
        response = engine.query("How hot does water get?")
        pieces = []
        for piece in response.response_gen:
            print(f"{time.perf_counter() - started:6.3f}s {piece!r}")
            pieces.append(piece)
    report = report_of(response)
    if report is None or not pieces or Policy().block_message not in pieces[-1]:
        raise SystemExit(f"unexpected stream: {pieces!r}")
    print(f"ok: streamed and blocked; report overall {report.overall.value}")


if __name__ == "__main__":
    main()
