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
An unusable page cache is skipped with a warning (it only saves time); an unusable audit store
raises :class:`~guardrail.store.StoreError` (the caller asked for a record).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from guardrail.fetch.base import Fetcher
from guardrail.judges.base import Judge
from guardrail.retrieval import Embedder
from guardrail.settings import Settings
from guardrail.store import AuditStore, PageCache, StoreError
from guardrail.store.paths import default_audit_path, default_cache_path, resolve_path
from guardrail.verifier import DecisionRecord, Recorder, Verifier

log = logging.getLogger("guardrail")

__all__ = ["Runtime", "StoreChoice", "build_runtime", "build_verifier"]

StoreChoice = bool | None | str | os.PathLike[str]
"""Which store to open: ``None`` as the settings say (unset: none), ``True`` the settings' or the
default file, ``False`` none, or a path."""


@dataclass
class Runtime:
    """A verifier and the stores opened for it; :meth:`close` (or ``with``) closes them."""

    verifier: Verifier
    cache: PageCache | None = None
    audit: AuditStore | None = None

    def close(self) -> None:
        """Close the stores (through the verifier, which owns them)."""
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
) -> Runtime:
    """A verifier wired from ``settings`` (default: the environment) with the stores asked for
    (see the module's table). ``fetcher``, ``embedder`` and ``judge`` replace the settings' ones;
    ``recorders`` see every decision; ``on_audit`` is told each audit row id as it is written."""
    settings = settings or Settings.from_env()
    page_cache = _open_cache(resolve_path_choice(cache, settings.cache_path, default_cache_path()), settings)
    audit_store = _open_audit(resolve_path_choice(audit, settings.audit_path, default_audit_path()))
    all_recorders = list(recorders)
    if audit_store is not None:
        all_recorders.append(_AuditRecorder(audit_store, on_audit))
    try:
        verifier = Verifier(
            settings=settings,
            fetcher=fetcher,
            embedder=embedder,
            judge=judge,
            recorders=all_recorders,
            page_store=page_cache,
            batch_judge_calls=batch_judge_calls,
        )
    except BaseException:
        for store in (page_cache, audit_store):
            if store is not None:
                store.close()
        raise
    for store in (page_cache, audit_store):
        if store is not None:
            verifier.on_close(store.close)
    return Runtime(verifier=verifier, cache=page_cache, audit=audit_store)


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
    ).verifier


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


def _open_audit(path: Path | None) -> AuditStore | None:
    if path is None:
        return None
    store = AuditStore(path)
    try:
        store.count()
    except (StoreError, OSError) as exc:
        store.close()
        raise StoreError(str(exc)) from None
    return store


class _AuditRecorder:
    """Writes each decision to the audit store and tells ``on_audit`` the row id."""

    def __init__(self, store: AuditStore, on_audit: Callable[[int], None] | None) -> None:
        self.store = store
        self.on_audit = on_audit

    def __call__(self, decision: DecisionRecord) -> None:
        row = self.store.record(decision)
        if self.on_audit is not None:
            self.on_audit(row)
