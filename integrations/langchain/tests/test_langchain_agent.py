"""CitationGuardMiddleware in a LangChain 1.x agent (``create_agent``) driven by a fake tool-calling
chat model; the pages come from the loopback fixture server, the judge and embedder are the test
doubles."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from guardrail import CitationBlocked, Label, Policy, Settings, Verifier
from guardrail.apps.demo import site_fetcher
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge
from langchain_citation_guardrail import CitationGuard, CitationGuardMiddleware, get_citation_report
from langchain_citation_guardrail.testing import ToolCallingFake

ANSWER = "Water boils at 50 degrees Celsius at sea level [1]. Titanic was directed by James Cameron [2]."


@pytest.fixture(scope="module")
def verifier(pages: LoopbackSite) -> Verifier:
    return Verifier(fetcher=site_fetcher(pages, Settings()), judge=OverlapJudge(), embedder=HashEmbedder())


def agent_for(pages: LoopbackSite, middleware: CitationGuardMiddleware) -> Any:
    docs = [
        Document("Boiling point of water", metadata={"source": pages.url("/boiling")}),
        Document("Titanic (1997 film)", metadata={"url": pages.url("/titanic")}),
    ]

    @tool(response_format="content_and_artifact")
    def search(query: str) -> tuple[str, list[Document]]:
        """Search the web."""
        return "\n".join(f"[{n}] {d.page_content}" for n, d in enumerate(docs, 1)), docs

    model = ToolCallingFake(
        messages=iter(
            [
                AIMessage("", tool_calls=[{"name": "search", "args": {"query": "water"}, "id": "call-1"}]),
                AIMessage(ANSWER, id="final-answer"),
            ]
        )
    )
    return create_agent(model, tools=[search], middleware=[middleware])


def test_the_final_answer_is_guarded_against_the_tools_documents(pages: LoopbackSite, verifier: Verifier) -> None:
    agent = agent_for(pages, CitationGuardMiddleware(verifier=verifier))
    messages = agent.invoke({"messages": [HumanMessage("At what temperature does water boil?")]})["messages"]
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage, AIMessage]  # replaced, not added
    final = messages[-1]
    assert final.id == "final-answer"
    assert final.text.startswith("Water boils at 50 degrees Celsius at sea level [1] ❌ contradicted.")
    report = get_citation_report(final)
    assert report is not None
    assert [c.overall for c in report.claims] == [Label.contradicted, Label.supported]
    assert [v.url for c in report.claims for v in c.verdicts] == [pages.url("/boiling"), pages.url("/titanic")]


async def test_a_blocking_policy_in_an_async_agent(pages: LoopbackSite, verifier: Verifier) -> None:
    agent = agent_for(pages, CitationGuardMiddleware(verifier=verifier, policy="strict"))
    messages = (await agent.ainvoke({"messages": [HumanMessage("Water?")]}))["messages"]
    assert messages[-1].text == Policy().block_message
    guard = CitationGuard(verifier=verifier, policy="strict", raise_on_block=True)
    with pytest.raises(CitationBlocked):
        await agent_for(pages, CitationGuardMiddleware(guard)).ainvoke({"messages": [HumanMessage("Water?")]})


def test_without_tool_documents_only_the_answers_own_links_are_checked(pages: LoopbackSite, verifier: Verifier) -> None:
    model = ToolCallingFake(
        messages=iter([AIMessage(f"Titanic was directed by James Cameron ({pages.url('/titanic')}).")])
    )
    agent = create_agent(
        model, tools=[], middleware=[CitationGuardMiddleware(verifier=verifier, context_from_tools=False)]
    )
    final = agent.invoke({"messages": [HumanMessage("Who directed Titanic?")]})["messages"][-1]
    report = get_citation_report(final)
    assert report is not None and report.overall == Label.supported


def test_guard_and_options_are_exclusive(verifier: Verifier) -> None:
    with pytest.raises(ValueError, match="not both"):
        CitationGuardMiddleware(CitationGuard(), verifier=verifier)


def test_the_middleware_names_the_agents_extra_without_langchain() -> None:
    code = (
        "import sys; sys.modules['langchain'] = None\n"
        "import langchain_citation_guardrail as m\n"
        "try:\n    m.CitationGuardMiddleware\nexcept ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "pip install 'langchain-citation-guardrail[agents]'" in done.stdout, done.stderr[-2000:]
