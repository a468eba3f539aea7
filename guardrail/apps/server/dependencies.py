"""FastAPI dependencies: how a route gets the service state of the app serving it."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from starlette.applications import Starlette

from guardrail.apps.server.state import ServiceState

__all__ = ["State", "get_state", "state_of"]


def state_of(app: Starlette) -> ServiceState:
    """The :class:`ServiceState` that :func:`~guardrail.apps.server.create_app` put on ``app``."""
    state = app.state.guardrail
    if not isinstance(state, ServiceState):
        raise TypeError(f"app.state.guardrail is a {type(state).__name__}, not a ServiceState")
    return state


async def get_state(request: Request) -> ServiceState:
    """The service state of the app serving ``request`` (a FastAPI dependency; ``async`` because
    FastAPI runs a plain ``def`` dependency in its thread pool, a thread hop on every request)."""
    return state_of(request.app)


State = Annotated[ServiceState, Depends(get_state)]
"""A route parameter annotated ``State`` gets the service state."""
