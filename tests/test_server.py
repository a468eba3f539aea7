"""The HTTP service: routes through FastAPI's TestClient, and a real uvicorn on loopback.

Pages come from the loopback fixture server; the judge and embedder are the test doubles,
swapped in through ``create_app(verifier=...)``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from starlette.types import Receive, Send
from typer.testing import CliRunner

from guardrail import JudgeRequest, JudgeVerdict, Settings, Verifier, check_grounding
from guardrail.apps.cli import app as cli_app
from guardrail.apps.server import create_app
from guardrail.apps.server.middleware import BearerAuth, BodyLimit
from guardrail.judges._batching import BatchingJudge
from guardrail.store import AuditStore
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge, Route, ScriptedJudge
from tests.fixtures.tasks import innermost_code, until
from tests.fixtures.uvicorn_server import served
from tests.test_grounding import FACTS, TITANIC_EXAMPLES

CLAIM = "At sea level pure water boils at 100 degrees Celsius."
TITANIC = {
    "answerCandidate": TITANIC_EXAMPLES[0][0],
    "facts": FACTS,
    "groundingSpec": {"citationThreshold": "0.6", "enableClaimLevelScore": True},
}
NO_STORES = {"cache_path": "off", "audit_path": "off"}


def fake_verifier(**settings: object) -> Verifier:
    return Verifier(
        judge=OverlapJudge(),
        embedder=HashEmbedder(),
        settings=Settings(allow_private_hosts=True, **NO_STORES, **settings),  # type: ignore[arg-type]
    )


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(verifier=fake_verifier())) as c:
        yield c


# -- routes -----------------------------------------------------------------------------------


def test_health_reports_the_stages(client: TestClient) -> None:
    body = client.get("/health").json()
    assert body["status"] == "ok"
    assert body["judge"] == {
        "name": "overlap",
        "model": "overlap-test-judge",
        "loaded": None,
        "ready": True,
        "error": None,
    }
    assert body["embedder"]["name"] == "hash-embedder" and body["embedder"]["loaded"] is True  # warmed at start
    assert body["fetcher"]["name"] == "direct" and body["fetcher"]["ssrf_guard"] is False
    assert body["auth"] is False


def test_verify_returns_the_claim_report(client: TestClient, pages: LoopbackSite) -> None:
    urls = [pages.url("/boiling"), pages.url("/old-report"), pages.url("/gone-404")]
    response = client.post("/verify", json={"claim": CLAIM, "urls": urls})
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["overall"] == "contradicted"
    assert [(c["url"], c["label"]) for c in report["citations"]] == [
        (urls[0], "supported"),
        (urls[1], "contradicted"),
        (urls[2], "unreachable"),
    ]
    assert "100 degrees Celsius" in report["citations"][0]["evidence_quote"]
    assert report["citations"][2]["reason"] == "http_404"


def test_check_grounding_speaks_vertex(client: TestClient) -> None:
    expected = check_grounding(
        TITANIC["answerCandidate"], FACTS, TITANIC["groundingSpec"], verifier=fake_verifier()
    ).to_vertex()
    response = client.post("/v1/check-grounding", json=TITANIC)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body == expected
    assert set(body) == {"supportScore", "citedChunks", "claims"}  # unset fields left out, as Vertex does
    assert [c["citationIndices"] for c in body["claims"]] == [[0, 1], [0]]
    assert set(body["claims"][0]) == {
        "startPos",
        "endPos",
        "claimText",
        "citationIndices",
        "groundingCheckRequired",
        "score",
    }
    for version in ("v1", "v1beta", "v1alpha"):
        path = f"/{version}/projects/my-project/locations/global/groundingConfigs/default_grounding_config:check"
        assert client.post(path, json=TITANIC).json() == expected


def test_check_grounding_anti_citations(client: TestClient) -> None:
    body = {
        "answerCandidate": "It was released in 1998.",
        "facts": FACTS,
        "groundingSpec": {"enableAntiCitations": True},
    }
    result = client.post("/v1/check-grounding", json=body).json()
    assert result["claims"][0]["antiCitationIndices"] == [0] and result["contradictionScore"] == 1.0


def test_guard_applies_the_policy(client: TestClient, pages: LoopbackSite) -> None:
    answer = (
        "Pure water boils at 100 degrees Celsius at sea level [1]. Water boils at 100 degrees Celsius at sea level [2]."
    )
    sources = [pages.url("/boiling"), {"url": pages.url("/old-report"), "title": "Old report"}]
    annotated = client.post("/v1/guard", json={"answer": answer, "sources": sources, "policy": "annotate"})
    assert annotated.status_code == 200, annotated.text
    body = annotated.json()
    assert body["text"] == (
        "Pure water boils at 100 degrees Celsius at sea level [1] ✅ supported. "
        "Water boils at 100 degrees Celsius at sea level [2] ❌ contradicted."
    )
    assert body["report"]["label_counts"] == {"supported": 1, "contradicted": 1} and body["blocked"] is False
    stripped = client.post(
        "/v1/guard", json={"answer": answer, "sources": sources, "policy": {"preset": "strip"}}
    ).json()
    assert stripped["text"] == (
        "Pure water boils at 100 degrees Celsius at sea level [1]. Water boils at 100 degrees Celsius at sea level."
    )
    blocked = client.post("/v1/guard", json={"answer": answer, "sources": sources, "policy": "strict"}).json()
    assert blocked["blocked"] is True and "withheld" in blocked["text"]
    html = client.post(
        "/v1/guard",
        json={
            "answer": answer,
            "sources": sources,
            "policy": {"preset": "default", "supported": "annotate"},
            "format": "html",
        },
    ).json()
    assert '<span class="citation-verdict citation-verdict--supported"' in html["text"]


def test_guard_tells_a_page_that_could_not_be_checked_from_a_dead_one(pages: LoopbackSite) -> None:
    verifier = fake_verifier(fetch_attempts=1)
    answer = (
        f"Water boils at 100 degrees [a]({pages.url('/unavailable-503')}). Ice floats [b]({pages.url('/gone-404')})."
    )
    with TestClient(create_app(verifier=verifier)) as client:
        default = client.post("/v1/guard", json={"answer": answer}).json()
        down = pages.url("/unavailable-503")
        assert (
            default["text"] == f"Water boils at 100 degrees [a]({down}) ⚠ could not check. Ice floats b ⛔ dead link."
        )
        kinds = [v["kind"] for claim in default["report"]["claims"] for v in claim["verdicts"]]
        assert kinds == ["could_not_check", "dead_link"]
        policy = {"preset": "default", "could_not_check": "strip"}
        stripped = client.post("/v1/guard", json={"answer": answer, "policy": policy}).json()
        assert pages.url("/unavailable-503") not in stripped["text"]


def test_malformed_bodies_answer_422_naming_the_field(client: TestClient) -> None:
    def locs(response: httpx.Response) -> list[list[object]]:
        assert response.status_code == 422, response.text
        return [e["loc"] for e in response.json()["detail"]]

    assert ["body", "claim"] in locs(client.post("/verify", json={"urls": ["https://example.org/"]}))
    assert ["body", "urls"] in locs(client.post("/verify", json={"claim": "x", "urls": []}))
    assert ["body", "claim"] in locs(client.post("/verify", json={"claim": "  ", "urls": ["https://example.org/"]}))
    assert ["body", "facts"] in locs(client.post("/v1/check-grounding", json={"answerCandidate": "x", "facts": 3}))
    assert ["body", "answerCandidate"] in locs(client.post("/v1/check-grounding", json={"facts": []}))
    bad_threshold = {**TITANIC, "groundingSpec": {"citationThreshold": "high"}}
    assert ["body", "groundingSpec", "citationThreshold"] in locs(
        client.post("/v1/check-grounding", json=bad_threshold)
    )
    assert ["body", "policy"] in locs(client.post("/v1/guard", json={"answer": "A [1].", "policy": "lenient"}))
    assert ["body", "policy"] in locs(
        client.post("/v1/guard", json={"answer": "A [1].", "policy": {"supported": "explode"}})
    )
    bad_sources = client.post("/v1/guard", json={"answer": "A claim [1].", "sources": ["not a url"]})
    assert ["body", "sources"] in locs(bad_sources)
    assert "sources[0]" in bad_sources.text
    not_json = client.post("/verify", content=b"{not json", headers={"Content-Type": "application/json"})
    assert not_json.status_code == 422


def test_grounding_limits_answer_400_naming_the_limit(client: TestClient) -> None:
    too_many = client.post("/v1/check-grounding", json={"answerCandidate": "A claim.", "facts": ["x"] * 201})
    assert too_many.status_code == 422  # facts must be objects: a schema error, not a limit
    response = client.post(
        "/v1/check-grounding", json={"answerCandidate": "A claim.", "facts": [{"factText": "x"}] * 201}
    )
    assert response.status_code == 400
    body = response.json()
    assert "200" in body["detail"] and body["error"] == {
        "code": 400,
        "message": body["detail"],
        "status": "INVALID_ARGUMENT",
    }
    threshold = client.post("/v1/check-grounding", json={**TITANIC, "groundingSpec": {"citationThreshold": 1.2}})
    assert threshold.status_code == 400 and "citationThreshold" in threshold.json()["detail"]
    long_answer = client.post("/v1/check-grounding", json={**TITANIC, "answerCandidate": "word " * 5000})
    assert long_answer.status_code == 400 and "4096" in long_answer.json()["detail"]


def test_oversized_body_answers_413(pages: LoopbackSite) -> None:
    with TestClient(create_app(verifier=fake_verifier(), max_body_bytes=2000)) as c:
        big = {"claim": "x" * 5000, "urls": [pages.url("/boiling")]}
        response = c.post("/verify", json=big)
        assert response.status_code == 413 and "2000 bytes" in response.json()["detail"]
        chunked = c.post(
            "/verify",
            content=iter([json.dumps(big).encode()[i : i + 500] for i in range(0, 5100, 500)]),
            headers={"Content-Type": "application/json"},
        )
        assert chunked.status_code == 413
        small = c.post("/verify", json={"claim": CLAIM, "urls": [pages.url("/gone-410")]})
        assert small.status_code == 200


def test_a_failing_judge_answers_503_on_check_grounding() -> None:
    verifier = Verifier(
        judge=ScriptedJudge(JudgeVerdict(label="not_found", reason="judge_error")),
        embedder=HashEmbedder(),
        settings=Settings(**NO_STORES),  # type: ignore[arg-type]
    )
    with TestClient(create_app(verifier=verifier)) as c:
        response = c.post("/v1/check-grounding", json=TITANIC)
    assert response.status_code == 503
    assert "4 of 4 (claim, fact) pairs could not be checked" in response.json()["detail"]
    assert response.headers["retry-after"] == "1"


def test_bearer_token_protects_every_route_but_health(pages: LoopbackSite) -> None:
    key = "s3cret-token-value"
    settings = Settings(api_key=key, allow_private_hosts=True, **NO_STORES)  # type: ignore[arg-type]
    app = create_app(settings=settings, verifier=fake_verifier())
    with TestClient(app) as c:
        for health in ("/v1/health", "/health"):
            assert c.get(health).status_code == 200 and c.get(health).json() == {"status": "ok"}
        assert c.get("/health", headers={"Authorization": f"Bearer {key}"}).json()["auth"] is True
        body = {"claim": CLAIM, "urls": [pages.url("/gone-410")]}
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": f"Basic {key}"},
            {"Authorization": key},
        ):
            denied = c.post("/verify", json=body, headers=headers)
            assert denied.status_code == 401 and denied.headers["www-authenticate"] == "Bearer"
            assert key not in denied.text
        assert c.post("/v1/check-grounding", json=TITANIC).status_code == 401
        assert c.post("/v1/verify", json=body).status_code == 401
        assert c.get("/docs").status_code == 401
        ok = c.post("/verify", json=body, headers={"Authorization": f"Bearer {key}"})
        assert ok.status_code == 200
        assert c.get("/openapi.json", headers={"Authorization": f"bearer {key}"}).status_code == 200


def test_only_the_exact_bearer_token_is_accepted() -> None:
    """Not a prefix, a suffix, a longer string holding it, another case, one letter off."""
    key = "s3cret-token-value"
    near_misses = [
        key[:-1],
        key[:6],
        key[:1],
        key + "-and-more",
        key + "X",
        "x" + key,
        key[1:],
        key.upper(),
        key[:-1] + "f",
    ]
    settings = Settings(api_key=key, **NO_STORES)  # type: ignore[arg-type]
    with TestClient(create_app(settings=settings, verifier=fake_verifier())) as c:
        for sent in near_misses:
            denied = c.get("/openapi.json", headers={"Authorization": f"Bearer {sent}"})
            assert denied.status_code == 401, sent
        assert c.get("/openapi.json", headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_missing_token_answers_503_naming_the_variable(pages: LoopbackSite) -> None:
    settings = Settings(judge="openai", **NO_STORES)  # type: ignore[arg-type]
    with TestClient(create_app(settings=settings)) as c:
        health = c.get("/health").json()
        assert health["status"] == "unavailable" and "OPENAI_API_KEY" in health["judge"]["error"]
        for path, body in (
            ("/verify", {"claim": CLAIM, "urls": [pages.url("/gone-410")]}),
            ("/v1/check-grounding", TITANIC),
            ("/v1/guard", {"answer": "Water boils at 100 degrees [1].", "sources": [pages.url("/boiling")]}),
        ):
            response = c.post(path, json=body)
            assert response.status_code == 503, path
            assert "OPENAI_API_KEY" in response.json()["detail"]
            assert response.json()["error"]["status"] == "UNAVAILABLE"


def test_a_set_token_never_appears(pages: LoopbackSite) -> None:
    secret = "sk-test-do-not-leak-1234567890"
    settings = Settings(judge="openai", openai_api_key=secret, openai_base_url="http://127.0.0.1:9/v1", **NO_STORES)  # type: ignore[arg-type]
    with TestClient(create_app(settings=settings, warm=False)) as c:
        texts = [c.get("/health").text, c.get("/openapi.json").text]
        texts.append(c.post("/verify", json={"claim": CLAIM, "urls": [pages.url("/gone-410")]}).text)
    assert all(secret not in t for t in texts)


def test_ssrf_guard_is_on_by_default(pages: LoopbackSite) -> None:
    with TestClient(create_app(settings=Settings(**NO_STORES), warm=False)) as c:  # type: ignore[arg-type]
        assert c.get("/health").json()["fetcher"]["ssrf_guard"] is True
        before = pages.hits.get("/boiling", 0)
        report = c.post("/verify", json={"claim": CLAIM, "urls": [pages.url("/boiling")]}).json()
    assert report["citations"][0]["reason"] == "blocked_address"
    assert pages.hits.get("/boiling", 0) == before


def test_routes_live_under_v1_and_the_old_paths_are_deprecated_aliases(client: TestClient, pages: LoopbackSite) -> None:
    body = {"claim": CLAIM, "urls": [pages.url("/gone-410")]}
    new, old = client.post("/v1/verify", json=body), client.post("/verify", json=body)
    assert new.status_code == old.status_code == 200
    assert new.json()["citations"] == old.json()["citations"]
    assert client.get("/v1/health").json() == client.get("/health").json()
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/verify", "/v1/guard", "/v1/check-grounding", "/v1/health"} <= set(paths)
    assert paths["/verify"]["post"]["deprecated"] is True and paths["/health"]["get"]["deprecated"] is True
    assert "deprecated" not in paths["/v1/verify"]["post"] and "deprecated" not in paths["/v1/health"]["get"]
    assert all(
        path.startswith("/v1/") for path in paths if not any(op.get("deprecated") for op in paths[path].values())
    )


def test_docs_are_served(client: TestClient) -> None:
    assert client.get("/docs").status_code == 200
    # Their scripts and styles come from the service itself (tests/test_browser.py renders them).
    for page in ("/docs", "/redoc"):
        response = client.get(page)
        assert "default-src 'self'" in response.headers["content-security-policy"]
        assets = re.findall(r'(?:src|href)="([^"]+)"', response.text)
        assert assets and all(url.startswith("/docs-assets/") for url in assets), assets
        assert all(client.get(url).status_code == 200 for url in assets)
    spec = client.get("/openapi.json").json()
    assert {"/health", "/verify", "/v1/check-grounding", "/v1/guard"} <= set(spec["paths"])


def test_concurrent_requests_share_one_fetch_and_the_page_cache(tmp_path: Path) -> None:
    site = LoopbackSite({"/slow-gone": Route(status=410, body="gone", delay=0.5)}).start()
    try:
        settings = Settings(
            allow_private_hosts=True,
            cache_path=tmp_path / "pages.sqlite3",  # type: ignore[arg-type]
            audit_path="off",
        )
        app = create_app(settings=settings, warm=False)
        body = {"claim": CLAIM, "urls": [site.url("/slow-gone")]}
        with TestClient(app) as c:
            assert c.get("/health").json()["fetcher"]["cache"] == str(tmp_path / "pages.sqlite3")
            results: list[int] = []
            threads = [
                threading.Thread(target=lambda: results.append(c.post("/verify", json=body).status_code))
                for _ in range(6)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert results == [200] * 6
            assert site.hits["/slow-gone"] == 1  # six concurrent requests, one fetch
            assert c.post("/verify", json=body).json()["citations"][0]["reason"] == "http_410"
            assert site.hits["/slow-gone"] == 1  # later ones come from the page cache
    finally:
        site.stop()


def test_missing_anthropic_key_answers_503_naming_the_variable_and_no_secret(
    pages: LoopbackSite, caplog: pytest.LogCaptureFixture
) -> None:
    key = "bearer-do-not-leak-0987654321"
    other = "sk-openai-do-not-leak-1234567890"
    settings = Settings(judge="anthropic", api_key=key, openai_api_key=other, **NO_STORES)  # type: ignore[arg-type]
    auth = {"Authorization": f"Bearer {key}"}
    texts: list[str] = []
    with caplog.at_level(logging.DEBUG), TestClient(create_app(settings=settings)) as c:
        assert c.get("/health").json() == {"status": "unavailable"}  # without the token: the status alone
        health = c.get("/health", headers=auth)
        texts.append(health.text)
        assert health.json()["status"] == "unavailable" and "ANTHROPIC_API_KEY" in health.json()["judge"]["error"]
        for path, body in (
            ("/verify", {"claim": CLAIM, "urls": [pages.url("/gone-410")]}),
            ("/v1/check-grounding", TITANIC),
            ("/v1/guard", {"answer": "Water boils at 100 degrees [1].", "sources": [pages.url("/boiling")]}),
        ):
            response = c.post(path, json=body, headers=auth)
            texts.append(response.text)
            assert response.status_code == 503, path
            assert "ANTHROPIC_API_KEY" in response.json()["detail"]
            assert response.json()["error"] == {
                "code": 503,
                "message": response.json()["detail"],
                "status": "UNAVAILABLE",
            }
    texts.append(caplog.text)
    assert all(key not in t and other not in t for t in texts)


def test_empty_crawlbase_token_answers_503_naming_the_variable_and_no_secret(
    pages: LoopbackSite, caplog: pytest.LogCaptureFixture
) -> None:
    js_token = "crawlbase-js-do-not-leak-13579"
    settings = Settings(crawlbase_token="  ", crawlbase_js_token=js_token, **NO_STORES)  # type: ignore[arg-type]
    before = pages.hits.get("/gone-410", 0)
    texts: list[str] = []
    with caplog.at_level(logging.DEBUG), TestClient(create_app(settings=settings)) as c:
        health = c.get("/health").json()
        texts.append(json.dumps(health))
        assert health["status"] == "unavailable" and "CRAWLBASE_TOKEN" in health["fetcher"]["error"]
        response = c.post("/verify", json={"claim": CLAIM, "urls": [pages.url("/gone-410")]})
        texts.append(response.text)
        assert response.status_code == 503 and "CRAWLBASE_TOKEN" in response.json()["detail"]
    texts.append(caplog.text)
    assert all(js_token not in t for t in texts)
    assert pages.hits.get("/gone-410", 0) == before  # nothing was fetched directly instead


def test_the_token_is_checked_before_the_body_is_read_or_parsed() -> None:
    """No token: 401 for a body over the cap, a malformed body, the schema and an unknown path alike."""
    key = "checked-first-token"
    settings = Settings(api_key=key, **NO_STORES)  # type: ignore[arg-type]
    with TestClient(create_app(settings=settings, verifier=fake_verifier(), max_body_bytes=100)) as c:
        for response in (
            c.post("/verify", json={"claim": "x" * 500, "urls": ["https://example.org/"]}),
            c.post("/verify", json={"urls": []}),
            c.post("/verify", content=b"{not json", headers={"Content-Type": "application/json"}),
            c.get("/openapi.json"),
            c.get("/no-such-path"),
        ):
            assert response.status_code == 401 and response.json()["error"]["status"] == "UNAUTHENTICATED"
        auth = {"Authorization": f"Bearer {key}"}
        assert c.post("/verify", json={"claim": "x" * 500, "urls": ["u"]}, headers=auth).status_code == 413
        assert c.get("/no-such-path", headers=auth).status_code == 404
        # A repeated header: the last one counts.
        repeated = [("authorization", "Bearer wrong"), ("authorization", f"Bearer {key}")]
        assert c.get("/openapi.json", headers=repeated).status_code == 200
        assert c.get("/openapi.json", headers=repeated[::-1]).status_code == 401


def test_an_unreadable_content_length_answers_400(client: TestClient) -> None:
    headers = {"Content-Type": "application/json", "Content-Length": "x"}
    response = client.post("/verify", content=b"{}", headers=headers)
    assert response.status_code == 400 and response.json()["detail"] == "invalid Content-Length header"


def test_bearer_token_protects_the_vertex_path() -> None:
    key = "vertex-path-token"
    settings = Settings(api_key=key, **NO_STORES)  # type: ignore[arg-type]
    path = "/v1/projects/p/locations/l/groundingConfigs/c:check"
    with TestClient(create_app(settings=settings, verifier=fake_verifier())) as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            denied = c.post(path, json=TITANIC, headers=headers)
            assert denied.status_code == 401 and denied.headers["www-authenticate"] == "Bearer"
            assert denied.json()["error"]["status"] == "UNAUTHENTICATED" and key not in denied.text
        assert c.post(path.replace("/v1/", "/v1beta/"), json=TITANIC).status_code == 401
        ok = c.post(path, json=TITANIC, headers={"Authorization": f"Bearer {key}"})
        assert ok.status_code == 200, ok.text
        assert ok.json()["claims"][0]["citationIndices"] == [0, 1]


def test_the_service_records_decisions_in_the_audit_store(
    pages: LoopbackSite, tmp_path: Path, llm_free_settings: Settings
) -> None:
    db = tmp_path / "audit.sqlite3"
    settings = llm_free_settings.model_copy(update={"audit_path": db, "allow_private_hosts": True})
    url = pages.url("/gone-404")
    with TestClient(create_app(settings=settings, warm=False)) as c:
        assert c.get("/health").json()["audit"]["path"] == str(db)
        response = c.post("/verify", json={"claim": CLAIM, "urls": [url]})
        assert response.status_code == 200, response.text
    with AuditStore(db) as audit:
        records = audit.list_records()
    assert [(r.claim, r.url, r.label, r.reason, r.original_status, r.fetcher) for r in records] == [
        (CLAIM, url, "unreachable", "http_404", 404, "direct")
    ]
    # Without GUARDRAIL_AUDIT_DB the service records nothing (no store in the user folder).
    unset = llm_free_settings.model_copy(update={"audit_path": None})
    with TestClient(create_app(settings=unset, warm=False)) as c:
        assert c.get("/health").json()["audit"] is None


def test_batch_and_service_share_one_page_cache_file(tmp_path: Path, llm_free_settings: Settings) -> None:
    site = LoopbackSite(
        {"/removed": Route(status=410, body="gone"), "/missing": Route(status=404, body="not here")}
    ).start()
    try:
        cache = tmp_path / "pages.sqlite3"
        rows = [
            {"id": "c1", "claim": CLAIM, "urls": [site.url("/removed")]},
            {"id": "a1", "answer": "Water boils at 100 degrees Celsius [1].", "sources": [site.url("/missing")]},
        ]
        path = tmp_path / "outputs.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
        env = {
            "GUARDRAIL_CACHE": str(cache),
            "GUARDRAIL_AUDIT_DB": "off",
            "GUARDRAIL_JUDGE": "openai",
            "OPENAI_API_KEY": "sk-unused",
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        }
        args = ["batch", str(path), "--out", str(tmp_path / "r.csv"), "--allow-private-hosts"]
        batch = CliRunner().invoke(cli_app, args, env=env)
        assert batch.exit_code == 0, batch.output
        assert site.hits == {"/removed": 1, "/missing": 1}

        settings = llm_free_settings.model_copy(update={"cache_path": cache, "allow_private_hosts": True})
        with TestClient(create_app(settings=settings, warm=False)) as c:
            assert c.get("/health").json()["fetcher"]["cache"] == str(cache)
            body = {"claim": CLAIM, "urls": [site.url("/removed"), site.url("/missing")]}
            report = c.post("/verify", json=body).json()
        assert [(v["label"], v["reason"]) for v in report["citations"]] == [
            ("unreachable", "http_410"),
            ("unreachable", "http_404"),
        ]
        assert site.hits == {"/removed": 1, "/missing": 1}  # both pages came from the batch's cache file
    finally:
        site.stop()


# -- the middleware, as plain ASGI -------------------------------------------------------------


class RecordingApp:
    """An ASGI app that records the messages it receives (reading until the body is complete)."""

    def __init__(self) -> None:
        self.received: list[dict[str, object]] = []

    async def __call__(self, scope: dict[str, object], receive: Receive, send: Send) -> None:
        self.received.append(dict(await receive()))
        if scope["type"] == "http":
            self.received.append(dict(await receive()))  # after the body: the server's own receive


def _receive_from(*messages: dict[str, object]) -> Receive:
    queue = list(messages)

    async def receive() -> dict[str, object]:
        return queue.pop(0)

    return receive


async def _no_send(message: dict[str, object]) -> None:
    raise AssertionError(f"nothing should be sent, got {message}")


async def test_body_limit_hands_the_body_over_once_then_defers_to_the_server() -> None:
    inner = RecordingApp()
    chunks = ({"type": "http.request", "body": b"ab", "more_body": True}, {"type": "http.request", "body": b"c"})
    receive = _receive_from(*chunks, {"type": "http.disconnect"})
    await BodyLimit(inner, max_body_bytes=3)({"type": "http", "headers": []}, receive, _no_send)
    assert inner.received == [{"type": "http.request", "body": b"abc", "more_body": False}, {"type": "http.disconnect"}]


async def test_body_limit_answers_nothing_to_a_client_gone_mid_body() -> None:
    inner = RecordingApp()
    receive = _receive_from({"type": "http.request", "body": b"ab", "more_body": True}, {"type": "http.disconnect"})
    await BodyLimit(inner, max_body_bytes=3)({"type": "http", "headers": []}, receive, _no_send)
    assert inner.received == []


async def test_the_middleware_lets_other_scopes_through_and_refuses_bad_settings() -> None:
    inner = RecordingApp()
    startup = {"type": "lifespan.startup"}
    app = BearerAuth(BodyLimit(inner, max_body_bytes=1), api_key="k")
    await app({"type": "lifespan"}, _receive_from(startup), _no_send)
    assert inner.received == [startup]
    with pytest.raises(ValueError):
        BearerAuth(inner, api_key="")
    with pytest.raises(ValueError):
        BodyLimit(inner, max_body_bytes=0)


# -- batching the judge across requests ----------------------------------------------------------


class SlowJudge(OverlapJudge):
    """The overlap judge, taking 0.05 s per call."""

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        await asyncio.sleep(0.05)
        return await super().judge(requests)


class GatedJudge(OverlapJudge):
    """The overlap judge, answering only once ``release`` is set; ``entered`` is set by each call."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        self.entered.set()
        await asyncio.wait_for(self.release.wait(), 20)
        return await super().judge(requests)


async def test_batching_judge_merges_concurrent_calls_and_routes_the_verdicts() -> None:
    inner = GatedJudge()
    judge = BatchingJudge(inner)
    assert (judge.name, judge.model) == (inner.name, inner.model)
    passages = ["Water boils at 100 degrees Celsius at sea level.", "Ice melts at 0 degrees Celsius."]
    claims = [
        ["Water boils at 100 degrees Celsius at sea level."],
        ["Ice melts at 0 degrees Celsius.", "Water boils at 50 degrees Celsius at sea level."],
        ["Tomatoes need sunlight."],
        ["Ice melts at 5 degrees Celsius."],
    ]

    def call(group: list[str]) -> asyncio.Task[list[JudgeVerdict]]:
        return asyncio.create_task(judge.judge([JudgeRequest(claim=c, passages=passages) for c in group]))

    first = call(claims[0])
    await asyncio.wait_for(inner.entered.wait(), 20)  # the first call is being judged when the others arrive
    others = [call(g) for g in claims[1:]]
    await until(
        lambda: all(innermost_code(t) is BatchingJudge.judge.__code__ for t in others), "the others wait in the queue"
    )
    inner.release.set()
    results = [await first, *await asyncio.gather(*others)]
    # The first call ran alone; the three that arrived while it ran shared the second inner call.
    assert [len(c) for c in inner.calls] == [1, 4]
    assert [[v.label for v in r] for r in results] == [
        ["supported"],
        ["supported", "contradicted"],
        ["not_found"],
        ["contradicted"],
    ]
    assert await judge.judge([]) == []


async def test_batching_judge_passes_failures_to_every_caller_in_the_batch() -> None:
    class Broken(SlowJudge):
        async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
            await asyncio.sleep(0.05)
            raise RuntimeError("model crashed")

    judge = BatchingJudge(Broken())
    request = [JudgeRequest(claim="A claim.", passages=["A passage."])]
    results = await asyncio.gather(*(judge.judge(request) for _ in range(3)), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) and str(r) == "model crashed" for r in results)
    with pytest.raises(RuntimeError):  # the queue keeps working after a failed batch
        await asyncio.wait_for(judge.judge(request), timeout=5)


def test_apps_built_from_settings_batch_the_judge(llm_free_settings: Settings) -> None:
    app = create_app(settings=llm_free_settings, warm=False)
    verifier = app.state.guardrail.verifier
    assert isinstance(verifier.judge, BatchingJudge) and verifier.judge.name == "openai"


@pytest.fixture
def llm_free_settings() -> Settings:
    """An OpenAI judge that is never called (the tests using it only build the app)."""
    return Settings(judge="openai", openai_api_key="sk-unused", openai_base_url="http://127.0.0.1:9/v1", **NO_STORES)  # type: ignore[arg-type]


# -- a real uvicorn on loopback -----------------------------------------------------------------


class ConcurrencyJudge(OverlapJudge):
    """The overlap judge, slowed down, counting how many calls overlap."""

    def __init__(self) -> None:
        super().__init__()
        self.active = 0
        self.peak = 0

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            # Each call waits (up to 10 s) for another to be judged with it: requests judged one after
            # another would each wait out the bound and leave the peak at 1.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while self.peak < 2 and loop.time() < deadline:
                await asyncio.sleep(0.01)
            return await super().judge(requests)
        finally:
            self.active -= 1


@pytest.fixture
def live_server() -> Iterator[tuple[str, ConcurrencyJudge]]:
    judge = ConcurrencyJudge()
    verifier = Verifier(judge=judge, embedder=HashEmbedder(), settings=Settings(allow_private_hosts=True, **NO_STORES))  # type: ignore[arg-type]
    app = create_app(verifier=verifier, max_body_bytes=64 * 1024)
    with served(app) as (host, port):
        yield f"http://{host}:{port}", judge


def test_real_uvicorn_serves_concurrently(live_server: tuple[str, ConcurrencyJudge], pages: LoopbackSite) -> None:
    base, judge = live_server

    async def run() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            health = await http.get("/health")
            assert health.json()["status"] == "ok"
            calls = [http.post("/v1/check-grounding", json=TITANIC) for _ in range(4)]
            calls.append(http.post("/verify", json={"claim": CLAIM, "urls": [pages.url("/boiling")]}))
            return await asyncio.gather(*calls)

    responses = asyncio.run(run())
    assert [r.status_code for r in responses] == [200] * 5
    assert responses[0].json()["claims"][0]["citationIndices"] == [0, 1]
    assert responses[-1].json()["overall"] == "supported"
    assert judge.peak >= 2  # requests were judged at the same time, not one after another


def test_real_uvicorn_stops_reading_an_oversized_chunked_body(live_server: tuple[str, ConcurrencyJudge]) -> None:
    base, _ = live_server
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(
            b"POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b"x" * 16384
        for _ in range(5):  # 80 KiB: over the 64 KiB cap; the body is never finished
            conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        reply = conn.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(
            b"POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n{"
        )
        reply = conn.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]


@pytest.mark.slow
def test_guardrail_serve_command(pages: LoopbackSite) -> None:
    """``guardrail serve`` in a subprocess: real models loaded at start-up, /health and /verify answer."""
    import os
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "GUARDRAIL_CACHE": "off", "GUARDRAIL_AUDIT_DB": "off", "GUARDRAIL_API_KEY": "k"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "guardrail.apps.cli", "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            assert proc.poll() is None, proc.communicate()
            try:
                health = httpx.get(base + "/health", timeout=2, headers={"Authorization": "Bearer k"}).json()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "guardrail serve did not start"
                time.sleep(0.2)
        assert httpx.get(base + "/health", timeout=10).json() == {"status": health["status"]}  # no token: status only
        assert health["embedder"] == {**health["embedder"], "name": "all-MiniLM-L6-v2", "loaded": True}
        assert health["fetcher"]["ssrf_guard"] is True and health["auth"] is True
        body = {"claim": CLAIM, "urls": [pages.url("/boiling")]}
        assert httpx.post(base + "/verify", json=body).status_code == 401
        report = httpx.post(base + "/verify", json=body, headers={"Authorization": "Bearer k"}, timeout=60).json()
        assert report["citations"][0]["reason"] == "blocked_address"  # the SSRF guard is on by default
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
