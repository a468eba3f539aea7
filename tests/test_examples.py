"""The examples run offline as written (each starts the loopback pages it needs) and print the
guarded answer with its badges and a report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

BADGES = ["✅ supported", "❌ contradicted"]
EXAMPLES = {
    "langchain_chain.py": ["== guarded answer", *BADGES, "⛔ dead link", "overall: contradicted"],
    "llamaindex_query_engine.py": ["== guarded answer", *BADGES, "== postprocessor", "dropped"],
    "streaming.py": ["== guarded stream", "❌ contradicted", "(⛔ dead link)", "first guarded sentence after"],
}
SECRETS = ("GUARDRAIL_", "OPENAI_", "ANTHROPIC_", "CRAWLBASE_")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_runs_offline_and_prints_the_guarded_answer(name: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SECRETS)}  # the embedded defaults
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONIOENCODING": "utf-8"})
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for expected in EXAMPLES[name]:
        assert expected in done.stdout, (expected, done.stdout[-2000:])
