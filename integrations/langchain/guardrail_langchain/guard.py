"""CitationGuard: a LangChain Runnable that verifies an answer's citations and applies a policy.

All verification is the core's (:class:`guardrail.Verifier`, :func:`guardrail.apply_policy`,
:class:`guardrail.AnswerStream` for streaming); this module only maps LangChain's types in and out.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from langchain_core.runnables.utils import AddableDict
from pydantic import ConfigDict, Field, PrivateAttr

from guardrail import (
    AnswerReport,
    AnswerStream,
    CitationBlocked,
    GuardedAnswer,
    OutputFormat,
    PageMemo,
    Policy,
    StreamPiece,
    Verifier,
    apply_policy,
    build_verifier,
)
from guardrail.bridges import aiter_from_sync, iterate_sync, run_sync

__all__ = ["CITATION_REPORT_EVENT", "REPORT_METADATA_KEY", "CitationGuard", "get_citation_report"]

CITATION_REPORT_EVENT = "citation_report"
"""Name of the custom event carrying the :class:`~guardrail.AnswerReport` (``astream_events`` v2)."""

REPORT_METADATA_KEY = "citation_report"
"""Key of the report (as a JSON-ready dict) in a message's ``response_metadata``."""


def get_citation_report(output: Any, report_key: str = REPORT_METADATA_KEY) -> AnswerReport | None:
    """The report a :class:`CitationGuard` attached to its output: from a message's
    ``response_metadata`` or a dict output's ``report_key``; None for anything else (a plain
    string carries none: listen for the ``citation_report`` custom event instead)."""
    value: Any = None
    if isinstance(output, BaseMessage):
        value = output.response_metadata.get(REPORT_METADATA_KEY)
    elif isinstance(output, Mapping):
        value = output.get(report_key)
    if value is None:
        return None
    return value if isinstance(value, AnswerReport) else AnswerReport.model_validate(value)


@dataclass
class _Job:
    """One input, understood: the answer's text, its sources, and how to rebuild the output."""

    kind: Literal["str", "message", "dict"]
    text: str
    sources: list[Any] | None
    original: Any


@dataclass
class _Final:
    """The end of a guarded stream: the whole report and the closing output chunk, if any."""

    report: AnswerReport
    chunk: Any | None


class CitationGuard(RunnableSerializable[Any, Any]):
    """Verifies the citations of an answer and applies a :class:`~guardrail.Policy` to it.

    Append it to a chain: ``prompt | model | StrOutputParser() | CitationGuard()`` or
    ``model | CitationGuard()``. The output has the input's type:

    * ``str`` in, guarded ``str`` out; the report comes as the ``citation_report`` custom event
      (``astream_events(version="v2")``, or a callback's ``on_custom_event``).
    * a message (``AIMessage``/``AIMessageChunk``; its ``.text`` is checked) in, a copy with the
      guarded text out, the report in ``response_metadata["citation_report"]`` as a JSON-ready
      dict (messages get serialised: chat histories, tracing); read it back with
      :func:`get_citation_report`. Non-text content blocks are kept.
    * a dict (a RAG chain's ``{"answer": ..., "context": [Document, ...]}``) in, the same dict
      out with the guarded answer under ``output_key`` (default: ``answer_key``, replacing it)
      and the :class:`~guardrail.AnswerReport` under ``report_key``. The context's Documents
      resolve ``[n]`` markers (``[1]`` is the first) and back answers with no markers; their URL
      is read from ``metadata[url_key]`` (default ``"url"``, else ``"source"`` when it is a URL),
      and a Document without one is checked against its own text.

    Every path also emits the ``citation_report`` event. ``batch``/``abatch`` verify all inputs
    on one event loop with one page memo, so a URL cited by several answers is fetched once.

    **Streaming** (``stream``/``astream``/``transform``/``atransform``) emits the answer sentence
    by sentence, each as soon as its citations are verified, while later text is still arriving;
    what is held back, and why, is documented in :mod:`guardrail.streaming`. In short: a
    sentence waits for the next to begin; a ``[n]`` marker waits until it resolves (without
    context documents, until the reference list at the end, so such answers come out at the end);
    an uncited sentence waits for its paragraph's end. With ``block`` (e.g. ``Policy.strict()``)
    on a failed citation the stream stops and its last chunk is the block message (after a blank
    line): text already streamed cannot be unsent. With ``raise_on_block`` the stream raises
    :class:`~guardrail.CitationBlocked` instead, after the chunks already emitted. A streamed
    message comes out as text ``AIMessageChunk``s (non-text blocks are not streamed); its last
    chunk carries the report and the model's metadata (usage, finish reason, tool calls). A dict
    stream passes other keys through as they arrive and ends with the report under
    ``report_key``; its context must arrive before the answer text (as
    ``RunnablePassthrough.assign`` streams it), since sentences are verified as they come. With
    ``cite_unmarked=None``, sentences streamed before the answer's first citation are checked
    against the context (a whole answer would check them only if it cited nothing at all).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str | None = "CitationGuard"
    policy: Policy = Field(default_factory=Policy, description="What to do with each verdict.")
    format: OutputFormat = Field(default="markdown", description="Badge format: markdown or html.")
    verifier: Verifier | None = Field(
        default=None, exclude=True, description="The Verifier to use; default: one built from the environment."
    )
    answer_key: str = "answer"
    context_key: str = "context"
    output_key: str | None = Field(default=None, description="Where a dict output gets the guarded answer.")
    report_key: str = "citation_report"
    url_key: str | None = Field(default=None, description="Metadata key of a Document's URL.")
    cite_unmarked: bool | None = Field(
        default=None, description="Check uncited sentences against the context (None: only if nothing is cited)."
    )
    raise_on_block: bool = Field(default=False, description="Raise CitationBlocked instead of replacing the text.")

    # -- helpers -------------------------------------------------------------

    _built: Verifier | None = PrivateAttr(default=None)

    def _verifier(self) -> Verifier:
        """The given verifier, else one built from the environment on first use (the models it
        loads are shared by the whole process, so a guard of its own costs nothing)."""
        if self.verifier is not None:
            return self.verifier
        if self._built is None:
            self._built = build_verifier()
        return self._built

    def _policy(self) -> Policy:
        if self.raise_on_block and not self.policy.raise_on_block:
            return self.policy.model_copy(update={"raise_on_block": True})
        return self.policy

    def _prepare(self, value: Any) -> _Job:
        if isinstance(value, str):
            return _Job("str", value, None, value)
        if isinstance(value, BaseMessage):
            return _Job("message", value.text, None, value)
        if isinstance(value, Mapping):
            if self.answer_key not in value:
                raise KeyError(
                    f"CitationGuard: the input dict has no {self.answer_key!r} key (it has {sorted(map(str, value))}); "
                    "name the answer's key with CitationGuard(answer_key=...)"
                )
            answer = value[self.answer_key]
            text: str
            if isinstance(answer, BaseMessage):
                text = answer.text
            elif isinstance(answer, str):
                text = answer
            else:
                raise TypeError(
                    f"CitationGuard: input[{self.answer_key!r}] must be a string or a message, "
                    f"not {type(answer).__name__}"
                )
            return _Job("dict", text, _as_sources(value.get(self.context_key)), value)
        raise TypeError(
            f"CitationGuard: unsupported input type {type(value).__name__}; expected a string, a message "
            "or a dict with the answer and its context"
        )

    async def _verify(self, job: _Job, memo: PageMemo | None) -> AnswerReport:
        return await self._verifier().averify_answer(
            job.text, job.sources, memo=memo, url_key=self.url_key, cite_unmarked=self.cite_unmarked
        )

    def _finish(self, job: _Job, report: AnswerReport) -> Any:
        guarded = apply_policy(report, self._policy(), self.format)
        if job.kind == "str":
            return guarded.text
        if job.kind == "message":
            return _with_text(job.original, guarded, report)
        out = dict(job.original)
        answer = out[self.answer_key]
        key = self.output_key or self.answer_key
        out[key] = _with_text(answer, guarded, report) if isinstance(answer, BaseMessage) else guarded.text
        out[self.report_key] = report
        return out

    # -- invoke --------------------------------------------------------------

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Guard one answer (``str``, message or dict); see the class docs for the output."""
        return self._call_with_config(self._invoke, input, config, **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Async :meth:`invoke`."""
        return await self._acall_with_config(self._ainvoke, input, config, **kwargs)

    def _invoke(self, value: Any, run_manager: CallbackManagerForChainRun, config: RunnableConfig) -> Any:
        job = self._prepare(value)
        report = run_sync(lambda: self._verify(job, None))
        dispatch_custom_event(CITATION_REPORT_EVENT, report, config=config)
        return self._finish(job, report)

    async def _ainvoke(self, value: Any, run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig) -> Any:
        job = self._prepare(value)
        report = await self._verify(job, None)
        await adispatch_custom_event(CITATION_REPORT_EVENT, report, config=config)
        return self._finish(job, report)

    # -- batch ---------------------------------------------------------------

    def batch(
        self,
        inputs: list[Any],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """Guard many answers on one event loop; a URL cited by several of them is fetched once."""
        if not inputs:
            return []
        return self._batch_with_config(self._batch, inputs, config, return_exceptions=return_exceptions, **kwargs)

    async def abatch(
        self,
        inputs: list[Any],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """Async :meth:`batch`."""
        if not inputs:
            return []
        return await self._abatch_with_config(
            self._abatch, inputs, config, return_exceptions=return_exceptions, **kwargs
        )

    async def _verify_all(
        self, jobs: Sequence[_Job | Exception], configs: Sequence[RunnableConfig]
    ) -> list[AnswerReport | BaseException]:
        memo = PageMemo()
        limit = configs[0].get("max_concurrency") if configs else None
        gate = asyncio.Semaphore(limit) if limit else None

        async def one(job: _Job | Exception) -> AnswerReport:
            if isinstance(job, Exception):
                raise job
            if gate is None:
                return await self._verify(job, memo)
            async with gate:
                return await self._verify(job, memo)

        return await asyncio.gather(*(one(job) for job in jobs), return_exceptions=True)

    def _prepare_all(self, inputs: Sequence[Any]) -> list[_Job | Exception]:
        jobs: list[_Job | Exception] = []
        for value in inputs:
            try:
                jobs.append(self._prepare(value))
            except Exception as exc:
                jobs.append(exc)
        return jobs

    def _finish_or_error(self, job: _Job | Exception, report: AnswerReport | BaseException) -> Any:
        if isinstance(report, BaseException):
            if not isinstance(report, Exception):
                raise report
            return report
        assert isinstance(job, _Job)
        try:
            return self._finish(job, report)
        except Exception as exc:
            return exc

    def _batch(
        self, inputs: list[Any], run_manager: list[CallbackManagerForChainRun], config: list[RunnableConfig]
    ) -> list[Any]:
        jobs = self._prepare_all(inputs)
        reports = run_sync(lambda: self._verify_all(jobs, config))
        outputs = []
        for job, report, cfg in zip(jobs, reports, config, strict=True):
            if isinstance(report, AnswerReport):
                dispatch_custom_event(CITATION_REPORT_EVENT, report, config=cfg)
            outputs.append(self._finish_or_error(job, report))
        return outputs

    async def _abatch(
        self, inputs: list[Any], run_manager: list[AsyncCallbackManagerForChainRun], config: list[RunnableConfig]
    ) -> list[Any]:
        jobs = self._prepare_all(inputs)
        reports = await self._verify_all(jobs, config)
        outputs = []
        for job, report, cfg in zip(jobs, reports, config, strict=True):
            if isinstance(report, AnswerReport):
                await adispatch_custom_event(CITATION_REPORT_EVENT, report, config=cfg)
            outputs.append(self._finish_or_error(job, report))
        return outputs

    # -- streaming -----------------------------------------------------------

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        """Guard one answer and stream it sentence by sentence (see the class docs)."""
        yield from self.transform(iter([input]), config, **kwargs)

    async def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> AsyncIterator[Any]:
        """Async :meth:`stream`."""

        async def one() -> AsyncIterator[Any]:
            yield input

        async for chunk in self.atransform(one(), config, **kwargs):
            yield chunk

    def transform(self, input: Iterator[Any], config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        """Guard a stream of answer chunks (``str``, message chunks or dict chunks) as it arrives."""
        yield from self._transform_stream_with_config(input, self._transform, config, **kwargs)

    async def atransform(
        self, input: AsyncIterator[Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """Async :meth:`transform`."""
        async for chunk in self._atransform_stream_with_config(input, self._atransform, config, **kwargs):
            yield chunk

    def _transform(
        self, chunks: Iterator[Any], run_manager: CallbackManagerForChainRun, config: RunnableConfig
    ) -> Iterator[Any]:
        # The async pipeline runs on its own loop in a worker thread; the input is read from
        # another worker thread, so a slow model and verification overlap here too.
        items = iterate_sync(lambda: self._guard_stream(aiter_from_sync(chunks)))
        try:
            for item in items:
                if isinstance(item, _Final):
                    dispatch_custom_event(CITATION_REPORT_EVENT, item.report, config=config)
                    if item.chunk is not None:
                        yield item.chunk
                else:
                    yield item
        except CitationBlocked as exc:
            dispatch_custom_event(CITATION_REPORT_EVENT, exc.report, config=config)
            raise
        finally:
            items.close()

    async def _atransform(
        self, chunks: AsyncIterator[Any], run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig
    ) -> AsyncIterator[Any]:
        try:
            async for item in self._guard_stream(chunks):
                if isinstance(item, _Final):
                    await adispatch_custom_event(CITATION_REPORT_EVENT, item.report, config=config)
                    if item.chunk is not None:
                        yield item.chunk
                else:
                    yield item
        except CitationBlocked as exc:
            await adispatch_custom_event(CITATION_REPORT_EVENT, exc.report, config=config)
            raise

    async def _guard_stream(self, chunks: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """Output chunks in order, then a :class:`_Final`. Input chunks are read (by the core's
        stream, in a task of its own) while earlier sentences are being verified."""
        state = _StreamState(self)
        stream = AnswerStream(
            self._verifier(),
            None,
            policy=self._policy(),
            fmt=self.format,
            url_key=self.url_key,
            cite_unmarked=self.cite_unmarked,
        )
        events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        async def texts() -> AsyncIterator[str]:
            async for chunk in chunks:
                text = state.absorb(chunk, stream, events)
                if text:
                    yield text

        async def consume() -> None:
            try:
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
            yield _Final(report, state.final_chunk(report))
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


@dataclass
class _StreamState:
    """What a guarded stream has seen of its input: its kind, the model's metadata, the context."""

    guard: CitationGuard
    kind: Literal["str", "message", "dict"] | None = None
    message: AIMessageChunk | None = None  # the sum of the input's message chunks (metadata)
    context: Any = None
    other: dict[str, Any] = field(default_factory=dict)

    def absorb(self, chunk: Any, stream: AnswerStream, events: asyncio.Queue[tuple[str, Any]]) -> str:
        """Take one input chunk; return its answer text, queue what passes straight through."""
        kind: Literal["str", "message", "dict"]
        if isinstance(chunk, str):
            kind = "str"
        elif isinstance(chunk, BaseMessage):
            kind = "message"
        elif isinstance(chunk, Mapping):
            kind = "dict"
        else:
            raise TypeError(
                f"CitationGuard: unsupported stream chunk type {type(chunk).__name__}; expected strings, "
                "message chunks or dicts"
            )
        if self.kind is None:
            self.kind = kind
        elif kind != self.kind:
            raise TypeError(f"CitationGuard: a stream of {self.kind} chunks got a {kind} chunk")
        if kind == "str":
            return cast(str, chunk)
        if kind == "message":
            return self._message_text(chunk)
        guard = self.guard
        text = ""
        passed = AddableDict()
        for key, value in chunk.items():
            if key == guard.answer_key:
                if isinstance(value, BaseMessage):
                    text += self._message_text(value)
                elif isinstance(value, str):
                    text += value
                elif value is not None:
                    raise TypeError(
                        f"CitationGuard: input[{guard.answer_key!r}] must be a string or a message, "
                        f"not {type(value).__name__}"
                    )
                if guard.output_key and guard.output_key != guard.answer_key:
                    passed[key] = value  # the original answer stays under its own key
                continue
            if key == guard.context_key:
                self.context = _merge_context(self.context, value)
                stream.sources = _as_sources(self.context)
            passed[key] = value
        if passed:
            events.put_nowait(("pass", passed))
        return text

    def _message_text(self, message: BaseMessage) -> str:
        if not isinstance(message, AIMessage):
            raise TypeError(f"CitationGuard: can only stream AI messages, not {type(message).__name__}")
        as_chunk = message if isinstance(message, AIMessageChunk) else _to_chunk(message)
        self.message = as_chunk if self.message is None else self.message + as_chunk
        return message.text

    def _text_chunk(self, text: str) -> Any:
        if self.message is not None:
            return AIMessageChunk(content=text, id=self.message.id)
        return text

    def piece_chunk(self, piece: StreamPiece) -> Any:
        if self.kind == "dict":
            return AddableDict({self.guard.output_key or self.guard.answer_key: self._text_chunk(piece.text)})
        return self._text_chunk(piece.text)

    def final_chunk(self, report: AnswerReport) -> Any | None:
        closing: Any = None
        if self.message is not None:
            m = self.message
            closing = AIMessageChunk(
                content="",
                id=m.id,
                response_metadata={**m.response_metadata, REPORT_METADATA_KEY: report.model_dump(mode="json")},
                additional_kwargs=m.additional_kwargs,
                usage_metadata=m.usage_metadata,
                tool_call_chunks=m.tool_call_chunks,
                chunk_position=m.chunk_position,
            )
        if self.kind == "dict":
            out = AddableDict({self.guard.report_key: report})
            if closing is not None:
                out[self.guard.output_key or self.guard.answer_key] = closing
            return out
        return closing


def _to_chunk(message: AIMessage) -> AIMessageChunk:
    return AIMessageChunk(
        content=message.content,
        id=message.id,
        response_metadata=message.response_metadata,
        additional_kwargs=message.additional_kwargs,
        usage_metadata=message.usage_metadata,
        tool_call_chunks=[
            {"name": tc["name"], "args": _json_args(tc["args"]), "id": tc["id"], "index": i, "type": "tool_call_chunk"}
            for i, tc in enumerate(message.tool_calls)
        ],
    )


def _json_args(args: dict[str, Any]) -> str:
    return json.dumps(args)


def _merge_context(old: Any, new: Any) -> Any:
    # AddableDict chunks concatenate lists, so a context streamed in parts is the sum of them.
    if isinstance(old, list) and isinstance(new, list):
        return old + new
    return new


def _as_sources(context: Any) -> list[Any] | None:
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


def _with_text(message: BaseMessage, guarded: GuardedAnswer, report: AnswerReport) -> BaseMessage:
    """A copy of ``message`` whose text is ``guarded.text`` and which carries the report."""
    content: Any = message.content
    if isinstance(content, str):
        new_content: Any = guarded.text
    else:
        # Replace the text blocks by one holding the guarded text, where the first one was;
        # other blocks (tool use, images, reasoning) are kept as they are.
        new_content = []
        placed = False
        for block in content:
            is_text = isinstance(block, str) or (isinstance(block, Mapping) and block.get("type") == "text")
            if not is_text:
                new_content.append(block)
            elif not placed:
                new_content.append({"type": "text", "text": guarded.text})
                placed = True
        if not placed:
            new_content.insert(0, {"type": "text", "text": guarded.text})
    metadata = {**message.response_metadata, REPORT_METADATA_KEY: report.model_dump(mode="json")}
    return message.model_copy(update={"content": new_content, "response_metadata": metadata})
