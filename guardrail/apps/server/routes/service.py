"""Routes about the service itself: ``GET /v1/health`` (open without the bearer token, which then
shows the status alone); ``GET /health`` is its deprecated alias."""

from __future__ import annotations

from fastapi import APIRouter, Request

from guardrail.apps.server.dependencies import State
from guardrail.apps.server.json_body import StrictJSONRoute
from guardrail.apps.server.middleware import carries_token
from guardrail.apps.server.models import Health, PublicHealth

__all__ = ["router"]

router = APIRouter(tags=["service"], route_class=StrictJSONRoute)


@router.get("/v1/health", response_model=Health | PublicHealth)
async def health(request: Request, state: State) -> Health | PublicHealth:
    """The service's status; with the bearer token (or when none is set), also which judge,
    embedder, fetcher and audit store it uses and how each is doing."""
    key = state.api_key
    detailed = key is None or carries_token(request.scope, key.encode("utf-8"))
    return state.health(detailed=detailed)


router.add_api_route(
    "/health",
    health,
    methods=["GET"],
    response_model=Health | PublicHealth,
    deprecated=True,
    summary="Health (deprecated alias of /v1/health)",
)
