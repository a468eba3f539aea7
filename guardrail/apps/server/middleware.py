"""Pure ASGI middleware: the bearer token and the request-body cap.

Both sit in front of routing, so they also cover ``/docs``, ``/openapi.json`` and unknown paths,
and both answer before a route (or FastAPI's body parsing) reads anything:

* :class:`BearerAuth` refuses a request without the token before its body is read, so that a
  caller without the key can neither make the service buffer a body nor learn from a 422 what a
  valid one looks like. (A FastAPI dependency such as ``HTTPBearer`` runs only after the body has
  been read and validated, and not for the docs.)
* :class:`BodyLimit` reads the body itself, up to the cap, so that a streamed (chunked) body is
  refused as soon as it passes the cap; the app then gets the body already read, from memory.

Header values are compared as the bytes that were sent (ASGI hands them over as bytes); where a
header is repeated the last one counts.
"""

from __future__ import annotations

import hmac

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from guardrail.apps.server.errors import error_response

__all__ = ["PUBLIC_PATHS", "BearerAuth", "BodyLimit"]

PUBLIC_PATHS = frozenset({"/health"})
"""Paths answered without the bearer token."""


def _last_header(scope: Scope, name: str) -> bytes | None:
    """The last value of the header ``name``, as the bytes sent; None when absent."""
    values = Headers(scope=scope).getlist(name)
    return values[-1].encode("latin-1") if values else None  # Headers decodes them as latin-1


class BearerAuth:
    """Requires ``Authorization: Bearer <api_key>`` on every HTTP request but :data:`PUBLIC_PATHS`;
    otherwise 401 with ``WWW-Authenticate: Bearer``. The scheme is case-insensitive; the token is
    compared in constant time."""

    def __init__(self, app: ASGIApp, *, api_key: str) -> None:
        if not api_key:
            raise ValueError("api_key must not be empty (leave BearerAuth out to serve without a token)")
        self.app = app
        self.api_key = api_key.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass an authorised (or public, or non-HTTP) request on; answer 401 to any other."""
        if scope["type"] != "http" or scope.get("path") in PUBLIC_PATHS or self.authorised(scope):
            await self.app(scope, receive, send)
            return
        response = error_response(
            401, "missing or wrong bearer token (GUARDRAIL_API_KEY)", {"WWW-Authenticate": "Bearer"}
        )
        await response(scope, receive, send)

    def authorised(self, scope: Scope) -> bool:
        """Whether the request's ``Authorization`` header carries the bearer token."""
        scheme, _, token = (_last_header(scope, "authorization") or b"").partition(b" ")
        # compare_digest runs in time independent of where the first difference is.
        return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.api_key)


class _BadContentLength(Exception):
    """The declared ``Content-Length`` is not a number."""


class _BodyTooLarge(Exception):
    """The body is declared, or was found while it was read, to be over the cap."""


class _ClientGone(Exception):
    """The client disconnected before the body was complete."""


class BodyLimit:
    """Caps HTTP request bodies at ``max_body_bytes``: a declared ``Content-Length`` over the cap is
    refused before reading, a streamed body as soon as it passes the cap (413 and
    ``Connection: close`` either way); an unreadable ``Content-Length`` answers 400."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        if max_body_bytes < 1:
            raise ValueError("max_body_bytes must be positive")
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the body up to the cap, then hand the app the request with that body."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self._check_declared_length(scope)
            body = await self._read(receive)
        except _BadContentLength:
            await error_response(400, "invalid Content-Length header")(scope, receive, send)
        except _BodyTooLarge:
            message = f"request body is larger than {self.max_body_bytes} bytes (GUARDRAIL_MAX_BODY_BYTES)"
            await error_response(413, message, {"Connection": "close"})(scope, receive, send)
        except _ClientGone:
            pass  # nobody to answer
        else:
            await self.app(scope, _Replay(body, receive), send)

    def _check_declared_length(self, scope: Scope) -> None:
        """_BodyTooLarge for a declared ``Content-Length`` over the cap, _BadContentLength for one
        that is not a number."""
        declared = _last_header(scope, "content-length")
        if declared is None:
            return
        try:
            length = int(declared)
        except ValueError:
            raise _BadContentLength from None
        if length > self.max_body_bytes:
            raise _BodyTooLarge

    async def _read(self, receive: Receive) -> bytes:
        """The whole body; _BodyTooLarge as soon as it passes the cap, _ClientGone on a disconnect."""
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _ClientGone
            body.extend(message.get("body", b""))
            more = bool(message.get("more_body", False))
            if len(body) > self.max_body_bytes:
                raise _BodyTooLarge
        return bytes(body)


class _Replay:
    """An ASGI ``receive`` that gives the body already read, in one message, then defers to the
    server's ``receive`` (which then reports the disconnect)."""

    def __init__(self, body: bytes, receive: Receive) -> None:
        self.body: bytes | None = body
        self.receive = receive

    async def __call__(self) -> Message:
        if self.body is None:
            return await self.receive()
        body, self.body = self.body, None
        return {"type": "http.request", "body": body, "more_body": False}
