"""The repository's shared fixtures (the loopback page server, settings that never reach the
internet): these tests run from the repository root, next to the core's."""

from __future__ import annotations

from tests.conftest import llm, pages

__all__ = ["llm", "pages"]
