"""The core streaming guard (guardrail.streaming): pieces in order, overlap of verification with
the arrival of text, held markers, blocking, the merged report, and the sync/async bridges.

Pages come from the loopback fixture server; the judge and embedder are the test doubles."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence

import pytest

from guardrail import (
    AnswerReport,
    AnswerStream,
    CitationBlocked,
    JudgeRequest,
    JudgeVerdict,
    Label,
    PageMemo,
    Policy,
    apply_policy,
    extract_claims,
    merge_reports,
    stream_cut,
)
from guardrail._bridges import aiter_from_sync, iterate_sync
from guardrail.testing import LoopbackSite, OverlapJudge, Route
from tests.fakes import fixture_verifier
from tests.fixtures.pages import TITANIC
from tests.fixtures.server import HeldPage
from tests.fixtures.tasks import innermost_code

WAITING_FOR_A_TURN = asyncio.Semaphore.acquire.__code__


@pytest.fixture
def slow_site() -> Iterator[tuple[LoopbackSite, HeldPage]]:
    """A page answered only once the test releases it (at most 20 s on)."""
    held = HeldPage(TITANIC, limit=20.0)
    site = LoopbackSite({"/slow-titanic": Route(handler=held)}).start()
    try:
        yield site, held
    finally:
        held.release.set()
        site.stop()


async def words(text: str, pause: float = 0.0) -> AsyncIterator[str]:
    """The answer as a model streams it: word by word."""
    parts = text.split(" ")
    for i, part in enumerate(parts):
        yield part + (" " if i < len(parts) - 1 else "")
        if pause:
            await asyncio.sleep(pause)


# -- stream_cut: what the streaming guard relies on ----------------------------------------------


def test_stream_cut_does_not_resolve_a_label_through_a_partial_reference_list() -> None:
    answer = "Water boils [1]. Ice melts.\n\n[1]: https://r.example/boil"
    for n in range(1, len(answer) + 1):
        # Verified alone, the chunk would lose the definition: hold until the stream ends.
        assert stream_cut(answer[:n]) == 0


def test_stream_cut_keeps_an_uncited_sentence_with_the_marker_that_covers_it() -> None:
    src = ["https://r.example/1"]
    # [7] resolves nowhere yet, so the marker's sentence is held; the uncited sentence before it
    # must be held with it, or it would be verified without the marker that covers it.
    answer = "Water boils at 100 degrees. It boils lower up high [7].\n\nNext paragraph here. More"
    assert stream_cut(answer, src) == 0
    answer = "Water boils at 100 degrees. It boils lower up high [1].\n\nNext paragraph here. More"
    assert answer[: stream_cut(answer, src)] == "Water boils at 100 degrees. It boils lower up high [1].\n\n"


# -- AnswerStream -------------------------------------------------------------------------------


async def test_pieces_concatenate_to_the_guarded_whole_answer(pages: LoopbackSite) -> None:
    u = pages.url
    answer = (
        f"Water boils at 100 degrees Celsius at sea level ({u('/boiling')}). "
        f"Water boils at 50 degrees Celsius at sea level ({u('/boiling')}). "
        f"Titanic was directed by James Cameron ({u('/gone-404')}).\n\n"
        f"Ice melts at 10 degrees Celsius ({u('/old-report')})."
    )
    verifier = fixture_verifier()
    stream = AnswerStream(verifier)
    pieces = [p async for p in stream.pieces(words(answer))]
    assert len(pieces) >= 3
    whole = apply_policy(await verifier.averify_answer(answer))
    assert "".join(p.text for p in pieces) == whole.text == stream.text
    assert "".join(p.original for p in pieces) == answer
    report = stream.report()
    assert report.answer == answer
    assert [(c.text, c.overall) for c in report.claims] == [(c.text, c.overall) for c in whole.report.claims]
    assert report.label_counts == whole.report.label_counts
    assert report.overall == Label.contradicted
    # Byte offsets refer to the whole answer.
    data = answer.encode()
    for claim in report.claims:
        assert data[claim.start : claim.end].decode() == claim.text
        for ref in claim.citations:
            assert data[ref.start : ref.end].decode() == ref.marker


async def test_first_sentence_is_emitted_before_a_later_slow_page_is_fetched(
    pages: LoopbackSite, slow_site: tuple[LoopbackSite, HeldPage]
) -> None:
    site, held = slow_site
    answer = (
        f"Water boils at 100 degrees Celsius at sea level ({pages.url('/boiling')}). "
        f"Titanic was directed by James Cameron ({site.url('/slow-titanic')}). "
        "That is all."
    )
    stream = AnswerStream(fixture_verifier())
    seen: list[tuple[bool, str]] = []
    async for piece in stream.pieces(words(answer)):
        # The held page answers once the first piece is out: emitted while the second sentence
        # was still being verified (a stream waiting for it would see it answered at its limit).
        seen.append((held.answered.is_set(), piece.text))
        held.release.set()
    assert len(seen) >= 2
    assert seen[0] == (False, seen[0][1]) and seen[0][1].startswith("Water boils at 100")
    assert held.answered.is_set(), "the slow page was fetched"
    assert stream.report().claims[1].overall == Label.supported


async def test_verification_overlaps_the_arrival_of_later_text(pages: LoopbackSite) -> None:
    answer = f"Water boils at 100 degrees Celsius at sea level ({pages.url('/boiling')}). " + " ".join(
        ["More words keep coming"] * 4
    )
    stream = AnswerStream(fixture_verifier())
    first_out = asyncio.Event()
    waited_for_it: list[bool] = []

    async def text() -> AsyncIterator[str]:
        # The first sentence and a few words more, then the rest only once the first piece is out
        # (at most 20 s on).
        async for word in words(answer):
            yield word
            if word == "keep " and not waited_for_it:  # a few words into the second sentence
                try:
                    await asyncio.wait_for(first_out.wait(), 20)
                    waited_for_it.append(True)
                except TimeoutError:
                    waited_for_it.append(False)

    pieces = []
    async for piece in stream.pieces(text()):
        pieces.append(piece)
        first_out.set()
    assert waited_for_it == [True]  # the first sentence was out before the rest of the text came
    assert "".join(p.original for p in pieces) == answer


async def test_numbered_markers_are_held_until_the_reference_list_arrives(pages: LoopbackSite) -> None:
    u = pages.url
    answer = (
        "Water boils at 100 degrees Celsius at sea level [1]. "
        "Water boils at 50 degrees Celsius at sea level [1].\n\n"
        f"[1]: {u('/boiling')}\n"
    )
    stream = AnswerStream(fixture_verifier())
    pieces = [p async for p in stream.pieces(words(answer))]
    assert len(pieces) == 1  # nothing could be decided before the definition came
    report = stream.report()
    assert [c.overall for c in report.claims] == [Label.supported, Label.contradicted]
    assert all(v.reason != "unresolved_citation" for c in report.claims for v in c.verdicts)


async def test_numbered_markers_stream_when_sources_resolve_them(pages: LoopbackSite) -> None:
    answer = (
        "Water boils at 100 degrees Celsius at sea level [1]. "
        "In Denver water boils at roughly 95 degrees Celsius [1]. "
        "Titanic was directed by James Cameron [2]."
    )
    stream = AnswerStream(fixture_verifier(), [pages.url("/boiling"), pages.url("/titanic")])
    pieces = [p async for p in stream.pieces(words(answer))]
    assert len(pieces) == 3
    assert [c.overall for c in stream.report().claims] == [Label.supported] * 3


async def test_a_block_stops_the_stream_with_the_block_message(pages: LoopbackSite) -> None:
    u = pages.url
    answer = (
        f"Water boils at 100 degrees Celsius at sea level ({u('/boiling')}). "
        f"Water boils at 50 degrees Celsius at sea level ({u('/boiling')}). "
        f"Titanic was directed by James Cameron ({u('/titanic')}). "
        "The end."
    )
    policy = Policy.strict(block_message="Withheld.")
    stream = AnswerStream(fixture_verifier(), policy=policy)
    pieces = [p async for p in stream.pieces(words(answer))]
    assert [p.blocked for p in pieces] == [False, True]
    assert pieces[0].text.startswith("Water boils at 100")
    assert pieces[-1].text == "\n\nWithheld."
    assert stream.blocked
    report = stream.report()
    assert [c.overall for c in report.claims] == [Label.supported, Label.contradicted]
    assert "Titanic" not in report.answer  # nothing after the blocking piece was reported


async def test_raise_on_block_raises_with_the_report_so_far(pages: LoopbackSite) -> None:
    answer = f"Water boils at 50 degrees Celsius at sea level ({pages.url('/boiling')}). More text follows."
    stream = AnswerStream(fixture_verifier(), policy=Policy.strict(raise_on_block=True))
    got: list[str] = []
    with pytest.raises(CitationBlocked) as info:
        async for piece in stream.pieces(words(answer)):
            got.append(piece.text)
    assert got == []
    assert info.value.report.claims[0].overall == Label.contradicted


async def test_sources_back_an_unmarked_answer_piece_by_piece(pages: LoopbackSite) -> None:
    answer = "Water boils at 100 degrees Celsius at sea level.\n\nWater boils at 50 degrees Celsius at sea level."
    stream = AnswerStream(fixture_verifier(), [pages.url("/boiling")])
    pieces = [p async for p in stream.pieces(words(answer))]
    assert len(pieces) == 2
    assert [c.overall for c in stream.report().claims] == [Label.supported, Label.contradicted]


async def test_bad_chunks_raise_a_clear_error() -> None:
    async def chunks() -> AsyncIterator[object]:
        yield "Water boils. "
        yield 42

    stream = AnswerStream(fixture_verifier())
    with pytest.raises(TypeError, match="chunks must be strings, not int"):
        async for _ in stream.pieces(chunks()):  # type: ignore[arg-type]
            pass
    with pytest.raises(RuntimeError, match="one answer"):
        async for _ in stream.pieces(words("x")):
            pass


async def test_closing_early_cancels_outstanding_work(slow_site: tuple[LoopbackSite, HeldPage]) -> None:
    site, held = slow_site
    answer = f"Titanic was directed by James Cameron ({site.url('/slow-titanic')}). Next sentence here."
    stream = AnswerStream(fixture_verifier())
    agen = stream.pieces(words(answer))
    task = asyncio.ensure_future(agen.__anext__())
    assert await asyncio.to_thread(held.arrived.wait, 20)  # the page is being fetched
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await agen.aclose()
    assert stream.text == ""


class QueueJudge:
    """An in-process judge stand-in (``cpu_bound``) whose calls each wait (up to 10 s) until
    ``ready(judge)`` holds, noting whether it did, and which records how many calls ran at once."""

    name = "local"
    model = "queue-test-judge"
    cpu_bound = True

    def load(self) -> None:
        """Nothing to load."""

    def __init__(self, ready: Callable[[QueueJudge], bool]) -> None:
        self.ready = ready
        self.running = 0
        self.most = 0
        self.held: list[bool] = []
        self.inner = OverlapJudge()

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while not (held := self.ready(self)) and loop.time() < deadline:
                await asyncio.sleep(0.005)
            self.held.append(held)
            return await self.inner.judge(requests)
        finally:
            self.running -= 1


@pytest.fixture
def slow_pages() -> Iterator[LoopbackSite]:
    site = LoopbackSite({f"/slow-{i}": Route(body=TITANIC) for i in range(3)}).start()
    try:
        yield site
    finally:
        site.stop()


def three_sentences(site: LoopbackSite) -> str:
    return " ".join(f"Titanic was directed by James Cameron ({site.url(f'/slow-{i}')})." for i in range(3)) + " Done."


@pytest.mark.parametrize(("concurrency", "expect_most"), [(None, 1), (0, 3)])
async def test_an_in_process_judge_judges_one_piece_at_a_time_while_pages_prefetch(
    slow_pages: LoopbackSite, concurrency: int | None, expect_most: int
) -> None:
    seen: list[bool] = []

    def ready(judge: QueueJudge) -> bool:
        # Every page is fetched as its piece is released, not after the previous piece's judging:
        # the first judging waits for all three requests. Unbounded, the calls also wait for each
        # other (three at once); one at a time, the first waits until the other two pieces wait
        # for their turn (or, were there no turns, are in the judge too).
        if not seen:
            fetched = all(slow_pages.hits.get(f"/slow-{i}") for i in range(3))
            if expect_most > 1:
                company = judge.most >= expect_most
            else:
                queued = sum(innermost_code(t) is WAITING_FOR_A_TURN for t in asyncio.all_tasks())
                company = queued >= 2 or judge.most > 1
            if fetched and company:
                seen.append(True)
        return bool(seen)

    judge = QueueJudge(ready)
    verifier = fixture_verifier(judge)
    stream = AnswerStream(verifier, concurrency=concurrency)
    pieces = [p async for p in stream.pieces(words(three_sentences(slow_pages)))]
    assert len(pieces) == 4
    assert judge.held == [True] * 3 and judge.most == expect_most, (judge.held, judge.most, dict(slow_pages.hits))
    assert [c.overall for c in stream.report().claims[:3]] == [Label.supported] * 3


async def test_aprefetch_fills_the_memo_once(pages: LoopbackSite) -> None:
    verifier = fixture_verifier()
    memo = PageMemo()
    before = pages.hits.get("/tomatoes", 0)
    await verifier.aprefetch([pages.url("/tomatoes"), " " + pages.url("/tomatoes"), ""], memo)
    assert list(memo.tasks) == [pages.url("/tomatoes")]
    await verifier.averify_answer(f"Tomatoes need six hours of sun ({pages.url('/tomatoes')}).", memo=memo)
    assert pages.hits["/tomatoes"] - before == 1


def test_merge_reports_shifts_offsets() -> None:
    a = "Water boils [1]. "
    b = "Ice melts (https://r.example/ice).\n\n[2]: https://r.example/2\n"
    merged = merge_reports([(0, _report(a)), (len(a.encode()), _report(b))])
    assert merged.answer == a + b
    data = merged.answer.encode()
    assert [data[c.start : c.end].decode() for c in merged.claims] == [
        "Water boils [1].",
        "Ice melts (https://r.example/ice).",
    ]
    refs = [r for c in merged.claims for r in c.citations]
    assert (
        [data[r.start : r.end].decode() for r in refs] == [r.marker for r in refs] == ["[1]", "https://r.example/ice"]
    )
    assert [data[r.start : r.end].decode() for r in merged.references] == ["[2]: https://r.example/2\n"]


def _report(text: str) -> AnswerReport:
    ex = extract_claims(text, ["https://r.example/1"])
    return AnswerReport(answer=text, claims=ex.claims, references=ex.references, sources=ex.sources)


# -- sync / async bridges -----------------------------------------------------------------------

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


def test_iterate_sync_yields_as_items_come_and_keeps_context() -> None:
    VAR.set("caller")

    received = [threading.Event() for _ in range(3)]
    handed_over: list[bool] = []

    async def gen() -> AsyncIterator[tuple[str, int]]:
        for n in range(3):
            yield VAR.get(), n
            # Handed over as made: the caller has item n before item n + 1 is made (at most 10 s on).
            handed_over.append(await asyncio.to_thread(received[n].wait, 10))

    got = []
    for value, n in iterate_sync(gen):
        got.append(value)
        received[n].set()
    assert got == ["caller"] * 3
    assert handed_over == [True] * 3


async def test_iterate_sync_works_inside_a_running_loop_and_raises_errors() -> None:
    async def gen() -> AsyncIterator[int]:
        yield 1
        raise ValueError("boom")

    out: list[int] = []
    with pytest.raises(ValueError, match="boom"):
        out.extend(iterate_sync(gen))
    assert out == [1]


def test_closing_iterate_sync_early_cancels_the_async_side() -> None:
    cancelled = threading.Event()

    async def gen() -> AsyncIterator[int]:
        try:
            yield 1
            await asyncio.sleep(30)
            yield 2
        except asyncio.CancelledError:
            cancelled.set()
            raise

    it = iterate_sync(gen)
    assert next(it) == 1
    start = time.perf_counter()
    it.close()
    assert cancelled.is_set()
    assert time.perf_counter() - start < 20  # not the 30 s the generator sleeps


async def test_aiter_from_sync_does_not_block_the_loop() -> None:
    ticked = threading.Event()
    loop_turned: list[bool] = []

    def slow() -> Iterator[int]:
        for i in range(3):
            ticked.clear()
            # Each item is made while the loop turns (at most 10 s on): on the loop's thread the
            # ticker could not run until the item was made.
            loop_turned.append(ticked.wait(10))
            yield i

    async def ticker() -> None:
        while True:
            await asyncio.sleep(0.001)
            ticked.set()

    t = asyncio.create_task(ticker())
    got = [i async for i in aiter_from_sync(slow())]
    t.cancel()
    assert got == [0, 1, 2]
    assert loop_turned == [True] * 3
