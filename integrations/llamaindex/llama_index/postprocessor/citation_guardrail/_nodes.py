"""Reading LlamaIndex nodes as the core's inputs: which URL a node names, and its text."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore

from guardrail import normalize_sources

# CitationQueryEngine writes each chunk as "Source 3:\n<text>\n"; the label is for the LLM, not
# part of what the page said.
_SOURCE_LABEL = re.compile(r"\ASource \d+:[ \t]*\r?\n")


@dataclass(frozen=True)
class Chunk:
    """A node as the core reads a source (duck-typed: ``.text`` and ``.metadata``)."""

    text: str
    metadata: Mapping[str, Any]


def node_text(node: BaseNode) -> str:
    """The node's own text (no metadata), without CitationQueryEngine's ``Source n:`` label."""
    return _SOURCE_LABEL.sub("", node.get_content(metadata_mode=MetadataMode.NONE), count=1)


def node_url(node: BaseNode, url_key: str | None) -> str | None:
    """The URL the node's metadata names, by the core's rule (``url_key``; else ``"url"``; else
    ``"source"`` when it looks like an http(s) URL); None when it names none."""
    return normalize_sources([Chunk(text="-", metadata=dict(node.metadata))], url_key=url_key)[0].url


def as_source(item: NodeWithScore) -> Chunk:
    """A source for ``Verifier.averify_answer``: the node's text and metadata (for its URL and title)."""
    return Chunk(text=node_text(item.node), metadata=dict(item.node.metadata))
