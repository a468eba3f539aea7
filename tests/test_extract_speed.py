"""Extraction is linear in the answer's length, hostile answers included.

Each shape of ``tests/hostile.py`` once took minutes at 200 KB (``"[a](" * n``: 43 s at 64 KB).
The bounds are generous (a loaded 2-core machine passes them many times over) and measured in
CPU time, so a busy machine does not fail them; a quadratic step does, by a wide margin.
"""

from __future__ import annotations

import math
import time

import pytest

from guardrail.core.extract import extract_claims, stream_cut
from tests.hostile import HOSTILE, ordinary

SIZE = 200_000  # characters
BOUND_S = 3.0


def cpu_seconds(text: str, *, runs: int = 1) -> float:
    """The fastest of ``runs`` extractions of ``text``, in CPU seconds."""
    best = math.inf
    for _ in range(runs):
        start = time.process_time()
        extract_claims(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_a_200_kb_hostile_answer_extracts_in_bounded_time(shape: str) -> None:
    answer = HOSTILE[shape](SIZE)
    assert len(answer) > 0.9 * SIZE
    assert cpu_seconds(answer) < BOUND_S


def test_a_200_kb_ordinary_answer_extracts_in_bounded_time_with_every_claim() -> None:
    answer = ordinary(SIZE)
    start = time.process_time()
    extracted = extract_claims(answer)
    cut = stream_cut(answer)
    assert time.process_time() - start < BOUND_S
    repeats = answer.count("## Boiling and melting")
    assert len(extracted.claims) == repeats * len(extract_claims(ordinary(1)).claims)
    assert [r.label for r in extracted.references] == ["1", "2", "3", "4"]
    assert 0 < cut <= answer.index("Sources:")


@pytest.mark.parametrize(
    "shape", ["link_opens", "brackets", "nested_brackets", "parens", "backticks", "url_parens", "ipv6_urls"]
)
def test_doubling_a_hostile_answer_about_doubles_the_time(shape: str) -> None:
    small = cpu_seconds(HOSTILE[shape](50_000), runs=2)
    large = cpu_seconds(HOSTILE[shape](100_000), runs=2)
    assert large < 3 * small + 0.05, (small, large)  # quadratic would be 4x
