"""The input of a batch run: a JSONL file of model outputs, read and validated before anything runs.

One JSON object per line (blank lines skipped)::

    {"id": "q1", "claim": "Water boils at 100 degrees Celsius.", "urls": ["https://..."]}
    {"id": "q2", "answer": "Water boils at 100 °C [1].", "sources": ["https://..."]}

Either kind may carry ``"date"`` (ISO 8601: ``"2024-05-01"``, ``"2024-05-01T12:00:00Z"``): when
the answer was written, so a run looking dead links up in an archive takes the copy closest to it.

``id`` (a string or an integer; default: the line number) must be unique. Each (claim, URL)
pair is one citation: a ``claim`` row gives one per unique URL, an ``answer`` row one per
citation of each of its claims (:meth:`Verifier.averify_answer
<guardrail.verifier.Verifier.averify_answer>`). Every bad line is reported with its line number
before anything is verified; nothing is skipped silently.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from guardrail.core.extract import normalize_sources

__all__ = ["MAX_REPORTED_ERRORS", "BatchInputError", "BatchRow", "page_order", "read_rows", "row_from_data", "row_urls"]

MAX_REPORTED_ERRORS = 20
"""How many bad lines :class:`BatchInputError` lists before saying how many more there are."""


class BatchInputError(ValueError):
    """The input file cannot be used; the message names the file and each bad line."""


class BatchRow(BaseModel):
    """One input row, validated."""

    line: int
    id: str
    kind: Literal["claim", "answer"]
    claim: str | None = None
    urls: list[str] = Field(default_factory=list)
    answer: str | None = None
    sources: list[Any] | None = None
    date: datetime | None = Field(default=None, description="When the answer was written (UTC), if given.")
    digest: str = Field(description="sha256 of the row's content: a changed row is verified again.")


def _digest(content: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _row_id(data: dict[str, Any], line: int) -> str:
    raw_id = data.get("id", line)
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        raise ValueError(f"'id' must be a string or an integer, not {type(raw_id).__name__}")
    row_id = str(raw_id).strip()
    if not row_id:
        raise ValueError("'id' must not be empty")
    return row_id


def _row_date(data: dict[str, Any]) -> tuple[datetime | None, dict[str, Any]]:
    """The row's ``date`` (UTC), and what it adds to the digest (nothing when absent, so the
    checkpoints of rows without one stay valid)."""
    raw = data.get("date")
    if raw is None:
        return None, {}
    if not isinstance(raw, str):
        raise ValueError("'date' must be an ISO 8601 string such as 2024-05-01 or 2024-05-01T12:00:00Z")
    text = raw.strip()
    try:
        # fromisoformat reads a trailing Z only from Python 3.11 on.
        when = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise ValueError(f"'date' is not an ISO 8601 date or time: {text[:40]!r}") from None
    when = when.astimezone(timezone.utc) if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)
    return when, {"date": when.isoformat()}


def _claim_row(line: int, row_id: str, data: dict[str, Any]) -> BatchRow:
    claim, urls = data["claim"], data.get("urls")
    if not isinstance(claim, str) or not claim.strip():
        raise ValueError("'claim' must be a non-empty string")
    if not isinstance(urls, list) or not urls:
        raise ValueError("a 'claim' row needs 'urls': a non-empty list of URLs")
    for i, url in enumerate(urls):
        if not isinstance(url, str) or not url.strip():
            raise ValueError(f"'urls'[{i}] must be a non-empty string")
    when, dated = _row_date(data)
    digest = _digest({"claim": claim, "urls": urls, **dated})
    return BatchRow(line=line, id=row_id, kind="claim", claim=claim, urls=urls, date=when, digest=digest)


def _answer_row(line: int, row_id: str, data: dict[str, Any]) -> BatchRow:
    answer, sources = data["answer"], data.get("sources")
    if not isinstance(answer, str) or not answer.strip():
        raise ValueError("'answer' must be a non-empty string")
    if sources is not None:
        if not isinstance(sources, list):
            raise ValueError("'sources' must be a list of URLs or {url, text} objects")
        try:
            normalize_sources(sources)
        except (TypeError, ValueError) as exc:
            raise ValueError(str(exc)) from None
    when, dated = _row_date(data)
    digest = _digest({"answer": answer, "sources": sources, **dated})
    return BatchRow(line=line, id=row_id, kind="answer", answer=answer, sources=sources, date=when, digest=digest)


def _parse_row(line: int, raw: str) -> BatchRow:
    """The row on ``line``; raises ValueError saying what is wrong with it."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    return row_from_data(line, data)


def row_from_data(line: int, data: object) -> BatchRow:
    """A row given as a mapping of the input schema (``id``, ``claim`` + ``urls``, or ``answer`` +
    optional ``sources``), numbered ``line``; raises ValueError saying what is wrong with it."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    row_id = _row_id(data, line)
    has_claim, has_answer = "claim" in data, "answer" in data
    if has_claim == has_answer:
        raise ValueError("a row needs either 'claim' (with 'urls') or 'answer' (with optional 'sources')")
    return _claim_row(line, row_id, data) if has_claim else _answer_row(line, row_id, data)


def read_rows(path: str | os.PathLike[str]) -> list[BatchRow]:
    """Every row of the JSONL file at ``path``; raises :class:`BatchInputError` listing every bad
    line (``file:line: problem``) or duplicate id, so nothing is verified from a broken file."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BatchInputError(f"cannot read {path}: {exc}") from None
    rows: list[BatchRow] = []
    errors: list[str] = []
    first_line: dict[str, int] = {}
    # Lines end at "\n" only: str.splitlines() would also cut a valid row at U+2028, U+2029 or U+0085.
    for n, line in enumerate(data.split(b"\n"), start=1):
        try:
            raw = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append(f"{path}:{n}: not UTF-8 text: {exc.reason} at byte {exc.start}")
            continue
        if not raw.strip():
            continue
        try:
            row = _parse_row(n, raw)
        except ValueError as exc:
            errors.append(f"{path}:{n}: {exc}")
            continue
        if row.id in first_line:
            errors.append(f"{path}:{n}: duplicate id {row.id!r} (first on line {first_line[row.id]})")
            continue
        first_line[row.id] = n
        rows.append(row)
    if errors:
        shown = errors[:MAX_REPORTED_ERRORS]
        more = f"\n... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
        raise BatchInputError(f"{len(errors)} bad line(s) in {path}:\n" + "\n".join(shown) + more)
    if not rows:
        raise BatchInputError(f"{path} has no rows")
    return rows


def row_urls(row: BatchRow) -> list[str]:
    """The URLs a row cites as such: a claim's ``urls``, or an answer's sources given as URLs (the
    links inside an answer's text are known only once it is extracted)."""
    return list(row.urls or [s for s in (row.sources or []) if isinstance(s, str)])


def page_order(rows: Sequence[BatchRow]) -> list[BatchRow]:
    """``rows`` ordered so that rows citing the same page are next to each other (by the first URL
    a row cites, numbers in it compared as numbers; rows citing none last), keeping the input
    order otherwise. Both engines verify rows in this order: a page's rows then run close
    together, while the run's bounded page memo still holds it (fetched and read once), on one
    actor on Ray."""

    def key(row: BatchRow) -> tuple[int, list[str | tuple[int, str]]]:
        urls = row_urls(row)
        return (0, min(_natural(u) for u in urls)) if urls else (1, [])

    return sorted(rows, key=key)


_DIGITS = re.compile(r"(\d+)")


def _natural(url: str) -> list[str | tuple[int, str]]:
    """A URL's sort key with its numbers read as numbers (``/page/2`` before ``/page/10``): rows
    citing a page and the next one then sit beside the rows of that next page. A number compares
    by its length without leading zeros, then its digits: no conversion, however long."""
    parts = _DIGITS.split(url)
    return [(len(part.lstrip("0")), part.lstrip("0")) if i % 2 else part for i, part in enumerate(parts)]
