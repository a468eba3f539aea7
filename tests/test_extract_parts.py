"""The extract package's parts: the shared sentence splitter, markdown-it-py's view of blocks, the
bounded URL scan, and the package's shape (one job per module, no cycles, small functions)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from guardrail.core.extract import extract_claims, split_sentences
from guardrail.core.extract.sentences import WINDOW

PACKAGE = Path(__file__).resolve().parents[1] / "guardrail" / "core" / "extract"
SRC = ["https://s.example/1", "https://s.example/2"]


def texts(answer: str) -> list[str]:
    return [c.text for c in extract_claims(answer, SRC).claims]


# -- the sentence splitter -------------------------------------------------------------------------


def test_split_sentences_knows_abbreviations_decimals_and_paragraphs() -> None:
    text = "Dr. Smith et al. measured 100.5 degrees in the U.S. last year. It boiled.\n\nA new paragraph"
    assert split_sentences(text) == [
        "Dr. Smith et al. measured 100.5 degrees in the U.S. last year.",
        "It boiled.",
        "A new paragraph",
    ]


def test_text_longer_than_a_window_splits_as_if_whole() -> None:
    text = "Water boils at 100 degrees. " * 300
    assert len(text) > 3 * WINDOW
    assert split_sentences(text) == ["Water boils at 100 degrees."] * 300


def test_a_sentence_longer_than_a_window_is_cut_at_white_space() -> None:
    sentence = " ".join(["word"] * 1000) + "."
    pieces = split_sentences(sentence)
    assert len(pieces) > 1
    assert all(len(p) <= WINDOW for p in pieces)
    assert " ".join(pieces) == sentence


# -- blocks as markdown-it-py sees them ------------------------------------------------------------


def test_an_indented_fence_in_a_list_item_is_code() -> None:
    answer = "- Run this:\n\n    ```\n    print('[1]')  # https://code.example/a\n    ```\n\n- Water boils [2]."
    ex = extract_claims(answer, SRC)
    assert [c.text for c in ex.claims] == ["Run this:", "Water boils [2]."]
    assert [r.url for c in ex.claims for r in c.citations] == ["https://s.example/2"]


def test_a_block_quote_ends_the_paragraph_before_it() -> None:
    assert texts("Water boils [1].\n> Ice melts [2].") == ["Water boils [1].", "Ice melts [2]."]


def test_nested_container_markers_are_not_claim_text() -> None:
    assert texts("> - Ice melts [1].\n> - [x] Snow is cold [2].") == ["Ice melts [1].", "Snow is cold [2]."]


def test_a_closing_hash_sequence_is_not_heading_text() -> None:
    assert texts("## Boiling point ##\n\n## Learning C#\n\nWater boils [1].") == [
        "Boiling point",
        "Learning C#",
        "Water boils [1].",
    ]


def test_a_lone_pipe_line_is_text_not_a_table_row() -> None:
    ex = extract_claims("Water boils | at 100 degrees [1].\nIce melts [2].", SRC)
    assert [c.text for c in ex.claims] == ["Water boils | at 100 degrees [1].", "Ice melts [2]."]


# -- bounded scans -------------------------------------------------------------------------------------


def test_a_url_longer_than_the_first_validation_window_is_found_whole() -> None:
    url = "https://a.example/" + "x" * 3000  # longer than a sentence window too: not cut
    claims = extract_claims(f"Water boils, see {url} now.").claims
    assert [r.url for c in claims for r in c.citations] == [url]
    assert any(url in c.text for c in claims)


def test_a_link_nested_in_a_link_is_one_citation_to_the_outer_target() -> None:
    (claim,) = extract_claims("[a [b](https://x.example/1)](https://y.example/2) says so.").claims
    assert [r.url for r in claim.citations] == ["https://y.example/2"]


# -- the package's shape -------------------------------------------------------------------------------


def _modules() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.glob("*.py"))}


def test_modules_do_not_import_the_package_or_import_inside_functions() -> None:
    for name, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and name != "__init__":
                assert node.module != "guardrail.core.extract", f"{name} imports the package: a cycle"
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
                assert not inner, f"{name}.{node.name} imports inside a function"


def test_functions_are_at_most_60_lines() -> None:
    for name, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                assert node.end_lineno - node.lineno < 60, f"{name}.{node.name}"


def test_functions_have_a_cyclomatic_complexity_of_at_most_15() -> None:
    ruff = [sys.executable, "-m", "ruff", "check", "--select", "C901", "--config", "lint.mccabe.max-complexity=15"]
    done = subprocess.run([*ruff, str(PACKAGE)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout
