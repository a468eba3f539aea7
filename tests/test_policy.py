"""Policies and badges: keep / annotate / strip / block applied to reports, markdown left intact.

Reports are built from the real extractor with verdicts chosen per URL, so each test names the
verdicts it applies and checks the exact text that results.
"""

from __future__ import annotations

from typing import Any

import pytest

from guardrail import (
    Action,
    AnswerReport,
    Badges,
    CitationBlocked,
    GuardedAnswer,
    Label,
    Policy,
    UrlVerdict,
    apply_policy,
    extract_claims,
    stream_cut,
)
from guardrail.core.aggregate import aggregate
from guardrail.core.policy import POLICY_PRESETS, render_badge
from guardrail.core.schema import Reason

S, C, N, U = Label.supported, Label.contradicted, Label.not_found, Label.unreachable
A, B, D = "https://a.example/1", "https://b.example/2", "https://dead.example/3"


def report(answer: str, labels: dict[str, Label], sources: Any = None, **kw: Any) -> AnswerReport:
    """What the verifier would report if each URL (or fact source) got the label in ``labels``."""
    ex = extract_claims(answer, sources, **kw)
    claims = []
    for c in ex.claims:
        if c.grounding_check_required and c.citations:
            verdicts = []
            for r in c.citations:
                key = r.url or (f"fact:{r.source_index}" if r.source_text else None)
                if key is None:
                    verdicts.append(UrlVerdict(url=r.marker, label=N, reason=Reason.unresolved_citation.value))
                else:
                    label = labels[key]
                    quote = f'The page says "{key}" <q>' if label in (S, C) else None
                    reason = "http_404" if label == U else None
                    verdicts.append(UrlVerdict(url=key, label=label, evidence_quote=quote, reason=reason))
            c = c.model_copy(update={"verdicts": verdicts, "overall": aggregate(v.label for v in verdicts)})
        claims.append(c)
    return AnswerReport(
        answer=answer,
        claims=claims,
        overall=aggregate(c.overall for c in claims if c.overall is not None),
        references=ex.references,
        references_start=ex.references_start,
        references_end=ex.references_end,
        sources=ex.sources,
    )


def guard(
    answer: str, labels: dict[str, Label], policy: Policy | None = None, fmt: Any = "markdown", **kw: Any
) -> GuardedAnswer:
    return apply_policy(report(answer, labels, **kw), policy, fmt)


# -- the Policy model ------------------------------------------------------------------------------


def test_defaults() -> None:
    p = Policy()
    assert p.actions_for(S) == {Action.keep}
    assert p.actions_for(N) == {Action.annotate}
    assert p.actions_for(U) == {Action.strip, Action.annotate}
    assert p.actions_for(C) == {Action.annotate}
    assert Policy.strict().actions_for(C) == {Action.block}
    assert Policy.strict().actions_for(U) == {Action.strip, Action.annotate}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Action.strip, {Action.strip}),
        ("strip", {Action.strip}),
        ("strip+annotate", {Action.strip, Action.annotate}),
        ("Annotate, Strip", {Action.strip, Action.annotate}),
        ([Action.strip, "annotate"], {Action.strip, Action.annotate}),
    ],
)
def test_actions_accept_strings_and_combinations(value: Any, expected: set[Action]) -> None:
    assert Policy(contradicted=value).actions_for(C) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("delete", "unknown action 'delete'"),
        ("keep+annotate", "keep and block cannot be combined"),
        ([Action.block, Action.strip], "keep and block cannot be combined"),
        ([], "must not be empty"),
        (3, "an action must be"),
    ],
)
def test_bad_actions_are_rejected(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Policy(not_found=value)


def test_presets() -> None:
    assert set(POLICY_PRESETS) == {"annotate", "default", "strip", "block", "strict", "repair"}
    assert Policy.preset("repair") == Policy(repair=True)
    assert all(Policy.preset("annotate").actions_for(label) == {Action.annotate} for label in Label)
    assert Policy.preset("default") == Policy()
    assert Policy.preset("strict") == Policy.strict()
    strip = Policy.preset("strip")
    assert [strip.actions_for(label) for label in (S, C, N, U)] == [{Action.keep}] + [{Action.strip}] * 3
    block = Policy.preset("block")
    assert [block.actions_for(label) for label in (S, C, N, U)] == [{Action.keep}] + [{Action.block}] * 3
    assert Policy.preset("strict", block_message="no").block_message == "no"
    with pytest.raises(ValueError, match="unknown policy preset 'nope'"):
        Policy.preset("nope")


def test_policy_round_trips_as_json() -> None:
    p = Policy.strict(badges=Badges(supported="OK"))
    assert Policy.model_validate_json(p.model_dump_json()) == p


# -- annotate --------------------------------------------------------------------------------------


def test_annotate_puts_the_badge_after_each_kind_of_citation() -> None:
    answer = f"Water boils [1]. The [WHO]({A}) agrees. See {B} too. Also <{D}>.\n\n[1]: {A}\n"
    g = guard(answer, {A: C, B: N, D: N}, Policy.preset("annotate"))
    assert g.text == (
        f"Water boils [1] ❌ contradicted. The [WHO]({A}) ❌ contradicted agrees. "
        f"See {B} ⚠️ unverified too. Also <{D}> ⚠️ unverified.\n\n[1]: {A}\n"
    )
    assert not g.blocked


def test_default_policy_keeps_supported_and_flags_the_rest() -> None:
    answer = f"Water boils [1]. Ice melts [2]. Snow is cold [3].\n\n[1]: {A}\n[2]: {B}\n[3]: {D}\n"
    g = guard(answer, {A: S, B: C, D: U})
    assert (
        g.text == f"Water boils [1]. Ice melts [2] ❌ contradicted. Snow is cold ⛔ dead link.\n\n[1]: {A}\n[2]: {B}\n"
    )
    applied = {(a.marker, a.label): (a.stripped, a.badge) for a in g.actions}
    assert applied == {
        ("[1]", S): (False, None),
        ("[2]", C): (False, "❌ contradicted"),
        ("[3]", U): (True, "⛔ dead link"),
    }


def test_unresolved_marker_is_annotated_unverified() -> None:
    g = guard("Water boils [4].", {}, cite_unmarked=False)
    assert g.text == "Water boils [4] ⚠️ unverified."
    assert g.report.claims[0].verdicts[0].reason == "unresolved_citation"


def test_custom_badges() -> None:
    policy = Policy(badges=Badges(contradicted="[WRONG]", not_found="[?]"))
    assert guard(f"Water boils {A}.", {A: C}, policy).text == f"Water boils {A} [WRONG]."


def test_html_badges_escape_the_title() -> None:
    g = guard(f"Water boils [1].\n\n[1]: {A}\n", {A: C}, fmt="html")
    assert g.text == (
        'Water boils [1] <span class="citation-verdict citation-verdict--contradicted" '
        f'title="The page says &quot;{A}&quot; &lt;q&gt;">❌ contradicted</span>.\n\n[1]: {A}\n'
    )
    assert g.format == "html"
    assert (
        render_badge(N, fmt="html") == '<span class="citation-verdict citation-verdict--not-found">⚠️ unverified</span>'
    )
    custom = Policy(badges=Badges(not_found="<b>?</b>"))
    assert ">&lt;b&gt;?&lt;/b&gt;<" in render_badge(N, custom, "html")
    with pytest.raises(ValueError, match="unknown format"):
        apply_policy(report("x", {}), fmt="pdf")  # type: ignore[arg-type]


def test_sources_without_markers_get_one_badge_after_the_sentence() -> None:
    sources = [A, {"text": "Water boils at 100 degrees."}]
    answer = "Water boils at 100 degrees. Ice is hot. Here is what I found."
    labels = {A: N, "fact:1": S}
    g = guard(answer, labels, Policy.preset("annotate"), sources=sources)
    # claim 1: supported by the fact (any supported wins); claim 2: also supported by the fact label map
    assert g.text == "Water boils at 100 degrees. ✅ supported Ice is hot. ✅ supported Here is what I found."
    g2 = guard(answer, {A: N, "fact:1": N}, sources=sources)
    assert g2.text == "Water boils at 100 degrees. ⚠️ unverified Ice is hot. ⚠️ unverified Here is what I found."


def test_group_with_different_verdicts_is_split_so_each_badge_follows_its_number() -> None:
    answer = f"Water boils [1, 2].\n\n[1]: {A}\n[2]: {B}\n"
    g = guard(answer, {A: S, B: C}, Policy.preset("annotate"))
    assert g.text == f"Water boils [1] ✅ supported [2] ❌ contradicted.\n\n[1]: {A}\n[2]: {B}\n"
    same = guard(answer, {A: C, B: C})
    assert same.text == f"Water boils [1, 2] ❌ contradicted.\n\n[1]: {A}\n[2]: {B}\n"


def test_inherited_citation_badges() -> None:
    answer = f"Water boils at 100. Ice is hot. Snow is cold [1].\n\n[1]: {A}\n"
    r = report(answer, {A: S})
    # The covered sentences' verdicts differ from the owner's: their badges go after them.
    claims = list(r.claims)
    claims[1] = claims[1].model_copy(update={"verdicts": [UrlVerdict(url=A, label=N)], "overall": N})
    g = apply_policy(r.model_copy(update={"claims": claims}))
    assert g.text == f"Water boils at 100. Ice is hot. ⚠️ unverified Snow is cold [1].\n\n[1]: {A}\n"


# -- strip -----------------------------------------------------------------------------------------


def test_strip_each_kind_of_citation() -> None:
    answer = (
        f"The [WHO]({D}) says water boils [1]. It is hot ({D}). Ice melts {D} fast. "
        f"Snow <{D}>. See [2]({D}) now.\n\n[1]: {D}\n"
    )
    g = guard(answer, {D: U}, Policy.preset("strip"))
    assert g.text == "The WHO says water boils. It is hot. Ice melts fast. Snow. See now.\n"


def test_strip_and_annotate_puts_the_badge_in_place_of_the_citation() -> None:
    answer = f"The [WHO]({D}) says water boils [1]. Ice melts {D}.\n\n[1]: {D}\n"
    g = guard(answer, {D: U})
    assert g.text == "The WHO ⛔ dead link says water boils ⛔ dead link. Ice melts ⛔ dead link.\n"


def test_a_link_alone_in_parentheses_is_stripped_whole() -> None:
    answer = f"Water boils ([source]({D})). The [WHO]({D}) (a UN agency) says so ( [here]({D}) ).\n"
    assert guard(answer, {D: U}, Policy.preset("strip")).text == "Water boils. The WHO (a UN agency) says so.\n"
    assert guard(answer, {D: U}).text == (
        "Water boils (⛔ dead link). The WHO ⛔ dead link (a UN agency) says so ( ⛔ dead link ).\n"
    )


def test_strip_one_number_of_a_group_and_adjacent_markers() -> None:
    answer = f"Water boils [1, 2, 3]. Ice melts [2][3]. Snow [1][2].\n\n[1]: {A}\n[2]: {D}\n[3]: {D}\n"
    g = guard(answer, {A: S, D: U}, Policy.preset("strip"))
    assert g.text == f"Water boils [1]. Ice melts. Snow [1].\n\n[1]: {A}\n"


def test_strip_removes_reference_entry_only_when_no_citation_still_uses_it() -> None:
    answer = f"Water boils [1]. Ice melts [2]. Snow [2].\n\nSources:\n[1] {A}\n[2] {B}\n"
    r = report(answer, {A: U, B: S})
    claims = list(r.claims)
    # The same reference [2], stripped in one sentence but kept in another: its entry stays.
    claims[1] = claims[1].model_copy(update={"verdicts": [UrlVerdict(url=B, label=U)], "overall": U})
    g = apply_policy(r.model_copy(update={"claims": claims}), Policy.preset("strip"))
    assert g.text == f"Water boils. Ice melts. Snow [2].\n\nSources:\n[2] {B}\n"


def test_strip_removes_the_whole_section_when_every_entry_goes() -> None:
    answer = f"Water boils [1]. Ice melts [2].\n\n## Sources\n\n1. {D}\n2. Dead page - {B}\n\n"
    g = guard(answer, {D: U, B: U}, Policy.preset("strip"))
    assert g.text == "Water boils. Ice melts.\n"


def test_entries_of_unchecked_claims_are_kept() -> None:
    answer = f"Water boils [1]. Would you like to know more [1]?\n\n[1]: {D}\n"
    g = guard(answer, {D: U}, Policy.preset("strip"))
    assert g.text == f"Water boils. Would you like to know more [1]?\n\n[1]: {D}\n"


def test_strip_unmarked_sources_entry() -> None:
    answer = f"Water boils at 100 degrees.\n\nSources:\n- {A}\n- {D}\n"
    g = guard(answer, {A: S, D: U}, Policy.preset("strip"))
    # The sentence is supported overall; the dead source's entry goes, the good one stays.
    assert g.text == f"Water boils at 100 degrees.\n\nSources:\n- {A}\n"


def test_inherited_marker_is_stripped_only_if_every_covered_sentence_says_strip() -> None:
    answer = f"Water boils at 100. Snow is cold [1].\n\n[1]: {A}\n"
    r = report(answer, {A: U})
    assert apply_policy(r, Policy.preset("strip")).text == "Water boils at 100. Snow is cold.\n"
    claims = list(r.claims)
    claims[0] = claims[0].model_copy(update={"verdicts": [UrlVerdict(url=A, label=S)], "overall": S})
    g = apply_policy(r.model_copy(update={"claims": claims}), Policy.preset("strip"))
    assert g.text == f"Water boils at 100. Snow is cold [1].\n\n[1]: {A}\n"


# -- markdown stays intact -----------------------------------------------------------------------


MARKDOWN = f"""# Boiling

- **Water boils at 100 degrees [1]** at sea level.
- Ice melts, see [the page]({D}).
  1. Nested item cites {D} here.

| liquid | boils at |
|--------|----------|
| water  | 100 °C [1] |
| ethanol | 78 °C [2] |

```python
url = "{D}"  # [2] stays
```

Inline `code [2]` and _emphasis [2]_ and the same URL twice: {A} and {A}.

[1]: {A}
[2]: {D}
"""


def test_policies_never_corrupt_surrounding_markdown() -> None:
    g = guard(MARKDOWN, {A: S, D: U})
    assert (
        g.text
        == f"""# Boiling

- **Water boils at 100 degrees [1]** at sea level.
- Ice melts, see the page ⛔ dead link.
  1. Nested item cites ⛔ dead link here.

| liquid | boils at |
|--------|----------|
| water  | 100 °C [1] |
| ethanol | 78 °C ⛔ dead link |

```python
url = "{D}"  # [2] stays
```

Inline `code [2]` and _emphasis ⛔ dead link_ and the same URL twice: {A} and {A}.

[1]: {A}
"""
    )
    annotated = apply_policy(g.report, Policy.preset("annotate")).text
    assert "- **Water boils at 100 degrees [1] ✅ supported** at sea level." in annotated
    assert f"{A} ✅ supported and {A} ✅ supported." in annotated
    assert f'```python\nurl = "{D}"  # [2] stays\n```' in annotated
    stripped = apply_policy(g.report, Policy.preset("strip")).text
    assert "| ethanol | 78 °C |" in stripped
    assert "_emphasis_" in stripped
    assert "  1. Nested item cites here." in stripped


def test_keep_everything_returns_the_answer_unchanged() -> None:
    policy = Policy(supported="keep", contradicted="keep", not_found="keep", unreachable="keep")
    assert guard(MARKDOWN, {A: S, D: U}, policy).text == MARKDOWN


def test_claims_without_verdicts_are_left_alone() -> None:
    answer = "No citations here. Water boils."
    g = apply_policy(report(answer, {}), Policy.preset("annotate"))
    assert g.text == answer and g.actions == []


# -- block -----------------------------------------------------------------------------------------


def test_block_replaces_the_answer() -> None:
    answer = f"Water boils [1].\n\n[1]: {A}\n"
    g = guard(answer, {A: C}, Policy.strict(block_message="Blocked: a source contradicts this."))
    assert g.blocked and g.text == "Blocked: a source contradicts this."
    assert g.report.overall == C
    assert not guard(answer, {A: S}, Policy.strict()).blocked


def test_block_raises_when_asked() -> None:
    r = report(f"Water boils {A}.", {A: C})
    with pytest.raises(CitationBlocked) as info:
        apply_policy(r, Policy.strict(raise_on_block=True))
    assert info.value.report is r
    assert str(info.value) == Policy().block_message


def test_block_through_an_inherited_use_and_through_sources() -> None:
    answer = f"Water boils at 100. Snow is cold [1].\n\n[1]: {A}\n"
    r = report(answer, {A: S})
    claims = list(r.claims)
    claims[0] = claims[0].model_copy(update={"verdicts": [UrlVerdict(url=A, label=C)], "overall": C})
    assert apply_policy(r.model_copy(update={"claims": claims}), Policy.strict()).blocked
    # Sources without markers: the claim's overall label decides, not each source's.
    sources = [A, B]
    assert not guard("Water boils at 100 degrees.", {A: S, B: N}, Policy.preset("block"), sources=sources).blocked
    assert guard("Water boils at 100 degrees.", {A: N, B: N}, Policy.preset("block"), sources=sources).blocked


# -- streaming: the policy applied chunk by chunk --------------------------------------------------


def test_guarded_chunks_concatenate_to_the_guarded_answer() -> None:
    sources = [A, B, D]
    labels = {A: S, B: C, D: U}
    answer = (
        "Water boils at 100 degrees [1]. Ice melts [2, 3].\n\n"
        "- Snow is cold. It falls [3].\n- Fog is wet [2].\n\nDone here [1]."
    )
    whole = guard(answer, labels, sources=sources).text
    out, emitted = [], 0
    for n in range(1, len(answer) + 1):
        cut = stream_cut(answer[:n], sources)
        if cut > emitted:
            out.append(guard(answer[emitted:cut], labels, sources=sources).text)
            emitted = cut
    out.append(guard(answer[emitted:], labels, sources=sources).text)
    assert len(out) > 3
    assert "".join(out) == whole


def test_badges_never_run_into_the_next_marker_or_sentence() -> None:
    answer = f"Water boils [1][2]. 水は沸騰する。氷は冷たい [1]。\n\n[1]: {A}\n[2]: {B}\n"
    g = guard(answer, {A: C, B: N})
    assert g.text.startswith("Water boils [1] ❌ contradicted [2] ⚠️ unverified. ")
    sources = [{"text": "unrelated"}]
    g2 = guard("水は沸騰する。氷は冷たい。", {"fact:0": N}, sources=sources)
    assert g2.text == "水は沸騰する。 ⚠️ unverified 氷は冷たい。 ⚠️ unverified"


def test_group_with_a_removed_number_shows_its_badge_first() -> None:
    answer = f"Water boils [1, 3].\n\n[1]: {A}\n[3]: {D}\n"
    g = guard(answer, {A: S, D: U})
    assert g.text == f"Water boils ⛔ dead link [1].\n\n[1]: {A}\n"
    g2 = guard(answer, {A: N, D: U})
    assert g2.text == f"Water boils ⛔ dead link [1] ⚠️ unverified.\n\n[1]: {A}\n"


def test_one_badge_per_kind_in_the_order_the_kinds_first_appear() -> None:
    from guardrail.core.policy import _first_of_each_kind
    from guardrail.core.schema import VerdictKind as K

    specs = [(K.not_found, "a"), (K.supported, "b"), (K.not_found, "c"), (K.dead_link, None)]
    assert _first_of_each_kind(specs) == [(K.not_found, "a"), (K.supported, "b"), (K.dead_link, None)]
