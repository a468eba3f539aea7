"""The HTTP service (FastAPI): ``/verify``, ``/v1/guard``, the Vertex-shaped ``/v1/check-grounding``
and ``/health``."""

from __future__ import annotations

from guardrail.apps.server.app import (
    FetcherHealth,
    GuardRequest,
    Health,
    PolicySpec,
    ServiceState,
    VerifyRequest,
    app_from_env,
    create_app,
    error_body,
)

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
