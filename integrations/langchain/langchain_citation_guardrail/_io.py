"""LangChain's types in and out of the core: what an input is, its sources, and the guarded output."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage

from guardrail import AnswerReport, GuardedAnswer

REPORT_METADATA_KEY = "citation_report"
"""Key of the report (as a JSON-ready dict) in a message's ``response_metadata``."""

Kind = Literal["str", "message", "dict"]


@dataclass
class Job:
    """One input, understood: the answer's text, its sources, and how to rebuild the output."""

    kind: Kind
    text: str
    sources: list[Any] | None
    original: Any


@dataclass(frozen=True)
class Keys:
    """Where a dict input holds the answer and its context, and where the output puts what."""

    answer: str = "answer"
    context: str = "context"
    output: str | None = None
    report: str = "citation_report"

    @property
    def guarded(self) -> str:
        """The key of the guarded answer in a dict output."""
        return self.output or self.answer


def kind_of(value: Any, what: str = "input type") -> Kind:
    """``str``, ``message`` or ``dict``; TypeError naming ``value``'s type for anything else."""
    if isinstance(value, str):
        return "str"
    if isinstance(value, BaseMessage):
        return "message"
    if isinstance(value, Mapping):
        return "dict"
    raise TypeError(
        f"CitationGuard: unsupported {what} {type(value).__name__}; expected a string, a message "
        "or a dict with the answer and its context"
    )


def answer_text(value: Any, key: str) -> str:
    """The text of a dict input's answer (a string or a message)."""
    if isinstance(value, BaseMessage):
        return value.text
    if isinstance(value, str):
        return value
    raise TypeError(f"CitationGuard: input[{key!r}] must be a string or a message, not {type(value).__name__}")


def prepare(value: Any, keys: Keys) -> Job:
    """The job for one input (see :class:`~langchain_citation_guardrail.CitationGuard`)."""
    kind = kind_of(value)
    if kind == "str":
        return Job("str", value, None, value)
    if kind == "message":
        return Job("message", value.text, None, value)
    if keys.answer not in value:
        raise KeyError(
            f"CitationGuard: the input dict has no {keys.answer!r} key (it has {sorted(map(str, value))}); "
            "name the answer's key with CitationGuard(answer_key=...)"
        )
    return Job("dict", answer_text(value[keys.answer], keys.answer), as_sources(value.get(keys.context)), value)


def finish(job: Job, guarded: GuardedAnswer, report: AnswerReport, keys: Keys) -> Any:
    """The output for ``job``: the input's type with the guarded text, and the report."""
    if job.kind == "str":
        return guarded.text
    if job.kind == "message":
        return with_text(job.original, guarded, report)
    out = dict(job.original)
    answer = out[keys.answer]
    out[keys.guarded] = with_text(answer, guarded, report) if isinstance(answer, BaseMessage) else guarded.text
    out[keys.report] = report
    return out


def as_sources(context: Any) -> list[Any] | None:
    """A chain's context as the core's ``sources``: a list of Documents/URLs/dicts; a single
    Document or dict is one source; a formatted string is one source checked as text."""
    if context is None:
        return None
    if isinstance(context, str):
        return [{"text": context}] if context.strip() else None
    if isinstance(context, Mapping) or hasattr(context, "page_content"):
        return [context]
    if isinstance(context, Sequence):
        return list(context)
    raise TypeError(
        f"CitationGuard: the context must be a list of Documents, URLs or dicts, not {type(context).__name__}"
    )


def merge_context(old: Any, new: Any) -> Any:
    """A context streamed in parts is the sum of them (AddableDict chunks concatenate lists)."""
    if isinstance(old, list) and isinstance(new, list):
        return old + new
    return new


def report_metadata(message: BaseMessage, report: AnswerReport) -> dict[str, Any]:
    """``message``'s response metadata with the report added (JSON-ready: messages get serialised)."""
    return {**message.response_metadata, REPORT_METADATA_KEY: report.model_dump(mode="json")}


def with_text(message: BaseMessage, guarded: GuardedAnswer, report: AnswerReport) -> BaseMessage:
    """A copy of ``message`` whose text is ``guarded.text`` and which carries the report."""
    content: Any = message.content
    new_content: Any = guarded.text if isinstance(content, str) else _replace_text_blocks(content, guarded.text)
    return message.model_copy(update={"content": new_content, "response_metadata": report_metadata(message, report)})


def _replace_text_blocks(content: list[Any], text: str) -> list[Any]:
    """One text block holding ``text`` where the first one was; other blocks (tool use, images,
    reasoning) are kept as they are."""
    new_content: list[Any] = []
    placed = False
    for block in content:
        is_text = isinstance(block, str) or (isinstance(block, Mapping) and block.get("type") == "text")
        if not is_text:
            new_content.append(block)
        elif not placed:
            new_content.append({"type": "text", "text": text})
            placed = True
    if not placed:
        new_content.insert(0, {"type": "text", "text": text})
    return new_content


def to_chunk(message: AIMessage) -> AIMessageChunk:
    """``message`` as a chunk (its tool calls as tool call chunks), so that chunks add up."""
    return AIMessageChunk(
        content=message.content,
        id=message.id,
        response_metadata=message.response_metadata,
        additional_kwargs=message.additional_kwargs,
        usage_metadata=message.usage_metadata,
        tool_call_chunks=[
            {"name": tc["name"], "args": json.dumps(tc["args"]), "id": tc["id"], "index": i, "type": "tool_call_chunk"}
            for i, tc in enumerate(message.tool_calls)
        ],
    )
