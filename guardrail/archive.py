"""The archive stage: where a dead link's page may still be read (opt-in).

A cited page that is gone (a dead link: 404, 410, no such host) may have been archived.
:class:`Archive` is the protocol the verifier asks for the closest snapshot of such a URL;
:class:`WaybackArchive` asks the Wayback Machine's availability API
(``GET {base}/wayback/available?url=URL&timestamp=T``, documented at
https://archive.org/help/wayback_api.php) and answers the snapshot in its raw form (the ``id_``
URL: the page as archived, without the archive's toolbar and rewritten links). The snapshot itself
is fetched by the verifier's own fetcher, so the SSRF guard, the caps, politeness and the page
cache apply to it as to any cited page.

What is sent to the archive: the dead URL (without its ``#fragment``), the timestamp asked for and
our User-Agent; nothing of the answer or the claim. That is a third party learning which URLs an
answer cited, so nothing here runs unless it is turned on (``GUARDRAIL_ARCHIVE=wayback``,
``build_verifier(archive="wayback")``, ``--archive wayback``). The base URL is configured, not
cited, so it is not subject to the SSRF guard (like the Crawlbase API's).

An archive that fails (no snapshot, an error status, a timeout, an answer we cannot read) answers
None and the link stays a dead link: the archive's failure is never the page's.
"""

from __future__ import annotations

import asyncio
import logging
import re
import ssl
from datetime import datetime, timezone
from typing import Protocol, runtime_checkable

import httpx
from pydantic import BaseModel, ValidationError

from guardrail.core.schema import ArchivedSnapshot
from guardrail.fetch._http import ACCEPT_ENCODING, DEFAULT_USER_AGENT, BodyTooLarge, UnsupportedEncoding, read_capped
from guardrail.fetch.once import page_key
from guardrail.fetch.politeness import HostLimiter, HostLimits
from guardrail.settings import DEFAULT_ARCHIVE_TIMEOUT, DEFAULT_WAYBACK_URL, Settings

__all__ = ["Archive", "WaybackArchive", "raw_snapshot_url", "wayback_timestamp"]

log = logging.getLogger("guardrail.archive")

MAX_ANSWER_BYTES = 256 * 1024
"""The most an availability answer may weigh (a real one is a few hundred bytes)."""

_SNAPSHOT = re.compile(r"^(https?://[^/?#]+/web/)(\d{1,14})(?:[a-z]{2}_)?/(.+)$", re.IGNORECASE)
"""A Wayback snapshot URL: ``.../web/<timestamp>[<flag>_]/<original URL>``."""


@runtime_checkable
class Archive(Protocol):
    """Finds the closest archived copy of a page that is gone.

    ``lookup`` never raises for a failure of the archive (no snapshot, an error, a timeout): it
    answers None, and the citation stays a dead link.
    """

    name: str

    async def lookup(self, url: str, at: datetime) -> ArchivedSnapshot | None:
        """The snapshot of ``url`` closest to ``at`` (UTC), or None when there is none to use."""
        ...


def wayback_timestamp(at: datetime) -> str:
    """``at`` as the Wayback Machine writes times: ``YYYYMMDDhhmmss`` in UTC (naive means UTC)."""
    moment = at.astimezone(timezone.utc) if at.tzinfo is not None else at
    return moment.strftime("%Y%m%d%H%M%S")


def raw_snapshot_url(snapshot_url: str) -> str | None:
    """The ``id_`` form of a Wayback snapshot URL (the page as archived, no toolbar), or None when
    ``snapshot_url`` is not one: ``https://web.archive.org/web/2013/https://x/`` ->
    ``https://web.archive.org/web/2013id_/https://x/``."""
    match = _SNAPSHOT.match(snapshot_url.strip())
    if match is None:
        return None
    return f"{match.group(1)}{match.group(2)}id_/{match.group(3)}"


def _parse_timestamp(value: str) -> datetime | None:
    """A Wayback timestamp (``YYYYMMDDhhmmss``) as a UTC datetime, or None."""
    digits = value.strip()
    if len(digits) != 14 or not digits.isdigit():
        return None
    try:
        return datetime.strptime(digits, "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


class _Closest(BaseModel):
    available: bool = False
    url: str = ""
    timestamp: str = ""
    status: str = ""


class _Snapshots(BaseModel):
    closest: _Closest | None = None


class _Availability(BaseModel):
    archived_snapshots: _Snapshots | dict[str, object] | list[object] | None = None


class WaybackArchive:
    """The Wayback Machine's availability API at ``base_url`` (default https://archive.org; point
    it at a local server to test). ``timeout``: seconds per lookup, all of it; ``host_limits``:
    requests in flight and per second to the archive (the fetchers' politeness)."""

    name = "wayback"

    def __init__(
        self,
        base_url: str = DEFAULT_WAYBACK_URL,
        *,
        timeout: float = DEFAULT_ARCHIVE_TIMEOUT,
        user_agent: str = DEFAULT_USER_AGENT,
        host_limits: HostLimits | None = None,
        verify: bool | ssl.SSLContext = True,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        base = httpx.URL(base_url.strip())
        if base.scheme not in ("http", "https") or not base.host:
            raise ValueError(f"the archive's base URL must be an http(s) URL, not {base_url!r}")
        self.base_url = str(base).rstrip("/")
        self.timeout = timeout
        self.user_agent = user_agent
        self.verify = verify
        self.hosts = HostLimiter(host_limits)
        self._tls_context: ssl.SSLContext | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> WaybackArchive:
        """The archive at ``GUARDRAIL_WAYBACK_URL``, with ``GUARDRAIL_ARCHIVE_TIMEOUT`` and the
        host politeness settings."""
        return cls(
            settings.wayback_url,
            timeout=settings.archive_timeout,
            host_limits=HostLimits(concurrency=settings.host_concurrency, rate=settings.host_rate or None),
        )

    def __repr__(self) -> str:
        return f"WaybackArchive({self.base_url!r}, timeout={self.timeout})"

    async def lookup(self, url: str, at: datetime) -> ArchivedSnapshot | None:
        """The closest snapshot of ``url`` to ``at`` that the archive holds with status 200, in raw
        form; None when there is none, or the archive failed (logged, never raised)."""
        try:
            return await asyncio.wait_for(self._ask(page_key(url.strip()), at), self.timeout)
        except asyncio.TimeoutError:
            log.warning(
                "archive %s: no answer about %s within %.1f s; the link stays dead", self.name, url, self.timeout
            )
        except (httpx.HTTPError, BodyTooLarge, UnsupportedEncoding, ValueError) as exc:
            log.warning("archive %s: lookup of %s failed (%s); the link stays dead", self.name, url, exc)
        return None

    async def _ask(self, url: str, at: datetime) -> ArchivedSnapshot | None:
        endpoint = httpx.URL(f"{self.base_url}/wayback/available")
        params = {"url": url, "timestamp": wayback_timestamp(at)}
        headers = {"User-Agent": self.user_agent, "Accept": "application/json", "Accept-Encoding": ACCEPT_ENCODING}
        async with (
            self.hosts.slot(endpoint.host),
            self._client(await self._tls()) as client,
            client.stream("GET", endpoint, params=params, headers=headers) as response,
        ):
            if response.status_code != 200:
                log.warning(
                    "archive %s answered %d about %s; the link stays dead", self.name, response.status_code, url
                )
                return None
            body = await read_capped(response, MAX_ANSWER_BYTES)
        return self._snapshot(url, body)

    def _snapshot(self, url: str, body: bytes) -> ArchivedSnapshot | None:
        try:
            answer = _Availability.model_validate_json(body)
        except ValidationError as exc:
            raise ValueError(f"not an availability answer: {exc.error_count()} problem(s)") from None
        snapshots = answer.archived_snapshots
        closest = snapshots.closest if isinstance(snapshots, _Snapshots) else None
        if closest is None or not closest.available or not closest.status.startswith("2"):
            log.info("archive %s holds no usable snapshot of %s", self.name, url)
            return None
        raw = raw_snapshot_url(closest.url)
        taken = _parse_timestamp(closest.timestamp)
        if raw is None or taken is None:
            log.warning("archive %s answered a snapshot of %s it does not describe: %r", self.name, url, closest.url)
            return None
        return ArchivedSnapshot(url=closest.url.strip(), raw_url=raw, archived_at=taken)

    async def _tls(self) -> ssl.SSLContext:
        # Built once, off the event loop: loading the CA bundle takes ~0.1 s.
        if self._tls_context is None:
            self._tls_context = await asyncio.to_thread(httpx.create_ssl_context, self.verify, None, False)
        return self._tls_context

    def _client(self, tls: ssl.SSLContext) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout), follow_redirects=True, max_redirects=3, trust_env=False, verify=tls
        )
