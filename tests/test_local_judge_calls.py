"""The embedded judge's calls: those made while one runs are judged together, one pass at a time."""

from __future__ import annotations

import asyncio
import gc
import pickle
import threading
import weakref
from collections.abc import Sequence

import pytest

from guardrail import JudgeRequest
from guardrail.core.schema import JudgeVerdict
from guardrail.judges.local import LocalJudge


class EchoJudge(LocalJudge):
    """A LocalJudge whose blocking pass records what it was given and answers each request with
    its claim (no model is loaded)."""

    def __init__(self) -> None:
        super().__init__()
        self.passes: list[list[str]] = []

    def judge_sync(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        self.passes.append([r.claim for r in requests])
        if any(r.claim == "bad" for r in requests):
            raise ValueError("a request this judge cannot read")
        return [JudgeVerdict(label="not_found", confidence=0.0, detail=r.claim) for r in requests]


class HeldJudge(EchoJudge):
    """An EchoJudge whose first pass waits for ``release`` before it records its requests."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.release = threading.Event()

    def judge_sync(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        if not self.started.is_set():
            self.started.set()
            assert self.release.wait(10), "the test never released the first pass"
        return super().judge_sync(requests)


def request(claim: str) -> JudgeRequest:
    return JudgeRequest(claim=claim, passages=["Some text."])


async def test_calls_made_while_one_runs_are_judged_together_in_one_pass() -> None:
    judge = HeldJudge()
    first = asyncio.create_task(judge.judge([request("a")]))
    assert await asyncio.to_thread(judge.started.wait, 10)
    later = [asyncio.create_task(judge.judge([request(c), request(c + "2")])) for c in "bcd"]
    await asyncio.sleep(0.05)  # every later call is queued behind the running pass
    assert judge.passes == []  # nothing else runs beside the held pass
    judge.release.set()
    answers = await asyncio.gather(first, *later)
    assert judge.passes == [["a"], ["b", "b2", "c", "c2", "d", "d2"]]  # one pass for the three calls
    assert [[v.detail for v in verdicts] for verdicts in answers] == [["a"], ["b", "b2"], ["c", "c2"], ["d", "d2"]]


async def test_a_lone_call_is_judged_at_once() -> None:
    judge = HeldJudge()
    judge.release.set()
    verdicts = await asyncio.wait_for(judge.judge([request("a")]), 10)
    assert [v.detail for v in verdicts] == ["a"] and judge.passes == [["a"]]


async def test_a_used_judge_pickles_and_judges_again() -> None:
    judge = EchoJudge()
    await judge.judge([request("a")])  # its queue of calls now holds this event loop
    loaded = pickle.loads(pickle.dumps(judge))
    assert [v.detail for v in await loaded.judge([request("b")])] == ["b"]
    assert loaded.passes == [["a"], ["b"]] and loaded.config == judge.config


async def test_a_failing_request_fails_only_its_own_caller() -> None:
    judge = HeldJudge()
    first = asyncio.create_task(judge.judge([request("a")]))
    assert await asyncio.to_thread(judge.started.wait, 10)
    later = [asyncio.create_task(judge.judge([request(c)])) for c in ("b", "bad", "c")]
    await asyncio.sleep(0.05)
    judge.release.set()
    answers = await asyncio.gather(first, *later, return_exceptions=True)
    assert [v.detail for v in answers[1]] == ["b"] and [v.detail for v in answers[3]] == ["c"]  # type: ignore[union-attr]
    assert isinstance(answers[2], ValueError)
    assert judge.passes == [["a"], ["b", "bad", "c"], ["b"], ["bad"], ["c"]]  # merged, then each caller alone


def test_sync_calls_leave_no_event_loop_behind() -> None:
    judge = EchoJudge()
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def call(claim: str) -> list[JudgeVerdict]:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        return await judge.judge([request(claim)])

    for claim in "abc":  # as Verifier.verify does: a new event loop per call
        assert [v.detail for v in asyncio.run(call(claim))] == [claim]
    gc.collect()
    assert [ref() for ref in loops] == [None, None, None]


def test_a_judge_pickled_before_its_queue_existed_still_judges() -> None:
    judge = EchoJudge()
    state = judge.__getstate__()
    old = EchoJudge.__new__(EchoJudge)
    old.__setstate__(state)
    assert [v.detail for v in asyncio.run(old.judge([request("a")]))] == ["a"]
    with pytest.raises(ValueError, match="cannot read"):
        asyncio.run(old.judge([request("bad")]))


async def test_callers_are_not_left_waiting_when_the_queue_stops() -> None:
    judge = HeldJudge()
    first = asyncio.create_task(judge.judge([request("a")]))
    assert await asyncio.to_thread(judge.started.wait, 10)
    waiting = asyncio.create_task(judge.judge([request("b")]))
    await asyncio.sleep(0.05)
    workers = [t for t in asyncio.all_tasks() if t not in (first, waiting, asyncio.current_task())]
    for worker in workers:  # what a closing event loop does to the queue's worker
        worker.cancel()
    judge.release.set()
    done, _ = await asyncio.wait([first, waiting], timeout=10)
    assert {first, waiting} == done and first.cancelled() and waiting.cancelled()
