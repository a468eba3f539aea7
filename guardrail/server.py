"""The HTTP service: FastAPI routes over one shared :class:`~guardrail.verifier.Verifier`.

Routes (OpenAPI docs at ``/docs``):

* ``GET /health`` - which judge, embedder and fetcher are in use and whether they are loaded.
* ``POST /verify`` - one claim and the URLs it cites -> a :class:`~guardrail.schema.ClaimReport`.
* ``POST /v1/check-grounding`` - Vertex AI's check-grounding request and response
  (:mod:`guardrail.grounding`); also at
  ``POST /v1/projects/{project}/locations/{location}/groundingConfigs/{config}:check`` (and the
  ``v1alpha`` / ``v1beta`` spellings) so a Vertex client can point its base URL here.
* ``POST /v1/guard`` - an answer, optional sources and a policy -> the guarded answer and report.

Behaviour every route shares:

* ``GUARDRAIL_API_KEY`` set: every route but ``/health`` needs ``Authorization: Bearer <key>``
  (compared in constant time); otherwise 401.
* The request body is capped at ``GUARDRAIL_MAX_BODY_BYTES`` (8 MiB) while it is read: a
  declared ``Content-Length`` over the cap is refused before reading, a chunked body as soon as
  it passes the cap; 413 either way.
* A setting that is missing or wrong (``GUARDRAIL_JUDGE=openai`` without ``OPENAI_API_KEY``, a
  check-grounding call with no judge installed) answers 503 naming the variable, never a value.
  A grounding check whose judge failed on some pair (after its retries) answers 503 too, rather
  than a score that silently counts those pairs as unsupported. A body that does not validate
  answers 422 naming the field; a grounding request over one of Vertex's limits answers 400
  naming the limit. Error bodies carry ``detail`` (FastAPI's shape)
  and ``error: {code, message, status}`` (Google's).

Models are loaded and warmed once, at start-up (the lifespan), not on the first request. CPU
work (embedding, judging, HTML conversion) runs in worker threads, so requests are served
concurrently; page fetches go through the page cache (``GUARDRAIL_CACHE``, on by default in the
user cache folder as for the CLI, ``off`` to disable) and concurrent requests citing the same URL
share one fetch. Decisions are recorded in the audit store when ``GUARDRAIL_AUDIT_DB`` names one.
The SSRF guard stays on unless ``GUARDRAIL_ALLOW_PRIVATE_HOSTS`` says otherwise.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from guardrail.fetch.base import Fetcher
from guardrail.grounding import (
    CheckGroundingRequest,
    CheckGroundingResponse,
    GroundingJudgeError,
    GroundingLimitError,
    acheck_grounding_request,
)
from guardrail.judges.base import Judge
from guardrail.policy import POLICY_PRESETS, GuardedAnswer, Policy, apply_policy
from guardrail.schema import ClaimReport, JudgeRequest, JudgeVerdict
from guardrail.settings import ConfigurationError, Settings
from guardrail.verifier import Verifier

log = logging.getLogger("guardrail.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PUBLIC_PATHS = frozenset({"/health"})
"""Paths answered without the bearer token."""
MAX_URLS = 100
"""Most URLs one ``/verify`` request may cite."""


# -- request and response models --------------------------------------------------------------


class VerifyRequest(BaseModel):
    """``POST /verify``: one claim and the URLs it cites."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"claim": "Water boils at 100 degrees Celsius at sea level.", "urls": ["https://example.org/water"]}
            ]
        }
    )

    claim: str = Field(description="The claim to check.")
    urls: list[str] = Field(min_length=1, max_length=MAX_URLS, description="The URLs the claim cites.")

    @field_validator("claim")
    @classmethod
    def _claim_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("claim must not be empty")
        return value


class PolicySpec(BaseModel):
    """A policy: a preset (``annotate``, ``default``, ``strip``, ``block``, ``strict``) with any
    label's action overridden (``"keep"``, ``"annotate"``, ``"strip"``, ``"strip+annotate"``,
    ``"block"``) and optionally a ``min_confidence``."""

    preset: str = "default"
    supported: str | list[str] | None = None
    contradicted: str | list[str] | None = None
    not_found: str | list[str] | None = None
    unreachable: str | list[str] | None = None
    block_message: str | None = None
    min_confidence: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Supported/contradicted verdicts below it count as not_found."
    )

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str) -> str:
        if value not in POLICY_PRESETS:
            raise ValueError(f"unknown policy preset {value!r}; choose from {', '.join(POLICY_PRESETS)}")
        return value

    def build(self) -> Policy:
        """The :class:`~guardrail.policy.Policy` this spec names (ValueError for a bad action)."""
        overrides = self.model_dump(exclude={"preset"}, exclude_none=True)
        return Policy.preset(self.preset, **overrides)


class GuardRequest(BaseModel):
    """``POST /v1/guard``: an answer to guard, the sources its markers refer to, and a policy."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "answer": "Water boils at 100 degrees Celsius at sea level [1].",
                    "sources": ["https://example.org/water"],
                    "policy": "default",
                    "format": "markdown",
                }
            ]
        }
    )

    answer: str = Field(description="The answer (markdown) with its citations.")
    sources: list[str | dict[str, Any]] | None = Field(
        default=None, description="URLs or {url, text, title} objects that [n] markers refer to."
    )
    policy: str | PolicySpec = Field(default="default", description="A preset name, or a PolicySpec.")
    format: Literal["markdown", "html"] = Field(default="markdown", description="How badges are written.")

    @field_validator("answer")
    @classmethod
    def _answer_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("answer must not be empty")
        return value


class ComponentHealth(BaseModel):
    """One stage of the service: what it is and whether it is ready."""

    name: str | None = None
    model: str | None = None
    loaded: bool | None = Field(default=None, description="Weights in memory (None: nothing to load).")
    ready: bool = False
    error: str | None = None


class FetcherHealth(BaseModel):
    """The fetcher: its name, the page cache, and whether the SSRF guard is on."""

    name: str | None = None
    ready: bool = False
    cache: str | None = Field(default=None, description="The page cache file, if any.")
    ssrf_guard: bool = True
    error: str | None = None


class Health(BaseModel):
    """``GET /health``."""

    status: Literal["ok", "degraded", "unavailable"]
    judge: ComponentHealth
    embedder: ComponentHealth
    fetcher: FetcherHealth
    audit: str | None = Field(default=None, description="The audit store file, if any.")
    auth: bool = Field(description="Whether routes other than /health need the bearer token.")


# -- errors -----------------------------------------------------------------------------------

_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    413: "INVALID_ARGUMENT",
    422: "INVALID_ARGUMENT",
    503: "UNAVAILABLE",
}


def error_body(code: int, message: str) -> dict[str, Any]:
    """The error JSON: FastAPI's ``detail`` and Google's ``error`` object, both saying ``message``."""
    return {"detail": message, "error": {"code": code, "message": message, "status": _GOOGLE_STATUS.get(code, "")}}


def _error(code: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=code, headers=headers)


class _Gate:
    """Pure ASGI middleware: the bearer token (before anything is read) and the body cap (while
    the body is read; the app then gets the body already read, from memory)."""

    def __init__(self, app: ASGIApp, *, api_key: str | None, max_body_bytes: int) -> None:
        self.app = app
        self.api_key = api_key.encode("utf-8") if api_key else None
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        if self.api_key is not None and scope.get("path") not in PUBLIC_PATHS and not self._authorised(headers):
            response = _error(401, "missing or wrong bearer token (GUARDRAIL_API_KEY)", {"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        declared = headers.get("content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.max_body_bytes
            except ValueError:
                await _error(400, "invalid Content-Length header")(scope, receive, send)
                return
            if too_big:
                await self._too_large(scope, receive, send)
                return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body.extend(message.get("body", b""))
            more = bool(message.get("more_body", False))
            if len(body) > self.max_body_bytes:
                await self._too_large(scope, receive, send)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _authorised(self, headers: dict[str, bytes]) -> bool:
        assert self.api_key is not None
        value = headers.get("authorization", b"")
        scheme, _, token = value.partition(b" ")
        # compare_digest runs in time independent of where the first difference is.
        return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.api_key)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = _error(413, f"request body is larger than {self.max_body_bytes} bytes (GUARDRAIL_MAX_BODY_BYTES)")
        response.headers["Connection"] = "close"
        await response(scope, receive, send)


# -- judging across requests -----------------------------------------------------------------


class BatchingJudge:
    """A :class:`~guardrail.judges.base.Judge` that runs one inner ``judge()`` call at a time and
    hands it every request that arrived meanwhile, from all concurrent HTTP requests together.

    The embedded judge already uses every core for one call; several calls at once only fight
    over the cores (and pad separately), while one larger call keeps the batches full. A lone
    request is judged at once, with no added wait. One inner call takes at most ``max_requests``
    requests (about 400 pairs for the embedded judge), so that the first callers of a burst are
    answered before the last are judged. Other attributes (``load``...) are the inner judge's.
    """

    def __init__(self, inner: Judge, *, max_requests: int = 32) -> None:
        if max_requests < 1:
            raise ValueError("max_requests must be at least 1")
        self.inner = inner
        self.name: str = inner.name
        self.model: str = inner.model
        self.max_requests = max_requests
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _JudgeQueue] = weakref.WeakKeyDictionary()

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (copy, unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"BatchingJudge({self.inner!r})"

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """Queue ``requests`` for the next inner call and wait for their verdicts, in order."""
        if not requests:
            return []
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _JudgeQueue()
        future: asyncio.Future[list[JudgeVerdict]] = loop.create_future()
        queue.pending.append((list(requests), future))
        if queue.worker is None or queue.worker.done():
            queue.worker = loop.create_task(self._drain(queue))
        return await future

    async def _drain(self, queue: _JudgeQueue) -> None:
        while queue.pending:
            batch: list[tuple[list[JudgeRequest], asyncio.Future[list[JudgeVerdict]]]] = []
            size = 0
            while queue.pending and (not batch or size + len(queue.pending[0][0]) <= self.max_requests):
                item = queue.pending.popleft()
                if item[1].done():  # its caller went away
                    continue
                batch.append(item)
                size += len(item[0])
            if not batch:
                continue
            flat = [r for requests, _ in batch for r in requests]
            try:
                verdicts = await self.inner.judge(flat)
                if len(verdicts) != len(flat):
                    raise RuntimeError(f"judge returned {len(verdicts)} verdicts for {len(flat)} requests")
            except Exception as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            start = 0
            for requests, future in batch:
                if not future.done():
                    future.set_result(verdicts[start : start + len(requests)])
                start += len(requests)


@dataclass
class _JudgeQueue:
    pending: deque[tuple[list[JudgeRequest], asyncio.Future[list[JudgeVerdict]]]] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None


# -- the service state ------------------------------------------------------------------------


@dataclass
class ServiceState:
    """What the routes share: the verifier, the stores opened for it, and readiness."""

    settings: Settings
    verifier: Verifier | None
    config_error: str | None = None
    cache_path: str | None = None
    audit_path: str | None = None
    warm: bool = True
    judge_loaded: bool | None = None
    embedder_loaded: bool = False
    warm_errors: dict[str, str] = field(default_factory=dict)
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def require_verifier(self) -> Verifier:
        """The verifier, its judge resolved; ConfigurationError (-> 503) when a setting is missing."""
        if self.config_error is not None or self.verifier is None:
            raise ConfigurationError(self.config_error or "the service is not configured")
        _ = self.verifier.judge  # raises ConfigurationError naming the missing variable
        return self.verifier

    async def start(self) -> None:
        """Resolve the judge and load and warm the models, once, off the event loop."""
        verifier = self.verifier
        if verifier is None or not self.warm:
            return
        try:
            judge = verifier.judge
        except ConfigurationError as exc:
            self.config_error = str(exc)
            log.error("guardrail service is not configured: %s", exc)
            return
        try:
            await asyncio.to_thread(verifier.embedder.embed, ["warm-up"])
            self.embedder_loaded = True
        except Exception as exc:  # reported by /health; requests that need it will fail too
            self.warm_errors["embedder"] = f"{type(exc).__name__}: {exc}"
            log.exception("embedder failed to load")
        load = getattr(judge, "load", None)
        if judge is not None and callable(load):
            try:
                await asyncio.to_thread(load)
                await judge.judge([JudgeRequest(claim="Water boils.", passages=["Water boils at 100 degrees."])])
                self.judge_loaded = True
            except Exception as exc:
                self.judge_loaded = False
                self.warm_errors["judge"] = f"{type(exc).__name__}: {exc}"
                log.exception("judge failed to load")

    def close(self) -> None:
        """Close the stores this state opened."""
        for close in self._closers:
            try:
                close()
            except Exception:
                log.exception("closing a store failed")

    def health(self) -> Health:
        """The readiness report of ``GET /health``."""
        verifier = self.verifier
        judge_h = ComponentHealth()
        embed_h = ComponentHealth()
        fetch_h = FetcherHealth(ssrf_guard=not self.settings.allow_private_hosts, cache=self.cache_path)
        if verifier is None:
            judge_h.error = fetch_h.error = self.config_error
            return Health(status="unavailable", judge=judge_h, embedder=embed_h, fetcher=fetch_h, auth=self._auth())
        fetch_h.name, fetch_h.ready = getattr(verifier.fetcher, "name", None), True
        fetch_h.ssrf_guard = not verifier.settings.allow_private_hosts
        embed_h.name = getattr(verifier.embedder, "name", None)
        embed_h.loaded = self.embedder_loaded
        embed_h.ready = "embedder" not in self.warm_errors
        embed_h.error = self.warm_errors.get("embedder")
        judge = None
        if self.config_error is None:
            try:
                judge = verifier.judge
            except ConfigurationError as exc:
                self.config_error = str(exc)
        if self.config_error is not None:
            judge_h.error = self.config_error
        elif judge is None:
            judge_h.error = "no judge is available: install the embedded model or set GUARDRAIL_JUDGE"
        else:
            judge_h.name, judge_h.model = judge.name, judge.model
            judge_h.loaded = self.judge_loaded
            judge_h.ready = "judge" not in self.warm_errors
            judge_h.error = self.warm_errors.get("judge")
        if self.config_error is not None:
            status: Literal["ok", "degraded", "unavailable"] = "unavailable"
        elif judge_h.ready and embed_h.ready:
            status = "ok"
        else:
            status = "degraded"
        return Health(
            status=status, judge=judge_h, embedder=embed_h, fetcher=fetch_h, audit=self.audit_path, auth=self._auth()
        )

    def _auth(self) -> bool:
        return self.settings.api_key is not None and bool(self.settings.api_key.get_secret_value())


def _build_state(
    settings: Settings | None, verifier: Verifier | None, fetcher: Fetcher | None, warm: bool
) -> ServiceState:
    if verifier is not None:
        if fetcher is not None:
            raise ValueError("pass either verifier or fetcher, not both")
        return ServiceState(settings=settings or verifier.settings, verifier=verifier, warm=warm)
    settings = settings or Settings.from_env()
    state = ServiceState(settings=settings, verifier=None, warm=warm)
    try:
        from guardrail.fetch import fetcher_from_settings
        from guardrail.fetch.shared import SingleFlightFetcher
        from guardrail.judges import judge_from_settings
        from guardrail.store import AuditStore, CachedFetcher, PageCache
        from guardrail.verifier import Recorder

        inner = fetcher if fetcher is not None else fetcher_from_settings(settings)
        cache = PageCache.from_settings(settings, use_default_path=True)
        if cache is not None:
            state.cache_path = str(cache.path)
            state._closers.append(cache.close)
            inner = CachedFetcher(inner, cache)
        recorders: list[Recorder] = []
        audit = AuditStore.from_settings(settings)
        if audit is not None:
            state.audit_path = str(audit.path)
            state._closers.append(audit.close)
            recorders.append(audit)
        judge = judge_from_settings(settings)
        state.verifier = Verifier(
            settings=settings,
            fetcher=SingleFlightFetcher(inner),
            judge=BatchingJudge(judge) if judge is not None else None,
            recorders=recorders,
        )
    except ConfigurationError as exc:
        state.config_error = str(exc)
    return state


# -- the app ----------------------------------------------------------------------------------


def create_app(
    settings: Settings | None = None,
    verifier: Verifier | None = None,
    *,
    fetcher: Fetcher | None = None,
    warm: bool = True,
    max_body_bytes: int | None = None,
) -> FastAPI:
    """The guardrail service as a FastAPI app.

    ``verifier`` (tests, embedding apps) is used as given; without one, a verifier is built from
    ``settings`` (default: the environment): ``fetcher`` (default: the settings' fetcher) behind
    the page cache and a shared in-flight fetch, the settings' judge behind a
    :class:`BatchingJudge`, and the audit store. ``warm=False`` skips loading the models at
    start-up. ``max_body_bytes`` overrides ``GUARDRAIL_MAX_BODY_BYTES``. Raises
    ConfigurationError for unreadable settings.
    """
    state = _build_state(settings, verifier, fetcher, warm)
    cap = max_body_bytes if max_body_bytes is not None else state.settings.max_body_bytes
    if cap < 1:
        raise ValueError("max_body_bytes must be positive")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await state.start()
        try:
            yield
        finally:
            state.close()

    app = FastAPI(
        title="Citation guardrail",
        version=_version(),
        description="Check that the URLs an LLM cites really say what its answer claims, "
        "and Vertex-compatible grounding checks against given facts.",
        lifespan=lifespan,
    )
    app.state.guardrail = state
    api_key = state.settings.api_key.get_secret_value() if state.settings.api_key is not None else None
    app.add_middleware(_Gate, api_key=api_key or None, max_body_bytes=cap)

    @app.exception_handler(ConfigurationError)
    async def _config_error(request: Request, exc: ConfigurationError) -> JSONResponse:
        return _error(503, str(exc))

    @app.exception_handler(GroundingJudgeError)
    async def _judge_error(request: Request, exc: GroundingJudgeError) -> JSONResponse:
        return _error(503, str(exc), {"Retry-After": "1"})

    @app.exception_handler(GroundingLimitError)
    async def _limit_error(request: Request, exc: GroundingLimitError) -> JSONResponse:
        return _error(400, str(exc))

    @app.get("/health", response_model=Health, tags=["service"])
    async def health() -> Health:
        """Which judge, embedder and fetcher the service uses, and whether each is loaded."""
        return state.health()

    @app.post("/verify", response_model=ClaimReport, tags=["verify"])
    async def verify(body: VerifyRequest) -> ClaimReport:
        """Verify one claim against each URL it cites: one verdict per unique URL, and the overall label."""
        return await state.require_verifier().averify(body.claim, body.urls)

    async def check(body: CheckGroundingRequest) -> JSONResponse:
        result: CheckGroundingResponse = await acheck_grounding_request(body, state.require_verifier())
        return JSONResponse(result.to_vertex())

    grounding_doc = {
        "response_model": CheckGroundingResponse,
        "response_model_exclude_none": True,
        "tags": ["grounding"],
        "responses": {400: {"description": "Over one of Vertex's limits (named in the message)."}},
    }
    app.post(
        "/v1/check-grounding",
        summary="Check grounding (Vertex AI compatible)",
        description="How well the facts ground the answer candidate, in Vertex AI's check-grounding shape.",
        **grounding_doc,  # type: ignore[arg-type]
    )(check)
    for version in ("v1", "v1beta", "v1alpha"):
        app.post(
            f"/{version}/projects/{{project}}/locations/{{location}}/groundingConfigs/{{config}}:check",
            summary=f"Check grounding at Vertex AI's {version} path",
            description="The same as /v1/check-grounding; project, location and config are ignored.",
            include_in_schema=version == "v1",
            **grounding_doc,  # type: ignore[arg-type]
        )(check)

    @app.post("/v1/guard", response_model=GuardedAnswer, tags=["guard"])
    async def guard(body: GuardRequest) -> GuardedAnswer:
        """Verify every citation of an answer and apply the policy: badges, stripped links or a block."""
        try:
            policy = Policy.preset(body.policy) if isinstance(body.policy, str) else body.policy.build()
        except ValueError as exc:
            raise RequestValidationError(
                [{"type": "value_error", "loc": ("body", "policy"), "msg": str(exc), "input": None}]
            ) from None
        verifier = state.require_verifier()
        try:
            report = await verifier.averify_answer(body.answer, body.sources)
        except (TypeError, ValueError) as exc:  # sources the extractor cannot use name their index
            raise RequestValidationError(
                [{"type": "value_error", "loc": ("body", "sources"), "msg": str(exc), "input": None}]
            ) from None
        return await asyncio.to_thread(apply_policy, report, policy, body.format)

    return app


def _version() -> str:
    from guardrail import __version__

    return __version__


def app_from_env() -> FastAPI:
    """The app as ``guardrail serve`` runs it (a uvicorn factory: ``guardrail.server:app_from_env``)."""
    return create_app()


__all__ = [
    "BatchingJudge",
    "FetcherHealth",
    "GuardRequest",
    "Health",
    "PolicySpec",
    "ServiceState",
    "VerifyRequest",
    "app_from_env",
    "create_app",
    "error_body",
]
