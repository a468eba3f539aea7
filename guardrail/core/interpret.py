"""The one interpretation of a fetched page, shared by every fetcher.

A fetcher reports what it saw (:class:`~guardrail.core.schema.FetchedPage`); this module
decides whether that is evidence worth judging, or a verdict already:

=========================================================  ==============  ==========================
what was fetched                                           label           reason
=========================================================  ==============  ==========================
timeout                                                    unreachable     fetch_timeout
refused connection, temporary DNS failure, TLS/protocol    unreachable     fetch_error
no such host (DNS)                                         unreachable     host_not_found
SSRF-refused host / not an http(s) URL / redirect loop     unreachable     blocked_address /
                                                                           invalid_url /
                                                                           too_many_redirects
origin status 4xx/5xx (or any non-2xx final status)        unreachable     http_<code>
body over the size cap / not HTML, PDF, text, markdown     not_found       too_large /
                                                                           unsupported_content_type
a PDF that cannot be read (damaged, password)              not_found       unreadable_document
deep link redirected to the site's home page               not_found       redirected_to_homepage
no readable text, or a "please enable JavaScript" shell    not_found       empty_page
short bot-check page (captcha, "verify you are human")     not_found       bot_challenge
short "page not found" template served with status 200     not_found       soft_404
a failure of our own code while fetching or converting    not_found       internal_error
the call's deadline passed before the fetch ended          not_found       deadline
anything else                                              usable (sent to the judge)
=========================================================  ==============  ==========================

Whether an ``unreachable`` page is gone (a dead link) or could not be checked (now, or at all under
our SSRF policy: ``blocked_address``) is read off its reason by
:func:`guardrail.core.schema.verdict_kind`.

"Short" means both few non-whitespace characters of readable text (under 800 for a soft
404, 1500 for a bot wall) and few full sentences (at most five of eight words or more):
templates say one or two things, so an article that merely discusses 404 errors or
captchas is judged normally even when it is brief. Both fetchers produce markdown, so the
same rules hold for a page read directly and one read through Crawlbase.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from guardrail.core.extract.sentences import split_sentences
from guardrail.core.schema import FetchedPage, Label, PageAssessment, Reason, http_reason

SOFT_404_MAX_CHARS = 800
"""A page saying "not found" with fewer non-whitespace characters than this is a soft 404."""
BOT_CHALLENGE_MAX_CHARS = 1500
"""Bot walls are short; a longer page that mentions captchas is an article about them."""
APP_SHELL_MAX_CHARS = 300
"""A page this short whose text only asks for JavaScript is an unrendered app shell."""
TEMPLATE_MAX_SENTENCES = 5
"""Error templates and bot walls say one or two things; a short page with more full
sentences than this (of at least eight words) is an article, however short, and is judged."""

_UNREACHABLE_REASONS = frozenset(
    {
        Reason.fetch_timeout.value,
        Reason.fetch_error.value,
        Reason.host_not_found.value,
        Reason.blocked_address.value,
        Reason.invalid_url.value,
        Reason.too_many_redirects.value,
    }
)

_Q = "['\u2019]?"  # straight or curly apostrophe, or none ("doesnt")

_BOT_CHALLENGE = re.compile(
    rf"verify (?:that )?you(?: are|{_Q}re) (?:a )?human|are you (?:a )?(?:human|robot)|i{_Q}m not a robot"
    r"|checking (?:if the site connection is secure|your browser)|just a moment\.\.\."
    r"|\b(?:re)?captcha\b|attention required!? ?\|? ?cloudflare|ddos protection by|cf-browser-verification"
    r"|please (?:complete|solve) the (?:security check|challenge)|unusual traffic from your"
    r"|press (?:&|and) hold|enable javascript and cookies to continue|access to this page has been denied"
    r"|pardon our interruption|request unsuccessful\. incapsula|performing security verification",
    re.IGNORECASE,
)

_SOFT_404_TEXT = re.compile(
    r"\b(?:error|err|http)\s*404\b|\b404\b[^.\n]{0,40}?\b(?:not found|error|page)\b|\bpage\b[^.\n]{0,20}?\b404\b"
    r"|\b(?:page|file|article|document|resource|content|post|story|url|link)s?\b[^.\n]{0,60}?"
    rf"\b(?:(?:(?:could|was|were|is|are)(?:n{_Q}t| ?not)|can(?:{_Q}t| ?not))(?: be)? (?:found|located)|not found"
    rf"|(?:no longer|does ?n{_Q}o?t|did ?n{_Q}o?t) exist|(?:is|are|was|has been|have been) (?:removed|deleted|moved)"
    r"|no longer available)"
    rf"|\bpage (?:you|you{_Q}re) (?:are |were )?(?:looking|searching) for\b"
    rf"|\bwe (?:could(?:n{_Q}t| not)|can(?:{_Q}t| ?not)) find (?:th(?:e|is|at)|your) (?:page|file|article|content)\b",
    re.IGNORECASE,
)
_SOFT_404_TITLE = re.compile(
    rf"\b404\b|not found|page (?:does ?n{_Q}o?t|did ?n{_Q}o?t) exist|page (?:is )?(?:missing|unavailable)",
    re.IGNORECASE,
)

_APP_SHELL = re.compile(
    r"enable javascript|javascript (?:is )?(?:required|disabled)|requires javascript"
    r"|turn on javascript|javascript must be enabled|^\W*loading\W*$|^\W*please wait\W*$",
    re.IGNORECASE,
)

_WORD = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")

_HOME_PATHS = re.compile(
    r"^/?(?:(?P<lang>[a-z]{2})(?:[-_](?:[a-z]{2}|[0-9]{3}))?/)?(?:index\.(?:html?|php|aspx?|jsp)|default\.aspx?|home/?)?$",
    re.IGNORECASE,
)
"""A site's root, an index or home page, or a locale root (``/en/``, ``/en-us/``, ``/pt_BR/``,
``/es-419/``: a language code and a slash; ``/go`` or ``/id`` is a page like any other)."""
_ISO_639_1 = (
    "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz "
    "ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik "
    "io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml "
    "mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd "
    "se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi "
    "vo wa wo xh yi yo za zh zu"
)
LANGUAGE_CODES = frozenset(_ISO_639_1.split())
"""The ISO 639-1 language codes: the first part of a locale root."""


def interpret(page: FetchedPage) -> PageAssessment:
    """Decide whether ``page`` is usable evidence, or which label/reason it earns without a judge."""
    if page.reason:
        if page.reason in _UNREACHABLE_REASONS or page.reason.startswith("http_"):
            return _decided(Label.unreachable, page.reason)
        return _decided(Label.not_found, page.reason)
    status = page.original_status
    if status is not None and not 200 <= status < 300:
        return _decided(Label.unreachable, http_reason(status))
    if _redirected_to_homepage(page):
        return _decided(Label.not_found, Reason.redirected_to_homepage.value)

    text = page.text or ""
    size = non_whitespace_chars(text)
    title = page.title or ""
    if size == 0:
        return _decided(Label.not_found, Reason.empty_page.value)
    if size >= max(BOT_CHALLENGE_MAX_CHARS, SOFT_404_MAX_CHARS) or prose_sentences(text) > TEMPLATE_MAX_SENTENCES:
        return PageAssessment(usable=True)
    if size < BOT_CHALLENGE_MAX_CHARS and (_BOT_CHALLENGE.search(text) or _BOT_CHALLENGE.search(title)):
        return _decided(Label.not_found, Reason.bot_challenge.value)
    if size < APP_SHELL_MAX_CHARS and _APP_SHELL.search(text.strip()):
        return _decided(Label.not_found, Reason.empty_page.value)
    if size < SOFT_404_MAX_CHARS and (_SOFT_404_TEXT.search(text) or _SOFT_404_TITLE.search(title)):
        return _decided(Label.not_found, Reason.soft_404.value)
    return PageAssessment(usable=True)


def non_whitespace_chars(text: str) -> int:
    """How many characters of ``text`` are not whitespace (the size measure used for thin pages)."""
    return sum(1 for ch in text if not ch.isspace())


def prose_sentences(text: str) -> int:
    """How many sentences of ``text`` have at least eight words (links and list items rarely do).

    Sentences as :func:`guardrail.core.extract.split_sentences` splits them ("Dr." or "e.g." does
    not end one).
    """
    return sum(1 for sentence in split_sentences(text) if len(_WORD.findall(sentence)) >= 8)


def _redirected_to_homepage(page: FetchedPage) -> bool:
    """A deep link that ended on a site's root (or an index/home/locale root) after redirects."""
    if not page.final_url or page.final_url == page.url:
        return False
    requested = urlsplit(page.url)
    final = urlsplit(page.final_url)
    if _is_home(requested.path) and not requested.query:
        return False  # the citation pointed at a home page to begin with
    return _is_home(final.path)


def _is_home(path: str) -> bool:
    match = _HOME_PATHS.match(path or "/")
    return match is not None and (match.group("lang") is None or match.group("lang").lower() in LANGUAGE_CODES)


def _decided(label: Label, reason: str) -> PageAssessment:
    return PageAssessment(usable=False, label=label, reason=reason)
