"""The README documents every reason code and every setting, and opens with the two commands."""

from __future__ import annotations

import re
from pathlib import Path

from guardrail.core.schema import REASON_DESCRIPTIONS, Reason
from guardrail.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_reason_table_gives_each_code_its_one_sentence() -> None:
    """Every reason code is in the README's table with exactly the sentence the code shows people
    (REASON_DESCRIPTIONS), and each of those is one sentence."""
    table = README.split("### Reason codes", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([a-z_<>0-9]+)` \| [^|]+ \| (.+) \|$", table, flags=re.M))
    assert {r.value for r in Reason} | {"http_<code>"} == set(REASON_DESCRIPTIONS)
    assert rows == REASON_DESCRIPTIONS
    for code, sentence in REASON_DESCRIPTIONS.items():
        assert re.fullmatch(r"[A-Z][^\n]*\.", sentence), code
        assert len(re.findall(r"[.!?](?:\s|$)", sentence)) == 1, f"{code}: one sentence, not several"


def test_every_setting_is_in_the_configuration_table() -> None:
    table = README.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    for name in Settings.model_fields:
        variable = Settings.variable(name)
        assert f"`{variable}`" in table, f"{variable} ({name}) is not documented in the README"


def test_readme_opens_with_install_and_test_commands() -> None:
    first_block = README.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(first_block) == 2
    install, tests = first_block
    assert install.startswith("python3 -m venv .venv && ") and "guardrail demo" in install
    assert "-c requirements.lock torch==2.13.0" in install and "-c requirements.lock -e '.[dev]'" in install
    # the two integration distributions, from the repository, with everything their tests need
    assert "-e ./integrations/langchain -e ./integrations/llamaindex" in install
    assert "--upgrade pip" not in install  # a new venv's bundled pip is what a newcomer has
    assert tests.endswith("-m pytest")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # CI runs the README's own lines, read from it, never a copy that could drift.
    assert "README.md" in ci and install not in ci and tests not in ci
    # ...then installs the three distributions without the lock, not editable, and runs them.
    assert "./integrations/langchain ./integrations/llamaindex" in ci and "pip install -q -e" not in ci
