"""The mutation check (bench/mutation_check.py) stays applicable, judged by what each mutation does
rather than by its exact text: each one is found exactly once in today's source (whitespace
tolerant, so reformatting does not lose it), and applying it changes the code's syntax tree (not a
comment or layout), so a refactor cannot quietly turn a mutation into a no-op. Whether each is
killed is what ``bench/mutation_check.py`` itself runs (too slow for the suite: a test run each)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.fixtures.bench_scripts import load_bench

ROOT = Path(__file__).resolve().parents[1]


CHECK = load_bench("mutation_check")
MUTATIONS = CHECK.MUTATIONS  # type: ignore[attr-defined]


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.id)
def test_each_mutation_is_found_once_and_changes_the_code(mutation: object) -> None:
    source = (ROOT / mutation.file).read_text(encoding="utf-8")  # type: ignore[attr-defined]
    assert len(CHECK.locate(source, mutation.find)) == 1  # type: ignore[attr-defined]
    broken = CHECK.mutated(source, mutation)  # type: ignore[attr-defined]
    assert ast.dump(ast.parse(broken)) != ast.dump(ast.parse(source)), "the mutation changes no code"
    for target in mutation.tests:  # type: ignore[attr-defined]
        assert target.startswith("-") or (ROOT / target).exists() or not target.startswith("tests/"), target


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.id)
def test_each_mutation_survives_a_reformatted_target(mutation: object) -> None:
    """A formatter's edits - spaces doubled, a line broken after each comma - leave it found once,
    and the mutated code still parses."""
    source = (ROOT / mutation.file).read_text(encoding="utf-8")  # type: ignore[attr-defined]
    [(start, end)] = CHECK.locate(source, mutation.find)  # type: ignore[attr-defined]
    target = source[start:end]
    indent = re.match(r"[ \t]*", target).group()  # type: ignore[union-attr]
    edits = [re.sub(r"(?<=\S) (?=\S)", "  ", target), re.sub(r", (?=\S)", ",\n" + indent + "        ", target)]
    for edited in edits:
        reformatted = source[:start] + edited + source[end:]
        assert len(CHECK.locate(reformatted, mutation.find)) == 1, edited  # type: ignore[attr-defined]
        if _parses(reformatted):  # a break inside a string literal is no harmless edit
            ast.parse(CHECK.mutated(reformatted, mutation))  # type: ignore[attr-defined]


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def test_a_text_found_twice_or_not_at_all_is_refused() -> None:
    mutation = CHECK.Mutation("m", "area", "f.py", "x = 1", "x = 2", (), "what")  # type: ignore[attr-defined]
    for source in ("x = 1\ny = 2\nx  =  1\n", "y = 1\n"):
        with pytest.raises(ValueError, match="not once"):
            CHECK.mutated(source, mutation)  # type: ignore[attr-defined]


def test_mutation_ids_are_unique_and_every_guard_is_covered() -> None:
    ids = [m.id for m in MUTATIONS]
    assert len(ids) == len(set(ids))
    areas = {m.area for m in MUTATIONS}
    assert {"quote guard", "ssrf", "aggregation", "policy", "auth", "settings", "status"} <= areas
    assert {"ssrf-ietf-assignments-open", "ssrf-ipv6-not-global-fetched", "status-403-dead", "status-500-dead"} <= set(
        ids
    )
