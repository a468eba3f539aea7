"""Every package the shipped code imports is declared in pyproject.toml (a transitive dependency
that happens to be installed once hid a broken fresh install), and the lock pins each of them."""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = [ROOT / "guardrail", ROOT / "integrations"]
OURS = {"guardrail", "guardrail_langchain", "guardrail_llamaindex"}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    requirements += [r for extra in project.get("optional-dependencies", {}).values() for r in extra]
    return {_normalize(re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0]) for r in requirements}


def _imported_modules() -> dict[str, list[str]]:
    """Top-level modules imported anywhere in the shipped code, with where (absolute imports only)."""
    found: dict[str, list[str]] = {}
    for base in SHIPPED:
        for path in base.rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for name in names:
                    found.setdefault(name.split(".")[0], []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_third_party_import_is_a_declared_dependency() -> None:
    providers = metadata.packages_distributions()
    declared = _declared()
    missing: dict[str, list[str]] = {}
    for module, where in _imported_modules().items():
        if module in OURS or module in sys.stdlib_module_names or module == "__future__":
            continue
        distributions = {_normalize(d) for d in providers.get(module, [])}
        assert distributions, f"{module} (imported at {where[0]}) is not installed at all"
        if not distributions & declared:
            missing[module] = where
    assert missing == {}, f"imported but not declared in pyproject.toml: {missing}"


def test_the_lock_pins_every_declared_dependency() -> None:
    lock = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    pinned = {_normalize(line.split("==", 1)[0].strip()) for line in lock.splitlines() if "==" in line}
    assert _declared() - pinned == set()
    assert "torch==2.13.0" in lock.splitlines()
