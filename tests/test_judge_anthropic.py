"""The Anthropic judge against a local server speaking the Messages protocol."""

from __future__ import annotations

import asyncio
import logging

import pytest

from guardrail import Settings, Verifier
from guardrail.core.schema import JudgeVerdict, Label
from guardrail.judges.anthropic import AnthropicJudge
from guardrail.judges.prompt import SYSTEM_PROMPT, VERDICT_SCHEMA, render_user_message
from guardrail.judges.retry import RetryPolicy
from guardrail.runtime import build_judge
from guardrail.settings import ConfigurationError
from guardrail.testing import HashEmbedder
from tests.fakes import CLAIM, FAST, GOOD_URL, QUOTE, REQUEST, judge_error, static_pages
from tests.fixtures.llm_server import (
    ANTHROPIC_PATH,
    FakeLLMServer,
    Reply,
    anthropic_refusal,
    anthropic_text,
    anthropic_tool_reply,
    anthropic_verdict,
    error_reply,
    verdict_json,
)

KEY = "sk-ant-test-DO-NOT-LEAK-0987654321"


def make_judge(server: FakeLLMServer, **kwargs: object) -> AnthropicJudge:
    options: dict[str, object] = {"api_key": KEY, "base_url": server.base, "retry": FAST}
    options.update(kwargs)
    return AnthropicJudge("test-claude", **options)  # type: ignore[arg-type]


async def test_forced_tool_answer_and_the_request_sent(llm: FakeLLMServer) -> None:
    llm.push(anthropic_verdict("supported", QUOTE, 0.91))
    verdicts = await make_judge(llm).judge([REQUEST])
    assert verdicts == [JudgeVerdict(label="supported", evidence_quote=QUOTE, confidence=0.91)]

    [sent] = llm.received
    assert sent.path == ANTHROPIC_PATH
    auth = sent.headers.get("x-api-key") or sent.headers.get("authorization", "").removeprefix("Bearer ")
    assert auth == KEY
    assert sent.headers.get("anthropic-version")
    assert sent.body["model"] == "test-claude"
    assert sent.body["system"] == SYSTEM_PROMPT
    assert sent.body["messages"] == [{"role": "user", "content": render_user_message(REQUEST)}]
    assert sent.body["tools"] == [
        {
            "name": "citation_verdict",
            "description": sent.body["tools"][0]["description"],
            "input_schema": VERDICT_SCHEMA,
        }
    ]
    assert sent.body["tool_choice"] == {"type": "tool", "name": "citation_verdict"}
    assert sent.body["max_tokens"] > 0
    assert "temperature" not in sent.body  # API 2026-10-21 rejects sampling parameters
    assert sent.headers.get("x-stainless-retry-count", "0") == "0"


async def test_text_json_answer_is_accepted_when_no_tool_call(llm: FakeLLMServer) -> None:
    llm.push(anthropic_text(f"```json\n{verdict_json('contradicted', QUOTE, 0.6)}\n```"))
    [verdict] = await make_judge(llm).judge([REQUEST])
    assert (verdict.label, verdict.evidence_quote, verdict.confidence) == ("contradicted", QUOTE, 0.6)


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(anthropic_refusal(), id="refusal"),
        pytest.param(anthropic_tool_reply({"label": "supported"}), id="incomplete_tool_input"),
        pytest.param(
            anthropic_tool_reply({"label": "unreachable", "evidence_quote": "x", "confidence": 1}),
            id="wrong_label",
        ),
        pytest.param(anthropic_tool_reply("not an object"), id="tool_input_not_object"),
        pytest.param(anthropic_text("I cannot judge this."), id="prose"),
        pytest.param(anthropic_text(verdict_json("supported", QUOTE), stop_reason="max_tokens"), id="cut_off"),
        pytest.param(error_reply(429, anthropic_shape=True), id="429"),
        pytest.param(error_reply(500, anthropic_shape=True), id="500"),
        pytest.param(error_reply(529, "Overloaded", anthropic_shape=True), id="529_overloaded"),
        pytest.param(Reply(status=200, body="not json"), id="not_json_body"),
    ],
)
async def test_transient_failure_is_retried(llm: FakeLLMServer, failure: Reply) -> None:
    llm.push(failure, anthropic_verdict("supported", QUOTE, 0.8))
    [verdict] = await make_judge(llm).judge([REQUEST])
    assert verdict == JudgeVerdict(label="supported", evidence_quote=QUOTE, confidence=0.8)
    assert len(llm.received) == 2


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(anthropic_refusal(), id="refusal"),
        pytest.param(error_reply(503, anthropic_shape=True), id="503"),
        pytest.param(anthropic_tool_reply({"label": "true", "evidence_quote": "", "confidence": 1}), id="label"),
    ],
)
async def test_persistent_failure_becomes_judge_error(llm: FakeLLMServer, failure: Reply) -> None:
    llm.responder = lambda _r: failure
    assert await make_judge(llm).judge([REQUEST, REQUEST]) == [judge_error(), judge_error()]
    assert len(llm.received) == 2 * FAST.attempts


async def test_retry_after_is_honoured(llm: FakeLLMServer) -> None:
    llm.push(error_reply(429, retry_after="0.4", anthropic_shape=True), anthropic_verdict("supported", QUOTE))
    [verdict] = await make_judge(llm).judge([REQUEST])
    assert verdict.label == "supported"
    first, second = llm.received
    assert second.at - first.at >= 0.38


async def test_slow_answer_times_out_and_is_retried(llm: FakeLLMServer) -> None:
    # A limit well above a loaded machine's round trip, far below the first answer's minute.
    policy = RetryPolicy(attempts=2, attempt_timeout=1.0, backoff=0.01)
    # The first answer comes after a minute: only the attempt timeout gets to the second one sooner.
    llm.push(anthropic_verdict("contradicted", QUOTE, delay=60.0), anthropic_verdict("supported", QUOTE))
    [verdict] = await asyncio.wait_for(make_judge(llm, retry=policy).judge([REQUEST]), 30)
    assert verdict.label == "supported"
    assert len(llm.received) == 2


async def test_bad_key_is_one_log_line_naming_the_variable(
    llm: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    llm.responder = lambda _r: error_reply(401, f"invalid x-api-key {KEY}", anthropic_shape=True)
    caplog.set_level(logging.DEBUG, logger="guardrail")
    verdicts = await make_judge(llm, concurrency=1).judge([REQUEST, REQUEST])
    assert verdicts == [judge_error(), judge_error()]
    assert len(llm.received) == 1
    ours = [r for r in caplog.records if r.name.startswith("guardrail")]
    assert len(ours) == 1 and "ANTHROPIC_API_KEY" in ours[0].getMessage()
    assert KEY not in caplog.text
    assert KEY not in repr(make_judge(llm))


async def test_concurrency_is_bounded(llm: FakeLLMServer) -> None:
    llm.responder = lambda _r: anthropic_verdict("supported", QUOTE, delay=0.15)
    llm.company = 2  # the bound is reached however slowly requests come; the delay lets more pile up
    verdicts = await make_judge(llm, concurrency=2).judge([REQUEST] * 6)
    assert [v.label for v in verdicts] == ["supported"] * 6
    # Each request sent once: a client that timed out and tried again would count its abandoned
    # request and the retry as two in flight, even one call at a time.
    assert len(llm.received) == 6
    assert llm.max_in_flight == 2


def test_from_settings_needs_the_key() -> None:
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        AnthropicJudge.from_settings(Settings())
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY") as info:
        build_judge(Settings.from_env({"GUARDRAIL_JUDGE": "anthropic", "ANTHROPIC_API_KEY": " "}))
    assert KEY not in str(info.value)


async def test_from_settings_reads_key_url_model_and_timeout(llm: FakeLLMServer) -> None:
    settings = Settings.from_env(
        {
            "GUARDRAIL_JUDGE": "anthropic",
            "ANTHROPIC_API_KEY": KEY,
            "ANTHROPIC_BASE_URL": llm.base,
            "GUARDRAIL_JUDGE_MODEL": "claude-test",
            "GUARDRAIL_JUDGE_TIMEOUT": "5",
        }
    )
    judge = build_judge(settings)
    assert isinstance(judge, AnthropicJudge)
    assert (judge.name, judge.model, judge.retry.attempt_timeout) == ("anthropic", "claude-test", 5.0)
    llm.push(anthropic_verdict("not_found", ""))
    assert (await judge.judge([REQUEST]))[0].label == "not_found"
    assert llm.received[0].body["model"] == "claude-test"
    assert AnthropicJudge.from_settings(Settings.from_env({"ANTHROPIC_API_KEY": KEY})).model


async def test_verifier_with_the_anthropic_judge(llm: FakeLLMServer) -> None:
    llm.responder = lambda _r: anthropic_verdict("supported", "pure water boils at 100 degrees Celsius", 0.9)
    verifier = Verifier(judge=make_judge(llm), embedder=HashEmbedder(), fetcher=static_pages(), settings=Settings())
    report = await verifier.averify(CLAIM, [GOOD_URL])
    assert report.overall == Label.supported
    assert report.citations[0].evidence_quote == "pure water boils at 100 degrees Celsius"
