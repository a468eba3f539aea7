"""Where the stores live: the user cache folder by default, ``GUARDRAIL_CACHE`` /
``GUARDRAIL_AUDIT_DB`` to move them, ``off`` to turn them off."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

OFF_VALUES = frozenset({"off", "none", "no", "false", "0", "disabled"})
"""Values of ``GUARDRAIL_CACHE`` / ``GUARDRAIL_AUDIT_DB`` that turn the store off."""


def user_cache_dir() -> Path:
    """The platform's user cache folder for guardrail (platformdirs): ``$XDG_CACHE_HOME/guardrail``
    or ``~/.cache/guardrail`` on Linux, ``~/Library/Caches/guardrail`` on macOS,
    ``%LOCALAPPDATA%\\guardrail\\Cache`` on Windows."""
    return Path(platformdirs.user_cache_dir("guardrail", appauthor=False))


def default_cache_path() -> Path:
    """The page cache the CLI uses when ``GUARDRAIL_CACHE`` is unset."""
    return user_cache_dir() / "pages.sqlite3"


def default_audit_path() -> Path:
    """The audit store the CLI uses when ``GUARDRAIL_AUDIT_DB`` is unset."""
    return user_cache_dir() / "audit.sqlite3"


def is_off(value: str | os.PathLike[str] | None) -> bool:
    """Whether a path setting says "off" (``off``, ``none``, ``0``, ``false``...)."""
    return value is not None and os.fspath(value).strip().lower() in OFF_VALUES


def resolve_path(value: str | os.PathLike[str] | None, default: Path | None) -> Path | None:
    """The store file a setting names: None when it says off, ``default`` when it is unset."""
    if value is None or not os.fspath(value).strip():
        return default
    if is_off(value):
        return None
    return Path(value).expanduser()
