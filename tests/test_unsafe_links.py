"""javascript:, vbscript:, data: and file: links in an answer: found however they are written
(outside code), then stripped, badged or blocked by the policy, end to end through Verifier."""

from __future__ import annotations

import time

import pytest

from guardrail import Verifier
from guardrail.core.policy import CitationBlocked, Policy, apply_policy
from guardrail.core.schema import AnswerReport
from guardrail.core.unsafe_links import UnsafeLink, find_unsafe_links, unsafe_scheme
from guardrail.settings import Settings
from guardrail.testing import HashEmbedder, OverlapJudge
from tests.fakes import GOOD_URL, static_pages


def spans(answer: str) -> list[tuple[str, str, str, str]]:
    """(kind, scheme, the span's text, what stripping leaves) of each unsafe link found."""
    data = answer.encode()
    return [(u.kind, u.scheme, data[u.start : u.end].decode(), u.text) for u in find_unsafe_links(answer)]


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ("Go [here](javascript:alert(1)) now.", [("link", "javascript", "[here](javascript:alert(1))", "here")]),
        ("A ![chart](data:text/html,<b>x</b>) b", [("image", "data", "![chart](data:text/html,<b>x</b>)", "chart")]),
        ('Read [it](file:///etc/passwd "title").', [("link", "file", '[it](file:///etc/passwd "title")', "it")]),
        ("Old [x](VBScript:msgbox(1)) y", [("link", "vbscript", "[x](VBScript:msgbox(1))", "x")]),
        ("Open <javascript:alert(1)> now", [("autolink", "javascript", "<javascript:alert(1)>", "")]),
        ("See [a [b] c](javascript:x).", [("link", "javascript", "[a [b] c](javascript:x)", "a [b] c")]),
        ("See [a](<javascript:x>).", [("link", "javascript", "[a](<javascript:x>)", "a")]),
        ("Text.\n\n[1]: javascript:alert(1)\n", [("definition", "javascript", "[1]: javascript:alert(1)\n", "")]),
        ('A <a href="javascript:go()">x</a>', [("html_attribute", "javascript", ' href="javascript:go()"', "")]),
        ("A <img src='data:image/svg+xml,x'>", [("html_attribute", "data", " src='data:image/svg+xml,x'", "")]),
    ],
)
def test_each_kind_of_unsafe_link_is_found_with_its_span(answer: str, found: list[tuple[str, ...]]) -> None:
    assert spans(answer) == found


@pytest.mark.parametrize(
    "target",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "&#106;avascript:alert(1)",
        "&#x6A;avascript:alert(1)",
        "javascript&colon;alert(1)",
        "javascript\\:alert(1)",
        "java\tscript:alert(1)",
        "java\nscript:alert(1)",
        " \x01javascript:alert(1)",
        "&#32;javascript:alert(1)",
        "data:text/html;base64,PHNjcmlwdD4=",
        "file:///etc/passwd",
        "vbscript:msgbox",
        "&#32;" * 60,
    ],
)
def test_schemes_are_read_as_a_browser_reads_them(target: str) -> None:
    assert unsafe_scheme(target) is not None


@pytest.mark.parametrize(
    "target",
    ["https://example.org/", "http://x/javascript:y", "mailto:a@example.org", "/relative/data:x", "ftp://h/", "#top"],
)
def test_other_targets_are_not_unsafe(target: str) -> None:
    assert unsafe_scheme(target) is None


def test_a_browser_reading_html_sees_through_tabs_and_references_in_attributes() -> None:
    answer = '<a href="java&#9;script:go()">x</a> <a href=" &#106;avascript:go()">y</a>'
    assert [kind for kind, *_ in spans(answer)] == ["html_attribute", "html_attribute"]


@pytest.mark.parametrize(
    "answer",
    [
        "Never write `[x](javascript:alert(1))` in a page.",
        'An example:\n\n```html\n<a href="javascript:go()">x</a>\n[y](javascript:z)\n```\n',
        "In ``code with ` inside [x](javascript:a)`` only.",
        "~~~\n<javascript:alert(1)>\n~~~",
        "The data: we measured [the data](https://example.org/data) at file: level.",
        "Safe [link](https://example.org/a) and <https://example.org/b>.",
    ],
)
def test_code_and_safe_links_are_left_alone(answer: str) -> None:
    assert find_unsafe_links(answer) == []


def test_offsets_are_utf8_bytes_after_non_ascii_text() -> None:
    answer = "Café ☕ — see [here](javascript:x)."
    [link] = find_unsafe_links(answer)
    assert answer.encode()[link.start : link.end] == b"[here](javascript:x)"


@pytest.mark.parametrize(
    "hostile",
    [
        "[a](" * 20_000,
        "](javascript:" * 20_000,
        "[x](javascript:a)" * 10_000,
        'href="' * 30_000,
        "<javascript:" * 20_000,
        "`" * 50_000,
        "[" * 1_000 + "](javascript:x)" * 10_000,
        "[x](&#106;avascript:a) " * 10_000,
    ],
)
def test_the_scan_stays_linear_on_hostile_input(hostile: str) -> None:
    """Each of these is a few hundred KB: a linear scan takes milliseconds, a quadratic one minutes;
    the bound sits far from both, so a loaded machine cannot trip it."""
    started = time.perf_counter()
    find_unsafe_links(hostile)
    assert time.perf_counter() - started < 30


# -- the policy ---------------------------------------------------------------------------------

ANSWER = (
    f"Water boils at 100 degrees Celsius at sea level [source]({GOOD_URL}). "
    "Click [here](javascript:alert(1)) or <javascript:alert(2)> for more.\n\n"
    'A picture ![pic](data:text/html,x) and <a href="javascript:evil()">x</a>.\n'
)


async def _report(answer: str = ANSWER) -> AnswerReport:
    verifier = Verifier(judge=OverlapJudge(), embedder=HashEmbedder(), fetcher=static_pages(), settings=Settings())
    return await verifier.averify_answer(answer)


async def test_the_default_policy_strips_them_and_leaves_a_badge() -> None:
    guarded = apply_policy(await _report())
    assert not guarded.blocked
    assert guarded.text == (
        f"Water boils at 100 degrees Celsius at sea level [source]({GOOD_URL}). "
        "Click here ⛔ unsafe link or ⛔ unsafe link for more.\n\n"
        "A picture pic ⛔ unsafe link and <a>x</a>.\n"
    )
    assert [u.kind for u in guarded.unsafe_links] == ["link", "autolink", "image", "html_attribute"]
    assert all(isinstance(u, UnsafeLink) for u in guarded.unsafe_links)


async def test_html_output_badges_them_and_names_the_scheme() -> None:
    text = apply_policy(await _report(), Policy(), "html").text
    assert "(javascript:" not in text and "<javascript:" not in text and "href=" not in text and "(data:" not in text
    assert (
        text.count('<span class="citation-verdict citation-verdict--unsafe-link" title="javascript: link removed">')
        == 2
    )
    assert 'title="data: link removed">⛔ unsafe link</span>' in text


@pytest.mark.parametrize("policy", [Policy.strict(), Policy.preset("strict"), Policy.preset("block")])
async def test_strict_and_block_withhold_the_answer(policy: Policy) -> None:
    guarded = apply_policy(await _report(), policy)
    assert guarded.blocked and guarded.text == policy.block_message
    assert len(guarded.unsafe_links) == 4
    with pytest.raises(CitationBlocked):
        apply_policy(await _report(), policy.model_copy(update={"raise_on_block": True}))


async def test_strict_passes_an_answer_without_unsafe_links() -> None:
    answer = f"Water boils at 100 degrees Celsius at sea level [source]({GOOD_URL})."
    guarded = apply_policy(await _report(answer), Policy.strict())
    assert not guarded.blocked and guarded.text == answer and guarded.unsafe_links == []


async def test_the_strip_preset_removes_them_quietly() -> None:
    text = apply_policy(await _report(), Policy.preset("strip")).text
    assert "Click here or for more." in text and "A picture pic and <a>x</a>." in text and "⛔" not in text


@pytest.mark.parametrize(("setting", "kept"), [("annotate", True), ("keep", True), ("strip", False)])
async def test_each_action_can_be_chosen(setting: str, kept: bool) -> None:
    guarded = apply_policy(await _report(), Policy(unsafe_link=setting))
    assert ("[here](javascript:alert(1))" in guarded.text) is kept
    assert ("[here](javascript:alert(1)) ⛔ unsafe link" in guarded.text) is (setting == "annotate")


async def test_the_annotate_preset_leaves_them_as_written_but_lists_them() -> None:
    guarded = apply_policy(await _report(), Policy.preset("annotate"))
    assert "[here](javascript:alert(1))" in guarded.text and len(guarded.unsafe_links) == 4


async def test_a_stripped_definition_takes_its_line_and_the_citations_stay() -> None:
    answer = (
        f"Water boils at 100 degrees Celsius at sea level [source]({GOOD_URL}). See [the notes][n].\n\n"
        "[n]: javascript:alert(1)\n"
    )
    text = apply_policy(await _report(answer)).text
    assert "javascript:" not in text and "[n]:" not in text and f"[source]({GOOD_URL})" in text


async def test_an_unsafe_link_around_a_citation_marker_is_stripped_whole() -> None:
    """An edit the policy wanted inside the stripped span gives way to the strip."""
    answer = f"Water boils at 100 degrees Celsius at sea level [source]({GOOD_URL}). Read [this [1]](javascript:x)."
    guarded = apply_policy(await _report(answer), Policy(unsafe_link="strip"))
    assert "javascript:" not in guarded.text and "Read this [1]." in guarded.text
