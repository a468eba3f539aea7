"""Work limits per call, and text the verifier can encode.

Every public entry point of the verifier (and the grounding check) checks its input against the
limits of its :class:`~guardrail.settings.Settings` before anything is extracted, fetched or
judged, so one call cannot make a process spend minutes of CPU, thousands of fetches or gigabytes
of memory:

* ``max_answer_chars`` (``GUARDRAIL_MAX_ANSWER_CHARS``): characters of an answer, claim or text;
* ``max_claims`` (``GUARDRAIL_MAX_CLAIMS``): claims checked;
* ``max_urls`` (``GUARDRAIL_MAX_URLS``): unique URLs fetched;
* ``max_checks`` (``GUARDRAIL_MAX_CHECKS``): (claim, source) pairs judged.

A call over one raises :class:`RequestLimitError` naming the limit and its variable (the service
answers 413 for a size, 422 for a count; a batch row fails with that message).

Text that holds a lone surrogate (``"\\ud800"``, which JSON and Python strings allow but UTF-8
cannot encode) is refused up front with a ``ValueError`` naming the field, rather than failing
deep inside with a ``UnicodeEncodeError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from guardrail.settings import Settings

__all__ = ["RequestLimitError", "check_count", "check_size", "check_text", "check_texts"]

LimitName = Literal["max_answer_chars", "max_claims", "max_urls", "max_checks"]


class RequestLimitError(ValueError):
    """A call is over one of the work limits. ``limit`` is the setting (``max_claims``),
    ``variable`` its environment variable, ``too_large`` whether it is a size (413) rather than a
    count (422)."""

    def __init__(self, limit: LimitName, message: str) -> None:
        self.limit = limit
        self.variable = Settings.variable(limit)
        self.too_large = limit == "max_answer_chars"
        super().__init__(f"{message} ({self.variable})")


def check_size(settings: Settings, field: str, text: str) -> None:
    """RequestLimitError when ``text`` is longer than ``max_answer_chars``."""
    limit = settings.max_answer_chars
    if len(text) > limit:
        raise RequestLimitError("max_answer_chars", f"{field} has {len(text)} characters; the limit is {limit}")


def check_count(settings: Settings, limit: LimitName, what: str, count: int) -> None:
    """RequestLimitError when ``count`` of ``what`` is over the setting ``limit``."""
    bound = getattr(settings, limit)
    if count > bound:
        raise RequestLimitError(limit, f"{count} {what} in one call; the limit is {bound}")


def check_text(field: str, text: str) -> None:
    """ValueError naming ``field`` when ``text`` cannot be encoded as UTF-8 (a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{field} holds a lone surrogate ({text[exc.start]!r} at character {exc.start}), which is not valid "
            "Unicode text"
        ) from None


def check_texts(field: str, value: object) -> None:
    """:func:`check_text` on every string in ``value`` (strings, lists, tuples and mappings, nested;
    other values are left to the caller's type checks), naming where it is (``sources[2].title``)."""
    stack: list[tuple[str, object]] = [(field, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            check_text(where, item)
        elif isinstance(item, Mapping):
            stack.extend((f"{where}.{key}", v) for key, v in item.items())
            stack.extend((f"{where} key", key) for key in item if isinstance(key, str))
        elif isinstance(item, (list, tuple)):
            stack.extend(_indexed(where, item))


def _indexed(where: str, items: Iterable[object]) -> list[tuple[str, object]]:
    return [(f"{where}[{n}]", item) for n, item in enumerate(items)]
