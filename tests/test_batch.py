"""Batch runs: input validation, precision figures, the CSV and HTML reports, and resuming after
a real subprocess is killed mid-run."""

from __future__ import annotations

import asyncio
import csv
import html
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler
from importlib import resources
from pathlib import Path

import pytest
import tomllib
from jinja2 import Environment, PackageLoader
from pydantic import SecretStr
from rich.console import Console
from typer.testing import CliRunner

import guardrail
from guardrail import JudgeRequest, JudgeVerdict, Settings, Verifier
from guardrail.apps.batch import (
    BatchInputError,
    Checkpoint,
    RowResult,
    arun_batch_file,
    checkpoint_path,
    read_rows,
    render_html,
    summarize,
)
from guardrail.apps.batch.engine import MEMO_PAGES, arun_batch
from guardrail.apps.batch.report import Badge, answer_parts
from guardrail.apps.batch.rows import BatchRow, page_order, row_from_data
from guardrail.apps.cli import app
from guardrail.apps.cli.batch import _Progress, run_batch_cli
from guardrail.apps.cli.common import load_settings
from guardrail.core.policy import Policy, apply_policy
from guardrail.fetch.once import FetchOnce, PageMemo
from guardrail.settings import ConfigurationError
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge, Route
from tests.fixtures.crawlbase_server import NORMAL_TOKEN, FakeCrawlbase, FakeTarget
from tests.fixtures.llm_server import FakeLLMServer, Received, Reply, openai_judge_env, openai_verdict
from tests.fixtures.pages import BOILING
from tests.fixtures.server import HeldPage
from tests.fixtures.tasks import innermost_code

runner = CliRunner()
CLAIM = "At sea level pure water boils at 100 degrees Celsius."
NO_STORES = {"GUARDRAIL_CACHE": "off", "GUARDRAIL_AUDIT_DB": "off"}
ANNOTATE = Policy.preset("annotate")


def fake_verifier() -> tuple[Verifier, OverlapJudge]:
    judge = OverlapJudge()
    settings = Settings(allow_private_hosts=True, cache_path="off", audit_path="off")  # type: ignore[arg-type]
    return Verifier(judge=judge, embedder=HashEmbedder(), settings=settings), judge


def write_jsonl(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def mixed_rows(pages: LoopbackSite) -> list[dict | str]:
    u = pages.url
    return [
        {"id": "c1", "claim": CLAIM, "urls": [u("/boiling"), u("/old-report"), u("/gone-404"), u("/tomatoes")]},
        {"id": "c2", "claim": "Titanic was directed by James Cameron.", "urls": [u("/titanic"), u("/gone-410")]},
        "",
        {
            "id": "a1",
            "answer": "Water boils at 100 degrees Celsius at sea level [1]. Ice melts at 0 degrees Celsius [2].",
            "sources": [u("/boiling"), u("/old-report")],
        },
        {"id": 7, "answer": "Nothing to cite here."},
    ]


# -- input ------------------------------------------------------------------------------------


def test_bad_rows_are_reported_with_their_line_numbers(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"id": "ok", "claim": "A claim.", "urls": ["https://example.org/"]},
            "{not json",
            {"id": "x", "claim": "A claim."},
            {"id": "ok", "claim": "Again.", "urls": ["https://example.org/"]},
            {"id": "y", "claim": "A claim.", "answer": "Both?"},
            {"id": "z", "answer": "A [1].", "sources": ["not a url"]},
            '["a list"]',
            {"id": True, "answer": "A."},
        ],
    )
    with pytest.raises(BatchInputError) as info:
        read_rows(path)
    message = str(info.value)
    assert message.startswith("7 bad line(s)")
    for line, words in [
        (2, "invalid JSON"),
        (3, "'urls'"),
        (4, "duplicate id 'ok' (first on line 1)"),
        (5, "either 'claim'"),
        (6, "sources[0]"),
        (7, "JSON object"),
        (8, "'id' must be"),
    ]:
        assert f"{path}:{line}: " in message and words in message.split(f"{path}:{line}: ")[1].split("\n")[0]
    assert f"{path}:1:" not in message


@pytest.mark.parametrize("columns", ["40", "200"])
def test_cli_rejects_bad_input_before_verifying(tmp_path: Path, pages: LoopbackSite, columns: str) -> None:
    before = pages.hits.get("/gone-410", 0)
    path = write_jsonl(
        tmp_path / "in.jsonl", [{"id": 1, "claim": CLAIM, "urls": [pages.url("/gone-410")]}, {"id": 2, "claim": ""}]
    )
    env = {**NO_STORES, "COLUMNS": columns}
    result = runner.invoke(app, ["batch", str(path), "--out", str(tmp_path / "r.csv")], env=env)
    assert result.exit_code == 2
    # One message, one line, whatever the terminal width and the length of the path.
    assert f"{path}:2: 'claim' must be a non-empty string" in result.stderr.splitlines()
    assert pages.hits.get("/gone-410", 0) == before and not (tmp_path / "r.csv").exists()


# -- figures and reports ----------------------------------------------------------------------


async def test_precision_figures_and_csv(tmp_path: Path, pages: LoopbackSite) -> None:
    verifier, _ = fake_verifier()
    path = write_jsonl(tmp_path / "outputs.jsonl", mixed_rows(pages))
    out = tmp_path / "report.csv"
    result = await arun_batch_file(path, out, verifier=verifier, concurrency=3)
    summary = result.summary
    assert summary.lines() == ["citation_precision=0.3750 (3/8)", "reachable_precision=0.5000 (3/6)"]
    assert summary.labels == {"supported": 3, "contradicted": 2, "not_found": 1, "unreachable": 2}
    assert summary.reasons["http_404"] == 1 and summary.reasons["http_410"] == 1
    assert summary.rows == 4 and summary.rows_failed == 0
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["id"], r["label"]) for r in rows] == [
        ("c1", "supported"),
        ("c1", "contradicted"),
        ("c1", "unreachable"),
        ("c1", "not_found"),
        ("c2", "supported"),
        ("c2", "unreachable"),
        ("a1", "supported"),
        ("a1", "contradicted"),
        ("7", ""),
    ]
    assert rows[-1]["reason"] == "no_citations"  # a row without citations is listed, not dropped
    assert rows[1]["url"] == pages.url("/old-report") and "50 degrees" in rows[1]["evidence_quote"]
    assert rows[7]["claim_index"] == "1" and rows[7]["claim"].startswith("Ice melts")


async def test_html_report_is_self_contained_and_escaped(tmp_path: Path, pages: LoopbackSite) -> None:
    site = LoopbackSite(
        {
            "/evil.txt": Route(
                body="<script>alert('page')</script> At sea level pure water boils at 100 degrees Celsius.",
                content_type="text/plain; charset=utf-8",
            )
        }
    ).start()
    try:
        rows = mixed_rows(pages)
        rows.append({"id": "<img src=x onerror=alert(1)>", "claim": CLAIM, "urls": [site.url("/evil.txt")]})
        rows.append(
            {
                "id": "a-evil",
                "answer": 'Water boils at 100 degrees Celsius <script>alert("answer")</script> [1].',
                "sources": [pages.url("/boiling")],
            }
        )
        verifier, _ = fake_verifier()
        path = write_jsonl(tmp_path / "outputs.jsonl", rows)
        result = await arun_batch_file(path, tmp_path / "r.csv", verifier=verifier, html_path=tmp_path / "r.html")
    finally:
        site.stop()
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    s = result.summary
    assert f"{s.citation_precision:.4f}" in page and f"({s.supported}/{s.citations})" in page
    assert f"({s.supported}/{s.reachable})" in page
    # No script, no external asset, nothing from pages or answers left unescaped.
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert not re.search(r'<[a-z]+[^>]*\s(?:src|href)="(?!https?://)', page)  # only http(s) links, no sources
    assert "&lt;script&gt;alert(&#x27;page&#x27;)&lt;/script&gt;" in page
    assert "&lt;script&gt;alert(&quot;answer&quot;)&lt;/script&gt;" in page
    assert "default-src 'none'" in page
    # The bar chart: one bar per label, sized by its share of the citations.
    assert page.count('class="fill fill--') == 4
    assert f"width:{100 * s.labels['supported'] / s.citations:.1f}%" in page
    # The contradicted citations come first, with their evidence quotes.
    contradicted = page.index("Contradicted citations (2)")
    assert page.index("According to the report, water boils at 50 degrees Celsius") > contradicted
    articles = [chunk.split('"', 1)[0] for chunk in page.split('<article class="')[1:]]
    assert articles[:2] == ["row row--contradicted"] * 2 and "row row--contradicted" not in articles[2:]
    # Each answer is shown with its badges (real markup), its own text escaped.
    answer_div = page.split('<div class="answer">')[1].split("</div>")[0]
    assert '<span class="citation-verdict citation-verdict--supported" title="' in answer_div
    assert "Water boils at 100 degrees Celsius at sea level [1] <span" in answer_div


async def test_html_report_charts_reasons_and_lists_contradictions_first(tmp_path: Path, pages: LoopbackSite) -> None:
    verifier, _ = fake_verifier()
    path = write_jsonl(tmp_path / "outputs.jsonl", mixed_rows(pages))
    result = await arun_batch_file(path, tmp_path / "r.csv", verifier=verifier, html_path=tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    s = result.summary
    bar = re.compile(
        r'<div class="bar-row"><span>([^<]*)</span><span class="bar"><span class="fill ([^"]*)" '
        r'style="width:([0-9.]+)%"></span></span><span class="count">(\d+)</span></div>'
    )
    labels = page.split("<h2>Labels</h2>")[1].split("<h2>Reasons</h2>")[0]
    reasons = page.split("<h2>Reasons</h2>")[1].split("<h2>Contradicted citations")[0]
    assert [m[0] for m in bar.findall(labels)] == ["supported", "contradicted", "not_found", "unreachable"]
    # One bar per reason (no label colour), sized by its share of all citations.
    assert s.reasons == {"judge": 5, "http_404": 1, "http_410": 1, "no_relevant_passage": 1}
    assert bar.findall(reasons) == [(name, "", f"{100 * n / s.citations:.1f}", str(n)) for name, n in s.reasons.items()]
    # The contradicted citations come first, each with the row, claim, URL and evidence quote.
    contradicted = page.split("<h2>Contradicted citations (2)</h2>")[1].split("<h2>Rows</h2>")[0]
    listed = re.findall(
        r'<tr><td>([^<]*)</td><td>([^<]*)</td><td class="url"><a href="([^"]*)"[^>]*>[^<]*</a></td>'
        r"<td><blockquote>([^<]*)</blockquote></td></tr>",
        contradicted,
    )
    expected = [
        (r.id, claim, v.url, v.evidence_quote)
        for r in result.results
        for _, claim, v in r.verdicts()
        if v.label == "contradicted"
    ]
    assert [(i, c, u, html.unescape(q)) for i, c, u, q in listed] == expected
    assert [(i, u) for i, _, u, _ in expected] == [("c1", pages.url("/old-report")), ("a1", pages.url("/old-report"))]
    assert "water boils at 50 degrees Celsius" in expected[0][3] and "ice melts at 10 degrees" in expected[1][3]
    # Then every row, those with a contradiction first, the others in input order (c2 came before a1).
    assert re.findall(r'<article class="[^"]*" id="row-([^"]*)">', page) == ["c1", "a1", "c2", "7"]


HOSTILE_PAGE = (
    'At sea level pure water boils at 100 degrees Celsius <b onmouseover="alert(1)">bold</b> '
    "\"double\" & 'single' </span></blockquote></td></tr></table><script>alert(2)</script>"
)
FORGED_BADGE = '<span class="citation-verdict citation-verdict--supported" title="forged">✅ supported</span>'
HOSTILE_ANSWER_TAIL = f'Forged: {FORGED_BADGE} <a href="javascript:alert(4)">here</a> \ue000' + " {{ 7*7 }} {% raw %}."
REPORT_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "small", "section", "div"}
REPORT_TAGS |= {"span", "table", "tr", "th", "td", "a", "br", "blockquote", "article", "ul", "li"}
REPORT_ATTRIBUTES = {"lang", "charset", "http-equiv", "content", "name", "class", "id", "style", "href", "rel", "title"}


class ParsedPage(HTMLParser):
    """Every element of a page (tag, attributes, the elements around it) and every piece of text
    with the elements around it, as a browser would read them (entities decoded)."""

    VOID = frozenset({"meta", "br"})

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str], tuple[str, ...]]] = []
        self.texts: list[tuple[tuple[str, ...], str]] = []
        self.stack: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        self.elements.append((tag, attributes, tuple(self.stack)))
        if tag not in self.VOID:
            self.stack.append(f"{tag}.{attributes.get('class', '')}")

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            if self.stack.pop().split(".", 1)[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        self.texts.append((tuple(self.stack), data))

    def text_inside(self, element: str) -> str:
        """All the text inside the elements named ``tag.class``."""
        return "".join(data for around, data in self.texts if element in around)


async def test_html_report_leaves_no_markup_to_pages_urls_ids_answers_or_errors(
    tmp_path: Path, pages: LoopbackSite
) -> None:
    site = LoopbackSite({"/evil.txt": Route(body=HOSTILE_PAGE, content_type="text/plain; charset=utf-8")}).start()
    evil_url = site.url("/evil.txt") + '?q="><img src=x onerror=alert(3)>'
    hostile_id = '"><script>alert("id")</script>'
    answer = "At sea level pure water boils at 100 degrees Celsius [1]. " + HOSTILE_ANSWER_TAIL
    try:
        rows: list[dict | str] = [
            {"id": hostile_id, "claim": CLAIM, "urls": [evil_url, "javascript:alert(1)"]},
            {"id": "forged", "answer": answer, "sources": [site.url("/evil.txt")]},
        ]
        verifier, _ = fake_verifier()
        path = write_jsonl(tmp_path / "outputs.jsonl", rows)
        result = await arun_batch_file(path, tmp_path / "r.csv", verifier=verifier)
    finally:
        site.stop()
    failed = RowResult(id="<b>failed</b>", line=9, kind="claim", digest="d", error="RuntimeError: <script>x</script>")
    results = [*result.results, failed]
    page = render_html(results, summarize(results), title="<title>report</title>")
    parsed = ParsedPage(page)

    # Only the report's own elements and attributes: nothing a page, URL, id or answer wrote.
    assert {tag for tag, _, _ in parsed.elements} <= REPORT_TAGS
    assert {name for _, attributes, _ in parsed.elements for name in attributes} <= REPORT_ATTRIBUTES
    assert [a["href"] for tag, a, _ in parsed.elements if tag == "a"] == [
        evil_url,
        result.results[1].verdicts()[0][2].url,
    ]
    assert all(re.fullmatch(r"width:[0-9.]+%", a["style"]) for _, a, _ in parsed.elements if "style" in a)
    assert [tag for tag, _, _ in parsed.elements].count("style") == 1
    assert "default-src 'none'" in page and "<script" not in page.lower() and "<img" not in page.lower()
    # Each hostile string is shown as the text it is.
    assert parsed.text_inside("title.") == "<title>report</title>"
    assert [a["id"] for tag, a, _ in parsed.elements if tag == "article"] == [
        f"row-{hostile_id}",
        "row-forged",
        "row-<b>failed</b>",
    ]
    assert hostile_id in parsed.text_inside("h3.")
    quotes = [data for around, data in parsed.texts if "blockquote." in around]
    assert quotes and all("<script>alert(2)</script>" in q and "\"double\" & 'single'" in q for q in quotes)
    assert "javascript:alert(1)" in parsed.text_inside("td.url")
    assert "RuntimeError: <script>x</script>" in parsed.text_inside("li.error")
    # The answer: its text as written (the forged badge too), and one real badge, the policy's.
    shown = parsed.text_inside("div.answer")
    assert HOSTILE_ANSWER_TAIL in shown
    badges = [a for tag, a, around in parsed.elements if tag == "span" and "div.answer" in around]
    assert [b["class"] for b in badges] == ["citation-verdict citation-verdict--supported"]
    assert "<script>alert(2)</script>" in badges[0]["title"]
    report = result.results[1].answer_report
    assert report is not None
    parts = answer_parts(report)
    assert [p for p in parts if isinstance(p, Badge)] == [Badge("supported", "✅ supported", badges[0]["title"])]
    assert "".join(p if isinstance(p, str) else p.text for p in parts) == apply_policy(report, ANNOTATE).text


def test_report_templates_ship_as_package_data() -> None:
    """The templates are package data as setuptools finds it (the pyproject globs, under the
    package), and load through the package (importlib.resources, jinja2.PackageLoader)."""
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    package = Path(guardrail.__file__).parent
    shipped = {
        p for pattern in project["tool"]["setuptools"]["package-data"]["guardrail"] for p in package.glob(pattern)
    }
    templates = resources.files("guardrail.apps.batch") / "templates"
    names = sorted(t.name for t in templates.iterdir() if t.is_file())
    assert {"report.html.j2", "macros.html.j2", "report.css"} <= set(names)
    assert all(package / "apps" / "batch" / "templates" / name in shipped for name in names)
    env = Environment(loader=PackageLoader("guardrail.apps.batch", "templates"), autoescape=True)
    assert set(env.list_templates()) == set(names)
    assert env.get_template("report.css").render() == (templates / "report.css").read_text(encoding="utf-8").rstrip(
        "\n"
    )


# -- the command line -------------------------------------------------------------------------

SUPPORTING = "pure water boils at 100 degrees Celsius"
CONTRADICTING = "water boils at 50 degrees Celsius at sea level"


def boiling_model(received: Received) -> Reply:
    """A tiny 'model' for the fake LLM server: a 100-degree claim is supported by the boiling page
    and contradicted by the old report (verbatim quotes, so the quote guard keeps them)."""
    text = received.user_text
    claim = re.search(r"<claim>\n(.*?)\n</claim>", text, re.S)
    passages = "".join(re.findall(r"<passage id=\d+>(.*?)</passage>", text, re.S))
    if claim and "100 degrees" in claim.group(1):
        if SUPPORTING in passages:
            return openai_verdict("supported", SUPPORTING)
        if CONTRADICTING in passages:
            return openai_verdict("contradicted", CONTRADICTING)
    return openai_verdict("not_found", "")


@pytest.fixture
def llm_env() -> Iterator[dict[str, str]]:
    """The OpenAI-compatible judge pointed at a local fake LLM server; no stores."""
    with FakeLLMServer() as llm:
        llm.responder = boiling_model
        yield openai_judge_env(llm, api_key="sk-test-batch")


def test_cli_batch_prints_figures_and_the_label_reason_table(
    tmp_path: Path, pages: LoopbackSite, llm_env: dict[str, str]
) -> None:
    u = pages.url
    path = write_jsonl(
        tmp_path / "outputs.jsonl",
        [
            {"id": "c1", "claim": CLAIM, "urls": [u("/boiling"), u("/old-report"), u("/gone-404")]},
            {
                "id": "a1",
                "answer": "Tomatoes need six hours of direct sunlight a day [1]. "
                "Water boils at 100 degrees Celsius at sea level [2].",
                "sources": [u("/tomatoes"), u("/gone-410")],
            },
            {"id": "a2", "answer": "Nothing to cite here."},
        ],
    )
    out, report = tmp_path / "report.csv", tmp_path / "report.html"
    args = ["batch", str(path), "--out", str(out), "--html", str(report), "--concurrency", "2"]
    result = runner.invoke(app, [*args, "--allow-private-hosts"], env={**llm_env, "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:2] == ["citation_precision=0.2000 (1/5)", "reachable_precision=0.3333 (1/3)"]
    assert "citations by label and reason" in result.stdout
    table = [[cell.strip() for cell in line.strip("│").split("│")] for line in lines if line.startswith("│")]
    assert table == [
        ["supported", "judge", "1", "20.0%"],
        ["contradicted", "judge", "1", "20.0%"],
        ["not_found", "no_relevant_passage", "1", "20.0%"],
        ["unreachable", "http_404", "1", "20.0%"],
        ["unreachable", "http_410", "1", "20.0%"],
    ]
    assert (
        "3 rows (0 from the checkpoint, 0 failed); 5 citations: 1 supported, 1 contradicted, 1 not_found, "
        "2 unreachable" in " ".join(result.stdout.split())
    )
    assert f"wrote {out} and {report}" in " ".join(result.stdout.split())
    page = report.read_text(encoding="utf-8")
    assert "0.2000" in page and "(1/5)" in page and "Contradicted citations (1)" in page
    with out.open(newline="", encoding="utf-8") as fh:
        assert [(r["id"], r["label"]) for r in csv.DictReader(fh)] == [
            ("c1", "supported"),
            ("c1", "contradicted"),
            ("c1", "unreachable"),
            ("a1", "not_found"),
            ("a1", "unreachable"),
            ("a2", ""),
        ]
    # The progress bar (stderr, not a terminal here: drawn once, finished).
    assert "verifying" in result.stderr and "3/3" in result.stderr and "1/5 supported" in result.stderr


# -- progress ---------------------------------------------------------------------------------


class WatchedStream(io.StringIO):
    """A console's file that says when a line holding ``marker`` has been written."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker
        self.seen = threading.Event()

    def write(self, text: str) -> int:
        n = super().write(text)
        if self.marker in self.getvalue():
            self.seen.set()
        return n


def test_batch_prints_progress_lines_when_stderr_is_not_a_terminal(
    tmp_path: Path, llm_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in llm_env.items():
        monkeypatch.setenv(name, value)
    err = WatchedStream("verifying: 0/2 rows")

    def held(handler: BaseHTTPRequestHandler) -> None:  # answers once a progress line was printed
        released = err.seen.wait(60)
        body = BOILING.encode() if released else b"no progress line"
        handler.send_response(200 if released else 500)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    with LoopbackSite({"/held": Route(handler=held)}) as site:
        rows = [{"id": f"r{i}", "claim": CLAIM, "urls": [site.url("/held")]} for i in (1, 2)]
        path = write_jsonl(tmp_path / "outputs.jsonl", rows)
        code = run_batch_cli(
            path,
            tmp_path / "report.csv",
            html_path=None,
            concurrency=2,
            fresh=False,
            settings=load_settings(allow_private_hosts=True),
            cache=False,
            audit=False,
            console=Console(file=io.StringIO()),
            err_console=Console(file=err, width=300),
            progress_every=0.01,
        )
    assert code == 0
    lines = [line for line in err.getvalue().splitlines() if line.startswith("verifying:")]
    assert lines[0].startswith("verifying: 0/2 rows, - rows/s, ETA -")
    assert re.fullmatch(r"verifying: 2/2 rows, [0-9.e+]+ rows/s, ETA 0:00:00, 2/2 supported", lines[-1]), lines[-1]


def test_batch_progress_bar_shows_rows_rate_and_eta_on_a_terminal() -> None:
    screen = io.StringIO()
    progress = _Progress(Console(file=screen, force_terminal=True, width=200, color_system=None))
    progress.on_start(total=4, already=1)
    done = RowResult(id="r", line=1, kind="claim", digest="d", error="boom")
    for _ in range(2):
        progress.on_row(done)
    progress.console.print(progress.bar)
    shown = screen.getvalue()
    assert "3/4" in shown and "1 from checkpoint" not in shown
    assert re.search(r"[0-9.e+]+ rows/s ETA \d+:\d\d:\d\d", shown), shown


# -- resuming ---------------------------------------------------------------------------------


async def test_resume_skips_rows_in_the_checkpoint(tmp_path: Path, pages: LoopbackSite) -> None:
    path = write_jsonl(tmp_path / "outputs.jsonl", mixed_rows(pages))
    out = tmp_path / "report.csv"
    verifier, judge = fake_verifier()
    first = await arun_batch_file(path, out, verifier=verifier)
    assert first.summary.rows_resumed == 0 and len(judge.calls) == 3
    again = await arun_batch_file(path, out, verifier=verifier)
    assert again.summary.rows_resumed == 4 and len(judge.calls) == 3  # nothing verified again
    assert again.summary.lines() == first.summary.lines()
    # A changed row is verified again; the others are not.
    rows = mixed_rows(pages)
    rows[1] = {**rows[1], "claim": "Titanic was directed by James Cameron in 1997."}  # type: ignore[dict-item]
    write_jsonl(path, rows)
    changed = await arun_batch_file(path, out, verifier=verifier)
    assert changed.summary.rows_resumed == 3 and len(judge.calls) == 4
    fresh = await arun_batch_file(path, out, verifier=verifier, fresh=True)
    assert fresh.summary.rows_resumed == 0 and len(judge.calls) == 7


async def test_a_page_cited_by_many_rows_is_fetched_once_per_run_without_a_page_cache(tmp_path: Path) -> None:
    # A server of its own: the session's shared fixture server counts other tests' hits too.
    site = LoopbackSite(
        {
            "/boiling": Route(body="<html><body><p>" + CLAIM + "</p></body></html>"),
            "/gone": Route(status=404, body="<html><body><h1>404 Not Found</h1></body></html>"),
        }
    ).start()
    try:
        rows = [{"id": f"r{i}", "claim": CLAIM, "urls": [site.url("/boiling")]} for i in range(6)]
        path = write_jsonl(tmp_path / "outputs.jsonl", rows)  # type: ignore[arg-type]
        verifier, judge = fake_verifier()  # no page cache (cache_path off)
        result = await arun_batch_file(path, tmp_path / "report.csv", verifier=verifier, concurrency=2)
        assert site.hits["/boiling"] == 1 and len(judge.calls) == 6
        assert [r.claim_report.overall for r in result.results if r.claim_report] == ["supported"] * 6
        await arun_batch_file(path, tmp_path / "report.csv", verifier=verifier, fresh=True)
        assert site.hits["/boiling"] == 2  # a new run fetches again: a page is not kept across runs
        # A page that failed is not asked for again in the run either: its rows share the verdict.
        gone = [{"id": f"g{i}", "claim": CLAIM, "urls": [site.url("/gone")]} for i in range(3)]
        result = await arun_batch_file(
            write_jsonl(tmp_path / "gone.jsonl", gone), tmp_path / "gone.csv", verifier=verifier, concurrency=1
        )
        assert site.hits["/gone"] == 1
        assert [r.claim_report.overall for r in result.results if r.claim_report] == ["unreachable"] * 3
    finally:
        site.stop()


def test_page_order_groups_rows_by_their_first_page_reading_numbers_as_numbers() -> None:
    def row(i: int, *urls: str) -> BatchRow:
        if not urls:  # an answer row: its links are in its text
            return row_from_data(i, {"id": f"r{i}", "answer": f"{CLAIM} [1](http://x/p/0)"})
        return row_from_data(i, {"id": f"r{i}", "claim": CLAIM, "urls": list(urls)})

    rows = [
        row(1, "http://x/p/10", "http://x/p/11"),
        row(2),
        row(3, "http://x/p/2", "http://x/p/3"),
        row(4, "http://x/p/11", "http://x/p/1"),
        row(5, "http://x/p/2"),
    ]
    # by the first page (the smallest URL a row cites), /p/2 before /p/10; no URL last; ties keep input order
    assert [r.line for r in page_order(rows)] == [4, 3, 5, 1, 2]


async def test_rows_are_verified_in_page_order_so_a_small_memo_still_fetches_each_page_once(tmp_path: Path) -> None:
    # Rows citing two pages alternately, a memo holding one page: in input order each row would
    # evict the other page (6 fetches); in page order each page's rows run together.
    site = LoopbackSite(
        {"/a": Route(body="<p>" + CLAIM + "</p>"), "/b": Route(body="<p>Titanic was directed by James Cameron.</p>")}
    ).start()
    try:
        rows = [
            row_from_data(i + 1, {"id": f"r{i}", "claim": CLAIM, "urls": [site.url(p)]})
            for i, p in enumerate(["/a", "/b", "/a", "/b", "/a", "/b"])
        ]
        verifier, _ = fake_verifier()
        seen: list[str] = []
        results, _ = await arun_batch(
            rows, verifier, concurrency=1, memo=PageMemo(limit=1), on_row=lambda r: seen.append(r.id)
        )
        assert site.hits == {"/a": 1, "/b": 1}
        assert seen == ["r0", "r2", "r4", "r1", "r3", "r5"]  # page order, input order within a page
        assert [r.id for r in results] == [f"r{i}" for i in range(6)]  # results come back in input order
    finally:
        site.stop()


async def test_the_pages_of_the_next_rows_are_fetched_while_a_row_is_judged() -> None:
    # One row at a time; the first row's page is slow. When it is judged, the next row's page must
    # already have been asked for: fetched ahead, not after the first row is done.
    site = LoopbackSite(
        {
            "/a-slow": Route(body="<p>" + CLAIM + "</p>", delay=0.5),
            "/b": Route(body="<p>Titanic was directed by James Cameron.</p>"),
        }
    ).start()
    hits_when_judged: list[dict[str, int]] = []

    class Watching(OverlapJudge):
        async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
            hits_when_judged.append(dict(site.hits))
            return await super().judge(requests)

    try:
        rows = [
            row_from_data(1, {"id": "a", "claim": CLAIM, "urls": [site.url("/a-slow")]}),
            row_from_data(2, {"id": "b", "claim": "Titanic was directed by James Cameron.", "urls": [site.url("/b")]}),
        ]
        settings = Settings(allow_private_hosts=True, cache_path="off", audit_path="off")  # type: ignore[arg-type]
        verifier = Verifier(judge=Watching(), embedder=HashEmbedder(), settings=settings)
        results, _ = await arun_batch(rows, verifier, concurrency=1)
        assert hits_when_judged[0] == {"/a-slow": 1, "/b": 1}
        assert site.hits == {"/a-slow": 1, "/b": 1}  # and fetched once, not again by its row
        assert [r.claim_report.overall for r in results if r.claim_report] == ["supported", "supported"]
    finally:
        site.stop()


async def test_with_a_bounded_memo_pages_fetched_ahead_are_fetched_once() -> None:
    # Twelve pages, each cited by two rows far apart in the input; a memo of 8 pages (2 fetched ahead).
    site = LoopbackSite({f"/p{i}": Route(body=f"<p>{CLAIM}</p>", delay=0.05) for i in range(12)}).start()
    try:
        rows = [
            row_from_data(n + 1, {"id": f"r{n}", "claim": CLAIM, "urls": [site.url(f"/p{n % 12}")]}) for n in range(24)
        ]
        verifier, _ = fake_verifier()
        results, _ = await arun_batch(rows, verifier, concurrency=4, memo=PageMemo(limit=8))
        assert site.hits == {f"/p{i}": 1 for i in range(12)}
        assert [r.claim_report.overall for r in results if r.claim_report] == ["supported"] * 24
    finally:
        site.stop()


async def test_a_run_that_ends_while_fetching_ahead_does_not_break_another_run_on_the_same_memo() -> None:
    # As a Ray actor runs two blocks on one memo: block A's last row fails before fetching (over the
    # claim limit) while A fetches its page ahead; block B waits for that page. A ends and cancels
    # its fetch; B must still get the page. The order is made, not hoped for: /p is held until A has
    # ended, B starts once A's fetch of /p has reached the server, and A's first page (/a) is
    # answered only once B waits on the memo for /p.
    a_ended, b_waits = threading.Event(), threading.Event()
    page_p = HeldPage(f"<p>{CLAIM}</p>", release=a_ended)
    page_a = HeldPage(f"<p>{CLAIM}</p>", release=b_waits)
    site = LoopbackSite({"/a": Route(handler=page_a), "/p": Route(handler=page_p)}).start()
    try:
        settings = Settings(allow_private_hosts=True, cache_path="off", audit_path="off", max_answer_chars=200)  # type: ignore[arg-type]
        verifier = Verifier(judge=OverlapJudge(), embedder=HashEmbedder(), settings=settings)
        memo = PageMemo(limit=MEMO_PAGES)
        block_a = [
            row_from_data(1, {"id": "a0", "claim": CLAIM, "urls": [site.url("/a")]}),
            row_from_data(2, {"id": "a1", "claim": CLAIM + " and more" * 30, "urls": [site.url("/p")]}),
        ]
        block_b = [row_from_data(3, {"id": "b1", "claim": CLAIM, "urls": [site.url("/p")]})]
        run_a = asyncio.ensure_future(arun_batch(block_a, verifier, concurrency=1, memo=memo))
        run_a.add_done_callback(lambda _: a_ended.set())
        assert await asyncio.to_thread(page_p.arrived.wait, 20), "block A never fetched /p ahead"
        run_b = asyncio.ensure_future(arun_batch(block_b, verifier, concurrency=1, memo=memo))
        deadline = time.monotonic() + 20
        while not any(innermost_code(t) is FetchOnce._memoized.__code__ for t in asyncio.all_tasks()):
            assert time.monotonic() < deadline, "block B never waited for the page A fetches"
            await asyncio.sleep(0.01)
        b_waits.set()
        (a, _), (b, _) = await asyncio.gather(run_a, run_b)
        assert a[1].error is not None and "GUARDRAIL_MAX_ANSWER_CHARS" in a[1].error
        assert b[0].error is None and b[0].claim_report is not None and b[0].claim_report.overall == "supported"
    finally:
        a_ended.set()
        b_waits.set()
        site.stop()


async def test_a_rejected_token_met_by_a_page_fetched_ahead_stops_the_run_with_that_error() -> None:
    # Row b's page is fetched ahead (slowly) while row a is verified; when row b's worker waits for
    # it, the fetch ends in a rejected token: the run must stop with ConfigurationError, naming it.
    api = FakeCrawlbase().start()
    try:
        api.targets["https://example.org/a"] = FakeTarget(readable=f"# A\n\n{CLAIM}\n")
        api.targets["https://example.org/b"] = FakeTarget(readable="x", api_failures=[401], delay=0.5)
        settings = Settings(
            crawlbase_token=SecretStr(NORMAL_TOKEN), crawlbase_api_url=api.api_url, cache_path="off", audit_path="off"
        )  # type: ignore[arg-type]
        verifier = Verifier(judge=OverlapJudge(), embedder=HashEmbedder(), settings=settings)
        rows = [
            row_from_data(1, {"id": "a", "claim": CLAIM, "urls": ["https://example.org/a"]}),
            row_from_data(2, {"id": "b", "claim": CLAIM, "urls": ["https://example.org/b"]}),
        ]
        with pytest.raises(ConfigurationError, match="CRAWLBASE_TOKEN"):
            await arun_batch(rows, verifier, concurrency=1)
        assert len(api.calls_for("https://example.org/b")) == 1  # the fetch ahead, then its error
    finally:
        api.stop()


def test_checkpoint_drops_a_torn_last_line_and_retries_failed_rows(tmp_path: Path) -> None:
    cp = Checkpoint(tmp_path / "r.csv.checkpoint.jsonl")
    ok = RowResult(id="a", line=1, kind="claim", digest="d1")
    failed = RowResult(id="b", line=2, kind="claim", digest="d2", error="RuntimeError: boom")
    cp.append(ok)
    cp.append(failed)
    with cp.path.open("a", encoding="utf-8") as fh:
        fh.write('{"id": "c", "line": 3, "ki')  # killed in the middle of a write
    assert set(cp.load()) == {"a"}  # the failed row will be retried, the torn line is gone
    assert cp.path.read_text(encoding="utf-8").endswith("}\n")
    cp.append(RowResult(id="c", line=3, kind="claim", digest="d3"))
    assert set(cp.load()) == {"a", "c"}


def test_resume_after_killing_a_real_run(tmp_path: Path) -> None:
    site = LoopbackSite(
        {
            "/r1": Route(status=410, body="gone"),
            "/r2": Route(status=404, body="missing"),
            "/r3-slow": Route(status=410, body="gone", delay=60.0),
            "/r4": Route(status=410, body="gone"),
        }
    ).start()
    try:
        rows = [  # in page order already (the order rows are verified in): the third one is slow
            {"id": f"row{n}", "claim": CLAIM, "urls": [site.url(p)]}
            for n, p in enumerate(["/r1", "/r2", "/r3-slow", "/r4"], 1)
        ]
        path = write_jsonl(tmp_path / "outputs.jsonl", rows)  # type: ignore[arg-type]
        out = tmp_path / "report.csv"
        cmd = [
            sys.executable,
            "-m",
            "guardrail.apps.cli",
            "batch",
            str(path),
            "--out",
            str(out),
            "--concurrency",
            "1",
            "--allow-private-hosts",
        ]
        env = {**os.environ, **NO_STORES, "GUARDRAIL_JUDGE": ""}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        cp = checkpoint_path(out)
        deadline = time.monotonic() + 60
        try:
            while not (site.hits.get("/r3-slow") and cp.exists() and cp.read_text().count("\n") == 2):
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the run never reached the slow row"
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        assert not out.exists()  # killed before the end: only the checkpoint exists
        prefetched = site.hits.pop("/r4", 0)  # the next row's page may have been fetched ahead
        assert site.hits == {"/r1": 1, "/r2": 1, "/r3-slow": 1} and prefetched <= 1

        site.routes["/r3-slow"] = Route(status=410, body="gone")
        rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        assert site.hits == {"/r1": 1, "/r2": 1, "/r3-slow": 2, "/r4": 1}  # finished rows were not fetched again
        assert "citation_precision=0.0000 (0/4)" in rerun.stdout
        assert "reachable_precision=n/a (0/0)" in rerun.stdout
        assert "4 rows (2 from the checkpoint, 0 failed)" in rerun.stdout
        with out.open(newline="", encoding="utf-8") as fh:
            assert [(r["id"], r["reason"]) for r in csv.DictReader(fh)] == [
                ("row1", "http_410"),
                ("row2", "http_404"),
                ("row3", "http_410"),
                ("row4", "http_410"),
            ]
    finally:
        site.stop()


def test_cli_batch_repair_reports_what_repair_would_mend(
    tmp_path: Path, pages: LoopbackSite, llm_env: dict[str, str]
) -> None:
    u = pages.url
    answer = "Water boils at 100 degrees Celsius at sea level [2]."
    path = write_jsonl(
        tmp_path / "in.jsonl", [{"id": "a1", "answer": answer, "sources": [u("/boiling"), u("/tomatoes")]}]
    )
    out, html = tmp_path / "r.csv", tmp_path / "r.html"
    args = ["batch", str(path), "--out", str(out), "--html", str(html), "--allow-private-hosts", "--fresh"]
    plain = runner.invoke(app, args, env=llm_env)
    assert plain.exit_code == 0, plain.output
    assert "repairs=" not in plain.stdout
    result = runner.invoke(app, [*args, "--repair"], env=llm_env)
    assert result.exit_code == 0, result.output
    assert "repairs=0 archived_copy, 1 repointed" in result.stdout.splitlines()
    with out.open(newline="", encoding="utf-8") as fh:
        assert [(r["label"], r["repair"], r["repaired_to"]) for r in csv.DictReader(fh)] == [
            ("not_found", "repointed", "[1]")
        ]
    assert "Repairs (1)" in html.read_text(encoding="utf-8")
