"""Replay: what the judge saw for an audited decision, read back from the audit store and, for
pages fetched through Crawlbase, from the Crawlbase Storage API (network I/O, so not in the store)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from guardrail._bridges import run_sync
from guardrail.core.schema import FetchedPage
from guardrail.fetch.crawlbase import CrawlbaseError, read_stored
from guardrail.settings import ConfigurationError, Settings
from guardrail.store.audit import AuditRecord, AuditStore, content_hash

__all__ = ["Replay", "TextSource", "areplay", "replay"]

TextSource = Literal["crawlbase_storage", "local", "none"]
"""Where a replayed page text came from."""


class Replay(BaseModel):
    """What a judge saw for one decision, read back: the page text and the passages shown.

    ``text_source`` says where ``text`` came from; ``content_hash_ok`` whether it hashes to
    the recorded ``content_hash`` (None when there is nothing to compare); ``note`` why
    the Storage API was not used or failed (never holding a token).
    """

    record: AuditRecord | None
    text: str | None = None
    text_source: TextSource = "none"
    passages: list[str] = Field(default_factory=list)
    content_hash_ok: bool | None = None
    stored: FetchedPage | None = Field(default=None, description="The Storage API's copy, when read.")
    note: str | None = None


async def areplay(store: AuditStore, id_or_rid: str | int, *, settings: Settings | None = None) -> list[Replay]:
    """What the judge saw for the row with this id, or for every row with this rid.

    A row with a rid has its page read back through the Crawlbase Storage API when a
    token is configured (``CRAWLBASE_TOKEN`` or ``CRAWLBASE_JS_TOKEN``; storage is per
    token, both are tried), falling back to the local copy with a ``note`` saying why;
    other rows show the local copy. A rid with no row here is still read from the
    Storage API. Raises LookupError when nothing matches.
    """
    ident = str(id_or_rid).strip()
    records = store.resolve(ident)
    storage = _Storage(settings if settings is not None else Settings.from_env())
    if not records:
        if ident.isdigit() or not storage.has_token:
            raise LookupError(f"no audit row with id or rid {ident!r} in {store.path}")
        page = await storage.read(ident)
        if isinstance(page, str):
            raise LookupError(f"no audit row with id or rid {ident!r} in {store.path}, and {page}")
        return [Replay(record=None, text=page.text, text_source="crawlbase_storage", stored=page)]
    return [await _replay_record(store, record, storage) for record in records]


class _Storage:
    """Pages read back from the Crawlbase Storage API, once per rid."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.has_token = settings.crawlbase_token is not None or settings.crawlbase_js_token is not None
        self._read: dict[str, FetchedPage | str] = {}

    async def read(self, rid: str) -> FetchedPage | str:
        """The stored page, or why it could not be read (messages never hold a token)."""
        if rid not in self._read:
            try:
                self._read[rid] = await read_stored(rid, settings=self.settings, timeout=self.settings.fetch_timeout)
            except LookupError:
                self._read[rid] = f"the Crawlbase Storage API has no page for rid {rid!r}"
            except (ConfigurationError, CrawlbaseError, ValueError) as exc:
                self._read[rid] = str(exc)
        return self._read[rid]


async def _replay_record(store: AuditStore, record: AuditRecord, storage: _Storage) -> Replay:
    replay = Replay(record=record, passages=record.passages)
    notes: list[str] = []
    if record.rid and storage.has_token:
        page = await storage.read(record.rid)
        if isinstance(page, FetchedPage):
            replay.text, replay.text_source, replay.stored = page.text, "crawlbase_storage", page
        else:
            notes.append(f"{page}; showing the local copy")
    elif record.rid:
        notes.append("no CRAWLBASE_TOKEN or CRAWLBASE_JS_TOKEN set; showing the local copy")
    if replay.text_source == "none":
        local = store.content(record.content_hash)
        if local is not None:
            replay.text, replay.text_source = local, "local"
        elif record.content_hash:
            notes.append("the page text was not stored locally")
    if replay.text is not None and record.content_hash:
        replay.content_hash_ok = content_hash(replay.text) == record.content_hash
        if not replay.content_hash_ok and replay.text_source == "crawlbase_storage":
            notes.append("the Storage API copy differs from the text the judge saw")
    replay.note = "; ".join(notes) or None
    return replay


def replay(store: AuditStore, id_or_rid: str | int, *, settings: Settings | None = None) -> list[Replay]:
    """Synchronous :func:`areplay`."""
    return run_sync(lambda: areplay(store, id_or_rid, settings=settings))
