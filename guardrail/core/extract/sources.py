"""The ``sources`` passed in, normalised: URL strings, dicts, LangChain Documents, LlamaIndex nodes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from guardrail.core.schema import SourceInfo

_URL_RE = re.compile(r"^https?://[^\s<>\"]+$", re.I)


@dataclass(frozen=True)
class Source:
    """One item of ``sources``, normalised: a URL to fetch, or text to check as a fact."""

    index: int
    url: str | None
    text: str | None
    title: str | None = None

    def info(self) -> SourceInfo:
        """The public description of this source (no text)."""
        return SourceInfo(index=self.index, kind="url" if self.url else "text", url=self.url, title=self.title)


def normalize_sources(sources: Sequence[object] | None, *, url_key: str | None = None) -> list[Source]:
    """Understand ``sources``: URL strings, ``{"url", "text"}`` dicts, LangChain ``Document``s
    (``.page_content`` + ``.metadata``), LlamaIndex nodes or ``NodeWithScore`` (``.node``,
    ``.metadata``, ``.get_content()`` / ``.text``), all duck-typed.

    The URL is read from ``metadata[url_key]`` when ``url_key`` is given, else from ``"url"``, else
    from ``"source"`` when that looks like an http(s) URL. A source with a URL is fetched; one with
    only text is checked against that text. Raises ``TypeError``/``ValueError`` naming the index.
    """
    if sources is None:
        return []
    if isinstance(sources, (str, bytes)) or not isinstance(sources, Iterable):
        raise TypeError("sources must be a list, not a single string or object")
    return [_one_source(i, item, url_key) for i, item in enumerate(sources)]


def _one_source(i: int, item: object, url_key: str | None) -> Source:
    where = f"sources[{i}]"
    if isinstance(item, str):
        if not _looks_like_url(item):
            raise ValueError(f"{where}: a string source must be an http(s) URL")
        return Source(index=i, url=item.strip(), text=None)
    if isinstance(item, Mapping):
        return _from_mapping(i, item, url_key, where)
    return _from_object(i, item, url_key, where)


def _looks_like_url(value: object) -> bool:
    return isinstance(value, str) and bool(_URL_RE.match(value.strip()))


def _string_or_none(item: Mapping[str, Any], key: str, where: str) -> str | None:
    value = item.get(key)
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{where}: {key!r} must be a string, not {type(value).__name__}")
    return value


def _from_mapping(i: int, item: Mapping[str, Any], url_key: str | None, where: str) -> Source:
    url = _string_or_none(item, url_key or "url", where)
    url = url.strip() or None if url is not None else None
    if url is None and url_key is None and _looks_like_url(item.get("source")):
        url = str(item["source"]).strip()
    text = next(
        (t for t in (_string_or_none(item, k, where) for k in ("text", "page_content", "content")) if t is not None),
        None,
    )
    meta = item.get("metadata")
    if url is None and isinstance(meta, Mapping):
        url = _url_from_metadata(meta, url_key, where)
    title = item.get("title") if isinstance(item.get("title"), str) else None
    if url is None and not (text and text.strip()):
        raise ValueError(f"{where}: a dict source needs a non-empty 'url' or 'text'")
    return Source(index=i, url=url, text=text, title=title)


def _from_object(i: int, item: object, url_key: str | None, where: str) -> Source:
    # LlamaIndex NodeWithScore wraps the node.
    node = getattr(item, "node", None)
    if node is not None and hasattr(node, "metadata"):
        item = node
    meta = getattr(item, "metadata", None)
    if meta is not None and not isinstance(meta, Mapping):
        raise TypeError(f"{where}: .metadata must be a mapping, not {type(meta).__name__}")
    text = _object_text(item, meta, where)
    url = _url_from_metadata(meta or {}, url_key, where)
    if url is None and not (text and text.strip()):
        raise ValueError(f"{where}: the source has neither a URL in its metadata nor any text")
    return Source(index=i, url=url, text=text, title=_title_from(meta or {}))


def _object_text(item: object, meta: Mapping[str, Any] | None, where: str) -> str | None:
    obj: Any = item
    text: object = None
    if hasattr(obj, "page_content"):  # LangChain Document
        text = obj.page_content
    elif callable(getattr(obj, "get_content", None)):  # LlamaIndex node
        text = obj.get_content()
    elif isinstance(getattr(obj, "text", None), str):
        text = obj.text
    elif meta is None:
        raise TypeError(
            f"{where}: unsupported source type {type(item).__name__}; expected a URL string, a dict "
            "with 'url'/'text', a LangChain Document or a LlamaIndex node"
        )
    if text is not None and not isinstance(text, str):
        raise TypeError(f"{where}: the source's text must be a string, not {type(text).__name__}")
    return text


def _url_from_metadata(meta: Mapping[str, Any], url_key: str | None, where: str) -> str | None:
    if url_key is not None:
        value = meta.get(url_key)
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if not isinstance(value, str):
            raise TypeError(f"{where}: metadata[{url_key!r}] must be a string, not {type(value).__name__}")
        return value.strip()
    # Default: "url" whatever it holds (a bad URL becomes an invalid_url verdict, not a silent
    # fallback); "source" only when it looks like a URL, because LangChain loaders put file
    # paths there.
    value = meta.get("url")
    if isinstance(value, str) and value.strip():
        return value.strip()
    value = meta.get("source")
    if _looks_like_url(value):
        return str(value).strip()
    return None


def _title_from(meta: Mapping[str, Any]) -> str | None:
    title = meta.get("title")
    return title.strip() or None if isinstance(title, str) else None
