"""What a person sees, in a real browser (Playwright driving the system's Chromium), with every
request that leaves 127.0.0.1 refused: the service's ``/docs`` and ``/redoc`` render from assets
the service serves itself, and the batch HTML report renders its tables and badges.

Playwright cannot download its own browsers here, so the test drives an installed Chromium
(``apt-get install chromium``, or the path in ``GUARDRAIL_TEST_CHROMIUM``) and is skipped, saying
so, where there is none. With ``GUARDRAIL_UPDATE_SCREENSHOTS=1`` it also writes the README's
screenshots (``docs/report.png``, ``docs/badges.png``); otherwise it writes them to a temporary
folder only, so that a test run leaves the checkout as it was.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from guardrail.apps.batch import arun_batch_file
from guardrail.apps.server import create_app
from guardrail.testing import LoopbackSite, Route
from tests.fixtures.uvicorn_server import served
from tests.test_batch import fake_verifier as batch_verifier
from tests.test_batch import mixed_rows, write_jsonl
from tests.test_server import fake_verifier as service_verifier

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the dev extra)")

DOCS = Path(__file__).resolve().parent.parent / "docs"
_CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium_path() -> str | None:
    """The Chromium to drive: ``GUARDRAIL_TEST_CHROMIUM``, else the first of the usual names on PATH."""
    explicit = os.environ.get("GUARDRAIL_TEST_CHROMIUM")
    if explicit:
        return explicit
    return next((found for name in _CHROMIUMS if (found := shutil.which(name))), None)


class Offline:
    """A browser page whose every request to a host other than 127.0.0.1 is aborted and recorded."""

    def __init__(self, page: sync_api.Page) -> None:
        self.page = page
        self.refused: list[str] = []
        self.loaded: list[str] = []
        page.route("**/*", self._route)

    def _route(self, route: sync_api.Route) -> None:
        url = route.request.url
        if urlsplit(url).hostname == "127.0.0.1":
            self.loaded.append(url)
            route.continue_()
        else:
            self.refused.append(url)
            route.abort("blockedbyclient")


@pytest.fixture(scope="module")
def browser() -> Iterator[sync_api.Browser]:
    executable = chromium_path()
    if executable is None:
        pytest.skip(
            "no Chromium installed (apt-get install chromium, or set GUARDRAIL_TEST_CHROMIUM): "
            "Playwright cannot download its own browsers here"
        )
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def offline(browser: sync_api.Browser) -> Iterator[Offline]:
    context = browser.new_context(viewport={"width": 1000, "height": 700})
    try:
        yield Offline(context.new_page())
    finally:
        context.close()


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    """Where the screenshots go: docs/ when asked to update them, a temporary folder otherwise."""
    return DOCS if os.environ.get("GUARDRAIL_UPDATE_SCREENSHOTS") == "1" else tmp_path


def test_docs_and_redoc_render_with_the_network_cut_off(offline: Offline) -> None:
    page = offline.page
    with served(create_app(verifier=service_verifier())) as (host, port):
        base = f"http://{host}:{port}"
        page.goto(base + "/docs")
        # Swagger UI lists every operation by its path once it has loaded its script and the spec.
        page.locator('.opblock-summary-path[data-path="/v1/guard"]').wait_for(state="visible")
        assert page.locator('.opblock-summary-path[data-path="/v1/check-grounding"]').is_visible()
        page.goto(base + "/redoc")
        # ReDoc writes each operation's summary as a heading of the middle panel.
        page.get_by_role("heading", name="Check grounding (Vertex AI compatible)").wait_for(state="visible")
    assert offline.refused == []
    assets = {urlsplit(url).path for url in offline.loaded}
    assert {"/docs-assets/swagger-ui-bundle.js", "/docs-assets/redoc.standalone.js", "/openapi.json"} <= assets


def test_batch_report_renders_its_tables_and_badges(
    offline: Offline, pages: LoopbackSite, tmp_path: Path, screenshots: Path
) -> None:
    verifier, _ = batch_verifier()
    rows = write_jsonl(tmp_path / "outputs.jsonl", mixed_rows(pages))
    report_path = tmp_path / "report.html"
    with ThreadPoolExecutor(1) as worker:  # Playwright's sync API keeps an event loop in this thread
        run = arun_batch_file(rows, tmp_path / "report.csv", verifier=verifier, html_path=report_path)
        worker.submit(asyncio.run, run).result()
    with LoopbackSite({"/report.html": Route(body=report_path.read_bytes())}) as site:
        page = offline.page
        page.goto(site.url("/report.html"))
        table = page.locator("table").first
        table.wait_for(state="visible")
        assert "claim" in table.inner_text() and "evidence" in page.locator("table").last.inner_text()
        answer = page.locator("div.answer").first
        badge = answer.locator(".citation-verdict--supported").first
        assert badge.is_visible() and badge.evaluate("e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"
        page.screenshot(path=screenshots / "report.png")
        answer.screenshot(path=screenshots / "badges.png")
    assert offline.refused == []
    assert (screenshots / "report.png").stat().st_size > 10_000 and (screenshots / "badges.png").stat().st_size > 1_000
