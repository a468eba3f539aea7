"""The one interpretation of a fetched page, shared by every fetcher. (Minimal; extended in fetch work.)"""

from __future__ import annotations

from guardrail.schema import FetchedPage, Label, PageAssessment, Reason, http_reason

_UNREACHABLE_REASONS = {
    Reason.fetch_timeout.value,
    Reason.fetch_error.value,
    Reason.blocked_address.value,
    Reason.invalid_url.value,
    Reason.too_many_redirects.value,
}


def interpret(page: FetchedPage) -> PageAssessment:
    """Decide whether ``page`` is usable evidence, or which label/reason it earns without a judge."""
    if page.reason:
        label = Label.unreachable if page.reason in _UNREACHABLE_REASONS else Label.not_found
        return PageAssessment(usable=False, label=label, reason=page.reason)
    if page.original_status is not None and page.original_status >= 400:
        return PageAssessment(usable=False, label=Label.unreachable, reason=http_reason(page.original_status))
    if not page.text.strip():
        return PageAssessment(usable=False, label=Label.not_found, reason=Reason.empty_page.value)
    return PageAssessment(usable=True)
