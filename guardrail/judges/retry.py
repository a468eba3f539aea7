"""What a judge failure becomes, and bounded concurrency, for the LLM judges.

The retrying itself is :func:`guardrail.retry.retry_call`, shared with the fetchers. A malformed
answer, a refusal, a timeout, a connection error, HTTP 408/409/425/429 or any 5xx is retried within
a budget (attempts and total time per request, with exponential backoff and Retry-After honoured
when reasonable);
when the budget is spent the request gets ``not_found`` / ``judge_error``. An authentication
failure (401/403) is a configuration problem: it is not retried, the remaining requests of the
call are not sent, each gets ``judge_error``, and one log line names the variable to check
(never its value). Other 4xx (bad model name, bad request) are not retried either.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from guardrail.core.schema import JudgeRequest, JudgeVerdict, Reason
from guardrail.judges.prompt import JudgeParseError
from guardrail.retry import RetryPolicy, Transient, parse_retry_after, retry_call

__all__ = [
    "AUTH_STATUS",
    "RETRYABLE_STATUS",
    "FatalJudgeError",
    "JudgeAuthError",
    "JudgeCallError",
    "RetryPolicy",
    "TransientJudgeError",
    "error_for_status",
    "judge_all",
    "judge_error",
    "parse_retry_after",
]

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


def error_for_status(status: int, headers: Mapping[str, str] | None, setting: str) -> JudgeCallError:
    """The judge error for an HTTP error status from the model API (``setting`` names the key variable)."""
    if status in AUTH_STATUS:
        return JudgeAuthError(f"http_{status}", setting)
    if status in RETRYABLE_STATUS or status >= 500:
        return TransientJudgeError(f"http_{status}", retry_after=parse_retry_after(headers))
    return FatalJudgeError(f"http_{status}")


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
    tries = 0

    async def one(timeout: float) -> JudgeVerdict:
        nonlocal tries
        if state.auth_failed:
            raise _AuthFailedElsewhere
        tries += 1
        # The SDK gets the same timeout as the hard bound, so it stops its own I/O too.
        return await attempt(request, timeout)

    try:
        return await retry_call(one, policy, _transient_judge_failure)
    except _AuthFailedElsewhere:
        return judge_error()
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
    except (TransientJudgeError, JudgeParseError, asyncio.TimeoutError) as exc:
        why = _transient_judge_failure(None, exc)
        log.warning(
            "judge %s: giving up after %d attempt(s) in %.1fs: %s",
            judge_name,
            tries,
            loop.time() - started,
            why.detail if why else type(exc).__name__,
        )
        return judge_error()
    except Exception:
        # A bug of ours, not a model failure: log it loudly, but one request must not sink the call.
        log.exception("judge %s: internal error", judge_name)
        return JudgeVerdict(label="not_found", confidence=0.0, reason=Reason.internal_error.value)


class _AuthFailedElsewhere(Exception):
    """Another request of the call found the credentials rejected: send nothing more."""


def _transient_judge_failure(_result: JudgeVerdict | None, error: BaseException | None) -> Transient | None:
    """Worth another attempt: a timeout, a connection error, 408/409/425/429/5xx, a malformed answer."""
    if isinstance(error, TransientJudgeError):
        return Transient(error.detail, error.retry_after)
    if isinstance(error, JudgeParseError):
        return Transient(f"malformed answer: {error}")
    if isinstance(error, asyncio.TimeoutError):
        return Transient("timeout")
    return None
