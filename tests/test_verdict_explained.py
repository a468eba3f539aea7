"""Why a verdict is what it is, where the user looks (issue 26, item 4): the parts of a partly
supported claim in the ``verify`` table, the batch CSV, the HTML report and the badge's tooltip;
the quote is the sentence that decided, its window kept as ``context``; a page that says nothing
of the claim reads ``no_relevant_passage``; each reason's one sentence wherever a person reads it."""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from pathlib import Path

from fastapi.testclient import TestClient
from rich.console import Console

from guardrail import Settings, Verifier, apply_policy
from guardrail.apps.batch.report import render_html
from guardrail.apps.batch.results import RowResult
from guardrail.apps.batch.summary import summarize, write_csv
from guardrail.apps.cli.main import render_claim_report
from guardrail.apps.server import create_app
from guardrail.core.schema import REASON_DESCRIPTIONS, JudgeRequest, JudgeVerdict, Label, Reason
from guardrail.testing import HashEmbedder, LoopbackSite

BOILS = "Pure water boils at 100 degrees Celsius at sea level."
FREEZES = "Pure water freezes at 0 degrees Celsius."
CLAIM = "Pure water boils at 100 degrees Celsius at sea level and freezes at 0 degrees Celsius."
NOT_BACKED = f"Not backed: {FREEZES[:-1]}."
UNRELATED = REASON_DESCRIPTIONS[Reason.no_relevant_passage.value]
PARTLY = REASON_DESCRIPTIONS[Reason.partially_supported.value]


class PartsJudge:
    """Splits CLAIM in two parts: a page about boiling backs the first (quoting its sentence, with
    the window around it as context), any other page neither, giving no reason of its own."""

    name = "parts"
    model = "parts"
    cpu_bound = False

    def load(self) -> None:
        """Nothing to load."""

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        return [self._one(r) for r in requests]

    @staticmethod
    def _one(request: JudgeRequest) -> JudgeVerdict:
        for passage in request.passages:
            sentences = [s for s in re.split(r"(?<=[.!?])\s+", passage) if "boils at 100 degrees" in s]
            if sentences:
                return JudgeVerdict(
                    label="not_found",
                    evidence_quote=sentences[0],
                    context=passage,
                    confidence=0.8,
                    reason=Reason.partially_supported.value,
                    supported_parts=[BOILS],
                    missing_parts=[FREEZES],
                )
        return JudgeVerdict(label="not_found", confidence=0.9)


def verifier() -> Verifier:
    settings = Settings(allow_private_hosts=True, cache_path="off", audit_path="off")  # type: ignore[arg-type]
    return Verifier(judge=PartsJudge(), embedder=HashEmbedder(), settings=settings)


def test_the_verdicts_explain_themselves(pages: LoopbackSite) -> None:
    report = verifier().verify(CLAIM, [pages.url("/boiling"), pages.url("/tomatoes")])
    boiling, tomatoes = report.citations
    assert (report.overall, report.reason, report.missing_parts) == (
        Label.not_found,
        Reason.partially_supported.value,
        [FREEZES],
    )
    assert report.reason_text == PARTLY
    # The quote is the deciding sentence; the window it came in is the context.
    assert boiling.evidence_quote and "boils at 100 degrees" in boiling.evidence_quote
    assert boiling.context and boiling.evidence_quote in boiling.context and boiling.context != boiling.evidence_quote
    # A page that says nothing of the claim has a reason, and its sentence.
    assert (tomatoes.label, tomatoes.reason, tomatoes.reason_text) == (
        Label.not_found,
        Reason.no_relevant_passage.value,
        UNRELATED,
    )


def test_the_verify_table_shows_missing_parts_and_reason_sentences(pages: LoopbackSite) -> None:
    report = verifier().verify(CLAIM, [pages.url("/boiling"), pages.url("/tomatoes")])
    console = Console(record=True, width=400)  # each cell on one line, whatever the terminal
    render_claim_report(report, console)
    shown = " ".join(console.export_text().split())
    assert NOT_BACKED in shown and UNRELATED in shown and "no_relevant_passage" in shown
    assert f"overall: not_found (partially_supported: {PARTLY})" in shown
    assert f"not backed by any cited page: {FREEZES}" in shown


def test_the_batch_csv_and_html_report_show_missing_parts(pages: LoopbackSite, tmp_path: Path) -> None:
    report = verifier().verify(CLAIM, [pages.url("/boiling"), pages.url("/tomatoes")])
    results = [RowResult(id="r1", line=1, kind="claim", digest="d", claim_report=report)]
    write_csv(results, tmp_path / "r.csv")
    with (tmp_path / "r.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["reason"], r["missing_parts"]) for r in rows] == [
        ("partially_supported", FREEZES),
        ("no_relevant_passage", ""),
    ]
    assert [r["reason_text"] for r in rows] == [PARTLY, UNRELATED]
    assert rows[0]["context"] == report.citations[0].context

    page = render_html(results, summarize(results))
    assert f'<p class="missing-parts">{NOT_BACKED}</p>' in page
    assert f'<span class="reason-text">{UNRELATED}</span>' in page


def test_the_badge_tooltip_names_the_parts_not_backed(pages: LoopbackSite) -> None:
    answer = f"{CLAIM} [1]\n\n[1]: {pages.url('/boiling')}\n"
    report = verifier().verify_answer(answer)
    html = apply_policy(report, fmt="html").text
    tooltip = html.split('citation-verdict--not-found" title="', 1)[1].split('"', 1)[0]
    [verdict] = report.claims[0].verdicts
    assert verdict.evidence_quote and "\n" not in verdict.evidence_quote
    assert tooltip == f"{verdict.evidence_quote} {NOT_BACKED}"

    with TestClient(create_app(verifier=verifier())) as client:
        body = client.post("/verify", json={"claim": CLAIM, "urls": [pages.url("/tomatoes")]}).json()
    assert body["citations"][0]["reason"] == "no_relevant_passage"
    assert body["citations"][0]["reason_text"] == UNRELATED
