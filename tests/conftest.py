"""Shared fixtures: the loopback page server and settings that never reach the internet."""

from __future__ import annotations

import gc
import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Never let a developer's keys, tokens or own choices (GUARDRAIL_JUDGE_ROUNDS, GUARDRAIL_TOP_K...)
# reach a test run: every variable the settings read is cleared.
from guardrail.settings import Settings

for _var in Settings.variables():
    os.environ.pop(_var, None)
# The CLI keeps a page cache and an audit store in the user cache folder by default: tests
# must neither write to the developer's nor share cached pages between tests. A test that
# wants a store points GUARDRAIL_CACHE / GUARDRAIL_AUDIT_DB at its own tmp_path.
os.environ["GUARDRAIL_CACHE"] = "off"
os.environ["GUARDRAIL_AUDIT_DB"] = "off"

from guardrail.testing import LoopbackSite  # noqa: E402
from tests.fixtures.llm_server import FakeLLMServer  # noqa: E402
from tests.fixtures.pages import default_routes  # noqa: E402

# Tests never ask the system resolver about a real name (that is the network, and the answer
# varies): a name other than localhost reaching socket.getaddrinfo fails the test that asked and
# is answered "no such name" at once. Tests that need DNS pass the code a resolver of their own.
_LOCAL_NAMES = frozenset({"localhost", ""})
_real_getaddrinfo = socket.getaddrinfo
_asked: list[str] = []


def _offline_getaddrinfo(host: object, *args: Any, **kwargs: Any) -> Any:
    name = host.decode() if isinstance(host, bytes) else host
    if isinstance(name, str) and name.lower().rstrip(".") not in _LOCAL_NAMES and not _is_ip(name):
        _asked.append(name)
        raise socket.gaierror(socket.EAI_NONAME, f"tests may not resolve {name!r}")
    return _real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    return True


socket.getaddrinfo = _offline_getaddrinfo


@pytest.fixture(autouse=True)
def _no_real_dns() -> Iterator[None]:
    """Fails a test that asked the system resolver about a real name (see above)."""
    start = len(_asked)
    yield
    asked = _asked[start:]
    if asked:
        pytest.fail(f"the test asked the system resolver for {sorted(set(asked))}; pass a resolver instead")


@pytest.fixture
def settled_heap() -> Iterator[None]:
    """The suite's heap moved out of the collector's reach for one timing test.

    Late in a full run the process holds millions of objects (models, the integrations' imports); a
    full collection triggered by the test's own allocations then holds the GIL for most of a second
    (measured: 0.9 s for 3 M objects), which a loop-latency test would read as a blocked loop.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.fixture(scope="session")
def pages() -> Iterator[LoopbackSite]:
    """The fixture page server on 127.0.0.1, shared by the whole test session."""
    server = LoopbackSite(default_routes()).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    """A fresh local server speaking the OpenAI and Anthropic protocols, for one test."""
    with FakeLLMServer() as server:
        yield server
