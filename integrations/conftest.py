"""What the integration packages' tests share: an environment that never reaches the developer's
keys, page cache or audit store, and the loopback page site. Built on the public test doubles
(:mod:`guardrail.testing`) only, as a user's own tests would be: nothing from the repository's
``tests/`` package (tests/test_integration_imports.py holds that)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from guardrail.apps.demo import UNRELATED, demo_routes
from guardrail.settings import Settings
from guardrail.testing import LoopbackSite, Route

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# A developer's keys, tokens and own choices (GUARDRAIL_JUDGE_ROUNDS...) never reach a test run.
for _var in Settings.variables():
    os.environ.pop(_var, None)
# A guard built from the environment keeps a page cache and an audit store in the user's cache
# folder by default: tests neither write there nor share cached pages.
os.environ["GUARDRAIL_CACHE"] = "off"
os.environ["GUARDRAIL_AUDIT_DB"] = "off"


@pytest.fixture(scope="session")
def pages() -> Iterator[LoopbackSite]:
    """The demo pages (/boiling, /old-report, /titanic), an unrelated page (/tomatoes) and a dead
    link (/gone-404) on 127.0.0.1, shared by the session."""
    routes = {
        **demo_routes(),
        "/tomatoes": Route(body=UNRELATED),
        "/gone-404": Route(status=404, body="<html><body><h1>404 Not Found</h1></body></html>"),
    }
    with LoopbackSite(routes) as site:
        yield site
