"""Routes about the service itself: ``GET /health`` (open without the bearer token)."""

from __future__ import annotations

from fastapi import APIRouter

from guardrail.apps.server.dependencies import State
from guardrail.apps.server.models import Health

__all__ = ["router"]

router = APIRouter(tags=["service"])


@router.get("/health", response_model=Health)
async def health(state: State) -> Health:
    """Which judge, embedder and fetcher the service uses, and whether each is loaded."""
    return state.health()
