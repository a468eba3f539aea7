"""Fetching cited pages: the Fetcher protocol and its implementations (built by
:func:`guardrail.runtime.build_fetcher`)."""

from __future__ import annotations

from guardrail.fetch.base import Fetcher

__all__ = ["Fetcher"]
