"""The Judge protocol: a claim and its retrieved passages in, a verdict out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from guardrail.core.schema import JudgeRequest, JudgeVerdict


@runtime_checkable
class Judge(Protocol):
    """Decides whether passages support, contradict or do not address a claim.

    ``judge`` returns one verdict per request, in order, and never raises for a
    single bad answer: a failure is ``not_found`` with reason ``judge_error``.
    A supported/contradicted verdict must carry a quote copied from the passages.

    ``cpu_bound`` says whether judging runs on this machine's cores (an embedded model: calls side
    by side are no faster, so callers queue them) or waits on a remote model (calls may overlap).
    ``load`` loads a model now rather than on the first call (a no-op for remote judges).
    """

    name: str
    model: str
    cpu_bound: bool

    def load(self) -> None:
        """Load what the judge needs now (weights), so that the first call is not slow."""
        ...

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """Judge every request; batching across requests is the judge's business."""
        ...
