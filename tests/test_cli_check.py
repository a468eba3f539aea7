"""``guardrail check``: a whole answer guarded from the command line, against the loopback fixture
pages. The judge is the OpenAI-compatible one pointed at a local fake LLM server, so no model
is loaded and nothing leaves the machine."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from guardrail.apps.cli import app
from guardrail.core.policy import Policy
from guardrail.testing import LoopbackSite, Route, WaybackSite
from tests.fixtures.llm_server import FakeLLMServer, Received, Reply, openai_verdict
from tests.fixtures.pages import BOILING, BOILING_PDF

runner = CliRunner()
QUOTE = "pure water boils at 100 degrees Celsius"


def model(received: Received) -> Reply:
    """A tiny 'model': contradicted for a 50-degree claim, supported when the passages hold the
    sea-level sentence, else not_found; quotes are verbatim, so the quote guard keeps them."""
    text = received.user_text
    claim = re.search(r"<claim>\n(.*?)\n</claim>", text, re.S)
    passages = "".join(re.findall(r"<passage id=\d+>(.*?)</passage>", text, re.S))
    if claim and QUOTE in passages:
        return openai_verdict("contradicted" if "50 degrees" in claim.group(1) else "supported", QUOTE)
    return openai_verdict("not_found", "")


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    with FakeLLMServer() as llm:
        llm.responder = model
        yield {
            "GUARDRAIL_JUDGE": "openai",
            "OPENAI_API_KEY": "sk-test-cli-check",
            "OPENAI_BASE_URL": llm.openai_base_url,
            "GUARDRAIL_CACHE": "off",
            "GUARDRAIL_AUDIT_DB": "off",
        }


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def answer(pages: LoopbackSite) -> str:
    return (
        "Pure water boils at 100 degrees Celsius at sea level [1]. "
        "Water boils at 50 degrees Celsius at sea level [1]. Tomatoes need sunlight [2].\n\n"
        f"Sources:\n[1] {pages.url('/boiling')}\n[2] {pages.url('/gone-404')}\n"
    )


def test_check_applies_the_preset_named_default_by_default(
    pages: LoopbackSite, env: dict[str, str], tmp_path: Path
) -> None:
    # One name, one behaviour: `check` with no --policy is `--policy default`, which is Policy().
    path = write(tmp_path, "answer.md", answer(pages))
    result = runner.invoke(app, ["check", str(path), "--allow-private-hosts"], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "Pure water boils at 100 degrees Celsius at sea level [1]. "
        "Water boils at 50 degrees Celsius at sea level [1] ❌ contradicted. "
        "Tomatoes need sunlight ⛔ dead link.\n\n"
        f"Sources:\n[1] {pages.url('/boiling')}\n"
    )
    assert "overall: contradicted" in result.stderr
    named = runner.invoke(app, ["check", str(path), "--policy", "default", "--allow-private-hosts"], env=env)
    assert named.stdout == result.stdout
    assert Policy.preset("default") == Policy()


def test_check_annotate_puts_a_badge_on_every_citation(
    pages: LoopbackSite, env: dict[str, str], tmp_path: Path
) -> None:
    path = write(tmp_path, "answer.md", answer(pages))
    result = runner.invoke(app, ["check", str(path), "--policy", "annotate", "--allow-private-hosts"], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "Pure water boils at 100 degrees Celsius at sea level [1] ✅ supported. "
        "Water boils at 50 degrees Celsius at sea level [1] ❌ contradicted. "
        "Tomatoes need sunlight [2] ⛔ dead link.\n\n"
        f"Sources:\n[1] {pages.url('/boiling')}\n[2] {pages.url('/gone-404')}\n"
    )


def test_check_last_line_gives_the_answer_level_rule_and_support_score(
    pages: LoopbackSite, env: dict[str, str], tmp_path: Path
) -> None:
    text = (
        "Pure water boils at 100 degrees Celsius at sea level [1]. The Eiffel Tower is in Paris [2]. "
        "Mount Everest is the highest mountain on Earth [2]. The Moon orbits the Earth [2].\n\n"
        f"[1]: {pages.url('/boiling')}\n[2]: {pages.url('/tomatoes')}\n"
    )
    result = runner.invoke(app, ["check", str(write(tmp_path, "answer.md", text)), "--allow-private-hosts"], env=env)
    assert result.exit_code == 0, result.output
    last = " ".join(result.stderr.split())  # whatever the terminal width
    assert (
        "overall: not_found - support 0.25: 1 of 4 checked claims supported (1 supported, 3 not_found); "
        "citations: 3 not_found, 1 supported"
    ) in last


def test_check_strip_reads_stdin(pages: LoopbackSite, env: dict[str, str]) -> None:
    result = runner.invoke(
        app, ["check", "-", "--policy", "strip", "--allow-private-hosts"], input=answer(pages), env=env
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "Pure water boils at 100 degrees Celsius at sea level [1]. "
        "Water boils at 50 degrees Celsius at sea level. Tomatoes need sunlight.\n\n"
        f"Sources:\n[1] {pages.url('/boiling')}\n"
    )


def test_check_html(pages: LoopbackSite, env: dict[str, str], tmp_path: Path) -> None:
    path = write(tmp_path, "answer.md", answer(pages))
    result = runner.invoke(app, ["check", str(path), "--format", "html", "--allow-private-hosts"], env=env)
    assert result.exit_code == 0, result.output
    assert (
        '[1] <span class="citation-verdict citation-verdict--contradicted" '
        f'title="{QUOTE}">❌ contradicted</span>' in result.stdout
    )


def test_check_strict_blocks_with_exit_1(pages: LoopbackSite, env: dict[str, str], tmp_path: Path) -> None:
    path = write(tmp_path, "answer.md", answer(pages))
    result = runner.invoke(app, ["check", str(path), "--policy", "strict", "--allow-private-hosts"], env=env)
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith("This answer was withheld")
    assert "blocked" in result.stderr


def test_check_min_confidence_lets_a_weak_contradiction_through_strict(
    pages: LoopbackSite, env: dict[str, str], tmp_path: Path
) -> None:
    path = write(tmp_path, "answer.md", answer(pages))
    args = ["check", str(path), "--policy", "strict", "--allow-private-hosts", "--min-confidence", "0.95"]
    result = runner.invoke(app, args, env=env)  # the fake model's verdicts carry confidence 0.9
    assert result.exit_code == 0, result.output
    assert "Water boils at 50 degrees Celsius at sea level [1] ⚠️ unverified." in result.stdout
    assert runner.invoke(app, [*args[:-1], "1.5"], env=env).exit_code == 2


def test_check_json_has_text_report_and_actions(pages: LoopbackSite, env: dict[str, str], tmp_path: Path) -> None:
    path = write(tmp_path, "answer.md", answer(pages))
    before = dict(pages.hits)
    result = runner.invoke(
        app, ["check", str(path), "--format", "json", "--policy", "default", "--allow-private-hosts"], env=env
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["blocked"] is False
    assert "Tomatoes need sunlight ⛔ dead link." in data["text"]
    report = data["report"]
    assert report["overall"] == "contradicted"
    assert report["label_counts"] == {"supported": 1, "contradicted": 1, "unreachable": 1}
    assert [c["overall"] for c in report["claims"]] == ["supported", "contradicted", "unreachable"]
    assert [(a["marker"], a["label"], a["stripped"]) for a in data["actions"]] == [
        ("[1]", "supported", False),
        ("[1]", "contradicted", False),
        ("[2]", "unreachable", True),
    ]
    # /boiling cited twice, fetched once.
    assert pages.hits["/boiling"] - before.get("/boiling", 0) == 1


def test_check_json_blocked_still_prints_the_report(pages: LoopbackSite, env: dict[str, str], tmp_path: Path) -> None:
    path = write(tmp_path, "answer.md", answer(pages))
    result = runner.invoke(
        app, ["check", str(path), "--format", "json", "--policy", "block", "--allow-private-hosts"], env=env
    )
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["blocked"] is True and data["report"]["overall"] == "contradicted"


@pytest.mark.parametrize("kind", ["json", "text"])
def test_check_with_a_sources_file(pages: LoopbackSite, env: dict[str, str], tmp_path: Path, kind: str) -> None:
    text = "Pure water boils at 100 degrees Celsius at sea level [1]. It was said long ago [2]."
    path = write(tmp_path, "answer.md", text)
    if kind == "json":
        sources = write(
            tmp_path, "sources.json", json.dumps([pages.url("/boiling"), {"text": "Nobody said it long ago."}])
        )
    else:
        sources = write(
            tmp_path, "sources.txt", f"# the sources\n{pages.url('/boiling')}\n\n{pages.url('/tomatoes')}\n"
        )
    result = runner.invoke(
        app, ["check", str(path), "--sources", str(sources), "--format", "json", "--allow-private-hosts"], env=env
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)["report"]
    assert report["claims"][0]["verdicts"][0]["label"] == "supported"
    assert report["claims"][1]["verdicts"][0]["label"] == "not_found"
    assert report["claims"][1]["verdicts"][0]["url"] == ("fact:1" if kind == "json" else pages.url("/tomatoes"))


def test_private_hosts_are_refused_without_the_flag(pages: LoopbackSite, env: dict[str, str], tmp_path: Path) -> None:
    path = write(tmp_path, "answer.md", answer(pages))
    before = dict(pages.hits)
    result = runner.invoke(app, ["check", str(path), "--format", "json"], env=env)
    assert result.exit_code == 0, result.output
    reasons = {v["reason"] for c in json.loads(result.stdout)["report"]["claims"] for v in c["verdicts"]}
    assert reasons == {"blocked_address"}
    assert pages.hits == before


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"sources.json": '{"url": "https://a.example"}'}, "must be a list"),
        ({"sources.json": "[not json"}, "invalid JSON"),
        ({"sources.json": '["not a url"]'}, "sources[0]: a string source must be an http(s) URL"),
        ({"sources.json": '[{"title": "x"}]'}, "sources[0]: a dict source needs"),
        ({"sources.json": "https://ok.example\nnot-a-url\n"}, "sources.json:2: not an http(s) URL"),
    ],
)
def test_bad_sources_file_exits_2(env: dict[str, str], tmp_path: Path, files: dict[str, str], message: str) -> None:
    path = write(tmp_path, "answer.md", "Water boils [1].")
    for name, content in files.items():
        write(tmp_path, name, content)
    result = runner.invoke(app, ["check", str(path), "--sources", str(tmp_path / "sources.json")], env=env)
    assert result.exit_code == 2
    assert message in " ".join(result.stderr.split())


def test_bad_input_exits_2(env: dict[str, str], tmp_path: Path) -> None:
    missing = runner.invoke(app, ["check", str(tmp_path / "missing.md")], env=env)
    assert missing.exit_code == 2 and "cannot read answer file" in missing.stderr
    bracketed = runner.invoke(app, ["check", str(tmp_path / "[bold]draft[/bold].md")], env=env)
    assert "[bold]draft[/bold].md" in bracketed.stderr  # input is shown as written, never read as markup
    empty = runner.invoke(app, ["check", "-"], input="  \n", env=env)
    assert empty.exit_code == 2 and "the answer is empty" in empty.stderr
    bad_policy = runner.invoke(app, ["check", "-", "--policy", "nope"], input="x", env=env)
    assert bad_policy.exit_code == 2
    bad_env = runner.invoke(app, ["check", "-"], input="Water boils.", env={**env, "GUARDRAIL_JUDGE": "nope"})
    assert bad_env.exit_code == 2 and "GUARDRAIL_JUDGE" in bad_env.stderr


def test_check_policy_repair_re_points_a_misattributed_citation(
    pages: LoopbackSite, env: dict[str, str], tmp_path: Path
) -> None:
    sources = write(tmp_path, "sources.json", json.dumps([pages.url("/boiling"), pages.url("/titanic")]))
    path = write(tmp_path, "a.md", "Pure water boils at 100 degrees Celsius at sea level [2].\n")
    args = ["check", str(path), "--sources", str(sources), "--allow-private-hosts"]
    result = runner.invoke(app, [*args, "--policy", "repair"], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == "Pure water boils at 100 degrees Celsius at sea level [1] ↪ citation corrected.\n"
    assert "repaired (repointed): [2] -> [1]" in result.stderr
    plain = runner.invoke(app, args, env=env)  # the annotate preset: flagged, not moved
    assert plain.stdout == "Pure water boils at 100 degrees Celsius at sea level [2] ⚠️ unverified.\n"


def test_check_archive_wayback_reads_a_dead_link_from_its_snapshot(
    pages: LoopbackSite, env: dict[str, str], tmp_path: Path
) -> None:
    dead = pages.url("/gone-404")
    path = write(tmp_path, "a.md", f"Pure water boils at 100 degrees Celsius at sea level ({dead}).\n")
    with WaybackSite() as wayback:
        wayback.archive(dead, BOILING)
        env = {**env, "GUARDRAIL_WAYBACK_URL": wayback.base}
        args = ["check", str(path), "--allow-private-hosts", "--policy", "repair", "--answer-date", "2024-05-01"]
        off = runner.invoke(app, args, env=env)
        assert wayback.hits == {} and "⛔ dead link" in off.stdout  # off unless asked for
        result = runner.invoke(app, [*args, "--archive", "wayback"], env=env)
        assert result.exit_code == 0, result.output
        assert result.stdout == (
            f"Pure water boils at 100 degrees Celsius at sea level ({wayback.snapshot_url(dead)} 🗄 archived copy).\n"
        )
        assert wayback.asked == [(dead, "20240501000000")]
        bad = runner.invoke(app, [*args, "--archive", "nope"], env=env)
        assert bad.exit_code == 2 and "--archive" in bad.stderr


def test_verify_a_broken_pdf_prints_a_verdict_with_its_reason(env: dict[str, str]) -> None:
    broken = BOILING_PDF[: len(BOILING_PDF) // 2]
    with LoopbackSite({"/broken.pdf": Route(body=broken, content_type="application/pdf")}) as site:
        args = ["verify", "--claim", "Water boils at 100 degrees Celsius.", "--json", "--allow-private-hosts"]
        result = runner.invoke(app, [*args, site.url("/broken.pdf")], env=env)
    assert result.exit_code == 0, result.output
    [verdict] = json.loads(result.stdout)["citations"]
    assert (verdict["label"], verdict["reason"]) == ("not_found", "unreadable_document")
    assert verdict["detail"].startswith("pypdf could not read the PDF: Pdf")
    assert result.stderr == ""  # no log line of ours or pypdf's beside the verdict
