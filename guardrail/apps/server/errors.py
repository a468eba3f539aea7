"""Error bodies and the exception handlers that turn our exceptions into them.

Every error the service writes carries ``detail`` (FastAPI's shape) and ``error: {code, message,
status}`` (Google's), both saying the same message.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.responses import Response

from guardrail.grounding import GroundingJudgeError, GroundingLimitError
from guardrail.settings import ConfigurationError

__all__ = ["EXCEPTION_HANDLERS", "error_body", "error_response"]

_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    413: "INVALID_ARGUMENT",
    422: "INVALID_ARGUMENT",
    503: "UNAVAILABLE",
}


def error_body(code: int, message: str) -> dict[str, Any]:
    """The error JSON: FastAPI's ``detail`` and Google's ``error`` object, both saying ``message``."""
    return {"detail": message, "error": {"code": code, "message": message, "status": _GOOGLE_STATUS.get(code, "")}}


def error_response(code: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """:func:`error_body` as a response with status ``code`` (and ``headers``)."""
    return JSONResponse(error_body(code, message), status_code=code, headers=headers)


async def _configuration_error(request: Request, exc: ConfigurationError) -> Response:
    """A setting is missing or wrong: 503 naming the variable (the message never holds a value)."""
    return error_response(503, str(exc))


async def _judge_error(request: Request, exc: GroundingJudgeError) -> Response:
    """The judge failed on some pair after its retries: 503, worth retrying shortly."""
    return error_response(503, str(exc), {"Retry-After": "1"})


async def _limit_error(request: Request, exc: GroundingLimitError) -> Response:
    """A grounding request over one of Vertex's limits: 400 naming the limit."""
    return error_response(400, str(exc))


ExceptionHandler = Callable[[Request, Any], Coroutine[Any, Any, Response]]

EXCEPTION_HANDLERS: dict[int | type[Exception], ExceptionHandler] = {
    ConfigurationError: _configuration_error,
    GroundingJudgeError: _judge_error,
    GroundingLimitError: _limit_error,
}
"""The handlers :func:`~guardrail.apps.server.create_app` installs, by exception."""
