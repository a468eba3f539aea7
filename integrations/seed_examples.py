"""The seed examples a judge over a framework's chat model must label: shared by the LangChain
and LlamaIndex packages' model tests (tests/test_integration_imports.py keeps those from importing
the repository's root ``tests/`` package)."""

from __future__ import annotations

import json

SEED_QUOTE_100 = "pure water boils at 100 degrees Celsius (212 degrees Fahrenheit)"
SEED_QUOTE_120 = "they let water reach about 120 degrees Celsius before it boils"


def verdict_json(label: str, quote: str = "", confidence: float = 0.9) -> str:
    """A judge's answer as the built-in LLM judges' prompt asks for it."""
    return json.dumps({"label": label, "evidence_quote": quote, "confidence": confidence})


JUDGE_SEEDS: list[tuple[str, str, list[str], str, str | None]] = [
    # The demo answer's claims against the demo pages (guardrail.apps.demo): (claim, path, what the
    # model answers, in order, the label, the reason).
    (
        "Water boils at 100 degrees Celsius at sea level.",
        "/boiling",
        [verdict_json("supported", SEED_QUOTE_100)],
        "supported",
        None,
    ),
    (
        "A pressure cooker lets water reach 150 degrees Celsius before it boils.",
        "/boiling",
        [verdict_json("contradicted", SEED_QUOTE_120)],
        "contradicted",
        None,
    ),
    (
        "It starred Brad Pitt and Kate Winslet.",
        "/titanic",
        [verdict_json("not_found")],
        "not_found",
        "no_relevant_passage",
    ),
    (  # the model obeys an injection and quotes a sentence that is not in the page: the quote guard
        "Water boils at 100 degrees Celsius at sea level.",
        "/boiling",
        [verdict_json("supported", "Water always boils at 100 degrees Celsius everywhere.")],
        "not_found",
        "evidence_quote_not_in_source",
    ),
    (  # not JSON, then a valid answer in a code fence: strict parsing, one retry
        "Water boils at 100 degrees Celsius at sea level.",
        "/boiling",
        ["Sure! It is supported.", f"```json\n{verdict_json('supported', SEED_QUOTE_100)}\n```"],
        "supported",
        None,
    ),
    (  # a label we do not have, twice: the retry budget (two attempts) is spent
        "Water boils at 100 degrees Celsius at sea level.",
        "/boiling",
        [verdict_json("true", SEED_QUOTE_100), verdict_json("true", SEED_QUOTE_100)],
        "not_found",
        "judge_error",
    ),
    # a dead link never reaches the model
    ("Its first cut ran for more than four hours.", "/titanic-first-cut", [], "unreachable", "http_404"),
]
"""The seed examples a judge over a scripted chat model must label (with two attempts per request)."""
