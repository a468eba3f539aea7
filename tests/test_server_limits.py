"""The service under hostile requests: bodies that are not strict JSON, input over the work limits,
422s that do not echo, a JSON 500, /health without the token, a locked or damaged audit store,
the request deadline, a client leaving mid-request, slow bodies and heads, oversized heads and
SIGTERM. A real uvicorn on loopback where the wire matters; pages from loopback servers."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from guardrail import Settings, Verifier
from guardrail.apps.server import create_app
from guardrail.apps.server.dependencies import state_of
from guardrail.apps.server.models import PresetName
from guardrail.apps.server.protocol import MAX_HEAD_BYTES, ConnectionLimits, GuardedH11Protocol
from guardrail.core.extract import extract_claims
from guardrail.core.policy import POLICY_PRESETS
from guardrail.fetch.crawlbase import CrawlbaseFetcher
from guardrail.store import AuditStore
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge, Route
from tests.fakes import SlowCpuJudge
from tests.fixtures.crawlbase_server import NORMAL_TOKEN, FakeCrawlbase, FakeTarget
from tests.fixtures.tasks import running_frame
from tests.fixtures.uvicorn_server import served as uvicorn_served
from tests.test_audit_writer import HeldLock
from tests.test_store import damage

CLAIM = "At sea level pure water boils at 100 degrees Celsius."
NO_STORES = {"cache_path": "off", "audit_path": "off"}


def fake_verifier(judge: OverlapJudge | None = None, **settings: object) -> Verifier:
    return Verifier(
        judge=judge or OverlapJudge(),
        embedder=HashEmbedder(),
        settings=Settings(allow_private_hosts=True, **NO_STORES, **settings),  # type: ignore[arg-type]
    )


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(verifier=fake_verifier(max_urls=3, max_answer_chars=500, max_claims=3))) as c:
        yield c


def assert_422(response: httpx.Response, loc: list[object]) -> dict[str, object]:
    assert response.status_code == 422, response.text
    body = response.json()
    assert loc in [e["loc"] for e in body["detail"]], body
    assert body["error"]["code"] == 422 and body["error"]["status"] == "INVALID_ARGUMENT"
    return body


# -- bodies that are not strict JSON ----------------------------------------------------------------


def post_raw(client: TestClient, path: str, raw: bytes) -> httpx.Response:
    return client.post(path, content=raw, headers={"Content-Type": "application/json"})


def test_nan_and_infinity_answer_422_on_every_route(client: TestClient) -> None:
    bodies = {
        "/verify": b'{"claim": "x", "urls": [NaN]}',
        "/v1/guard": b'{"answer": "A claim [1].", "sources": [Infinity]}',
        "/v1/check-grounding": b'{"answerCandidate": "A.", "groundingSpec": {"citationThreshold": -Infinity}}',
    }
    for path, raw in bodies.items():
        body = assert_422(post_raw(client, path, raw), ["body"])
        assert "not a JSON number" in body["error"]["message"], body  # type: ignore[index]


def test_a_lone_surrogate_answers_422_naming_the_field_before_any_work(client: TestClient, pages: LoopbackSite) -> None:
    url = pages.url("/boiling")
    with pages.counting() as hits:
        claim = assert_422(
            post_raw(client, "/verify", b'{"claim": "Water \\ud800 boils", "urls": ["%s"]}' % url.encode()),
            ["body", "claim"],
        )
        assert_422(
            post_raw(
                client,
                "/v1/guard",
                b'{"answer": "A [1].", "sources": [{"url": "%s", "title": "\\udfff"}]}' % url.encode(),
            ),
            ["body", "sources", 0, "title"],
        )
        assert_422(
            post_raw(client, "/v1/check-grounding", b'{"answerCandidate": "A.", "facts": [{"factText": "\\ud83d"}]}'),
            ["body", "facts", 0, "factText"],
        )
    assert hits == {}  # nothing was fetched
    assert "lone surrogate" in claim["error"]["message"]  # type: ignore[index]
    # A surrogate pair is a real character and passes.
    ok = post_raw(
        client,
        "/verify",
        b'{"claim": "Water \\ud83d\\ude00 boils at 100 degrees Celsius.", "urls": ["%s"]}' % url.encode(),
    )
    assert ok.status_code == 200, ok.text


def test_bytes_that_are_not_utf8_and_deep_nesting_answer_422(client: TestClient) -> None:
    assert_422(post_raw(client, "/verify", b'{"claim": "caf\xe9", "urls": ["u"]}'), ["body"])
    deep = b'{"claim": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    body = assert_422(post_raw(client, "/verify", deep), ["body"])
    assert "nested too deeply" in body["error"]["message"]  # type: ignore[index]
    assert_422(post_raw(client, "/verify", b"{not json"), ["body", 1])


def test_a_422_never_echoes_the_input(client: TestClient) -> None:
    big = "x" * 1_000_000
    for path, body in (
        ("/verify", {"claim": big, "urls": big}),
        ("/v1/guard", {"answer": "A claim [1].", "policy": big}),
        ("/v1/guard", {"answer": "A claim [1].", "policy": {"preset": "default", "supported": big}}),
    ):
        response = client.post(path, json=body)
        assert response.status_code == 422, response.text
        assert len(response.content) < 4000 and "x" * 400 not in response.text
        assert all("input" not in e for e in response.json()["detail"])


def test_a_422_names_the_field_and_the_rule_never_the_value(client: TestClient) -> None:
    marker = "SECRET-VALUE-7f3a"
    bodies = [
        ("/v1/guard", {"answer": "A claim [1].", "policy": marker}),  # an unknown preset's name
        ("/v1/guard", {"answer": "A claim [1].", "policy": {"preset": marker}}),
        ("/v1/guard", {"answer": "A claim [1].", "policy": {"supported": marker}}),  # was input_value='...'
        ("/v1/guard", {"answer": "A claim [1].", "policy": {"not_found": ["strip", marker]}}),
        ("/v1/guard", {"answer": "A claim [1].", "sources": [marker]}),  # not a URL
        ("/v1/guard", {"answer": "A claim [1].", "sources": [{"url": 5, "title": marker}]}),
        ("/verify", {"claim": marker, "urls": [marker, 5]}),
    ]
    for path, body in bodies:
        response = client.post(path, json=body)
        assert response.status_code == 422, (body, response.text)
        assert marker not in response.text and "input_value" not in response.text, response.text
        assert all(e["loc"][0] == "body" and e["msg"] for e in response.json()["detail"])
    policy = client.post("/v1/guard", json={"answer": "A claim [1].", "policy": {"supported": marker}}).json()
    assert "not a valid policy: each action is keep, annotate, strip or block" in policy["error"]["message"]


def test_false_is_not_a_number_for_the_float_fields(client: TestClient) -> None:
    guard = client.post("/v1/guard", json={"answer": "A claim [1].", "policy": {"min_confidence": False}})
    assert_422(guard, ["body", "policy", "PolicySpec", "min_confidence"])
    for field in ("citationThreshold", "antiCitationThreshold"):
        spec = {field: False}
        body = {"answerCandidate": "A.", "facts": [], "groundingSpec": spec}
        assert_422(client.post("/v1/check-grounding", json=body), ["body", "groundingSpec", field])
    ok = client.post("/v1/guard", json={"answer": "A claim [1].", "policy": {"min_confidence": 1}})
    assert ok.status_code == 200, ok.text  # an integer is still a number


def test_the_preset_names_the_service_accepts_are_the_policy_presets() -> None:
    assert set(typing.get_args(PresetName)) == set(POLICY_PRESETS)


def test_openapi_declares_the_vertex_path_parameters(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    vertex = paths["/v1/projects/{project}/locations/{location}/groundingConfigs/{config}:check"]["post"]
    declared = {(p["name"], p["in"], p["required"]) for p in vertex["parameters"]}
    assert declared == {("project", "path", True), ("location", "path", True), ("config", "path", True)}
    answer = client.post(
        "/v1beta/projects/p/locations/global/groundingConfigs/default_grounding_config:check",
        json={"answerCandidate": "Ice is cold.", "facts": [{"factText": "Ice is cold."}]},
    )
    assert answer.status_code == 200, answer.text


def test_our_configuration_failure_answers_503_on_every_route(pages: LoopbackSite) -> None:
    """Crawlbase rejecting the token is a ConfigurationError, a ValueError: /v1/guard once caught it
    as bad input (422) while /verify answered 503."""
    api = FakeCrawlbase().start()
    try:
        fetcher = CrawlbaseFetcher("rejected-token", api_url=api.api_url, retry_base_delay=0.01)
        verifier = Verifier(
            fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder(), settings=Settings(**NO_STORES)
        )
        url = "https://example.org/water"
        with TestClient(create_app(verifier=verifier)) as c:
            answers = [
                c.post("/verify", json={"claim": CLAIM, "urls": [url]}),
                c.post("/v1/guard", json={"answer": f"{CLAIM} [1]", "sources": [url]}),
                c.post("/v1/guard", json={"answer": f"{CLAIM} [water]({url})", "policy": "strict"}),
            ]
    finally:
        api.stop()
    for response in answers:
        assert response.status_code == 503, response.text
        assert "CRAWLBASE_TOKEN" in response.json()["detail"] and "rejected-token" not in response.text
        assert response.json()["error"]["status"] == "UNAVAILABLE"


def test_an_unhandled_error_answers_json_500_in_the_house_shape() -> None:
    app = create_app(verifier=fake_verifier())

    async def boom() -> None:
        raise RuntimeError("secret internals /etc/passwd")

    app.add_api_route("/boom", boom)  # a route of the test's own, failing as a bug would
    with TestClient(app, raise_server_exceptions=False) as c:
        response = c.get("/boom")
    assert response.status_code == 500 and response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["error"] == {"code": 500, "message": body["detail"], "status": "INTERNAL"}
    assert "secret internals" not in response.text


# -- the work limits ------------------------------------------------------------------------------


def test_requests_over_the_limits_answer_413_or_422_naming_the_limit_before_fetching(
    client: TestClient, pages: LoopbackSite
) -> None:
    u = pages.url
    with pages.counting() as hits:
        long = client.post("/v1/guard", json={"answer": "Water boils. " * 50})
        assert long.status_code == 413 and "GUARDRAIL_MAX_ANSWER_CHARS" in long.json()["detail"]
        assert long.json()["error"]["status"] == "INVALID_ARGUMENT"
        claim = client.post("/verify", json={"claim": "x" * 501, "urls": [u("/boiling")]})
        assert claim.status_code == 413 and "claim has 501 characters" in claim.json()["detail"]
        urls = [u(f"/boiling?{n}") for n in range(4)]
        verify = client.post("/verify", json={"claim": CLAIM, "urls": urls})
        assert verify.status_code == 422 and "4 unique URLs" in verify.json()["detail"]
        assert "GUARDRAIL_MAX_URLS" in verify.json()["detail"]
        answer = " ".join(f"Claim {n} holds [{n}]({url})." for n, url in enumerate(urls))
        guard = client.post("/v1/guard", json={"answer": answer})
        assert guard.status_code == 422 and "GUARDRAIL_MAX_URLS" in guard.json()["detail"]
        claims = client.post(
            "/v1/guard",
            json={
                "answer": "Ice is cold. Fire is hot. Sun is bright. Sea is salty.",
                "sources": [{"text": "Ice is cold."}],
            },
        )
        assert claims.status_code == 422 and "4 claims" in claims.json()["detail"]
        grounding = client.post(
            "/v1/check-grounding",
            json={
                "answerCandidate": "Ice is cold. Fire is hot. Sun is bright. Sea is wet.",
                "facts": [{"factText": "Ice is cold."}],
            },
        )
        assert grounding.status_code == 422 and "GUARDRAIL_MAX_CLAIMS" in grounding.json()["detail"]
    assert hits == {}
    assert (
        client.post("/verify", json={"claim": CLAIM, "urls": [u("/boiling")] * 50}).status_code == 200
    )  # unique URLs count


# -- /health ----------------------------------------------------------------------------------------


def test_health_without_the_token_shows_the_status_only(tmp_path: Path) -> None:
    key = "health-token"
    settings = Settings(
        api_key=key,  # type: ignore[arg-type]
        judge="openai",
        openai_api_key="sk-unused",  # type: ignore[arg-type]
        openai_base_url="http://127.0.0.1:9/v1",
        cache_path=tmp_path / "pages.sqlite3",  # type: ignore[arg-type]
        audit_path=tmp_path / "audit.sqlite3",  # type: ignore[arg-type]
    )
    with TestClient(create_app(settings=settings, warm=False)) as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {key}"}):
            public = c.get("/health", headers=headers)
            assert public.status_code == 200 and public.json() == {"status": "ok"}
            assert str(tmp_path) not in public.text and "ssrf" not in public.text
        full = c.get("/health", headers={"Authorization": f"Bearer {key}"}).json()
    assert full["fetcher"]["cache"] == str(tmp_path / "pages.sqlite3") and full["fetcher"]["ssrf_guard"] is True
    assert full["audit"]["path"] == str(tmp_path / "audit.sqlite3") and full["audit"]["ok"] is True
    assert full["auth"] is True


# -- the audit store ----------------------------------------------------------------------------------


def audit_settings(tmp_path: Path) -> Settings:
    return Settings(
        judge="openai",
        openai_api_key="sk-unused",  # type: ignore[arg-type]
        openai_base_url="http://127.0.0.1:9/v1",
        allow_private_hosts=True,
        cache_path="off",  # type: ignore[arg-type]
        audit_path=tmp_path / "audit.sqlite3",  # type: ignore[arg-type]
    )


def test_a_locked_audit_store_neither_freezes_the_service_nor_loses_rows(tmp_path: Path, pages: LoopbackSite) -> None:
    path = tmp_path / "audit.sqlite3"
    AuditStore(path).count()
    body = {"claim": CLAIM, "urls": [pages.url("/gone-404")]}
    with TestClient(create_app(settings=audit_settings(tmp_path), warm=False)) as c:
        lock = HeldLock(path)
        try:
            start = time.perf_counter()
            for _ in range(5):
                assert c.post("/verify", json=body).status_code == 200
            # Answered while the lock is held: a request writing its row inline would wait out the
            # store's busy timeout (30 s) each; the bound is far from both, so load cannot trip it.
            assert time.perf_counter() - start < 20
            deadline = time.monotonic() + 10
            while (health := c.get("/health").json())["status"] == "ok":
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert health["status"] == "degraded" and "locked" in health["audit"]["error"]
            assert health["audit"]["pending"] == 5 and health["audit"]["lost"] == 0
        finally:
            lock.release()
        deadline = time.monotonic() + 15
        # ok again from the first write that succeeds; the rows kept are written a few at a time.
        while (health := c.get("/health").json())["status"] != "ok" or health["audit"]["pending"]:
            assert time.monotonic() < deadline, health
            time.sleep(0.05)
        assert health["audit"]["written"] == 5 and health["audit"]["lost"] == 0
    assert AuditStore(path).count() == 5


def test_a_damaged_audit_store_at_start_is_reported_not_a_crash(tmp_path: Path, pages: LoopbackSite) -> None:
    path = tmp_path / "audit.sqlite3"
    store = AuditStore(path)
    store.count()
    store.close()
    damage(path)
    with TestClient(create_app(settings=audit_settings(tmp_path), warm=False)) as c:
        health = c.get("/health").json()
        assert health["status"] == "degraded" and "malformed" in health["audit"]["error"]
        assert c.post("/verify", json={"claim": CLAIM, "urls": [pages.url("/gone-410")]}).status_code == 200
        assert c.get("/health").json()["audit"]["pending"] == 1  # kept, not dropped silently


# -- a real uvicorn on loopback -----------------------------------------------------------------------


class QuickHead(GuardedH11Protocol):
    head_timeout = 0.5


@contextmanager
def served(app: FastAPI) -> Iterator[tuple[str, int]]:
    """``app`` on uvicorn with the protocol ``guardrail serve`` uses (a quicker head deadline)."""
    with uvicorn_served(app, http=QuickHead, h11_max_incomplete_event_size=MAX_HEAD_BYTES) as where:
        yield where


def many_claims(n: int) -> dict[str, object]:
    facts = [{"text": f"Water boils at {k} degrees in test {k}."} for k in range(5)]
    answer = " ".join(f"Water boils at {k} degrees in case {k}." for k in range(n))
    return {"answer": answer, "sources": facts}


def test_work_stops_when_the_client_leaves(tmp_path: Path) -> None:
    judge = SlowCpuJudge(0.1)
    app = create_app(verifier=fake_verifier(judge, max_answer_chars=200_000, max_claims=2000, max_checks=20_000))
    inflight = app.state.inflight
    with served(app) as (host, port):
        raw = json.dumps(many_claims(1200)).encode()  # 6000 pairs: 188 chunks of 32, 19 s of judging
        with socket.create_connection((host, port)) as conn:
            conn.sendall(
                b"POST /v1/guard HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(raw), raw)
            )
            deadline = time.monotonic() + 20
            # A chunk of the request is being judged: the warm-up is the first call, and a chunk
            # whose worker thread has begun is one the cancellation cannot take back.
            while not (any(len(call) > 1 for call in judge.calls) and judge.started > 1):
                assert time.monotonic() < deadline
                time.sleep(0.01)
        # The client is gone: the server ends the request (its task leaves the in-flight set) and
        # the judge's worker finishes at most the chunk it is on. A run that went on would stay in
        # flight for all 188 chunks, past the wait below. (A chunk cancelled before a pool thread
        # took it up never starts, so the wait is for the started ones, not for every call.)
        deadline = time.monotonic() + 15
        while inflight._tasks or judge.finished < judge.started:
            assert time.monotonic() < deadline, (len(inflight._tasks), len(judge.calls))
            time.sleep(0.01)
        assert len(judge.calls) < 94, len(judge.calls)  # stopped well before the end


def test_the_deadline_answers_504_and_stops_the_work(tmp_path: Path) -> None:
    # The page answers after a minute: only the deadline can answer before it (a 504, not a verdict).
    with LoopbackSite({"/slow": Route(body="<p>late</p>", delay=60.0)}) as site:
        app = create_app(verifier=fake_verifier(request_timeout=0.5))
        with TestClient(app) as c:
            response = c.post("/verify", json={"claim": CLAIM, "urls": [site.url("/slow")]})
            assert response.status_code == 504 and "GUARDRAIL_REQUEST_TIMEOUT" in response.json()["detail"]
            assert response.json()["error"]["status"] == "DEADLINE_EXCEEDED"
            assert c.get("/health").status_code == 200  # quick requests are not touched


def test_a_hung_crawlbase_api_is_a_fetch_timeout_in_a_200_not_a_504() -> None:
    """Crawlbase's 90 s call timeout and 180 s retry budget outlasted the request timeout (120 s),
    so a hung API answered every request 504. The service fits the call's deadline inside the
    request timeout and each page's fetch inside the deadline; here all of them, scaled down."""
    url = "https://example.org/water"
    api = FakeCrawlbase().start()
    api.targets[url] = FakeTarget(readable=CLAIM, delay=60.0)  # the API holds every call
    settings = Settings(
        request_timeout=5.0,  # deadline 4.5 s, a page's fetch 2.7 s
        crawlbase_token=NORMAL_TOKEN,
        crawlbase_api_url=api.api_url,
        judge="openai",  # never called: nothing is fetched to judge
        openai_api_key="sk-unused",
        openai_base_url="http://127.0.0.1:9/v1",
        **NO_STORES,  # type: ignore[arg-type]
    )
    try:
        app = create_app(settings=settings, warm=False)
        state_of(app).require_verifier()  # the judge resolved (its client imported) before the clock runs
        with TestClient(app) as c:
            response = c.post("/verify", json={"claim": CLAIM, "urls": [url]})
    finally:
        api.stop()
    assert response.status_code == 200, response.text
    verdict = response.json()["citations"][0]
    assert (verdict["label"], verdict["reason"]) == ("unreachable", "fetch_timeout"), verdict
    assert api.requests, "the fake Crawlbase API was never asked"


@pytest.mark.usefixtures("settled_heap")
def test_health_answers_while_a_heavy_request_is_extracting() -> None:
    """/health is answered while a heavy request's extraction is known to be running (its frame is
    on a thread's stack before /health is asked and still there once it is answered). Were
    extraction on the event loop, /health could only be answered after it returned."""
    app = create_app(verifier=fake_verifier(max_answer_chars=1_000_000, max_claims=40_000))
    answer = "Water boils at 100 degrees Celsius at sea level.\n\n" * 18_000  # seconds of extraction
    code = extract_claims.__code__
    with served(app) as (host, port):
        base = f"http://{host}:{port}"
        # A run where /health is slower than what is left of the extraction proves nothing either
        # way, so the heavy request is sent again (a loop-bound extraction can never pass).
        for _ in range(5):
            heavy = threading.Thread(
                target=lambda: httpx.post(base + "/v1/guard", json={"answer": answer}, timeout=120)
            )
            heavy.start()
            try:
                while (extracting := running_frame(code)) is None and heavy.is_alive():
                    time.sleep(0.001)
                if extracting is None:
                    continue
                assert httpx.get(base + "/health", timeout=120).status_code == 200
                if running_frame(code) is extracting:
                    return
            finally:
                heavy.join()
    pytest.fail("/health was never answered while a heavy request was extracting")


def test_a_slow_body_is_cut_off_with_408() -> None:
    app = create_app(verifier=fake_verifier(body_timeout=0.5))
    with served(app) as (host, port):
        conns = []
        for _ in range(20):  # slowloris: bodies promised and never sent
            conn = socket.create_connection((host, port), timeout=10)
            conn.sendall(
                b"POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
            )
            conns.append(conn)
        # Each answered, then closed by the server; one left waiting fails on its socket timeout (10 s).
        replies = [_read_to_close(conn) for conn in conns]
        assert all(r.startswith(b"HTTP/1.1 408") and b"GUARDRAIL_BODY_TIMEOUT" in r for r in replies), replies[0]
        for conn in conns:
            conn.close()


def _read_to_close(conn: socket.socket) -> bytes:
    data = b""
    while chunk := conn.recv(4096):
        data += chunk
    return data


def test_a_slow_head_is_cut_off_and_an_oversized_one_answers_431() -> None:
    with served(create_app(verifier=fake_verifier())) as (host, port):
        with socket.create_connection((host, port), timeout=10) as conn:
            conn.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # the head never ends
            assert conn.recv(4096).startswith(b"HTTP/1.1 408")  # a socket timeout (10 s) fails the test
        with socket.create_connection((host, port), timeout=10) as conn:
            conn.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1024 * 1024) + b"\r\n\r\n")
            assert conn.recv(4096).startswith(b"HTTP/1.1 431")
        assert httpx.get(f"http://{host}:{port}/health", timeout=5).status_code == 200


def test_an_idle_connection_is_closed_within_the_head_deadline() -> None:
    with served(create_app(verifier=fake_verifier())) as (host, port):
        with socket.create_connection((host, port), timeout=10) as conn:  # never sends a byte
            reply = _read_to_close(conn)  # a socket timeout (10 s) fails the test: it was kept open
        assert reply == b"" or reply.startswith(b"HTTP/1.1 408"), reply


def test_a_head_over_32_kib_in_one_write_answers_431() -> None:
    head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n"
    with served(create_app(verifier=fake_verifier())) as (host, port):
        with socket.create_connection((host, port), timeout=10) as conn:
            conn.sendall(head)  # complete in one write: h11 alone checks only incomplete heads
            reply = _read_to_close(conn)
        assert reply.startswith(b"HTTP/1.1 431"), reply[:200]
        assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["code"] == 431
        just_under = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 30_000 + b"\r\n\r\n"
        with socket.create_connection((host, port), timeout=10) as conn:
            conn.sendall(just_under)
            assert conn.recv(4096).startswith(b"HTTP/1.1 200")


class TwoPerClient(QuickHead):
    limits = ConnectionLimits(total=3, per_client=2)


def test_connections_over_the_caps_answer_503_naming_the_setting() -> None:
    app = create_app(verifier=fake_verifier())
    with uvicorn_served(app, http=TwoPerClient, h11_max_incomplete_event_size=MAX_HEAD_BYTES) as (host, port):
        mine = [socket.create_connection((host, port), timeout=10) for _ in range(3)]
        # Which one is third is the server's accept order: exactly one is refused at once, the
        # other two (idle) are closed at their head deadline.
        replies = [_read_to_close(conn) for conn in mine]
        refused = [r for r in replies if r.startswith(b"HTTP/1.1 503")]
        assert len(refused) == 1, replies
        assert b"GUARDRAIL_MAX_CLIENT_CONNECTIONS" in refused[0] and b"retry-after: 1" in refused[0].lower()
        # Two addresses, two connections each: within the per-client cap, one over the total.
        sources = ("127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2")
        others = [socket.create_connection((host, port), timeout=10, source_address=(a, 0)) for a in sources]
        replies = [_read_to_close(conn) for conn in others]
        refused = [r for r in replies if r.startswith(b"HTTP/1.1 503")]
        assert len(refused) == 1 and b"GUARDRAIL_MAX_CONNECTIONS" in refused[0], replies
        for conn in mine + others:
            conn.close()
        assert httpx.get(f"http://{host}:{port}/health", timeout=5).status_code == 200  # all closed: served again


def test_the_access_log_never_holds_a_query_string(caplog: pytest.LogCaptureFixture) -> None:
    access = logging.getLogger("uvicorn.access")
    with served(create_app(verifier=fake_verifier())) as (host, port):
        access.addHandler(caplog.handler)  # uvicorn's own config does not propagate it to the root
        try:
            with caplog.at_level(logging.INFO, logger="uvicorn.access"):
                response = httpx.get(f"http://{host}:{port}/health?token=sk-secret-123", timeout=5)
        finally:
            access.removeHandler(caplog.handler)
    assert response.status_code == 200
    lines = [r.getMessage() for r in caplog.records if r.name == "uvicorn.access"]
    assert any("GET /health HTTP/1.1" in line for line in lines), lines
    assert not any("sk-secret-123" in line or "?" in line for line in lines), lines


def test_a_kept_alive_connection_survives_a_refused_body() -> None:
    with (
        served(create_app(verifier=fake_verifier())) as (host, port),
        httpx.Client(base_url=f"http://{host}:{port}", timeout=10) as http,
    ):
        bad = http.post(
            "/verify", content=b'{"claim": "\\ud800", "urls": ["u"]}', headers={"Content-Type": "application/json"}
        )
        assert bad.status_code == 422
        assert http.get("/health").status_code == 200  # the same connection, not reset


def test_sigterm_stops_the_service_within_seconds(tmp_path: Path) -> None:
    """A uvicorn serving the app as ``guardrail serve`` configures it, with a request in flight."""
    with LoopbackSite({"/slow": Route(body="<p>late</p>", delay=60.0)}) as site:
        script = (
            "import uvicorn\n"
            "from guardrail import Settings, Verifier\n"
            "from guardrail.apps.server import create_app\n"
            "from guardrail.apps.server.protocol import GuardedH11Protocol\n"
            "from guardrail.testing import HashEmbedder, OverlapJudge\n"
            "settings = Settings(allow_private_hosts=True, cache_path='off', audit_path='off')\n"
            "app = create_app(verifier=Verifier(judge=OverlapJudge(), embedder=HashEmbedder(), settings=settings))\n"
            f"uvicorn.run(app, port={_free_port()}, log_level='warning', http=GuardedH11Protocol,"
            " timeout_graceful_shutdown=1)\n"
        )
        port = int(script.rsplit("port=", 1)[1].split(",", 1)[0])
        proc = subprocess.Popen([sys.executable, "-c", script], cwd=Path(__file__).parents[1], env={**os.environ})
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_until_up(base, proc)
            answers: list[httpx.Response] = []
            slow = threading.Thread(target=_post_into, args=(answers, base + "/verify", site.url("/slow")))
            slow.daemon = True
            slow.start()
            deadline = time.monotonic() + 20
            while not site.hits.get("/slow"):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)  # the request in flight waits a minute: only the graceful timeout ends it sooner
            slow.join(timeout=10)
            assert [a.status_code for a in answers] == [503]  # told, not reset
            assert answers[0].json()["error"]["status"] == "UNAVAILABLE" and answers[0].headers["retry-after"] == "1"
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _post_into(answers: list[httpx.Response], url: str, page: str) -> None:
    with contextlib.suppress(httpx.HTTPError):
        answers.append(httpx.post(url, json={"claim": CLAIM, "urls": [page]}, timeout=90))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_up(base: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, "the service exited"
        try:
            httpx.get(base + "/health", timeout=1)
            return
        except httpx.HTTPError:
            assert time.monotonic() < deadline, "the service did not start"
            time.sleep(0.1)
