"""Sync entry points over the async core (anyio), safe inside a running event loop.

Library code never starts an event loop in a thread that already runs one (LangChain, Jupyter,
FastAPI): there, the coroutine runs on anyio's blocking portal, an event loop in a worker thread,
with the caller's context variables (tracing callbacks live in them).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import queue
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable
from typing import Any, TypeVar

import anyio
from anyio.from_thread import start_blocking_portal

T = TypeVar("T")

__all__ = ["CpuGate", "aiter_from_sync", "iterate_sync", "run_sync"]


def _in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_sync(coro_factory: Callable[[], Awaitable[T]]) -> T:
    """Run ``coro_factory()`` to completion from sync code, even inside a running event loop."""
    if not _in_running_loop():
        return anyio.run(coro_factory)
    with start_blocking_portal() as portal:
        return portal.call(coro_factory)


_END = object()


async def aiter_from_sync(items: Iterable[T]) -> AsyncIterator[T]:
    """Iterate a blocking iterable from async code: each ``next()`` runs in a worker thread
    (with the caller's context variables), so the event loop keeps running while it waits."""
    it = iter(items)
    while True:
        item = await anyio.to_thread.run_sync(next, it, _END)
        if item is _END:
            return
        yield item  # type: ignore[misc]


def iterate_sync(factory: Callable[[], AsyncIterator[T]]) -> Generator[T, None, None]:
    """Iterate the async iterator ``factory()`` from sync code, even inside a running event loop.

    It is driven by one task on anyio's blocking portal (with the caller's context variables), so
    it runs ahead while the consumer works; items are handed over as they come. Closing the
    returned iterator early cancels the async side and waits for it to finish; an exception on the
    async side is raised here.
    """
    handoff: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()

    async def drive() -> None:
        agen = factory()
        try:
            async for item in agen:
                handoff.put(("item", item))
        except Exception as exc:
            handoff.put(("error", exc))
            return
        finally:
            aclose = getattr(agen, "aclose", None)  # an AsyncIterator need not be a generator
            if aclose is not None:
                await aclose()
        handoff.put(("end", None))

    with start_blocking_portal() as portal:
        task = portal.start_task_soon(drive)
        try:
            while True:
                kind, value = handoff.get()
                if kind == "item":
                    yield value
                elif kind == "error":
                    raise value
                else:
                    return
        finally:
            task.cancel()  # no-op when it has finished; the portal waits for it on exit


class CpuGate:
    """Runs blocking CPU work in worker threads, at most ``limit`` at once per event loop.

    A caller cancelled while it waits for its turn starts nothing; one cancelled while its work
    runs returns at once, and the thread's slot is freed only when that work really ends. So a
    burst of abandoned requests cannot queue up work that runs long after they are gone.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = max(1, limit if limit is not None else (os.cpu_count() or 1))
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._gates = weakref.WeakKeyDictionary()

    async def run(self, fn: Callable[..., T], /, *args: Any) -> T:
        """``fn(*args)`` in a worker thread (with the caller's context variables) once a slot is free."""
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = asyncio.Semaphore(self.limit)
        await gate.acquire()
        try:
            future = loop.run_in_executor(None, functools.partial(contextvars.copy_context().run, fn, *args))
        except BaseException:
            gate.release()
            raise
        future.add_done_callback(functools.partial(_finished, gate))
        # shield: cancelling the caller must not mark the work done while its thread still runs.
        return await asyncio.shield(future)


def _finished(gate: asyncio.Semaphore, future: asyncio.Future[Any]) -> None:
    """Free the slot of work that ended, and mark its outcome seen (its caller may be gone)."""
    gate.release()
    if not future.cancelled():
        future.exception()
