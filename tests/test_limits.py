"""Work limits and clear input errors in the Python API: sizes and counts refused before any work,
text that is not valid Unicode refused naming its field, CPU work kept off the event loop and
stopped when its caller is cancelled."""

from __future__ import annotations

import asyncio
import threading

import pytest

from guardrail import Fact, Settings, Verifier, check_grounding
from guardrail._bridges import CpuGate
from guardrail.core.extract import extract_claims
from guardrail.limits import RequestLimitError
from guardrail.settings import ConfigurationError
from guardrail.streaming import AnswerStream
from guardrail.testing import HashEmbedder, OverlapJudge, StaticFetcher
from guardrail.verifier import JUDGE_CHUNK, ClaimTask
from tests.fakes import GOOD_URL, SlowCpuJudge, static_pages
from tests.fixtures.tasks import innermost_code, running_frame, until

CLAIM = "Water boils at 100 degrees Celsius at sea level."


def verifier(fetcher: StaticFetcher | None = None, **settings: object) -> Verifier:
    return Verifier(
        judge=OverlapJudge(),
        embedder=HashEmbedder(),
        fetcher=fetcher or static_pages(),
        settings=Settings(cache_path="off", audit_path="off", **settings),  # type: ignore[arg-type]
    )


# -- limits --------------------------------------------------------------------------------------


def test_each_limit_is_refused_before_anything_is_fetched() -> None:
    fetcher = static_pages()
    v = verifier(fetcher, max_answer_chars=50, max_claims=2, max_urls=3, max_checks=4)
    cases = [
        (lambda: v.verify_answer("word " * 11), "max_answer_chars", "GUARDRAIL_MAX_ANSWER_CHARS", "55 characters"),
        (lambda: v.verify("x" * 51, [GOOD_URL]), "max_answer_chars", "GUARDRAIL_MAX_ANSWER_CHARS", "claim has 51"),
        (
            lambda: v.verify(CLAIM, [f"https://e.org/{i}" for i in range(4)]),
            "max_urls",
            "GUARDRAIL_MAX_URLS",
            "4 unique",
        ),
        (
            lambda: v.verify_many([ClaimTask(claim=CLAIM, evidence=[GOOD_URL])] * 3),
            "max_claims",
            "GUARDRAIL_MAX_CLAIMS",
            "3 claims",
        ),
        (
            lambda: v.verify_many([ClaimTask(claim=CLAIM, evidence=[Fact(str(i)) for i in range(3)])] * 2),
            "max_checks",
            "GUARDRAIL_MAX_CHECKS",
            "6 (claim, source) pairs",
        ),
        (
            lambda: v.verify_answer("Ice is cold. Fire is hot.", [f"https://e.org/{i}" for i in range(3)]),
            "max_checks",
            "GUARDRAIL_MAX_CHECKS",
            "pairs",
        ),
    ]
    for call, limit, variable, text in cases:
        with pytest.raises(RequestLimitError) as caught:
            call()
        assert (caught.value.limit, caught.value.variable) == (limit, variable)
        assert variable in str(caught.value) and text in str(caught.value)
        assert caught.value.too_large == (limit == "max_answer_chars")
    assert fetcher.calls == []  # nothing was fetched for any of them


def test_an_answer_citing_more_urls_than_allowed_is_refused_before_fetching() -> None:
    fetcher = static_pages()
    answer = " ".join(f"Claim number {i} holds [{i}](https://e.org/{i})." for i in range(4))
    with pytest.raises(RequestLimitError, match=r"4 unique URLs.*GUARDRAIL_MAX_URLS"):
        verifier(fetcher, max_urls=3).verify_answer(answer)
    assert fetcher.calls == []
    answer = "See https://e.org/1 and https://e.org/2 and https://e.org/3 and https://e.org/4 for details."
    with pytest.raises(RequestLimitError, match="GUARDRAIL_MAX_URLS"):  # links of sentences that assert nothing
        verifier(fetcher, max_urls=3).verify_answer(answer)
    assert fetcher.calls == []


def test_within_the_limits_nothing_changes() -> None:
    v = verifier(max_answer_chars=len(CLAIM), max_claims=1, max_urls=1, max_checks=1)
    assert v.verify(CLAIM, [GOOD_URL]).overall == "supported"
    v = verifier(max_claims=1, max_checks=4)
    texts = v.verify_texts([(f"{CLAIM} {CLAIM}", GOOD_URL)] * 2)  # sentences of texts are not claims
    assert [t.label for t in texts] == ["supported", "supported"]


def test_limits_are_settings_read_from_the_environment() -> None:
    settings = Settings.from_env({"GUARDRAIL_MAX_CLAIMS": "7", "GUARDRAIL_REQUEST_TIMEOUT": "2.5"})
    assert (settings.max_claims, settings.request_timeout) == (7, 2.5)
    defaults = Settings.from_env({})
    assert (defaults.max_answer_chars, defaults.max_claims, defaults.max_urls, defaults.max_checks) == (
        20_000,
        200,
        100,
        3200,
    )
    with pytest.raises(ConfigurationError, match="GUARDRAIL_MAX_URLS"):
        Settings.from_env({"GUARDRAIL_MAX_URLS": "0"})


def test_settings_name_every_variable_they_read_and_tests_read_none_of_the_developers() -> None:
    import os

    names = Settings.variables()
    assert {"GUARDRAIL_JUDGE_ROUNDS", "GUARDRAIL_TOP_K", "OPENAI_API_KEY", "CRAWLBASE_JS_TOKEN"} <= set(names)
    assert len(names) == len(Settings.model_fields)
    # conftest clears them all; only the two it sets itself (no page cache, no audit store) remain.
    assert sorted(v for v in names if v in os.environ) == ["GUARDRAIL_AUDIT_DB", "GUARDRAIL_CACHE"]


def test_a_blank_api_key_is_refused_naming_the_variable() -> None:
    for env in ({"GUARDRAIL_API_KEY": "   "}, {"GUARDRAIL_API_KEY": ""}):
        with pytest.raises(ConfigurationError, match=r"GUARDRAIL_API_KEY.*blank"):
            Settings.from_env(env)
    with pytest.raises(ValueError, match="blank"):
        Settings(api_key=" \t")  # type: ignore[arg-type]
    key = Settings.from_env({"GUARDRAIL_API_KEY": " token "}).api_key
    assert key is not None and key.get_secret_value() == "token"
    assert Settings.from_env({"GUARDRAIL_JUDGE": "  "}).judge is None  # other blanks still mean unset


# -- input that cannot be verified -----------------------------------------------------------------


def test_a_single_url_string_is_a_type_error_not_one_url_per_character() -> None:
    fetcher = static_pages()
    with pytest.raises(TypeError, match="urls must be a list"):
        verifier(fetcher).verify(CLAIM, GOOD_URL)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a single string"):
        verifier(fetcher).verify_many([ClaimTask(claim=CLAIM, evidence=GOOD_URL)])
    assert fetcher.calls == []


def test_lone_surrogates_are_value_errors_naming_the_field() -> None:
    v = verifier()
    bad = "Water boils \ud800 at 100 degrees."
    cases = [
        (lambda: v.verify(bad, [GOOD_URL]), "claim"),
        (lambda: v.verify(CLAIM, [GOOD_URL + "\udfff"]), "evidence[0]"),
        (lambda: v.verify_answer(bad), "answer"),
        (lambda: v.verify_answer("Water boils [1].", [{"url": GOOD_URL, "title": "\udc00"}]), "sources[0].title"),
        (lambda: v.verify_answer("Water boils [1].", [{"text": "hot \ud83d"}]), "sources[0].text"),
        (lambda: v.verify_many([ClaimTask(claim=CLAIM, evidence=[Fact("x\ud800")])]), "evidence[0].text"),
        (lambda: v.verify_texts([(bad, GOOD_URL)]), "items[0] text"),
        (lambda: check_grounding(bad, ["Water boils at 100 degrees."], verifier=v), "answerCandidate"),
        (lambda: check_grounding(CLAIM, ["ok", "\ud800"], verifier=v), "facts[1].factText"),
        (lambda: check_grounding(CLAIM, [{"factText": "ok", "attributes": {"a": "\ud800"}}], verifier=v), "attributes"),
    ]
    for call, field in cases:
        with pytest.raises(ValueError, match="lone surrogate") as caught:
            call()
        assert not isinstance(caught.value, UnicodeError)
        assert field in str(caught.value)


async def test_a_streamed_chunk_with_a_lone_surrogate_is_a_value_error() -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        yield "Water boils. "
        yield "Ice \ud800 melts."

    with pytest.raises(ValueError, match="answer chunk holds a lone surrogate"):
        async for _ in AnswerStream(verifier()).pieces(chunks()):
            pass


# -- CPU work off the loop, and stopped when its caller is gone ---------------------------------------


WAITING_FOR_A_SLOT = asyncio.Semaphore.acquire.__code__


async def test_cpu_gate_bounds_threads_and_drops_work_whose_caller_left() -> None:
    gate = CpuGate(limit=1)
    started: list[int] = []
    release = threading.Event()

    def work(n: int) -> int:
        started.append(n)
        release.wait(5)
        return n

    first = asyncio.create_task(gate.run(work, 1))
    queued = asyncio.create_task(gate.run(work, 2))
    await until(lambda: started == [1], "the first call runs")
    await until(lambda: innermost_code(queued) is WAITING_FOR_A_SLOT, "the second waits for the slot")
    assert started == [1]
    first.cancel()
    queued.cancel()
    await asyncio.gather(first, queued, return_exceptions=True)
    third = asyncio.create_task(gate.run(work, 3))
    # The first still runs in its thread: its slot is not free yet.
    await until(lambda: innermost_code(third) is WAITING_FOR_A_SLOT, "the third waits for the slot")
    assert started == [1]
    release.set()
    assert await asyncio.wait_for(third, 5) == 3
    assert started == [1, 3]  # the cancelled queued call never ran


@pytest.mark.usefixtures("settled_heap")
async def test_the_loop_keeps_running_while_an_answer_is_extracted() -> None:
    v = verifier(max_answer_chars=600_000, max_claims=10_000)
    answer = "Water boils at 100 degrees Celsius at sea level. " * 10_000  # about a second on 2 idle cores
    ticks_during_extraction = 0

    async def ticker() -> None:
        # A tick runs on the loop's thread. Seeing extract_claims on some thread's stack from here
        # means it runs elsewhere while the loop turns: on the loop it could only be seen from
        # the loop's own thread, where it would never be suspended to let the tick run.
        nonlocal ticks_during_extraction
        while True:
            await asyncio.sleep(0.001)
            if running_frame(extract_claims.__code__) is not None:
                ticks_during_extraction += 1

    tick = asyncio.create_task(ticker())
    report = await v.averify_answer(answer)
    tick.cancel()
    assert len(report.claims) == 10_000
    assert ticks_during_extraction >= 1


async def test_a_cancelled_call_stops_judging_after_the_chunk_in_progress() -> None:
    judge = SlowCpuJudge(0.2)
    v = Verifier(judge=judge, embedder=HashEmbedder(), fetcher=static_pages(), settings=Settings(cache_path="off"))  # type: ignore[arg-type]
    tasks = [
        ClaimTask(claim=f"Water boils at {n} degrees.", evidence=[Fact(f"Water boils at {n} degrees.")])
        for n in range(3 * JUDGE_CHUNK)
    ]
    call = asyncio.create_task(v.averify_many(tasks))
    while not judge.started:  # the first chunk is in a worker thread, past taking back
        await asyncio.sleep(0.01)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await until(lambda: judge.finished == 1, "the chunk in progress ends")
    # Uncancelled, the same call judges every chunk. Were the cancelled call judging on, its next
    # chunks (claims 32 to 95) would come in among these two: the calls are checked claim by claim.
    reports = await v.averify_many(tasks[: JUDGE_CHUNK + 1])
    asked = [[r.claim for r in c] for c in judge.calls]
    assert asked == [
        [t.claim for t in tasks[:JUDGE_CHUNK]],
        [t.claim for t in tasks[:JUDGE_CHUNK]],
        [tasks[JUDGE_CHUNK].claim],
    ]
    assert judge.finished == 3 and len(reports) == JUDGE_CHUNK + 1


def test_the_integrations_raise_a_value_error_naming_the_field() -> None:
    from llama_index.core.schema import NodeWithScore, TextNode

    from guardrail_langchain import CitationGuard
    from guardrail_llamaindex import CitationGuardPostprocessor

    v = verifier()
    with pytest.raises(ValueError, match="answer holds a lone surrogate"):
        CitationGuard(verifier=v).invoke(f"Water \ud800 boils [1]({GOOD_URL}).")
    node = NodeWithScore(
        node=TextNode(text="Water \ud800 boils at 100 degrees.", metadata={"url": GOOD_URL}), score=1.0
    )
    with pytest.raises(ValueError, match=r"items\[0\] text holds a lone surrogate"):
        CitationGuardPostprocessor(v).postprocess_nodes([node])
