"""Batch runs: verify a JSONL file of model outputs and report citation precision.

Input, one JSON object per line (blank lines skipped)::

    {"id": "q1", "claim": "Water boils at 100 degrees Celsius.", "urls": ["https://..."]}
    {"id": "q2", "answer": "Water boils at 100 °C [1].", "sources": ["https://..."]}

``id`` (a string or an integer; default: the line number) must be unique. Each (claim, URL)
pair is one citation: a ``claim`` row gives one per unique URL, an ``answer`` row one per
citation of each of its claims (:meth:`Verifier.averify_answer
<guardrail.verifier.Verifier.averify_answer>`). Every bad line is reported with its line number
before anything is verified; nothing is skipped silently.

The figures: ``citation_precision`` = supported / all citations, ``reachable_precision`` =
supported / citations whose page was read (all but dead links and the citations that could not be
checked now: a timeout, 429/5xx, a refused access). Those that could not be checked are counted on
their own (``could_not_check``): they are not the page's fault, nor a verdict about it.

Resuming: each finished row is appended to a checkpoint next to the CSV
(``report.csv.checkpoint.jsonl``) as soon as it is done, with a digest of the row's content. A
rerun of the same command verifies only the rows that have no checkpoint entry (or whose content
changed), so an interrupted run picks up where it stopped; ``fresh=True`` starts over. A row that
fails (an unexpected error, not a verdict) is recorded as failed, reported, and retried by the
next run; so is a row any of whose verdicts rests on a failure of ours (``internal_error``,
``judge_error``): its verdicts are kept in the CSV, marked with the error, but not counted.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import html
import json
import logging
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from guardrail.core.extract import normalize_sources
from guardrail.core.policy import Policy, apply_policy, render_badge
from guardrail.core.schema import AnswerReport, ClaimReport, Label, Reason, UrlVerdict, VerdictKind
from guardrail.settings import ConfigurationError

if TYPE_CHECKING:
    from guardrail.verifier import Verifier

log = logging.getLogger("guardrail.batch")

__all__ = [
    "BatchInputError",
    "BatchResult",
    "BatchRow",
    "BatchSummary",
    "Checkpoint",
    "CitationRow",
    "RowResult",
    "arun_batch",
    "arun_batch_file",
    "checkpoint_path",
    "read_rows",
    "render_html",
    "summarize",
    "write_csv",
]

MAX_REPORTED_ERRORS = 20


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
    digest: str = Field(description="sha256 of the row's content: a changed row is verified again.")


def _digest(content: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _parse_row(line: int, raw: str) -> BatchRow:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    raw_id = data.get("id", line)
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        raise ValueError(f"'id' must be a string or an integer, not {type(raw_id).__name__}")
    row_id = str(raw_id).strip()
    if not row_id:
        raise ValueError("'id' must not be empty")
    has_claim, has_answer = "claim" in data, "answer" in data
    if has_claim == has_answer:
        raise ValueError("a row needs either 'claim' (with 'urls') or 'answer' (with optional 'sources')")
    if has_claim:
        claim, urls = data["claim"], data.get("urls")
        if not isinstance(claim, str) or not claim.strip():
            raise ValueError("'claim' must be a non-empty string")
        if not isinstance(urls, list) or not urls:
            raise ValueError("a 'claim' row needs 'urls': a non-empty list of URLs")
        for i, url in enumerate(urls):
            if not isinstance(url, str) or not url.strip():
                raise ValueError(f"'urls'[{i}] must be a non-empty string")
        content: dict[str, Any] = {"claim": claim, "urls": urls}
        return BatchRow(line=line, id=row_id, kind="claim", claim=claim, urls=urls, digest=_digest(content))
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
    content = {"answer": answer, "sources": sources}
    return BatchRow(line=line, id=row_id, kind="answer", answer=answer, sources=sources, digest=_digest(content))


def read_rows(path: str | os.PathLike[str]) -> list[BatchRow]:
    """Every row of the JSONL file at ``path``; raises :class:`BatchInputError` listing every bad
    line (``file:line: problem``) or duplicate id, so nothing is verified from a broken file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchInputError(f"cannot read {path}: {exc}") from None
    rows: list[BatchRow] = []
    errors: list[str] = []
    first_line: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
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


# -- results ----------------------------------------------------------------------------------


class CitationRow(BaseModel):
    """One line of the CSV report: one citation (or a row that has none, or that failed)."""

    id: str
    line: int
    kind: str
    claim_index: int | None = None
    claim: str = ""
    url: str = ""
    label: str = ""
    reason: str = ""
    confidence: float | None = None
    evidence_quote: str = ""
    final_url: str = ""
    original_status: int | None = None
    rid: str = ""
    error: str = ""


def _citation(row: RowResult, claim_index: int, claim: str, v: UrlVerdict) -> CitationRow:
    return CitationRow(
        id=row.id,
        line=row.line,
        kind=row.kind,
        claim_index=claim_index,
        claim=claim,
        url=v.url,
        label=v.label.value,
        reason=v.reason or "",
        confidence=v.confidence,
        evidence_quote=v.evidence_quote or "",
        final_url=v.final_url or "",
        original_status=v.original_status,
        rid=v.rid or "",
    )


class RowResult(BaseModel):
    """What one row came to: its report, or the error that stopped it."""

    id: str
    line: int
    kind: Literal["claim", "answer"]
    digest: str
    claim_report: ClaimReport | None = None
    answer_report: AnswerReport | None = None
    error: str | None = None
    seconds: float = 0.0

    def verdicts(self) -> list[tuple[int, str, UrlVerdict]]:
        """(claim index, claim text, verdict) for every citation of the row."""
        if self.claim_report is not None:
            return [(0, self.claim_report.claim, v) for v in self.claim_report.citations]
        if self.answer_report is not None:
            return [(i, c.text, v) for i, c in enumerate(self.answer_report.claims) for v in c.verdicts]
        return []

    def citation_rows(self) -> list[CitationRow]:
        """The CSV lines of this row: one per citation (each with the row's error, if it failed);
        one line saying why when there is none."""
        rows = [_citation(self, i, claim, v) for i, claim, v in self.verdicts()]
        if self.error is not None:
            rows = [r.model_copy(update={"error": self.error}) for r in rows]
            return rows or [CitationRow(id=self.id, line=self.line, kind=self.kind, error=self.error)]
        return rows or [CitationRow(id=self.id, line=self.line, kind=self.kind, reason="no_citations")]

    def has_contradiction(self) -> bool:
        """Whether any citation of the row is contradicted."""
        return any(v.label == Label.contradicted for _, _, v in self.verdicts())


class BatchSummary(BaseModel):
    """The figures of a batch run."""

    rows: int
    rows_resumed: int = 0
    rows_failed: int = 0
    citations: int = 0
    supported: int = 0
    reachable: int = 0
    could_not_check: int = Field(
        default=0, description="Citations not checked now: the page did not answer or refused us."
    )
    labels: dict[str, int] = Field(default_factory=dict, description="Citations per label (all four listed).")
    reasons: dict[str, int] = Field(
        default_factory=dict, description="Citations per reason ('judge' when the judge decided without one)."
    )
    by_label_reason: list[tuple[str, str, int]] = Field(default_factory=list)

    @property
    def citation_precision(self) -> float | None:
        """supported / all citations (None without citations)."""
        return self.supported / self.citations if self.citations else None

    @property
    def reachable_precision(self) -> float | None:
        """supported / citations whose page was read: not dead, not unchecked (None when none)."""
        return self.supported / self.reachable if self.reachable else None

    def lines(self) -> list[str]:
        """``citation_precision=0.2222 (2/9)`` and ``reachable_precision=0.3333 (2/6)``."""

        def fmt(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.4f}"

        lines = [
            f"citation_precision={fmt(self.citation_precision)} ({self.supported}/{self.citations})",
            f"reachable_precision={fmt(self.reachable_precision)} ({self.supported}/{self.reachable})",
        ]
        if self.could_not_check:
            lines.append(f"could_not_check={self.could_not_check} (not counted as read; not the pages' fault)")
        return lines


def summarize(results: Sequence[RowResult], *, resumed: int = 0) -> BatchSummary:
    """Count citations by label and reason over ``results`` (failed rows count as rows only)."""
    labels: Counter[str] = Counter({label.value: 0 for label in Label})
    kinds: Counter[VerdictKind] = Counter()
    reasons: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    for result in results:
        if result.error is not None:
            continue
        for _, _, v in result.verdicts():
            labels[v.label.value] += 1
            kinds[v.kind] += 1
            reason = v.reason or "judge"
            reasons[reason] += 1
            pairs[(v.label.value, reason)] += 1
    total = sum(labels.values())
    order = {label.value: i for i, label in enumerate(Label)}
    return BatchSummary(
        rows=len(results),
        rows_resumed=resumed,
        rows_failed=sum(1 for r in results if r.error is not None),
        citations=total,
        supported=labels[Label.supported.value],
        reachable=total - kinds[VerdictKind.dead_link] - kinds[VerdictKind.could_not_check],
        could_not_check=kinds[VerdictKind.could_not_check],
        labels=dict(labels),
        reasons=dict(reasons.most_common()),
        by_label_reason=sorted(((lab, rea, n) for (lab, rea), n in pairs.items()), key=lambda t: (order[t[0]], -t[2])),
    )


# -- checkpoint -------------------------------------------------------------------------------


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


# -- running ----------------------------------------------------------------------------------


_OUR_FAILURES = frozenset({Reason.internal_error.value, Reason.judge_error.value})


async def _verify_row(verifier: Verifier, row: BatchRow) -> RowResult:
    start = time.perf_counter()
    base: dict[str, Any] = {"id": row.id, "line": row.line, "kind": row.kind, "digest": row.digest}
    try:
        if row.claim is not None:
            result = RowResult(**base, claim_report=await verifier.averify(row.claim, row.urls))
        elif row.answer is not None:
            result = RowResult(**base, answer_report=await verifier.averify_answer(row.answer, row.sources))
        else:
            raise ValueError(f"row {row.id} has neither a claim nor an answer")
        ours = [v.reason for _, _, v in result.verdicts() if v.reason in _OUR_FAILURES]
        if ours:
            counted = ", ".join(f"{n} {reason}" for reason, n in Counter(ours).items())
            result.error = f"verdicts rest on failures of ours ({counted}); verified again on the next run"
    except ConfigurationError:
        raise  # a missing token fails every row alike: stop the run, keep the checkpoint
    except Exception as exc:
        log.exception("row %s (line %d) failed", row.id, row.line)
        result = RowResult(**base, error=f"{type(exc).__name__}: {exc}")
    result.seconds = round(time.perf_counter() - start, 4)
    return result


async def arun_batch(
    rows: Sequence[BatchRow],
    verifier: Verifier,
    *,
    checkpoint: Checkpoint | None = None,
    concurrency: int = 4,
    on_row: Callable[[RowResult], None] | None = None,
) -> tuple[list[RowResult], int]:
    """Verify every row not already in ``checkpoint`` (same id and content), ``concurrency`` at a
    time, appending each to the checkpoint as it finishes. Returns the results in input order and
    how many came from the checkpoint. A ConfigurationError stops the run (finished rows stay)."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    done = checkpoint.load() if checkpoint is not None else {}
    results: dict[str, RowResult] = {}
    pending: list[BatchRow] = []
    for row in rows:
        prior = done.get(row.id)
        if prior is not None and prior.digest == row.digest:
            results[row.id] = prior.model_copy(update={"line": row.line})
        else:
            pending.append(row)
    resumed = len(results)
    queue: asyncio.Queue[BatchRow] = asyncio.Queue()
    for row in pending:
        queue.put_nowait(row)

    async def worker() -> None:
        while True:
            try:
                row = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            result = await _verify_row(verifier, row)
            if checkpoint is not None:
                checkpoint.append(result)
            results[row.id] = result
            if on_row is not None:
                on_row(result)

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(pending)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
    return [results[row.id] for row in rows], resumed


def write_csv(results: Sequence[RowResult], path: str | os.PathLike[str]) -> int:
    """Write one CSV line per citation (see :class:`CitationRow`) atomically; returns the count."""
    path = Path(path)
    fields = list(CitationRow.model_fields)
    lines = [c for r in results for c in r.citation_rows()]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=fields)
            writer.writeheader()
            for c in lines:
                writer.writerow({k: "" if v is None else v for k, v in c.model_dump().items()})
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(lines)


@dataclass
class BatchResult:
    """A finished batch run: every row's result and the figures."""

    results: list[RowResult]
    summary: BatchSummary
    csv_path: Path
    html_path: Path | None = None


async def arun_batch_file(
    input_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    verifier: Verifier,
    html_path: str | os.PathLike[str] | None = None,
    concurrency: int = 4,
    fresh: bool = False,
    on_start: Callable[[int, int], None] | None = None,
    on_row: Callable[[RowResult], None] | None = None,
) -> BatchResult:
    """Read ``input_path``, verify its rows (resuming from the checkpoint beside ``out`` unless
    ``fresh``), then write the CSV to ``out`` and, if asked, the HTML report.

    ``on_start(total_rows, rows_already_done)`` is called once before verifying. Raises
    :class:`BatchInputError` for a bad input file, before verifying anything.
    """
    rows = read_rows(input_path)
    checkpoint = Checkpoint(checkpoint_path(out))
    if fresh:
        checkpoint.reset()
    if on_start is not None:
        done = checkpoint.load()
        on_start(len(rows), sum(1 for r in rows if r.id in done and done[r.id].digest == r.digest))
    results, resumed = await arun_batch(rows, verifier, checkpoint=checkpoint, concurrency=concurrency, on_row=on_row)
    summary = summarize(results, resumed=resumed)
    write_csv(results, out)
    html_out = None
    if html_path is not None:
        html_out = Path(html_path)
        _write_text_atomic(html_out, render_html(results, summary, title=f"Citation report: {Path(input_path).name}"))
    return BatchResult(results=results, summary=summary, csv_path=Path(out), html_path=html_out)


def _write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- the HTML report --------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:70rem;
  padding:0 1rem;color:#1f2328;line-height:1.45}
h1{margin-bottom:.2rem} .meta{color:#57606a;margin-top:0}
.figures{display:flex;gap:1rem;flex-wrap:wrap;margin:1rem 0}
.figure{border:1px solid #d0d7de;border-radius:8px;padding:.8rem 1.2rem;min-width:12rem}
.figure .value{font-size:2rem;font-weight:600;display:block}
.figure .what{color:#57606a}
.chart{margin:.5rem 0 1.5rem}
.bar-row{display:grid;grid-template-columns:16rem 1fr 4rem;gap:.6rem;align-items:center;margin:.25rem 0}
.bar{background:#f0f2f4;border-radius:4px;height:1.1rem;overflow:hidden}
.fill{display:block;height:100%;background:#8c959f}
.fill--supported{background:#2da44e}.fill--contradicted{background:#cf222e}
.fill--not_found{background:#d4a72c}.fill--unreachable{background:#8250df}
.count{text-align:right;font-variant-numeric:tabular-nums}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem}
th,td{border:1px solid #d0d7de;padding:.35rem .5rem;vertical-align:top;text-align:left;font-size:.92rem}
th{background:#f6f8fa}
td.url{word-break:break-all;max-width:22rem}
blockquote{margin:0;padding-left:.6rem;border-left:3px solid #d0d7de;color:#424a53}
.row{border:1px solid #d0d7de;border-radius:8px;padding:.6rem 1rem;margin:1rem 0}
.row--contradicted{border-color:#cf222e}
.row h3{margin:.2rem 0 .5rem;font-size:1rem}
.answer{white-space:pre-wrap;background:#f6f8fa;border-radius:6px;padding:.6rem .8rem}
.error{color:#cf222e}
.citation-verdict{display:inline-block;font-size:.8rem;border-radius:1rem;padding:0 .45rem;margin:0 .15rem;
  border:1px solid #d0d7de;background:#fff;white-space:nowrap}
.citation-verdict--supported{border-color:#2da44e;color:#1a7f37}
.citation-verdict--contradicted{border-color:#cf222e;color:#a40e26}
.citation-verdict--not-found{border-color:#d4a72c;color:#7d4e00}
.citation-verdict--unreachable{border-color:#8250df;color:#6639ba}
.citation-verdict--could-not-check{border-color:#8c959f;color:#57606a}
"""

_BADGE_POLICY = Policy.preset("annotate")
# A badge span exactly as render_badge writes it, seen after the whole answer was escaped once:
# its title is escaped twice then, so it holds no raw quote or angle bracket.
_ESCAPED_BADGE = re.compile(
    r"&lt;span class=&quot;citation-verdict "
    r"citation-verdict--(?:supported|contradicted|not-found|unreachable|could-not-check)&quot;"
    r"(?: title=&quot;(?:(?!&quot;|&lt;|&gt;)[^<>\"])*&quot;)?&gt;(?:(?!&lt;|&gt;)[^<>\"])*&lt;/span&gt;"
)
_HTTP_URL = re.compile(r"^https?://", re.I)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _answer_html(report: AnswerReport) -> str:
    """The answer with a badge after each citation: the text is escaped, and only the badge spans
    apply_policy inserted are turned back into markup (their content is escaped by render_badge)."""
    guarded = apply_policy(report, _BADGE_POLICY, "html")
    escaped = html.escape(guarded.text, quote=True)
    return _ESCAPED_BADGE.sub(lambda m: html.unescape(m.group(0)), escaped)


def _link(url: str) -> str:
    if _HTTP_URL.match(url):
        return f'<a href="{_e(url)}" rel="noopener noreferrer nofollow">{_e(url)}</a>'
    return _e(url)


def _bars(counts: dict[str, int], total: int, css: Callable[[str], str]) -> str:
    rows = []
    for name, n in counts.items():
        share = 100.0 * n / total if total else 0.0
        rows.append(
            f'<div class="bar-row"><span>{_e(name)}</span>'
            f'<span class="bar"><span class="fill {css(name)}" style="width:{share:.1f}%"></span></span>'
            f'<span class="count">{n}</span></div>'
        )
    return '<div class="chart">' + "".join(rows) + "</div>"


def _verdict_table(result: RowResult) -> str:
    cells = []
    for i, claim, v in result.verdicts():
        badge = render_badge(v.kind, _BADGE_POLICY, "html", title=v.evidence_quote or v.reason)
        quote = f"<blockquote>{_e(v.evidence_quote)}</blockquote>" if v.evidence_quote else ""
        where = _e(v.url) if v.url.startswith("fact:") else _link(v.url)
        final = f"<br>→ {_link(v.final_url)}" if v.final_url and v.final_url != v.url else ""
        cells.append(
            f'<tr><td>{i}</td><td>{_e(claim)}</td><td class="url">{where}{final}</td><td>{badge}</td>'
            f"<td>{_e(v.reason or '')}</td><td>{v.confidence:.2f}</td><td>{quote}</td></tr>"
        )
    if not cells:
        return "<p>No citations.</p>"
    head = "<tr><th>#</th><th>claim</th><th>URL</th><th>label</th><th>reason</th><th>conf.</th><th>evidence</th></tr>"
    return f"<table>{head}{''.join(cells)}</table>"


def render_html(results: Sequence[RowResult], summary: BatchSummary, *, title: str = "Citation report") -> str:
    """One self-contained HTML page (no scripts, no external assets): the precision figures, bar
    charts of labels and reasons, the contradicted citations first with their evidence quotes,
    then every row with its badges. Everything from pages and answers is HTML-escaped."""

    def fig(value: float | None, what: str, num: int, den: int) -> str:
        shown = "n/a" if value is None else f"{value:.4f}"
        return (
            f'<div class="figure"><span class="value">{shown}</span>'
            f'<span class="what">{_e(what)} ({num}/{den})</span></div>'
        )

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # Belt and braces: even if some text escaped its escaping, nothing may run or load.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="meta">{summary.rows} rows ({summary.rows_resumed} from the checkpoint, '
        f"{summary.rows_failed} failed) · {summary.citations} citations · "
        f"{summary.could_not_check} could not be checked now · generated "
        f"{_e(time.strftime('%Y-%m-%d %H:%M:%S %Z'))}</p>",
        '<section class="figures">',
        fig(summary.citation_precision, "citation precision: supported / all", summary.supported, summary.citations),
        fig(
            summary.reachable_precision,
            "reachable precision: supported / pages read",
            summary.supported,
            summary.reachable,
        ),
        "</section>",
        "<h2>Labels</h2>",
        _bars(summary.labels, summary.citations, lambda name: f"fill--{_e(name)}"),
        "<h2>Reasons</h2>",
        _bars(summary.reasons, summary.citations, lambda name: ""),
    ]
    contradicted = [(r, i, claim, v) for r in results for i, claim, v in r.verdicts() if v.label == Label.contradicted]
    parts.append(f"<h2>Contradicted citations ({len(contradicted)})</h2>")
    if contradicted:
        parts.append("<table><tr><th>row</th><th>claim</th><th>URL</th><th>evidence quote</th></tr>")
        for r, _, claim, v in contradicted:
            parts.append(
                f'<tr><td>{_e(r.id)}</td><td>{_e(claim)}</td><td class="url">{_link(v.url)}</td>'
                f"<td><blockquote>{_e(v.evidence_quote or '')}</blockquote></td></tr>"
            )
        parts.append("</table>")
    else:
        parts.append("<p>None.</p>")
    failed = [r for r in results if r.error is not None]
    if failed:
        parts.append(f"<h2>Failed rows ({len(failed)})</h2><ul>")
        parts.extend(f'<li class="error">{_e(r.id)} (line {r.line}): {_e(r.error)}</li>' for r in failed)
        parts.append("</ul>")
    parts.append("<h2>Rows</h2>")
    ordered = sorted(results, key=lambda r: not r.has_contradiction())  # stable: input order otherwise
    for r in ordered:
        cls = "row row--contradicted" if r.has_contradiction() else "row"
        parts.append(f'<article class="{cls}" id="row-{_e(r.id)}"><h3>{_e(r.id)} <small>(line {r.line})</small></h3>')
        if r.error is not None:
            parts.append(f'<p class="error">{_e(r.error)}</p>')
        elif r.answer_report is not None:
            parts.append(f'<div class="answer">{_answer_html(r.answer_report)}</div>')
            parts.append(_verdict_table(r))
        elif r.claim_report is not None:
            parts.append(f"<p>{_e(r.claim_report.claim)}</p>")
            parts.append(_verdict_table(r))
        parts.append("</article>")
    parts.append("</body></html>")
    return "\n".join(parts)
