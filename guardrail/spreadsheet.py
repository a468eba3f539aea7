"""CSV cells safe to open in a spreadsheet: text from pages and answers never runs as a formula."""

from __future__ import annotations

__all__ = ["csv_cell"]

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a cell as a formula (OWASP's list for CSV injection)."""


def csv_cell(value: object) -> object:
    """A value as the CSV reports write it (the batch report, ``guardrail audit export``): None as
    an empty cell, and text a spreadsheet would run as a formula (``=HYPERLINK(...)`` quoted from a
    page, an answer's ``@SUM(...)``) prefixed with ``'`` so that it shows as text."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value
