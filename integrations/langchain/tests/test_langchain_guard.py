"""CitationGuard, the LangChain Runnable: types in and out, the report, policies, batching,
streaming, callbacks and whole chains. Fake chat models from langchain-core write the answers;
the pages come from the loopback fixture server; the judge and embedder are the test doubles."""

from __future__ import annotations

import asyncio
import functools
import operator
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableGenerator, RunnableLambda, RunnablePassthrough

from guardrail import AnswerReport, CitationBlocked, Label, Policy, Settings, Verifier
from guardrail.apps.demo import TITANIC, site_fetcher
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge, Route, WaybackSite
from langchain_citation_guardrail import CITATION_REPORT_EVENT, CitationGuard, get_citation_report

BLOCKED = "Withheld: a citation failed verification."


@pytest.fixture(scope="module")
def verifier(pages: LoopbackSite) -> Verifier:
    # Only the fixture origin gets through the SSRF guard, as the examples do it.
    return Verifier(fetcher=site_fetcher(pages, Settings()), judge=OverlapJudge(), embedder=HashEmbedder())


class HeldPage:
    """A route that answers only once ``release`` is set; ``answered`` says whether it has."""

    def __init__(self, body: str) -> None:
        self.body = body.encode()
        self.release = threading.Event()
        self.answered = False

    def __call__(self, handler: BaseHTTPRequestHandler) -> None:
        self.release.wait(30)
        self.answered = True
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Content-Length", str(len(self.body)))
        handler.end_headers()
        handler.wfile.write(self.body)


def fixture_verifier() -> Verifier:
    """A verifier over loopback pages (private hosts allowed) with the test judge and embedder."""
    return Verifier(allow_private_hosts=True, judge=OverlapJudge(), embedder=HashEmbedder())


def inline_answer(site: LoopbackSite) -> str:
    """An answer citing ``site``'s pages by inline links: supported, contradicted (50 degrees) and
    supported (James Cameron)."""
    u = site.url
    return (
        f"Water boils at 100 degrees Celsius at sea level ({u('/boiling')}). "
        f"Water boils at 50 degrees Celsius at sea level ({u('/boiling')}). "
        f"Titanic was directed by James Cameron ([film]({u('/titanic')}))."
    )


@pytest.fixture()
def held() -> Iterator[tuple[LoopbackSite, HeldPage]]:
    page = HeldPage(TITANIC)
    with LoopbackSite({"/held-titanic": Route(handler=page)}) as site:
        try:
            yield site, page
        finally:
            page.release.set()


class Recorder(BaseCallbackHandler):
    """Collects chain starts (name, tags) and custom events."""

    def __init__(self) -> None:
        self.starts: list[tuple[str | None, list[str]]] = []
        self.events: list[tuple[str, Any]] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.starts.append((kwargs.get("name"), list(kwargs.get("tags") or [])))

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.events.append((name, data))


def numbered_answer(pages: LoopbackSite) -> str:
    return (
        "Water boils at 100 degrees Celsius at sea level [1]. "
        "Water boils at 50 degrees Celsius at sea level [1]. "
        "Titanic was directed by James Cameron [2].\n\n"
        f"[1]: {pages.url('/boiling')}\n[2]: {pages.url('/titanic')}\n"
    )


# -- types in and out ----------------------------------------------------------------------------


class NoneJudge(OverlapJudge):
    """A custom judge answering ``[None]``: the guard must still answer, not raise."""

    name = "none-judge"

    async def judge(self, requests: Any) -> Any:
        return [None for _ in requests]


async def test_a_judge_answering_the_wrong_types_is_a_verdict_not_an_exception(pages: LoopbackSite) -> None:
    verifier = Verifier(fetcher=site_fetcher(pages, Settings()), judge=NoneJudge(), embedder=HashEmbedder())
    guard = CitationGuard(verifier=verifier)
    out = await guard.ainvoke(inline_answer(pages))
    assert isinstance(out, str) and "could not check" in out
    report = await verifier.averify_answer(inline_answer(pages))
    details = {v.detail for claim in report.claims for v in claim.verdicts}
    assert details == {"judge none-judge answered a NoneType, not a JudgeVerdict"}


class HungJudge(OverlapJudge):
    """A custom judge that never answers: the guard must still answer, at the call's deadline."""

    name = "hung-judge"

    async def judge(self, requests: Any) -> Any:
        await asyncio.Event().wait()  # nobody sets it
        raise AssertionError("unreachable")


async def test_a_judge_that_never_answers_is_ended_by_the_deadline(pages: LoopbackSite) -> None:
    settings = Settings(deadline=2.0)  # a page's fetch gets 1.2 s of it
    verifier = Verifier(
        fetcher=site_fetcher(pages, settings), judge=HungJudge(), embedder=HashEmbedder(), settings=settings
    )
    guarded = CitationGuard(verifier=verifier).ainvoke(AIMessage(content=inline_answer(pages)))
    out = await asyncio.wait_for(guarded, 60)  # a bound for the test only: without the deadline it never returns
    assert isinstance(out, AIMessage) and "could not check" in out.text
    report = get_citation_report(out)
    assert report is not None
    assert {v.reason for claim in report.claims for v in claim.verdicts} == {"deadline"}


def test_str_in_str_out_with_badges(pages: LoopbackSite, verifier: Verifier) -> None:
    out = CitationGuard(verifier=verifier).invoke(inline_answer(pages))
    assert isinstance(out, str)
    assert f"({pages.url('/boiling')} ❌ contradicted)" in out
    assert out.count("❌") == 1 and "✅" not in out  # supported is kept as written by default


def test_message_in_message_out_with_the_report_in_metadata(pages: LoopbackSite, verifier: Verifier) -> None:
    message = AIMessage(
        content=numbered_answer(pages),
        id="run-1",
        response_metadata={"finish_reason": "stop"},
        usage_metadata={"input_tokens": 3, "output_tokens": 5, "total_tokens": 8},
    )
    out = CitationGuard(verifier=verifier).invoke(message)
    assert isinstance(out, AIMessage)
    assert out.id == "run-1" and out.usage_metadata == message.usage_metadata
    assert out.response_metadata["finish_reason"] == "stop"
    assert "[1] ❌ contradicted" in out.text
    raw = out.response_metadata["citation_report"]
    assert isinstance(raw, dict)  # JSON-ready: messages get serialised
    report = get_citation_report(out)
    assert isinstance(report, AnswerReport)
    assert [c.overall for c in report.claims] == [Label.supported, Label.contradicted, Label.supported]


def test_a_message_chunk_comes_back_as_a_chunk_with_the_report(pages: LoopbackSite, verifier: Verifier) -> None:
    chunk = AIMessageChunk(content=numbered_answer(pages), id="run-2")
    out = CitationGuard(verifier=verifier).invoke(chunk)
    assert isinstance(out, AIMessageChunk) and out.id == "run-2"
    assert "[1] ❌ contradicted" in out.text
    report = get_citation_report(out)
    assert isinstance(report, AnswerReport) and report.answer == chunk.text


def test_message_content_blocks_keep_non_text_blocks(pages: LoopbackSite, verifier: Verifier) -> None:
    tool_block = {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "water"}}
    message = AIMessage(content=[{"type": "text", "text": inline_answer(pages)}, tool_block])
    out = CitationGuard(verifier=verifier).invoke(message)
    assert out.content[1] == tool_block
    assert "❌ contradicted" in out.content[0]["text"]


def test_dict_in_dict_out_with_documents_resolving_markers(pages: LoopbackSite, verifier: Verifier) -> None:
    docs = [
        Document(page_content="(boiling)", metadata={"source": pages.url("/boiling")}),
        Document(page_content="(titanic)", metadata={"url": pages.url("/titanic")}),
    ]
    answer = "Water boils at 50 degrees Celsius at sea level [1]. Titanic was directed by James Cameron [2]."
    out = CitationGuard(verifier=verifier).invoke({"question": "q?", "answer": answer, "context": docs})
    assert out["question"] == "q?" and out["context"] is docs
    assert out["answer"].startswith("Water boils at 50 degrees Celsius at sea level [1] ❌ contradicted.")
    report = out["citation_report"]
    assert isinstance(report, AnswerReport)
    assert [v.url for c in report.claims for v in c.verdicts] == [pages.url("/boiling"), pages.url("/titanic")]


def test_dict_keys_are_configurable_and_text_only_documents_are_checked_as_facts(verifier: Verifier) -> None:
    guard = CitationGuard(
        verifier=verifier, answer_key="response", context_key="docs", output_key="guarded", report_key="rep"
    )
    docs = [Document(page_content="Pure water boils at 100 degrees Celsius at sea level.", metadata={})]
    out = guard.invoke({"response": "Water boils at 50 degrees Celsius at sea level.", "docs": docs})
    assert out["response"] == "Water boils at 50 degrees Celsius at sea level."  # the original stays
    assert out["guarded"].endswith("❌ contradicted")
    assert out["rep"].claims[0].verdicts[0].url == "fact:0"


def test_document_url_key(pages: LoopbackSite, verifier: Verifier) -> None:
    docs = [Document(page_content="x", metadata={"link": pages.url("/boiling"), "source": "/tmp/file.txt"})]
    guard = CitationGuard(verifier=verifier, url_key="link")
    out = guard.invoke({"answer": "Water boils at 100 degrees Celsius at sea level [1].", "context": docs})
    assert out["citation_report"].claims[0].overall == Label.supported


def test_bad_inputs_raise_clear_errors(verifier: Verifier) -> None:
    guard = CitationGuard(verifier=verifier)
    with pytest.raises(TypeError, match="unsupported input type int"):
        guard.invoke(42)
    with pytest.raises(KeyError, match="no 'answer' key"):
        guard.invoke({"output": "text"})
    with pytest.raises(TypeError, match="must be a string or a message, not list"):
        guard.invoke({"answer": ["x"]})


# -- the report as a custom event --------------------------------------------------------------


def test_invoke_emits_the_report_as_a_custom_event(pages: LoopbackSite, verifier: Verifier) -> None:
    recorder = Recorder()
    out = CitationGuard(verifier=verifier).invoke(inline_answer(pages), config={"callbacks": [recorder]})
    assert isinstance(out, str)
    [(name, data)] = recorder.events
    assert name == CITATION_REPORT_EVENT
    assert isinstance(data, AnswerReport) and data.answer == inline_answer(pages)


async def test_astream_events_v2_carries_the_report(pages: LoopbackSite, verifier: Verifier) -> None:
    chain = FakeListChatModel(responses=[inline_answer(pages)]) | StrOutputParser() | CitationGuard(verifier=verifier)
    reports = [
        e["data"]
        async for e in chain.astream_events("q", version="v2")
        if e["event"] == "on_custom_event" and e["name"] == CITATION_REPORT_EVENT
    ]
    assert len(reports) == 1
    assert reports[0].label_counts == {"supported": 2, "contradicted": 1}


async def test_ainvoke_custom_event_in_astream_events(pages: LoopbackSite, verifier: Verifier) -> None:
    guard = CitationGuard(verifier=verifier)
    wrapped = RunnableLambda(guard.ainvoke)  # an ainvoke nested in a chain
    events = [e async for e in wrapped.astream_events(inline_answer(pages), version="v2")]
    assert [e["name"] for e in events if e["event"] == "on_custom_event"] == [CITATION_REPORT_EVENT]


# -- policies ----------------------------------------------------------------------------------


def test_strip_policy_removes_failed_citations(pages: LoopbackSite, verifier: Verifier) -> None:
    out = CitationGuard(verifier=verifier, policy=Policy.preset("strip")).invoke(inline_answer(pages))
    assert "Water boils at 50 degrees Celsius at sea level." in out
    assert out.count(pages.url("/boiling")) == 1


def test_block_replaces_the_answer(pages: LoopbackSite, verifier: Verifier) -> None:
    guard = CitationGuard(verifier=verifier, policy=Policy.strict(block_message=BLOCKED))
    assert guard.invoke(inline_answer(pages)) == BLOCKED
    out = guard.invoke(AIMessage(content=inline_answer(pages)))
    assert out.content == BLOCKED and get_citation_report(out) is not None


def test_raise_on_block_raises_citation_blocked_with_the_report(pages: LoopbackSite, verifier: Verifier) -> None:
    recorder = Recorder()
    guard = CitationGuard(verifier=verifier, policy=Policy.strict(), raise_on_block=True)
    with pytest.raises(CitationBlocked) as info:
        guard.invoke(inline_answer(pages), config={"callbacks": [recorder]})
    assert info.value.report.overall == Label.contradicted
    assert [name for name, _ in recorder.events] == [CITATION_REPORT_EVENT]


def test_html_badges(pages: LoopbackSite, verifier: Verifier) -> None:
    out = CitationGuard(verifier=verifier, format="html").invoke(inline_answer(pages))
    assert '<span class="citation-verdict citation-verdict--contradicted"' in out


# -- batch ---------------------------------------------------------------------------------------


def batch_inputs(pages: LoopbackSite) -> list[Any]:
    u = pages.url
    return [
        f"Titanic was directed by James Cameron ({u('/titanic')}).",
        AIMessage(content=f"Titanic is a 1997 film ({u('/titanic')}). Water boils at 100 degrees ({u('/boiling')})."),
        {
            "answer": "Titanic is a 1997 American epic film [1].",
            "context": [Document("t", metadata={"url": u("/titanic")})],
        },
    ]


def test_batch_fetches_shared_urls_once(pages: LoopbackSite, verifier: Verifier) -> None:
    recorder = Recorder()
    with pages.counting() as hits:
        outs = CitationGuard(verifier=verifier).batch(batch_inputs(pages), config={"callbacks": [recorder]})
    assert hits == {"/titanic": 1, "/boiling": 1}
    assert isinstance(outs[0], str) and isinstance(outs[1], AIMessage) and isinstance(outs[2], dict)
    assert len(recorder.events) == 3


async def test_abatch_fetches_shared_urls_once(pages: LoopbackSite, verifier: Verifier) -> None:
    with pages.counting() as hits:
        outs = await CitationGuard(verifier=verifier).abatch(batch_inputs(pages))
    assert hits == {"/titanic": 1, "/boiling": 1}
    assert outs[2]["citation_report"].claims[0].overall == Label.supported


def test_batch_return_exceptions(pages: LoopbackSite, verifier: Verifier) -> None:
    guard = CitationGuard(verifier=verifier, policy=Policy.strict(), raise_on_block=True)
    inputs = [inline_answer(pages), 42, f"Titanic was directed by James Cameron ({pages.url('/titanic')})."]
    outs = guard.batch(inputs, return_exceptions=True)
    assert isinstance(outs[0], CitationBlocked) and isinstance(outs[1], TypeError) and isinstance(outs[2], str)
    with pytest.raises(CitationBlocked):
        guard.batch(inputs)


# -- streaming -----------------------------------------------------------------------------------


def test_stream_messages_sentence_by_sentence(pages: LoopbackSite, verifier: Verifier) -> None:
    answer = inline_answer(pages)
    model = GenericFakeChatModel(messages=iter([AIMessage(content=answer, id="m1")]))
    chunks = list((model | CitationGuard(verifier=verifier)).stream("q"))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    texts = [c.text for c in chunks if c.text]
    assert len(texts) == 3  # one per sentence
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    expected = CitationGuard(verifier=verifier).invoke(AIMessage(content=answer))
    assert total.text == expected.text
    assert total.id == "m1"
    report = get_citation_report(total)
    assert report is not None and report.answer == answer


async def test_astream_strings(pages: LoopbackSite, verifier: Verifier) -> None:
    chain = FakeListChatModel(responses=[inline_answer(pages)]) | StrOutputParser() | CitationGuard(verifier=verifier)
    chunks = [c async for c in chain.astream("q")]
    assert len(chunks) == 3 and all(isinstance(c, str) for c in chunks)
    assert "".join(chunks) == CitationGuard(verifier=verifier).invoke(inline_answer(pages))


def test_numbered_answer_without_context_is_held_until_its_reference_list(
    pages: LoopbackSite, verifier: Verifier
) -> None:
    model = GenericFakeChatModel(messages=iter([numbered_answer(pages)]))
    chunks = list((model | StrOutputParser() | CitationGuard(verifier=verifier)).stream("q"))
    assert len(chunks) == 1
    assert "[1] ❌ contradicted" in chunks[0] and "unverified" not in chunks[0]


def slow_answer(pages: LoopbackSite, site: LoopbackSite) -> str:
    return (
        f"Water boils at 100 degrees Celsius at sea level ({pages.url('/boiling')}). "
        f"Titanic was directed by James Cameron ({site.url('/held-titanic')}). "
        "That is all."
    )


def test_stream_emits_the_first_sentence_before_the_next_is_verified(
    pages: LoopbackSite, held: tuple[LoopbackSite, HeldPage]
) -> None:
    site, page = held
    model = GenericFakeChatModel(messages=iter([slow_answer(pages, site)]))
    chunks = (model | StrOutputParser() | CitationGuard(verifier=fixture_verifier())).stream("q")
    first = next(chunks)  # the second sentence's page is still held
    assert first.startswith("Water boils at 100") and not page.answered
    page.release.set()
    assert list(chunks)


async def test_astream_emits_while_the_model_is_still_writing(pages: LoopbackSite) -> None:
    verifier = fixture_verifier()
    first = f"Water boils at 100 degrees Celsius at sea level ({pages.url('/boiling')}). "
    first_out = asyncio.Event()
    waited: list[bool] = []

    async def model(_: AsyncIterator[Any]) -> AsyncIterator[str]:
        for part in [first, "Titanic ", "was ", "directed ", "by ", "James ", "Cameron."]:
            yield part
            if part == "directed ":  # the rest only once the first sentence is out (at most 20 s on)
                try:
                    await asyncio.wait_for(first_out.wait(), 20)
                    waited.append(True)
                except TimeoutError:
                    waited.append(False)

    chain = RunnableGenerator(model) | CitationGuard(verifier=verifier)
    received = []
    async for chunk in chain.astream("q"):
        received.append(chunk)
        first_out.set()
    assert received[0] == first
    assert waited == [True]  # the first sentence came out before the model finished


def test_sync_stream_emits_while_the_model_is_still_writing(pages: LoopbackSite, verifier: Verifier) -> None:
    first = f"Water boils at 100 degrees Celsius at sea level ({pages.url('/boiling')}). "
    first_out = threading.Event()
    waited: list[bool] = []

    def model(_: Iterator[Any]) -> Iterator[str]:
        for part in [first, "Titanic ", "was ", "directed ", "by ", "James ", "Cameron."]:
            yield part
            if part == "directed ":  # the rest only once the first sentence is out (at most 20 s on)
                waited.append(first_out.wait(20))

    chain = RunnableGenerator(model) | CitationGuard(verifier=verifier)
    received = []
    for chunk in chain.stream("q"):
        received.append(chunk)
        first_out.set()
    assert received[0] == first
    assert waited == [True]


def test_stream_stops_with_the_block_message(pages: LoopbackSite, verifier: Verifier) -> None:
    answer = inline_answer(pages) + " Nothing else."
    model = GenericFakeChatModel(messages=iter([answer]))
    guard = CitationGuard(verifier=verifier, policy=Policy.strict(block_message=BLOCKED))
    recorder = Recorder()
    chunks = list((model | StrOutputParser() | guard).stream("q", config={"callbacks": [recorder]}))
    assert len(chunks) == 2
    assert chunks[0].startswith("Water boils at 100")
    assert chunks[-1] == "\n\n" + BLOCKED
    [(_, report)] = recorder.events
    assert report.overall == Label.contradicted


async def test_astream_raise_on_block(pages: LoopbackSite, verifier: Verifier) -> None:
    model = GenericFakeChatModel(messages=iter([inline_answer(pages)]))
    guard = CitationGuard(verifier=verifier, policy=Policy.strict(), raise_on_block=True)
    got: list[str] = []
    with pytest.raises(CitationBlocked) as info:
        async for chunk in (model | StrOutputParser() | guard).astream("q"):
            got.append(chunk)
    assert len(got) == 1
    assert info.value.report.claims[-1].overall == Label.contradicted


async def test_rag_dict_stream_passes_keys_through_and_ends_with_the_report(
    pages: LoopbackSite, verifier: Verifier
) -> None:
    docs = [
        Document("(boiling)", metadata={"source": pages.url("/boiling")}),
        Document("(t)", metadata={"url": pages.url("/titanic")}),
    ]
    answer = (
        "Water boils at 100 degrees Celsius at sea level [1]. Titanic was directed by James Cameron [2]. Done here."
    )
    prompt = ChatPromptTemplate.from_messages([("human", "{question}")])
    model = GenericFakeChatModel(messages=iter([answer]))
    chain = (
        RunnablePassthrough.assign(context=RunnableLambda(lambda _: docs))
        | RunnablePassthrough.assign(answer=prompt | model | StrOutputParser())
        | CitationGuard(verifier=verifier)
    )
    chunks = [c async for c in chain.astream({"question": "Tell me"})]
    assert all(isinstance(c, dict) for c in chunks)
    kinds = [next(iter(c)) for c in chunks]
    assert kinds.index("context") < kinds.index("answer")  # passed through as it came, not held back
    answer_chunks = [c["answer"] for c in chunks if "answer" in c]
    assert len(answer_chunks) == 3  # sentence by sentence: the context resolves [1] and [2] at once
    assert "".join(answer_chunks) == answer
    assert chunks[-1].keys() == {"citation_report"}
    merged = functools.reduce(operator.add, chunks)
    assert merged["context"] == docs and merged["question"] == "Tell me" and merged["answer"] == answer
    assert [c.overall for c in merged["citation_report"].claims if c.overall] == [Label.supported] * 2


# -- callbacks, names, tags ----------------------------------------------------------------------


def test_runs_appear_under_the_guards_name_and_config(pages: LoopbackSite, verifier: Verifier) -> None:
    recorder = Recorder()
    guard = CitationGuard(verifier=verifier)
    guard.invoke("Nothing to check here.", config={"callbacks": [recorder]})
    assert recorder.starts == [("CitationGuard", []), ("citation_report", [])]  # the report's child run
    recorder = Recorder()
    guard.with_config(run_name="my-guard", tags=["guarded"]).invoke("x", config={"callbacks": [recorder]})
    assert recorder.starts[0] == ("my-guard", ["guarded"])


async def test_with_config_in_astream_events(pages: LoopbackSite, verifier: Verifier) -> None:
    guard = CitationGuard(verifier=verifier).with_config(run_name="my-guard", tags=["guarded"])
    chain = FakeListChatModel(responses=[inline_answer(pages)]) | StrOutputParser() | guard
    events = [e async for e in chain.astream_events("q", version="v2")]
    starts = [e for e in events if e["event"] == "on_chain_start" and e["name"] == "my-guard"]
    assert len(starts) == 1 and "guarded" in starts[0]["tags"]
    streamed = [e["data"]["chunk"] for e in events if e["event"] == "on_chain_stream" and e["name"] == "my-guard"]
    assert len(streamed) == 3
    [custom] = [e for e in events if e["event"] == "on_custom_event"]
    assert custom["run_id"] == starts[0]["run_id"]  # dispatched by the guard's own run
    assert "guarded" in custom["tags"]


# -- whole chains --------------------------------------------------------------------------------


def test_prompt_model_parser_guard_chain(pages: LoopbackSite, verifier: Verifier) -> None:
    prompt = ChatPromptTemplate.from_messages([("system", "Cite your sources."), ("human", "{question}")])
    model = FakeListChatModel(responses=[inline_answer(pages)])
    chain = prompt | model | StrOutputParser() | CitationGuard(verifier=verifier, policy=Policy.preset("annotate"))
    out = chain.invoke({"question": "Tell me about water"})
    assert out.count("✅ supported") == 2 and out.count("❌ contradicted") == 1


def test_model_guard_chain(pages: LoopbackSite, verifier: Verifier) -> None:
    out = (FakeListChatModel(responses=[inline_answer(pages)]) | CitationGuard(verifier=verifier)).invoke("q")
    assert isinstance(out, AIMessage) and "❌ contradicted" in out.text


def test_llm_guard_chain(pages: LoopbackSite, verifier: Verifier) -> None:
    out = (FakeListLLM(responses=[inline_answer(pages)]) | CitationGuard(verifier=verifier)).invoke("q")
    assert isinstance(out, str) and "❌ contradicted" in out


async def test_sync_invoke_inside_a_running_loop(pages: LoopbackSite, verifier: Verifier) -> None:
    out = CitationGuard(verifier=verifier).invoke(inline_answer(pages))  # nested loop avoided by run_sync
    assert "❌ contradicted" in out


def test_a_rag_chain_repairs_from_its_own_context_documents(pages: LoopbackSite, verifier: Verifier) -> None:
    """{"context": docs, "answer": ...}: a sentence citing [2] that only document [1] states is
    re-pointed to [1] under the repair policy, streamed or not; the report says why."""
    docs = [
        Document(page_content="Pure water boils at 100 degrees Celsius at sea level.", metadata={}),
        Document(page_content="(titanic)", metadata={"url": pages.url("/titanic")}),
    ]
    answer = "Titanic was directed by James Cameron [2]. Water boils at 100 degrees Celsius at sea level [2]."
    chain = RunnableLambda(lambda question: {"question": question, "context": docs, "answer": answer})
    out = (chain | CitationGuard(policy="repair", verifier=verifier)).invoke("q?")
    expected = (
        "Titanic was directed by James Cameron [2]. "
        "Water boils at 100 degrees Celsius at sea level [1] ↪ citation corrected."
    )
    assert out["answer"] == expected
    (suggestion,) = out["citation_report"].claims[1].suggested_citations
    assert (suggestion.source, suggestion.marker, suggestion.verdict.label) == ("fact:0", "[1]", Label.supported)
    streamed = list((chain | CitationGuard(policy="repair", verifier=verifier)).stream("q?"))
    assert "".join(c["answer"] for c in streamed if "answer" in c) == expected
    plain = (chain | CitationGuard(verifier=verifier)).invoke("q?")
    assert plain["answer"].endswith("sea level [2] ⚠️ unverified.")
    assert plain["citation_report"].claims[1].suggested_citations == []  # no repair, nothing more checked


def test_the_guard_it_builds_honours_archived_copies(pages: LoopbackSite) -> None:
    dead = pages.url("/gone-404")
    answer = f"Water boils at 100 degrees Celsius at sea level ({dead})."
    with WaybackSite() as wayback:
        wayback.archive(dead, pages.routes["/boiling"].body)  # type: ignore[arg-type]
        settings = Settings(archive="wayback", wayback_url=wayback.base, allow_private_hosts=True)
        guard = CitationGuard(policy="repair", settings=settings, judge=OverlapJudge(), embedder=HashEmbedder())
        out = guard.invoke(answer)
        assert out == f"Water boils at 100 degrees Celsius at sea level ({wayback.snapshot_url(dead)} 🗄 archived copy)."
        assert wayback.lookups == 1
