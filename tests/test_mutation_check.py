"""The mutation check (bench/mutation_check.py) stays applicable: every mutation's text is found
exactly once in today's source, so a refactor cannot quietly turn a mutation into a no-op."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load() -> object:
    spec = importlib.util.spec_from_file_location("mutation_check", ROOT / "bench" / "mutation_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mutation_check", module)
    spec.loader.exec_module(module)
    return module


MUTATIONS = _load().MUTATIONS  # type: ignore[attr-defined]


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.id)
def test_each_mutation_applies_once_and_changes_the_source(mutation: object) -> None:
    text = (ROOT / mutation.file).read_text(encoding="utf-8")  # type: ignore[attr-defined]
    assert text.count(mutation.find) == 1  # type: ignore[attr-defined]
    assert mutation.find != mutation.replace  # type: ignore[attr-defined]
    for target in mutation.tests:  # type: ignore[attr-defined]
        assert target.startswith("-") or (ROOT / target).exists() or not target.startswith("tests/"), target


def test_mutation_ids_are_unique_and_every_guard_is_covered() -> None:
    ids = [m.id for m in MUTATIONS]
    assert len(ids) == len(set(ids))
    areas = {m.area for m in MUTATIONS}
    assert {"quote guard", "ssrf", "aggregation", "policy", "auth", "settings"} <= areas
