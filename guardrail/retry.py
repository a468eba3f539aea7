"""One retry policy for every remote call: page fetches, the Crawlbase API and the LLM judges.

A call is retried only when its outcome is *transient* (the caller's ``classify`` says so: a
timeout, a refused connection, HTTP 429/502/503/504...), with capped exponential backoff and
jitter, honouring the server's ``Retry-After``, within a number of attempts and a time budget
that covers the waits too. Built on ``tenacity`` (its stop/wait/retry hooks) rather than a loop
of our own, so the fetchers and the judges share one tested mechanism and one reading of
``Retry-After``.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tenacity import AsyncRetrying, RetryCallState

T = TypeVar("T")

__all__ = ["RetryPolicy", "Transient", "parse_retry_after", "retry_call"]


@dataclass(frozen=True)
class Transient:
    """Why an outcome is worth another attempt; ``retry_after`` is the server's wish, in seconds."""

    detail: str
    retry_after: float | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try one remote call.

    ``attempts`` bounds the tries; ``attempt_timeout`` (seconds, optional) bounds each one;
    ``budget`` (seconds) bounds the whole call, attempts and waits included (default: twice
    ``attempt_timeout``, else 30 s): no retry starts when its wait would end past it. Waits double
    from ``backoff`` up to ``max_backoff`` with up to 10 % jitter; a ``Retry-After`` is honoured
    (the wait is at least that long) unless it is longer than ``max_retry_after``, which ends the
    call at once.
    """

    attempts: int = 3
    budget: float | None = None
    attempt_timeout: float | None = None
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 30.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.budget is not None and self.budget <= 0:
            raise ValueError("budget must be positive")
        if self.attempt_timeout is not None and self.attempt_timeout <= 0:
            raise ValueError("attempt_timeout must be positive")
        if self.backoff < 0 or self.max_backoff < 0 or self.max_retry_after < 0:
            raise ValueError("backoff, max_backoff and max_retry_after must not be negative")

    @property
    def total(self) -> float:
        """The time budget of one call, in seconds."""
        if self.budget is not None:
            return self.budget
        return 2 * self.attempt_timeout if self.attempt_timeout is not None else 30.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """The wait before retry number ``attempt`` (1-based): backoff with jitter, or
        ``retry_after`` when the server asked for longer."""
        base = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))
        wait = base + random.uniform(0, base * 0.1)
        return max(wait, retry_after) if retry_after is not None else wait


Classify = Callable[[T | None, BaseException | None], Transient | None]
"""``(result, exception) -> Transient | None``: whether an attempt's outcome is worth retrying."""


async def retry_call(
    attempt: Callable[[float], Awaitable[T]],
    policy: RetryPolicy,
    classify: Classify[T],
    *,
    on_retry: Callable[[Transient, int, float], None] | None = None,
) -> T:
    """Call ``attempt(timeout)`` until its outcome is not transient or the policy is spent.

    ``timeout`` is what this attempt may take: the budget left, or ``attempt_timeout`` when that
    is shorter (which then also bounds the attempt with :func:`asyncio.wait_for`, so a timed-out
    attempt is an ``asyncio.TimeoutError`` outcome for ``classify``). ``classify`` decides per
    outcome; the last outcome is returned (or its exception raised) when the attempts, the budget
    or a too-long ``Retry-After`` end the call. ``on_retry(why, attempt_number, wait)`` is told
    before each wait (for a log line).
    """
    schedule = _Schedule(policy, classify, on_retry)

    async def one() -> T:
        left = schedule.left()
        if policy.attempt_timeout is None:
            return await attempt(left)
        timeout = min(policy.attempt_timeout, left)
        return await asyncio.wait_for(attempt(timeout), timeout)

    retrying = AsyncRetrying(
        retry=schedule.should_retry,
        wait=schedule.wait,
        stop=schedule.stop,
        before_sleep=schedule.before_sleep,
        retry_error_callback=_last_outcome,
    )
    return await retrying(one)


class _Schedule(Generic[T]):
    """tenacity's hooks for one call under a :class:`RetryPolicy`: the deadline is set when the
    call starts, every decision reads the last outcome through ``classify``."""

    def __init__(
        self,
        policy: RetryPolicy,
        classify: Classify[T],
        on_retry: Callable[[Transient, int, float], None] | None,
    ) -> None:
        self.policy, self.classify, self.on_retry = policy, classify, on_retry
        self.loop = asyncio.get_running_loop()
        self.deadline = self.loop.time() + policy.total

    def left(self) -> float:
        return max(0.0, self.deadline - self.loop.time())

    def transient(self, state: RetryCallState) -> Transient | None:
        outcome = state.outcome
        if outcome is None:
            return None
        if outcome.failed:
            return self.classify(None, outcome.exception())
        return self.classify(outcome.result(), None)

    def should_retry(self, state: RetryCallState) -> bool:
        return self.transient(state) is not None

    def wait(self, state: RetryCallState) -> float:
        why = self.transient(state)
        return self.policy.delay(state.attempt_number, why.retry_after if why else None)

    def stop(self, state: RetryCallState) -> bool:
        why = self.transient(state)
        if state.attempt_number >= self.policy.attempts:
            return True
        if why is not None and why.retry_after is not None and why.retry_after > self.policy.max_retry_after:
            return True
        return self.loop.time() + (state.upcoming_sleep or 0.0) >= self.deadline

    def before_sleep(self, state: RetryCallState) -> None:
        why = self.transient(state)
        if self.on_retry is not None and why is not None:
            self.on_retry(why, state.attempt_number, state.upcoming_sleep or 0.0)


def _last_outcome(state: RetryCallState) -> Any:
    """What a spent call gives: its last result, or its last exception raised again."""
    if state.outcome is None:  # tenacity always records one before stopping
        raise RuntimeError("retry stopped before any attempt")
    return state.outcome.result()


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), if any."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
