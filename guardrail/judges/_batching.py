"""BatchingJudge: concurrent callers' requests judged together, one inner call at a time."""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from guardrail.core.schema import JudgeRequest, JudgeVerdict
from guardrail.judges.base import Judge

__all__ = ["BatchingJudge"]


class BatchingJudge:
    """A :class:`~guardrail.judges.base.Judge` that runs one inner ``judge()`` call at a time and
    hands it every request that arrived meanwhile, from all concurrent HTTP requests together.

    The embedded judge already uses every core for one call; several calls at once only fight
    over the cores (and pad separately), while one larger call keeps the batches full. A lone
    request is judged at once, with no added wait. One inner call takes at most ``max_requests``
    requests (about 400 pairs for the embedded judge), so that the first callers of a burst are
    answered before the last are judged.
    """

    def __init__(self, inner: Judge, *, max_requests: int = 32) -> None:
        if max_requests < 1:
            raise ValueError("max_requests must be at least 1")
        self.inner = inner
        self.name: str = inner.name
        self.model: str = inner.model
        self.cpu_bound: bool = inner.cpu_bound
        self.max_requests = max_requests
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _JudgeQueue] = weakref.WeakKeyDictionary()

    def load(self) -> None:
        """Load the inner judge's model now."""
        self.inner.load()

    def __repr__(self) -> str:
        return f"BatchingJudge({self.inner!r})"

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """Queue ``requests`` for the next inner call and wait for their verdicts, in order."""
        if not requests:
            return []
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _JudgeQueue()
        future: asyncio.Future[list[JudgeVerdict]] = loop.create_future()
        queue.pending.append((list(requests), future))
        if queue.worker is None or queue.worker.done():
            queue.worker = loop.create_task(self._drain(queue))
        return await future

    async def _drain(self, queue: _JudgeQueue) -> None:
        while queue.pending:
            batch: list[tuple[list[JudgeRequest], asyncio.Future[list[JudgeVerdict]]]] = []
            size = 0
            while queue.pending and (not batch or size + len(queue.pending[0][0]) <= self.max_requests):
                item = queue.pending.popleft()
                if item[1].done():  # its caller went away
                    continue
                batch.append(item)
                size += len(item[0])
            if not batch:
                continue
            flat = [r for requests, _ in batch for r in requests]
            try:
                verdicts = await self.inner.judge(flat)
                if len(verdicts) != len(flat):
                    raise RuntimeError(f"judge returned {len(verdicts)} verdicts for {len(flat)} requests")
            except Exception as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            start = 0
            for requests, future in batch:
                if not future.done():
                    future.set_result(verdicts[start : start + len(requests)])
                start += len(requests)


@dataclass
class _JudgeQueue:
    pending: deque[tuple[list[JudgeRequest], asyncio.Future[list[JudgeVerdict]]]] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None
