"""Pure ASGI middleware: the bearer token, the request-body cap and deadline, and the work of a
request bounded in time and cancelled when its client leaves.

All sit in front of routing, so they also cover ``/docs``, ``/openapi.json`` and unknown paths,
and all answer before a route (or FastAPI's body parsing) reads anything:

* :class:`BearerAuth` refuses a request without the token before its body is read, so that a
  caller without the key can neither make the service buffer a body nor learn from a 422 what a
  valid one looks like. (A FastAPI dependency such as ``HTTPBearer`` runs only after the body has
  been read and validated, and not for the docs.)
* :class:`BodyLimit` reads the body itself, up to the cap and within a deadline, so that a
  streamed (chunked) body is refused as soon as it passes the cap and a body trickled in slowly
  (slowloris) as soon as the deadline passes; the app then gets the body already read, from memory.
* :class:`RequestWork` runs the app in a task of its own, cancelled when the client disconnects
  (nobody is left to answer) or when the request's deadline passes (504).

Header values are compared as the bytes that were sent (ASGI hands them over as bytes); where a
header is repeated the last one counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from collections.abc import Iterator

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from guardrail.apps.server.errors import error_response

__all__ = [
    "DOCS_CONTENT_POLICY",
    "PUBLIC_PATHS",
    "BearerAuth",
    "BodyLimit",
    "DocsContentPolicy",
    "InFlight",
    "RequestWork",
    "carries_token",
]

PUBLIC_PATHS = frozenset({"/v1/health", "/health"})
"""Paths answered without the bearer token."""


DOCS_CONTENT_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; worker-src 'self' blob:; frame-ancestors 'none'"
)
"""The Content-Security-Policy of the docs pages: nothing is loaded from another host. ReDoc's
sidebar shows Redocly's logo from cdn.redoc.ly whatever its options say; this policy keeps the
browser from asking for it (the link text stays)."""


class DocsContentPolicy:
    """Adds :data:`DOCS_CONTENT_POLICY` to the responses of ``paths`` (the Swagger UI and ReDoc
    pages), so that a browser showing them makes no request outside the service."""

    def __init__(self, app: ASGIApp, *, paths: frozenset[str]) -> None:
        self.app = app
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; on a docs page, add the policy to the response's headers."""
        if scope["type"] != "http" or scope.get("path") not in self.paths:
            await self.app(scope, receive, send)
            return

        async def send_with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (b"content-security-policy", DOCS_CONTENT_POLICY.encode())]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_policy)


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
        return carries_token(scope, self.api_key)


def carries_token(scope: Scope, api_key: bytes) -> bool:
    """Whether the request's (last) ``Authorization`` header is ``Bearer <api_key>`` (the scheme
    case-insensitive, the token compared in constant time)."""
    scheme, _, token = (_last_header(scope, "authorization") or b"").partition(b" ")
    # compare_digest runs in time independent of where the first difference is.
    return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), api_key)


class _BadContentLength(Exception):
    """The declared ``Content-Length`` is not a number."""


class _BodyTooLarge(Exception):
    """The body is declared, or was found while it was read, to be over the cap."""


class _ClientGone(Exception):
    """The client disconnected before the body was complete."""


class _BodyTooSlow(Exception):
    """The body did not arrive within the deadline."""


class BodyLimit:
    """Caps HTTP request bodies at ``max_body_bytes``: a declared ``Content-Length`` over the cap is
    refused before reading, a streamed body as soon as it passes the cap (413 and
    ``Connection: close`` either way); an unreadable ``Content-Length`` answers 400; a body not
    complete within ``body_timeout`` seconds answers 408 and the connection is closed."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, body_timeout: float = 30.0) -> None:
        if max_body_bytes < 1:
            raise ValueError("max_body_bytes must be positive")
        if body_timeout <= 0:
            raise ValueError("body_timeout must be positive")
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the body up to the cap, then hand the app the request with that body."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self._check_declared_length(scope)
            body = await self._read_in_time(receive)
        except _BadContentLength:
            await error_response(400, "invalid Content-Length header")(scope, receive, send)
        except _BodyTooLarge:
            message = f"request body is larger than {self.max_body_bytes} bytes (GUARDRAIL_MAX_BODY_BYTES)"
            await error_response(413, message, {"Connection": "close"})(scope, receive, send)
        except _BodyTooSlow:
            message = f"request body not received within {self.body_timeout:g} s (GUARDRAIL_BODY_TIMEOUT)"
            await error_response(408, message, {"Connection": "close"})(scope, receive, send)
        except _ClientGone:
            pass  # nobody to answer
        else:
            await self.app(scope, _Replay(body, receive), send)

    async def _read_in_time(self, receive: Receive) -> bytes:
        """:meth:`_read` within the body deadline; _BodyTooSlow after it."""
        try:
            return await asyncio.wait_for(self._read(receive), self.body_timeout)
        except asyncio.TimeoutError:
            raise _BodyTooSlow from None

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


class RequestWork:
    """Runs each HTTP request's app in a task of its own and cancels it when the client disconnects
    after sending its body (the work would answer nobody) or when ``timeout`` seconds have passed
    (then 504, naming ``GUARDRAIL_REQUEST_TIMEOUT``, if the response has not started). When the
    server cancels the request at shutdown, the work is cancelled and the client told 503.

    The server's ``receive`` is watched once the body has been handed to the app; later calls the
    app makes get the disconnect from the watch. Cancelling the task cancels what it awaits:
    fetches, queued judge calls and CPU work not yet started (see
    :class:`~guardrail._bridges.CpuGate`); a worker thread already running finishes its current
    chunk.
    """

    def __init__(self, app: ASGIApp, *, timeout: float, inflight: InFlight | None = None) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.app = app
        self.timeout = timeout
        self.inflight = inflight or InFlight()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the request, watching for the client leaving and for the deadline."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with self.inflight.track():
            await self._run(scope, receive, send)

    async def _run(self, scope: Scope, receive: Receive, send: Send) -> None:
        watch = _DisconnectWatch(receive)
        sent = _SendTracker(send)
        work = asyncio.ensure_future(self.app(scope, watch.receive, sent))
        stopping = False
        try:
            await asyncio.wait({work, watch.gone}, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            stopping = True  # the server is shutting down (its graceful timeout passed)
        finally:
            if not work.done():
                work.cancel()
            watch.stop()
            await asyncio.gather(work, return_exceptions=True)
        if work.cancelled():
            if not watch.left and not sent.started:
                await self._stopped_response(stopping)(scope, receive, send)
            return
        work.result()  # an exception of the app is raised here, for the server error handler

    def _stopped_response(self, shutting_down: bool) -> Response:
        """What a request whose work was stopped answers: 503 at shutdown, else 504 (its deadline)."""
        if shutting_down:
            message = "the service is shutting down; the request was stopped, try again"
            return error_response(503, message, {"Connection": "close", "Retry-After": "1"})
        message = f"the request took longer than {self.timeout:g} s and was stopped (GUARDRAIL_REQUEST_TIMEOUT)"
        return error_response(504, message, {"Connection": "close"})


class InFlight:
    """The requests :class:`RequestWork` is running. At shutdown the server cancels those past its
    graceful timeout and then shuts the app down; :meth:`settle` in the app's shutdown lets them
    send their 503 first (else the event loop's final clean-up can cancel them again while they
    answer, and the client sees the connection closed without an answer)."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[object]] = set()

    @contextlib.contextmanager
    def track(self) -> Iterator[None]:
        """Count the current task in for the block."""
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - always inside a task under an ASGI server
            yield
            return
        self._tasks.add(task)
        try:
            yield
        finally:
            self._tasks.discard(task)

    async def settle(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the requests still running to end."""
        pending = {t for t in self._tasks if not t.done() and t is not asyncio.current_task()}
        if pending:
            await asyncio.wait(pending, timeout=timeout)


class _DisconnectWatch:
    """The app's ``receive``: the server's until the body is complete, then a watch for the
    client's disconnect (``gone`` resolves when it comes)."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self.left = False
        self.gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._watcher: asyncio.Task[None] | None = None

    async def receive(self) -> Message:
        if self._watcher is None:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self._set_gone()
            elif not message.get("more_body", False):
                self._watcher = asyncio.ensure_future(self._watch())
            return message
        await asyncio.shield(self.gone)
        return {"type": "http.disconnect"}

    async def _watch(self) -> None:
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self._set_gone()
                return

    def _set_gone(self) -> None:
        self.left = True
        if not self.gone.done():
            self.gone.set_result(None)

    def stop(self) -> None:
        """Stop watching (the response is complete, or the work was stopped)."""
        if self._watcher is not None:
            self._watcher.cancel()
        if not self.gone.done():
            self.gone.cancel()


class _SendTracker:
    """The server's ``send``, noting whether the response has started."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)
