"""Test doubles for apps built on the guardrail, as httpx ships ``MockTransport``.

Each stands in for one stage of a :class:`~guardrail.Verifier` the way a user swaps one (they
satisfy the public protocols :class:`~guardrail.fetch.base.Fetcher`, :class:`~guardrail.Judge`
and :class:`~guardrail.Embedder`), so a unit test of your app needs no network, no model and no
API key:

* :class:`StaticFetcher` - cited pages from a dict (URL -> HTML, text, a :class:`Route` with a
  status and content type, or a ready :class:`~guardrail.FetchedPage`), turned into pages as the
  real fetcher turns responses (404 reads as a dead link, 503 as could-not-check, redirects are
  followed within the dict).
* :class:`ScriptedJudge` - verdicts from rules (:class:`JudgeRule`: claim and evidence text ->
  label, quote, confidence), from a callable, or one fixed verdict.
* :class:`OverlapJudge` - a judge that decides by word and number overlap: close enough to a
  real one to test an app end to end.
* :class:`HashEmbedder` - deterministic bag-of-words vectors from a hash: stable across runs and
  machines, no model.
* :class:`LoopbackSite` - a real HTTP server on 127.0.0.1 serving a dict of pages, counting hits
  per path; a context manager (``with`` and ``async with``). Use it to test the real fetcher:
  ``build_verifier(Settings(allow_private_hosts=True), ...)`` lets it reach 127.0.0.1.
* :class:`WaybackSite` - a loopback Wayback Machine (the availability API and its snapshots) for
  apps that look dead links up in the archive (``Settings(archive="wayback", wayback_url=...)``).

Nothing here patches the library, imports a test framework, or loads a model.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urljoin, urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

from guardrail.core.schema import FetchedPage, JudgeLabel, JudgeRequest, JudgeVerdict

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "HashEmbedder",
    "JudgeRule",
    "LoopbackSite",
    "OverlapJudge",
    "Route",
    "ScriptedJudge",
    "StaticFetcher",
    "WaybackSite",
]

Handler = Callable[[BaseHTTPRequestHandler], None]
"""A route that writes its own response (status, headers, body) to the request handler."""


# -- pages ---------------------------------------------------------------------------------------


@dataclass
class Route:
    """One page: what a server answers for it (status, body, content type, extra headers), after
    ``delay`` seconds; or a ``handler`` that writes the response itself. A 3xx route redirects to
    its ``Location`` header (:meth:`redirect`)."""

    status: int = 200
    body: bytes | str = b""
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    handler: Handler | None = None

    @classmethod
    def redirect(cls, location: str, status: int = 302) -> Route:
        """A redirect to ``location`` (absolute, or relative to the page)."""
        return cls(status=status, body="", headers={"Location": location})

    @property
    def body_bytes(self) -> bytes:
        """The body as sent (a ``str`` body is UTF-8)."""
        return self.body.encode() if isinstance(self.body, str) else self.body


Page = Route | str | bytes
"""A page as the doubles take it: a :class:`Route`, or just its HTML body (status 200)."""


def as_route(page: Page) -> Route:
    """``page`` as a :class:`Route` (a bare body is an HTML page answering 200)."""
    if isinstance(page, Route):
        return page
    if isinstance(page, (str, bytes)):
        return Route(body=page)
    raise TypeError(f"a page is a Route, str or bytes, not {type(page).__name__}")


# -- the static fetcher ----------------------------------------------------------------------------

_MAX_REDIRECTS = 10


class StaticFetcher:
    """A :class:`~guardrail.fetch.base.Fetcher` serving ``pages`` (URL -> page) without a network.

    A page is a :class:`Route` (status, body, content type; a 3xx with a ``Location`` redirects,
    followed within ``pages``), a bare HTML body (``str``/``bytes``, status 200), or a ready
    :class:`~guardrail.FetchedPage`, returned as given (to script a transport failure:
    ``FetchedPage(url=u, reason="timeout")``). Bodies are converted to text as the real fetcher
    converts them (HTML to markdown, PDF, plain text), so a 2xx page reads as evidence, a
    404/410 as a dead link, a 401/403/429/5xx as could-not-check. A URL not in ``pages`` answers
    404. ``calls`` lists the URLs of each ``fetch_all`` call; ``hits`` counts fetches per URL.
    """

    name = "static"

    def __init__(self, pages: Mapping[str, Page | FetchedPage]) -> None:
        self.pages: dict[str, Page | FetchedPage] = dict(pages)
        self.calls: list[list[str]] = []
        self.hits: dict[str, int] = {}

    def cache_options(self) -> dict[str, object]:
        """No options change what a URL gives."""
        return {}

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, FetchedPage]:
        """One page per unique URL of ``urls`` (never raises for a page)."""
        self.calls.append(list(urls))
        await asyncio.sleep(0)  # a real fetch yields to the loop
        return {url: self._fetch(url) for url in dict.fromkeys(urls)}

    def _fetch(self, url: str) -> FetchedPage:
        redirects: list[str] = []
        current = url
        while True:
            self.hits[current] = self.hits.get(current, 0) + 1
            page = self.pages.get(current)
            if isinstance(page, FetchedPage):
                return page
            route = as_route(page) if page is not None else Route(status=404, body="<h1>Not Found</h1>")
            location = route.headers.get("Location") if 300 <= route.status < 400 else None
            if location is None:
                return self._page(url, current, route, redirects)
            if len(redirects) >= _MAX_REDIRECTS:
                return FetchedPage(
                    url=url, final_url=current, reason="too_many_redirects", redirects=redirects, fetcher=self.name
                )
            redirects.append(current)
            current = urljoin(current, location)

    def _page(self, url: str, final_url: str, route: Route, redirects: list[str]) -> FetchedPage:
        from guardrail.fetch.convert import convert, media_type  # lxml and pypdf: loaded when a page is

        page = FetchedPage(
            url=url,
            final_url=final_url,
            original_status=route.status,
            content_type=media_type(route.content_type) or None,
            redirects=redirects,
            fetcher=self.name,
        )
        if not 200 <= route.status < 300:
            return page  # the status decides (guardrail.core.interpret), as for the real fetcher
        converted = convert(route.body_bytes, route.content_type, final_url)
        return page.model_copy(
            update={
                "text": converted.text,
                "title": converted.title,
                "content_type": converted.content_type or page.content_type,
                "reason": converted.reason,
            }
        )


# -- judges ----------------------------------------------------------------------------------------


class JudgeRule(BaseModel):
    """One rule of a :class:`ScriptedJudge`: a request whose claim contains ``claim`` (any claim
    when None) and one of whose passages contains ``evidence`` (any passages when None) is
    answered ``label`` with ``confidence``, quoting ``evidence`` (matching ignores case; the
    quote is the passage's own text). ``supported``/``contradicted`` need ``evidence``: a judge
    must quote the passage behind such a verdict."""

    model_config = ConfigDict(frozen=True)

    label: JudgeLabel
    claim: str | None = None
    evidence: str | None = None
    confidence: float = Field(default=0.9, ge=0.0, le=1.0)
    reason: str | None = None

    @model_validator(mode="after")
    def _quotes_its_evidence(self) -> JudgeRule:
        if self.label != "not_found" and not self.evidence:
            raise ValueError(f"a {self.label} rule needs the evidence text it quotes (evidence=...)")
        return self

    def verdict(self, request: JudgeRequest) -> JudgeVerdict | None:
        """The verdict for ``request`` when the rule applies to it, else None."""
        if self.claim is not None and self.claim.lower() not in request.claim.lower():
            return None
        quote = None
        if self.evidence is not None:
            quote = _find(self.evidence, request.passages)
            if quote is None:
                return None
        return JudgeVerdict(
            label=self.label,
            evidence_quote=quote if self.label != "not_found" else None,
            confidence=self.confidence,
            reason=self.reason,
        )


def _find(needle: str, passages: Sequence[str]) -> str | None:
    """``needle`` as the first passage containing it writes it (case ignored), else None."""
    pattern = re.compile(re.escape(needle), re.IGNORECASE)
    for passage in passages:
        match = pattern.search(passage)
        if match is not None:
            return match.group(0)
    return None


Script = Sequence[JudgeRule] | Callable[[JudgeRequest], JudgeVerdict] | JudgeVerdict


class ScriptedJudge:
    """A :class:`~guardrail.Judge` answering as scripted: ``script`` is a list of
    :class:`JudgeRule` (the first that applies answers; ``not_found`` with confidence 0 when none
    does), a callable ``JudgeRequest -> JudgeVerdict``, or one :class:`~guardrail.JudgeVerdict`
    answered to every request. ``calls`` keeps the requests of each call.

    The verifier checks a quote against the page as it does a real judge's: a rule's evidence
    must be in the passage retrieved for the claim, or the verdict reads ``not_found``
    (``evidence_quote_not_in_source``).
    """

    name = "scripted"
    model = "scripted-test-judge"
    cpu_bound = False

    def __init__(self, script: Script) -> None:
        if isinstance(script, JudgeVerdict):
            verdict = script
            self._answer: Callable[[JudgeRequest], JudgeVerdict] = lambda _request: verdict
        elif callable(script):
            self._answer = script
        else:
            rules = [r if isinstance(r, JudgeRule) else JudgeRule.model_validate(r) for r in script]
            self._answer = lambda request: _first_rule(rules, request)
        self.calls: list[list[JudgeRequest]] = []

    def load(self) -> None:
        """Nothing to load."""

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """One scripted verdict per request, in order."""
        self.calls.append(list(requests))
        return [self._answer(request) for request in requests]


def _first_rule(rules: Sequence[JudgeRule], request: JudgeRequest) -> JudgeVerdict:
    for rule in rules:
        verdict = rule.verdict(request)
        if verdict is not None:
            return verdict
    return JudgeVerdict(label="not_found", confidence=0.0)


_WORD = re.compile(r"[A-Za-z]+|\d+(?:\.\d+)?")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_FENCED = re.compile(r"<(claim|passage id=\d+)>\n(.*?)\n</(?:claim|passage)>", re.S)
_STOP = frozenset({"the", "a", "an", "at", "of", "in", "is", "and", "to", "it", "by", "was", "on", "as", "for"})


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - _STOP


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


class OverlapJudge:
    """A :class:`~guardrail.Judge` deciding by overlap: ``supported`` when one passage sentence
    holds at least ``threshold`` of the claim's words and all its numbers, ``contradicted`` when
    it holds the words but other numbers, else ``not_found``. The quote is that sentence,
    verbatim; the confidence is the share of words found. ``calls`` keeps the requests of each
    call."""

    name = "overlap"
    model = "overlap-test-judge"
    cpu_bound = False

    def __init__(self, threshold: float = 0.6) -> None:
        self.threshold = threshold
        self.calls: list[list[JudgeRequest]] = []

    def load(self) -> None:
        """Nothing to load."""

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """One verdict per request, in order."""
        self.calls.append(list(requests))
        return [self.decide(r) for r in requests]

    def decide(self, request: JudgeRequest) -> JudgeVerdict:
        """The verdict for one request (what :meth:`judge` answers for it)."""
        claim_numbers = set(_NUMBER.findall(request.claim))
        claim_words = _words(request.claim) - claim_numbers
        best, best_score = None, 0.0
        for passage in request.passages:
            for sentence in _sentences(passage):
                score = len(claim_words & _words(sentence)) / max(1, len(claim_words))
                if score > best_score:
                    best, best_score = sentence, score
        if best is None or best_score < self.threshold:
            return JudgeVerdict(label="not_found", confidence=1 - best_score)
        if claim_numbers and not claim_numbers <= set(_NUMBER.findall(best)):
            return JudgeVerdict(label="contradicted", evidence_quote=best, confidence=best_score)
        return JudgeVerdict(label="supported", evidence_quote=best, confidence=best_score)

    def answer(self, prompt: str) -> str:
        """What a chat model judging like this judge answers to the built-in judges' prompt
        (:mod:`guardrail.judges.prompt`: the claim and passages fenced in ``<claim>`` and
        ``<passage id=N>`` tags), as the JSON they ask for: the script of a fake chat model behind
        a :class:`~guardrail.PromptedJudge` or an integration's LLM judge."""
        fenced = _FENCED.findall(prompt)
        claims = [text for tag, text in fenced if tag == "claim"]
        if not claims:
            return "I see no claim to judge."
        passages = [text for tag, text in fenced if tag != "claim"]
        verdict = self.decide(JudgeRequest(claim=claims[-1], passages=passages))
        quote, confidence = verdict.evidence_quote or "", round(verdict.confidence, 3)
        return json.dumps({"label": verdict.label, "evidence_quote": quote, "confidence": confidence})


# -- the embedder ----------------------------------------------------------------------------------


class HashEmbedder:
    """An :class:`~guardrail.Embedder` of bag-of-words vectors: each word (case ignored, a few
    stop words left out) adds 1 to the dimension its MD5 hash picks, and rows are L2-normalised.
    The same text gives the same vector on every run and machine; texts sharing words rank
    close, which is what passage retrieval needs. ``batches`` records each call's size."""

    name = "hash-embedder"

    def __init__(self, dims: int = 512) -> None:
        if dims < 1:
            raise ValueError(f"dims must be at least 1, not {dims}")
        self.dims = dims
        self.batches: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit row per text (a text without words is a zero row)."""
        import numpy as np

        self.batches.append(len(texts))
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _words(text):
                digest = hashlib.md5(word.encode(), usedforsecurity=False).hexdigest()
                out[row, int(digest, 16) % self.dims] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        result: np.ndarray = out / norms
        return result


# -- the loopback site -----------------------------------------------------------------------------


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that hangs up early (the fetcher does not read 4xx bodies) is not an error.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


_NOT_FOUND = Route(status=404, body="<html><body><h1>Not Found</h1></body></html>")


class LoopbackSite:
    """A real HTTP/1.1 server on an ephemeral port of ``host`` (127.0.0.1) serving ``routes``
    (path -> :class:`Route` or HTML body); any other path answers 404.

    ``with LoopbackSite(pages) as site:`` (or ``async with``) starts it and stops it;
    ``site.url("/path")`` is the absolute URL of a page. ``hits`` counts requests per path
    (thread-safe), :meth:`counting` the requests made inside a block, and :meth:`wait_for_hits`
    waits until a path has been requested. ``routes`` may be changed while it serves.
    """

    def __init__(self, routes: Mapping[str, Page] | None = None, host: str = "127.0.0.1") -> None:
        self.routes: dict[str, Page] = dict(routes or {})
        self.hits: dict[str, int] = {}
        self._hit = threading.Condition()
        site = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # quiet test output
                return

            def do_HEAD(self) -> None:
                self.do_GET()

            def do_GET(self) -> None:
                site._serve(self)

        self._httpd = _QuietServer((host, 0), _Handler)
        self.host = host
        self.port: int = self._httpd.server_address[1]
        # A short poll interval: stopping the server takes milliseconds, not half a second.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base(self) -> str:
        """``http://host:port``, the site's origin."""
        return f"http://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        """The absolute URL of ``path``."""
        return self.base + path

    def start(self) -> LoopbackSite:
        """Start serving (in a daemon thread); returns the site."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the port."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> LoopbackSite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> LoopbackSite:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)  # shutdown() waits for the serving thread

    @contextlib.contextmanager
    def counting(self) -> Iterator[dict[str, int]]:
        """The requests per path made inside the block (filled in when it ends)."""
        before = dict(self.hits)
        delta: dict[str, int] = {}
        yield delta
        for path, n in dict(self.hits).items():
            if n - before.get(path, 0):
                delta[path] = n - before.get(path, 0)

    def wait_for_hits(self, path: str, count: int = 1, timeout: float = 10.0) -> bool:
        """Wait until ``path`` has been requested ``count`` times in all; False if ``timeout``
        seconds pass first."""
        with self._hit:
            return self._hit.wait_for(lambda: self.hits.get(path, 0) >= count, timeout)

    def _serve(self, request: BaseHTTPRequestHandler) -> None:
        path = urlsplit(request.path).path
        with self._hit:
            self.hits[path] = self.hits.get(path, 0) + 1
            self._hit.notify_all()
        page = self.routes.get(path)
        route = _NOT_FOUND if page is None else as_route(page)
        if route.delay:
            time.sleep(route.delay)
        if route.handler is not None:
            route.handler(request)
            return
        body = route.body_bytes
        request.send_response(route.status)
        request.send_header("Content-Type", route.content_type)
        request.send_header("Content-Length", str(len(body)))
        for name, value in route.headers.items():
            request.send_header(name, value)
        request.end_headers()
        if request.command != "HEAD":
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                request.wfile.write(body)


# -- a loopback Wayback Machine --------------------------------------------------------------------

WAYBACK_TIMESTAMP = "20130919044612"
"""The timestamp :meth:`WaybackSite.archive` gives a snapshot unless told."""
WAYBACK_AVAILABLE = "/wayback/available"
"""The path of the availability API."""


class WaybackSite(LoopbackSite):
    """The Wayback Machine's availability API and its snapshots on 127.0.0.1: point the guardrail
    at it with ``Settings(archive="wayback", wayback_url=site.base)``.

    ``GET /wayback/available?url=URL&timestamp=T`` answers the documented JSON naming the
    snapshot of URL given to :meth:`archive`, or ``{"archived_snapshots": {}}`` when there is
    none (as archive.org does); with ``status`` set to another code (503) it answers that status, with
    a well-formed body all the same.
    ``hold = True`` keeps every lookup waiting until the site stops (an archive that does not
    answer in time). Snapshots are served at ``/web/<timestamp>id_/<URL>``, the raw form the
    archive stage fetches. ``asked`` lists the ``(url, timestamp)`` of every lookup.
    """

    def __init__(self) -> None:
        super().__init__({WAYBACK_AVAILABLE: Route(handler=self._available)})
        self.snapshots: dict[str, str] = {}  # archived URL -> timestamp
        self.asked: list[tuple[str, str]] = []
        self.status = 200
        self.hold = False
        self._released = threading.Event()

    def archive(self, url: str, page: Page, timestamp: str = WAYBACK_TIMESTAMP) -> str:
        """Hold a snapshot of ``url`` (its page as archived) taken at ``timestamp``; returns the raw
        URL it is served at."""
        self.snapshots[url] = timestamp
        path = f"/web/{timestamp}id_/{url}"
        self.routes[path] = page
        return self.url(path)

    def snapshot_url(self, url: str) -> str:
        """The snapshot of ``url`` as the API names it (the reader's form, with the toolbar)."""
        return self.url(f"/web/{self.snapshots[url]}/{url}")

    @property
    def lookups(self) -> int:
        """How many availability requests reached the site."""
        return self.hits.get(WAYBACK_AVAILABLE, 0)

    def snapshot_hits(self) -> int:
        """How many snapshot requests reached the site."""
        return sum(n for path, n in dict(self.hits).items() if path.startswith("/web/"))

    def stop(self) -> None:
        """Release held lookups, then stop serving."""
        self._released.set()
        super().stop()

    def _available(self, handler: BaseHTTPRequestHandler) -> None:
        query = parse_qs(urlsplit(handler.path).query)
        url, timestamp = query.get("url", [""])[0], query.get("timestamp", [""])[0]
        self.asked.append((url, timestamp))
        if self.hold:
            self._released.wait()  # until the site stops: the client gives up first
            return
        closest = {}
        if url in self.snapshots:
            snapshot = {"available": True, "url": self.snapshot_url(url), "timestamp": self.snapshots[url]}
            closest = {"closest": {**snapshot, "status": "200"}}
        # An error status comes with a well-formed answer all the same (as a proxy's stale copy
        # might): the status alone must make it no answer.
        body = json.dumps({"url": url, "archived_snapshots": closest}).encode()
        handler.send_response(self.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
