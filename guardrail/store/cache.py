"""The page cache: fetched pages kept in SQLite, keyed by URL and the fetch options that change them.

A :class:`PageCache` is a :class:`~guardrail.fetch.base.PageStore`: put one behind a fetcher with
``FetchOnce(fetcher, store=cache)`` (what :func:`guardrail.runtime.build_verifier` does).

What is cached (see :func:`cache_class`):

* ``keep`` (full TTL, default 24 h): pages with readable content, and definitive outcomes that
  would come out the same on a second fetch: origin 404/410, ``too_large``,
  ``unsupported_content_type``, ``too_many_redirects``, and content-derived verdicts such as a
  soft 404, an empty page or a redirect to the home page.
* ``transient`` (``transient_ttl``, default 0 = not cached): timeouts, connection/DNS errors, any
  other 4xx/5xx (401/403 are often bot walls, 408/429/5xx pass), bot-challenge pages, and any
  reason code this module does not know.
* ``never``: ``blocked_address`` and ``invalid_url``. They cost nothing to decide again, and the
  SSRF guard must be applied by the fetcher on every call, never remembered.

Pages are stored as the :class:`~guardrail.core.schema.FetchedPage` JSON with the text zlib-compressed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from pydantic import SecretStr

from guardrail.core.interpret import interpret
from guardrail.core.schema import FetchedPage, Reason
from guardrail.store._sqlite import SQLiteFile, StoreError

log = logging.getLogger("guardrail.store")

CacheClass = Literal["keep", "transient", "never"]
"""How long a fetched page may be served from the cache: full TTL, the transient TTL, or never."""

_NEVER_REASONS = {Reason.blocked_address.value, Reason.invalid_url.value}
_KEEP_REASONS = {
    Reason.too_large.value,
    Reason.unsupported_content_type.value,
    Reason.too_many_redirects.value,
    Reason.redirected_to_homepage.value,
    Reason.soft_404.value,
    Reason.empty_page.value,
}
_DEFINITIVE_STATUSES = {404, 410}

FetchOptions = Mapping[str, Any]
"""The fetch options that change a fetched page (JSON values, never secrets)."""


def cache_class(page: FetchedPage) -> CacheClass:
    """Whether ``page`` is kept for the full TTL, only for the transient TTL, or never cached."""
    if page.reason in _NEVER_REASONS:
        return "never"
    if page.reason is not None and page.reason not in _KEEP_REASONS:
        return "transient"
    status = page.original_status
    if status is not None and status >= 400:
        return "keep" if status in _DEFINITIVE_STATUSES else "transient"
    if page.reason is None and interpret(page).reason == Reason.bot_challenge.value:
        return "transient"
    return "keep"


def cache_key(url: str, fetcher: str, options: FetchOptions | None = None) -> str:
    """The cache key of ``url`` fetched by ``fetcher`` with ``options``: sha256 of canonical JSON."""
    blob = json.dumps(
        {"url": url, "fetcher": fetcher, "options": dict(options or {})},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=_reject_option,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _reject_option(value: object) -> object:
    if isinstance(value, SecretStr):
        raise TypeError("a fetch option is a secret; cache keys must never hold tokens or keys")
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"fetch option of type {type(value).__name__} cannot be part of a cache key")


class PageCache(SQLiteFile):
    """Fetched pages in a SQLite file, served until their TTL runs out.

    Safe to share between threads, and between processes opening the same file (WAL mode,
    busy timeout, one short transaction per call). A file found damaged while in use is given up
    with one warning: reads miss and writes are skipped from then on (a page cache only saves
    time); a lock held by another process past the busy timeout raises StoreError (``busy``).
    ``ttl`` applies at read time too, so lowering it expires older entries at once. ``clock``
    returns Unix seconds (for tests).
    """

    KIND = "page cache"
    SWEEP_INTERVAL = 600.0
    """Seconds between sweeps of expired entries (each a bounded batch, during a write)."""
    SWEEP_BATCH = 500
    SCHEMA_VERSION = 1
    SCHEMA = (
        """CREATE TABLE pages (
            key TEXT PRIMARY KEY,
            url TEXT NOT NULL,
            fetcher TEXT NOT NULL,
            options TEXT NOT NULL,
            stored_at REAL NOT NULL,
            expires_at REAL NOT NULL,
            meta TEXT NOT NULL,
            body BLOB NOT NULL
        )""",
        "CREATE INDEX pages_expires ON pages (expires_at)",
    )

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        ttl: float = 24 * 3600.0,
        transient_ttl: float = 0.0,
        busy_timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl < 0 or transient_ttl < 0:
            raise ValueError("cache TTLs must be >= 0 seconds")
        super().__init__(path, busy_timeout=busy_timeout)
        self.ttl = ttl
        self.transient_ttl = transient_ttl
        self.clock = clock
        self._last_sweep = float("-inf")
        self.damaged: str | None = None
        """Why the file stopped being used mid-run (damaged), or None."""

    def ttl_for(self, page: FetchedPage) -> float:
        """Seconds ``page`` may be served from the cache (0: not stored)."""
        kind = cache_class(page)
        if kind == "keep":
            return self.ttl
        return self.transient_ttl if kind == "transient" else 0.0

    # -- reads -----------------------------------------------------------------

    def get(self, url: str, *, fetcher: str, options: FetchOptions | None = None) -> FetchedPage | None:
        """The fresh cached page for ``url``, or None."""
        return self.get_many([url], fetcher=fetcher, options=options).get(url)

    def get_many(
        self, urls: Iterable[str], *, fetcher: str, options: FetchOptions | None = None
    ) -> dict[str, FetchedPage]:
        """Fresh cached pages for those of ``urls`` that have one, keyed by URL."""
        keys = {cache_key(u, fetcher, options): u for u in dict.fromkeys(urls)}
        if not keys or self.damaged is not None:
            return {}
        try:
            rows = self._select(list(keys))
        except StoreError as exc:
            self._give_up(exc)
            return {}
        found: dict[str, FetchedPage] = {}
        for key, meta, body in rows:
            try:
                data = json.loads(meta)
                data["text"] = zlib.decompress(body).decode("utf-8")
                found[keys[key]] = FetchedPage.model_validate(data)
            except (ValueError, zlib.error) as exc:  # a damaged row is a miss, never a wrong page
                log.warning("ignoring damaged page-cache entry for %s: %s", keys[key], exc)
        return {u: found[u] for u in keys.values() if u in found}

    def _select(self, keys: list[str]) -> list[tuple[str, str, bytes]]:
        now = self.clock()
        rows: list[tuple[str, str, bytes]] = []
        with self._read() as conn:
            for start in range(0, len(keys), 500):  # stay under SQLite's bound-parameter limit
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows.extend(
                    conn.execute(
                        f"SELECT key, meta, body FROM pages WHERE key IN ({marks}) "
                        "AND expires_at > ? AND stored_at > ?",
                        (*chunk, now, now - self.ttl),
                    ).fetchall()
                )
        return rows

    def _give_up(self, exc: StoreError) -> None:
        """Stop using a damaged file (one warning; the cache only saves time); a lock held by
        another process is raised as it is, since it passes."""
        if exc.busy:
            raise exc
        if self.damaged is None:
            self.damaged = str(exc)
            log.warning("page cache not used from now on, pages are fetched instead: %s", exc)

    # -- writes ----------------------------------------------------------------

    def put(self, page: FetchedPage, *, fetcher: str, options: FetchOptions | None = None) -> bool:
        """Store ``page`` under its URL if :meth:`ttl_for` allows; True when it was stored."""
        return self.put_many({page.url: page}, fetcher=fetcher, options=options) == 1

    def put_many(self, pages: Mapping[str, FetchedPage], *, fetcher: str, options: FetchOptions | None = None) -> int:
        """Store each cacheable page under the URL it is keyed by; returns how many were stored."""
        now = self.clock()
        opts = json.dumps(dict(options or {}), sort_keys=True, default=_reject_option)
        rows = []
        for url, page in pages.items():
            ttl = self.ttl_for(page)
            if ttl <= 0:
                continue
            meta = page.model_dump(mode="json", exclude={"text"})
            body = zlib.compress(page.text.encode("utf-8"), 6)
            rows.append((cache_key(url, fetcher, options), url, fetcher, opts, now, now + ttl, json.dumps(meta), body))
        if not rows or self.damaged is not None:
            return 0
        try:
            self._insert(rows, now)
        except StoreError as exc:
            self._give_up(exc)
            return 0
        return len(rows)

    def _insert(self, rows: list[tuple[Any, ...]], now: float) -> None:
        with self._write() as conn:
            conn.executemany("INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
            if now - self._last_sweep >= self.SWEEP_INTERVAL:
                # Expired entries of URLs never fetched again would pile up: drop a bounded
                # batch now and then, inside a write that happens anyway, so it stays short.
                self._last_sweep = now
                conn.execute(
                    "DELETE FROM pages WHERE rowid IN (SELECT rowid FROM pages WHERE expires_at <= ? "
                    f"LIMIT {self.SWEEP_BATCH})",
                    (now,),
                )

    def delete(self, url: str, *, fetcher: str, options: FetchOptions | None = None) -> bool:
        """Forget the cached page for ``url``; True when there was one."""
        with self._write() as conn:
            cur = conn.execute("DELETE FROM pages WHERE key = ?", (cache_key(url, fetcher, options),))
        return cur.rowcount > 0

    def purge(self, *, expired_only: bool = True) -> int:
        """Delete expired entries (or all of them); returns how many were deleted."""
        now = self.clock()
        with self._write() as conn:
            if expired_only:
                cur = conn.execute("DELETE FROM pages WHERE expires_at <= ? OR stored_at <= ?", (now, now - self.ttl))
            else:
                cur = conn.execute("DELETE FROM pages")
        return cur.rowcount

    def __len__(self) -> int:
        with self._read() as conn:
            return int(conn.execute("SELECT count(*) FROM pages").fetchone()[0])


__all__ = [
    "CacheClass",
    "FetchOptions",
    "PageCache",
    "cache_class",
    "cache_key",
]
