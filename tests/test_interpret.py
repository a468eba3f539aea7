"""The one interpretation step: status codes, transport reasons, homepage redirects, soft 404s,
app shells and bot walls, decided the same way whichever fetcher produced the page."""

from __future__ import annotations

import pytest

from guardrail.core.interpret import SOFT_404_MAX_CHARS, interpret, non_whitespace_chars
from guardrail.core.schema import REASON_DESCRIPTIONS, FetchedPage, Label, Reason
from guardrail.fetch.convert import html_to_markdown
from tests.fixtures import pages as fixture_pages

ARTICLE = "\n\n".join(
    [
        "# The boiling point of water",
        "At standard atmospheric pressure, which is the pressure at sea level, pure water boils at 100 "
        "degrees Celsius (212 degrees Fahrenheit).",
        "At higher altitudes the air pressure is lower, so water boils at a lower temperature.",
    ]
)


def page(**kwargs: object) -> FetchedPage:
    values: dict[str, object] = {"url": "https://example.org/articles/boiling", "original_status": 200}
    values.update(kwargs)
    if "final_url" not in kwargs:
        values["final_url"] = values["url"]
    return FetchedPage.model_validate(values)


def decided(p: FetchedPage) -> tuple[Label | None, str | None]:
    assessment = interpret(p)
    assert assessment.usable is False
    return assessment.label, assessment.reason


def test_an_article_is_usable() -> None:
    assert interpret(page(text=ARTICLE)).usable is True


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 429, 451, 500, 502, 503, 520])
def test_origin_errors_are_unreachable_with_their_code(status: int) -> None:
    """Never judged, even when the error page has text."""
    assert decided(page(original_status=status, text=ARTICLE)) == (Label.unreachable, f"http_{status}")


def test_a_final_redirect_status_without_location_is_not_evidence() -> None:
    assert decided(page(original_status=302, text="")) == (Label.unreachable, "http_302")


@pytest.mark.parametrize(
    ("reason", "label"),
    [
        (Reason.fetch_timeout, Label.unreachable),
        (Reason.fetch_error, Label.unreachable),
        (Reason.blocked_address, Label.unreachable),
        (Reason.invalid_url, Label.unreachable),
        (Reason.too_many_redirects, Label.unreachable),
        (Reason.too_large, Label.not_found),
        (Reason.unsupported_content_type, Label.not_found),
    ],
)
def test_fetcher_reasons_keep_their_code(reason: Reason, label: Label) -> None:
    assert decided(page(original_status=None, reason=reason.value)) == (label, reason.value)
    assert reason.value in REASON_DESCRIPTIONS


def test_a_reason_wins_over_text() -> None:
    assert decided(page(reason=Reason.too_large.value, text=ARTICLE)) == (Label.not_found, "too_large")


@pytest.mark.parametrize(
    ("requested", "final"),
    [
        ("https://example.org/articles/2019/boiling", "https://example.org/"),
        ("https://example.org/articles/2019/boiling", "https://example.org"),
        ("https://example.org/articles/2019/boiling", "https://www.example.org/"),
        ("https://example.org/articles/2019/boiling", "https://example.org/index.html"),
        ("https://example.org/articles/2019/boiling", "https://example.org/en/"),
        ("https://example.org/articles/2019/boiling", "https://example.org/en-us/"),
        ("https://example.org/articles/2019/boiling", "https://example.org/pt_BR/"),
        ("https://example.org/articles/2019/boiling", "https://example.org/es-419/"),
        ("https://example.org/articles/2019/boiling", "https://example.org/id/"),
        ("https://example.org/articles/2019/boiling", "https://example.org/de/index.html"),
        ("https://example.org/articles/2019/boiling", "https://example.org/home"),
        ("https://example.org/articles/2019/boiling", "https://example.org/?from=404"),
        ("https://example.org/?p=123", "https://example.org/"),
    ],
)
def test_deep_link_landing_on_the_home_page(requested: str, final: str) -> None:
    p = page(url=requested, final_url=final, text=ARTICLE, redirects=[requested])
    assert decided(p) == (Label.not_found, Reason.redirected_to_homepage.value)


@pytest.mark.parametrize(
    ("requested", "final"),
    [
        ("https://example.org/", "https://www.example.org/"),  # cited the home page itself
        ("http://example.org", "https://example.org/"),
        ("https://example.org/old-path", "https://example.org/new-path/article"),  # moved, not dropped
        ("https://example.org/articles/boiling", "https://example.org/articles/boiling"),
        # A short path is a page like any other: only / and locale roots (/en/) are home pages.
        ("https://example.org/articles/boiling", "https://example.org/go"),
        ("https://example.org/articles/boiling", "https://example.org/id"),
        ("https://example.org/articles/boiling", "https://example.org/en"),
        ("https://example.org/articles/boiling", "https://example.org/go/"),
        ("https://example.org/articles/boiling", "https://example.org/xx-yy/"),
        ("https://example.org/articles/boiling", "https://example.org/api"),
    ],
)
def test_other_redirects_are_judged(requested: str, final: str) -> None:
    assert interpret(page(url=requested, final_url=final, text=ARTICLE)).usable is True


SOFT_404_TEXTS = [
    "Sorry, the page you are looking for could not be found. It may have been moved or deleted.",
    "# Page not found\n\nTry the search box above.",
    "Error 404\n\n[Home](/) | [Contact](/contact)",
    "Oops! That page can’t be found.",
    "We couldn't find that page. Maybe try one of the links below?",
    "This article no longer exists.",
    "The requested URL was not found on this server.",
    "The page you requested has been removed.",
]


@pytest.mark.parametrize("text", SOFT_404_TEXTS)
def test_short_not_found_templates_are_soft_404(text: str) -> None:
    assert decided(page(text=text)) == (Label.not_found, Reason.soft_404.value)


def test_a_not_found_template_under_the_threshold_but_over_300_characters_is_soft_404() -> None:
    """A template with a long menu: 300 < size < SOFT_404_MAX_CHARS (800), few prose sentences."""
    menu = "\n".join(f"- [Browse our section number {n}](/section/{n})" for n in range(14))
    text = f"# Page not found\n\nSorry, that page could not be found.\n\n{menu}"
    assert 300 < non_whitespace_chars(text) < SOFT_404_MAX_CHARS == 800
    assert decided(page(text=text)) == (Label.not_found, Reason.soft_404.value)


def test_soft_404_by_title_alone() -> None:
    p = page(text="Try searching for what you need, or browse the sections below.", title="404 - Example")
    assert decided(p) == (Label.not_found, Reason.soft_404.value)


def test_long_article_about_404_errors_is_judged() -> None:
    text, title = html_to_markdown(fixture_pages.LONG_404_ARTICLE)
    assert "404" in text
    assert interpret(page(text=text, title=title)).usable is True


def test_a_padded_not_found_template_over_the_threshold_is_judged() -> None:
    """The threshold is on the readable text: a page above it is content, whatever it mentions."""
    sentence = "Water boils at one hundred degrees Celsius at sea level under normal pressure. "
    text = "Page not found is a phrase we discuss. " + sentence * 12
    assert non_whitespace_chars(text) > SOFT_404_MAX_CHARS
    assert interpret(page(text=text)).usable is True


def test_a_short_real_page_that_says_not_found_in_passing_is_judged() -> None:
    text = "The missing hiker was not found after three days of searching in the national park."
    assert interpret(page(text=text)).usable is True


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\n  ",
        "You need to enable JavaScript to run this app.",
        "Loading...",
        "Please enable JavaScript to view this page.",
    ],
)
def test_empty_pages_and_app_shells(text: str) -> None:
    assert decided(page(text=text)) == (Label.not_found, Reason.empty_page.value)


def test_app_shell_fixture_is_empty_page() -> None:
    text, title = html_to_markdown(fixture_pages.EMPTY_SHELL)
    assert decided(page(text=text, title=title)) == (Label.not_found, Reason.empty_page.value)


BOT_TEXTS = [
    "Checking your browser before accessing the site. Please verify you are human.",
    "Just a moment...\n\nEnable JavaScript and cookies to continue",
    "Please complete the security check to access example.org",
    "Press & Hold to confirm you are a human (and not a bot).",
    "Our systems have detected unusual traffic from your computer network.",
    "Verify you're human by completing the action below.",
]


@pytest.mark.parametrize("text", BOT_TEXTS)
def test_bot_walls_are_bot_challenge(text: str) -> None:
    assert decided(page(text=text)) == (Label.not_found, Reason.bot_challenge.value)


def test_bot_wall_fixture_and_cloudflare_title() -> None:
    text, title = html_to_markdown(fixture_pages.BOT_CHECK)
    assert decided(page(text=text, title=title)) == (Label.not_found, Reason.bot_challenge.value)
    p = page(text="example.org needs to review the security of your connection.", title="Just a moment...")
    assert decided(p) == (Label.not_found, Reason.bot_challenge.value)


def test_an_article_about_captchas_is_judged() -> None:
    text = "\n\n".join(
        [
            "# How CAPTCHA tests work",
            "A CAPTCHA is a challenge-response test used to tell humans and automated programs apart online.",
            "The first versions asked people to read distorted letters that optical character recognition "
            "software of the time could not decipher reliably.",
            "Later systems such as reCAPTCHA used the answers to digitise old books and newspapers, turning "
            "millions of small tasks into a large transcription effort.",
            "Modern checks watch how the mouse moves and how the page is used, so most visitors never see a "
            "puzzle at all unless their behaviour looks unusual to the site.",
            "Critics point out that these tests can be hard for people with visual impairments, which is why "
            "audio alternatives are required by accessibility guidelines.",
            "Researchers have also shown that machine learning models now solve many image puzzles faster "
            "and more accurately than the humans they were designed to admit.",
        ]
    )
    assert interpret(page(text=text)).usable is True


def test_crawlbase_markdown_is_interpreted_like_direct_pages() -> None:
    """Same rules for a page fetched through Crawlbase (markdown, status from headers)."""
    base = {"fetcher": "crawlbase", "content_type": "text/markdown", "rid": "abc"}
    assert interpret(page(text=ARTICLE, **base)).usable is True
    assert decided(page(original_status=404, **base)) == (Label.unreachable, "http_404")
    assert decided(page(text="# Page Not Found\n\nSorry!", **base)) == (Label.not_found, "soft_404")
    moved = page(url="https://example.org/a/b", final_url="https://example.org/", text=ARTICLE, **base)
    assert decided(moved) == (Label.not_found, "redirected_to_homepage")
