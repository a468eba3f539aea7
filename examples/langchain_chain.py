"""A LangChain RAG chain with the citation guard, offline: `python examples/langchain_chain.py`.

The "retriever" returns three documents whose URLs point at pages this example serves itself on
127.0.0.1 (guardrail.apps.demo), so it needs no network and no API key; only that origin is let
through the SSRF guard. The chat model is langchain-core's FakeListChatModel, answering with
numbered markers ([1], [2]) that the guard resolves to the retrieved documents (``[1]`` is the
first), plus one inline link to a page that no longer exists.

    chain = (
        RunnablePassthrough.assign(context=retriever)
        | RunnablePassthrough.assign(answer=prompt | model | StrOutputParser())
        | CitationGuard(verifier=verifier)
    )

The guard fetches each cited page once, asks the judge whether it supports the sentence, and
returns the same dict with the answer annotated (``annotate`` policy: a badge after every
citation) and the full report under "citation_report".

Verdicts come from the embedded judge model when it is installed, else from the judge named by
GUARDRAIL_JUDGE (openai / anthropic / ollama); without either, dead links are still caught but
nothing else can be judged, and the example says so.
"""

from __future__ import annotations

import sys
import time
from operator import itemgetter
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from guardrail import AnswerReport, Policy
from guardrail.apps.demo import LoopbackSite, demo_routes, demo_verifier, describe_judge, note_if_no_judge, print_report
from langchain_citation_guardrail import CitationGuard

ANSWER = """Water boils at 100 degrees Celsius at sea level [1]. In Denver it boils at about 95 degrees \
Celsius [1]. A pressure cooker lets water reach 150 degrees Celsius before it boils [1].

*Titanic* (1997) was directed by James Cameron [2]. It starred Brad Pitt and Kate Winslet [2]. \
Titanic was released in 1998 [2]. Its first cut ran for more than four hours ([notes]({base}/titanic-first-cut)).

An early report claimed that water boils at 50 degrees Celsius at sea level [3].
"""
"""What the fake model writes: supported, contradicted (released in 1998 against the page's 1997),
not in the page (Brad Pitt; the pressure cooker's 150 degrees against the page's 120 too: the embedded
judge does not read that as a contradiction), a dead link, and a sentence that faithfully reports
what its (old, wrong) source says."""


def retrieved(site: LoopbackSite) -> list[Document]:
    return [
        Document(
            page_content="At sea level pure water boils at 100 degrees Celsius...",
            metadata={"source": site.url("/boiling"), "title": "The boiling point of water"},
        ),
        Document(
            page_content="Titanic is a 1997 film directed by James Cameron...",
            metadata={"source": site.url("/titanic"), "title": "Titanic (1997 film)"},
        ),
        Document(
            page_content="An old report on the properties of water...",
            metadata={"source": site.url("/old-report"), "title": "An old report on water"},
        ),
    ]


def main() -> None:
    with LoopbackSite(demo_routes()) as site:
        # Only the example's own origin gets through the SSRF guard, not loopback in general.
        verifier = demo_verifier(site)
        note_if_no_judge(verifier)

        docs = retrieved(site)
        retriever = RunnableLambda(lambda question: docs)  # stands in for vector_store.as_retriever()
        prompt = ChatPromptTemplate.from_messages(
            [
                ("system", "Answer from the numbered sources and cite them as [n].\n\n{context}"),
                ("human", "{question}"),
            ]
        )
        model = FakeListChatModel(responses=[ANSWER.format(base=site.base)])
        guard = CitationGuard(verifier=verifier, policy=Policy.preset("annotate"))
        chain: Any = (
            RunnablePassthrough.assign(context=itemgetter("question") | retriever)
            | RunnablePassthrough.assign(answer=prompt | model | StrOutputParser())
            | guard
        )

        print("Verifying the answer's citations (the first run loads the embedded models)...\n", file=sys.stderr)
        started = time.perf_counter()
        out = chain.invoke({"question": "What do we know about boiling water and Titanic?"})
        elapsed = time.perf_counter() - started
        report: AnswerReport = out["citation_report"]

        print("== the model's answer ==")
        print(report.answer.rstrip())
        print("\n== guarded answer (policy: annotate) ==")
        print(out["answer"].rstrip())
        print("\n== report ==")
        print_report(report, site)
        print(f"{elapsed:.1f} s; judge: {describe_judge(verifier.judge)}")


if __name__ == "__main__":
    main()
