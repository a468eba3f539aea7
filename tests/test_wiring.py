"""The composition root's wiring: ``Verifier(...)`` and ``build_verifier(...)`` get the same stages
from :func:`guardrail.runtime.wire_stages` (the shape of the code: tests/test_architecture.py)."""

from __future__ import annotations

import pytest

from guardrail import Settings, Verifier, build_verifier
from guardrail.fetch.once import FetchOnce
from guardrail.judges._batching import BatchingJudge
from guardrail.runtime import wire_stages
from guardrail.settings import ConfigurationError
from guardrail.testing import HashEmbedder, OverlapJudge
from tests.fakes import static_pages


@pytest.mark.parametrize("build", ["shorthand", "build_verifier"])
def test_both_ways_wrap_the_given_stages_alike(build: str) -> None:
    fetcher, judge, embedder = static_pages(), OverlapJudge(), HashEmbedder()
    stages = {"fetcher": fetcher, "judge": judge, "embedder": embedder, "batch_judge_calls": True}
    if build == "shorthand":
        verifier = Verifier(settings=Settings(), **stages)
    else:
        verifier = build_verifier(Settings(), cache=False, audit=False, **stages)
    assert isinstance(verifier.fetcher, FetchOnce) and verifier.fetcher.inner is fetcher
    assert isinstance(verifier.judge, BatchingJudge) and verifier.judge.inner is judge
    assert verifier.embedder is embedder and verifier.batch_judge_calls
    assert Verifier(settings=Settings(), fetcher=fetcher, judge=judge, embedder=embedder).judge is judge


def test_the_settings_judge_is_built_on_first_use_not_with_the_verifier() -> None:
    settings = Settings.from_env({"GUARDRAIL_JUDGE": "openai"})  # no OPENAI_API_KEY: building it fails
    verifier = Verifier(settings=settings, fetcher=static_pages(), embedder=HashEmbedder())
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        _ = verifier.judge


def test_built_stages_are_run_as_they_are() -> None:
    settings = Settings()
    stages = wire_stages(settings, fetcher=static_pages(), judge=OverlapJudge(), embedder=HashEmbedder())
    verifier = Verifier(settings=settings, stages=stages)
    assert (
        verifier.fetcher is stages.fetcher and verifier.judge is stages.judge and verifier.embedder is stages.embedder
    )
    with pytest.raises(ValueError, match="not both"):
        Verifier(settings=settings, stages=stages, judge=OverlapJudge())
