"""CitationGuard as a first-class Runnable: typed schemas, policy preset names, dumpd/loads, the
report and the verifier's stages in a tracer's runs, and wrap mode. Fake models write the answers;
the pages come from the loopback fixture server; the judge and embedder are the test doubles."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.load import dumpd, dumps, loads
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, HumanMessagePromptTemplate, PromptTemplate
from langchain_core.runnables import RunnableLambda, RunnableSequence
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run
from pydantic import ValidationError
from test_langchain_guard import inline_answer

from guardrail import Label, Policy, Settings, Verifier
from guardrail.apps.demo import site_fetcher
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge
from langchain_citation_guardrail import REPORT_RUN_NAME, CitationGuard, GuardedRunnable, get_citation_report

NAMESPACE = ["langchain_citation_guardrail"]


@pytest.fixture(scope="module")
def verifier(pages: LoopbackSite) -> Verifier:
    return Verifier(fetcher=site_fetcher(pages, Settings()), judge=OverlapJudge(), embedder=HashEmbedder())


class Runs(BaseTracer):
    """A tracer keeping every finished root run (with its child runs), as LangSmith's would."""

    def __init__(self) -> None:
        super().__init__()
        self.roots: list[Run] = []

    def _persist_run(self, run: Run) -> None:
        self.roots.append(run)

    def find(self, name: str) -> list[Run]:
        found: list[Run] = []
        stack = list(self.roots)
        while stack:
            run = stack.pop()
            found += [run] if run.name == name else []
            stack += run.child_runs
        return found


# -- schemas --------------------------------------------------------------------------------------


def _alternatives(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return list(schema["anyOf"])


def test_input_schema_names_a_string_a_message_and_the_dict_with_its_keys() -> None:
    schema = CitationGuard().get_input_jsonschema()
    refs = {alt.get("$ref", alt.get("type")) for alt in _alternatives(schema)}
    assert refs == {"string", "#/$defs/AIMessage", "#/$defs/AIMessageChunk", "#/$defs/CitationGuardDictInput"}
    dict_input = schema["$defs"]["CitationGuardDictInput"]
    assert dict_input["required"] == ["answer"] and set(dict_input["properties"]) == {"answer", "context"}
    assert "Document" in schema["$defs"]  # the context's documents are named too
    renamed = CitationGuard(answer_key="response", context_key="docs").get_input_jsonschema()
    assert set(renamed["$defs"]["CitationGuardDictInput"]["properties"]) == {"response", "docs"}


def test_output_schema_carries_the_report_under_its_key() -> None:
    schema = CitationGuard(output_key="guarded", report_key="rep").get_output_jsonschema()
    dict_output = schema["$defs"]["CitationGuardDictOutput"]
    assert set(dict_output["properties"]) == {"answer", "context", "guarded", "rep"}
    assert dict_output["properties"]["rep"] == {"$ref": "#/$defs/AnswerReport"}
    assert {"AnswerReport", "UrlVerdict", "AIMessage"} <= set(schema["$defs"])


# -- policy by name --------------------------------------------------------------------------------


def test_policy_accepts_preset_names_and_dicts(pages: LoopbackSite, verifier: Verifier) -> None:
    assert CitationGuard(policy="strict").policy == Policy.strict()
    assert CitationGuard(policy="strip").policy == Policy.preset("strip")
    assert CitationGuard(policy={"contradicted": "block", "unsafe_link": "block"}).policy == Policy.strict()
    out = CitationGuard(policy="strict", verifier=verifier).invoke(inline_answer(pages))
    assert out == Policy().block_message
    with pytest.raises(ValidationError, match="unknown policy preset 'strictest'"):
        CitationGuard(policy="strictest")


# -- dumpd / loads ---------------------------------------------------------------------------------


def test_dumpd_loads_round_trip_keeps_policy_keys_and_settings_never_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(judge="openai", openai_api_key="sk-test-do-not-leak", top_k=5, fetch_timeout=3.0)
    guard = CitationGuard(policy="strict", settings=settings, answer_key="response", format="html", raise_on_block=True)
    data = dumpd(guard)
    assert data["type"] == "constructor" and data["id"] == [*NAMESPACE, "CitationGuard"]
    assert data["kwargs"]["policy"]["contradicted"] == ["block"]
    dumped = data["kwargs"]["settings"]  # what differs from the defaults (the tests' environment too)
    assert {k: dumped[k] for k in ("judge", "fetch_timeout", "top_k")} == {
        "judge": "openai",
        "fetch_timeout": 3.0,
        "top_k": 5,
    }
    assert not {name for name in dumped if "key" in name or "token" in name}
    text = dumps(guard)
    assert "sk-test-do-not-leak" not in text and "openai_api_key" not in text

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    loaded = loads(text, valid_namespaces=NAMESPACE, allowed_objects=[CitationGuard])
    assert isinstance(loaded, CitationGuard)
    assert loaded.policy == Policy.strict() and loaded.format == "html" and loaded.raise_on_block
    assert loaded.answer_key == "response"
    assert loaded.settings is not None and (loaded.settings.judge, loaded.settings.top_k) == ("openai", 5)
    key = loaded.settings.openai_api_key
    assert key is not None and key.get_secret_value() == "sk-from-the-environment"  # read again, not stored


def test_a_used_guard_can_be_deep_copied_and_pickled(pages: LoopbackSite) -> None:
    settings = Settings(allow_private_hosts=True)
    guard = CitationGuard(policy="annotate", settings=settings, judge=OverlapJudge(), embedder=HashEmbedder())
    expected = guard.invoke(inline_answer(pages))  # builds its verifier: TLS context, clients, weak references
    assert "❌ contradicted" in expected and "✅ supported" in expected
    copied = copy.deepcopy(guard)
    assert copied.judge is guard.judge and copied.policy == guard.policy  # models shared, settings copied
    loaded = pickle.loads(pickle.dumps(guard))
    assert loaded.policy == guard.policy and loaded.settings == settings
    for other in (copied, loaded):
        assert other.invoke(inline_answer(pages)) == expected
    assert guard.invoke(inline_answer(pages)) == expected  # the original keeps working


def test_a_copy_of_a_guard_given_a_verifier_shares_it(pages: LoopbackSite, verifier: Verifier) -> None:
    guard = CitationGuard(verifier=verifier)
    expected = guard.invoke(inline_answer(pages))
    copied = copy.deepcopy(guard)
    assert copied.verifier is verifier and copied.invoke(inline_answer(pages)) == expected


def test_a_chain_with_the_guard_round_trips() -> None:
    prompt = ChatPromptTemplate.from_messages([("human", "{question}")])
    chain = prompt | StrOutputParser() | CitationGuard(policy="strip")
    allowed = [RunnableSequence, ChatPromptTemplate, HumanMessagePromptTemplate, PromptTemplate, StrOutputParser]
    loaded = loads(dumps(chain), valid_namespaces=NAMESPACE, allowed_objects=[*allowed, CitationGuard])
    guard = loaded.last
    assert isinstance(guard, CitationGuard) and guard.policy == Policy.preset("strip")
    assert json.loads(dumps(loaded)) == json.loads(dumps(chain))


# -- the report and the stages in a tracer's runs --------------------------------------------------


def _check_guard_run(runs: Runs, pages: LoopbackSite) -> None:
    [guard] = runs.find("CitationGuard")
    children = [child.name for child in guard.child_runs]
    assert "fetch" in children and "judge" in children and children[-1] == REPORT_RUN_NAME
    [report_run] = runs.find(REPORT_RUN_NAME)
    report = report_run.outputs
    assert report is not None and report["overall"] == "contradicted"
    # The answer-level figures beside the report: 2 of its 3 claims supported.
    assert report["support_score"] == pytest.approx(2 / 3) == report[REPORT_RUN_NAME]["support_score"]
    assert report["kind_counts"] == {
        "supported": 2,
        "contradicted": 1,
        "not_found": 0,
        "dead_link": 0,
        "could_not_check": 0,
    }
    labels = [claim["overall"] for claim in report[REPORT_RUN_NAME]["claims"]]
    assert labels == ["supported", "contradicted", "supported"]
    fetched = [page["url"] for run in runs.find("fetch") for page in (run.outputs or {})["pages"]]
    assert pages.url("/boiling") in fetched and pages.url("/titanic") in fetched
    judged = [v["label"] for run in runs.find("judge") for v in (run.outputs or {})["verdicts"]]
    assert sorted(judged) == ["contradicted", "supported", "supported"]
    assert all(run.parent_run_id == guard.id for run in runs.find("fetch") + runs.find("judge"))


def test_a_string_chain_shows_the_report_and_stages_in_its_trace(pages: LoopbackSite, verifier: Verifier) -> None:
    chain = FakeListChatModel(responses=[inline_answer(pages)]) | StrOutputParser() | CitationGuard(verifier=verifier)
    runs = Runs()
    out = chain.invoke("q", config={"callbacks": [runs]})
    assert isinstance(out, str) and "❌ contradicted" in out
    _check_guard_run(runs, pages)
    [guard] = runs.find("CitationGuard")
    assert guard.outputs == {"output": out}  # the guard's own output is unchanged


async def test_a_streamed_chain_shows_them_too(pages: LoopbackSite, verifier: Verifier) -> None:
    chain = FakeListChatModel(responses=[inline_answer(pages)]) | StrOutputParser() | CitationGuard(verifier=verifier)
    runs = Runs()
    chunks = [chunk async for chunk in chain.astream("q", config={"callbacks": [runs]})]
    assert len(chunks) == 3
    _check_guard_run(runs, pages)


def test_batch_gives_each_input_its_report_run(pages: LoopbackSite, verifier: Verifier) -> None:
    runs = Runs()
    texts = [inline_answer(pages), f"Titanic was directed by James Cameron ({pages.url('/titanic')})."]
    CitationGuard(verifier=verifier).batch(texts, config={"callbacks": [runs]})
    overall = sorted((run.outputs or {})["overall"] for run in runs.find(REPORT_RUN_NAME))
    assert overall == ["contradicted", "supported"]
    assert {run.parent_run_id for run in runs.find(REPORT_RUN_NAME)} == {run.id for run in runs.find("CitationGuard")}


# -- wrap mode --------------------------------------------------------------------------------------


def rag_parts(pages: LoopbackSite) -> tuple[list[Document], str]:
    docs = [
        Document("(boiling)", metadata={"source": pages.url("/boiling")}),
        Document("(titanic)", metadata={"url": pages.url("/titanic")}),
    ]
    answer = (
        "Water boils at 50 degrees Celsius at sea level [1]. Titanic was directed by James Cameron [2]. That is all."
    )
    return docs, answer


def test_wrap_passes_the_input_through_and_guards_with_its_context(pages: LoopbackSite, verifier: Verifier) -> None:
    docs, answer = rag_parts(pages)
    seen: list[Any] = []

    def record(value: dict[str, Any]) -> dict[str, Any]:
        seen.append(value)
        return value

    prompt = ChatPromptTemplate.from_messages([("system", "Sources: {context}"), ("human", "{question}")])
    model = GenericFakeChatModel(messages=iter([answer, answer]))
    answer_chain = RunnableLambda(record) | prompt | model | StrOutputParser()
    wrapped = CitationGuard(verifier=verifier).wrap(answer_chain)
    assert isinstance(wrapped, GuardedRunnable) and wrapped.get_name() == "CitationGuard(RunnableSequence)"
    value = {"question": "Tell me", "context": docs}
    out = wrapped.invoke(value)
    assert seen == [value]  # the wrapped chain got the input as it was
    assert isinstance(out, str)
    assert "[1] ❌ contradicted" in out and "[2] ❌" not in out  # [n] resolved to the input's documents
    streamed = list(wrapped.stream(value))
    assert len(streamed) == 3 and "".join(streamed) == out  # sentence by sentence


async def test_wrap_of_a_model_keeps_the_message_and_its_report(pages: LoopbackSite, verifier: Verifier) -> None:
    model = FakeListChatModel(responses=[inline_answer(pages)])
    wrapped = CitationGuard(verifier=verifier).wrap(model)
    assert wrapped.get_input_jsonschema() == model.get_input_jsonschema()
    out = await wrapped.ainvoke("q")
    assert isinstance(out, AIMessage) and "❌ contradicted" in out.text
    report = get_citation_report(out)
    assert report is not None and report.overall == Label.contradicted
    chunks = [chunk async for chunk in wrapped.astream("q")]
    assert "".join(c.text for c in chunks) == out.text
    assert get_citation_report(chunks[-1]) == report
