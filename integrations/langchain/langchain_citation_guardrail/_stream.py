"""Guarding a stream of LangChain chunks with the core's :class:`~guardrail.AnswerStream`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.runnables.utils import AddableDict

from guardrail import AnswerReport, AnswerStream, StreamPiece
from langchain_citation_guardrail._io import (
    Keys,
    Kind,
    answer_text,
    as_sources,
    kind_of,
    merge_context,
    report_metadata,
    to_chunk,
)


@dataclass
class Final:
    """The end of a guarded stream: the whole report and the closing output chunk, if any."""

    report: AnswerReport
    chunk: Any | None


@dataclass
class StreamState:
    """What a guarded stream has seen of its input: its kind, the model's metadata, the context."""

    keys: Keys
    kind: Kind | None = None
    message: AIMessageChunk | None = None  # the sum of the input's message chunks (metadata)
    context: Any = None
    other: dict[str, Any] = field(default_factory=dict)

    def absorb(self, chunk: Any, stream: AnswerStream, events: asyncio.Queue[tuple[str, Any]]) -> str:
        """Take one input chunk; return its answer text, queue what passes straight through."""
        kind = kind_of(chunk, "stream chunk type")
        if self.kind is None:
            self.kind = kind
        elif kind != self.kind:
            raise TypeError(f"CitationGuard: a stream of {self.kind} chunks got a {kind} chunk")
        if kind == "str":
            return str(chunk)
        if kind == "message":
            return self._message_text(chunk)
        text, passed = self._split_dict(chunk, stream)
        if passed:
            events.put_nowait(("pass", passed))
        return text

    def _split_dict(self, chunk: Mapping[str, Any], stream: AnswerStream) -> tuple[str, AddableDict]:
        """A dict chunk's answer text, and the keys that pass through (the context is also read)."""
        keys = self.keys
        text = ""
        passed = AddableDict()
        for key, value in chunk.items():
            if key == keys.answer:
                if value is not None:
                    text += self._message_text(value) if isinstance(value, BaseMessage) else answer_text(value, key)
                if keys.output and keys.output != keys.answer:
                    passed[key] = value  # the original answer stays under its own key
                continue
            if key == keys.context:
                self.context = merge_context(self.context, value)
                stream.sources = as_sources(self.context)
            passed[key] = value
        return text, passed

    def _message_text(self, message: BaseMessage) -> str:
        if not isinstance(message, AIMessage):
            raise TypeError(f"CitationGuard: can only stream AI messages, not {type(message).__name__}")
        as_chunk = message if isinstance(message, AIMessageChunk) else to_chunk(message)
        self.message = as_chunk if self.message is None else self.message + as_chunk
        return message.text

    def _text_chunk(self, text: str) -> Any:
        if self.message is not None:
            return AIMessageChunk(content=text, id=self.message.id)
        return text

    def piece_chunk(self, piece: StreamPiece) -> Any:
        """The output chunk for one guarded piece of the answer."""
        if self.kind == "dict":
            return AddableDict({self.keys.guarded: self._text_chunk(piece.text)})
        return self._text_chunk(piece.text)

    def final_chunk(self, report: AnswerReport) -> Any | None:
        """The closing chunk: the report (and, for messages, the model's metadata)."""
        closing: Any = None
        if self.message is not None:
            m = self.message
            closing = AIMessageChunk(
                content="",
                id=m.id,
                response_metadata=report_metadata(m, report),
                additional_kwargs=m.additional_kwargs,
                usage_metadata=m.usage_metadata,
                tool_call_chunks=m.tool_call_chunks,
                chunk_position=m.chunk_position,
            )
        if self.kind == "dict":
            out = AddableDict({self.keys.report: report})
            if closing is not None:
                out[self.keys.guarded] = closing
            return out
        return closing


async def guard_stream(
    chunks: AsyncIterator[Any],
    stream: AnswerStream,
    keys: Keys,
    traced: Callable[[], AbstractContextManager[None]] = nullcontext,
) -> AsyncIterator[Any]:
    """Output chunks in order, then a :class:`Final`. Input chunks are read (by the core's stream,
    in a task of its own, within ``traced()``) while earlier sentences are being verified."""
    state = StreamState(keys)
    events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    async def texts() -> AsyncIterator[str]:
        async for chunk in chunks:
            text = state.absorb(chunk, stream, events)
            if text:
                yield text

    async def consume() -> None:
        try:
            with traced():
                async for piece in stream.pieces(texts()):
                    events.put_nowait(("piece", piece))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            events.put_nowait(("error", exc))
        else:
            events.put_nowait(("end", None))

    task = asyncio.create_task(consume())
    try:
        while True:
            kind, value = await events.get()
            if kind == "pass":
                yield value
            elif kind == "piece":
                yield state.piece_chunk(value)
            elif kind == "error":
                raise value
            else:
                break
        report = stream.report()
        yield Final(report, state.final_chunk(report))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
