"""Pydantic models and the label/reason vocabulary shared by every stage.

Nothing in this module imports from the rest of the package: every stage imports
``schema``, never the other way round.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from enum import Enum
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, computed_field


def _not_a_boolean(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError("a number is needed, not true or false")
    return value


Number = Annotated[float, BeforeValidator(_not_a_boolean)]
"""A float field that refuses ``true``/``false`` (pydantic's lax mode reads them as 1.0 and 0.0),
still taking an integer or a numeric string (proto3 JSON, which Vertex clients speak, allows both)."""


class Label(str, Enum):
    """The verdict for one citation, or for a claim as a whole."""

    supported = "supported"
    contradicted = "contradicted"
    not_found = "not_found"
    unreachable = "unreachable"

    def __str__(self) -> str:  # so f-strings and rich tables print "supported", not "Label.supported"
        return self.value


JudgeLabel = Literal["supported", "contradicted", "not_found"]
"""The three labels a judge may return; ``unreachable`` is decided by the verifier only."""


class Reason(str, Enum):
    """Reason codes for verdicts the verifier (not the judge) decided.

    ``http_<code>`` (for example ``http_404``) is built by :func:`http_reason` and is
    not listed here because the code varies.
    """

    fetch_timeout = "fetch_timeout"
    fetch_error = "fetch_error"
    host_not_found = "host_not_found"
    redirected_to_homepage = "redirected_to_homepage"
    too_many_redirects = "too_many_redirects"
    soft_404 = "soft_404"
    bot_challenge = "bot_challenge"
    empty_page = "empty_page"
    unsupported_content_type = "unsupported_content_type"
    unsupported_content_encoding = "unsupported_content_encoding"
    unreadable_document = "unreadable_document"
    too_large = "too_large"
    blocked_address = "blocked_address"
    invalid_url = "invalid_url"
    evidence_quote_not_in_source = "evidence_quote_not_in_source"
    judge_error = "judge_error"
    internal_error = "internal_error"
    no_judge_configured = "no_judge_configured"
    no_citations = "no_citations"
    unresolved_citation = "unresolved_citation"
    insufficient_support = "insufficient_support"
    nothing_to_check = "nothing_to_check"
    partially_supported = "partially_supported"
    combined_sources = "combined_sources"
    unsupported_language = "unsupported_language"
    archived_copy = "archived_copy"
    deadline = "deadline"
    no_relevant_passage = "no_relevant_passage"
    conflicting_evidence = "conflicting_evidence"

    def __str__(self) -> str:
        return self.value


REASON_DESCRIPTIONS: dict[str, str] = {
    "http_<code>": "The site answered an HTTP error status instead of the page: 404, 410 and other 4xx mean it is "
    "gone, 429 and 5xx that the site could not serve it now, 401, 403, 407 or 451 that it refused us (the page "
    "may be fine).",
    Reason.fetch_timeout.value: "The site did not answer in time, even after retrying, so the page could not be "
    "checked now.",
    Reason.fetch_error.value: "The connection failed (refused or reset, a temporary DNS failure, a TLS or protocol "
    "error, or our own network down), even after retrying, so the page could not be checked now.",
    Reason.host_not_found.value: "The site's host name does not exist (DNS knows no such domain), so the link is dead.",
    Reason.redirected_to_homepage.value: "The link was redirected to the site's home page instead of the cited "
    "page, which is most likely gone.",
    Reason.too_many_redirects.value: "The link went through more redirects than allowed (five), or round a "
    "redirect loop.",
    Reason.soft_404.value: "The site answered with a short 'page not found' page, though with status 200.",
    Reason.bot_challenge.value: "The site showed a bot check (a captcha, 'verify you are human') instead of the page.",
    Reason.empty_page.value: "The page has no readable text, such as an empty JavaScript app shell.",
    Reason.unsupported_content_type.value: "The link leads to a file that is not HTML, PDF, plain text or "
    "markdown, which we do not read.",
    Reason.unreadable_document.value: "The document could not be read (a damaged, truncated or password-locked "
    "PDF); its detail names the error.",
    Reason.unsupported_content_encoding.value: "The site sent the page compressed in a way we did not ask for "
    "and do not read (br, zstd or stacked codings).",
    Reason.too_large.value: "The page is larger than the size cap (5 MB by default), so its download was stopped "
    "and it was not read.",
    Reason.blocked_address.value: "Our SSRF policy refused to fetch this host because it is or resolves to a "
    "private, loopback, link-local or reserved address, so the page was not checked (it may be fine): to check "
    "intranet pages, pass --allow-private-hosts, set GUARDRAIL_ALLOW_PRIVATE_HOSTS=1 or "
    "Settings(allow_private_hosts=True) (cloud metadata addresses stay refused).",
    Reason.invalid_url.value: "The citation is not an http(s) URL, or it cannot be parsed.",
    Reason.evidence_quote_not_in_source.value: "The judge quoted words that are not in the page, so its verdict "
    "was not trusted.",
    Reason.judge_error.value: "The judge failed (a malformed answer, a refusal, a timeout or a rate limit) even "
    "after retrying, so the claim could not be checked.",
    Reason.internal_error.value: "A failure of our own code stopped the check (logged with its traceback), so "
    "the claim could not be checked; it is never the page's fault.",
    Reason.no_judge_configured.value: "No judge is configured, so pages were fetched but nothing could be judged.",
    Reason.no_citations.value: "The claim cites nothing, so there is nothing to check.",
    Reason.unresolved_citation.value: "The marker (such as [3]) points at no reference or source in the answer.",
    Reason.insufficient_support.value: "Too few of the text's sentences are still supported by the source it "
    "came from.",
    Reason.nothing_to_check.value: "The text has no sentence that states something checkable, so its source was "
    "not judged.",
    Reason.partially_supported.value: "The page backs some parts of the claim but not all of them; the parts it "
    "does not back are listed as missing.",
    Reason.combined_sources.value: "No single cited page backs the whole claim, but the cited pages together back "
    "every part of it.",
    Reason.unsupported_language.value: "The claim or the page is not in English, which the embedded judge cannot "
    "read (an LLM judge can).",
    Reason.archived_copy.value: "The cited page is gone, so the verdict is against the web archive's copy of it "
    "(archived copies were turned on).",
    Reason.deadline.value: "The call's time limit (GUARDRAIL_DEADLINE) ran out before this citation was checked, "
    "so it could not be checked; it is never the page's fault.",
    Reason.no_relevant_passage.value: "The page was read, but no passage in it states what the claim says.",
    Reason.conflicting_evidence.value: "The page seems to state the claim but also says otherwise in a sentence "
    "about the same subject (the quote), such as a study whose background states the claim and whose results do "
    "not bear it out.",
}
"""The one plain sentence a person reads for each reason code (``describe_reason``): used by the
CLI, the badges' tooltips, the batch HTML report and the service (``reason_text``), and the
README's reason table, which a test holds equal to it."""


def describe_reason(reason: str | None) -> str | None:
    """The one plain sentence a person reads for ``reason`` (``http_404``: the ``http_<code>``
    one, shown beside the code); None for no reason or a code of no stage of ours (a custom judge's)."""
    if reason is None:
        return None
    if status_of_reason(reason) is not None:
        return REASON_DESCRIPTIONS["http_<code>"]
    return REASON_DESCRIPTIONS.get(reason)


def judged_reason(label: Label) -> str | None:
    """The reason of a judged verdict whose judge gave none: ``no_relevant_passage`` for
    ``not_found`` (the page was read and no passage of it states the claim), else None."""
    return Reason.no_relevant_passage.value if label == Label.not_found else None


def http_reason(status: int) -> str:
    """The reason code for an origin HTTP error status, e.g. ``http_404``."""
    return f"http_{status}"


RETRYABLE_STATUSES = frozenset({408, 429, 502, 503, 504})
"""Origin statuses worth another attempt before a page reads "could not check"."""
ACCESS_DENIED_STATUSES = frozenset({401, 403, 407, 451})
"""Statuses that refuse *us* (a login, a bot wall, a proxy, a legal block): the page may be fine."""
_TRANSPORT_UNCHECKED = frozenset({Reason.fetch_timeout.value, Reason.fetch_error.value})
_POLICY_REFUSED = frozenset({Reason.blocked_address.value})
_OUR_FAILURES = frozenset({Reason.internal_error.value, Reason.judge_error.value, Reason.deadline.value})


def is_our_failure(reason: str | None) -> bool:
    """A citation left unchecked by us, not by the page: a failure of our own code
    (``internal_error``), of the judge (``judge_error``), or the call's ``deadline``. Worth checking
    again later; read ``could_not_check``."""
    return reason in _OUR_FAILURES


def is_refused_by_policy(reason: str | None) -> bool:
    """A page our own SSRF policy would not fetch (``blocked_address``: an intranet or loopback
    host): never read, so neither dead nor the page's fault; read ``could_not_check``, and the
    reason's sentence says how to allow private hosts."""
    return reason in _POLICY_REFUSED


def status_of_reason(reason: str | None) -> int | None:
    """The HTTP status in an ``http_<code>`` reason, else None."""
    if reason and reason.startswith("http_") and reason[5:].isdigit():
        return int(reason[5:])
    return None


def is_retryable_reason(reason: str | None) -> bool:
    """A page outcome worth another attempt: timeout, connection failure, 408/429/502/503/504."""
    status = status_of_reason(reason)
    return reason in _TRANSPORT_UNCHECKED or (status is not None and status in RETRYABLE_STATUSES)


def is_unchecked_reason(reason: str | None) -> bool:
    """A page that could not be checked *now* (not answering, refusing us, or our own egress
    down): retryable outcomes, any 5xx, and 401/403/407/451. Not the page's fault."""
    status = status_of_reason(reason)
    if status is not None:
        return status >= 500 or status in RETRYABLE_STATUSES or status in ACCESS_DENIED_STATUSES
    return reason in _TRANSPORT_UNCHECKED


class VerdictKind(str, Enum):
    """How a verdict reads to a person, which the policies and badges act on.

    The judged labels stand for themselves; ``unreachable`` splits into ``dead_link`` (the page is
    gone: 404, 410, no such host, an unusable URL) and ``could_not_check`` (the page did not answer
    now or refused us, or our SSRF policy refused its host: ``blocked_address``), and
    ``could_not_check`` also takes our own failures (``internal_error``, ``judge_error``,
    ``deadline``), which are labelled ``not_found`` but are never the page's fault.
    """

    supported = "supported"
    contradicted = "contradicted"
    not_found = "not_found"
    dead_link = "dead_link"
    could_not_check = "could_not_check"

    def __str__(self) -> str:
        return self.value


def verdict_kind(label: Label, reason: str | None) -> VerdictKind:
    """The :class:`VerdictKind` of a verdict with ``label`` and ``reason``."""
    if label == Label.unreachable:
        unchecked = is_unchecked_reason(reason) or is_refused_by_policy(reason)
        return VerdictKind.could_not_check if unchecked else VerdictKind.dead_link
    if label == Label.not_found and is_our_failure(reason):
        return VerdictKind.could_not_check
    return VerdictKind(label.value)


def overall_kind(overall: Label, kinds: Iterable[VerdictKind]) -> VerdictKind:
    """The :class:`VerdictKind` of a claim's ``overall`` label given its citations' kinds: an
    unreachable claim any of whose pages could not be checked, or a not_found claim whose every
    citation could not be checked, reads ``could_not_check``."""
    seen = list(kinds)
    unchecked = VerdictKind.could_not_check
    if overall == Label.unreachable:
        return unchecked if unchecked in seen else VerdictKind.dead_link
    if overall == Label.not_found and seen and all(k == unchecked for k in seen):
        return unchecked
    return verdict_kind(overall, None)


_DETAIL = (
    "For a citation we could not check (internal_error, deadline): which stage failed and how, "
    "such as 'judge my-judge answered a dict, not a list of JudgeVerdict'; for an unreadable_document, "
    "what the reader said was wrong. Never page text."
)


class FetchedPage(BaseModel):
    """What a fetcher saw at one URL, before any interpretation.

    ``reason`` is set only for transport-level outcomes the fetcher itself decided
    (timeout, blocked address, too large, unsupported content type...). Whether a
    page with text is usable evidence is decided by ``guardrail.core.interpret``.
    """

    model_config = ConfigDict(frozen=True)

    url: str = Field(description="The URL as requested.")
    final_url: str | None = Field(default=None, description="Where redirects ended.")
    original_status: int | None = Field(default=None, description="Status code of the origin.")
    text: str = Field(default="", description="Readable markdown of the page.")
    title: str | None = None
    content_type: str | None = None
    rid: str | None = Field(default=None, description="Crawlbase request id, when fetched through it.")
    reason: str | None = None
    redirects: list[str] = Field(default_factory=list, description="Each URL redirected through, in order.")
    fetcher: str = "direct"
    detail: str | None = Field(default=None, description=_DETAIL)


class PageAssessment(BaseModel):
    """The shared interpretation of a fetched page: usable evidence, or a decided verdict."""

    model_config = ConfigDict(frozen=True)

    usable: bool
    label: Label | None = None
    reason: str | None = None


class JudgeRequest(BaseModel):
    """One claim and the passages retrieved for it from one source."""

    model_config = ConfigDict(frozen=True)

    claim: str
    passages: list[str]
    title: str | None = Field(
        default=None,
        description="The title of the page (or fact) the passages come from, when known: a judge reads each "
        'passage as a reader of that page does ("It was directed by ..." on the page "Titanic" is about Titanic).',
    )
    settle_at: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="The least support confidence at which a judge that scores evidence in rounds may "
        "stop looking (a caller that wants a stricter bar than the judge's own may pass one; the grounding "
        "check does not, so that it and verify take one decision); judges that decide in one pass ignore it.",
    )


_CONTEXT = Field(
    default=None,
    description="The passage around the evidence quote (its neighbouring sentences) where that wider "
    "window is what read as support; None when the quote alone decided.",
)
_SUPPORTED_PARTS = Field(
    default=None,
    description="The atomic parts of the claim this evidence backs (None: the judge did not split the claim).",
)
_MISSING_PARTS = Field(
    default=None,
    description="The atomic parts of the claim this evidence does not back (None: the judge did not split the claim).",
)


class JudgeVerdict(BaseModel):
    """A judge's answer for one :class:`JudgeRequest`.

    ``confidence`` is the judge's probability that ``label`` is right (calibrated for the embedded
    judge). A judge that splits claims into atomic parts lists them in ``supported_parts`` and
    ``missing_parts``; a ``not_found`` verdict with some parts backed has reason ``partially_supported``.
    """

    label: JudgeLabel
    evidence_quote: str | None = None
    context: str | None = _CONTEXT
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    reason: str | None = None
    supported_parts: list[str] | None = _SUPPORTED_PARTS
    missing_parts: list[str] | None = _MISSING_PARTS
    detail: str | None = Field(default=None, description=_DETAIL)


class UrlVerdict(BaseModel):
    """The verdict for one cited URL (or given fact) against one claim."""

    url: str
    label: Label
    evidence_quote: str | None = Field(
        default=None, description="The sentence of the page the verdict rests on, copied from it."
    )
    context: str | None = _CONTEXT
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    final_url: str | None = None
    original_status: int | None = None
    rid: str | None = None
    reason: str | None = None
    supported_parts: list[str] | None = _SUPPORTED_PARTS
    missing_parts: list[str] | None = _MISSING_PARTS
    archived_url: str | None = Field(
        default=None,
        description="The archive's snapshot the verdict is against, when the cited page was gone.",
    )
    archived_at: datetime | None = Field(default=None, description="When that snapshot was taken (ISO 8601, UTC).")
    detail: str | None = Field(default=None, description=_DETAIL)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def kind(self) -> VerdictKind:
        """How the verdict reads: a judged label, ``dead_link`` or ``could_not_check``."""
        return verdict_kind(self.label, self.reason)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reason_text(self) -> str | None:
        """The reason in one plain sentence (:func:`describe_reason`), for a person to read."""
        return describe_reason(self.reason)


class SuggestedCitation(BaseModel):
    """Another source at hand that backs a claim its own citations do not: another page the answer
    cites, a source passed in, a chain's context document, a query engine's source node."""

    source: str = Field(description="The source's URL, or 'fact:<n>' for the text of sources[n].")
    marker: str | None = Field(
        default=None, description="How the answer can cite it, e.g. '[1]' (None: only by its URL)."
    )
    source_index: int | None = Field(default=None, description="Its index in the sources passed in, if any.")
    verdict: UrlVerdict = Field(description="The claim checked against it (supported).")


_SUGGESTED: list[SuggestedCitation] = Field(
    default_factory=list,
    description="Other sources at hand that back the claim, best first, when its own citations do not "
    "(only when suggestions were asked for).",
)


class ArchivedSnapshot(BaseModel):
    """An archive's closest copy of a page that is gone, as the archive stage found it."""

    model_config = ConfigDict(frozen=True)

    url: str = Field(description="The snapshot as the archive shows it to readers.")
    raw_url: str = Field(description="The page as archived, without the archive's own toolbar: what is fetched.")
    archived_at: datetime = Field(description="When the snapshot was taken (UTC).")


class RepairKind(str, Enum):
    """What a repair did to a citation: pointed a dead link at the archive's copy, or pointed a
    citation that does not back its claim at another source that does."""

    archived_copy = "archived_copy"
    repointed = "repointed"

    def __str__(self) -> str:
        return self.value


class ClaimReport(BaseModel):
    """The verdicts for one claim: one per citation, and the aggregated ``overall`` label (with
    ``reason`` ``combined_sources`` or ``partially_supported`` when the citations' parts decided it)."""

    claim: str
    overall: Label
    citations: list[UrlVerdict] = Field(default_factory=list)
    reason: str | None = Field(default=None, description="Why the overall label, where the parts decided it.")
    missing_parts: list[str] | None = Field(
        default=None, description="Parts of the claim that none of its cited pages backs (partially supported)."
    )
    suggested_citations: list[SuggestedCitation] = _SUGGESTED

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reason_text(self) -> str | None:
        """The reason in one plain sentence (:func:`describe_reason`), for a person to read."""
        return describe_reason(self.reason)


CitationKind = Literal["markdown_link", "bare_url", "autolink", "numbered", "source"]


class CitationRef(BaseModel):
    """A citation found in an answer: where it is, and what it points to."""

    kind: CitationKind
    start: int = Field(description="UTF-8 byte offset of the marker/link in the answer.")
    end: int = Field(description="UTF-8 byte offset just past the marker/link.")
    marker: str = Field(description="The citation as written, e.g. '[2]' or '(https://...)'.")
    url: str | None = Field(default=None, description="The URL it resolves to, if any.")
    source_index: int | None = Field(default=None, description="Index into the sources list, if any.")
    source_text: str | None = Field(default=None, description="Text of a source with no URL (a fact).")
    ref: str | None = Field(
        default=None, description="The reference label the citation names, e.g. '1' for '[1]' or '[1, 3]'."
    )
    link_text: str | None = Field(
        default=None,
        description="Visible text of a markdown link, kept when the link is stripped; None when the "
        "link text is itself a marker or a URL.",
    )
    inherited: bool = Field(
        default=False,
        description="True when the citation sits at the end of the paragraph and covers this "
        "sentence, which has no citation of its own.",
    )


class AnswerClaim(BaseModel):
    """One sentence of an answer, its citations and their verdicts."""

    text: str
    start: int = Field(description="UTF-8 byte offset of the sentence in the answer.")
    end: int = Field(description="UTF-8 byte offset just past the sentence.")
    grounding_check_required: bool = True
    plain_text: str = Field(
        default="",
        description="The sentence as checked: markup, markers and URLs removed, link text kept "
        "(but for links standing alone in parentheses as a citation: '([source](url))').",
    )
    citations: list[CitationRef] = Field(default_factory=list)
    verdicts: list[UrlVerdict] = Field(default_factory=list)
    overall: Label | None = Field(default=None, description="None when the claim cites nothing.")
    reason: str | None = Field(
        default=None, description="Why the overall label, where the parts decided it (combined_sources, ...)."
    )
    missing_parts: list[str] | None = Field(
        default=None, description="Parts of the claim that none of its cited pages backs (partially supported)."
    )
    suggested_citations: list[SuggestedCitation] = _SUGGESTED

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reason_text(self) -> str | None:
        """The reason in one plain sentence (:func:`describe_reason`), for a person to read."""
        return describe_reason(self.reason)


class Reference(BaseModel):
    """One entry of the answer's reference list (``[1]: url``, ``[1] Title - url``, ``1. url``...)."""

    label: str | None = Field(description="The number or footnote label, e.g. '1'; None for an unnumbered entry.")
    url: str | None = Field(default=None, description="The URL the entry names; None when it names none.")
    title: str | None = None
    start: int = Field(description="UTF-8 byte offset of the entry in the answer.")
    end: int = Field(description="UTF-8 byte offset just past the entry (its line break included).")


class SourceInfo(BaseModel):
    """How one item of the ``sources`` passed in was understood."""

    index: int
    kind: Literal["url", "text"] = Field(description="'url': fetched; 'text': checked as a fact, not fetched.")
    url: str | None = None
    title: str | None = None


class AnswerReport(BaseModel):
    """Everything the guard decided about one answer; byte offsets refer to the original answer."""

    answer: str
    claims: list[AnswerClaim] = Field(default_factory=list)
    overall: Label = Field(
        default=Label.not_found,
        description="The answer's label: supported only when every claim that cites something is; "
        "contradicted when any claim is; else the worst left (not_found, then unreachable); not_found "
        "when nothing is cited (guardrail.core.aggregate.aggregate_answer).",
    )
    support_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Supported claims / checked claims (like Vertex AI's supportScore for an answer); claims "
        "that could not be checked or cite nothing are not counted; None when no claim was checked.",
    )
    checked_claims: int = Field(default=0, ge=0, description="The claims support_score is over.")
    kind_counts: dict[str, int] = Field(
        default_factory=dict,
        description="How many claims that cite something read each kind (supported, contradicted, not_found, "
        "dead_link, could_not_check).",
    )
    label_counts: dict[str, int] = Field(default_factory=dict, description="How many citations read each label.")
    references: list[Reference] = Field(default_factory=list)
    references_start: int | None = Field(
        default=None, description="UTF-8 byte offset of the trailing reference section (heading included)."
    )
    references_end: int | None = Field(default=None, description="UTF-8 byte offset just past that section.")
    sources: list[SourceInfo] = Field(default_factory=list, description="The sources passed in, as understood.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def internal_errors(self) -> int:
        """How many verdicts rest on a failure of our own code (reason ``internal_error``)."""
        return sum(1 for c in self.claims for v in c.verdicts if v.reason == Reason.internal_error.value)


class TextReport(BaseModel):
    """Whether one source (still) supports a whole text written from it, such as a retrieved chunk:
    the text's sentences checked as claims against the source (``Verifier.averify_texts``)."""

    source: str = Field(description="The URL checked, or 'fact:<n>' for given text.")
    label: Label
    reason: str | None = None
    evidence_quote: str | None = Field(
        default=None, description="A quote behind the label: the first contradiction, else the first support."
    )
    final_url: str | None = None
    original_status: int | None = None
    sentences_checked: int = 0
    sentences_supported: int = 0
    sentences_contradicted: int = 0
    claims: list[ClaimReport] = Field(default_factory=list, description="One report per sentence checked.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reason_text(self) -> str | None:
        """The reason in one plain sentence (:func:`describe_reason`), for a person to read."""
        return describe_reason(self.reason)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def kind(self) -> VerdictKind:
        """How the verdict reads: a judged label, ``dead_link`` or ``could_not_check``."""
        return verdict_kind(self.label, self.reason)
