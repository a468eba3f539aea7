"""Grounding routes: ``POST /v1/check-grounding``, Vertex AI's check-grounding request and response
(:mod:`guardrail.grounding`), also at Vertex's own paths (``v1``, ``v1beta``, ``v1alpha``) so that a
Vertex client can point its base URL here."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse

from guardrail.apps.server.dependencies import State
from guardrail.apps.server.json_body import StrictJSONRoute
from guardrail.grounding import CheckGroundingRequest, CheckGroundingResponse, acheck_grounding_request

__all__ = ["VERTEX_PATH", "router"]

VERTEX_PATH = "/{version}/projects/{{project}}/locations/{{location}}/groundingConfigs/{{config}}:check"
"""Vertex AI's check-grounding path, formatted with the API version."""

router = APIRouter(tags=["grounding"], route_class=StrictJSONRoute)

_DOC: dict[str, Any] = {
    "response_model": CheckGroundingResponse,
    "response_model_exclude_none": True,
    "responses": {400: {"description": "Over one of Vertex's limits (named in the message)."}},
}


async def check(body: CheckGroundingRequest, state: State) -> JSONResponse:
    """How well the facts ground the answer candidate, in Vertex AI's shape (unset fields left out)."""
    result: CheckGroundingResponse = await acheck_grounding_request(body, state.require_verifier())
    return JSONResponse(result.to_vertex())


_IGNORED = "Vertex AI's name for it; ignored here (one service, one configuration)."


async def check_at_vertex_path(
    body: CheckGroundingRequest,
    state: State,
    project: Annotated[str, Path(description=f"The Google Cloud project: {_IGNORED}")],
    location: Annotated[str, Path(description=f"The location (global): {_IGNORED}")],
    config: Annotated[str, Path(description=f"The grounding config (default_grounding_config): {_IGNORED}")],
) -> JSONResponse:
    """:func:`check` at Vertex AI's own path; the path parameters are declared (so the OpenAPI
    document says what the path holds) and ignored."""
    return await check(body, state)


router.add_api_route(
    "/v1/check-grounding",
    check,
    methods=["POST"],
    summary="Check grounding (Vertex AI compatible)",
    description="How well the facts ground the answer candidate, in Vertex AI's check-grounding shape.",
    **_DOC,
)
for _version in ("v1", "v1beta", "v1alpha"):
    router.add_api_route(
        VERTEX_PATH.format(version=_version),
        check_at_vertex_path,
        methods=["POST"],
        summary=f"Check grounding at Vertex AI's {_version} path",
        description="The same as /v1/check-grounding; project, location and config are ignored.",
        include_in_schema=_version == "v1",
        **_DOC,
    )
