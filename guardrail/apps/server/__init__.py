"""The HTTP service (FastAPI): ``/v1/verify``, ``/v1/guard``, the Vertex-shaped ``/v1/check-grounding``
and ``/v1/health``, over one shared :class:`~guardrail.verifier.Verifier`.

Routes (OpenAPI docs at ``/docs`` and ``/redoc``, served without internet):

* ``GET /v1/health`` - which judge, embedder and fetcher are in use and whether they are loaded.
* ``POST /v1/verify`` - one claim and the URLs it cites -> a :class:`~guardrail.core.schema.ClaimReport`.
* ``POST /v1/check-grounding`` - Vertex AI's check-grounding request and response
  (:mod:`guardrail.grounding`); also at
  ``POST /v1/projects/{project}/locations/{location}/groundingConfigs/{config}:check`` (and the
  ``v1alpha`` / ``v1beta`` spellings) so a Vertex client can point its base URL here.
* ``POST /v1/guard`` - an answer, optional sources and a policy -> the guarded answer and report.

``GET /health`` and ``POST /verify``, the paths before ``/v1/``, still answer, marked deprecated in
the OpenAPI document.

Behaviour every route shares:

* ``GUARDRAIL_API_KEY`` set: every route but ``/v1/health`` (and ``/health``) needs ``Authorization: Bearer <key>``
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

Where things are:

* :mod:`.app` - :func:`create_app` (assembles the rest) and :func:`app_from_env`;
* :mod:`.models` - request and response bodies; :mod:`.errors` - error bodies and handlers;
* :mod:`.middleware` - the bearer token and the body cap (pure ASGI, in front of routing);
* :mod:`.state` - :class:`ServiceState` (verifier, stores, readiness, ``/v1/health``);
* :mod:`.dependencies` - how routes get the state; :mod:`.routes` - one router per concern.

It needs the ``[server]`` extra (FastAPI, uvicorn): ``pip install 'citation-guardrail[server]'``.
"""

from __future__ import annotations

from guardrail.extras import require_extra

# Before FastAPI is imported: without the [server] extra, say which command installs it.
require_extra("server", "the HTTP service (guardrail.apps.server, guardrail serve)")

from guardrail.apps.server.app import app_from_env, create_app  # noqa: E402
from guardrail.apps.server.errors import error_body  # noqa: E402
from guardrail.apps.server.models import FetcherHealth, GuardRequest, Health, PolicySpec, VerifyRequest  # noqa: E402
from guardrail.apps.server.state import ServiceState  # noqa: E402

__all__ = [
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
