"""The integration packages' tests are written as a user's would be: on the public test doubles
(guardrail.testing and each package's own ``testing`` module), importing nothing from the
repository's root ``tests/`` package."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INTEGRATIONS = ROOT / "integrations"


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (function bodies included)."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


def integration_test_files() -> list[Path]:
    """The integration packages' test modules and the files beside them that they import."""
    tests = sorted(INTEGRATIONS.glob("*/tests/*.py"))
    return [*tests, *sorted(INTEGRATIONS.glob("*.py"))]


def test_the_scan_reads_every_integration_test_module() -> None:
    names = {p.name for p in integration_test_files()}
    assert {"test_langchain_guard.py", "test_llamaindex_guard.py", "conftest.py"} <= names
    assert "tests.fakes" in imported_modules(ROOT / "tests" / "test_verify_texts.py")  # the scan sees imports


def test_integration_tests_import_nothing_from_the_root_tests_package() -> None:
    offenders = {
        f"{path.relative_to(ROOT).as_posix()}: {module}"
        for path in integration_test_files()
        for module in imported_modules(path)
        if module == "tests" or module.startswith("tests.")
    }
    assert not offenders, sorted(offenders)


def test_integration_tests_use_the_public_doubles() -> None:
    used = set().union(*(imported_modules(p) for p in integration_test_files()))
    assert "guardrail.testing" in used


# -- no import circle inside an integration package ------------------------------------------------

PACKAGES = {
    "langchain_citation_guardrail": INTEGRATIONS / "langchain" / "langchain_citation_guardrail",
    "guardrail_langchain": INTEGRATIONS / "langchain" / "guardrail_langchain",
    "llama_index.postprocessor.citation_guardrail": INTEGRATIONS
    / "llamaindex"
    / "llama_index"
    / "postprocessor"
    / "citation_guardrail",
    "guardrail_llamaindex": INTEGRATIONS / "llamaindex" / "guardrail_llamaindex",
}


def package_modules() -> dict[str, Path]:
    """Every module of the integration packages by its dotted name."""
    modules = {}
    for package, folder in PACKAGES.items():
        for path in folder.glob("*.py"):
            modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return modules


def import_graph() -> dict[str, set[str]]:
    """Which of the packages' modules each one imports (under TYPE_CHECKING and in functions too)."""
    modules = package_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for module in imported_modules(path):
            if module in modules:
                targets.add(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in modules:  # `from pkg import submodule`
                targets.update(f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules)
        graph[name] = targets - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph`` (each as the path that closes it)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found


def test_the_circle_finder_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_integration_package_has_an_import_circle() -> None:
    graph = import_graph()
    assert "langchain_citation_guardrail.wrap" in graph["langchain_citation_guardrail.guard"]  # the scan sees it
    assert circles(graph) == []
