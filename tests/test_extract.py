"""Answer -> claims and citations: sentences, byte offsets, every citation syntax, reference lists,
the paragraph-end rule, code, unresolved markers and each kind of source passed in."""

from __future__ import annotations

from typing import Any

import pytest

from guardrail import extract_claims, needs_grounding, normalize_sources, stream_cut
from guardrail.core.extract import ExtractedAnswer
from guardrail.core.schema import AnswerClaim, CitationRef
from tests.fakes import LCDocument, LINode, LINodeWithScore


def piece(answer: str, start: int, end: int) -> str:
    return answer.encode("utf-8")[start:end].decode("utf-8")


def texts(ex: ExtractedAnswer) -> list[str]:
    return [c.text for c in ex.claims]


def claim(ex: ExtractedAnswer, startswith: str) -> AnswerClaim:
    found = [c for c in ex.claims if c.text.startswith(startswith)]
    assert len(found) == 1, (startswith, texts(ex))
    return found[0]


def check_spans(answer: str, ex: ExtractedAnswer) -> None:
    """Every reported span is a UTF-8 byte span that decodes to what the report says it holds."""
    for c in ex.claims:
        assert piece(answer, c.start, c.end) == c.text
        for ref in c.citations:
            if ref.kind == "source":
                assert ref.start == ref.end == c.end
            else:
                assert piece(answer, ref.start, ref.end) == ref.marker


# -- sentences ------------------------------------------------------------------------------


def test_abbreviations_decimals_and_urls_do_not_split_sentences() -> None:
    answer = (
        "Dr. Smith et al. measured 100.5 degrees in the U.S. last year. "
        "Many liquids, e.g. ethanol, boil sooner (see https://en.wikipedia.org/wiki/Boiling_point_(x)). "
        "Version 3.14 was released."
    )
    ex = extract_claims(answer)
    assert texts(ex) == [
        "Dr. Smith et al. measured 100.5 degrees in the U.S. last year.",
        "Many liquids, e.g. ethanol, boil sooner (see https://en.wikipedia.org/wiki/Boiling_point_(x)).",
        "Version 3.14 was released.",
    ]
    check_spans(answer, ex)


def test_byte_offsets_with_accents_emoji_and_cjk() -> None:
    answer = "Café crème coûte 3 € 😀 [1]. 日本語の文です[2]。次の文です。 Ünïcödé ends here."
    ex = extract_claims(answer, ["https://a.example/1", "https://a.example/2"])
    assert texts(ex) == ["Café crème coûte 3 € 😀 [1].", "日本語の文です[2]。", "次の文です。", "Ünïcödé ends here."]
    check_spans(answer, ex)
    first = ex.claims[0]
    assert first.start == 0
    assert first.end == len("Café crème coûte 3 € 😀 [1].".encode())
    marker = first.citations[0]
    assert (marker.start, marker.end) == (
        len("Café crème coûte 3 € 😀 ".encode()),
        len("Café crème coûte 3 € 😀 [1]".encode()),
    )
    cjk = ex.claims[1]
    assert cjk.citations[0].url == "https://a.example/2"
    assert cjk.start == answer.encode().index("日本語".encode())


def test_markdown_structure_is_a_sentence_boundary() -> None:
    answer = (
        "## Summary\n"
        "Water boils at 100 degrees\n"
        "at sea level.\n"
        "- Ice melts at 0 degrees\n"
        "- Steam is hot\n"
        "1. First numbered item\n"
        "2) Second numbered item\n"
        "\n"
        "A new paragraph\n"
        "\n"
        "> Quoted text is a claim too\n"
        "\n"
        "Setext heading\n"
        "==============\n"
        "| water | 100 °C |\n"
        "|-------|--------|\n"
        "| ice | 0 °C |\n"
    )
    ex = extract_claims(answer)
    assert texts(ex) == [
        "Summary",
        "Water boils at 100 degrees\nat sea level.",
        "Ice melts at 0 degrees",
        "Steam is hot",
        "First numbered item",
        "Second numbered item",
        "A new paragraph",
        "Quoted text is a claim too",
        "Setext heading",
        "| water | 100 °C |",
        "| ice | 0 °C |",
    ]
    check_spans(answer, ex)
    assert not claim(ex, "Summary").grounding_check_required
    assert not claim(ex, "Setext heading").grounding_check_required
    assert claim(ex, "Water boils").plain_text == "Water boils at 100 degrees at sea level."
    assert claim(ex, "| water").plain_text == "water 100 °C"


def test_citation_only_fragment_joins_the_sentence_before_it() -> None:
    answer = "Water boils at 100 degrees. [1][2] Ice melts at zero."
    ex = extract_claims(answer, ["https://a.example/1", "https://a.example/2"])
    assert texts(ex) == ["Water boils at 100 degrees. [1][2]", "Ice melts at zero."]
    assert [c.url for c in ex.claims[0].citations] == ["https://a.example/1", "https://a.example/2"]
    assert [c.marker for c in ex.claims[0].citations] == ["[1]", "[2]"]


def test_fenced_code_is_neither_claim_nor_citation() -> None:
    answer = (
        "Run this:\n\n```python\nprint('x [1]')  # https://code.example/a\n```\n\n"
        "~~~\nmore [2] code\n~~~\n\nWater boils [1]."
    )
    ex = extract_claims(answer, ["https://a.example/1", "https://a.example/2"])
    assert texts(ex) == ["Run this:", "Water boils [1]."]
    assert [c.url for c in ex.claims[1].citations] == ["https://a.example/1"]
    assert all("code.example" not in (c.url or "") for cl in ex.claims for c in cl.citations)


def test_inline_code_holds_no_citation() -> None:
    answer = "Call `fetch([1], 'https://code.example/x')` to get it [2]."
    ex = extract_claims(answer, ["https://a.example/1", "https://a.example/2"])
    assert [(c.marker, c.url) for c in ex.claims[0].citations] == [("[2]", "https://a.example/2")]
    assert ex.claims[0].plain_text == "Call fetch([1], 'https://code.example/x') to get it."


# -- which sentences assert something ---------------------------------------------------------


@pytest.mark.parametrize(
    "sentence",
    [
        "Here is what I found.",
        "Here's a summary of the results.",
        "Sure! Here are some sources.",
        "Sources:",
        "Let me know if you have other questions.",
        "I hope this helps!",
        "Feel free to ask more.",
        "If you have any other questions, just ask.",
        "Would you like to know more?",
        "In summary:",
        "https://a.example/x",
        "[1]",
        "---",
        "See https://a.example/x for details.",
    ],
)
def test_sentences_that_assert_nothing(sentence: str) -> None:
    ex = extract_claims(sentence)
    assert all(not c.grounding_check_required for c in ex.claims), ex.claims


@pytest.mark.parametrize(
    "sentence",
    [
        "Water boils at 100 degrees Celsius.",
        "Great Britain is an island.",
        "I found that water boils at 100 degrees.",
        "Here are the facts: water boils at 100 degrees.",
        "If you heat water to 100 degrees it boils.",
        "Sure is a word with four letters.",
        "日本語の文です。",
    ],
)
def test_sentences_that_assert_something(sentence: str) -> None:
    assert needs_grounding(sentence)
    assert extract_claims(sentence).claims[0].grounding_check_required


def test_headings_never_need_grounding() -> None:
    ex = extract_claims("# Water boils at 100 degrees\n\nWater boils at 100 degrees.")
    assert [c.grounding_check_required for c in ex.claims] == [False, True]


def test_extra_non_assertive_patterns() -> None:
    ex = extract_claims("Great news for you. Water boils.", extra_non_assertive=[r"great news for you"])
    assert [c.grounding_check_required for c in ex.claims] == [False, True]


# -- links, URLs, autolinks -------------------------------------------------------------------


def test_inline_markdown_links_with_and_without_title() -> None:
    answer = (
        'The [WHO](https://who.example/a "WHO page") says so. '
        "[Wikipedia](https://en.wikipedia.org/wiki/Water_(molecule)) agrees. "
        "Another [site](<https://x.example/a b>) too. "
        "An ![image](https://img.example/a.png) is no citation, nor is [mail](mailto:a@b.example)."
    )
    ex = extract_claims(answer)
    check_spans(answer, ex)
    who = claim(ex, "The [WHO]").citations
    assert [(c.kind, c.url, c.link_text, c.marker) for c in who] == [
        ("markdown_link", "https://who.example/a", "WHO", '[WHO](https://who.example/a "WHO page")')
    ]
    assert claim(ex, "The [WHO]").plain_text == "The WHO says so."
    assert claim(ex, "[Wikipedia]").citations[0].url == "https://en.wikipedia.org/wiki/Water_(molecule)"
    assert claim(ex, "Another").citations[0].url == "https://x.example/a b"
    assert claim(ex, "An !").citations == []


def test_links_alone_in_parentheses_leave_no_link_text_in_the_claim() -> None:
    answer = (
        "The Alder River is 180 km long ([source](https://a.example/r)). "
        "It floods in spring ([BBC](https://b.example/1); [AP](https://c.example/2)). "
        "The [WHO](https://who.example/a) (a UN agency) says so."
    )
    ex = extract_claims(answer)
    check_spans(answer, ex)
    assert [c.plain_text for c in ex.claims] == [
        "The Alder River is 180 km long.",
        "It floods in spring.",
        "The WHO (a UN agency) says so.",
    ]
    assert [len(c.citations) for c in ex.claims] == [1, 2, 1]


def test_marker_like_link_text_is_not_kept_as_text() -> None:
    ex = extract_claims("Water boils [1](https://a.example/1).")
    ref = ex.claims[0].citations[0]
    assert ref.kind == "markdown_link" and ref.link_text is None and ref.url == "https://a.example/1"


def test_bare_urls_and_autolinks() -> None:
    answer = (
        "Water boils (https://a.example/boil). "
        "See also <https://b.example/x?y=1&z=2>, and https://en.wikipedia.org/wiki/Foo_(bar). "
        "Bold **https://c.example/p** works; so does https://d.example/q."
    )
    ex = extract_claims(answer)
    check_spans(answer, ex)
    got = [(c.kind, c.url) for cl in ex.claims for c in cl.citations]
    assert got == [
        ("bare_url", "https://a.example/boil"),
        ("autolink", "https://b.example/x?y=1&z=2"),
        ("bare_url", "https://en.wikipedia.org/wiki/Foo_(bar)"),
        ("bare_url", "https://c.example/p"),
        ("bare_url", "https://d.example/q"),
    ]
    autolink = ex.claims[1].citations[0]
    assert autolink.marker == "<https://b.example/x?y=1&z=2>"


def test_autolink_and_bare_url_with_parentheses_keep_them_and_drop_trailing_punctuation() -> None:
    answer = "See <https://en.wikipedia.org/wiki/Foo_(bar)>. Also (https://e.example/a_(b)_c), ok."
    ex = extract_claims(answer)
    check_spans(answer, ex)
    got = [(c.kind, c.url, c.marker) for cl in ex.claims for c in cl.citations]
    assert got == [
        ("autolink", "https://en.wikipedia.org/wiki/Foo_(bar)", "<https://en.wikipedia.org/wiki/Foo_(bar)>"),
        ("bare_url", "https://e.example/a_(b)_c", "https://e.example/a_(b)_c"),
    ]


def test_ftp_and_mailto_are_not_citations() -> None:
    ex = extract_claims("Mail mailto:a@b.example or ftp://f.example/x now.")
    assert ex.claims[0].citations == []


# -- numbered markers --------------------------------------------------------------------------

SRC = [f"https://s.example/{n}" for n in range(1, 6)]


@pytest.mark.parametrize(
    ("text", "refs"),
    [
        ("Water boils [1].", ["1"]),
        ("Water boils [1, 3].", ["1", "3"]),
        ("Water boils [1,3].", ["1", "3"]),
        ("Water boils [1; 2].", ["1", "2"]),
        ("Water boils [1-3].", ["1", "2", "3"]),
        ("Water boils [2–4].", ["2", "3", "4"]),
        ("Water boils [1][2].", ["1", "2"]),
        ("Water boils.^[2]", ["2"]),
        ("Water boils[^3].", ["3"]),
    ],
)
def test_numbered_marker_syntaxes(text: str, refs: list[str]) -> None:
    ex = extract_claims(text, SRC)
    cites = ex.claims[0].citations
    assert [c.ref for c in cites] == refs
    assert [c.url for c in cites] == [SRC[int(r) - 1] for r in refs]
    assert [c.source_index for c in cites] == [int(r) - 1 for r in refs]
    assert all(c.kind == "numbered" for c in cites)
    check_spans(text, ex)


def test_group_marker_gives_one_citation_per_number_sharing_the_span() -> None:
    ex = extract_claims("Water boils [1, 3].", SRC)
    a, b = ex.claims[0].citations
    assert (a.start, a.end, a.marker) == (b.start, b.end, b.marker) == (12, 18, "[1, 3]")


def test_not_markers_years_escaped_brackets_and_links() -> None:
    ex = extract_claims(r"In [2019] and \[1\] nothing is cited.", SRC, cite_unmarked=False)
    assert ex.claims[0].citations == []


def test_unresolved_markers_are_kept() -> None:
    ex = extract_claims("Water boils [7]. Ice melts [^note].", SRC)
    cites = [c for cl in ex.claims for c in cl.citations]
    assert [(c.marker, c.ref, c.url, c.source_index) for c in cites] == [
        ("[7]", "7", None, None),
        ("[^note]", "note", None, None),
    ]


def test_markers_without_sources_or_references_are_kept_unresolved() -> None:
    ex = extract_claims("Water boils [1].")
    (ref,) = ex.claims[0].citations
    assert ref.url is None and ref.ref == "1"


# -- reference lists -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "titles"),
    [
        ('[1]: https://r.example/1\n[2]: https://r.example/2 "Two"\n', [None, "Two"]),
        ("[1] https://r.example/1\n[2] Second page - https://r.example/2\n", [None, "Second page"]),
        ("1. https://r.example/1\n2. https://r.example/2\n", [None, None]),
        ("Sources:\n1. First - https://r.example/1\n2. [Two](https://r.example/2)\n", ["First", "Two"]),
        ("**References**\n\n[1] One: https://r.example/1\n\n[2] <https://r.example/2>\n", ["One", None]),
        ("## Sources\n- [1] https://r.example/1\n- [2] Two (https://r.example/2)\n", [None, "Two"]),
        ("[^1]: https://r.example/1\n[^2]: https://r.example/2\n", [None, None]),
        ("Sources: [1] https://r.example/1 [2] Two https://r.example/2", [None, "Two"]),
    ],
)
def test_reference_list_styles(section: str, titles: list[str | None]) -> None:
    answer = f"Water boils at 100 degrees [1]. Ice melts at 0 degrees [2].\n\n{section}"
    ex = extract_claims(answer)
    check_spans(answer, ex)
    assert texts(ex) == ["Water boils at 100 degrees [1].", "Ice melts at 0 degrees [2]."]
    assert [c.citations[0].url for c in ex.claims] == ["https://r.example/1", "https://r.example/2"]
    assert [(r.label, r.url, r.title) for r in ex.references] == [
        ("1", "https://r.example/1", titles[0]),
        ("2", "https://r.example/2", titles[1]),
    ]
    assert ex.references_start is not None and ex.references_end is not None
    assert piece(answer, ex.references_start, ex.references_end).strip() == section.strip()
    for r in ex.references:
        assert "r.example" in piece(answer, r.start, r.end)


def test_reference_list_wins_over_sources() -> None:
    answer = "Water boils [1].\n\n[1]: https://ref.example/1\n"
    ex = extract_claims(answer, ["https://src.example/1"])
    assert ex.claims[0].citations[0].url == "https://ref.example/1"


def test_reference_definitions_anywhere_are_not_claims() -> None:
    answer = "Water boils [1].\n\n[1]: https://ref.example/1\n\nIce melts [2].\n\n[2]: https://ref.example/2"
    ex = extract_claims(answer)
    assert texts(ex) == ["Water boils [1].", "Ice melts [2]."]
    assert [c.citations[0].url for c in ex.claims] == ["https://ref.example/1", "https://ref.example/2"]
    assert [r.label for r in ex.references] == ["1", "2"]


def test_reference_style_link() -> None:
    answer = "The [WHO report][1] says so.\n\n[1]: https://who.example/r"
    ex = extract_claims(answer)
    (ref,) = ex.claims[0].citations
    assert (ref.kind, ref.url, ref.link_text, ref.ref, ref.marker) == (
        "markdown_link",
        "https://who.example/r",
        "WHO report",
        "1",
        "[WHO report][1]",
    )


def test_a_numbered_list_ending_an_answer_without_markers_stays_claims() -> None:
    answer = "Steps:\n\n1. Boil water at https://a.example/boil first.\n2. Add tea from the tin."
    ex = extract_claims(answer)
    assert texts(ex) == ["Steps:", "Boil water at https://a.example/boil first.", "Add tea from the tin."]
    assert ex.references == []


def test_url_less_entry_under_a_heading_is_an_unresolved_reference() -> None:
    answer = (
        "Water boils [1]. Ice melts [2].\n\nReferences:\n[1] Smith, J. Water. Nature 2020.\n[2] https://r.example/2\n"
    )
    ex = extract_claims(answer)
    assert [c.citations[0].url for c in ex.claims] == [None, "https://r.example/2"]
    assert [(r.label, r.url) for r in ex.references] == [("1", None), ("2", "https://r.example/2")]


def test_unmarked_sources_section_backs_uncited_claims() -> None:
    answer = "Water boils at 100 degrees. Ice melts at 0 degrees.\n\nSources:\n- https://u.example/1\n- https://u.example/2\n"
    ex = extract_claims(answer)
    assert texts(ex) == ["Water boils at 100 degrees.", "Ice melts at 0 degrees."]
    for c in ex.claims:
        assert [(r.kind, r.url, r.ref) for r in c.citations] == [
            ("source", "https://u.example/1", None),
            ("source", "https://u.example/2", None),
        ]
    check_spans(answer, ex)


def test_one_line_sources_heading() -> None:
    answer = "Water boils.\n\nSources: https://u.example/1, https://u.example/2"
    ex = extract_claims(answer)
    assert [r.url for r in ex.references] == ["https://u.example/1", "https://u.example/2"]
    assert texts(ex) == ["Water boils."]


# -- the paragraph-end rule ----------------------------------------------------------------------


def test_marker_at_paragraph_end_covers_uncited_sentences_of_that_paragraph() -> None:
    answer = (
        "Water boils at 100 degrees. It boils lower at altitude. Salt raises it [1].\n\n"
        "Ice melts at zero. Here is what I found. Snow is frozen [2]. Hail falls [3]."
    )
    ex = extract_claims(answer, SRC)
    covered = [(c.text, [(r.ref, r.inherited) for r in c.citations]) for c in ex.claims]
    assert covered == [
        ("Water boils at 100 degrees.", [("1", True)]),
        ("It boils lower at altitude.", [("1", True)]),
        ("Salt raises it [1].", [("1", False)]),
        ("Ice melts at zero.", [("3", True)]),
        ("Here is what I found.", []),  # asserts nothing: not covered
        ("Snow is frozen [2].", [("2", False)]),  # has its own citation
        ("Hail falls [3].", [("3", False)]),
    ]
    inherited = ex.claims[0].citations[0]
    own = ex.claims[2].citations[0]
    assert (inherited.start, inherited.end) == (own.start, own.end)


def test_marker_mid_paragraph_covers_nothing_else() -> None:
    ex = extract_claims("Water boils [1]. Ice melts at zero.", SRC)
    assert [len(c.citations) for c in ex.claims] == [1, 0]


def test_prose_link_at_paragraph_end_does_not_cover_earlier_sentences() -> None:
    ex = extract_claims("Water boils at 100. It is reported by [the WHO](https://who.example/a).")
    assert [len(c.citations) for c in ex.claims] == [0, 1]


def test_bare_url_at_paragraph_end_covers_earlier_sentences() -> None:
    ex = extract_claims("Water boils at 100. Ice melts at 0. https://a.example/x")
    assert [[r.url for r in c.citations] for c in ex.claims] == [["https://a.example/x"]] * 2


def test_paragraph_rule_inside_a_list_item() -> None:
    ex = extract_claims("- Water boils. It is hot [1].\n- Ice melts.", SRC)
    assert [[r.ref for r in c.citations] for c in ex.claims] == [["1"], ["1"], []]


# -- sources passed in ---------------------------------------------------------------------------


def test_every_kind_of_source() -> None:
    sources = [
        "https://s.example/0",
        {"url": "https://s.example/1", "text": "some text"},
        {"text": "Water boils at 100 degrees."},
        LCDocument("Doc text", {"source": "https://s.example/3", "title": "Three"}),
        LCDocument("Local file text", {"source": "docs/a.txt"}),
        LINodeWithScore(LINode("Node text", {"url": "https://s.example/5"})),
        LINode("Bare node", {}),
    ]
    answer = "A [1]. B [2]. C [3]. D [4]. E [5]. F [6]. G [7]."
    ex = extract_claims(answer, sources)
    got = [(c.citations[0].url, c.citations[0].source_index, c.citations[0].source_text) for c in ex.claims]
    assert got == [
        ("https://s.example/0", 0, None),
        ("https://s.example/1", 1, None),  # a URL is fetched, its text not used
        (None, 2, "Water boils at 100 degrees."),
        ("https://s.example/3", 3, None),
        (None, 4, "Local file text"),  # "source" that is a path, not a URL
        ("https://s.example/5", 5, None),
        (None, 6, "Bare node"),
    ]
    assert [(s.index, s.kind, s.url, s.title) for s in ex.sources] == [
        (0, "url", "https://s.example/0", None),
        (1, "url", "https://s.example/1", None),
        (2, "text", None, None),
        (3, "url", "https://s.example/3", "Three"),
        (4, "text", None, None),
        (5, "url", "https://s.example/5", None),
        (6, "text", None, None),
    ]


def test_url_key_is_configurable() -> None:
    doc = LCDocument("text", {"url": "https://wrong.example", "link": "https://right.example/x"})
    assert normalize_sources([doc], url_key="link")[0].url == "https://right.example/x"
    assert normalize_sources([doc])[0].url == "https://wrong.example"
    assert normalize_sources([{"link": "https://right.example/x"}], url_key="link")[0].url == "https://right.example/x"


def test_unmarked_answer_cites_every_source() -> None:
    answer = "Water boils at 100 degrees. Here is what I found."
    ex = extract_claims(answer, ["https://s.example/a", {"text": "fact text"}])
    first, second = ex.claims
    assert [(r.kind, r.url, r.source_index) for r in first.citations] == [
        ("source", "https://s.example/a", 0),
        ("source", None, 1),
    ]
    assert first.citations[1].source_text == "fact text"
    assert second.citations == []  # asserts nothing
    check_spans(answer, ex)


def test_sources_back_uncited_claims_only_when_asked_if_the_answer_has_markers() -> None:
    answer = "Water boils [1]. Ice melts at zero.\n\nSnow is cold."
    assert extract_claims(answer, SRC).claims[2].citations == []
    ex = extract_claims(answer, SRC, cite_unmarked=True)
    assert [r.url for r in ex.claims[2].citations] == SRC
    assert extract_claims("Water boils.", SRC, cite_unmarked=False).claims[0].citations == []


def test_a_cited_url_that_is_also_a_source_carries_its_index() -> None:
    ex = extract_claims("Water boils https://s.example/2.", SRC)
    assert ex.claims[0].citations[0].source_index == 1


@pytest.mark.parametrize(
    ("sources", "error", "message"),
    [
        (["not a url"], ValueError, "sources[0]: a string source must be an http(s) URL"),
        (["https://ok.example", {"title": "x"}], ValueError, "sources[1]: a dict source needs"),
        ([{"url": 3}], TypeError, "sources[0]: 'url' must be a string"),
        ([42], TypeError, "sources[0]: unsupported source type int"),
        ([LCDocument("", {"source": "a.txt"})], ValueError, "sources[0]: the source has neither"),
        ([LCDocument(b"bytes", {})], TypeError, "sources[0]: the source's text must be a string"),  # type: ignore[arg-type]
        ("https://a.example", TypeError, "sources must be a list"),
    ],
)
def test_bad_sources_name_the_index_and_problem(sources: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(
        error, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(").replace(")", r"\)")
    ):
        extract_claims("Water boils [1].", sources)


def test_answer_must_be_a_string() -> None:
    with pytest.raises(TypeError, match="answer must be a string"):
        extract_claims(b"bytes")  # type: ignore[arg-type]


def test_empty_answer_has_no_claims() -> None:
    assert extract_claims("").claims == []
    assert extract_claims("   \n\n ").claims == []


def test_citation_refs_are_pydantic_models() -> None:
    ex = extract_claims("Water boils [1].", SRC)
    assert isinstance(ex.claims[0].citations[0], CitationRef)
    assert ExtractedAnswer.model_validate_json(ex.model_dump_json()) == ex


# -- streaming -----------------------------------------------------------------------------------


def test_stream_cut_advances_sentence_by_sentence_for_cited_sentences() -> None:
    answer = "Water boils at 100 degrees [1]. Ice melts at zero [2]. Steam is hot [3]."
    assert stream_cut(answer[:20], SRC) == 0
    cut = stream_cut(answer[:40], SRC)  # the second sentence has begun
    assert answer[:cut] == "Water boils at 100 degrees [1]. "
    cut = stream_cut(answer, SRC)  # the last sentence could still grow
    assert answer[:cut] == "Water boils at 100 degrees [1]. Ice melts at zero [2]. "


def test_stream_cut_holds_uncited_sentences_until_the_paragraph_ends() -> None:
    answer = "Water boils at 100 degrees. It boils lower up high [1].\n\n- Next item here"
    assert stream_cut(answer[:40], SRC) == 0
    assert stream_cut(answer[: answer.index("\n")], SRC) == 0
    cut = stream_cut(answer, SRC)
    assert answer[:cut] == "Water boils at 100 degrees. It boils lower up high [1].\n\n"


def test_stream_cut_without_sources_waits_for_the_reference_list() -> None:
    answer = "Water boils [1]. Ice melts [2]. Snow"
    assert stream_cut(answer) == 0
    assert stream_cut(answer, SRC) > 0


def test_stream_cut_never_cuts_into_a_reference_section_or_open_fence() -> None:
    answer = "Water boils [1]. Ice melts [2].\n\nSources:\n[1] https://r.example/1\n"
    cut = stream_cut(answer, SRC)
    assert answer[:cut] == "Water boils [1]. "
    fenced = "Water boils [1]. Ice melts [2].\n\n```\ncode"
    assert fenced[: stream_cut(fenced, SRC)] == "Water boils [1]. "


def test_stream_chunks_extract_like_the_whole() -> None:
    answer = "Water boils [1]. Ice melts [2].\n\n- Steam [3] is hot.\n- Fog is wet. Mist too [4].\n\nDone [5]."
    whole = [(c.text, [r.url for r in c.citations]) for c in extract_claims(answer, SRC).claims]
    chunks: list[tuple[str, list[str | None]]] = []
    emitted = 0
    for n in range(1, len(answer) + 1):
        cut = stream_cut(answer[:n], SRC)
        if cut > emitted:
            chunk = answer[emitted:cut]
            chunks += [(c.text, [r.url for r in c.citations]) for c in extract_claims(chunk, SRC).claims]
            emitted = cut
    chunks += [(c.text, [r.url for r in c.citations]) for c in extract_claims(answer[emitted:], SRC).claims]
    assert chunks == whole


@pytest.mark.parametrize(
    "url",
    [
        "http://[2001:db8::1]/page",
        "https://[2001:db8::1]:8443/a/b?q=1#f",
        "http://[::1]/x",
        "http://[fe80::1%25eth0]/x",
    ],
)
def test_urls_with_ipv6_literal_hosts_are_recognised(url: str) -> None:
    """linkify-it-py knows no IPv6 literal: the host is read by us, the rest of the URL by it."""
    definition = extract_claims(f"Water boils at 100 degrees Celsius [1].\n\n[1]: {url}\n")
    assert [r.url for r in definition.references] == [url]
    assert definition.claims[0].citations[0].url == url
    entry = extract_claims(f"Water boils at 100 degrees Celsius [1].\n\n[1] A title - {url}\n")
    assert entry.claims[0].citations[0].url == url
    bare = extract_claims(f"Water boils at 100 degrees Celsius {url}.").claims[0].citations
    assert [(c.kind, c.url) for c in bare] == [("bare_url", url)]


def test_a_bracketed_host_that_is_no_ipv6_address_is_not_a_url() -> None:
    for text in ("See http://[zz::1]/b now.", "See http://[1.2.3.4]/b now.", "See http://[/b now."):
        assert extract_claims(text).claims[0].citations == [], text
