"""SQLite stores shared by the CLI, batch runs and the service.

* :class:`PageCache`: fetched pages kept for a TTL (default 24 h), keyed by URL and the fetch
  options that change them (a :class:`~guardrail.fetch.base.PageStore` for
  :class:`~guardrail.fetch.once.FetchOnce`).
* :class:`AuditStore`: one row per decided citation, with the exact text the judge saw
  (:mod:`guardrail.replay` reads it back, through the Crawlbase Storage API for pages with a rid).
* :class:`AuditWriter`: the recorder the apps use: rows written from a thread of its own, kept
  and retried while the store cannot take them, a bounded queue, losses counted.

Locations: ``GUARDRAIL_CACHE`` and ``GUARDRAIL_AUDIT_DB`` (``off`` turns a store off). The
library uses a store only when it is given one (or the variable is set and the caller
asks ``from_settings``); the CLI defaults to :func:`default_cache_path` and
:func:`default_audit_path` in the user cache folder (``$XDG_CACHE_HOME/guardrail``).
"""

from __future__ import annotations

from guardrail.store._sqlite import StoreError
from guardrail.store.audit import AuditRecord, AuditStore, ExportFormat, content_hash, parse_since
from guardrail.store.cache import CacheClass, FetchOptions, PageCache, cache_class, cache_key
from guardrail.store.paths import default_audit_path, default_cache_path, resolve_path, user_cache_dir
from guardrail.store.writer import AuditStatus, AuditWriter

__all__ = [
    "AuditRecord",
    "AuditStatus",
    "AuditStore",
    "AuditWriter",
    "CacheClass",
    "ExportFormat",
    "FetchOptions",
    "PageCache",
    "StoreError",
    "cache_class",
    "cache_key",
    "content_hash",
    "default_audit_path",
    "default_cache_path",
    "parse_since",
    "resolve_path",
    "user_cache_dir",
]
