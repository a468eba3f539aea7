"""Stream a guarded answer sentence by sentence, offline: `python examples/streaming.py [--strict]`.

A fake chat model writes an answer character by character (about 100 characters a second, like a
real model); ``CitationGuard`` at the end of the chain lets each sentence out as soon as its
citations are verified, while the model is still writing the next ones. The cited pages are served
on 127.0.0.1 by the example itself (only that origin gets through the SSRF guard), so it needs no
network and no API key.

    chain = prompt | model | StrOutputParser() | CitationGuard(verifier=verifier)
    async for event in chain.astream_events(inputs, version="v2"): ...

With ``--strict`` (``Policy.strict()``) the contradicted citation blocks the answer: the stream
stops there and its last chunk is the block message (what was already streamed stays streamed).

The output is a plain string, so the report comes as the ``citation_report`` custom event.
It uses the embedded defaults: the MiniLM embedder and the embedded judge model when it is
installed (else the judge named by GUARDRAIL_JUDGE); without any judge it says so, and dead
links are still caught while everything else reads "unverified".
"""

from __future__ import annotations

import asyncio
import sys
import time

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate

from guardrail import AnswerReport, Policy
from guardrail.apps.demo import LoopbackSite, demo_routes, demo_verifier, describe_judge, note_if_no_judge, print_report
from langchain_citation_guardrail import CITATION_REPORT_EVENT, CitationGuard

ANSWER = """At sea level, water boils at 100 degrees Celsius ([source]({base}/boiling)). \
In Denver it boils at about 95 degrees Celsius ({base}/boiling). \
A pressure cooker lets water reach 150 degrees Celsius before it boils ({base}/boiling).

*Titanic* was directed by James Cameron ([film notes]({base}/titanic)). \
Its first cut ran for more than four hours ({base}/titanic-first-cut). \
Titanic was released in 1998 ({base}/titanic).
"""


async def run(strict: bool) -> None:
    with LoopbackSite(demo_routes()) as site:
        verifier = demo_verifier(site)
        note_if_no_judge(verifier)
        judge = verifier.judge
        print("loading the embedded models...", file=sys.stderr)
        await asyncio.to_thread(verifier.embedder.embed, ["warm up"])
        if judge is not None and hasattr(judge, "load"):
            await asyncio.to_thread(judge.load)

        policy = Policy.strict() if strict else Policy()
        guard = CitationGuard(verifier=verifier, policy=policy).with_config(run_name="citation-guard")
        prompt = ChatPromptTemplate.from_messages([("human", "{question}")])
        model = FakeListChatModel(responses=[ANSWER.format(base=site.base)], sleep=0.01)
        chain = prompt | model | StrOutputParser() | guard

        print(f"== guarded stream (policy: {'strict' if strict else 'default'}) ==")
        started = time.perf_counter()
        first: float | None = None
        model_done: float | None = None
        report: AnswerReport | None = None
        async for event in chain.astream_events({"question": "Boiling water and Titanic?"}, version="v2"):
            now = time.perf_counter() - started
            if event["event"] == "on_chain_stream" and event["name"] == "citation-guard":
                first = first if first is not None else now
                print(f"[{now:5.2f} s] {event['data']['chunk']!r}", flush=True)
            elif event["event"] == "on_chat_model_end":
                model_done = now
                print(f"[{now:5.2f} s] (the model has finished writing)", flush=True)
            elif event["event"] == "on_custom_event" and event["name"] == CITATION_REPORT_EVENT:
                report = event["data"]

        print("\n== report ==")
        assert report is not None
        print_report(report, site)
        if first is not None and model_done is not None:
            print(f"first guarded sentence after {first:.2f} s; the model finished after {model_done:.2f} s")
        print(f"judge: {describe_judge(judge)}; embedder: {verifier.embedder.name}")


if __name__ == "__main__":
    asyncio.run(run(strict="--strict" in sys.argv[1:]))
