"""Resuming a batch run: each finished row is appended to a checkpoint next to the CSV
(``report.csv.checkpoint.jsonl``) as soon as it is done, with a digest of the row's content. A
rerun of the same command verifies only the rows that have no checkpoint entry (or whose content
changed), so an interrupted run picks up where it stopped. Failed rows are recorded too, and
verified again by the next run.

One run at a time writes a checkpoint: :meth:`Checkpoint.locked` holds an exclusive lock on
``<out>.lock`` (``filelock``: ``flock`` on POSIX, ``msvcrt`` on Windows; the operating system drops
it when the process ends, even killed), so a second run on the same ``--out`` stops at once,
naming the lock, instead of doing all the work again beside the first."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import filelock

from guardrail.apps.batch.results import RowResult
from guardrail.apps.batch.rows import BatchInputError

__all__ = ["BatchLockedError", "BatchOutputError", "Checkpoint", "checkpoint_path", "lock_path"]


class BatchLockedError(BatchInputError):
    """Another run holds the lock of the same ``--out``; the message names the lock file."""


class BatchOutputError(BatchInputError):
    """The report or its checkpoint cannot be written (checked before any row is verified)."""


def lock_path(out: str | os.PathLike[str]) -> Path:
    """The lock file of runs writing ``out``: ``<out>.lock`` beside the file ``out`` names, symbolic
    links resolved (two runs writing one report through a link and its target share one lock)."""
    out = resolved(out)
    return out.with_name(out.name + ".lock")


def resolved(path: str | os.PathLike[str]) -> Path:
    """``path`` with its symbolic links resolved (the file it names, whether it exists yet or not)."""
    return Path(os.path.realpath(path))


log = logging.getLogger("guardrail.batch")


def checkpoint_path(out: str | os.PathLike[str]) -> Path:
    """Where the checkpoint of a run writing ``out`` lives: ``<out>.checkpoint.jsonl`` beside the
    file ``out`` names (symbolic links resolved, like :func:`lock_path`)."""
    out = resolved(out)
    return out.with_name(out.name + ".checkpoint.jsonl")


class Checkpoint:
    """Finished rows, one JSON line each, appended and flushed to disk as each row finishes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load(self) -> dict[str, RowResult]:
        """The verified rows recorded so far, by id (the last entry of an id wins). Failed rows are
        not returned (they are retried); a line cut short by an interrupted write is dropped from
        the file so the next append starts on a fresh line."""
        if not self.path.exists():
            return {}
        done: dict[str, RowResult] = {}
        data = self.path.read_bytes()
        good_end = 0
        pos = 0
        for raw in data.splitlines(keepends=True):
            pos += len(raw)
            if not raw.endswith(b"\n"):
                break  # an interrupted write: drop it below
            good_end = pos
            try:
                result = RowResult.model_validate_json(raw)
            except ValueError:
                log.warning("ignoring an unreadable line of checkpoint %s; that row will be verified again", self.path)
                continue
            if result.error is None:
                done[result.id] = result
            else:
                done.pop(result.id, None)
        if good_end < len(data):
            with open(self.path, "r+b") as fh:
                fh.truncate(good_end)
        return done

    def append(self, result: RowResult) -> None:
        """Record one finished row durably (written, flushed and fsynced before returning)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = result.model_dump_json() + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    @contextmanager
    def locked(self, out: str | os.PathLike[str]) -> Iterator[None]:
        """Hold the lock of runs writing ``out`` for the block: BatchLockedError when another run
        holds it, BatchOutputError when the folder, the checkpoint or ``out`` cannot be written."""
        path = lock_path(out)
        _check_writable(Path(out), self.path)
        lock = filelock.FileLock(path, timeout=0)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise BatchLockedError(
                f"another batch run is writing {out}: its lock {path} is held; "
                "wait for it to end or choose another --out"
            ) from None
        except OSError as exc:
            raise BatchOutputError(f"cannot write beside {out}: {exc}") from None
        try:
            yield
        finally:
            lock.release()

    def reset(self) -> None:
        """Forget every recorded row."""
        self.path.unlink(missing_ok=True)


def _check_writable(out: Path, checkpoint: Path) -> None:
    """BatchOutputError unless ``out`` can be written in its folder and ``checkpoint`` appended to."""
    if out.is_dir():
        raise BatchOutputError(f"--out {out} is a folder; give a file name for the CSV report")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(checkpoint, "a", encoding="utf-8"):
            pass
        if not os.access(out.parent, os.W_OK):
            raise PermissionError(f"the folder {out.parent} is not writable")
    except OSError as exc:
        raise BatchOutputError(f"cannot write --out {out} or its checkpoint: {exc}") from None
