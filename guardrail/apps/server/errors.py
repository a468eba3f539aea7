"""Error bodies and the exception handlers that turn our exceptions into them: the one mapping
of exceptions to statuses, the same on every route (routes catch nothing themselves):

=====================================================  ======  =====================================
exception                                              status  meaning
=====================================================  ======  =====================================
``RequestValidationError``, :class:`InvalidBody`       422     the body does not validate (the field
                                                               and the rule are named, never the value)
:class:`~guardrail.limits.RequestLimitError`           413     a size over its limit
                                                       422     a count over its limit
:class:`~guardrail.grounding.GroundingLimitError`      400     over one of Vertex's limits
:class:`~guardrail.settings.ConfigurationError`        503     our configuration (a missing key, a
                                                               token Crawlbase rejects), not the request
:class:`~guardrail.grounding.GroundingJudgeError`      503     the judge failed after its retries
any other exception                                    500     a failure of our own code (logged)
=====================================================  ======  =====================================

``ConfigurationError`` is a ``ValueError``: a route that caught ``ValueError`` as bad input used to
answer our own misconfiguration with a 422. Input is checked by the request models instead.

Every error the service writes carries ``detail`` (FastAPI's shape) and ``error: {code, message,
status}`` (Google's), both saying the same message; for a 422, ``detail`` is FastAPI's list of
``{type, loc, msg}`` and ``error.message`` joins them. No error echoes the input: validation
errors drop FastAPI's ``input``, and messages are cut at a few hundred characters. An unhandled
exception answers a JSON 500 in the same shape (its traceback goes to the log, never the client).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from fastapi import HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.responses import Response

from guardrail.grounding import GroundingJudgeError, GroundingLimitError
from guardrail.limits import RequestLimitError
from guardrail.settings import ConfigurationError

__all__ = ["EXCEPTION_HANDLERS", "InvalidBody", "error_body", "error_response", "validation_response"]

_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    413: "INVALID_ARGUMENT",
    422: "INVALID_ARGUMENT",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_MAX_MESSAGE = 300
"""Characters of one error message kept (a message may quote a value the client sent)."""
_MAX_ERRORS = 20
"""Validation errors listed in one 422 (the rest are counted)."""

log = logging.getLogger("guardrail.server")


class InvalidBody(HTTPException):
    """A request body refused before validation (not strict JSON, not valid Unicode): 422 naming
    where (``loc``), FastAPI's way, without the value."""

    def __init__(self, loc: Sequence[str | int], message: str) -> None:
        super().__init__(422, detail=[{"type": "json_invalid", "loc": list(loc), "msg": message}])


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


async def _request_limit(request: Request, exc: RequestLimitError) -> Response:
    """Over one of the work limits: 413 for a size, 422 for a count, naming the setting."""
    return error_response(413 if exc.too_large else 422, str(exc))


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."


def validation_response(errors: Sequence[Any]) -> JSONResponse:
    """A 422 listing ``errors`` (FastAPI's ``{type, loc, msg}``) without their input."""
    shown: list[dict[str, Any]] = [
        {"type": str(e.get("type", "value_error")), "loc": list(e.get("loc", ())), "msg": _short(e.get("msg", ""))}
        for e in list(errors)[:_MAX_ERRORS]
    ]
    parts = [".".join(str(part) for part in e["loc"]) + f": {e['msg']}" for e in shown]
    if len(errors) > len(shown):
        parts.append(f"... and {len(errors) - len(shown)} more")
    body = error_body(422, "; ".join(parts) or "invalid request")
    body["detail"] = shown
    return JSONResponse(body, status_code=422)


async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
    """A body or parameter that does not validate: 422 naming each field, never echoing it."""
    return validation_response(exc.errors())


async def _invalid_body(request: Request, exc: InvalidBody) -> Response:
    """A body that is not strict JSON of valid Unicode text: 422 naming where."""
    return validation_response(exc.detail)


async def _unhandled(request: Request, exc: Exception) -> Response:
    """A failure of our own code: a JSON 500 (the traceback is logged, never sent)."""
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal error (ours, not the request's); it was logged")


ExceptionHandler = Callable[[Request, Any], Coroutine[Any, Any, Response]]

EXCEPTION_HANDLERS: dict[int | type[Exception], ExceptionHandler] = {
    ConfigurationError: _configuration_error,
    GroundingJudgeError: _judge_error,
    GroundingLimitError: _limit_error,
    RequestLimitError: _request_limit,
    RequestValidationError: _validation_error,
    InvalidBody: _invalid_body,
    Exception: _unhandled,
}
"""The handlers :func:`~guardrail.apps.server.create_app` installs, by exception."""
