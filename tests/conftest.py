"""Shared fixtures: the loopback page server and settings that never reach the internet."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Never let a developer's real keys or tokens leak into a test run.
for _var in (
    "CRAWLBASE_TOKEN",
    "CRAWLBASE_JS_TOKEN",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GUARDRAIL_JUDGE",
    "GUARDRAIL_API_KEY",
    "GUARDRAIL_ALLOW_PRIVATE_HOSTS",
    "OPENAI_BASE_URL",
):
    os.environ.pop(_var, None)
# The CLI keeps a page cache and an audit store in the user cache folder by default: tests
# must neither write to the developer's nor share cached pages between tests. A test that
# wants a store points GUARDRAIL_CACHE / GUARDRAIL_AUDIT_DB at its own tmp_path.
os.environ["GUARDRAIL_CACHE"] = "off"
os.environ["GUARDRAIL_AUDIT_DB"] = "off"

from tests.fixtures.llm_server import FakeLLMServer  # noqa: E402
from tests.fixtures.pages import default_routes  # noqa: E402
from tests.fixtures.server import FixtureServer  # noqa: E402


@pytest.fixture(scope="session")
def pages() -> Iterator[FixtureServer]:
    """The fixture page server on 127.0.0.1, shared by the whole test session."""
    server = FixtureServer(default_routes()).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    """A fresh local server speaking the OpenAI and Anthropic protocols, for one test."""
    with FakeLLMServer() as server:
        yield server
