"""Retries, time budgets and bounded concurrency shared by the LLM judges.

One place decides what a judge failure becomes: a malformed answer, a refusal, a timeout,
a connection error, HTTP 408/409/425/429 or any 5xx is retried within a budget (attempts and
total time per request, with exponential backoff and Retry-After honoured when reasonable);
when the budget is spent the request gets ``not_found`` / ``judge_error``. An authentication
failure (401/403) is a configuration problem: it is not retried, the remaining requests of the
call are not sent, each gets ``judge_error``, and one log line names the variable to check
(never its value). Other 4xx (bad model name, bad request) are not retried either.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from guardrail.judges.prompt import JudgeParseError
from guardrail.schema import JudgeRequest, JudgeVerdict, Reason

log = logging.getLogger("guardrail.judges")

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
AUTH_STATUS = frozenset({401, 403})


class JudgeCallError(Exception):
    """A failed judge call; ``detail`` is a short description safe to log (no secrets, no SDK text)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class TransientJudgeError(JudgeCallError):
    """Worth retrying: timeout, connection error, 429, 5xx, refusal. ``retry_after`` in seconds."""

    def __init__(self, detail: str, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.retry_after = retry_after


class FatalJudgeError(JudgeCallError):
    """Not worth retrying (for example HTTP 400 or 404: a bad model name)."""


class JudgeAuthError(FatalJudgeError):
    """The API rejected the credentials; ``setting`` names the variable to check."""

    def __init__(self, detail: str, setting: str) -> None:
        super().__init__(detail)
        self.setting = setting


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


def error_for_status(status: int, headers: Mapping[str, str] | None, setting: str) -> JudgeCallError:
    """The judge error for an HTTP error status from the model API (``setting`` names the key variable)."""
    if status in AUTH_STATUS:
        return JudgeAuthError(f"http_{status}", setting)
    if status in RETRYABLE_STATUS or status >= 500:
        return TransientJudgeError(f"http_{status}", retry_after=parse_retry_after(headers))
    return FatalJudgeError(f"http_{status}")


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try one judge request.

    ``attempt_timeout`` bounds each call; ``budget`` bounds the whole request, retries and waits
    included (default: twice ``attempt_timeout``). Backoff doubles from ``backoff`` up to
    ``max_backoff``; a Retry-After longer than ``max_retry_after`` or than the budget left ends
    the request at once instead of waiting.
    """

    attempts: int = 3
    attempt_timeout: float = 60.0
    budget: float | None = None
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 30.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.attempt_timeout <= 0:
            raise ValueError("attempt_timeout must be positive")
        if self.budget is not None and self.budget <= 0:
            raise ValueError("budget must be positive")
        if self.backoff < 0 or self.max_backoff < 0 or self.max_retry_after < 0:
            raise ValueError("backoff, max_backoff and max_retry_after must not be negative")

    @property
    def total(self) -> float:
        """The time budget of one request, in seconds."""
        return self.budget if self.budget is not None else 2 * self.attempt_timeout

    def delay(self, attempt: int) -> float:
        """Backoff before retry number ``attempt`` (1-based), with a little jitter against herds."""
        base = min(self.max_backoff, self.backoff * (2 ** (attempt - 1)))
        return base + random.uniform(0, base * 0.1)


def judge_error() -> JudgeVerdict:
    """The verdict for a request the judge could not answer."""
    return JudgeVerdict(label="not_found", evidence_quote=None, confidence=0.0, reason=Reason.judge_error.value)


Attempt = Callable[[JudgeRequest, float], Awaitable[JudgeVerdict]]
"""One call to the model for one request, with a timeout in seconds; raises JudgeCallError/JudgeParseError."""


class _CallState:
    def __init__(self) -> None:
        self.auth_failed = False


async def judge_all(
    requests: Sequence[JudgeRequest],
    attempt: Attempt,
    *,
    policy: RetryPolicy,
    concurrency: int,
    judge_name: str,
) -> list[JudgeVerdict]:
    """Judge every request with ``attempt`` under ``policy``, at most ``concurrency`` at a time.

    Returns one verdict per request, in order; a request that cannot be answered gets
    :func:`judge_error` and no exception escapes for it.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    semaphore = asyncio.Semaphore(concurrency)
    state = _CallState()

    async def one(request: JudgeRequest) -> JudgeVerdict:
        async with semaphore:
            return await _with_retries(request, attempt, policy, judge_name, state)

    return list(await asyncio.gather(*(one(r) for r in requests)))


async def _with_retries(
    request: JudgeRequest,
    attempt: Attempt,
    policy: RetryPolicy,
    judge_name: str,
    state: _CallState,
) -> JudgeVerdict:
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + policy.total
    last = "no attempt"
    tries = 0
    while tries < policy.attempts:
        if state.auth_failed:
            return judge_error()
        remaining = deadline - loop.time()
        if remaining <= 0:
            last += "; time budget spent"
            break
        timeout = min(policy.attempt_timeout, remaining)
        tries += 1
        retry_after: float | None = None
        try:
            # wait_for is the hard bound; the SDK gets the same timeout so it stops its own I/O too.
            return await asyncio.wait_for(attempt(request, timeout), timeout)
        except JudgeAuthError as exc:
            if not state.auth_failed:
                state.auth_failed = True
                log.error(
                    "judge %s: the API rejected the credentials (%s); check %s. "
                    "Every request of this call is answered not_found/judge_error.",
                    judge_name,
                    exc.detail,
                    exc.setting,
                )
            return judge_error()
        except FatalJudgeError as exc:
            log.warning("judge %s: request failed (%s), not retried", judge_name, exc.detail)
            return judge_error()
        except TransientJudgeError as exc:
            last, retry_after = exc.detail, exc.retry_after
        except JudgeParseError as exc:
            last = f"malformed answer: {exc}"
        except asyncio.TimeoutError:
            last = "timeout"
        except Exception:
            # A bug, not a model failure: log it loudly, but one request must not sink the call.
            log.exception("judge %s: unexpected error", judge_name)
            return judge_error()
        if tries >= policy.attempts:
            break
        wait = policy.delay(tries)
        if retry_after is not None:
            if retry_after > policy.max_retry_after:
                last += f"; Retry-After {retry_after:.0f}s is too long"
                break
            wait = max(wait, retry_after)
        if loop.time() + wait >= deadline:
            last += "; time budget spent"
            break
        await asyncio.sleep(wait)
    log.warning(
        "judge %s: giving up after %d attempt(s) in %.1fs: %s",
        judge_name,
        tries,
        loop.time() - started,
        last,
    )
    return judge_error()
