"""Resuming a batch run: each finished row is appended to a checkpoint next to the CSV
(``report.csv.checkpoint.jsonl``) as soon as it is done, with a digest of the row's content. A
rerun of the same command verifies only the rows that have no checkpoint entry (or whose content
changed), so an interrupted run picks up where it stopped. Failed rows are recorded too, and
verified again by the next run."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from guardrail.apps.batch.results import RowResult

__all__ = ["Checkpoint", "checkpoint_path"]

log = logging.getLogger("guardrail.batch")


def checkpoint_path(out: str | os.PathLike[str]) -> Path:
    """Where the checkpoint of a run writing ``out`` lives: ``<out>.checkpoint.jsonl`` beside it."""
    out = Path(out)
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

    def reset(self) -> None:
        """Forget every recorded row."""
        self.path.unlink(missing_ok=True)
