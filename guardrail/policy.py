"""What to do with each verdict: keep, annotate, strip or block, and the badges annotate adds.

:func:`apply_policy` turns an :class:`~guardrail.schema.AnswerReport` into a
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

A marker at a paragraph's end also covers the sentences before it (``inherited`` citations). It
is removed only when every sentence's verdict for it says strip; its badge follows the sentence
that carries it, and a covered sentence whose verdict differs gets its own badge at its end.

Streaming: :func:`guardrail.extract.stream_cut` says which prefix of a growing answer is final;
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

from guardrail.aggregate import aggregate
from guardrail.schema import AnswerClaim, AnswerReport, CitationRef, Label, Reason, UrlVerdict

__all__ = [
    "POLICY_PRESETS",
    "Action",
    "AppliedAction",
    "Badges",
    "CitationBlocked",
    "GuardedAnswer",
    "OutputFormat",
    "Policy",
    "apply_policy",
    "render_badge",
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
    """The badge text for each label (``annotate``)."""

    model_config = ConfigDict(frozen=True)

    supported: str = "✅ supported"
    contradicted: str = "❌ contradicted"
    not_found: str = "⚠️ unverified"
    unreachable: str = "⛔ dead link"

    def for_label(self, label: Label) -> str:
        """The badge text for ``label``."""
        return str(getattr(self, label.value))


ActionsLike = Action | str | Iterable[Action | str]
"""One action or a combination: ``Action.strip``, ``"strip+annotate"``, ``[Action.strip, "annotate"]``."""

DEFAULT_BLOCK_MESSAGE = "This answer was withheld because one or more of its citations failed verification."


class Policy(BaseModel):
    """The action for each verdict label, the badges, and what blocking does.

    Each label takes one action or a combination: ``Action.strip``, ``"strip+annotate"`` or
    ``[Action.strip, Action.annotate]``; ``keep`` and ``block`` stand alone. Defaults: supported
    keep, contradicted annotate, not_found annotate, unreachable strip + annotate.

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
    badges: Badges = Field(default_factory=Badges)
    block_message: str = DEFAULT_BLOCK_MESSAGE
    raise_on_block: bool = Field(default=False, description="Raise CitationBlocked instead of replacing the text.")
    min_confidence: float = Field(
        default=0.0, ge=0.0, le=1.0, description="Below it, supported/contradicted verdicts count as not_found."
    )

    def __init__(
        self,
        *,
        supported: ActionsLike = Action.keep,
        contradicted: ActionsLike = Action.annotate,
        not_found: ActionsLike = Action.annotate,
        unreachable: ActionsLike = (Action.strip, Action.annotate),
        badges: Badges | None = None,
        block_message: str = DEFAULT_BLOCK_MESSAGE,
        raise_on_block: bool = False,
        min_confidence: float = 0.0,
    ) -> None:
        # An explicit signature so type checkers accept "strip+annotate" and lists, not only frozensets.
        super().__init__(
            supported=supported,
            contradicted=contradicted,
            not_found=not_found,
            unreachable=unreachable,
            badges=badges or Badges(),
            block_message=block_message,
            raise_on_block=raise_on_block,
            min_confidence=min_confidence,
        )

    @field_validator("supported", "contradicted", "not_found", "unreachable", mode="before")
    @classmethod
    def _actions(cls, value: Any) -> frozenset[Action]:
        return _parse_actions(value)

    def actions_for(self, label: Label) -> frozenset[Action]:
        """The actions for a verdict with ``label``."""
        return frozenset(getattr(self, Label(label).value))

    def label_for(self, verdict: UrlVerdict, combined: bool = False) -> Label:
        """The label this policy acts on for ``verdict`` (see ``min_confidence``); ``combined``: the
        claim is supported by its cited pages together (reason ``combined_sources``)."""
        if combined and verdict.label == Label.not_found and verdict.supported_parts:
            return Label.supported
        if verdict.label in (Label.supported, Label.contradicted) and verdict.confidence < self.min_confidence:
            return Label.not_found
        return verdict.label

    def claim_label(self, claim: AnswerClaim) -> Label | None:
        """The overall label this policy acts on for a checked claim (None when it cites nothing)."""
        if claim.overall is None or not claim.verdicts:
            return claim.overall
        if self.min_confidence <= 0.0:
            return claim.overall
        combined = claim.reason == Reason.combined_sources.value
        return aggregate(self.label_for(v, combined) for v in claim.verdicts)

    @classmethod
    def strict(cls, **overrides: Any) -> Policy:
        """The default policy, but a contradicted citation blocks the whole answer."""
        return cls(**{"contradicted": Action.block, **overrides})

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> Policy:
        """A named policy (see :data:`POLICY_PRESETS`), with any field overridden."""
        try:
            base = POLICY_PRESETS[name]
        except KeyError:
            raise ValueError(f"unknown policy preset {name!r}; choose from {', '.join(POLICY_PRESETS)}") from None
        return cls(**{**base, **overrides})


POLICY_PRESETS: dict[str, dict[str, Any]] = {
    # Show every verdict, change nothing else: for a person reviewing an answer.
    "annotate": {
        "supported": Action.annotate,
        "contradicted": Action.annotate,
        "not_found": Action.annotate,
        "unreachable": Action.annotate,
    },
    # The library default: flag doubtful citations, replace dead links with a badge.
    "default": {},
    # A clean answer: keep supported citations, silently remove every other one.
    "strip": {
        "supported": Action.keep,
        "contradicted": Action.strip,
        "not_found": Action.strip,
        "unreachable": Action.strip,
    },
    # Nothing doubtful gets through: any citation that is not supported blocks the answer.
    "block": {
        "supported": Action.keep,
        "contradicted": Action.block,
        "not_found": Action.block,
        "unreachable": Action.block,
    },
    # The default, but a contradicted citation blocks the answer (Policy.strict()).
    "strict": {"contradicted": Action.block},
}
"""Named policies for the CLI (``--policy``) and :meth:`Policy.preset`."""


class AppliedAction(BaseModel):
    """What the policy decided for one citation of one claim, and what was done."""

    claim_index: int
    citation_index: int
    label: Label
    actions: list[Action] = Field(description="The policy's actions for this label.")
    url: str | None = None
    marker: str = ""
    inherited: bool = False
    stripped: bool = Field(default=False, description="The citation was removed from the text.")
    badge: str | None = Field(default=None, description="The badge text inserted for it, if any.")


class GuardedAnswer(BaseModel):
    """The answer after the policy: the text to show, whether it was blocked, and why."""

    text: str
    blocked: bool = False
    report: AnswerReport
    actions: list[AppliedAction] = Field(default_factory=list)
    format: OutputFormat = "markdown"


class CitationBlocked(Exception):
    """Raised by :func:`apply_policy` when the policy blocks and ``raise_on_block=True``."""

    def __init__(self, report: AnswerReport, message: str = DEFAULT_BLOCK_MESSAGE) -> None:
        super().__init__(message)
        self.report = report
        self.message = message


def render_badge(
    label: Label, policy: Policy | None = None, fmt: OutputFormat = "markdown", title: str | None = None
) -> str:
    """The badge for ``label``: its text in markdown, or an HTML ``<span>`` whose ``title`` is the
    evidence quote (class ``citation-verdict citation-verdict--<label with - for _>``)."""
    text = (policy or Policy()).badges.for_label(label)
    if fmt == "markdown":
        return text
    if fmt != "html":
        raise ValueError(f"unknown format {fmt!r}; choose markdown or html")
    cls = label.value.replace("_", "-")
    title_attr = f' title="{html.escape(title, quote=True)}"' if title else ""
    return f'<span class="citation-verdict citation-verdict--{cls}"{title_attr}>{html.escape(text)}</span>'


# --------------------------------------------------------------------------------------------
# Applying a policy
# --------------------------------------------------------------------------------------------


@dataclass
class _Use:
    claim: int
    cit: int
    ref: CitationRef
    verdict: UrlVerdict
    actions: frozenset[Action]
    label: Label  # the label the policy acts on (Policy.label_for)


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


def _title(verdict: UrlVerdict) -> str | None:
    return verdict.evidence_quote or verdict.reason


def _item_key(ref: CitationRef, n: int) -> str:
    return ref.ref if ref.ref is not None else (ref.url or f"#{n}")


def apply_policy(report: AnswerReport, policy: Policy | None = None, fmt: OutputFormat = "markdown") -> GuardedAnswer:
    """Apply ``policy`` (default :class:`Policy`) to the answer in ``report``; see the module docs.

    ``fmt`` is ``"markdown"`` (badge text) or ``"html"`` (badges as inline ``<span>`` elements with
    the evidence quote as their escaped ``title``; the rest of the answer is left as it is).
    Claims without verdicts (nothing cited, nothing to check) are left alone. Raises
    :class:`CitationBlocked` when the policy blocks and ``policy.raise_on_block`` is set.
    """
    policy = policy or Policy()
    if fmt not in ("markdown", "html"):
        raise ValueError(f"unknown format {fmt!r}; choose markdown or html")
    data = report.answer.encode("utf-8", "surrogatepass")

    sites: dict[tuple[int, int], _Site] = {}
    unchecked_refs: set[str] = set()
    claim_sources: dict[int, list[_Use]] = {}
    applied: dict[tuple[int, int], AppliedAction] = {}
    blocked = False
    for ci, claim in enumerate(report.claims):
        if not claim.verdicts or len(claim.verdicts) != len(claim.citations):
            # Unchecked claims keep their citations, so their reference entries must stay.
            for ref in claim.citations:
                if ref.ref is not None:
                    unchecked_refs.add(ref.ref)
            continue
        combined = claim.reason == Reason.combined_sources.value
        for j, (ref, verdict) in enumerate(zip(claim.citations, claim.verdicts, strict=True)):
            label = policy.label_for(verdict, combined)
            actions = policy.actions_for(label)
            use = _Use(ci, j, ref, verdict, actions, label)
            applied[(ci, j)] = AppliedAction(
                claim_index=ci,
                citation_index=j,
                label=label,
                actions=sorted(actions, key=str),
                url=ref.url,
                marker=ref.marker,
                inherited=ref.inherited,
            )
            if ref.kind == "source":
                claim_sources.setdefault(ci, []).append(use)
                continue
            if Action.block in actions:
                blocked = True
            site = sites.setdefault((ref.start, ref.end), _Site(ref.start, ref.end, ref))
            site.items.setdefault(_item_key(ref, j), []).append(use)
    # A claim checked against sources passed in is judged as a whole: its overall label decides.
    for ci in claim_sources:
        overall = policy.claim_label(report.claims[ci])
        if overall is not None and Action.block in policy.actions_for(overall):
            blocked = True

    if blocked:
        if policy.raise_on_block:
            raise CitationBlocked(report, policy.block_message)
        return GuardedAnswer(
            text=policy.block_message, blocked=True, report=report, actions=list(applied.values()), format=fmt
        )

    edits: list[_Edit] = []
    stripped_refs: dict[str, bool] = dict.fromkeys(unchecked_refs, False)  # ref/url -> every use stripped
    claim_end_badges: dict[int, list[tuple[Label, str | None]]] = {}

    def note_ref(ref: CitationRef, stripped: bool) -> None:
        key = ref.ref if ref.ref is not None else (f"url:{ref.url}" if ref.kind == "source" else None)
        if key is not None:
            stripped_refs[key] = stripped_refs.get(key, True) and stripped

    for site in sorted(sites.values(), key=lambda s: s.start):
        kept_labels: list[str] = []
        badges: list[tuple[Label, str | None]] = []
        item_badges: list[tuple[str, Label | None, str | None]] = []
        all_stripped = True
        for key, uses in site.items.items():
            strip = all(Action.strip in u.actions for u in uses)
            owner = next((u for u in uses if not u.ref.inherited), uses[0])
            badge: tuple[Label, str | None] | None = None
            if Action.annotate in owner.actions:
                badge = (owner.label, _title(owner.verdict))
                badges.append(badge)
            for u in uses:
                note_ref(u.ref, strip)
                a = applied[(u.claim, u.cit)]
                a.stripped = strip
                if u is owner and badge is not None:
                    a.badge = render_badge(badge[0], policy, fmt, badge[1])
                elif u.ref.inherited and Action.annotate in u.actions and (badge is None or badge[0] != u.label):
                    claim_end_badges.setdefault(u.claim, []).append((u.label, _title(u.verdict)))
                    a.badge = render_badge(u.label, policy, fmt, _title(u.verdict))
            if not strip:
                all_stripped = False
                kept_labels.append(key)
            item_badges.append((key, badge[0] if badge else None, badge[1] if badge else None))
        edits.append(_render_site(site, data, kept_labels, item_badges, badges, all_stripped, policy, fmt))

    for ci, uses in claim_sources.items():
        claim = report.claims[ci]
        overall = policy.claim_label(claim)
        for u in uses:
            note_ref(u.ref, Action.strip in u.actions)
        if overall is not None and Action.annotate in policy.actions_for(overall):
            best = next((u.verdict for u in uses if u.label == overall and u.verdict.evidence_quote), None)
            best = best or next((u.verdict for u in uses if u.label == overall), None)
            title = _title(best) if best else None
            claim_end_badges.setdefault(ci, []).append((overall, title))
            for u in uses:
                applied[(u.claim, u.cit)].badge = render_badge(overall, policy, fmt, title)

    for ci, badge_list in claim_end_badges.items():
        end = report.claims[ci].end
        seen: list[Label] = []
        parts = []
        for label, title in badge_list:
            if label not in seen:
                seen.append(label)
                parts.append(render_badge(label, policy, fmt, title))
        pad = " " if data[end : end + 1] and data[end : end + 1] not in b" \t\r\n" else ""
        edits.append(_Edit(end, end, (" " + " ".join(parts) + pad).encode()))

    # Reference entries whose every citation was stripped, and the section once it is empty.
    removed_entries = 0
    for entry in report.references:
        key = entry.label if entry.label is not None else f"url:{entry.url}"
        if stripped_refs.get(key):
            edits.append(_Edit(entry.start, entry.end, b""))
            removed_entries += 1
    section_entries = [
        e
        for e in report.references
        if report.references_start is not None
        and report.references_end is not None
        and report.references_start <= e.start < report.references_end
    ]
    if section_entries and all(
        stripped_refs.get(e.label if e.label is not None else f"url:{e.url}") for e in section_entries
    ):
        assert report.references_start is not None and report.references_end is not None
        edits = [e for e in edits if not (report.references_start <= e.start < report.references_end)]
        start = report.references_start
        while start > 0 and data[start - 1 : start] in (b" ", b"\t", b"\n", b"\r"):
            start -= 1
        end = report.references_end
        if not data[end:].strip():
            end = len(data)
        edits.append(_Edit(start, end, b"\n" if data.endswith(b"\n") else b""))

    text = _apply_edits(data, edits).decode("utf-8", "surrogatepass")
    return GuardedAnswer(text=text, blocked=False, report=report, actions=list(applied.values()), format=fmt)


def _render_site(
    site: _Site,
    data: bytes,
    kept: list[str],
    item_badges: list[tuple[str, Label | None, str | None]],
    badges: list[tuple[Label, str | None]],
    all_stripped: bool,
    policy: Policy,
    fmt: OutputFormat,
) -> _Edit:
    ref = site.ref
    original = data[site.start : site.end]
    distinct = list(dict.fromkeys(label for label, _ in badges))

    def render(pairs: list[tuple[Label, str | None]]) -> str:
        seen: list[Label] = []
        out = []
        for label, title in pairs:
            if label not in seen:
                seen.append(label)
                out.append(render_badge(label, policy, fmt, title))
        return " ".join(out)

    after = data[site.end : site.end + 1]
    # A badge must not run into what follows it ("[1] ✅ supported[2]").
    pad = " " if badges and after and after not in _CLOSERS else ""
    if ref.kind == "numbered" and len(site.items) > 1:
        caret = "^" if original.startswith(b"^") else ""
        labels = [label for _, label, _ in item_badges]
        if len(distinct) > 1 or (badges and (None in labels or len(kept) < len(site.items))):
            # Verdicts differ inside one group: split it so each badge follows its own number;
            # badges standing for removed numbers come first, so none seems to follow a kept one.
            removed, remaining = [], []
            for key, label, title in item_badges:
                badge = render_badge(label, policy, fmt, title) if label is not None else ""
                if key in kept:
                    remaining.append(f"{caret}[{key}] {badge}".strip())
                elif badge:
                    removed.append(badge)
            parts = list(dict.fromkeys(removed)) + remaining
            text = " ".join(parts)
            return _Edit(site.start, site.end, (text + pad if text else "").encode(), removal=not parts)
        body = (
            original.decode("utf-8", "surrogatepass")
            if len(kept) == len(site.items)
            else (f"{caret}[{', '.join(kept)}]" if kept else "")
        )
    elif all_stripped:
        # A link standing alone in parentheses is a citation, not words of the sentence: its
        # text goes with it ("([source](url))" leaves nothing, not "(source)").
        link_text = ref.link_text if ref.kind == "markdown_link" else None
        alone = _alone_in_parens(data, site.start, site.end)
        body = link_text if link_text is not None and not alone else ""
    else:
        body = original.decode("utf-8", "surrogatepass")
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
