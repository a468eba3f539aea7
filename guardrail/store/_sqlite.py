"""One SQLite file shared by many threads and processes: WAL, busy timeout, short transactions.

Both stores (page cache, audit) build on :class:`SQLiteFile`. One connection per
instance and process, guarded by a lock: SQLite serialises writers anyway, and a
single connection keeps ``close()`` simple. Writes run in ``BEGIN IMMEDIATE``
transactions so that two processes never deadlock while upgrading a read lock to
a write lock; the busy timeout makes a writer wait for another instead of failing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

MEMORY = ":memory:"

log = logging.getLogger("guardrail.store")


class StoreError(RuntimeError):
    """A store file cannot be used (newer schema, not a database, damaged) or, with ``busy``,
    another process held its lock past the busy timeout; the message names the file."""

    def __init__(self, message: str, *, busy: bool = False) -> None:
        super().__init__(message)
        self.busy = busy


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc)
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


class SQLiteFile:
    """A SQLite database file opened lazily, safe to share between threads, reopened after a fork.

    Subclasses set ``KIND`` (a word for messages), ``SCHEMA_VERSION`` and ``SCHEMA``
    (statements run once, inside one transaction, when the file is new), and ``SAY_WHEN_EMPTY``:
    whether a file found empty (0 bytes: created by hand, or truncated, and no write-ahead log
    beside it) is taken as a new store with a warning saying so, rather than silently.
    """

    KIND = "store"
    SAY_WHEN_EMPTY = False
    SCHEMA_VERSION = 1
    SCHEMA: Sequence[str] = ()

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        if busy_timeout < 0:
            raise ValueError("busy_timeout must be >= 0 seconds")
        raw = os.fspath(path)
        if not raw:
            raise ValueError(f"{self.KIND} path must not be empty")
        self.path: Path | None = None if raw == MEMORY else Path(raw).expanduser()
        self.busy_timeout = busy_timeout
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path or MEMORY)!r})"

    # -- connection ------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """The open connection of this process (call with the lock held)."""
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        # A connection inherited through fork() must never be used by the child (SQLite forbids
        # it); the child simply opens its own and leaves the parent's alone.
        self._conn = None
        target = MEMORY
        found_empty = False
        if self.path is not None:
            found_empty = self.SAY_WHEN_EMPTY and _empty_file(self.path)
            _prepare_file(self.path)
            target = str(self.path)
        try:
            conn = sqlite3.connect(target, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.KIND} {target}: {exc}") from None
        try:
            self._setup_with_retry(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            if _is_busy(exc):
                raise
            raise StoreError(f"{target} is not a usable {self.KIND} database: {exc}") from None
        except BaseException:
            conn.close()
            raise
        self._conn, self._pid = conn, os.getpid()
        if found_empty:
            log.warning(
                "%s %s was an empty file (0 bytes): it is now a new, empty %s; whatever it held before "
                "(if it was truncated) is not in it",
                self.KIND,
                target,
                self.KIND,
            )
        return conn

    def _setup_with_retry(self, conn: sqlite3.Connection) -> None:
        """Pragmas and schema, retried while another process holds a lock. SQLite does not call the
        busy handler everywhere here (switching a new file to WAL, a reader meeting WAL recovery), so
        processes opening a fresh file together can see "database is locked" at once."""
        deadline = time.monotonic() + self.busy_timeout
        delay = 0.005
        while True:
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
                if self.path is not None:
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("PRAGMA synchronous = NORMAL")
                self._init_schema(conn)
                return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.25)

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == self.SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # another process may have won
            if version == 0:
                for statement in self.SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {self.SCHEMA_VERSION}")
            elif version != self.SCHEMA_VERSION:
                self._migrate(conn, version)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _migrate(self, conn: sqlite3.Connection, version: int) -> None:
        """Bring an older schema up to date; by default refuse any other version."""
        raise StoreError(
            f"{self.path or MEMORY} has {self.KIND} schema version {version}, this guardrail reads "
            f"version {self.SCHEMA_VERSION}; upgrade guardrail or point it at another file"
        )

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors():
            yield self._connection()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A short write transaction; callers prepare (compress, serialise) before entering it."""
        with self._lock, self._errors():
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # a failed COMMIT leaves it open too
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite's errors as :class:`StoreError` naming the file: ``busy`` for a lock held past the
        busy timeout, else a damaged or unusable file."""
        try:
            yield
        except sqlite3.Error as exc:
            where = f"{self.KIND} {self.path or MEMORY}"
            if _is_busy(exc):
                raise StoreError(f"{where} is locked by another process: {exc}", busy=True) from None
            raise StoreError(f"{where} cannot be used (damaged or not a database?): {exc}") from None

    def close(self) -> None:
        """Close this process's connection; the store reopens it on next use."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __enter__(self) -> SQLiteFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _empty_file(path: Path) -> bool:
    """Whether ``path`` is an existing file of 0 bytes with no write-ahead log holding its data."""
    try:
        if path.stat().st_size != 0:
            return False
    except OSError:
        return False  # not there yet: a new store, nothing to say
    wal = path.with_name(path.name + "-wal")
    return not (wal.exists() and wal.stat().st_size > 0)


def _prepare_file(path: Path) -> None:
    """Create the parent folder and, for a new file, an empty database readable by the owner only
    (the stores hold claims and page text; SQLite copies the mode to its -wal and -shm files)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.exists():
        return
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
