"""A citation our SSRF policy refuses (issue 26, item 2): an intranet page is not a dead link. It
reads ``could_not_check`` (label ``unreachable``, reason ``blocked_address``), the default policy
keeps it, and everywhere a person reads it says how to allow private hosts."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from guardrail import Settings, Verifier, apply_policy
from guardrail.apps.batch.report import render_html
from guardrail.apps.batch.results import RowResult
from guardrail.apps.batch.summary import summarize
from guardrail.apps.cli import app
from guardrail.apps.server import create_app
from guardrail.core.schema import Label, Reason, VerdictKind
from guardrail.fetch.direct import DirectFetcher
from guardrail.testing import HashEmbedder, OverlapJudge

HINTS = ("--allow-private-hosts", "GUARDRAIL_ALLOW_PRIVATE_HOSTS=1", "allow_private_hosts=True")
WIKI = "http://wiki.internal/water"
ADDRESS = "http://10.0.0.5/water"
ANSWER = (
    "Pure water boils at 100 degrees Celsius at sea level [1]. Ice is less dense than water [2].\n\n"
    f"[1]: {WIKI}\n[2]: {ADDRESS}\n"
)


async def intranet_dns(host: str, port: int) -> list[str]:
    """The intranet's resolver: wiki.internal is a private address, as it is at work."""
    assert host == "wiki.internal"
    return ["10.0.0.7"]


def guarded_verifier() -> Verifier:
    """The default SSRF policy (private hosts refused), with the intranet's resolver."""
    return Verifier(
        fetcher=DirectFetcher(resolver=intranet_dns),
        judge=OverlapJudge(),
        embedder=HashEmbedder(),
        settings=Settings(cache_path="off", audit_path="off"),  # type: ignore[arg-type]
    )


def has_hint(text: str | None) -> bool:
    return text is not None and all(hint in text for hint in HINTS)


def test_an_intranet_citation_could_not_be_checked_and_the_default_policy_keeps_it() -> None:
    report = guarded_verifier().verify_answer(ANSWER)
    verdicts = [v for claim in report.claims for v in claim.verdicts]
    assert [(v.url, v.label, v.reason, v.kind) for v in verdicts] == [
        (WIKI, Label.unreachable, Reason.blocked_address.value, VerdictKind.could_not_check),
        (ADDRESS, Label.unreachable, Reason.blocked_address.value, VerdictKind.could_not_check),
    ]
    assert all(has_hint(v.reason_text) for v in verdicts)
    assert report.kind_counts["could_not_check"] == 2 and report.kind_counts["dead_link"] == 0

    guarded = apply_policy(report)  # the default policy strips dead links; these are kept
    assert guarded.text == (
        "Pure water boils at 100 degrees Celsius at sea level [1] ⚠ could not check. "
        "Ice is less dense than water [2] ⚠ could not check.\n\n"
        f"[1]: {WIKI}\n[2]: {ADDRESS}\n"
    )
    assert not any(action.stripped for action in guarded.actions)
    html = apply_policy(report, fmt="html").text
    tooltip = html.split('citation-verdict--could-not-check" title="', 1)[1].split('"', 1)[0]
    assert has_hint(tooltip)


def test_the_service_says_how_to_allow_private_hosts() -> None:
    with TestClient(create_app(verifier=guarded_verifier())) as client:
        body = client.post("/v1/guard", json={"answer": ANSWER}).json()
        claim = client.post("/verify", json={"claim": "Ice floats.", "urls": [ADDRESS]}).json()
    assert WIKI in body["text"] and ADDRESS in body["text"]
    verdicts = [v for c in body["report"]["claims"] for v in c["verdicts"]]
    assert [v["kind"] for v in verdicts] == ["could_not_check", "could_not_check"]
    assert all(has_hint(v["reason_text"]) for v in verdicts)
    assert has_hint(claim["citations"][0]["reason_text"]) and claim["citations"][0]["kind"] == "could_not_check"


def test_the_batch_report_says_how_to_allow_private_hosts() -> None:
    report = guarded_verifier().verify_answer(ANSWER)
    results = [RowResult(id="r1", line=1, kind="answer", digest="d", answer_report=report)]
    page = render_html(results, summarize(results))
    hint = "to check intranet pages, pass --allow-private-hosts, set GUARDRAIL_ALLOW_PRIVATE_HOSTS=1 or"
    assert page.count(hint) >= 4  # two badges' tooltips in the answer, two reason cells in the table
    assert 'class="citation-verdict citation-verdict--could-not-check"' in page
    assert 'class="citation-verdict citation-verdict--unreachable"' not in page  # no dead-link badge


def test_verify_table_says_how_to_allow_private_hosts(tmp_path: Path) -> None:
    env = {
        "COLUMNS": "400",  # the hint on one line of the reason column, whatever the terminal
        "GUARDRAIL_JUDGE": "openai",
        "OPENAI_API_KEY": "sk-test-never-called",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # the page is refused before any judge is asked
        "GUARDRAIL_CACHE": "off",
        "GUARDRAIL_AUDIT_DB": "off",
    }
    result = CliRunner().invoke(app, ["verify", ADDRESS, "--claim", "Ice is less dense than water."], env=env)
    assert result.exit_code == 0, result.output
    assert "could not check" in result.stdout and "blocked_address" in result.stdout
    assert has_hint(" ".join(result.stdout.split()))

    answer = tmp_path / "answer.md"
    answer.write_text(f"Ice is less dense than water [1].\n\n[1]: {ADDRESS}\n", encoding="utf-8")
    checked = CliRunner().invoke(app, ["check", str(answer)], env=env)
    assert checked.exit_code == 0, checked.output
    assert checked.stdout == f"Ice is less dense than water [1] ⚠ could not check.\n\n[1]: {ADDRESS}\n"
    assert (
        has_hint(" ".join(checked.stderr.split())) and "could not check 1 citation (blocked_address)" in checked.stderr
    )
