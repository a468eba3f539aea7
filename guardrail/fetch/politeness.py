"""Politeness per host: how many requests one fetcher sends a host at once, how often, and a
pause for the whole host when it answers 429 or 503 with ``Retry-After``.

A batch over a million citations cites the same few hosts thousands of times; the fetcher's
overall ``concurrency`` does not stop it from sending all of them to one site. :class:`HostLimiter`
keeps, per host name, a concurrency cap (a semaphore), a rate (``aiolimiter``'s leaky bucket,
which allows a burst of ``rate`` requests and then ``rate`` per second) and a cool-down that every
request to the host waits out once the host asked us to slow down. Limits hold per fetcher and
event loop (a process, a Ray actor): ``N`` workers send a host at most ``N`` times the limits.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiolimiter import AsyncLimiter

from guardrail.settings import DEFAULT_HOST_CONCURRENCY, DEFAULT_HOST_RATE

__all__ = ["HostLimiter", "HostLimits"]


@dataclass(frozen=True)
class HostLimits:
    """Limits per host: ``concurrency`` requests in flight, ``rate`` requests per second (``None``:
    no rate limit), and the longest pause a host's ``Retry-After`` may impose on it
    (``max_pause`` seconds); a 429/503 without ``Retry-After`` pauses it ``default_pause``."""

    concurrency: int = DEFAULT_HOST_CONCURRENCY
    rate: float | None = DEFAULT_HOST_RATE
    max_pause: float = 60.0
    default_pause: float = 1.0

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("host concurrency must be at least 1")
        if self.rate is not None and self.rate <= 0:
            raise ValueError("host rate must be positive (or None for no rate limit)")
        if self.max_pause < 0 or self.default_pause < 0:
            raise ValueError("max_pause and default_pause must not be negative")


@dataclass
class _Host:
    slots: asyncio.Semaphore
    bucket: AsyncLimiter | None
    paused_until: float = 0.0


@dataclass
class _LoopHosts:
    hosts: dict[str, _Host] = field(default_factory=dict)


class HostLimiter:
    """Per-host concurrency, rate and pause, for one fetcher (see the module's docstring)."""

    def __init__(self, limits: HostLimits | None = None) -> None:
        self.limits = limits or HostLimits()
        # asyncio primitives belong to one event loop; sync entry points run a loop per call.
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopHosts] = weakref.WeakKeyDictionary()

    def _host(self, name: str) -> _Host:
        loop = asyncio.get_running_loop()
        hosts = self._loops.setdefault(loop, _LoopHosts()).hosts
        key = name.lower()
        host = hosts.get(key)
        if host is None:
            rate = self.limits.rate
            # A bucket of at least one request: a rate under 1/s still lets a request through.
            bucket = None if rate is None else AsyncLimiter(max(rate, 1.0), max(rate, 1.0) / rate)
            host = hosts[key] = _Host(asyncio.Semaphore(self.limits.concurrency), bucket)
        return host

    @asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[None]:
        """Hold one of ``host``'s request slots: waits for a free slot, for the end of a pause the
        host asked for, then for the rate; released when the block ends."""
        state = self._host(host)
        loop = asyncio.get_running_loop()
        async with state.slots:
            while (wait := state.paused_until - loop.time()) > 0:
                await asyncio.sleep(wait)
            if state.bucket is not None:
                await state.bucket.acquire()
            yield

    def pause(self, host: str, seconds: float | None) -> float:
        """Hold every request to ``host`` back for ``seconds`` (its ``Retry-After``; ``None``: the
        default pause), capped at ``max_pause``; returns the pause applied."""
        state = self._host(host)
        pause = min(self.limits.max_pause, self.limits.default_pause if seconds is None else max(0.0, seconds))
        state.paused_until = max(state.paused_until, asyncio.get_running_loop().time() + pause)
        return pause
