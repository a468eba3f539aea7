"""The HTTP/1.1 protocol ``guardrail serve`` runs uvicorn with: uvicorn's h11 protocol, plus

* **431** for a request head over the size limit (h11's ``max_incomplete_event_size``) rather than
  uvicorn's generic 400, and
* a **deadline on the request head**: a client that has started a request must send its whole
  head (request line and headers) within ``head_timeout`` seconds, or the connection is closed
  (uvicorn's ``timeout_keep_alive`` only covers the wait *between* requests; the body has its own
  deadline in :class:`~guardrail.apps.server.middleware.BodyLimit`);
* error answers that reach the client: after one, the server stops writing and reads (and drops)
  what the client is still sending for a moment before closing, so that closing with unread data
  does not reset the connection and destroy the answer on its way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol

__all__ = ["DEFAULT_HEAD_TIMEOUT", "MAX_HEAD_BYTES", "GuardedH11Protocol"]

DEFAULT_HEAD_TIMEOUT = 10.0
"""Seconds a client has to send a request's head once it started it."""
MAX_HEAD_BYTES = 32 * 1024
"""The largest request head accepted (431 above it): h11's ``max_incomplete_event_size``."""
_DRAIN_SECONDS = 1.0


class _Connection(h11.Connection):
    """h11's connection, keeping the status h11 suggests for the last protocol error, and telling
    its owner when a request's head is complete."""

    def __init__(self, max_head_bytes: int, on_request: Callable[[], None]) -> None:
        super().__init__(h11.SERVER, max_head_bytes)
        self.error_status = 400
        self.on_request = on_request

    def next_event(self) -> Any:
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as exc:
            self.error_status = exc.error_status_hint
            raise
        if isinstance(event, h11.Request):
            self.on_request()
        return event


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the guards of the module docs; give uvicorn the class
    (``http=GuardedH11Protocol``). A subclass may change :attr:`head_timeout`."""

    head_timeout = DEFAULT_HEAD_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit = self.config.h11_max_incomplete_event_size or MAX_HEAD_BYTES
        self.conn = _Connection(limit, self._head_complete)
        self._awaiting_head = True
        self._head_timer: asyncio.TimerHandle | None = None
        self._draining = False

    def data_received(self, data: bytes) -> None:
        """Drop data after an error answer; start the head's deadline with its first bytes."""
        if self._draining:
            return
        if self._awaiting_head and self._head_timer is None:
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_too_slow)
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
        text = "Request header fields too large" if status == 431 else msg
        self._send_error_and_close(status, text)

    # -- helpers ------------------------------------------------------------------------------------

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
            self.logger.warning("request head not received within %.0f s; connection closed", self.head_timeout)
            self._send_error_and_close(408, "Request head not received in time")

    def _send_error_and_close(self, status: int, text: str) -> None:
        """Write a plain-text error answer, stop writing, then drop what the client still sends for a
        moment before closing (closing with unread data would reset the connection)."""
        self._cancel_head_timer()
        if self.transport.is_closing():
            return
        body = text.encode("ascii", "replace")
        head = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]
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
