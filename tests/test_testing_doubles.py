"""The public test doubles (guardrail.testing): each satisfies its protocol, reads pages and
answers as documented, and serves a verifier end to end without a network or a model."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from guardrail import FetchedPage, JudgeRequest, JudgeVerdict, Label, Settings, VerdictKind, build_verifier
from guardrail.fetch.base import Fetcher
from guardrail.judges.base import Judge
from guardrail.retrieval import Embedder
from guardrail.testing import (
    HashEmbedder,
    JudgeRule,
    LoopbackSite,
    OverlapJudge,
    Route,
    ScriptedJudge,
    StaticFetcher,
)

ROOT = Path(__file__).resolve().parents[1]
PAGE = (
    "<html><head><title>Boiling</title></head>"
    "<body><p>At sea level, water boils at 100 degrees Celsius.</p></body></html>"
)
CLAIM = "Water boils at 100 degrees Celsius at sea level."


def test_each_double_satisfies_its_protocol() -> None:
    assert isinstance(StaticFetcher({}), Fetcher)
    assert isinstance(ScriptedJudge([]), Judge) and isinstance(OverlapJudge(), Judge)
    assert isinstance(HashEmbedder(), Embedder)


def test_importing_the_doubles_loads_no_test_framework_and_no_model() -> None:
    code = "import sys, guardrail.testing; print(sorted({'pytest', 'torch', 'transformers'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- StaticFetcher ---------------------------------------------------------------------------------


def fetch(fetcher: StaticFetcher, *urls: str) -> dict[str, FetchedPage]:
    return asyncio.run(fetcher.fetch_all(list(urls)))


def test_a_static_page_is_converted_as_the_real_fetcher_converts_it() -> None:
    pages = fetch(
        StaticFetcher({"https://x.org/a": PAGE, "https://x.org/t": Route(body="plain", content_type="text/plain")}),
        "https://x.org/a",
        "https://x.org/t",
    )
    page = pages["https://x.org/a"]
    assert (page.original_status, page.title, page.content_type, page.fetcher) == (
        200,
        "Boiling",
        "text/html",
        "static",
    )
    assert "water boils at 100 degrees Celsius" in page.text and "<p>" not in page.text
    assert pages["https://x.org/t"].text == "plain"


def test_statuses_read_as_dead_links_or_could_not_check_as_real_pages_do() -> None:
    fetcher = StaticFetcher({"https://x.org/gone": Route(status=410), "https://x.org/busy": Route(status=503),
                             "https://x.org/walled": Route(status=403, body="bot check")})  # fmt: skip
    verifier = build_verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder(), cache=False, audit=False)
    urls = ["https://x.org/gone", "https://x.org/busy", "https://x.org/walled", "https://x.org/never-served"]
    verdicts = verifier.verify(CLAIM, urls).citations
    assert [(v.kind, v.reason) for v in verdicts] == [
        (VerdictKind.dead_link, "http_410"),
        (VerdictKind.could_not_check, "http_503"),
        (VerdictKind.could_not_check, "http_403"),
        (VerdictKind.dead_link, "http_404"),
    ]


def test_redirects_are_followed_within_the_pages_and_hits_counted() -> None:
    fetcher = StaticFetcher(
        {
            "https://x.org/old": Route.redirect("/new", 301),
            "https://x.org/new": PAGE,
            "https://x.org/loop": Route.redirect("/loop"),
        }
    )
    pages = fetch(fetcher, "https://x.org/old", "https://x.org/old", "https://x.org/loop")
    moved = pages["https://x.org/old"]
    assert (moved.final_url, moved.redirects, moved.original_status) == (
        "https://x.org/new",
        ["https://x.org/old"],
        200,
    )
    assert pages["https://x.org/loop"].reason == "too_many_redirects"
    assert fetcher.calls == [["https://x.org/old", "https://x.org/old", "https://x.org/loop"]]
    assert fetcher.hits["https://x.org/new"] == 1  # a URL asked twice in one call is fetched once


def test_a_ready_fetched_page_is_returned_as_given() -> None:
    timeout = FetchedPage(url="https://x.org/slow", reason="timeout")
    assert fetch(StaticFetcher({"https://x.org/slow": timeout}), "https://x.org/slow")["https://x.org/slow"] is timeout


def test_a_page_of_another_type_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="a page is a Route, str or bytes, not int"):
        fetch(StaticFetcher({"https://x.org/n": 42}), "https://x.org/n")  # type: ignore[dict-item]


# -- ScriptedJudge ---------------------------------------------------------------------------------

REQUEST = JudgeRequest(claim=CLAIM, passages=["Intro.", "At sea level, Water Boils at 100 degrees Celsius."])


def judge(j: ScriptedJudge | OverlapJudge, *requests: JudgeRequest) -> list[JudgeVerdict]:
    return asyncio.run(j.judge(list(requests)))


def test_the_first_rule_that_applies_answers_quoting_the_passage_as_written() -> None:
    scripted = ScriptedJudge(
        [
            JudgeRule(claim="titanic", evidence="James Cameron", label="supported"),
            JudgeRule(claim="boils", evidence="water boils at 100", label="contradicted", confidence=0.7),
            JudgeRule(label="supported", evidence="sea level"),
        ]
    )
    [verdict] = judge(scripted, REQUEST)
    assert (verdict.label, verdict.evidence_quote, verdict.confidence) == ("contradicted", "Water Boils at 100", 0.7)
    [other] = judge(scripted, JudgeRequest(claim="Something else.", passages=["Nothing relevant."]))
    assert (other.label, other.evidence_quote, other.confidence) == ("not_found", None, 0.0)
    assert [len(call) for call in scripted.calls] == [1, 1]


def test_a_supporting_rule_without_evidence_to_quote_is_refused() -> None:
    with pytest.raises(ValueError, match="a supported rule needs the evidence text it quotes"):
        JudgeRule(label="supported", claim="boils")


def test_a_callable_or_a_fixed_verdict_as_the_script() -> None:
    fixed = JudgeVerdict(label="not_found", reason="judge_error")
    assert judge(ScriptedJudge(fixed), REQUEST, REQUEST) == [fixed, fixed]
    echo = ScriptedJudge(lambda r: JudgeVerdict(label="supported", evidence_quote=r.passages[-1], confidence=1.0))
    assert judge(echo, REQUEST)[0].evidence_quote == REQUEST.passages[-1]


def test_a_scripted_judge_behind_a_verifier_with_the_quote_guard() -> None:
    fetcher = StaticFetcher({"https://x.org/a": PAGE})
    rules = [JudgeRule(evidence="water boils at 100 degrees Celsius", label="supported")]
    invented = JudgeVerdict(label="supported", evidence_quote="Water always boils at 90 degrees.", confidence=1.0)
    for script, label, reason in (
        (rules, Label.supported, None),
        (invented, Label.not_found, "evidence_quote_not_in_source"),
    ):
        verifier = build_verifier(
            fetcher=fetcher, judge=ScriptedJudge(script), embedder=HashEmbedder(), cache=False, audit=False
        )
        [verdict] = verifier.verify(CLAIM, ["https://x.org/a"]).citations
        assert (verdict.label, verdict.reason) == (label, reason)


def test_the_overlap_judge_answers_the_built_in_prompt_as_json() -> None:
    from guardrail.judges.prompt import render_user_message

    prompt = render_user_message(REQUEST)
    assert (
        OverlapJudge().answer(prompt).startswith('{"label": "supported", "evidence_quote": "At sea level, Water Boils')
    )


# -- HashEmbedder ----------------------------------------------------------------------------------


def test_hash_vectors_are_unit_stable_and_rank_by_shared_words() -> None:
    texts = ["Water boils at sea level.", "Tomatoes need sunlight.", ""]
    vectors = HashEmbedder().embed(texts)
    assert vectors.shape == (3, 512) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0) and not vectors[2].any()
    assert np.array_equal(vectors, HashEmbedder().embed(texts))
    # Pinned: the same dimensions on every run and machine (MD5 of the words, not Python's hash()).
    assert np.flatnonzero(vectors[0]).tolist() == [44, 133, 256, 397]
    query = HashEmbedder().embed(["At what level does water boil?"])
    assert int(np.argmax(vectors[:2] @ query[0])) == 0


# -- LoopbackSite ----------------------------------------------------------------------------------


def test_the_loopback_site_serves_pages_counts_hits_and_feeds_the_real_fetcher() -> None:
    with LoopbackSite({"/a": PAGE, "/gone": Route(status=410)}) as site:
        with site.counting() as hits:
            assert httpx.get(site.url("/a")).text == PAGE
            assert httpx.get(site.url("/a?again")).text == PAGE
            assert httpx.get(site.url("/missing")).status_code == 404
        assert hits == {"/a": 2, "/missing": 1} and site.wait_for_hits("/a", 2, timeout=0)
        assert not site.wait_for_hits("/a", 3, timeout=0)
        verifier = build_verifier(
            Settings(allow_private_hosts=True), judge=OverlapJudge(), embedder=HashEmbedder(), cache=False, audit=False
        )
        labels = [v.label for v in verifier.verify(CLAIM, [site.url("/a"), site.url("/gone")]).citations]
        assert labels == [Label.supported, Label.unreachable]


async def test_the_loopback_site_as_an_async_context_manager() -> None:
    async with (
        LoopbackSite({"/a": Route(body="text", content_type="text/plain")}) as site,
        httpx.AsyncClient() as client,
    ):
        assert (await client.get(site.url("/a"))).text == "text"
    with pytest.raises(httpx.ConnectError):
        httpx.get(site.url("/a"))  # stopped: the port is closed
