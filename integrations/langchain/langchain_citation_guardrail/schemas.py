"""The guard's input and output types, as LangChain shows them (``get_input_jsonschema()`` ...).

A guard takes a string, an AI message, or a dict holding the answer (``answer_key``) and its
context (``context_key``: Documents, URLs, dicts or one formatted string); it returns the same
type, a dict output adding the guarded answer (``output_key``) and the report (``report_key``).
The dict models are built for the guard's own key names.
"""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, AIMessageChunk
from pydantic import BaseModel, ConfigDict, Field, create_model

from guardrail import AnswerReport
from langchain_citation_guardrail._io import Keys

__all__ = ["Context", "Message", "input_type", "output_type"]

Message = AIMessage | AIMessageChunk
"""A model's answer as a message (its ``.text`` is checked)."""

Context = list[Document | str | dict[str, Any]] | Document | str
"""What a dict input's context may be: retrieved Documents, URLs, source dicts, or one string."""

_DICT_CONFIG = ConfigDict(extra="allow", arbitrary_types_allowed=True)  # other keys pass through


def _dict_model(name: str, fields: dict[str, tuple[Any, Any]]) -> type[BaseModel]:
    # Fields get safe names and the dict's keys as aliases: a key need not be a Python name.
    definitions: dict[str, Any] = {
        f"field_{i}": (annotation, Field(default, alias=key))
        for i, (key, (annotation, default)) in enumerate(fields.items())
    }
    model: type[BaseModel] = create_model(name, __config__=_DICT_CONFIG, **definitions)
    return model


def input_type(name: str, keys: Keys) -> Any:
    """``str | AIMessage | AIMessageChunk | <name>DictInput`` for a guard named ``name``."""
    fields: dict[str, tuple[Any, Any]] = {
        keys.answer: (str | Message, ...),
        keys.context: (Context | None, None),
    }
    return str | Message | _dict_model(f"{name}DictInput", fields)


def output_type(name: str, keys: Keys) -> Any:
    """``str | AIMessage | AIMessageChunk | <name>DictOutput`` for a guard named ``name``."""
    fields: dict[str, tuple[Any, Any]] = {
        keys.answer: (str | Message, ...),
        keys.context: (Context | None, None),
        keys.guarded: (str | Message, ...),
        keys.report: (AnswerReport, ...),
    }
    return str | Message | _dict_model(f"{name}DictOutput", fields)
