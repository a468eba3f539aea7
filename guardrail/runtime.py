"""The composition root: the one place a verifier is wired with its stores.

Every app builds its verifier here and differs only in the arguments it passes:

==============================  ====================  ====================  ================  ==================
caller                          page cache            audit store           judge calls       fetcher
==============================  ====================  ====================  ================  ==================
``build_verifier()`` (library,  as the settings say   as the settings say   one per call      from the settings
LangChain, LlamaIndex)          (unset: off)          (unset: off)
``guardrail verify/check``      on (``--no-cache``)   on (``--no-audit``)   one per call      from the settings
``guardrail batch`` (local)     on (``--no-cache``)   on (``--no-audit``)   batched across    from the settings
                                                                            rows
``guardrail batch --engine      node's file           off                   batched across    from the settings
ray`` (each actor)              (``--no-cache``)                            rows
``guardrail serve``             on                    as the settings say   batched across    from the settings
                                                                            requests
``guardrail demo``              off                   off                   one per call      direct, the demo
                                                                                              site let through
==============================  ====================  ====================  ================  ==================

"on" is ``GUARDRAIL_CACHE`` / ``GUARDRAIL_AUDIT_DB`` when set (``off`` turns it off), else the user
cache folder; "as the settings say" is the variable when set, else no store. Every verifier fetches
each page once per answer and per in-flight fetch (:class:`~guardrail.fetch.once.FetchOnce`).
Archived copies of dead links are looked up only when asked for, by every caller alike
(``archive="wayback"``, else ``GUARDRAIL_ARCHIVE``; :mod:`guardrail.archive`): this is the one
place the archive stage is built.
An unusable page cache is skipped with a warning (it only saves time), and one found damaged
mid-run is given up with one warning; an unusable audit store raises
:class:`~guardrail.store.StoreError` (the caller asked for a record), unless ``defer_audit_errors``
(the service): then its rows are kept and retried and :attr:`Runtime.audit_status` says why they
wait. Audit rows are written by an :class:`~guardrail.store.AuditWriter`, off the caller's thread;
:meth:`Runtime.close` waits up to ``audit_flush_timeout`` seconds for them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from guardrail.archive import Archive, WaybackArchive
from guardrail.fetch.base import Fetcher
from guardrail.judges.base import Judge
from guardrail.retrieval import Embedder
from guardrail.settings import Settings
from guardrail.store import AuditStatus, AuditStore, AuditWriter, PageCache, StoreError
from guardrail.store.paths import default_audit_path, default_cache_path, resolve_path
from guardrail.verifier import Recorder, Verifier

log = logging.getLogger("guardrail")

__all__ = ["AUDIT_BUSY_TIMEOUT", "ArchiveChoice", "Runtime", "StoreChoice", "build_runtime", "build_verifier"]

AUDIT_BUSY_TIMEOUT = 2.0
"""Seconds one audit write waits for another process's lock before the writer retries it later
(the writer's own thread waits, never a request)."""

StoreChoice = bool | None | str | os.PathLike[str]
"""Which store to open: ``None`` as the settings say (unset: none), ``True`` the settings' or the
default file, ``False`` none, or a path."""


ArchiveChoice = Archive | str | bool | None
"""Which archive dead links are looked up in: ``None`` as the settings say (``GUARDRAIL_ARCHIVE``,
unset: none), ``"wayback"`` (or ``True``) the Wayback Machine at ``GUARDRAIL_WAYBACK_URL``,
``False`` / ``"off"`` none, or an :class:`~guardrail.archive.Archive` of your own."""


@dataclass
class Runtime:
    """A verifier and the stores opened for it; :meth:`close` (or ``with``) closes them."""

    verifier: Verifier
    cache: PageCache | None = None
    audit: AuditStore | None = None
    audit_writer: AuditWriter | None = None

    @property
    def audit_status(self) -> AuditStatus | None:
        """How the audit store is doing (rows written, waiting, lost; the last failure); None without one."""
        return self.audit_writer.status() if self.audit_writer is not None else None

    def close(self) -> None:
        """Write the audit rows still queued (within the writer's flush timeout), then close the
        stores (through the verifier, which owns them)."""
        self.verifier.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_runtime(
    settings: Settings | None = None,
    *,
    cache: StoreChoice = None,
    audit: StoreChoice = None,
    batch_judge_calls: bool = False,
    fetcher: Fetcher | None = None,
    embedder: Embedder | None = None,
    judge: Judge | None = None,
    recorders: Sequence[Recorder] = (),
    on_audit: Callable[[int], None] | None = None,
    defer_audit_errors: bool = False,
    audit_flush_timeout: float = 5.0,
    archive: ArchiveChoice = None,
) -> Runtime:
    """A verifier wired from ``settings`` (default: the environment) with the stores asked for
    (see the module's table). ``fetcher``, ``embedder`` and ``judge`` replace the settings' ones;
    ``recorders`` see every decision; ``on_audit`` is told each audit row id as it is written.
    ``defer_audit_errors`` keeps an audit store that cannot be opened (its rows wait and are
    retried) instead of raising StoreError; ``audit_flush_timeout`` is how long :meth:`Runtime.close`
    waits for queued audit rows; ``archive`` where dead links are looked up (:data:`ArchiveChoice`)."""
    settings = settings or Settings.from_env()
    archive_stage = build_archive(archive, settings)
    page_cache = _open_cache(resolve_path_choice(cache, settings.cache_path, default_cache_path()), settings)
    audit_path = resolve_path_choice(audit, settings.audit_path, default_audit_path())
    writer = _audit_writer(audit_path, on_audit, defer_audit_errors)
    audit_store = writer.store if writer is not None else None
    all_recorders = list(recorders)
    if writer is not None:
        all_recorders.append(writer)
    try:
        verifier = Verifier(
            settings=settings,
            fetcher=fetcher,
            embedder=embedder,
            judge=judge,
            recorders=all_recorders,
            page_store=page_cache,
            batch_judge_calls=batch_judge_calls,
            archive=archive_stage,
        )
    except BaseException:
        for store in (page_cache, audit_store):
            if store is not None:
                store.close()
        raise
    for store in (page_cache, audit_store):
        if store is not None:
            verifier.on_close(store.close)
    if writer is not None:  # closed first (newest first): its queue is written before the store closes
        verifier.on_close(lambda: _close_writer(writer, audit_flush_timeout))
    return Runtime(verifier=verifier, cache=page_cache, audit=audit_store, audit_writer=writer)


def build_verifier(
    settings: Settings | None = None,
    *,
    cache: StoreChoice = None,
    audit: StoreChoice = None,
    batch_judge_calls: bool = False,
    fetcher: Fetcher | None = None,
    embedder: Embedder | None = None,
    judge: Judge | None = None,
    recorders: Sequence[Recorder] = (),
    archive: ArchiveChoice = None,
) -> Verifier:
    """:func:`build_runtime`'s verifier; its :meth:`~guardrail.verifier.Verifier.close` closes the
    stores it opened."""
    return build_runtime(
        settings,
        cache=cache,
        audit=audit,
        batch_judge_calls=batch_judge_calls,
        fetcher=fetcher,
        embedder=embedder,
        judge=judge,
        recorders=recorders,
        archive=archive,
    ).verifier


def build_archive(choice: ArchiveChoice, settings: Settings) -> Archive | None:
    """The archive stage a :data:`ArchiveChoice` names (ValueError for an unknown name)."""
    if choice is None:
        choice = settings.archive or False
    if choice is True:
        choice = "wayback"
    if choice is False:
        return None
    if isinstance(choice, str):
        name = choice.strip().lower()
        if name in ("", "off", "none"):
            return None
        if name != "wayback":
            raise ValueError(f"unknown archive {choice!r}; choose wayback (or off)")
        return WaybackArchive.from_settings(settings)
    return choice


def resolve_path_choice(choice: StoreChoice, setting: Path | None, default: Path) -> Path | None:
    """The file a :data:`StoreChoice` names, given the setting (``GUARDRAIL_*``) and the default."""
    if choice is False:
        return None
    if choice is None:
        return resolve_path(setting, None)
    if choice is True:
        return resolve_path(setting, default)
    return resolve_path(choice, None)


def _open_cache(path: Path | None, settings: Settings) -> PageCache | None:
    if path is None:
        return None
    cache = PageCache(path, ttl=settings.cache_ttl)
    try:
        len(cache)  # opens the file and checks its schema now, not mid-run
    except (StoreError, OSError) as exc:
        cache.close()
        log.warning("page cache not used: %s", exc)
        return None
    return cache


def _audit_writer(path: Path | None, on_audit: Callable[[int], None] | None, defer_errors: bool) -> AuditWriter | None:
    """The writer of the audit store at ``path``: StoreError when the file cannot be used, unless
    ``defer_errors`` (then the writer starts out failing, and keeps and retries its rows)."""
    if path is None:
        return None
    store = AuditStore(path, busy_timeout=AUDIT_BUSY_TIMEOUT)
    try:
        store.count()
    except (StoreError, OSError) as exc:
        store.close()
        if not defer_errors:
            raise StoreError(str(exc)) from None
        log.error("audit store not usable now; decisions are kept and retried: %s", exc)
        return AuditWriter(store, on_audit=on_audit, error=f"{type(exc).__name__}: {exc}")
    return AuditWriter(store, on_audit=on_audit)


def _close_writer(writer: AuditWriter, timeout: float) -> None:
    writer.close(timeout)
