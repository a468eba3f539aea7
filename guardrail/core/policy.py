"""What to do with each verdict: keep, annotate, strip or block, and the badges annotate adds.

:func:`apply_policy` turns an :class:`~guardrail.core.schema.AnswerReport` into a
:class:`GuardedAnswer`. It only ever edits at a citation's span, at the end of a claim, or at a
reference-list entry, so the markdown around them (lists, tables, emphasis, code) is untouched;
the report's byte offsets keep referring to the original answer.

The actions, per label of a citation's verdict:

* ``keep`` - leave the citation as written.
* ``annotate`` - put the label's badge right after the citation: after a ``[text](url)`` link,
  after a ``[2]`` marker, after a bare URL. For ``kind="source"`` citations (sources passed in,
  no marker in the text) the badge goes after the sentence and shows the claim's overall label.
* ``strip`` - remove the citation but keep the sentence: ``[text](url)`` becomes ``text`` (but
  ``([text](url))``, a link alone in parentheses, disappears whole), a
  ``[2]`` marker or a bare URL disappears (with the space before it, and parentheses left empty),
  one number leaves a group (``[1, 2]`` becomes ``[1]``). A reference-list entry is removed when
  every citation that used it was stripped, and the whole reference section (its heading too)
  when all of its entries were.
* ``strip`` + ``annotate`` - the badge takes the citation's place (``text ⛔ dead link``).
* ``block`` - replace the whole answer with ``block_message``, or raise :class:`CitationBlocked`
  when ``raise_on_block=True``.

Unsafe links (``javascript:``, ``vbscript:``, ``data:``, ``file:`` targets, found by
:func:`guardrail.core.unsafe_links.find_unsafe_links`: markdown links, images, autolinks, reference
definitions and raw HTML ``href``/``src`` attributes, outside code) take ``Policy.unsafe_link``:
``strip`` leaves a link's text (an image's alt text) and drops the rest, ``annotate`` puts the
``⛔ unsafe link`` badge where it was (after inline links, images and autolinks; a stripped
definition line or HTML attribute just goes), ``block`` withholds the answer. Default
``strip+annotate``; the ``strict`` and ``block`` presets block, ``strip`` strips; the ``annotate``
preset (a person reviewing an escaped answer) keeps them as written. ``GuardedAnswer.unsafe_links``
lists what was found, whatever the action.

A marker at a paragraph's end also covers the sentences before it (``inherited`` citations). It
is removed only when every sentence's verdict for it says strip; its badge follows the sentence
that carries it, and a covered sentence whose verdict differs gets its own badge at its end.

Repair (``Policy(repair=True)`` on any preset, or the ``repair`` preset): before the actions, the
citations :func:`guardrail.core.repair.plan_repairs` can mend are mended - a dead link whose
archived copy supports its claim points at the archived URL (a link's or URL's target changes; a
marker's reference entry does) with the ``🗄 archived copy`` badge, and a citation that does not
back its claim is re-pointed to a suggested source that does (``[2]`` becomes ``[1]``, a link gets
the other URL) with the ``↪ citation corrected`` badge. A mended citation then takes the actions of
its new verdict (``supported``: kept); everything else is as without repair.
``GuardedAnswer.repairs`` lists each change (claim span, old and new citation, why). The verifier
finds suggestions only when asked (``averify_answer(..., suggest=True)``), which the apps do for a
repairing policy.

Streaming: :func:`guardrail.core.extract.stream_cut` says which prefix of a growing answer is final;
verify that chunk alone (``Verifier.averify_answer(chunk, sources, memo=memo)``) and pass its
report here. Every edit stays inside the chunk, so guarded chunks concatenate to the guarded
answer; stop the stream at the first chunk whose result is ``blocked``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from guardrail.core.aggregate import aggregate
from guardrail.core.repair import LINK_KINDS, Repair, plan_repairs
from guardrail.core.report import support_summary
from guardrail.core.schema import (
    AnswerClaim,
    AnswerReport,
    CitationRef,
    Label,
    Reason,
    Reference,
    RepairKind,
    UrlVerdict,
    VerdictKind,
    overall_kind,
    verdict_kind,
)
from guardrail.core.unsafe_links import UnsafeLink, find_unsafe_links

__all__ = [
    "POLICY_PRESETS",
    "Action",
    "AppliedAction",
    "Badges",
    "CitationBlocked",
    "GuardedAnswer",
    "OutputFormat",
    "Policy",
    "Repair",
    "apply_policy",
    "missing_text",
    "render_badge",
    "render_summary",
    "render_unsafe_badge",
    "verdict_title",
]

OutputFormat = Literal["markdown", "html"]


class Action(Enum):
    """What to do with a citation whose verdict has a given label.

    A plain Enum rather than a ``str`` one: ``strip`` would shadow ``str.strip``.
    """

    keep = "keep"
    annotate = "annotate"
    strip = "strip"
    block = "block"

    def __str__(self) -> str:
        return self.value


def _parse_actions(value: Any) -> frozenset[Action]:
    """Accept ``Action.strip``, ``"strip"``, ``"strip+annotate"`` or an iterable of those."""
    items: list[Any]
    if isinstance(value, Action):
        items = [value]
    elif isinstance(value, str):
        items = value.replace(",", "+").split("+")
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        raise ValueError(f"an action must be an Action, a string or a list of them, not {type(value).__name__}")
    actions: set[Action] = set()
    for item in items:
        name = item.value if isinstance(item, Action) else str(item).strip().lower()
        try:
            actions.add(Action(name))
        except ValueError:
            raise ValueError(
                f"unknown action {item!r}; choose from keep, annotate, strip, block (or strip+annotate)"
            ) from None
    if not actions:
        raise ValueError("an action list must not be empty")
    if len(actions) > 1 and (Action.keep in actions or Action.block in actions):
        raise ValueError(f"{'+'.join(sorted(a.value for a in actions))}: keep and block cannot be combined")
    return frozenset(actions)


class Badges(BaseModel):
    """The badge text for each label (``annotate``); ``unreachable`` is the dead-link badge and
    ``could_not_check`` the one for pages that did not answer now and for failures of our own;
    ``archived_copy`` and ``repointed`` mark the citations a repairing policy mended."""

    model_config = ConfigDict(frozen=True)

    supported: str = "✅ supported"
    contradicted: str = "❌ contradicted"
    not_found: str = "⚠️ unverified"
    unreachable: str = "⛔ dead link"
    could_not_check: str = "⚠ could not check"
    unsafe_link: str = "⛔ unsafe link"
    archived_copy: str = "🗄 archived copy"
    repointed: str = "↪ citation corrected"

    def for_label(self, label: Label) -> str:
        """The badge text for ``label`` (``unreachable``: the dead-link badge)."""
        return str(getattr(self, label.value))

    def for_kind(self, kind: VerdictKind | RepairKind) -> str:
        """The badge text for a :class:`~guardrail.core.schema.VerdictKind` or a repair."""
        return str(getattr(self, _policy_field(kind)))


BadgeKind = VerdictKind | RepairKind
"""What a badge says: how a verdict reads, or what a repair did."""


def _policy_field(kind: BadgeKind) -> str:
    """The Policy/Badges field that speaks for ``kind`` (dead links: ``unreachable``)."""
    return "unreachable" if kind == VerdictKind.dead_link else kind.value


def _as_kind(label: Label | VerdictKind) -> VerdictKind:
    if isinstance(label, VerdictKind):
        return label
    return VerdictKind.dead_link if label == Label.unreachable else VerdictKind(Label(label).value)


ActionsLike = Action | str | Iterable[Action | str]
"""One action or a combination: ``Action.strip``, ``"strip+annotate"``, ``[Action.strip, "annotate"]``."""

DEFAULT_BLOCK_MESSAGE = "This answer was withheld because one or more of its citations failed verification."


class Policy(BaseModel):
    """The action for each verdict label, the badges, and what blocking does.

    Each label takes one action or a combination: ``Action.strip``, ``"strip+annotate"`` or
    ``[Action.strip, Action.annotate]``; ``keep`` and ``block`` stand alone. ``unreachable`` acts on
    dead links (the page is gone); ``could_not_check`` on citations that could not be checked now
    (timeout, 429/5xx, access refused, our own egress down) and on failures of our own code
    (``internal_error``, ``judge_error``, ``deadline``): neither is the page's fault, so by default they are only
    annotated. ``unsafe_link`` acts on ``javascript:``/``data:``/``file:``/``vbscript:`` links in the
    answer (see the module docs). Defaults: supported keep, contradicted annotate, not_found
    annotate, unreachable strip + annotate, could_not_check annotate, unsafe_link strip + annotate.

    ``min_confidence``: a ``supported`` or ``contradicted`` verdict whose confidence (the judge's
    probability that its label is right) is below it is treated as ``not_found`` (unverified): a
    weak support is not shown as verified, a weak contradiction does not block. A citation that
    backs its part of a claim that its cited pages support together (reason ``combined_sources``)
    is treated as ``supported``.
    """

    model_config = ConfigDict(frozen=True)

    supported: frozenset[Action] = frozenset({Action.keep})
    contradicted: frozenset[Action] = frozenset({Action.annotate})
    not_found: frozenset[Action] = frozenset({Action.annotate})
    unreachable: frozenset[Action] = frozenset({Action.strip, Action.annotate})
    could_not_check: frozenset[Action] = frozenset({Action.annotate})
    unsafe_link: frozenset[Action] = frozenset({Action.strip, Action.annotate})
    badges: Badges = Field(default_factory=Badges)
    block_message: str = DEFAULT_BLOCK_MESSAGE
    raise_on_block: bool = Field(default=False, description="Raise CitationBlocked instead of replacing the text.")
    min_confidence: float = Field(
        default=0.0, ge=0.0, le=1.0, description="Below it, supported/contradicted verdicts count as not_found."
    )
    repair: bool = Field(
        default=False,
        description="Mend what can be mended first: dead links with a supporting archived copy, citations "
        "with a suggested source (see the module docs).",
    )

    def __init__(
        self,
        *,
        supported: ActionsLike = Action.keep,
        contradicted: ActionsLike = Action.annotate,
        not_found: ActionsLike = Action.annotate,
        unreachable: ActionsLike = (Action.strip, Action.annotate),
        could_not_check: ActionsLike = Action.annotate,
        unsafe_link: ActionsLike = (Action.strip, Action.annotate),
        badges: Badges | None = None,
        block_message: str = DEFAULT_BLOCK_MESSAGE,
        raise_on_block: bool = False,
        min_confidence: float = 0.0,
        repair: bool = False,
    ) -> None:
        # An explicit signature so type checkers accept "strip+annotate" and lists, not only frozensets.
        super().__init__(
            supported=supported,
            contradicted=contradicted,
            not_found=not_found,
            unreachable=unreachable,
            could_not_check=could_not_check,
            unsafe_link=unsafe_link,
            badges=badges or Badges(),
            block_message=block_message,
            raise_on_block=raise_on_block,
            min_confidence=min_confidence,
            repair=repair,
        )

    @field_validator(
        "supported", "contradicted", "not_found", "unreachable", "could_not_check", "unsafe_link", mode="before"
    )
    @classmethod
    def _actions(cls, value: Any) -> frozenset[Action]:
        return _parse_actions(value)

    def actions_for(self, label: Label | VerdictKind) -> frozenset[Action]:
        """The actions for a verdict with ``label`` (``unreachable``: a dead link) or of a kind."""
        return frozenset(getattr(self, _policy_field(_as_kind(label))))

    def actions_for_verdict(self, verdict: UrlVerdict, combined: bool = False) -> frozenset[Action]:
        """The actions for ``verdict``, read off the kind it is treated as (:meth:`kind_for`)."""
        return self.actions_for(self.kind_for(verdict, combined))

    def kind_for(self, verdict: UrlVerdict, combined: bool = False) -> VerdictKind:
        """How this policy treats ``verdict`` (see ``min_confidence``); ``combined``: the claim is
        supported by its cited pages together (reason ``combined_sources``)."""
        return verdict_kind(self.label_for(verdict, combined), verdict.reason)

    def label_for(self, verdict: UrlVerdict, combined: bool = False) -> Label:
        """The label this policy acts on for ``verdict`` (see ``min_confidence``)."""
        if combined and verdict.label == Label.not_found and verdict.supported_parts:
            return Label.supported
        if verdict.label in (Label.supported, Label.contradicted) and verdict.confidence < self.min_confidence:
            return Label.not_found
        return verdict.label

    def claim_kind(self, claim: AnswerClaim) -> VerdictKind | None:
        """How this policy treats a checked claim as a whole (None when it cites nothing)."""
        if claim.overall is None:
            return None
        overall = claim.overall
        if self.min_confidence > 0.0 and claim.verdicts:
            combined = claim.reason == Reason.combined_sources.value
            overall = aggregate(self.label_for(v, combined) for v in claim.verdicts)
        return overall_kind(overall, (v.kind for v in claim.verdicts))

    @classmethod
    def strict(cls, **overrides: Any) -> Policy:
        """The default policy, but a contradicted citation or an unsafe link blocks the whole answer."""
        return cls(**{"contradicted": Action.block, "unsafe_link": Action.block, **overrides})

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> Policy:
        """A named policy (see :data:`POLICY_PRESETS`), with any field overridden."""
        try:
            base = POLICY_PRESETS[name]
        except KeyError:
            raise ValueError(f"unknown policy preset {name!r}; choose from {', '.join(POLICY_PRESETS)}") from None
        return cls(**{**base, **overrides})


POLICY_PRESETS: dict[str, dict[str, Any]] = {
    # Show every verdict, change nothing else: for a person reviewing an answer, shown escaped
    # (the batch report). Unsafe links are listed in GuardedAnswer.unsafe_links but left as written.
    "annotate": {
        "supported": Action.annotate,
        "contradicted": Action.annotate,
        "not_found": Action.annotate,
        "unreachable": Action.annotate,
        "could_not_check": Action.annotate,
        "unsafe_link": Action.keep,
    },
    # The library default: flag doubtful citations, replace dead links with a badge, mark the
    # citations that could not be checked now.
    "default": {},
    # A clean answer: keep supported citations, silently remove every other one.
    "strip": {
        "supported": Action.keep,
        "contradicted": Action.strip,
        "not_found": Action.strip,
        "unreachable": Action.strip,
        "could_not_check": Action.strip,
        "unsafe_link": Action.strip,
    },
    # Nothing doubtful gets through: any citation that is not supported, or an unsafe link, blocks.
    "block": {
        "supported": Action.keep,
        "contradicted": Action.block,
        "not_found": Action.block,
        "unreachable": Action.block,
        "could_not_check": Action.block,
        "unsafe_link": Action.block,
    },
    # The default, but a contradicted citation or an unsafe link blocks the answer (Policy.strict()).
    "strict": {"contradicted": Action.block, "unsafe_link": Action.block},
    # The default, after mending what can be mended: dead links with a supporting archived copy,
    # citations another source at hand backs (Policy(repair=True) does it on any preset).
    "repair": {"repair": True},
}
"""Named policies for the CLI (``--policy``) and :meth:`Policy.preset`."""


class AppliedAction(BaseModel):
    """What the policy decided for one citation of one claim, and what was done."""

    claim_index: int
    citation_index: int
    label: Label
    kind: VerdictKind = Field(description="How the verdict reads (a dead link, could not check...).")
    actions: list[Action] = Field(description="The policy's actions for this kind of verdict.")
    url: str | None = None
    marker: str = ""
    inherited: bool = False
    stripped: bool = Field(default=False, description="The citation was removed from the text.")
    badge: str | None = Field(default=None, description="The badge text inserted for it, if any.")
    repair: RepairKind | None = Field(
        default=None, description="How a repairing policy mended it; label and kind are then its new verdict's."
    )


class GuardedAnswer(BaseModel):
    """The answer after the policy: the text to show, whether it was blocked, and why."""

    text: str
    blocked: bool = False
    report: AnswerReport
    actions: list[AppliedAction] = Field(default_factory=list)
    format: OutputFormat = "markdown"
    unsafe_links: list[UnsafeLink] = Field(
        default_factory=list, description="javascript:/data:/file:/vbscript: links found in the answer."
    )
    repairs: list[Repair] = Field(
        default_factory=list, description="Each citation a repairing policy mended (none when blocked)."
    )
    summary: str = Field(
        default="",
        description="One line for under the answer: each kind of claim with its badge and count, then the "
        "support score (render_summary), in the answer's format.",
    )


class CitationBlocked(Exception):
    """Raised by :func:`apply_policy` when the policy blocks and ``raise_on_block=True``."""

    def __init__(self, report: AnswerReport, message: str = DEFAULT_BLOCK_MESSAGE) -> None:
        super().__init__(message)
        self.report = report
        self.message = message


def render_badge(
    label: Label | VerdictKind | RepairKind,
    policy: Policy | None = None,
    fmt: OutputFormat = "markdown",
    title: str | None = None,
) -> str:
    """The badge for ``label``, a verdict kind or a repair: its text in markdown, or an HTML
    ``<span>`` whose ``title`` is ``title`` (:func:`apply_policy` passes :func:`verdict_title`: the
    evidence quote or the reason's sentence, and the parts not backed) (class ``citation-verdict
    citation-verdict--<name>``, the name being the label with ``-`` for ``_``, ``unreachable`` for
    dead links, ``could-not-check``, ``archived-copy``, ``repointed``)."""
    kind = label if isinstance(label, RepairKind) else _as_kind(label)
    text = (policy or Policy()).badges.for_kind(kind)
    if fmt == "markdown":
        return text
    if fmt != "html":
        raise ValueError(f"unknown format {fmt!r}; choose markdown or html")
    cls = _policy_field(kind).replace("_", "-")
    title_attr = f' title="{html.escape(title, quote=True)}"' if title else ""
    return f'<span class="citation-verdict citation-verdict--{cls}"{title_attr}>{html.escape(text)}</span>'


def render_summary(report: AnswerReport, policy: Policy | None = None, fmt: OutputFormat = "markdown") -> str:
    """The badges' summary of an answer: each kind of claim with its badge word and count, then
    :func:`~guardrail.core.report.support_summary`, e.g. ``✅ supported 1 · ⚠️ unverified 3 - support
    0.25: 1 of 4 checked claims supported (...)``; in HTML a ``<p class="citation-summary">`` whose
    badges are :func:`render_badge` spans."""
    chosen = policy or Policy()
    line = support_summary(report)
    kinds = [(VerdictKind(kind), n) for kind, n in report.kind_counts.items() if n]
    if fmt == "markdown":
        badges = " · ".join(f"{chosen.badges.for_kind(kind)} {n}" for kind, n in kinds)
        return f"{badges} - {line}" if badges else line
    if fmt != "html":
        raise ValueError(f"unknown format {fmt!r}; choose markdown or html")
    badges = " · ".join(f"{render_badge(kind, chosen, 'html')} {n}" for kind, n in kinds)
    body = f"{badges} - {html.escape(line)}" if badges else html.escape(line)
    return f'<p class="citation-summary">{body}</p>'


# --------------------------------------------------------------------------------------------
# Applying a policy
# --------------------------------------------------------------------------------------------


@dataclass
class _Use:
    claim: int
    cit: int
    ref: CitationRef
    verdict: UrlVerdict  # the verdict acted on: a mended citation's new one
    actions: frozenset[Action]
    kind: VerdictKind  # how the policy treats the verdict (Policy.kind_for)
    repair: Repair | None = None


@dataclass
class _Site:
    start: int
    end: int
    ref: CitationRef  # the first citation seen at this span (kind, marker, link text)
    items: dict[str, list[_Use]] = field(default_factory=dict)


@dataclass
class _Edit:
    start: int
    end: int
    text: bytes
    removal: bool = False  # a pure removal, subject to whitespace clean-up


def verdict_title(verdict: UrlVerdict) -> str | None:
    """What a verdict's badge shows on hover (its HTML ``title``): the evidence quote, else the
    reason in its plain sentence (``describe_reason``; the code itself for a code of no stage of
    ours), then the parts of the claim the page does not back (``Not backed: a; b``), if any."""
    head = verdict.evidence_quote or verdict.reason_text or verdict.reason
    missing = missing_text(verdict.missing_parts)
    return " ".join(part for part in (head, missing) if part) or None


def missing_text(parts: list[str] | None) -> str | None:
    """The parts of a claim a page does not back, for a person: ``Not backed: a; b.`` (None: none)."""
    if not parts:
        return None
    return f"Not backed: {'; '.join(part.rstrip('.') for part in parts)}."


def _item_key(ref: CitationRef, n: int) -> str:
    return ref.ref if ref.ref is not None else (ref.url or f"#{n}")


def apply_policy(report: AnswerReport, policy: Policy | None = None, fmt: OutputFormat = "markdown") -> GuardedAnswer:
    """Apply ``policy`` (default :class:`Policy`) to the answer in ``report``; see the module docs.

    ``fmt`` is ``"markdown"`` (badge text) or ``"html"`` (badges as inline ``<span>`` elements with
    :func:`verdict_title` as their escaped ``title``; the rest of the answer is left as it is).
    ``GuardedAnswer.summary`` is :func:`render_summary` in the same format.
    Claims without verdicts (nothing cited, nothing to check) are left alone. Raises
    :class:`CitationBlocked` when the policy blocks and ``policy.raise_on_block`` is set.
    """
    if fmt not in ("markdown", "html"):
        raise ValueError(f"unknown format {fmt!r}; choose markdown or html")
    return _Application(report, policy or Policy(), fmt).run()


BadgeSpec = tuple[BadgeKind, "str | None"]
"""A badge to render: the verdict's kind (or the repair's) and its title (:func:`verdict_title`)."""


class _Application:
    """One application of a policy to a report: the uses of each citation, then the edits."""

    def __init__(self, report: AnswerReport, policy: Policy, fmt: OutputFormat) -> None:
        self.report, self.policy, self.fmt = report, policy, fmt
        self.data = report.answer.encode("utf-8", "surrogatepass")
        self.sites: dict[tuple[int, int], _Site] = {}
        self.claim_sources: dict[int, list[_Use]] = {}
        self.applied: dict[tuple[int, int], AppliedAction] = {}
        self.stripped_refs: dict[str, bool] = {}  # reference label or source url -> every use stripped
        self.claim_end_badges: dict[int, list[BadgeSpec]] = {}
        self.edits: list[_Edit] = []
        self.unsafe = find_unsafe_links(report.answer)
        self.repairs: dict[tuple[int, int], Repair] = {}
        if policy.repair:
            planned = plan_repairs(report, lambda v: policy.label_for(v))
            self.repairs = {(r.claim_index, r.citation_index): r for r in planned if _renderable(r, report, self.data)}
        self.entry_urls: dict[str, tuple[str, str]] = {}  # reference label -> (old URL, archived URL)

    def run(self) -> GuardedAnswer:
        blocked = self._collect() or (bool(self.unsafe) and Action.block in self.policy.unsafe_link)
        if blocked:
            if self.policy.raise_on_block:
                raise CitationBlocked(self.report, self.policy.block_message)
            return self._answer(self.policy.block_message, blocked=True)
        for site in sorted(self.sites.values(), key=lambda site: site.start):
            self.edits.append(self._site_edit(site))
        self._source_badges()
        self._claim_end_edits()
        self._reference_edits()
        self._unsafe_link_edits()
        return self._answer(_apply_edits(self.data, self.edits).decode("utf-8", "surrogatepass"), blocked=False)

    def _answer(self, text: str, *, blocked: bool) -> GuardedAnswer:
        actions = list(self.applied.values())
        return GuardedAnswer(
            text=text,
            blocked=blocked,
            report=self.report,
            actions=actions,
            format=self.fmt,
            unsafe_links=self.unsafe,
            repairs=[] if blocked else list(self.repairs.values()),
            summary=render_summary(self.report, self.policy, self.fmt),
        )

    def _collect(self) -> bool:
        """Every citation's use and actions, grouped by the span it sits at; whether to block."""
        blocked = False
        for ci, claim in enumerate(self.report.claims):
            if not claim.verdicts or len(claim.verdicts) != len(claim.citations):
                # Unchecked claims keep their citations, so their reference entries must stay.
                self.stripped_refs.update((ref.ref, False) for ref in claim.citations if ref.ref is not None)
                continue
            combined = claim.reason == Reason.combined_sources.value
            for j, (ref, verdict) in enumerate(zip(claim.citations, claim.verdicts, strict=True)):
                repair = self.repairs.get((ci, j))
                if repair is not None:
                    verdict = repair.verdict  # mended: its new verdict's actions
                kind = self.policy.kind_for(verdict, combined)
                use = _Use(ci, j, ref, verdict, self.policy.actions_for(kind), kind, repair)
                self.applied[(ci, j)] = AppliedAction(
                    claim_index=ci,
                    citation_index=j,
                    label=verdict.label,
                    kind=kind,
                    actions=sorted(use.actions, key=str),
                    url=ref.url,
                    marker=ref.marker,
                    inherited=ref.inherited,
                    repair=repair.why if repair is not None else None,
                )
                if ref.kind == "source":
                    self.claim_sources.setdefault(ci, []).append(use)
                    continue
                blocked = blocked or Action.block in use.actions
                site = self.sites.setdefault((ref.start, ref.end), _Site(ref.start, ref.end, ref))
                site.items.setdefault(_item_key(ref, j), []).append(use)
        # A claim checked against sources passed in is judged as a whole: its overall label decides.
        for ci in self.claim_sources:
            overall = self.policy.claim_kind(self.report.claims[ci])
            blocked = blocked or (overall is not None and Action.block in self.policy.actions_for(overall))
        return blocked

    def _note_ref(self, ref: CitationRef, stripped: bool) -> None:
        key = ref.ref if ref.ref is not None else (f"url:{ref.url}" if ref.kind == "source" else None)
        if key is not None:
            self.stripped_refs[key] = self.stripped_refs.get(key, True) and stripped

    def _badge(self, spec: BadgeSpec) -> str:
        return render_badge(spec[0], self.policy, self.fmt, spec[1])

    def _site_edit(self, site: _Site) -> _Edit:
        """What one citation span becomes: kept, stripped, badged, mended, or a group split by verdict."""
        kept: list[str] = []
        badges: list[BadgeSpec] = []
        item_badges: list[tuple[str, list[BadgeSpec]]] = []
        renamed: dict[str, str] = {}
        swap: tuple[str, str] | None = None
        for key, uses in site.items.items():
            strip = all(Action.strip in u.actions for u in uses)
            specs = self._badge_uses(uses, strip)
            badges.extend(specs)
            if not strip:
                kept.append(key)
            item_badges.append((key, specs))
            repair = next((u.repair for u in uses if u.repair is not None), None)
            if repair is None or strip:
                continue
            if site.ref.kind in LINK_KINDS and repair.old_url and repair.new_url:
                swap = (repair.old_url, repair.new_url)
            elif repair.why == RepairKind.repointed:
                renamed[key] = _label_of(repair.new_citation)
                self.stripped_refs[renamed[key]] = False  # the entry it now cites stays
            elif key and repair.old_url and repair.new_url:
                self.entry_urls[key] = (repair.old_url, repair.new_url)
        all_stripped = len(kept) == 0
        shape = _Shape(kept, item_badges, badges, all_stripped, renamed, swap)
        return _render_site(site, self.data, shape, self.policy, self.fmt)

    def _badge_uses(self, uses: list[_Use], strip: bool) -> list[BadgeSpec]:
        """The badges shown at the span for one item (its own citation's repair and verdict), and
        the claim-end badges of covered sentences whose verdict differs from it."""
        owner = next((u for u in uses if not u.ref.inherited), uses[0])
        specs: list[BadgeSpec] = []
        if owner.repair is not None and not strip:
            specs.append((owner.repair.why, verdict_title(owner.verdict)))
        if Action.annotate in owner.actions:
            specs.append((owner.kind, verdict_title(owner.verdict)))
        for u in uses:
            # A re-pointed marker no longer cites its old entry.
            self._note_ref(u.ref, strip or (u.repair is not None and u.repair.why == RepairKind.repointed))
            applied = self.applied[(u.claim, u.cit)]
            applied.stripped = strip
            if u is owner and specs:
                applied.badge = " ".join(self._badge(spec) for spec in specs)
            elif u.ref.inherited and Action.annotate in u.actions and owner.kind != u.kind:
                spec = (u.kind, verdict_title(u.verdict))
                self.claim_end_badges.setdefault(u.claim, []).append(spec)
                applied.badge = self._badge(spec)
        return specs

    def _source_badges(self) -> None:
        """Claims checked against sources passed in get one badge for the claim as a whole (and one
        for the sources read from their archived copies, under repair)."""
        for ci, uses in self.claim_sources.items():
            overall = self.policy.claim_kind(self.report.claims[ci])
            for u in uses:
                self._note_ref(u.ref, Action.strip in u.actions)
                if u.repair is not None:
                    spec: BadgeSpec = (u.repair.why, verdict_title(u.verdict))
                    self.claim_end_badges.setdefault(ci, []).append(spec)
                    self.applied[(u.claim, u.cit)].badge = self._badge(spec)
            if overall is None or Action.annotate not in self.policy.actions_for(overall):
                continue
            same = [u.verdict for u in uses if u.kind == overall]
            best = next((v for v in same if v.evidence_quote), same[0] if same else None)
            spec = (overall, verdict_title(best) if best else None)
            self.claim_end_badges.setdefault(ci, []).append(spec)
            for u in uses:
                self.applied[(u.claim, u.cit)].badge = self._badge(spec)

    def _claim_end_edits(self) -> None:
        for ci, specs in self.claim_end_badges.items():
            end = self.report.claims[ci].end
            parts = [self._badge(spec) for spec in _first_of_each_kind(specs)]
            after = self.data[end : end + 1]
            pad = " " if after and after not in b" \t\r\n" else ""
            self.edits.append(_Edit(end, end, (" " + " ".join(parts) + pad).encode()))

    def _reference_edits(self) -> None:
        """Reference entries whose every citation was stripped go, and the section once it is empty."""
        report, data = self.report, self.data
        for entry in report.references:
            key = _entry_key(entry)
            if self.stripped_refs.get(key):
                self.edits.append(_Edit(entry.start, entry.end, b""))
            elif key in self.entry_urls:
                self.edits.append(_swapped(entry, data, *self.entry_urls[key]))
        start, end = report.references_start, report.references_end
        if start is None or end is None:
            return
        section = [e for e in report.references if start <= e.start < end]
        if not section or not all(self.stripped_refs.get(_entry_key(e)) for e in section):
            return
        self.edits = [e for e in self.edits if not (start <= e.start < end)]
        while start > 0 and data[start - 1 : start] in (b" ", b"\t", b"\n", b"\r"):
            start -= 1
        if not data[end:].strip():
            end = len(data)
        self.edits.append(_Edit(start, end, b"\n" if data.endswith(b"\n") else b""))

    def _unsafe_link_edits(self) -> None:
        """Strip and/or badge each unsafe link; a strip wins over the edits inside its span."""
        actions = self.policy.unsafe_link
        for link in self.unsafe:
            badge = ""
            if Action.annotate in actions and link.kind in ("link", "image", "autolink"):
                badge = render_unsafe_badge(link, self.policy, self.fmt)
            if Action.strip in actions:
                text = " ".join(part for part in (link.text, badge) if part)
                edit = _Edit(link.start, link.end, text.encode("utf-8", "surrogatepass"), removal=not text)
            elif badge:
                edit = _Edit(link.end, link.end, (" " + badge).encode())
            else:
                continue
            if any(e.end > e.start and e.start <= link.start and link.end <= e.end for e in self.edits):
                continue  # already replaced with what holds it (a stripped reference section)
            if edit.end > edit.start:
                self.edits = [_outside(e, link.start, link.end) for e in self.edits if not _within(e, link)]
            self.edits.append(edit)


def render_unsafe_badge(link: UnsafeLink, policy: Policy | None = None, fmt: OutputFormat = "markdown") -> str:
    """The badge put where an unsafe link was: its text in markdown, or an HTML ``<span>`` (class
    ``citation-verdict citation-verdict--unsafe-link``) whose title names the scheme."""
    text = (policy or Policy()).badges.unsafe_link
    if fmt == "markdown":
        return text
    title = html.escape(f"{link.scheme}: link removed", quote=True)
    return f'<span class="citation-verdict citation-verdict--unsafe-link" title="{title}">{html.escape(text)}</span>'


def _within(edit: _Edit, link: UnsafeLink) -> bool:
    """An edit that changes text inside the link's span (dropped when the link is stripped)."""
    return edit.end > edit.start and edit.start < link.end and link.start < edit.end


def _outside(edit: _Edit, start: int, end: int) -> _Edit:
    """An insertion strictly inside ``start``-``end`` moved to ``end`` (a claim-end badge)."""
    if edit.start == edit.end and start < edit.start < end:
        return _Edit(end, end, edit.text, edit.removal)
    return edit


def _entry_key(entry: Reference) -> str:
    return entry.label if entry.label is not None else f"url:{entry.url}"


def _first_of_each_kind(specs: list[BadgeSpec]) -> list[BadgeSpec]:
    """One badge per kind: the first of each, in order of first appearance."""
    first: dict[BadgeKind, BadgeSpec] = {}
    for spec in specs:
        first.setdefault(spec[0], spec)
    return list(first.values())


def _label_of(marker: str) -> str:
    """The label a marker writes: ``"[1]"`` -> ``"1"``, ``"[^note]"`` -> ``"note"``."""
    return marker.strip().lstrip("^").strip("[]").lstrip("^")


def _renderable(repair: Repair, report: AnswerReport, data: bytes) -> bool:
    """Whether the policy can write ``repair`` into the answer: a link whose URL is in its own span
    (not a reference-style link, whose definition other links may share), any marker."""
    ref = report.claims[repair.claim_index].citations[repair.citation_index]
    if ref.kind not in LINK_KINDS:
        return True
    return ref.url is not None and ref.url.encode("utf-8", "surrogatepass") in data[ref.start : ref.end]


def _swapped(entry: Reference, data: bytes, old: str, new: str) -> _Edit:
    """A reference entry with its URL replaced (a dead link pointed at its archived copy)."""
    text = data[entry.start : entry.end].replace(old.encode("utf-8", "surrogatepass"), new.encode(), 1)
    return _Edit(entry.start, entry.end, text)


@dataclass
class _Shape:
    """What one citation span is to become: the items kept (by key), each item's badges, the
    site's badges in order, and the repairs: items re-pointed (old key -> new) or a URL swapped."""

    kept: list[str]
    item_badges: list[tuple[str, list[BadgeSpec]]]
    badges: list[BadgeSpec]
    all_stripped: bool
    renamed: dict[str, str] = field(default_factory=dict)
    swap: tuple[str, str] | None = None


def _marker_text(original: bytes, keys: list[str]) -> str:
    """A numbered marker written like ``original`` (``[1, 2]``, ``^[1]``, ``[^1]``) with ``keys``."""
    if original.startswith(b"[^"):
        return "".join(f"[^{key}]" for key in keys)
    caret = "^" if original.startswith(b"^") else ""
    return f"{caret}[{', '.join(keys)}]"


def _render_site(site: _Site, data: bytes, shape: _Shape, policy: Policy, fmt: OutputFormat) -> _Edit:
    ref = site.ref
    original = data[site.start : site.end]
    badges, kept = shape.badges, shape.kept
    distinct = list(dict.fromkeys(label for label, _ in badges))

    def render(pairs: list[BadgeSpec]) -> str:
        return " ".join(render_badge(kind, policy, fmt, title) for kind, title in _first_of_each_kind(pairs))

    after = data[site.end : site.end + 1]
    # A badge must not run into what follows it ("[1] ✅ supported[2]").
    pad = " " if badges and after and after not in _CLOSERS else ""
    keys = list(dict.fromkeys(shape.renamed.get(key, key) for key in kept))
    if ref.kind == "numbered" and len(site.items) > 1:
        with_badges = [bool(specs) for _, specs in shape.item_badges]
        if len(distinct) > 1 or (badges and (not all(with_badges) or len(kept) < len(site.items))):
            # Verdicts differ inside one group: split it so each badge follows its own number;
            # badges standing for removed numbers come first, so none seems to follow a kept one.
            removed, remaining = [], []
            for key, specs in shape.item_badges:
                badge = render(specs)
                if key in kept:
                    remaining.append(f"{_marker_text(original, [shape.renamed.get(key, key)])} {badge}".strip())
                elif badge:
                    removed.append(badge)
            parts = list(dict.fromkeys(removed)) + list(dict.fromkeys(remaining))
            text = " ".join(parts)
            return _Edit(site.start, site.end, (text + pad if text else "").encode(), removal=not parts)
        body = (
            original.decode("utf-8", "surrogatepass")
            if len(kept) == len(site.items) and not shape.renamed
            else (_marker_text(original, keys) if kept else "")
        )
    elif ref.kind == "numbered" and shape.renamed and kept:
        body = _marker_text(original, keys)
    elif shape.all_stripped:
        # A link standing alone in parentheses is a citation, not words of the sentence: its
        # text goes with it ("([source](url))" leaves nothing, not "(source)").
        link_text = ref.link_text if ref.kind == "markdown_link" else None
        alone = _alone_in_parens(data, site.start, site.end)
        body = link_text if link_text is not None and not alone else ""
    else:
        body = original.decode("utf-8", "surrogatepass")
        if shape.swap is not None:
            body = body.replace(shape.swap[0], shape.swap[1], 1)
    badge_text = render(badges)
    if badge_text:
        body = f"{body} {badge_text}{pad}" if body else badge_text + pad
    if body == original.decode("utf-8", "surrogatepass"):
        return _Edit(site.start, site.start, b"")  # nothing to change
    return _Edit(site.start, site.end, body.encode("utf-8", "surrogatepass"), removal=body == "")


def _alone_in_parens(data: bytes, start: int, end: int) -> bool:
    """Whether ``data[start:end]`` is the only thing inside a pair of parentheses."""
    return data[:start].rstrip(b" \t").endswith(b"(") and data[end:].lstrip(b" \t").startswith(b")")


_SPACE = b" \t"
_CLOSERS = b" \t\r\n.,;:!?)]}*_\"'"


def _apply_edits(data: bytes, edits: list[_Edit]) -> bytes:
    """Apply non-overlapping edits; pure removals take neighbouring spaces and emptied brackets."""
    edits = sorted((e for e in edits if e.start != e.end or e.text), key=lambda e: (e.start, e.end))
    # Merge touching removals ("[1][2]" both stripped) so whitespace is judged once.
    merged: list[_Edit] = []
    for e in edits:
        if merged and e.removal and merged[-1].removal and merged[-1].end == e.start:
            merged[-1] = _Edit(merged[-1].start, e.end, b"", removal=True)
        else:
            merged.append(e)
    out: list[_Edit] = []
    for e in merged:
        if e.removal:
            s, t = e.start, e.end
            # "(https://x)" or "( [1] )" emptied: take the brackets too.
            ls, rt = s, t
            while ls > 0 and data[ls - 1 : ls] in (b" ",):
                ls -= 1
            while rt < len(data) and data[rt : rt + 1] == b" ":
                rt += 1
            if ls > 0 and rt < len(data) and data[ls - 1 : ls] + data[rt : rt + 1] in (b"()", b"[]"):
                s, t = ls - 1, rt + 1
            before = data[s - 1 : s] if s > 0 else b""
            after = data[t : t + 1]
            if before and before in _SPACE and (not after or after in _CLOSERS):
                while s > 0 and data[s - 1 : s] in (b" ", b"\t"):
                    s -= 1
            elif (not before or before == b"\n") and after and after in _SPACE:
                while t < len(data) and data[t : t + 1] in (b" ", b"\t"):
                    t += 1
            e = _Edit(s, t, b"", removal=True)
        if out and e.start < out[-1].end:
            # Overlap (an insertion inside a widened removal): move it to the removal's start.
            prev = out[-1]
            if e.start == e.end:
                out.insert(len(out) - 1, _Edit(prev.start, prev.start, e.text))
                continue
            e = _Edit(max(e.start, prev.end), max(e.end, prev.end), e.text, e.removal)
        out.append(e)
    pieces: list[bytes] = []
    pos = 0
    for e in sorted(out, key=lambda e: (e.start, e.end)):
        pieces.append(data[pos : e.start])
        pieces.append(e.text)
        pos = max(pos, e.end)
    pieces.append(data[pos:])
    return b"".join(pieces)
