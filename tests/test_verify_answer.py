"""Verifier.verify_answer / averify_answer end to end: real HTTP fixture pages on loopback, the
real DirectFetcher, and the test Judge/Embedder swapped in through their protocols."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from guardrail import Label, PageMemo, Policy, Verifier, apply_policy
from guardrail.fetch.once import page_key
from guardrail.testing import LoopbackSite, OverlapJudge, Route
from tests.fakes import LCDocument, LINode, LINodeWithScore, fixture_verifier
from tests.fixtures.pages import BOILING

S, C, N, U = Label.supported, Label.contradicted, Label.not_found, Label.unreachable


def make_verifier() -> tuple[Verifier, OverlapJudge]:
    judge = OverlapJudge()
    return fixture_verifier(judge), judge


class _InFlight:
    """Routes that record how many requests were being served at once; each waits (up to 10 s)
    until another has been served with it, so pages fetched one after another leave ``most`` at 1."""

    def __init__(self, body: str) -> None:
        self.body = body.encode()
        self.now = 0
        self.most = 0
        self.lock = threading.Lock()
        self.company = threading.Condition(self.lock)

    def __call__(self, handler: BaseHTTPRequestHandler) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.company.notify_all()
            self.company.wait_for(lambda: self.most >= 2, timeout=10)
        with self.lock:
            self.now -= 1
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Content-Length", str(len(self.body)))
        handler.end_headers()
        handler.wfile.write(self.body)


def test_pages_of_an_answer_are_fetched_at_once_and_fragments_share_a_fetch(pages: LoopbackSite) -> None:
    slow = _InFlight(BOILING)
    for n in range(4):
        pages.routes[f"/inflight-{n}"] = Route(handler=slow)
    u = pages.url
    answer = (
        f"Water boils at 100 degrees Celsius [a]({u('/inflight-0')}#top) [b]({u('/inflight-0')}#boiling). "
        f"Pure water boils at 100 degrees Celsius ({u('/inflight-0')}). "
        + " ".join(f"Water boils at 100 degrees Celsius at sea level ({u(f'/inflight-{n}')})." for n in (1, 2, 3))
    )
    verifier, _ = make_verifier()
    with pages.counting() as hits:
        report = verifier.verify_answer(answer)
    assert hits == {"/inflight-0": 1, "/inflight-1": 1, "/inflight-2": 1, "/inflight-3": 1}
    assert slow.most >= 2  # the four pages were not fetched one after another
    first = report.claims[0]
    # Each citation keeps the URL it cited, fragment included.
    assert [v.url for v in first.verdicts] == [u("/inflight-0") + "#top", u("/inflight-0") + "#boiling"]
    assert page_key(u("/a") + "#/route") == u("/a") + "#/route"  # an app route is another page
    assert page_key(u("/a") + "#!/route") == u("/a") + "#!/route"


def answer_with_references(pages: LoopbackSite) -> str:
    u = pages.url
    return (
        "Here is what I found.\n\n"
        "Pure water boils at 100 degrees Celsius at sea level [1]. "
        "In Denver water boils at roughly 95 degrees Celsius [1]. "
        "Water boils at 50 degrees Celsius at sea level [1][2].\n\n"
        f"- Titanic was directed by James Cameron ([source]({u('/titanic')})).\n"
        f"- Tomatoes need six hours of direct sunlight [3], says {u('/tomatoes')}.\n\n"
        "Café crème costs 3 € at the café [4]. It is delicious.\n\n"
        "Sources:\n"
        f"[1] The boiling point of water - {u('/boiling')}\n"
        f"[2] {u('/old-report')}\n"
        f"[3] {u('/gone-404')}\n"
    )


def test_verify_answer_end_to_end(pages: LoopbackSite) -> None:
    verifier, judge = make_verifier()
    answer = answer_with_references(pages)
    with pages.counting() as hits:
        report = verifier.verify_answer(answer)

    # Every unique URL fetched exactly once, although /boiling is cited four times.
    assert hits == {"/boiling": 1, "/old-report": 1, "/gone-404": 1, "/titanic": 1, "/tomatoes": 1}
    # All claims judged in one judge call, on their plain text (markers removed).
    assert len(judge.calls) == 1
    judged = {r.claim for r in judge.calls[0]}
    assert "Pure water boils at 100 degrees Celsius at sea level." in judged
    assert not any("[1]" in c or "http" in c for c in judged)

    by_text = {c.text.split(" [")[0].split(" (")[0]: c for c in report.claims}
    intro = by_text["Here is what I found."]
    assert not intro.grounding_check_required and intro.overall is None and intro.verdicts == []

    pure = by_text["Pure water boils at 100 degrees Celsius at sea level"]
    assert [(v.url, v.label) for v in pure.verdicts] == [(pages.url("/boiling"), S)]
    assert pure.verdicts[0].evidence_quote and "100 degrees Celsius" in pure.verdicts[0].evidence_quote
    assert by_text["In Denver water boils at roughly 95 degrees Celsius"].overall == S

    fifty = by_text["Water boils at 50 degrees Celsius at sea level"]
    # One verdict per citation, in order: the textbook contradicts, the old report supports.
    assert [(v.url, v.label) for v in fifty.verdicts] == [(pages.url("/boiling"), C), (pages.url("/old-report"), S)]
    assert fifty.overall == C

    titanic = by_text["- Titanic was directed by James Cameron".lstrip("- ")]
    assert titanic.overall == S and titanic.citations[0].kind == "markdown_link"

    tomatoes = by_text["Tomatoes need six hours of direct sunlight"]
    assert [(c.marker, c.kind) for c in tomatoes.citations] == [
        ("[3]", "numbered"),
        (pages.url("/tomatoes"), "bare_url"),
    ]
    assert [v.label for v in tomatoes.verdicts] == [U, S]
    assert tomatoes.verdicts[0].reason == "http_404"

    cafe = by_text["Café crème costs 3 € at the café"]
    assert [(v.label, v.reason) for v in cafe.verdicts] == [(N, "unresolved_citation")]
    assert cafe.citations[0].url is None
    # The sentence after it is covered by nothing (the marker is mid-paragraph): not checked.
    assert by_text["It is delicious."].overall is None

    assert report.overall == C
    assert report.label_counts == {"supported": 5, "contradicted": 1, "unreachable": 1, "not_found": 1}
    assert [r.label for r in report.references] == ["1", "2", "3"]
    assert report.references[0].title == "The boiling point of water"
    # Byte offsets refer to the original answer.
    raw = answer.encode()
    for c in report.claims:
        assert raw[c.start : c.end].decode() == c.text


def test_policy_on_a_verified_answer(pages: LoopbackSite) -> None:
    verifier, _ = make_verifier()
    report = verifier.verify_answer(answer_with_references(pages))
    guarded = apply_policy(report)
    assert "Water boils at 50 degrees Celsius at sea level [1] ❌ contradicted [2]." in guarded.text
    assert "Tomatoes need six hours of direct sunlight ⛔ dead link, says" in guarded.text
    assert "Café crème costs 3 € at the café [4] ⚠️ unverified." in guarded.text
    assert pages.url("/gone-404") not in guarded.text  # its reference entry went with the marker
    assert guarded.text.endswith(f"[2] {pages.url('/old-report')}\n")
    blocked = apply_policy(report, Policy.strict())
    assert blocked.blocked and blocked.text == Policy().block_message


def test_same_url_twice_in_one_claim_gets_two_aligned_verdicts(pages: LoopbackSite) -> None:
    verifier, _ = make_verifier()
    u = pages.url("/boiling")
    with pages.counting() as hits:
        report = verifier.verify_answer(f"Pure water boils at 100 degrees Celsius, see {u} and {u} again.")
    assert hits == {"/boiling": 1}
    (claim,) = report.claims
    assert len(claim.citations) == len(claim.verdicts) == 2
    assert [v.label for v in claim.verdicts] == [S, S]
    assert report.label_counts == {"supported": 2}


def test_links_of_a_sentence_asserting_nothing_are_fetched_and_reported_when_dead(pages: LoopbackSite) -> None:
    u = pages.url
    answer = (
        f"Water boils at 100 degrees Celsius at sea level [1]. See {u('/gone-404')} for details.\n\n"
        f"See {u('/boiling')} for details.\n\n[1]: {u('/boiling')}\n"
    )
    verifier, judge = make_verifier()
    records: list[object] = []
    verifier.recorders.append(records.append)
    with pages.counting() as hits:
        report = verifier.verify_answer(answer)
    assert hits == {"/boiling": 1, "/gone-404": 1}
    dead, live = report.claims[1], report.claims[2]
    assert not dead.grounding_check_required and not live.grounding_check_required
    assert [(v.url, v.label, v.reason) for v in dead.verdicts] == [(u("/gone-404"), U, "http_404")]
    assert dead.overall == U and report.label_counts == {"supported": 1, "unreachable": 1}
    assert live.verdicts == [] and live.overall is None  # a live link in such a sentence is left alone
    assert [r.claim for r in judge.calls[0]] == ["Water boils at 100 degrees Celsius at sea level."]  # never judged
    assert len(records) == 2  # the dead link is in the audit trail like any decided citation
    guarded = apply_policy(report).text
    assert "See ⛔ dead link for details." in guarded and f"See {u('/boiling')} for details." in guarded


def test_sources_of_every_kind(pages: LoopbackSite) -> None:
    verifier, _ = make_verifier()
    sources = [
        LCDocument("(stale copy)", {"source": pages.url("/boiling")}),
        {"text": "Kate Winslet and Leonardo DiCaprio star in the 1997 film Titanic."},
        LINodeWithScore(LINode("chunk", {"url": pages.url("/gone-410")})),
        pages.url("/titanic"),
    ]
    answer = (
        "Pure water boils at 100 degrees Celsius at sea level [1]. "
        "Kate Winslet and Leonardo DiCaprio star in Titanic [2]. "
        "Ice melts at zero [3]. Titanic is a 1997 American epic romance film [4]. Something else [5]."
    )
    with pages.counting() as hits:
        report = verifier.verify_answer(answer, sources)
    # The text-only source is checked as a fact, never fetched.
    assert hits == {"/boiling": 1, "/gone-410": 1, "/titanic": 1}
    got = [(v.url, v.label, v.reason) for c in report.claims for v in c.verdicts]
    assert got == [
        (pages.url("/boiling"), S, None),
        ("fact:1", S, None),
        (pages.url("/gone-410"), U, "http_410"),
        (pages.url("/titanic"), S, None),
        ("[5]", N, "unresolved_citation"),
    ]
    assert [(s.index, s.kind) for s in report.sources] == [(0, "url"), (1, "text"), (2, "url"), (3, "url")]


def test_answer_without_markers_is_checked_against_every_source(pages: LoopbackSite) -> None:
    verifier, judge = make_verifier()
    sources = [pages.url("/titanic"), {"url": pages.url("/boiling")}]
    answer = "Pure water boils at 100 degrees Celsius at sea level. Titanic was directed by James Cameron."
    report = verifier.verify_answer(answer, sources)
    assert [c.overall for c in report.claims] == [S, S]
    assert [[v.label for v in c.verdicts] for c in report.claims] == [[N, S], [S, N]]
    assert len(judge.calls) == 1 and len(judge.calls[0]) == 4
    guarded = apply_policy(report, Policy.preset("annotate"))
    assert guarded.text == (
        "Pure water boils at 100 degrees Celsius at sea level. ✅ supported "
        "Titanic was directed by James Cameron. ✅ supported"
    )


def test_paragraph_end_marker_checks_every_covered_sentence(pages: LoopbackSite) -> None:
    verifier, _ = make_verifier()
    answer = (
        "Pure water boils at 100 degrees Celsius at sea level. "
        "Tomatoes need six hours of direct sunlight. "
        f"Pressure cookers let water reach about 120 degrees Celsius {pages.url('/boiling')}"
    )
    report = verifier.verify_answer(answer)
    assert [(c.overall, [r.inherited for r in c.citations]) for c in report.claims] == [
        (S, [True]),
        (N, [True]),
        (S, [False]),
    ]
    guarded = apply_policy(report)
    assert guarded.text == (
        "Pure water boils at 100 degrees Celsius at sea level. "
        "Tomatoes need six hours of direct sunlight. ⚠️ unverified "
        f"Pressure cookers let water reach about 120 degrees Celsius {pages.url('/boiling')}"
    )


def test_no_citations_at_all(pages: LoopbackSite) -> None:
    verifier, judge = make_verifier()
    report = verifier.verify_answer("Water boils at 100 degrees. Ice melts at zero.")
    assert [c.overall for c in report.claims] == [None, None]
    assert report.overall == N and report.label_counts == {}
    assert judge.calls == []
    assert verifier.verify_answer("").claims == []


async def test_async_with_a_shared_memo_fetches_each_url_once_across_calls(pages: LoopbackSite) -> None:
    verifier, _ = make_verifier()
    memo = PageMemo()
    u = pages.url("/boiling")
    with pages.counting() as hits:
        first, second = await asyncio.gather(
            verifier.averify_answer(f"Pure water boils at 100 degrees Celsius {u}.", memo=memo),
            verifier.averify_answer(f"Pressure cookers let water reach about 120 degrees Celsius {u}.", memo=memo),
        )
        third = await verifier.averify_answer(f"In Denver water boils at roughly 95 degrees Celsius {u}.", memo=memo)
    assert hits == {"/boiling": 1}
    assert [r.overall for r in (first, second, third)] == [S, S, S]


async def test_sync_wrapper_works_inside_a_running_loop(pages: LoopbackSite) -> None:
    verifier, _ = make_verifier()
    report = verifier.verify_answer(f"Pure water boils at 100 degrees Celsius {pages.url('/boiling')}.")
    assert report.overall == S


def test_bad_sources_raise_before_any_fetch(pages: LoopbackSite) -> None:
    verifier, _ = make_verifier()
    with pages.counting() as hits, pytest.raises(ValueError, match=r"sources\[1\]: a string source must be"):
        verifier.verify_answer(f"Water boils {pages.url('/boiling')} [1].", [pages.url("/boiling"), "nope"])
    assert hits == {}
