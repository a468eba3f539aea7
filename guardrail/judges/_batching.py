"""Concurrent callers' requests judged together, one call at a time: :class:`CallQueue`, and
:class:`BatchingJudge`, any judge behind one."""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from guardrail.core.schema import JudgeRequest, JudgeVerdict
from guardrail.judges.base import Judge

__all__ = ["BatchingJudge", "CallQueue"]


class CallQueue:
    """Concurrent callers' requests handed to ``run`` one call at a time: requests that arrive while
    a call runs wait, and every waiting caller's go together into the next call, up to
    ``max_requests`` (one caller's requests are never split). A lone caller's run starts at once.
    A caller that went away before its turn is not judged. A call that fails with several callers
    in it is made again for each of them alone: only the callers whose requests fail get the
    error. Queues are kept per event loop, and dropped when the loop's last caller is answered."""

    def __init__(
        self,
        run: Callable[[list[JudgeRequest]], Awaitable[list[JudgeVerdict]]],
        *,
        max_requests: int = 32,
    ) -> None:
        if max_requests < 1:
            raise ValueError("max_requests must be at least 1")
        self.run = run
        self.max_requests = max_requests
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _JudgeQueue] = weakref.WeakKeyDictionary()

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """Queue ``requests`` for the next call and wait for their verdicts, in order."""
        if not requests:
            return []
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _JudgeQueue()
        future: asyncio.Future[list[JudgeVerdict]] = loop.create_future()
        queue.pending.append((list(requests), future))
        if queue.worker is None or queue.worker.done():
            queue.worker = loop.create_task(self._drain(loop, queue))
        return await future

    async def _drain(self, loop: asyncio.AbstractEventLoop, queue: _JudgeQueue) -> None:
        batch: list[tuple[list[JudgeRequest], asyncio.Future[list[JudgeVerdict]]]] = []
        try:
            while queue.pending:
                batch = []
                size = 0
                while queue.pending and (not batch or size + len(queue.pending[0][0]) <= self.max_requests):
                    item = queue.pending.popleft()
                    if item[1].done():  # its caller went away
                        continue
                    batch.append(item)
                    size += len(item[0])
                if batch:
                    await self._judge_batch(batch)
        finally:
            # The queue goes with its last caller: it holds its loop (the worker task's), and a
            # loop per sync call (anyio.run) would otherwise be kept for as long as the judge lives.
            queue.worker = None
            for _, future in [*batch, *queue.pending]:
                future.cancel()  # a no-op unless the worker itself was cancelled (its loop is closing)
            queue.pending.clear()
            if self._queues.get(loop) is queue:
                del self._queues[loop]

    async def _judge_batch(self, batch: list[tuple[list[JudgeRequest], asyncio.Future[list[JudgeVerdict]]]]) -> None:
        """Judge the callers of ``batch`` in one call; when it fails and holds several callers, each
        caller's requests again on their own, so that one caller's bad request fails only that caller."""
        flat = [r for requests, _ in batch for r in requests]
        try:
            verdicts = await self._checked_run(flat)
        except Exception as exc:
            if len(batch) == 1:
                if not batch[0][1].done():
                    batch[0][1].set_exception(exc)
                return
            for requests, future in batch:
                if future.done():
                    continue
                try:
                    own = await self._checked_run(requests)
                except Exception as own_exc:
                    if not future.done():
                        future.set_exception(own_exc)
                else:
                    if not future.done():
                        future.set_result(own)
            return
        start = 0
        for requests, future in batch:
            if not future.done():
                future.set_result(verdicts[start : start + len(requests)])
            start += len(requests)

    async def _checked_run(self, requests: list[JudgeRequest]) -> list[JudgeVerdict]:
        verdicts = await self.run(requests)
        if len(verdicts) != len(requests):
            raise RuntimeError(f"judge returned {len(verdicts)} verdicts for {len(requests)} requests")
        return verdicts


class BatchingJudge:
    """A :class:`~guardrail.judges.base.Judge` that runs one inner ``judge()`` call at a time and
    hands it every request that arrived meanwhile, from all concurrent HTTP requests together
    (a :class:`CallQueue` over the inner judge).

    The embedded judge already uses every core for one call; several calls at once only fight
    over the cores (and pad separately), while one larger call keeps the batches full. A lone
    request is judged at once, with no added wait. One inner call takes at most ``max_requests``
    requests (about 400 pairs for the embedded judge), so that the first callers of a burst are
    answered before the last are judged.
    """

    def __init__(self, inner: Judge, *, max_requests: int = 32) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.model: str = inner.model
        self.cpu_bound: bool = inner.cpu_bound
        self._calls = CallQueue(inner.judge, max_requests=max_requests)

    @property
    def max_requests(self) -> int:
        """The most requests one inner call takes (one caller's are never split)."""
        return self._calls.max_requests

    def load(self) -> None:
        """Load the inner judge's model now."""
        self.inner.load()

    def __repr__(self) -> str:
        return f"BatchingJudge({self.inner!r})"

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """Queue ``requests`` for the next inner call and wait for their verdicts, in order."""
        return await self._calls.judge(requests)


@dataclass
class _JudgeQueue:
    pending: deque[tuple[list[JudgeRequest], asyncio.Future[list[JudgeVerdict]]]] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None
