"""Assembles the service: :func:`create_app` puts the state, the middleware, the exception
handlers and the routers together; :func:`app_from_env` is what ``guardrail serve`` runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from guardrail import __version__
from guardrail.apps.server.dependencies import state_of
from guardrail.apps.server.errors import EXCEPTION_HANDLERS
from guardrail.apps.server.middleware import BearerAuth, BodyLimit, DocsContentPolicy, InFlight, RequestWork
from guardrail.apps.server.routes import ROUTERS
from guardrail.apps.server.state import ServiceState
from guardrail.fetch.base import Fetcher
from guardrail.settings import Settings
from guardrail.verifier import Verifier

__all__ = ["DOCS_ASSETS_PATH", "app_from_env", "create_app"]

DOCS_ASSETS_PATH = "/docs-assets"
"""Where the service serves the Swagger UI and ReDoc scripts and styles that /docs and /redoc load."""

SETTLE_SECONDS = 2.0
"""How long the shutdown waits for requests still running (those the server cancelled answer 503)."""

_DESCRIPTION = (
    "Check that the URLs an LLM cites really say what its answer claims, "
    "and Vertex-compatible grounding checks against given facts."
)


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
    :class:`~guardrail.judges._batching.BatchingJudge`, and the audit store (see
    :meth:`ServiceState.build`). ``warm=False`` skips loading the models at start-up.
    ``max_body_bytes`` overrides ``GUARDRAIL_MAX_BODY_BYTES``. Raises ConfigurationError for
    unreadable settings.
    """
    state = ServiceState.build(settings, verifier, fetcher=fetcher, warm=warm)
    cap = max_body_bytes if max_body_bytes is not None else state.settings.max_body_bytes
    if cap < 1:
        raise ValueError("max_body_bytes must be positive")
    # /docs and /redoc load Swagger UI and ReDoc from the fastapi-offline distribution (served
    # under DOCS_ASSETS_PATH), not from a CDN: the service runs in closed networks too. Swagger
    # UI's online validator badge would call validator.swagger.io: it is turned off; the pages'
    # Content-Security-Policy (DocsContentPolicy) refuses what else would leave the machine.
    app = FastAPIOffline(
        title="Citation guardrail",
        version=__version__,
        description=_DESCRIPTION,
        lifespan=_lifespan,
        exception_handlers=EXCEPTION_HANDLERS,
        static_url=DOCS_ASSETS_PATH,
        swagger_ui_parameters={"validatorUrl": None},
    )
    app.state.guardrail = state
    # Added innermost first: the token is checked, then the body read (capped, in time), then the
    # request's work runs under its deadline, cancelled if the client leaves.
    app.state.inflight = InFlight()
    app.add_middleware(RequestWork, timeout=state.settings.request_timeout, inflight=app.state.inflight)
    app.add_middleware(DocsContentPolicy, paths=frozenset({"/docs", "/redoc"}))
    app.add_middleware(BodyLimit, max_body_bytes=cap, body_timeout=state.settings.body_timeout)
    if state.api_key is not None:  # added last, so it runs first: no body is read without the token
        app.add_middleware(BearerAuth, api_key=state.api_key)
    for router in ROUTERS:
        app.include_router(router)
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Load and warm the models before the first request; close the stores at shutdown."""
    state = state_of(app)
    await state.start()
    try:
        yield
    finally:
        inflight: InFlight = app.state.inflight
        await inflight.settle(SETTLE_SECONDS)  # requests cancelled at shutdown send their 503
        await asyncio.to_thread(state.close)  # waits briefly for queued audit rows


def app_from_env() -> FastAPI:
    """The app as ``guardrail serve`` runs it (a uvicorn factory: ``guardrail.apps.server:app_from_env``)."""
    return create_app()
