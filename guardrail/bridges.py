"""Sync entry points over the async core (anyio), safe inside a running event loop.

Library code never starts an event loop in a thread that already runs one (LangChain, Jupyter,
FastAPI): there, the coroutine runs on anyio's blocking portal, an event loop in a worker thread,
with the caller's context variables (tracing callbacks live in them).
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable
from typing import Any, TypeVar

import anyio
from anyio.from_thread import start_blocking_portal

T = TypeVar("T")

__all__ = ["aiter_from_sync", "iterate_sync", "run_sync"]


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
