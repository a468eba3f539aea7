"""The service's routes, one router per concern; :data:`ROUTERS` in the order the app includes
them."""

from __future__ import annotations

from fastapi import APIRouter

from guardrail.apps.server.routes.grounding import router as grounding_router
from guardrail.apps.server.routes.service import router as service_router
from guardrail.apps.server.routes.verification import router as verification_router

__all__ = ["ROUTERS", "grounding_router", "service_router", "verification_router"]

ROUTERS: tuple[APIRouter, ...] = (service_router, verification_router, grounding_router)
