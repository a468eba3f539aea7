"""The three distributions declare what they import (a transitive dependency that happens to be
installed once hid a broken fresh install), the core's extras are the ones its errors name, and the
lock pins every declared dependency."""

from __future__ import annotations

import ast
import functools
import importlib
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import tomllib

from guardrail.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
CORE = "citation-guardrail"


@dataclass(frozen=True)
class Distribution:
    folder: Path  # where its pyproject.toml is
    shipped: tuple[str, ...]  # its package folders, relative to ``folder``
    ours: tuple[str, ...]  # the modules it ships (dotted prefixes)

    @property
    def project(self) -> dict[str, Any]:
        return dict(tomllib.loads((self.folder / "pyproject.toml").read_text(encoding="utf-8"))["project"])


DISTRIBUTIONS = {
    CORE: Distribution(ROOT, ("guardrail",), ("guardrail",)),
    "langchain-citation-guardrail": Distribution(
        ROOT / "integrations" / "langchain",
        ("langchain_citation_guardrail", "guardrail_langchain"),
        ("langchain_citation_guardrail", "guardrail_langchain"),
    ),
    "llama-index-postprocessor-citation-guardrail": Distribution(
        ROOT / "integrations" / "llamaindex",
        ("llama_index/postprocessor/citation_guardrail", "guardrail_llamaindex"),
        ("llama_index.postprocessor.citation_guardrail", "guardrail_llamaindex"),
    ),
}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(requirement: str) -> str:
    return _normalize(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0])


def _requirements(project: dict[str, Any], extra: str | None = None) -> list[str]:
    if extra is not None:
        return list(project.get("optional-dependencies", {})[extra])
    return list(project["dependencies"]) + [
        r for reqs in project.get("optional-dependencies", {}).values() for r in reqs
    ]


def _declared(project: dict[str, Any], extra: str | None = None) -> set[str]:
    return {_name(r) for r in _requirements(project, extra)}


def _imports(dist: Distribution) -> dict[str, str]:
    """Absolute imports in the distribution's shipped code (dotted name -> where)."""
    found: dict[str, str] = {}
    for package in dist.shipped:
        for path in (dist.folder / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for name in names:
                    found.setdefault(name, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


@functools.cache
def _providers() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def _distributions_of(module: str) -> set[str]:
    """The installed distributions providing ``module`` (for the llama_index namespace, the one
    providing its second level: llama_index.core is llama-index-core)."""
    parts = module.split(".")
    if parts[0] == "llama_index" and len(parts) > 1:
        return {"llama-index-" + parts[1].replace("_", "-")}
    return {_normalize(d) for d in _providers().get(parts[0], [])}


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_every_third_party_import_is_a_declared_dependency(name: str) -> None:
    dist = DISTRIBUTIONS[name]
    declared = _declared(dist.project)
    missing: dict[str, str] = {}
    for module, where in _imports(dist).items():
        top = module.split(".")[0]
        if module.startswith(dist.ours) or top in sys.stdlib_module_names or top == "__future__":
            continue
        if top == "guardrail":  # the core, for the integrations
            assert CORE in declared, f"{name} imports guardrail ({where}) without depending on {CORE}"
            continue
        providers = _distributions_of(module)
        assert providers, f"{module} (imported at {where}) is not installed at all"
        if not providers & declared:
            missing[module] = where
    assert missing == {}, f"imported but not declared in {dist.folder.relative_to(ROOT)}/pyproject.toml: {missing}"


def test_the_integrations_depend_on_this_core_version_and_their_framework() -> None:
    core_version = tuple(int(p) for p in DISTRIBUTIONS[CORE].project["version"].split(".")[:2])
    frameworks = {
        "langchain-citation-guardrail": "langchain-core",
        "llama-index-postprocessor-citation-guardrail": "llama-index-core",
    }
    for name, framework in frameworks.items():
        project = DISTRIBUTIONS[name].project
        assert project["name"] == name
        [core] = [r for r in project["dependencies"] if _name(r) == CORE]
        assert f">={core_version[0]}.{core_version[1]}" in core and "<" in core, core  # a range, this version in it
        assert framework in {_name(r) for r in project["dependencies"]}


@pytest.mark.parametrize(
    ("name", "module"), [(CORE, "guardrail"), *((n, d.ours[0]) for n, d in list(DISTRIBUTIONS.items())[1:])]
)
def test_each_package_knows_its_version(name: str, module: str) -> None:
    assert importlib.import_module(module).__version__ == DISTRIBUTIONS[name].project["version"]


def test_each_extra_provides_the_modules_its_error_names() -> None:
    project = DISTRIBUTIONS[CORE].project
    extras = project["optional-dependencies"]
    assert set(EXTRAS) <= set(extras)
    for extra, modules in EXTRAS.items():
        for module in modules:
            assert _distributions_of(module) & _declared(project, extra), f"{module} is not in [{extra}]"
    assert extras["crawlbase"] == []  # the Crawlbase fetcher needs nothing beyond the core
    [everything] = extras["all"]
    assert everything.startswith(f"{CORE}[") and set(everything[len(CORE) + 1 : -1].split(",")) == set(EXTRAS)
    assert f"{CORE}[all]" in extras["dev"]
    core_modules = {d for module in ("httpx", "numpy", "pydantic") for d in _distributions_of(module)}
    assert core_modules <= {_name(r) for r in project["dependencies"]}
    heavy = {d for extra in ("local", "llm", "server", "cli") for d in _declared(project, extra)}
    assert not heavy & {_name(r) for r in project["dependencies"]}  # none of them in the core


def test_the_lock_pins_every_declared_dependency() -> None:
    lock = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    pinned = {_normalize(line.split("==", 1)[0].strip()) for line in lock.splitlines() if "==" in line}
    ours = {_normalize(n) for n in DISTRIBUTIONS}
    for name, dist in DISTRIBUTIONS.items():
        assert _declared(dist.project) - ours - pinned == set(), name
    assert "torch==2.13.0" in lock.splitlines()
