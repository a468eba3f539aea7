"""The HTTP/1.1 protocol ``guardrail serve`` runs uvicorn with: uvicorn's h11 protocol, plus

* **431** for a request head over :data:`MAX_HEAD_BYTES`, whether it arrives in pieces (h11's
  ``max_incomplete_event_size``) or in one write (h11 checks only heads still incomplete, so a
  complete head is measured here), rather than uvicorn's generic 400;
* a **deadline on the request head**, started when the connection is made and again with the
  first byte of each later request: a client must send a whole head (request line and headers)
  within ``head_timeout`` seconds, or the connection is closed. A connection that never sends a
  byte is closed as well: uvicorn's ``timeout_keep_alive`` only starts after a response, and the
  body has its own deadline in :class:`~guardrail.apps.server.middleware.BodyLimit`;
* **caps on open connections**, in all (``GUARDRAIL_MAX_CONNECTIONS``) and from one client address
  (``GUARDRAIL_MAX_CLIENT_CONNECTIONS``): a connection past either is answered 503 naming the
  setting, with ``Retry-After``, and closed at once, before it can hold anything;
* an **access log without query strings** (a ``?token=...`` a client sent never reaches the log);
* error answers that reach the client, in the service's error shape (``detail`` and ``error``):
  after one, the server stops writing and reads (and drops) what the client is still sending for
  a moment before closing, so that closing with unread data does not reset the connection and
  destroy the answer on its way.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol

from guardrail.apps.server.errors import error_body
from guardrail.settings import DEFAULT_MAX_CLIENT_CONNECTIONS, DEFAULT_MAX_CONNECTIONS, ConfigurationError, Settings

__all__ = ["DEFAULT_HEAD_TIMEOUT", "MAX_HEAD_BYTES", "ConnectionLimits", "GuardedH11Protocol"]

DEFAULT_HEAD_TIMEOUT = 10.0
"""Seconds a client has to send a request's head, from the connection's start or the head's first byte."""
MAX_HEAD_BYTES = 32 * 1024
"""The largest request head accepted (431 above it)."""
_DRAIN_SECONDS = 1.0


@dataclass(frozen=True)
class ConnectionLimits:
    """How many connections the service keeps open at once: in all, and from one client address."""

    total: int = DEFAULT_MAX_CONNECTIONS
    per_client: int = DEFAULT_MAX_CLIENT_CONNECTIONS


@functools.lru_cache(maxsize=1)
def _limits_from_settings() -> ConnectionLimits:
    """The limits the environment sets, read once per process (uvicorn builds a protocol per
    connection; ``guardrail serve`` has already refused unreadable settings before serving)."""
    try:
        settings = Settings.from_env()
    except ConfigurationError:  # the app answers 503 naming the variable; keep the defaults here
        return ConnectionLimits()
    return ConnectionLimits(total=settings.max_connections, per_client=settings.max_client_connections)


class _HeadTooLarge(h11.RemoteProtocolError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"request head of {size} bytes, over the {limit}-byte limit", error_status_hint=431)


def _head_size(event: h11.Request) -> int:
    """The bytes of a request head as h11 parsed it (at most what was sent: h11 strips white space)."""
    line = len(event.method) + len(event.target) + len(event.http_version) + 9  # "M T HTTP/v\r\n" and the end
    return line + sum(len(name) + len(value) + 4 for name, value in event.headers.raw_items())


class _Connection(h11.Connection):
    """h11's connection, keeping the status h11 suggests for the last protocol error, refusing a
    complete head over the limit, and telling its owner when a request's head is complete."""

    def __init__(self, max_head_bytes: int, on_request: Callable[[], None]) -> None:
        super().__init__(h11.SERVER, max_head_bytes)
        self.max_head_bytes = max_head_bytes
        self.error_status = 400
        self.on_request = on_request

    def next_event(self) -> Any:
        try:
            event = super().next_event()
            if isinstance(event, h11.Request) and (size := _head_size(event)) > self.max_head_bytes:
                raise _HeadTooLarge(size, self.max_head_bytes)
        except h11.RemoteProtocolError as exc:
            self.error_status = exc.error_status_hint
            raise
        if isinstance(event, h11.Request):
            self.on_request()
        return event


class _QuerylessAccessLog(logging.LoggerAdapter):
    """uvicorn's access logger with every argument's query string dropped (the logger itself,
    its handlers and its format are left as the host application set them)."""

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        args = tuple(arg.split("?", 1)[0] if isinstance(arg, str) else arg for arg in args)
        self.logger.log(level, msg, *args, **kwargs)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the guards of the module docs; give uvicorn the class
    (``http=GuardedH11Protocol``). A subclass may change :attr:`head_timeout` and :attr:`limits`
    (None: ``GUARDRAIL_MAX_CONNECTIONS`` and ``GUARDRAIL_MAX_CLIENT_CONNECTIONS``)."""

    head_timeout = DEFAULT_HEAD_TIMEOUT
    limits: ConnectionLimits | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit = self.config.h11_max_incomplete_event_size or MAX_HEAD_BYTES
        self.conn = _Connection(limit, self._head_complete)
        # The cycle only calls .info on it; an adapter keeps the host's logger untouched.
        self.access_logger = _QuerylessAccessLog(self.access_logger, {})  # type: ignore[assignment]
        self._awaiting_head = True
        self._head_timer: asyncio.TimerHandle | None = None
        self._draining = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Refuse a connection over a cap (503); else start the first head's deadline now."""
        super().connection_made(transport)
        refusal = self._over_cap()
        if refusal is not None:
            self.logger.warning("%s; connection refused with 503", refusal)
            self._send_error_and_close(503, refusal, {"retry-after": "1"})
            return
        self._start_head_timer()

    def data_received(self, data: bytes) -> None:
        """Drop data after an error answer; start the next head's deadline with its first bytes."""
        if self._draining:
            return
        if self._awaiting_head:
            self._start_head_timer()
        super().data_received(data)

    def on_response_complete(self) -> None:
        """A response was sent: the connection waits for the next request's head."""
        self._awaiting_head = True
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """Answer a request h11 refused: 431 for a head over the limit, else 400."""
        status = self.conn.error_status if isinstance(self.conn, _Connection) else 400
        text = f"request head over {MAX_HEAD_BYTES} bytes" if status == 431 else msg
        self._send_error_and_close(status, text)

    # -- helpers ------------------------------------------------------------------------------------

    def _over_cap(self) -> str | None:
        """Why this connection is one too many, or None."""
        limits = self.limits or _limits_from_settings()
        open_now = [c for c in self.connections if isinstance(c, GuardedH11Protocol) and not c._draining]
        if len(open_now) > limits.total:
            return f"more than {limits.total} connections open (GUARDRAIL_MAX_CONNECTIONS)"
        host = self.client[0] if self.client else None
        if host is not None and sum(1 for c in open_now if c.client and c.client[0] == host) > limits.per_client:
            return f"more than {limits.per_client} connections open from one address (GUARDRAIL_MAX_CLIENT_CONNECTIONS)"
        return None

    def _start_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_too_slow)

    def _head_complete(self) -> None:
        self._awaiting_head = False
        self._cancel_head_timer()

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._awaiting_head and not self.transport.is_closing():
            # A connection that sent nothing (a browser's preconnect) is ordinary; a head begun and
            # never finished is a slow or hostile client.
            level = logging.WARNING if self.conn.trailing_data[0] else logging.INFO
            self.logger.log(level, "request head not received within %.0f s; connection closed", self.head_timeout)
            self._send_error_and_close(408, f"request head not received within {self.head_timeout:g} s")

    def _send_error_and_close(self, status: int, text: str, headers: dict[str, str] | None = None) -> None:
        """Write an error answer in the service's shape, stop writing, then drop what the client
        still sends for a moment before closing (closing with unread data would reset the connection)."""
        self._cancel_head_timer()
        if self.transport.is_closing():
            return
        body = json.dumps(error_body(status, text)).encode("utf-8")
        fields = {"content-type": "application/json", "content-length": str(len(body)), "connection": "close"}
        head = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in {**fields, **(headers or {})}.items()]
        try:
            output = self.conn.send(h11.Response(status_code=status, headers=head, reason=STATUS_PHRASES[status]))
            output = (output or b"") + (self.conn.send(h11.Data(data=body)) or b"")
            output += self.conn.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:  # a response was already under way: nothing more to say
            self.transport.close()
            return
        self.transport.write(output)
        self._draining = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(_DRAIN_SECONDS, self.transport.close)
