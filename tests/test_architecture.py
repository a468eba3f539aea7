"""Facts about the code's shape, read from its source with ``ast``: one module builds the stages,
``guardrail/core`` stays pure, and no module imports another that imports it back."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PACKAGES = {
    "guardrail": ROOT / "guardrail",
    "langchain_citation_guardrail": ROOT / "integrations/langchain/langchain_citation_guardrail",
    "llama_index.postprocessor.citation_guardrail": (
        ROOT / "integrations/llamaindex/llama_index/postprocessor/citation_guardrail"
    ),
    "guardrail_langchain": ROOT / "integrations/langchain/guardrail_langchain",
    "guardrail_llamaindex": ROOT / "integrations/llamaindex/guardrail_llamaindex",
}
"""Every package we ship, by import name: the core, the two integrations and their deprecated
old names."""

COMPOSITION_ROOT = "guardrail.runtime"

STAGE_CLASSES = frozenset(
    {
        "DirectFetcher",
        "CrawlbaseFetcher",
        "FetchOnce",
        "BatchingJudge",
        "LocalJudge",
        "OpenAIJudge",
        "AnthropicJudge",
        "PromptedJudge",
        "MiniLMEmbedder",
        "CachingEmbedder",
        "FunctionEmbedder",
        "WaybackArchive",
        "PageCache",
        "AuditStore",
        "AuditWriter",
    }
)
"""The classes of the stages a verifier runs (fetchers, judges, embedders, the archive) and of its
stores. Subclassing one (the integrations' LangChainJudge, LlamaIndexEmbedder) is not building it."""

BUILT_IN_ROOT = STAGE_CLASSES | {"Verifier"}
"""What only the composition root constructs: the stages, and the verifier over them (apps,
integrations and ``check_grounding`` get theirs from ``build_verifier``; ``Verifier(...)`` is the
users' shorthand for it)."""

CONSTRUCTORS = frozenset({"from_settings", "for_ollama", "configured"})
"""Class methods that build a stage from the settings: calling one builds the stage too."""

CORE_THIRD_PARTY = frozenset({"pydantic", "markdown_it", "linkify_it", "sentencex"})
"""What ``guardrail/core`` may import besides the standard library: pydantic, and the text parsers
``core/extract`` reads answers with (markdown-it-py, linkify-it-py, sentencex)."""


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    def where(self, node: ast.AST) -> str:
        return f"{self.path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"


def _modules() -> dict[str, Module]:
    found: dict[str, Module] = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([package, *parts])
            found[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return found


MODULES = _modules()


def _imported(module: Module) -> Iterator[tuple[str, ast.AST]]:
    """Every module name ``module`` imports, with the statement: at the top, inside functions and
    under ``if TYPE_CHECKING`` alike (each one is an arrow between the two modules). ``from a
    import b`` yields ``a.b`` (which may be a name in ``a`` rather than a module)."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.name if module.is_package else module.name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                yield f"{base}.{alias.name}", node


def _ours(name: str) -> str | None:
    """The module of ours that an imported name lives in (the longest known prefix), else None."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module in MODULES.values():
        targets = {_ours(name) for name, _ in _imported(module)}
        graph[module.name] = {t for t in targets if t is not None and t != module.name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan): each is an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _constructions(module: Module) -> Iterator[tuple[str, ast.Call]]:
    """Each call in ``module`` that builds a stage or a verifier: ``Stage(...)``, ``mod.Stage(...)``
    or ``Stage.from_settings(...)``."""
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in CONSTRUCTORS:
            func = func.value
        if isinstance(func, ast.Name) and func.id in BUILT_IN_ROOT:
            yield func.id, node
        elif isinstance(func, ast.Attribute) and func.attr in BUILT_IN_ROOT:
            yield func.attr, node


def test_the_stage_classes_named_here_exist() -> None:
    defined = {
        node.name for module in MODULES.values() for node in ast.walk(module.tree) if isinstance(node, ast.ClassDef)
    }
    assert defined >= BUILT_IN_ROOT, f"renamed or gone: {sorted(BUILT_IN_ROOT - defined)}"


def test_stages_are_built_only_in_the_composition_root() -> None:
    elsewhere = [
        f"{module.where(call)} builds {stage}"
        for module in MODULES.values()
        if module.name != COMPOSITION_ROOT
        for stage, call in _constructions(module)
    ]
    assert elsewhere == [], "stages and verifiers are built in guardrail/runtime.py only:\n" + "\n".join(elsewhere)
    built = {stage for stage, _ in _constructions(MODULES[COMPOSITION_ROOT])}
    assert {"DirectFetcher", "CrawlbaseFetcher", "FetchOnce", "BatchingJudge", "LocalJudge"} <= built
    assert {"OpenAIJudge", "AnthropicJudge", "CachingEmbedder", "WaybackArchive", "PageCache", "Verifier"} <= built


def test_the_verifier_builds_no_stage_and_imports_no_builder() -> None:
    verifier = MODULES["guardrail.verifier"]
    imported = {_ours(name) for name, _ in _imported(verifier)}
    assert COMPOSITION_ROOT not in imported
    assert not {"guardrail.fetch.direct", "guardrail.fetch.crawlbase", "guardrail.judges._batching"} & imported


def test_guardrail_core_imports_only_the_standard_library_pydantic_and_its_text_parsers() -> None:
    outside = []
    for module in MODULES.values():
        if not module.name.startswith("guardrail.core"):
            continue
        for name, node in _imported(module):
            top = name.split(".")[0]
            if name.startswith("guardrail.core") or top in sys.stdlib_module_names or top == "__future__":
                continue
            if top in CORE_THIRD_PARTY:
                continue
            outside.append(f"{module.where(node)} imports {name}")
    assert any(m.startswith("guardrail.core.extract.") for m in MODULES)  # the scan sees the subpackage
    assert outside == [], "guardrail/core is pure:\n" + "\n".join(outside)


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = _import_graph()
    assert "guardrail.verifier" in graph[COMPOSITION_ROOT]  # the graph sees the arrows
    circles = [sorted(c) for c in _circles(graph)]
    assert circles == [], f"import circles: {circles}"


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [frozenset({"a", "b", "c"})]
    assert _ours("guardrail.verifier.Verifier") == "guardrail.verifier"
    assert _ours("langchain_core.runnables") is None


INTEGRATIONS = frozenset(name for name in PACKAGES if name != "guardrail")
PUBLIC_MODULES = frozenset({"guardrail", "guardrail.testing"})
"""What the integration packages may import of the core: its public face (``guardrail.__all__``)
and the public test doubles."""


def test_the_integrations_import_only_the_cores_public_face() -> None:
    import guardrail

    private: list[str] = []
    for module in MODULES.values():
        if not any(module.name == p or module.name.startswith(p + ".") for p in INTEGRATIONS):
            continue
        for name, node in _imported(module):
            if not name.startswith("guardrail.") or name.split(".")[0] != "guardrail":
                continue
            where, _, attr = name.rpartition(".")
            if where == "guardrail" and attr in guardrail.__all__:
                continue
            if where in PUBLIC_MODULES and where != "guardrail":
                continue
            private.append(f"{module.where(node)} imports {name}")
    assert private == [], "the integrations reach past guardrail's public face:\n" + "\n".join(private)


def test_the_judges_internals_are_private_modules() -> None:
    # What the local judge is made of (its checks, candidates, features, decision) is no promise to
    # users: a leading underscore says so, as pydantic's _internal does.
    internals = {"checks", "decision", "candidates", "features", "context", "parts", "lexicon", "batching"}
    judges = ROOT / "guardrail" / "judges"
    assert {p.stem for p in judges.glob("*.py")} & internals == set()
    assert {p.stem.lstrip("_") for p in judges.glob("_*.py")} >= internals
