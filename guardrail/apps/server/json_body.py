"""Request bodies read as strict JSON, refused up front with a 422 naming where they go wrong.

Python's ``json`` module accepts what JSON does not (``NaN``, ``Infinity``) and what cannot be
encoded again (a lone surrogate such as ``"\\ud800"``, allowed by the escape syntax but not valid
Unicode); a body holding one used to fail after all the work (a 500, a lost audit row). The
routes' :class:`StrictJSONRoute` parses bodies so that each of these, bytes that are not UTF-8 and
JSON nested too deeply for the parser answer 422 at once, before any work, naming the place
(``body.claim``, ``body.sources[2].title``) and never echoing the value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from guardrail.apps.server.errors import InvalidBody

__all__ = ["StrictJSONRequest", "StrictJSONRoute", "parse_strict_json"]

Loc = tuple[str | int, ...]


class _NonFinite(ValueError):
    def __init__(self, constant: str) -> None:
        super().__init__(constant)
        self.constant = constant


def _refuse_constant(constant: str) -> float:
    raise _NonFinite(constant)


def parse_strict_json(body: bytes) -> Any:
    """``body`` as JSON; :class:`~guardrail.apps.server.errors.InvalidBody` for anything that is
    not strict JSON of valid Unicode text."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidBody(("body",), f"the body is not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except _NonFinite as exc:
        raise InvalidBody(("body",), f"{exc.constant} is not a JSON number (JSON has no NaN or Infinity)") from None
    except json.JSONDecodeError as exc:
        raise InvalidBody(("body", exc.pos), f"JSON decode error: {exc.msg}") from None
    except RecursionError:
        raise InvalidBody(("body",), "JSON nested too deeply") from None
    where = _lone_surrogate(data)
    if where is not None:
        raise InvalidBody(where, "holds a lone surrogate (such as \\ud800), which is not valid Unicode text")
    return data


def _lone_surrogate(data: Any) -> Loc | None:
    """Where the first string (or key) holding a lone surrogate is, as a ``loc``; None if none."""
    stack: list[tuple[Loc, Any]] = [(("body",), data)]
    while stack:
        loc, item = stack.pop()
        if isinstance(item, str):
            if not _encodable(item):
                return loc
        elif isinstance(item, dict):
            for key, value in item.items():
                if not _encodable(key):
                    return loc
                stack.append(((*loc, key), value))
        elif isinstance(item, list):
            stack.extend(((*loc, n), value) for n, value in enumerate(item))
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class StrictJSONRequest(Request):
    """A request whose :meth:`json` is :func:`parse_strict_json`."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = parse_strict_json(await self.body())
        return self._json


class StrictJSONRoute(APIRoute):
    """A FastAPI route that reads its JSON body with :class:`StrictJSONRequest`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict
