"""Text no reader sees never backs a claim: what a browser does not render (``<template>``, the
``hidden`` attribute, ``aria-hidden``, inline styles that hide) is dropped before passages are
made, by one rule (:func:`guardrail.fetch.convert.drop_hidden`), for pages fetched directly and
pages that come through Crawlbase as HTML. Pages from loopback servers."""

from __future__ import annotations

from collections.abc import Iterator

import lxml.html
import pytest

from guardrail import Label, Verifier
from guardrail.fetch.convert import drop_hidden, html_to_markdown
from guardrail.fetch.crawlbase import CrawlbaseFetcher
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge, Route
from tests.fakes import fixture_verifier
from tests.fixtures.crawlbase_server import NORMAL_TOKEN, FakeCrawlbase, FakeTarget

CLAIM = "The Fernhill lighthouse was painted green in 1911."
SECRET = CLAIM
VISIBLE = (
    "<h1>The Fernhill coast</h1>"
    "<p>The Fernhill coast has been charted by surveyors since the eighteenth century, and its tides "
    "are among the strongest recorded on this stretch of the sea.</p>"
    "<p>Local fishermen still use the old harbour, whose stone walls were rebuilt twice during the "
    "last two centuries after winter storms broke through them.</p>"
    "<p>Visitors come for the cliffs, the birds and the long walk along the shore to the point.</p>"
)
HIDING = {
    "hidden_attribute": "<div hidden><p>{s}</p></div>",
    "template": "<template><p>{s}</p></template>",
    "aria_hidden": '<div aria-hidden="true"><p>{s}</p></div>',
    "display_none": '<div style="display: none"><p>{s}</p></div>',
    "visibility_hidden": '<div style="visibility:hidden"><p>{s}</p></div>',
    "opacity_zero": '<p style="opacity:0">{s}</p>',
    "font_size_zero": '<p style="font-size:0px">{s}</p>',
    "zero_size": '<div style="width:0;height:0;overflow:hidden"><p>{s}</p></div>',
    "off_screen": '<div style="position:absolute; left:-9999px"><p>{s}</p></div>',
    "text_indent": '<p style="text-indent:-10000px">{s}</p>',
}


def page(hiding: str) -> str:
    body = f"<article>{VISIBLE}{hiding.format(s=SECRET)}</article>"
    return f"<html><head><title>Fernhill</title></head><body>{body}</body></html>"


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackSite]:
    routes = {f"/{name}": Route(body=page(hiding)) for name, hiding in HIDING.items()}
    routes["/visible"] = Route(body=page("<p>{s}</p>"))
    routes["/style-kept"] = Route(body=page('<p style="height:0">{s}</p>'))  # overflow shows it: visible
    with LoopbackSite(routes) as server:
        yield server


def test_visible_text_supports_the_claim(site: LoopbackSite) -> None:
    report = fixture_verifier().verify(CLAIM, [site.url("/visible"), site.url("/style-kept")])
    assert [v.label for v in report.citations] == [Label.supported, Label.supported]


@pytest.mark.parametrize("name", list(HIDING))
def test_hidden_text_does_not_support_the_claim(site: LoopbackSite, name: str) -> None:
    report = fixture_verifier().verify(CLAIM, [site.url(f"/{name}")])
    verdict = report.citations[0]
    assert verdict.label == Label.not_found and verdict.evidence_quote is None, verdict
    assert verdict.reason == "no_relevant_passage"  # judged on its visible text, which says nothing of the sort


@pytest.mark.parametrize("name", list(HIDING))
def test_the_one_rule_drops_each_way_of_hiding(name: str) -> None:
    """The rule itself (trafilatura alone already skips some of these; the fallback reads them all)."""
    root = lxml.html.document_fromstring(page(HIDING[name]))
    assert drop_hidden(root) == 1
    assert "lighthouse" not in root.text_content() and "Local fishermen" in root.text_content()


def test_styles_that_do_not_hide_are_kept() -> None:
    for style in ("height:0", "opacity:0.5", "left:-9999px", "position:absolute; left:-20px", "font-size:small"):
        root = lxml.html.document_fromstring(f'<html><body><p style="{style}">{SECRET}</p></body></html>')
        assert drop_hidden(root) == 0, style


def test_hidden_text_is_dropped_by_the_plain_text_fallback_too() -> None:
    # Nothing for trafilatura to extract (no block elements): the lxml fallback reads the page.
    text, _ = html_to_markdown(f"<html><body>Seen words.<span hidden>{SECRET}</span> More seen.</body></html>")
    assert "Seen words." in text and "lighthouse" not in text


def test_hidden_text_in_html_from_crawlbase_does_not_support_the_claim() -> None:
    api = FakeCrawlbase().start()
    try:
        visible, hidden = "https://example.org/visible", "https://example.org/hidden"
        html = "text/html; charset=utf-8"  # format=md not honoured: the fetcher converts the HTML
        api.targets[visible] = FakeTarget(readable=page("<p>{s}</p>"), content_type=html)
        api.targets[hidden] = FakeTarget(readable=page(HIDING["off_screen"]), content_type=html)
        fetcher = CrawlbaseFetcher(NORMAL_TOKEN, api_url=api.api_url, retry_base_delay=0.01, timeout=5.0)
        verifier = Verifier(fetcher=fetcher, judge=OverlapJudge(), embedder=HashEmbedder())
        report = verifier.verify(CLAIM, [visible, hidden])
    finally:
        api.stop()
    assert [v.label for v in report.citations] == [Label.supported, Label.not_found]
