"""The HTML report of a batch run: one self-contained page (no scripts, no external assets, a
Content-Security-Policy that lets nothing run or load), rendered from the Jinja2 templates in
``templates/`` with autoescaping on.

Everything from pages and answers reaches the templates as plain text and is escaped there; the
only markup is the templates' own. The guarded answers are no exception: :func:`answer_parts`
cuts each one into its own text and the badges the policy put into it, and the template writes
each badge itself (``macros.html.j2``), so no piece of an answer or a page is ever marked safe.
"""

from __future__ import annotations

import html
import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from guardrail.apps.batch.results import RowResult
from guardrail.apps.batch.summary import BatchSummary, format_precision
from guardrail.core.policy import Badges, Policy, apply_policy, missing_text, render_badge, verdict_title
from guardrail.core.report import support_summary
from guardrail.core.schema import AnswerReport, Label, RepairKind, UrlVerdict, VerdictKind

__all__ = ["Badge", "answer_parts", "render_html"]

_SHOWN = Policy.preset("annotate").badges
"""The words on the badges: those of the policy that shows every verdict."""
_BADGE_KINDS: tuple[VerdictKind | RepairKind, ...] = (*VerdictKind, *RepairKind)
"""Every kind of badge: how a verdict reads, and what a repair did."""
_BADGE_FIELDS = tuple(Badges.model_fields)
_FIELD_NAMES = Badges(**{field: field for field in _BADGE_FIELDS})
"""Badges whose words are their own field names: ``for_kind`` says which badge a kind gets."""
_HTTP_URL = re.compile(r"^https?://", re.I)


@dataclass(frozen=True)
class Badge:
    """A verdict's badge as the report shows it: its words, its colours (``citation-verdict--<name>``)
    and, on hover, its :func:`~guardrail.core.policy.verdict_title` (the evidence quote, else the
    reason's plain sentence)."""

    name: str
    text: str
    title: str | None = None


def _badge(kind: VerdictKind | RepairKind, title: str | None) -> Badge:
    name = _FIELD_NAMES.for_kind(kind).replace("_", "-")
    return Badge(name=name, text=_SHOWN.for_kind(kind), title=title or None)


def answer_parts(report: AnswerReport) -> list[str | Badge]:
    """The answer as the ``annotate`` policy shows it, repairs made (a dead link's archived copy, a
    suggested source: their own badges), cut into its own text (for the template to escape) and
    the badges the policy put after its citations.

    The policy writes its badges into the text as HTML. To tell exactly those from anything the
    answer wrote itself, their words are placeholders holding a nonce drawn now, after the answer
    and its pages were read: every badge string the policy can write for this report (one per kind
    and title) is then known in advance, and none of them can occur anywhere else in the text."""
    nonce = secrets.token_hex(16)
    badges = Badges(**{f: f"\ue000{nonce}:{f}\ue001" for f in _BADGE_FIELDS})
    policy = Policy.preset("annotate", badges=badges, repair=True)
    text = apply_policy(report, policy, "html").text
    verdicts = [
        v for claim in report.claims for v in (*claim.verdicts, *(s.verdict for s in claim.suggested_citations))
    ]
    titles = {None} | {verdict_title(v) for v in verdicts}
    known = {render_badge(kind, policy, "html", t): _badge(kind, t) for kind in _BADGE_KINDS for t in titles}
    parts: list[str | Badge] = []
    pos = 0
    for match in re.finditer("|".join(map(re.escape, known)), text):
        parts += [text[pos : match.start()], known[match.group()]]
        pos = match.end()
    parts.append(text[pos:])
    if any(isinstance(part, str) and nonce in part for part in parts):
        raise RuntimeError("apply_policy wrote a badge whose title is no verdict's verdict_title")
    return [part for part in parts if part != ""]


# -- what the templates show ------------------------------------------------------------------


@dataclass(frozen=True)
class _Figure:
    value: str
    what: str
    num: int
    den: int


@dataclass(frozen=True)
class _Bar:
    name: str
    css: str
    width: str
    count: int


@dataclass(frozen=True)
class _Citation:
    index: int
    claim: str
    url: str
    final_url: str | None
    badge: Badge
    reason: str
    reason_text: str
    confidence: str
    quote: str
    missing: str


@dataclass(frozen=True)
class _Contradiction:
    row_id: str
    claim: str
    url: str
    quote: str


@dataclass(frozen=True)
class _Repair:
    row_id: str
    claim: str
    badge: Badge
    old: str
    new: str


@dataclass(frozen=True)
class _Row:
    id: str
    line: int
    contradicted: bool
    error: str | None
    claim: str | None
    answer: list[str | Badge] | None
    support: str | None
    citations: list[_Citation]


def _figures(summary: BatchSummary) -> list[_Figure]:
    s = summary
    return [
        _Figure(
            format_precision(s.citation_precision), "citation precision: supported / all", s.supported, s.citations
        ),
        _Figure(
            format_precision(s.reachable_precision),
            "reachable precision: supported / pages read",
            s.supported,
            s.reachable,
        ),
    ]


def _bars(counts: dict[str, int], total: int, css: Callable[[str], str]) -> list[_Bar]:
    return [_Bar(name, css(name), f"{100.0 * n / total if total else 0.0:.1f}", n) for name, n in counts.items()]


def _citation(index: int, claim: str, v: UrlVerdict) -> _Citation:
    return _Citation(
        index=index,
        claim=claim,
        url=v.url,
        final_url=v.final_url if v.final_url and v.final_url != v.url else None,
        badge=_badge(v.kind, verdict_title(v)),
        reason=v.reason or "",
        reason_text=v.reason_text or "",
        confidence=f"{v.confidence:.2f}",
        quote=v.evidence_quote or "",
        missing=missing_text(v.missing_parts) or "",
    )


def _support(report: AnswerReport) -> str:
    """The answer's line under it: its label by the answer-level rule and its support score."""
    return f"overall: {report.overall} - {support_summary(report)}"


def _row(result: RowResult) -> _Row:
    ok = result.error is None
    return _Row(
        id=result.id,
        line=result.line,
        contradicted=result.has_contradiction(),
        error=result.error,
        claim=result.claim_report.claim if ok and result.claim_report is not None else None,
        answer=answer_parts(result.answer_report) if ok and result.answer_report is not None else None,
        support=_support(result.answer_report) if ok and result.answer_report is not None else None,
        citations=[_citation(i, claim, v) for i, claim, v in result.verdicts()],
    )


def _contradictions(results: Sequence[RowResult]) -> list[_Contradiction]:
    return [
        _Contradiction(r.id, claim, v.url, v.evidence_quote or "")
        for r in results
        for _, claim, v in r.verdicts()
        if v.label == Label.contradicted
    ]


def _repairs(results: Sequence[RowResult]) -> list[_Repair]:
    return [
        _Repair(r.id, repair.claim, _badge(repair.why, repair.verdict.evidence_quote), repair.old_citation, new)
        for r in results
        if r.error is None
        for repair in r.repairs()
        for new in [repair.new_url or repair.new_citation]
    ]


# -- rendering --------------------------------------------------------------------------------


def _escape(value: object) -> Markup:
    """Every value a template writes, escaped as :func:`html.escape` does (``&quot;``, ``&#x27;``,
    as the report always wrote them) unless it is the templates' own markup (a macro's output)."""
    if hasattr(value, "__html__"):
        return Markup(value)
    return Markup(html.escape(str(value), quote=True))


def _is_http_url(value: object) -> bool:
    return isinstance(value, str) and _HTTP_URL.match(value) is not None


@cache
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("guardrail.apps.batch", "templates"),
        autoescape=True,
        finalize=_escape,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.tests["http_url"] = _is_http_url
    return env


def render_html(results: Sequence[RowResult], summary: BatchSummary, *, title: str = "Citation report") -> str:
    """One self-contained HTML page (no scripts, no external assets): the precision figures, bar
    charts of labels and reasons, the contradicted citations first with their evidence quotes,
    then every row with its badges. Everything from pages and answers is HTML-escaped."""
    ordered = sorted(results, key=lambda r: not r.has_contradiction())  # stable: input order otherwise
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            title=title,
            summary=summary,
            generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            figures=_figures(summary),
            label_bars=_bars(summary.labels, summary.citations, lambda name: f"fill--{name}"),
            reason_bars=_bars(summary.reasons, summary.citations, lambda name: ""),
            contradicted=_contradictions(results),
            repairs=_repairs(results),
            repair_bars=_bars(summary.repairs, sum(summary.repairs.values()), lambda name: f"repair-fill--{name}"),
            failed=[r for r in results if r.error is not None],
            rows=[_row(r) for r in ordered],
        )
    )
