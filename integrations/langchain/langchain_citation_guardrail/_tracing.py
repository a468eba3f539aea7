"""The guard's child runs: the verifier's ``fetch`` and ``judge`` stages, and the ``citation_report``.

Only when a callback handler (a tracer) is attached to the guard's run; otherwise nothing is
created. Stage runs come from the core's stage observer (:func:`guardrail.observing`).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForChainRun, CallbackManagerForChainRun

from guardrail import AnswerReport, StageSpan, observing

REPORT_RUN_NAME = "citation_report"
"""Name of the child run whose outputs hold the report (``outputs["citation_report"]``)."""

RunManager = CallbackManagerForChainRun | AsyncCallbackManagerForChainRun


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class _ChildRun:
    """A child run of the guard's run, as the core's :class:`~guardrail.StageSpan`."""

    def __init__(self, run: RunManager) -> None:
        self.run = run

    async def end(self, outputs: Mapping[str, Any]) -> None:
        await _maybe_await(self.run.on_chain_end(dict(outputs)))

    async def fail(self, error: BaseException) -> None:
        await _maybe_await(self.run.on_chain_error(error))


class RunObserver:
    """Shows each stage the verifier runs as a child run of ``parent`` (a guard's run)."""

    def __init__(self, parent: RunManager) -> None:
        self.parent = parent

    async def start(self, stage: str, inputs: Mapping[str, Any]) -> StageSpan:
        run = await _maybe_await(self.parent.get_child().on_chain_start(None, dict(inputs), name=stage))
        return _ChildRun(run)


def traced(run_manager: RunManager | None) -> bool:
    """Whether a handler is attached to the run (child runs are worth creating)."""
    return run_manager is not None and bool(run_manager.handlers)


@contextmanager
def stage_runs(run_manager: RunManager | None) -> Iterator[None]:
    """Within the block, the verifier's stages become child runs of ``run_manager`` (when traced)."""
    with observing(RunObserver(run_manager) if run_manager is not None and traced(run_manager) else None):
        yield


async def report_run(run_manager: RunManager | None, answer: str, report: AnswerReport) -> None:
    """A ``citation_report`` child run: the answer checked in, the report out (when traced), with the
    answer-level figures beside it for a tracer's columns: ``overall``, ``support_score`` (None when no
    claim was checked) and ``kind_counts`` (claims per kind)."""
    if run_manager is None or not traced(run_manager):
        return
    child = await _maybe_await(run_manager.get_child().on_chain_start(None, {"answer": answer}, name=REPORT_RUN_NAME))
    outputs = {
        REPORT_RUN_NAME: report.model_dump(mode="json"),
        "overall": report.overall.value,
        "support_score": report.support_score,
        "kind_counts": dict(report.kind_counts),
    }
    await _maybe_await(child.on_chain_end(outputs))
