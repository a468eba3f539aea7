"""Verification routes: ``POST /v1/verify`` (one claim and its URLs; ``POST /verify`` is its
deprecated alias) and ``POST /v1/guard`` (an answer, its sources and a policy)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter

from guardrail.apps.server.dependencies import State
from guardrail.apps.server.json_body import StrictJSONRoute
from guardrail.apps.server.models import GuardRequest, VerifyRequest
from guardrail.core.policy import GuardedAnswer, apply_policy
from guardrail.core.schema import ClaimReport

__all__ = ["router"]

router = APIRouter(route_class=StrictJSONRoute)


@router.post("/v1/verify", response_model=ClaimReport, tags=["verify"])
async def verify(body: VerifyRequest, state: State) -> ClaimReport:
    """Verify one claim against each URL it cites: one verdict per unique URL, and the overall label
    (422 above ``GUARDRAIL_MAX_URLS`` unique URLs, 413 for a claim above ``GUARDRAIL_MAX_ANSWER_CHARS``)."""
    return await state.require_verifier().averify(body.claim, body.urls)


router.add_api_route(
    "/verify",
    verify,
    methods=["POST"],
    response_model=ClaimReport,
    tags=["verify"],
    deprecated=True,
    summary="Verify (deprecated alias of /v1/verify)",
)


@router.post("/v1/guard", response_model=GuardedAnswer, tags=["guard"])
async def guard(body: GuardRequest, state: State) -> GuardedAnswer:
    """Verify every citation of an answer and apply the policy: badges, stripped links or a block;
    a repairing policy mends citations first (``repairs``). 413 for an answer above
    ``GUARDRAIL_MAX_ANSWER_CHARS``, 422 above the claim, URL or check limits."""
    # The body's policy and sources were checked when it was validated (422); what the verifier
    # raises goes to the one mapping of exceptions to statuses (errors.EXCEPTION_HANDLERS).
    policy = body.build_policy()
    report = await state.require_verifier().averify_answer(
        body.answer, body.sources, answer_date=body.answer_date, suggest=True if policy.repair else None
    )
    return await asyncio.to_thread(apply_policy, report, policy, body.format)
