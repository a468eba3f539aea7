"""CrawlbaseFetcher: fetch cited pages through the Crawlbase Crawling API, as markdown.

Spoken over httpx rather than the ``crawlbase`` SDK (which is synchronous and drops the
``rid`` header). One page costs one to five API calls:

1. ``GET {CRAWLBASE_API_URL}?token=T&url=U&format=md&md_readability=true&store=true``;
   ``original_status``, ``cb_status`` (older API: ``pc_status``), the final ``url`` and
   the ``rid`` of the stored copy come back as response headers, the markdown as the body.
2. A page with fewer than 200 non-whitespace characters is fetched again without
   ``md_readability`` (the readability pass sometimes drops a short page's text).
3. HTTP 520, ``cb_status`` 207, or a page still that thin is fetched with
   ``CRAWLBASE_JS_TOKEN`` (a real browser) when one is set, the same two ways.
4. The API's 429, 500, 502, 503, 504, 522 and 599, the target's 408/429/502/503/504,
   timeouts and dropped connections are retried under the shared
   :class:`~guardrail.retry.RetryPolicy` (exponential backoff with jitter, ``Retry-After``
   honoured, a time budget); 404, 410 and 422 never are.

**Configuration errors surface.** A rejected token (HTTP 401/403 from the API itself),
an account out of credits (402) or the API's "invalid token" answer raise
:class:`~guardrail.settings.ConfigurationError` naming ``CRAWLBASE_TOKEN`` or
``CRAWLBASE_JS_TOKEN``, out of :meth:`CrawlbaseFetcher.fetch_all` too: every page of the
call would fail the same way, and reporting that as N unreachable citations would hide it.
Every other failure is per page, a ``FetchedPage`` with ``reason`` set.

**Secrets.** The token travels in the query string, so it is kept as a ``SecretStr`` and
added to the URL only by the transport, after httpx has built and logged the URL without it:
it is never in a log line (with no filter on anyone's logger), exception message, repr or
``FetchedPage`` (only ``rid`` is kept, never the storage URL), and exceptions from httpx are
re-raised scrubbed and without their chain.

**SSRF.** Crawlbase fetches from its own network, so our private addresses are out of its
reach; name resolution for the target happens on Crawlbase's side and is not repeated
here. What can be decided without DNS still is, before anything is sent: non-http(s)
schemes and malformed URLs (``invalid_url``), IP literals in any spelling that are
private, loopback, metadata... and ``localhost``/metadata host names (``blocked_address``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote

import httpx
from pydantic import SecretStr

from guardrail.core.interpret import non_whitespace_chars
from guardrail.core.schema import FetchedPage, Reason, http_reason, is_retryable_reason
from guardrail.fetch._http import ACCEPT_ENCODING, DEFAULT_USER_AGENT, BodyTooLarge, UnsupportedEncoding, read_capped
from guardrail.fetch.convert import HTML_TYPES, convert, decode_body, markdown_title, media_type
from guardrail.fetch.politeness import HostLimiter, HostLimits
from guardrail.fetch.ssrf import SsrfPolicy, UrlRefused
from guardrail.retry import RetryPolicy, Transient, parse_retry_after, retry_call
from guardrail.settings import DEFAULT_MAX_BYTES, ConfigurationError, Settings

log = logging.getLogger("guardrail.fetch.crawlbase")

DEFAULT_API_URL = "https://api.crawlbase.com/"
THIN_PAGE_CHARS = 200
"""Fewer non-whitespace characters than this and the page is fetched again another way."""
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 522, 599})
ACCOUNT_STATUSES = frozenset({401, 402, 403})
JS_STATUSES = frozenset({520})
JS_CB_STATUSES = frozenset({207})
_DEFAULT_TIMEOUT = 90.0  # Crawlbase's own advice: JS-token crawls can take over a minute

_TOKEN_PARAM = re.compile(r"(?i)((?:^|[?&;\s])(?:token|api_key|apikey)=)[^&\s\"'#]+")
_INVALID_TOKEN = re.compile(r"(?i)\b(?:invalid|wrong|unknown|missing|expired)\b[\w ]{0,20}\btoken\b")


class CrawlbaseError(RuntimeError):
    """The Crawlbase API could not be used; the message never contains a token."""


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets`` and every ``token=`` query value masked."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return _TOKEN_PARAM.sub(r"\1***", text)


_TOKEN_EXTENSION = "guardrail.crawlbase_token"
"""The request extension naming which token a request carries (never the token itself)."""


class _TokenTransport(httpx.AsyncBaseTransport):
    """Adds the token a request names (``extensions[_TOKEN_EXTENSION]``) to its URL on the way out.

    httpx builds, logs ("HTTP Request: GET <url>") and reports the URL without it; only the copy
    handed to the network carries it. So the token never reaches a log line, whatever the host
    application's logging, with no filter installed on anyone's logger. Proxies and CA bundles
    from the environment are honoured, as a default client would.
    """

    def __init__(self, tokens: Mapping[str, SecretStr], api_url: str) -> None:
        self._tokens = dict(tokens)
        self._inner = httpx.AsyncHTTPTransport(trust_env=True, proxy=_environment_proxy(api_url))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        which = request.extensions.get(_TOKEN_EXTENSION)
        if which is None:
            return await self._inner.handle_async_request(request)
        extensions = {k: v for k, v in request.extensions.items() if k != _TOKEN_EXTENSION}
        url = request.url.copy_merge_params({"token": self._tokens[which].get_secret_value()})
        outgoing = httpx.Request(
            request.method, url, headers=request.headers, stream=request.stream, extensions=extensions
        )
        return await self._inner.handle_async_request(outgoing)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``)."""
    parsed = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass(parsed.hostname or ""):
        return None
    return urllib.request.getproxies().get(parsed.scheme)


@dataclass(frozen=True)
class _Answer:
    """One Crawling API answer, reduced to what decides the page."""

    api_status: int
    original_status: int | None = None
    cb_status: int | None = None
    final_url: str | None = None
    rid: str | None = None
    text: str = ""
    reason: str | None = None
    retry_after: float | None = None

    @property
    def ok(self) -> bool:
        status = self.original_status
        return self.reason is None and (status is None or 200 <= status < 300)

    @property
    def thin(self) -> bool:
        return self.ok and non_whitespace_chars(self.text) < THIN_PAGE_CHARS


def _transient_answer(answer: _Answer | None, error: BaseException | None) -> Transient | None:
    """Whether a Crawling API outcome is worth another call: the API's or the target's
    429/5xx, a timeout, a dropped or refused connection."""
    if error is not None:
        transient = (httpx.TimeoutException, httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError)
        return Transient(type(error).__name__) if isinstance(error, transient) else None
    if answer is None:
        return None
    if answer.api_status in RETRY_STATUSES:
        return Transient(f"API status {answer.api_status}", answer.retry_after)
    if answer.original_status is not None and is_retryable_reason(http_reason(answer.original_status)):
        return Transient(f"origin status {answer.original_status}", answer.retry_after)
    return None


def _int_header(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


def _host_of(url: str) -> str:
    """The host name a politeness slot is kept for ("" for a URL too broken to name one: the
    SSRF check refuses it right after)."""
    try:
        return urllib.parse.urlsplit(url).hostname or ""
    except ValueError:
        return ""


class CrawlbaseFetcher:
    """Fetches pages through the Crawlbase Crawling API (chosen when ``CRAWLBASE_TOKEN`` is set).

    Args:
        token: the normal token (never logged or shown; a ``SecretStr`` is kept as one).
        js_token: the JavaScript token, used for pages that need a browser.
        api_url: the Crawling API endpoint (point it at a local server in tests).
        timeout: seconds per API call (default 90 s, as Crawlbase advises).
        max_bytes: cap on the markdown read back.
        concurrency: API calls at once.
        max_retries: tries again after a 429, a 5xx or a timeout.
        retry_base_delay: seconds of the first backoff, doubled each try.
        retry_max_delay: seconds the backoff never exceeds.
        retry: a whole :class:`guardrail.retry.RetryPolicy`, instead of the three above.
        page_budget: seconds one page may take in all, its API calls and retries together (default
            twice ``timeout``; from the settings, cut to fit inside ``GUARDRAIL_DEADLINE``), after
            which it reads ``fetch_timeout``.
        allow_private_hosts: skip the no-DNS SSRF check of the cited URL.
        policy: a ready :class:`~guardrail.fetch.ssrf.SsrfPolicy` for that check.
        user_agent: the ``User-Agent`` header sent to the API.
        host_limits: pages of one cited host crawled at once and per second
            (:mod:`guardrail.fetch.politeness`), so the API does not hammer a site on our behalf.

    Raises ``ConfigurationError`` for an empty token or a non-http(s) ``api_url``, ``ValueError``
    for a non-positive timeout, cap or concurrency.
    """

    name = "crawlbase"

    def __init__(
        self,
        token: str | SecretStr,
        *,
        js_token: str | SecretStr | None = None,
        api_url: str = DEFAULT_API_URL,
        timeout: float = _DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        concurrency: int = 8,
        max_retries: int = 3,
        retry_base_delay: float = 1.0,
        retry_max_delay: float = 30.0,
        retry: RetryPolicy | None = None,
        page_budget: float | None = None,
        allow_private_hosts: bool = False,
        policy: SsrfPolicy | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
        host_limits: HostLimits | None = None,
    ) -> None:
        self._token = token if isinstance(token, SecretStr) else SecretStr(token)
        if not self._token.get_secret_value().strip():
            raise ConfigurationError("CRAWLBASE_TOKEN is empty")
        self._js_token: SecretStr | None
        if js_token is None or (isinstance(js_token, str) and not js_token.strip()):
            self._js_token = None
        else:
            self._js_token = js_token if isinstance(js_token, SecretStr) else SecretStr(js_token)
        if not api_url.startswith(("http://", "https://")):
            raise ConfigurationError("CRAWLBASE_API_URL must be an http(s) URL")
        if timeout <= 0 or max_bytes <= 0 or concurrency < 1 or max_retries < 0:
            raise ValueError("timeout, max_bytes and concurrency must be positive, max_retries >= 0")
        if retry_base_delay < 0 or retry_max_delay < 0:
            raise ValueError("retry delays must not be negative")
        if page_budget is not None and page_budget <= 0:
            raise ValueError("page_budget must be positive")
        self.api_url = api_url
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.concurrency = concurrency
        # One page, all its API calls (up to four) and their retries, within this budget: the calls'
        # own budgets added up would be minutes, past any request's deadline.
        self.page_budget = page_budget if page_budget is not None else 2 * timeout
        self.retry = retry or RetryPolicy(
            attempts=max_retries + 1,
            budget=min(2 * timeout, self.page_budget),
            backoff=retry_base_delay,
            max_backoff=retry_max_delay,
            max_retry_after=retry_max_delay,
        )
        self.policy = policy or SsrfPolicy(allow_private=allow_private_hosts)
        self.user_agent = user_agent
        self.hosts = HostLimiter(host_limits)

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> CrawlbaseFetcher:
        """A fetcher configured from ``settings``; raises ConfigurationError without CRAWLBASE_TOKEN.

        The per-call timeout is ``GUARDRAIL_FETCH_TIMEOUT`` when that was set explicitly,
        else 90 s (a browser crawl through Crawlbase is slower than a direct GET); a page's calls
        together get twice that, both cut to :meth:`Settings.page_budget
        <guardrail.settings.Settings.page_budget>` (60 s with the default ``GUARDRAIL_DEADLINE``).
        """
        if settings.crawlbase_token is None and "token" not in overrides:
            raise ConfigurationError("CRAWLBASE_TOKEN is not set")
        options: dict[str, Any] = {
            "token": settings.crawlbase_token,
            "js_token": settings.crawlbase_js_token,
            "api_url": settings.crawlbase_api_url,
            "max_bytes": settings.max_bytes,
            "concurrency": settings.concurrency,
            "allow_private_hosts": settings.allow_private_hosts,
            "host_limits": HostLimits(concurrency=settings.host_concurrency, rate=settings.host_rate or None),
        }
        timeout = settings.fetch_timeout if "fetch_timeout" in settings.model_fields_set else _DEFAULT_TIMEOUT
        budget = settings.page_budget(2 * timeout)
        options["timeout"] = min(timeout, budget)
        options["page_budget"] = budget
        options.update(overrides)
        return cls(**options)

    def __repr__(self) -> str:
        return (
            f"CrawlbaseFetcher(api_url={self.api_url!r}, token='**********', "
            f"js_token={'**********' if self._js_token else None!r}, timeout={self.timeout})"
        )

    def cache_options(self) -> dict[str, object]:
        """The options that change a fetched page: the API, the size cap, whether a JavaScript
        token can render thin pages (never the token itself), the SSRF openings."""
        return {
            "max_bytes": self.max_bytes,
            "api_url": self.api_url,
            "js_token": self.has_js_token,
            **self.policy.cache_options(),
        }

    @property
    def has_js_token(self) -> bool:
        """Whether a JavaScript token is configured for thin pages, 520s and 207s."""
        return self._js_token is not None

    def _secrets(self) -> list[str]:
        secrets = [self._token.get_secret_value()]
        if self._js_token is not None:
            secrets.append(self._js_token.get_secret_value())
        return secrets

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, FetchedPage]:
        """Fetch each unique URL once, at most ``concurrency`` at a time.

        A page's failure is a ``FetchedPage`` with ``reason``; a token or account problem
        raises :class:`ConfigurationError` (the other fetches of the call are cancelled).
        """
        unique = list(dict.fromkeys(urls))
        if not unique:
            return {}
        semaphore = asyncio.Semaphore(self.concurrency)
        tokens = {"CRAWLBASE_TOKEN": self._token}
        if self._js_token is not None:
            tokens["CRAWLBASE_JS_TOKEN"] = self._js_token
        async with httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 15.0)),
            follow_redirects=False,
            headers={
                "User-Agent": self.user_agent,
                "Accept": "text/markdown, text/plain;q=0.9, */*;q=0.1",
                "Accept-Encoding": ACCEPT_ENCODING,  # httpx would offer zstd/br when their modules are around
            },
            transport=_TokenTransport(tokens, self.api_url),
        ) as client:

            async def bounded(url: str) -> FetchedPage:
                async with semaphore, self.hosts.slot(_host_of(url)):
                    return await self.fetch_one(client, url)

            tasks = [asyncio.ensure_future(bounded(u)) for u in unique]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            finally:
                for task in tasks:
                    if not task.done():
                        task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        for task in tasks:
            error = None if task.cancelled() else task.exception()
            if error is not None:
                raise error
        return {u: t.result() for u, t in zip(unique, tasks, strict=True)}

    async def fetch_one(self, client: httpx.AsyncClient, url: str) -> FetchedPage:
        """Fetch one URL through the API with ``client``; raises only ConfigurationError."""
        try:
            self.policy.check_static(url)
        except UrlRefused as exc:
            log.info("refused %s: %s", url, exc.detail)
            return FetchedPage(url=url, reason=exc.reason, fetcher=self.name)
        try:
            answer = await asyncio.wait_for(self._best_answer(client, url), self.page_budget)
        except ConfigurationError:
            raise
        except asyncio.TimeoutError:
            log.info("Crawlbase did not deliver %s within %.0f s", url, self.page_budget)
            return FetchedPage(url=url, reason=Reason.fetch_timeout.value, fetcher=self.name)
        except Exception:
            # Our own failure (a bug, a converter that cannot import): never the page's fault.
            log.exception("internal error fetching %s through Crawlbase", url)
            return FetchedPage(url=url, reason=Reason.internal_error.value, fetcher=self.name)
        final_url = answer.final_url or url
        return FetchedPage(
            url=url,
            final_url=final_url,
            original_status=answer.original_status,
            text=answer.text,
            title=markdown_title(answer.text),
            content_type="text/markdown" if answer.text else None,
            rid=answer.rid,
            reason=answer.reason,
            redirects=[url] if final_url != url else [],
            fetcher=self.name,
        )

    async def _best_answer(self, client: httpx.AsyncClient, url: str) -> _Answer:
        answer = await self._crawl(client, url, js=False, readability=True)
        if answer.thin:
            plain = await self._crawl(client, url, js=False, readability=False)
            answer = _richer(answer, plain)
        needs_browser = answer.api_status in JS_STATUSES or answer.cb_status in JS_CB_STATUSES or answer.thin
        if needs_browser and self._js_token is not None:
            rendered = await self._crawl(client, url, js=True, readability=True)
            if rendered.thin:
                rendered = _richer(rendered, await self._crawl(client, url, js=True, readability=False))
            answer = _richer(answer, rendered)
        return answer

    async def _crawl(self, client: httpx.AsyncClient, url: str, *, js: bool, readability: bool) -> _Answer:
        """One Crawling API call, tried again under ``retry`` for transient outcomes."""
        token = self._js_token if js else self._token
        variable = "CRAWLBASE_JS_TOKEN" if js else "CRAWLBASE_TOKEN"
        if token is None:
            raise ConfigurationError(f"{variable} is not set")
        params = {"url": url, "format": "md", "store": "true"}  # the transport adds the token
        if readability:
            params["md_readability"] = "true"
        extensions = {_TOKEN_EXTENSION: variable}

        async def attempt(seconds_left: float) -> _Answer:
            timeout = httpx.Timeout(min(self.timeout, max(seconds_left, 0.001)), connect=min(self.timeout, 15.0))
            request = client.build_request("GET", self.api_url, params=params, timeout=timeout, extensions=extensions)
            response = await client.send(request, stream=True)
            try:
                answer = await self._answer(response, url, variable)
                retry_after = parse_retry_after(response.headers)
            finally:
                await response.aclose()
            return replace(answer, retry_after=retry_after)

        def note(why: Transient, attempt_number: int, wait: float) -> None:
            log.info("Crawlbase: %s for %s; retrying in %.2fs", why.detail, url, wait)

        try:
            return await retry_call(attempt, self.retry, _transient_answer, on_retry=note)
        except httpx.TimeoutException:
            log.info("Crawlbase timed out on %s", url)
            return _Answer(api_status=0, reason=Reason.fetch_timeout.value)
        except httpx.HTTPError as exc:
            log.warning(
                "could not reach the Crawlbase API for %s: %s: %s",
                url,
                type(exc).__name__,
                redact(str(exc), self._secrets()),
            )
            return _Answer(api_status=0, reason=Reason.fetch_error.value)

    async def _answer(self, response: httpx.Response, url: str, variable: str) -> _Answer:
        status = response.status_code
        headers = response.headers
        original = _int_header(headers.get("original_status"))
        cb_status = _int_header(headers.get("cb_status"))
        if cb_status is None:
            cb_status = _int_header(headers.get("pc_status"))
        if original is None and (status >= 400 or cb_status in ACCOUNT_STATUSES):
            # Not an answer about the target page: about our request, token or account.
            if status in ACCOUNT_STATUSES or await self._says_bad_token(response):
                raise _account_error(status if status >= 400 else (cb_status or status), variable)
            if status in (404, 410):
                original = status  # an older API answered the target's 404/410 with its own status
            else:
                log.info("Crawlbase answered %d (cb_status %s) for %s", status, cb_status, url)
                reason = Reason.invalid_url if status == 422 else Reason.fetch_error
                return _Answer(api_status=status, cb_status=cb_status, reason=reason.value)
        final_url = headers.get("url")
        if final_url and final_url.lower().startswith(("http%3a", "https%3a")):
            final_url = unquote(final_url)
        base = _Answer(
            api_status=status,
            original_status=original,
            cb_status=cb_status,
            final_url=final_url or None,
            rid=headers.get("rid") or None,
        )
        if status == 422:
            log.info("Crawlbase refused the URL %s as malformed (422)", url)
            return replace(base, reason=Reason.invalid_url.value)
        if status in RETRY_STATUSES or status in JS_STATUSES:
            log.info("Crawlbase answered %d for %s", status, url)
            return replace(base, reason=Reason.fetch_error.value)
        if original is not None and not 200 <= original < 300:
            return base  # interpret() turns it into http_<code>; no need for the body
        try:
            body = await read_capped(response, self.max_bytes)
        except BodyTooLarge:
            return replace(base, reason=Reason.too_large.value)
        except UnsupportedEncoding:
            return replace(base, reason=Reason.unsupported_content_encoding.value)
        content_type = headers.get("content-type")
        if media_type(content_type) in HTML_TYPES:  # format=md not honoured: convert ourselves
            converted = await asyncio.to_thread(convert, body, content_type, final_url or url)
            text = converted.text
        else:
            text = decode_body(body, content_type).strip()
        return replace(base, text=text)

    async def _says_bad_token(self, response: httpx.Response) -> bool:
        try:
            head = (await read_capped(response, 4096)).decode("utf-8", errors="replace")
        except (BodyTooLarge, UnsupportedEncoding, httpx.HTTPError):
            return False
        try:
            data = json.loads(head)
            head = " ".join(str(v) for v in data.values()) if isinstance(data, dict) else head
        except ValueError:
            pass
        return bool(_INVALID_TOKEN.search(head))


def _account_error(status: int, variable: str) -> ConfigurationError:
    if status == 402:
        return ConfigurationError(f"the Crawlbase account behind {variable} has no credits left (HTTP 402); top it up")
    return ConfigurationError(
        f"Crawlbase rejected {variable} (HTTP {status}): the token is invalid, was reset, "
        "or is not a token for the Crawling API"
    )


def _richer(first: _Answer, second: _Answer) -> _Answer:
    """The better of two answers for the same page: a usable one, then the one with more text."""
    if second.ok and not first.ok:
        return second
    if first.ok and not second.ok:
        return first
    if non_whitespace_chars(second.text) > non_whitespace_chars(first.text):
        return second
    return first


async def read_stored(
    rid: str,
    *,
    settings: Settings | None = None,
    token: str | SecretStr | None = None,
    storage_url: str | None = None,
    timeout: float = 30.0,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> FetchedPage:
    """The page Crawlbase stored under ``rid`` (Storage API), as a ``FetchedPage``.

    Uses ``token`` or the settings' tokens (``CRAWLBASE_TOKEN``, then ``CRAWLBASE_JS_TOKEN``:
    storage is per token). Raises ``LookupError`` when no token's storage has the rid,
    :class:`ConfigurationError` for a rejected token or none configured, and
    :class:`CrawlbaseError` when the API cannot be reached; no message holds a token.
    """
    rid = (rid or "").strip()
    if not rid or not re.fullmatch(r"[A-Za-z0-9._-]{1,200}", rid):
        raise ValueError("rid must be a non-empty Crawlbase request id (letters, digits, . _ -)")
    settings = settings or Settings.from_env()
    tokens: list[tuple[str, SecretStr]] = []
    if token is not None:
        tokens.append(("the given token", token if isinstance(token, SecretStr) else SecretStr(token)))
    else:
        if settings.crawlbase_token is not None:
            tokens.append(("CRAWLBASE_TOKEN", settings.crawlbase_token))
        if settings.crawlbase_js_token is not None:
            tokens.append(("CRAWLBASE_JS_TOKEN", settings.crawlbase_js_token))
    if not tokens:
        raise ConfigurationError("CRAWLBASE_TOKEN is not set; it is needed to read stored pages")
    url = storage_url or settings.crawlbase_storage_url
    secrets = [t.get_secret_value() for _, t in tokens]
    transport = _TokenTransport(dict(tokens), url)
    headers = {"Accept-Encoding": ACCEPT_ENCODING}
    async with httpx.AsyncClient(
        timeout=timeout, follow_redirects=False, headers=headers, transport=transport
    ) as client:
        for variable, _secret in tokens:
            try:
                page = await _read_stored_with(client, url, rid, variable, max_bytes)
            except httpx.HTTPError as exc:
                raise CrawlbaseError(
                    f"could not read rid {rid!r} from the Crawlbase Storage API: "
                    f"{type(exc).__name__}: {redact(str(exc), secrets)}"
                ) from None
            if page is not None:
                return page
    raise LookupError(f"no page stored under rid {rid!r}")


async def _read_stored_with(
    client: httpx.AsyncClient, url: str, rid: str, variable: str, max_bytes: int
) -> FetchedPage | None:
    """The page stored under ``rid`` in the storage of the token ``variable`` names; None when
    that storage has none (storage is per token)."""
    extensions = {_TOKEN_EXTENSION: variable}
    async with client.stream("GET", url, params={"rid": rid}, extensions=extensions) as response:
        status = response.status_code
        if status == 404:
            return None
        if status in ACCOUNT_STATUSES:
            raise _account_error(status, variable)
        if status != 200:
            raise CrawlbaseError(f"Crawlbase Storage API answered HTTP {status} for rid {rid!r}")
        try:
            body = await read_capped(response, max_bytes)
        except (BodyTooLarge, UnsupportedEncoding) as exc:
            stored_url = response.headers.get("url") or ""
            reason = Reason.too_large if isinstance(exc, BodyTooLarge) else Reason.unsupported_content_encoding
            return FetchedPage(url=stored_url, rid=rid, reason=reason.value, fetcher="crawlbase")
        return _stored_page(rid, response.headers, body)


def _stored_page(rid: str, headers: httpx.Headers, body: bytes) -> FetchedPage:
    page_url = headers.get("url") or ""
    if page_url.lower().startswith(("http%3a", "https%3a")):
        page_url = unquote(page_url)
    content_type = headers.get("content-type")
    converted = convert(body, content_type or "text/html", page_url or None)
    original = _int_header(headers.get("original_status"))
    return FetchedPage(
        url=page_url,
        final_url=page_url or None,
        original_status=original,
        text=converted.text,
        title=converted.title,
        content_type=converted.content_type,
        rid=headers.get("rid") or rid,
        reason=converted.reason,
        detail=converted.detail,
        fetcher="crawlbase",
    )
