"""Every ```python block of the three READMEs runs, offline, against the loopback demo site.

The convention (documented in the README): a line ending in ``# test: CODE`` is replaced by
``CODE`` (same indentation) when the block runs here; everything else runs as written, each block
on its own (its imports complete). The replacements may use the names :func:`namespace` gives: the
demo site, a verifier over it with the test judge and embedder, and stand-ins for the models.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardrail import Settings, Verifier
from guardrail.apps.demo import LoopbackSite, demo_answer, demo_routes, site_fetcher
from guardrail.testing import HashEmbedder, OverlapJudge

ROOT = Path(__file__).resolve().parents[1]
READMES = [
    ROOT / "README.md",
    ROOT / "integrations" / "langchain" / "README.md",
    ROOT / "integrations" / "llamaindex" / "README.md",
]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_TEST_LINE = re.compile(r"^(?P<indent>\s*)(?P<code>.*?)\s+# test: (?P<replacement>.+)$")


def blocks(readme: Path) -> list[tuple[int, str]]:
    """Each ```python block of ``readme``, with the line its code starts on."""
    text = readme.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def for_tests(source: str) -> str:
    """``source`` with each ``# test: CODE`` line replaced by ``CODE`` (same indentation)."""
    lines = []
    for line in source.splitlines():
        match = _TEST_LINE.match(line)
        lines.append(match["indent"] + match["replacement"] if match else line)
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite(demo_routes()) as served:
        yield served


def namespace(site: LoopbackSite) -> dict[str, Any]:
    """The names a ``# test:`` replacement may use (the README lists them)."""
    from llama_index.core.embeddings import MockEmbedding

    from langchain_citation_guardrail.testing import OverlapChatModel, WordEmbeddings, chat_model
    from llama_index.postprocessor.citation_guardrail.testing import CitingLLM, OverlapLLM, ScriptedLLM

    def offline_verifier() -> Verifier:
        return Verifier(fetcher=site_fetcher(site, Settings()), judge=OverlapJudge(), embedder=HashEmbedder())

    return {
        "__name__": "__readme__",
        "site": site,
        "offline_verifier": offline_verifier,
        "offline_settings": Settings(allow_private_hosts=True),
        "demo_answer": demo_answer(site),
        "chat_model": chat_model,
        "judge_chat_model": OverlapChatModel,
        "fake_embeddings": WordEmbeddings(),
        "citing_llm": CitingLLM,
        "scripted_llm": ScriptedLLM,
        "judge_llm": OverlapLLM,
        "mock_embed_model": MockEmbedding(embed_dim=8),
    }


SNIPPETS = [
    pytest.param(source, id=f"{readme.relative_to(ROOT)}:{start}")
    for readme in READMES
    for start, source in blocks(readme)
]


@pytest.mark.parametrize("source", SNIPPETS)
def test_the_python_block_runs(source: str, site: LoopbackSite, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(for_tests(source), "<readme>", "exec"), namespace(site))
    assert capsys.readouterr().out.strip()  # every block shows what it did


def test_every_readme_has_python_blocks_and_each_is_run() -> None:
    counts = {readme.relative_to(ROOT).as_posix(): len(blocks(readme)) for readme in READMES}
    assert all(n >= 2 for n in counts.values()), counts
    assert len(SNIPPETS) == sum(counts.values())


def test_the_convention_replaces_only_marked_lines() -> None:
    source = "x = real()  # test: x = stand_in()\n    y = 1  # a comment\n    z = f(x)  # test: z = 2\n"
    assert for_tests(source) == "x = stand_in()\n    y = 1  # a comment\n    z = 2\n"


def test_the_documented_serve_port_is_the_one_it_listens_on() -> None:
    from guardrail.apps.cli.main import serve

    default = inspect.signature(serve).parameters["port"].default
    readme = READMES[0].read_text(encoding="utf-8")
    documented = set(re.findall(r"guardrail serve[^\n`]*--port (\d+)", readme)) | set(
        re.findall(r"127\.0\.0\.1:(\d+)", readme)
    )
    assert documented == {str(default)}
