"""Stage observers: let a framework's tracer see the verifier's stages (fetch, archive, judge) as runs.

The verifier reports each fetch and judge call to the observer of the current context, set with
:func:`observing` (a context variable: the tasks and worker threads started in that context see
it, nothing else does), and does nothing more when there is none. The LangChain guard uses it to
show ``fetch`` and ``judge`` child runs under its own run when a tracer is attached.

An observer that fails is logged and ignored: tracing never changes a verdict.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

__all__ = ["StageObserver", "StageSpan", "current_observer", "observed", "observing"]

log = logging.getLogger("guardrail")

T = TypeVar("T")


class StageSpan(Protocol):
    """One stage call as the observer records it."""

    async def end(self, outputs: Mapping[str, Any]) -> None:
        """The stage returned ``outputs`` (JSON-ready)."""
        ...

    async def fail(self, error: BaseException) -> None:
        """The stage raised ``error``."""
        ...


class StageObserver(Protocol):
    """Told when a stage starts (``"fetch"``, ``"judge"``) with its inputs (JSON-ready)."""

    async def start(self, stage: str, inputs: Mapping[str, Any]) -> StageSpan:
        """Record the start of ``stage``; the span returned is told how it ended."""
        ...


_OBSERVER: ContextVar[StageObserver | None] = ContextVar("guardrail_stage_observer", default=None)


def current_observer() -> StageObserver | None:
    """The observer of the current context, if any."""
    return _OBSERVER.get()


@contextmanager
def observing(observer: StageObserver | None) -> Iterator[None]:
    """Report the stages run in this context (and the tasks it starts) to ``observer``."""
    token = _OBSERVER.set(observer)
    try:
        yield
    finally:
        _OBSERVER.reset(token)


async def observed(
    stage: str,
    inputs: Callable[[], Mapping[str, Any]],
    call: Callable[[], Awaitable[T]],
    outputs: Callable[[T], Mapping[str, Any]],
) -> T:
    """``await call()``, reported to the current observer as ``stage``; ``inputs`` and ``outputs``
    describe it (only called when there is an observer)."""
    observer = _OBSERVER.get()
    if observer is None:
        return await call()
    span: StageSpan | None = None
    try:
        span = await observer.start(stage, inputs())
    except Exception:
        log.exception("stage observer failed at the start of %s", stage)
    try:
        result = await call()
    except BaseException as exc:
        if span is not None:
            await _quietly(stage, span.fail(exc))
        raise
    if span is not None:
        await _quietly(stage, _end(span, outputs, result))
    return result


async def _end(span: StageSpan, outputs: Callable[[T], Mapping[str, Any]], result: T) -> None:
    await span.end(outputs(result))


async def _quietly(stage: str, step: Awaitable[None]) -> None:
    try:
        await step
    except Exception:
        log.exception("stage observer failed at the end of %s", stage)
