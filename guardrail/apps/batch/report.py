"""The HTML report of a batch run: one self-contained page (no scripts, no external assets), the
figures, charts, contradicted citations first, then every row with its badges."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable, Sequence

from guardrail.apps.batch.results import RowResult
from guardrail.apps.batch.summary import BatchSummary
from guardrail.core.policy import Policy, apply_policy, render_badge
from guardrail.core.schema import AnswerReport, Label

__all__ = ["render_html"]

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
