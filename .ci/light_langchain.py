"""CI's light LangChain check, in a venv with only `pip install . ./integrations/langchain`:
no torch, no FastAPI, no anthropic. A chain `prompt | model | parser | CitationGuard(policy="strict")`
streams its answer, judged by a chat model of the user's own (here a rule-based stand-in) through
LangChainJudge, against the loopback demo site. Exits non-zero when anything is off."""

from __future__ import annotations

import importlib.util
import time
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate

from guardrail import MissingExtraError, Policy, Settings, build_verifier
from guardrail.apps.demo import LoopbackSite, demo_routes, site_fetcher
from langchain_citation_guardrail import CitationGuard, LangChainEmbedder, LangChainJudge

QUOTES = {
    "100 degrees Celsius at sea level": ("supported", "pure water boils at 100 degrees Celsius"),
    "150 degrees": ("contradicted", "they let water reach about 120 degrees Celsius before it boils"),
}


class RuleJudgeModel(BaseChatModel):
    """Stands in for the user's chat model: answers the judge's prompt by a rule on the claim."""

    @property
    def _llm_type(self) -> str:
        return "rule-judge"

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        claim = messages[-1].text.split("<claim>\n", 1)[1].split("\n</claim>", 1)[0]
        label, quote = next((v for k, v in QUOTES.items() if k in claim), ("not_found", ""))
        answer = f'{{"label": "{label}", "evidence_quote": "{quote}", "confidence": 0.9}}'
        return ChatResult(generations=[ChatGeneration(message=AIMessage(answer))])


def main() -> None:
    for module in ("torch", "fastapi", "anthropic", "transformers"):
        if importlib.util.find_spec(module) is not None:
            raise SystemExit(f"{module} is installed: this is not the light install")
    try:
        CitationGuard().invoke("Nothing to check.")
    except MissingExtraError as exc:
        print("without [local] a default guard says:", exc)
    else:
        raise SystemExit("a default guard ran without the [local] extra")

    with LoopbackSite(demo_routes()) as site:
        verifier = build_verifier(
            fetcher=site_fetcher(site, Settings()),
            judge=LangChainJudge(RuleJudgeModel()),
            embedder=LangChainEmbedder(DeterministicFakeEmbedding(size=64)),
        )
        answer = (
            f"Water boils at 100 degrees Celsius at sea level ({site.url('/boiling')}). "
            f"A pressure cooker lets water reach 150 degrees Celsius before it boils ({site.url('/boiling')}). "
            "Titanic was directed by James Cameron."
        )
        prompt = ChatPromptTemplate.from_messages([("system", "Cite your sources."), ("human", "{question}")])
        model = GenericFakeChatModel(messages=iter([answer]))
        chain = prompt | model | StrOutputParser() | CitationGuard(policy="strict", verifier=verifier)
        started = time.perf_counter()
        chunks = []
        for chunk in chain.stream({"question": "At what temperature does water boil?"}):
            print(f"{time.perf_counter() - started:6.3f}s {chunk!r}")
            chunks.append(chunk)
    if len(chunks) < 2 or not chunks[0].startswith("Water boils at 100") or Policy().block_message not in chunks[-1]:
        raise SystemExit(f"unexpected stream: {chunks!r}")
    print("ok: the strict guard streamed the supported sentence, then blocked the contradicted one")


if __name__ == "__main__":
    main()
