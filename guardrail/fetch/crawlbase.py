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
4. 429, 500, 502, 503, 504, 522 and 599 are retried with exponential backoff and jitter
   (``Retry-After`` honoured); 404, 410 and 422 never are.

**Configuration errors surface.** A rejected token (HTTP 401/403 from the API itself),
an account out of credits (402) or the API's "invalid token" answer raise
:class:`~guardrail.settings.ConfigurationError` naming ``CRAWLBASE_TOKEN`` or
``CRAWLBASE_JS_TOKEN``, out of :meth:`CrawlbaseFetcher.fetch_all` too: every page of the
call would fail the same way, and reporting that as N unreachable citations would hide it.
Every other failure is per page, a ``FetchedPage`` with ``reason`` set.

**Secrets.** The token travels in the query string, so it is kept as a ``SecretStr``,
never put in a log line, exception message, repr or ``FetchedPage`` (only ``rid`` is kept,
never the storage URL), exceptions from httpx are re-raised scrubbed and without their
chain, and a filter on the ``httpx`` logger masks ``token=`` in its request log lines.

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
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote

import httpx
from pydantic import SecretStr

from guardrail.fetch._http import DEFAULT_USER_AGENT, BodyTooLarge, read_capped
from guardrail.fetch.convert import HTML_TYPES, convert, decode_body, media_type
from guardrail.fetch.interpret import non_whitespace_chars
from guardrail.fetch.ssrf import SsrfPolicy, UrlRefused
from guardrail.schema import FetchedPage, Reason
from guardrail.settings import ConfigurationError, Settings

log = logging.getLogger("guardrail.fetch.crawlbase")

DEFAULT_API_URL = "https://api.crawlbase.com/"
DEFAULT_STORAGE_URL = "https://api.crawlbase.com/storage"
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


class _RedactTokenParams(logging.Filter):
    """Masks ``token=...`` in records of the httpx logger (it logs every request URL at INFO)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and "token=" in record.msg.lower():
            record.msg = redact(record.msg)
        if record.args:
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            if any("token=" in str(a).lower() for a in args):
                record.args = tuple(redact(str(a)) if "token=" in str(a).lower() else a for a in args)
        return True


def install_log_redaction() -> None:
    """Add the token-masking filter to the ``httpx`` and ``httpcore`` loggers (idempotent)."""
    for name in ("httpx", "httpcore"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RedactTokenParams) for f in logger.filters):
            logger.addFilter(_RedactTokenParams())


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

    @property
    def ok(self) -> bool:
        status = self.original_status
        return self.reason is None and (status is None or 200 <= status < 300)

    @property
    def thin(self) -> bool:
        return self.ok and non_whitespace_chars(self.text) < THIN_PAGE_CHARS


def _int_header(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


class CrawlbaseFetcher:
    """Fetches pages through the Crawlbase Crawling API (chosen when ``CRAWLBASE_TOKEN`` is set).

    ``token``/``js_token``: the normal and JavaScript tokens; ``api_url``: the Crawling API
    endpoint (point it at a local server in tests); ``timeout`` per API call (default 90 s,
    as Crawlbase advises); ``max_bytes`` cap on the markdown; ``concurrency`` API calls at
    once; ``max_retries`` and ``retry_base_delay``/``retry_max_delay`` (seconds) for
    429/5xx backoff; ``allow_private_hosts``/``policy`` for the no-DNS SSRF check.
    """

    name = "crawlbase"

    def __init__(
        self,
        token: str | SecretStr,
        *,
        js_token: str | SecretStr | None = None,
        api_url: str = DEFAULT_API_URL,
        timeout: float = _DEFAULT_TIMEOUT,
        max_bytes: int = 5_000_000,
        concurrency: int = 8,
        max_retries: int = 3,
        retry_base_delay: float = 1.0,
        retry_max_delay: float = 30.0,
        allow_private_hosts: bool = False,
        policy: SsrfPolicy | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
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
        self.api_url = api_url
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self.policy = policy or SsrfPolicy(allow_private=allow_private_hosts)
        self.user_agent = user_agent
        install_log_redaction()

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> CrawlbaseFetcher:
        """A fetcher configured from ``settings``; raises ConfigurationError without CRAWLBASE_TOKEN.

        The per-call timeout is ``GUARDRAIL_FETCH_TIMEOUT`` when that was set explicitly,
        else 90 s (a browser crawl through Crawlbase is slower than a direct GET).
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
        }
        if "fetch_timeout" in settings.model_fields_set:
            options["timeout"] = settings.fetch_timeout
        options.update(overrides)
        return cls(**options)

    def __repr__(self) -> str:
        return (
            f"CrawlbaseFetcher(api_url={self.api_url!r}, token='**********', "
            f"js_token={'**********' if self._js_token else None!r}, timeout={self.timeout})"
        )

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
        async with httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 15.0)),
            follow_redirects=False,
            headers={"User-Agent": self.user_agent, "Accept": "text/markdown, text/plain;q=0.9, */*;q=0.1"},
        ) as client:

            async def bounded(url: str) -> FetchedPage:
                async with semaphore:
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
            answer = await self._best_answer(client, url)
        except ConfigurationError:
            raise
        except Exception as exc:  # a bug or a library surprise must not fail the whole call
            log.warning("unexpected error fetching %s through Crawlbase: %s", url, type(exc).__name__)
            return FetchedPage(url=url, reason=Reason.fetch_error.value, fetcher=self.name)
        final_url = answer.final_url or url
        return FetchedPage(
            url=url,
            final_url=final_url,
            original_status=answer.original_status,
            text=answer.text,
            title=_markdown_title(answer.text),
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
        needs_browser = (
            answer.api_status in JS_STATUSES or answer.cb_status in JS_CB_STATUSES or answer.thin
        )
        if needs_browser and self._js_token is not None:
            rendered = await self._crawl(client, url, js=True, readability=True)
            if rendered.thin:
                rendered = _richer(rendered, await self._crawl(client, url, js=True, readability=False))
            answer = _richer(answer, rendered)
        return answer

    async def _crawl(self, client: httpx.AsyncClient, url: str, *, js: bool, readability: bool) -> _Answer:
        """One Crawling API call (with retries for transient statuses)."""
        token = self._js_token if js else self._token
        assert token is not None
        variable = "CRAWLBASE_JS_TOKEN" if js else "CRAWLBASE_TOKEN"
        params = {"token": token.get_secret_value(), "url": url, "format": "md", "store": "true"}
        if readability:
            params["md_readability"] = "true"
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                async with client.stream("GET", self.api_url, params=params) as response:
                    status = response.status_code
                    if last or status not in RETRY_STATUSES:
                        return await self._answer(response, url, variable)
                    delay = self._backoff(attempt, response.headers.get("retry-after"))
                log.info("Crawlbase answered %d for %s; retrying in %.2fs", status, url, delay)
                await asyncio.sleep(delay)
            except httpx.TimeoutException:
                log.info("Crawlbase timed out on %s", url)
                return _Answer(api_status=0, reason=Reason.fetch_timeout.value)
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as exc:
                if not last:
                    await asyncio.sleep(self._backoff(attempt, None))
                    continue
                log.warning(
                    "could not reach the Crawlbase API for %s: %s: %s",
                    url,
                    type(exc).__name__,
                    redact(str(exc), self._secrets()),
                )
                return _Answer(api_status=0, reason=Reason.fetch_error.value)
            except httpx.HTTPError as exc:
                log.warning(
                    "Crawlbase request failed for %s: %s: %s",
                    url,
                    type(exc).__name__,
                    redact(str(exc), self._secrets()),
                )
                return _Answer(api_status=0, reason=Reason.fetch_error.value)
        raise AssertionError("unreachable: the last attempt always returns")

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            try:
                return min(self.retry_max_delay, max(0.0, float(retry_after)))
            except ValueError:
                pass
        ceiling = min(self.retry_max_delay, self.retry_base_delay * (2**attempt))
        return ceiling / 2 + random.uniform(0, ceiling / 2)  # jitter spreads concurrent retries

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
        except (BodyTooLarge, httpx.HTTPError):
            return False
        try:
            data = json.loads(head)
            head = " ".join(str(v) for v in data.values()) if isinstance(data, dict) else head
        except ValueError:
            pass
        return bool(_INVALID_TOKEN.search(head))


def _account_error(status: int, variable: str) -> ConfigurationError:
    if status == 402:
        return ConfigurationError(
            f"the Crawlbase account behind {variable} has no credits left (HTTP 402); top it up"
        )
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


_MD_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _markdown_title(text: str) -> str | None:
    match = _MD_HEADING.search(text[:4096])
    return match.group(1) if match else None


async def read_stored(
    rid: str,
    *,
    settings: Settings | None = None,
    token: str | SecretStr | None = None,
    storage_url: str | None = None,
    timeout: float = 30.0,
    max_bytes: int = 5_000_000,
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
    install_log_redaction()
    url = storage_url or settings.crawlbase_storage_url
    secrets = [t.get_secret_value() for _, t in tokens]
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False) as client:
        for variable, secret in tokens:
            params = {"token": secret.get_secret_value(), "rid": rid}
            try:
                async with client.stream("GET", url, params=params) as response:
                    status = response.status_code
                    if status == 404:
                        continue
                    if status in ACCOUNT_STATUSES:
                        raise _account_error(status, variable)
                    if status != 200:
                        raise CrawlbaseError(f"Crawlbase Storage API answered HTTP {status} for rid {rid!r}")
                    try:
                        body = await read_capped(response, max_bytes)
                    except BodyTooLarge:
                        return FetchedPage(url=response.headers.get("url") or "", rid=rid,
                                           reason=Reason.too_large.value, fetcher="crawlbase")
                    return _stored_page(rid, response.headers, body)
            except httpx.HTTPError as exc:
                raise CrawlbaseError(
                    f"could not read rid {rid!r} from the Crawlbase Storage API: "
                    f"{type(exc).__name__}: {redact(str(exc), secrets)}"
                ) from None
    raise LookupError(f"no page stored under rid {rid!r}")


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
        fetcher="crawlbase",
    )
