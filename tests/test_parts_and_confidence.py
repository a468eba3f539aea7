"""A claim's parts across its citations (combined sources, partial support) and the policy's
``min_confidence``: the aggregation rule, the verifier's reports and the policy's actions."""

from __future__ import annotations

from collections.abc import Sequence

from guardrail import Action, ClaimTask, Fact, JudgeRequest, JudgeVerdict, Label, Policy, Verifier, apply_policy
from guardrail.apps.server import PolicySpec
from guardrail.core.aggregate import aggregate_claim
from guardrail.core.schema import Reason, UrlVerdict, VerdictKind
from guardrail.testing import HashEmbedder

PART_A = "The bridge opened in 1932"
PART_B = "The bridge is 503 metres long"
CLAIM = "The bridge opened in 1932 and is 503 metres long."


def verdict(url: str, label: Label, supported: list[str] | None = None, missing: list[str] | None = None) -> UrlVerdict:
    return UrlVerdict(url=url, label=label, supported_parts=supported, missing_parts=missing, confidence=0.8)


def test_parts_backed_by_different_pages_support_the_claim_together() -> None:
    outcome = aggregate_claim(
        [verdict("a", Label.not_found, [PART_A], [PART_B]), verdict("b", Label.not_found, [PART_B], [PART_A])]
    )
    assert outcome == (Label.supported, Reason.combined_sources.value, None)


def test_a_part_no_page_backs_is_named() -> None:
    outcome = aggregate_claim(
        [verdict("a", Label.not_found, [PART_A], [PART_B]), verdict("b", Label.not_found, [], [PART_A, PART_B])]
    )
    assert outcome == (Label.not_found, Reason.partially_supported.value, [PART_B])


def test_contradiction_and_plain_support_still_decide_first() -> None:
    partial = verdict("a", Label.not_found, [PART_A], [PART_B])
    assert aggregate_claim([partial, verdict("b", Label.contradicted)]).label == Label.contradicted
    plain_support, plain_miss = (Label.supported, None, None), (Label.not_found, None, None)
    assert aggregate_claim([partial, verdict("b", Label.supported, [PART_A, PART_B], [])]) == plain_support
    # Verdicts without parts (an LLM judge, a dead page) aggregate as before.
    assert aggregate_claim([verdict("a", Label.not_found), verdict("b", Label.unreachable)]) == plain_miss
    assert aggregate_claim([verdict("a", Label.not_found, [], [PART_A, PART_B])]) == plain_miss


class PartsJudge:
    """Backs PART_A on a page that says 1932 and PART_B on one that says 503 metres (a stand-in for a
    judge that splits claims; the real one is tested in test_local_judge)."""

    name = "parts"
    model = "parts"
    cpu_bound = False

    def load(self) -> None:
        """Nothing to load."""

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        out = []
        for r in requests:
            text = " ".join(r.passages)
            backed = [p for p, cue in ((PART_A, "1932"), (PART_B, "503 metres")) if cue in text]
            missing = [p for p in (PART_A, PART_B) if p not in backed]
            label = "supported" if not missing else "not_found"
            reason = Reason.partially_supported.value if backed and missing else None
            out.append(
                JudgeVerdict(
                    label=label,
                    evidence_quote=text if label == "supported" else None,
                    confidence=0.9,
                    reason=reason,
                    supported_parts=backed,
                    missing_parts=missing,
                )
            )
        return out


def _verifier() -> Verifier:
    return Verifier(judge=PartsJudge(), embedder=HashEmbedder(), fetcher=None)  # type: ignore[arg-type]


def test_verifier_reports_combined_sources_with_each_citations_parts() -> None:
    opened = Fact("The bridge opened to traffic in 1932.", source="fact:0")
    length = Fact("Its main span is 503 metres long.", source="fact:1")
    [report] = _verifier().verify_many([ClaimTask(CLAIM, [opened, length])])
    assert (report.overall, report.reason) == (Label.supported, Reason.combined_sources.value)
    first, second = report.citations
    assert (first.label, first.reason, first.supported_parts, first.missing_parts) == (
        Label.not_found,
        Reason.partially_supported.value,
        [PART_A],
        [PART_B],
    )
    assert second.supported_parts == [PART_B]


def test_answer_report_names_the_missing_part_and_the_policy_keeps_combined_citations() -> None:
    sources = [{"text": "The bridge opened to traffic in 1932."}, {"text": "Its main span is 503 metres long."}]
    report = _verifier().verify_answer(f"{CLAIM} [1][2]", sources)
    [claim] = report.claims
    assert (claim.overall, claim.reason) == (Label.supported, Reason.combined_sources.value)
    guarded = apply_policy(report, Policy())
    assert guarded.text == f"{CLAIM} [1][2]"  # both kept: together they support the claim
    # Each citation's own label is kept; the policy treats both as supported (their kind).
    assert [a.kind for a in guarded.actions] == [VerdictKind.supported, VerdictKind.supported]

    partial = _verifier().verify_answer(f"{CLAIM} [1]", sources[:1])
    [claim] = partial.claims
    assert (claim.overall, claim.reason, claim.missing_parts) == (
        Label.not_found,
        Reason.partially_supported.value,
        [PART_B],
    )


def test_min_confidence_treats_weak_verdicts_as_unverified() -> None:
    policy = Policy(min_confidence=0.7)
    weak = UrlVerdict(url="a", label=Label.supported, confidence=0.55, evidence_quote="q")
    strong = weak.model_copy(update={"confidence": 0.9})
    assert policy.label_for(weak) == Label.not_found
    assert policy.label_for(strong) == Label.supported
    assert Policy().label_for(weak) == Label.supported
    contra = UrlVerdict(url="a", label=Label.contradicted, confidence=0.6, evidence_quote="q")
    assert policy.label_for(contra) == Label.not_found


class FixedConfidenceJudge:
    name = "fixed"
    model = "fixed"
    cpu_bound = False

    def load(self) -> None:
        """Nothing to load."""

    def __init__(self, label: str, confidence: float) -> None:
        self.label, self.confidence = label, confidence

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        return [
            JudgeVerdict(label=self.label, evidence_quote=r.passages[0], confidence=self.confidence)  # type: ignore[arg-type]
            for r in requests
        ]


def _guard(label: str, confidence: float, policy: Policy) -> tuple[str, bool]:
    verifier = Verifier(judge=FixedConfidenceJudge(label, confidence), embedder=HashEmbedder(), fetcher=None)  # type: ignore[arg-type]
    report = verifier.verify_answer("The bridge opened in 1932 [1].", [{"text": "The bridge opened in 1932."}])
    guarded = apply_policy(report, policy)
    return guarded.text, guarded.blocked


def test_a_weak_contradiction_does_not_block_a_strict_policy_and_a_weak_support_is_flagged() -> None:
    assert _guard("contradicted", 0.6, Policy.strict())[1] is True
    assert _guard("contradicted", 0.6, Policy.strict(min_confidence=0.7)) == (
        "The bridge opened in 1932 [1] ⚠️ unverified.",
        False,
    )
    assert _guard("supported", 0.6, Policy(min_confidence=0.7))[0] == "The bridge opened in 1932 [1] ⚠️ unverified."
    assert _guard("supported", 0.8, Policy(min_confidence=0.7))[0] == "The bridge opened in 1932 [1]."


def test_presets_and_the_service_spec_take_min_confidence() -> None:
    assert Policy.preset("strict", min_confidence=0.8).min_confidence == 0.8
    assert Policy.preset("strict", min_confidence=0.8).contradicted == frozenset({Action.block})
    assert PolicySpec(preset="strict", min_confidence=0.8).build().min_confidence == 0.8
    assert PolicySpec(preset="strict").build().min_confidence == 0.0
