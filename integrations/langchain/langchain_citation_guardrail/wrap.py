"""Wrap mode: ``CitationGuard(...).wrap(chain)`` guards a chain's output and passes its input through."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import patch_config
from pydantic import BaseModel, ConfigDict

__all__ = ["Guard", "GuardedRunnable"]


@runtime_checkable
class Guard(Protocol):
    """What :class:`GuardedRunnable` needs of its guard (a :class:`~langchain_citation_guardrail.CitationGuard`).

    Named here rather than imported, so that this module does not import ``guard.py``, which
    imports it for :meth:`CitationGuard.wrap <langchain_citation_guardrail.CitationGuard.wrap>`.
    """

    answer_key: str
    context_key: str
    output_key: str | None

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        """The guard's run name."""
        ...

    @property
    def OutputType(self) -> Any:
        """The guard's output type."""
        ...

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Guard one answer."""
        ...

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Async :meth:`invoke`."""
        ...

    def transform(self, input: Iterator[Any], config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        """Guard a stream of answer chunks."""
        ...

    def atransform(
        self, input: AsyncIterator[Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """Async :meth:`transform`."""
        ...


_END = object()


def _concat(chunks: Iterator[Any]) -> Any:
    """The whole input from its chunks (they add up, as LangChain's own transform does it)."""
    final: Any = _END
    for chunk in chunks:
        final = chunk if final is _END else final + chunk
    return final


class GuardedRunnable(RunnableSerializable[Any, Any]):
    """``runnable`` with its output guarded by ``guard`` (built by :meth:`CitationGuard.wrap`).

    The input goes to ``runnable`` unchanged; its output goes through the guard and comes back
    with the same type (a string, a message, or a dict with the report added), streamed sentence
    by sentence by ``stream``/``astream``. When the input is a dict holding the guard's
    ``context_key`` (a RAG chain's retrieved Documents) and the output is a string or a message,
    that context is what the answer's ``[n]`` markers resolve to, as if the chain had returned
    ``{"answer": ..., "context": ...}``. The input schema is the wrapped runnable's.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    runnable: Runnable[Any, Any]
    guard: Guard

    @classmethod
    def is_lc_serializable(cls) -> bool:
        """Yes, as far as the wrapped runnable is."""
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        """``["langchain_citation_guardrail"]``."""
        return ["langchain_citation_guardrail"]

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        """``CitationGuard(<the wrapped runnable's name>)`` unless named."""
        base = name or self.name or f"{self.guard.get_name()}({self.runnable.get_name()})"
        return f"{base}{suffix}" if suffix else base

    def get_input_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        """The wrapped runnable's input schema (the input is passed to it unchanged)."""
        schema: type[BaseModel] = self.runnable.get_input_schema(config)  # type: ignore[assignment]
        return schema

    @property
    def InputType(self) -> Any:
        """The wrapped runnable's input type."""
        return self.runnable.InputType

    @property
    def OutputType(self) -> Any:
        """The guard's output type (the wrapped runnable's, guarded)."""
        return self.guard.OutputType

    # -- how the input's context reaches the guard ---------------------------------------------

    def _context(self, value: Any) -> Any:
        return value.get(self.guard.context_key) if isinstance(value, Mapping) else None

    def _guard_input(self, output: Any, context: Any) -> tuple[Any, bool]:
        """What the guard is given, and whether it is a dict built here (to unwrap again)."""
        if context is None or isinstance(output, Mapping):
            return output, False
        return {self.guard.answer_key: output, self.guard.context_key: context}, True

    def _unwrap(self, guarded: Any, built: bool) -> Any:
        key = self.guard.output_key or self.guard.answer_key
        return guarded.get(key) if built else guarded

    # -- invoke --------------------------------------------------------------------------------

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Run the wrapped runnable on ``input`` and guard its output."""
        return self._call_with_config(self._invoke, input, config, **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Async :meth:`invoke`."""
        return await self._acall_with_config(self._ainvoke, input, config, **kwargs)

    def _invoke(self, value: Any, run_manager: Any, config: RunnableConfig) -> Any:
        child = patch_config(config, callbacks=run_manager.get_child())
        output = self.runnable.invoke(value, child)
        guard_in, built = self._guard_input(output, self._context(value))
        return self._unwrap(self.guard.invoke(guard_in, child), built)

    async def _ainvoke(self, value: Any, run_manager: Any, config: RunnableConfig) -> Any:
        child = patch_config(config, callbacks=run_manager.get_child())
        output = await self.runnable.ainvoke(value, child)
        guard_in, built = self._guard_input(output, self._context(value))
        return self._unwrap(await self.guard.ainvoke(guard_in, child), built)

    # -- streaming -----------------------------------------------------------------------------

    def transform(self, input: Iterator[Any], config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        """Stream the wrapped runnable's output through the guard, sentence by sentence."""
        yield from self._transform_stream_with_config(input, self._transform, config, **kwargs)

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        """Guarded :meth:`~langchain_core.runnables.Runnable.stream` of the wrapped runnable."""
        yield from self.transform(iter([input]), config, **kwargs)

    async def atransform(
        self, input: AsyncIterator[Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """Async :meth:`transform`."""
        async for chunk in self._atransform_stream_with_config(input, self._atransform, config, **kwargs):
            yield chunk

    async def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> AsyncIterator[Any]:
        """Async :meth:`stream`."""

        async def one() -> AsyncIterator[Any]:
            yield input

        async for chunk in self.atransform(one(), config, **kwargs):
            yield chunk

    def _transform(self, chunks: Iterator[Any], run_manager: Any, config: RunnableConfig) -> Iterator[Any]:
        value = _concat(chunks)
        child = patch_config(config, callbacks=run_manager.get_child())
        outputs = self.runnable.stream(value, child)
        first = next(outputs, _END)
        if first is _END:
            return
        guard_in, built = self._guard_input(first, self._context(value))
        answer = self.guard.answer_key
        pieces = itertools.chain([guard_in], ({answer: chunk} if built else chunk for chunk in outputs))
        for chunk in self.guard.transform(pieces, child):
            if not built:
                yield chunk
            elif (text := self._unwrap(chunk, True)) is not None:
                yield text

    async def _atransform(
        self, chunks: AsyncIterator[Any], run_manager: Any, config: RunnableConfig
    ) -> AsyncIterator[Any]:
        value: Any = _END
        async for chunk in chunks:
            value = chunk if value is _END else value + chunk
        child = patch_config(config, callbacks=run_manager.get_child())
        outputs = self.runnable.astream(value, child).__aiter__()
        first = await anext(outputs, _END)
        if first is _END:
            return
        guard_in, built = self._guard_input(first, self._context(value))
        answer = self.guard.answer_key

        async def pieces() -> AsyncIterator[Any]:
            yield guard_in
            async for chunk in outputs:
                yield {answer: chunk} if built else chunk

        async for chunk in self.guard.atransform(pieces(), child):
            if not built:
                yield chunk
            elif (text := self._unwrap(chunk, True)) is not None:
                yield text
