"""The LlamaIndex guards' own option names and their instrumentation: ``guard_settings=`` (the old
``settings=`` shadowed ``llama_index.core.Settings``: it still works, with a DeprecationWarning),
and a span per guard call with an event per verdict and one for the report's figures, captured by
handlers registered on LlamaIndex's root dispatcher."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import llama_index.core.instrumentation as instrument
import pytest
from llama_index.core.base.response.schema import Response
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode
from pydantic import Field

from guardrail import Settings, Verifier
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge
from llama_index.postprocessor.citation_guardrail import (
    CitationGuardChatEngine,
    CitationGuardPostprocessor,
    CitationGuardQueryEngine,
    CitationReportEvent,
    CitationVerdictEvent,
    report_of,
)


class Events(BaseEventHandler):
    """Keeps the guards' events."""

    seen: list[BaseEvent] = Field(default_factory=list)

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if isinstance(event, (CitationVerdictEvent, CitationReportEvent)):
            self.seen.append(event)


@pytest.fixture()
def captured() -> Iterator[tuple[Events, SimpleSpanHandler]]:
    root = instrument.get_dispatcher()
    events, spans = Events(), SimpleSpanHandler()
    root.add_event_handler(events)
    root.add_span_handler(spans)
    try:
        yield events, spans
    finally:
        root.event_handlers.remove(events)
        root.span_handlers.remove(spans)


class FixedEngine(CustomQueryEngine):
    """Answers every query with ``answer``, citing ``nodes``."""

    answer: str
    nodes: list[NodeWithScore]

    def custom_query(self, query_str: str) -> Response:
        return Response(self.answer, source_nodes=list(self.nodes))


def answer_and_nodes(pages: LoopbackSite) -> tuple[str, list[NodeWithScore]]:
    nodes = [node("Boiling.", pages.url("/boiling")), node("Titanic.", pages.url("/gone-404"))]
    answer = (
        "Water boils at 100 degrees Celsius at sea level [1]. "
        "Water boils at 50 degrees Celsius at sea level [1]. "
        "Titanic was directed by James Cameron [2]."
    )
    return answer, nodes


def node(text: str, url: str | None) -> NodeWithScore:
    return NodeWithScore(node=TextNode(text=text, metadata={"url": url} if url else {}), score=1.0)


def offline_verifier() -> Verifier:
    return Verifier(allow_private_hosts=True, judge=OverlapJudge(), embedder=HashEmbedder())


# -- guard_settings= ---------------------------------------------------------------------------


def test_guard_settings_configures_the_verifier_it_builds_without_a_warning(pages: LoopbackSite) -> None:
    settings = Settings(allow_private_hosts=True)
    checked = node("Water boils at 100 degrees Celsius.", pages.url("/boiling"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        post = CitationGuardPostprocessor(guard_settings=settings, judge=OverlapJudge(), embedder=HashEmbedder())
        engine = CitationGuardQueryEngine(FixedEngine(answer="", nodes=[]), guard_settings=settings)
    assert post.verifier.settings.allow_private_hosts and engine.verifier.settings.allow_private_hosts
    [kept] = post.postprocess_nodes([checked])
    assert kept.node.metadata["citation_verdict"] == "supported"  # the loopback page was let through


def test_settings_still_works_with_a_deprecation_warning_at_the_callers_line() -> None:
    settings = Settings(allow_private_hosts=True)
    inner = FixedEngine(answer="", nodes=[])
    with pytest.warns(
        DeprecationWarning, match=r"CitationGuardPostprocessor\(settings=\.\.\.\) is deprecated.*guard_settings="
    ) as post_warning:
        post = CitationGuardPostprocessor(settings=settings, judge=OverlapJudge(), embedder=HashEmbedder())
    with pytest.warns(DeprecationWarning, match=r"CitationGuardQueryEngine\(settings=") as engine_warning:
        engine = CitationGuardQueryEngine(inner, settings=settings, judge=OverlapJudge(), embedder=HashEmbedder())
    with pytest.warns(DeprecationWarning, match=r"CitationGuardChatEngine\(settings="):
        CitationGuardChatEngine(_chat_engine(), settings=settings)
    assert post.verifier.settings.allow_private_hosts and engine.verifier.settings.allow_private_hosts
    assert {w.filename for w in [*post_warning, *engine_warning]} == {__file__}


def test_both_names_or_an_unknown_option_is_an_error() -> None:
    settings = Settings()
    with pytest.raises(TypeError, match="give guard_settings=, not also the deprecated settings="):
        CitationGuardPostprocessor(guard_settings=settings, settings=settings)
    with pytest.raises(TypeError, match="unexpected keyword argument 'polcy'"):
        CitationGuardQueryEngine(FixedEngine(answer="", nodes=[]), polcy=None)  # type: ignore[call-arg]


def _chat_engine() -> Any:
    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index.core.llms import MockLLM
    from llama_index.core.memory import ChatMemoryBuffer

    # A plain buffer: the default Memory leaves an aiosqlite connection open (see test_llamaindex_chat).
    return SimpleChatEngine.from_defaults(llm=MockLLM(), memory=ChatMemoryBuffer.from_defaults())


# -- instrumentation ---------------------------------------------------------------------------


def test_a_query_engine_guard_call_is_a_span_with_an_event_per_verdict_and_the_report(
    pages: LoopbackSite, captured: tuple[Events, SimpleSpanHandler]
) -> None:
    events, spans = captured
    answer, nodes = answer_and_nodes(pages)
    response = CitationGuardQueryEngine(FixedEngine(answer=answer, nodes=nodes), offline_verifier()).query("q")
    report = report_of(response)
    assert report is not None
    verdicts = [e for e in events.seen if isinstance(e, CitationVerdictEvent)]
    expected = [(c.text, v.url, v.label.value, v.kind.value) for c in report.claims for v in c.verdicts]
    assert [(e.claim, e.source, e.label, e.kind) for e in verdicts] == expected
    assert [e.label for e in verdicts] == ["supported", "contradicted", "unreachable"]
    [summary] = [e for e in events.seen if isinstance(e, CitationReportEvent)]
    assert (summary.overall, summary.label_counts, summary.claims_checked) == (
        report.overall.value,
        report.label_counts,
        3,
    )
    assert summary.report == report and summary.blocked is False
    [span] = [s for s in spans.completed_spans if s.id_.startswith("AnswerGuard.check-")]
    assert {e.span_id for e in events.seen} == {span.id_}


async def test_a_streamed_answer_reports_when_its_stream_ends(
    pages: LoopbackSite, captured: tuple[Events, SimpleSpanHandler]
) -> None:
    events, spans = captured
    answer, nodes = answer_and_nodes(pages)
    guard = CitationGuardQueryEngine(FixedEngine(answer=answer, nodes=nodes), offline_verifier())
    streamed = guard.guard(_streaming(answer, nodes))
    assert not events.seen  # nothing is reported before the stream is read
    text = "".join(streamed.response_gen)  # type: ignore[union-attr]
    assert "contradicted" in text
    kinds = [type(e).__name__ for e in events.seen]
    assert kinds == ["CitationVerdictEvent"] * 3 + ["CitationReportEvent"]
    [span] = [s for s in spans.completed_spans if s.id_.startswith("AnswerGuard.finished-")]
    assert {e.span_id for e in events.seen} == {span.id_}


def _streaming(answer: str, nodes: list[NodeWithScore]) -> Any:
    from llama_index.core.base.response.schema import StreamingResponse

    return StreamingResponse(response_gen=(answer[i : i + 9] for i in range(0, len(answer), 9)), source_nodes=nodes)


async def test_the_postprocessor_reports_each_checked_node(
    pages: LoopbackSite, captured: tuple[Events, SimpleSpanHandler]
) -> None:
    events, spans = captured
    nodes = [
        NodeWithScore(
            node=TextNode(text="Water boils at 100 degrees Celsius.", metadata={"url": pages.url("/boiling")})
        ),
        NodeWithScore(
            node=TextNode(text="Titanic was directed by James Cameron.", metadata={"url": pages.url("/gone-404")})
        ),
        NodeWithScore(node=TextNode(text="No URL here.", metadata={})),
    ]
    await CitationGuardPostprocessor(offline_verifier(), drop_labels=[]).apostprocess_nodes(nodes)
    verdicts = [(e.claim, e.label, e.reason) for e in events.seen if isinstance(e, CitationVerdictEvent)]
    assert verdicts == [
        ("Water boils at 100 degrees Celsius.", "supported", None),
        ("Titanic was directed by James Cameron.", "unreachable", "http_404"),
    ]
    [summary] = [e for e in events.seen if isinstance(e, CitationReportEvent)]
    assert (summary.overall, summary.label_counts, summary.claims_checked) == (
        None,
        {"supported": 1, "unreachable": 1},
        2,
    )
    [span] = [s for s in spans.completed_spans if s.id_.startswith("CitationGuardPostprocessor._check-")]
    assert {e.span_id for e in events.seen} == {span.id_}
