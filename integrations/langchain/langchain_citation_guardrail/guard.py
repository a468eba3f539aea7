"""CitationGuard: a LangChain Runnable that verifies an answer's citations and applies a policy.

All verification is the core's (:class:`guardrail.Verifier`, :func:`guardrail.apply_policy`,
:class:`guardrail.AnswerStream` for streaming); this module only maps LangChain's types in and out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable
from pydantic import ConfigDict, Field, PrivateAttr, SecretStr, field_validator

from guardrail import (
    AnswerReport,
    AnswerStream,
    CitationBlocked,
    Embedder,
    Judge,
    OutputFormat,
    PageMemo,
    Policy,
    Settings,
    Verifier,
    aiter_from_sync,
    apply_policy,
    build_verifier,
    iterate_sync,
    run_sync,
)
from langchain_citation_guardrail._io import REPORT_METADATA_KEY, Job, Keys, finish, prepare
from langchain_citation_guardrail._stream import Final, guard_stream
from langchain_citation_guardrail._tracing import RunManager, report_run, stage_runs
from langchain_citation_guardrail.schemas import input_type, output_type
from langchain_citation_guardrail.wrap import GuardedRunnable

__all__ = ["CITATION_REPORT_EVENT", "REPORT_METADATA_KEY", "CitationGuard", "get_citation_report"]

CITATION_REPORT_EVENT = "citation_report"
"""Name of the custom event carrying the :class:`~guardrail.AnswerReport` (``astream_events`` v2)."""


def get_citation_report(output: Any, report_key: str = REPORT_METADATA_KEY) -> AnswerReport | None:
    """The report a :class:`CitationGuard` attached to its output: from a message's
    ``response_metadata`` or a dict output's ``report_key``; None for anything else (a plain
    string carries none: read the ``citation_report`` child run or custom event instead)."""
    value: Any = None
    if isinstance(output, BaseMessage):
        value = output.response_metadata.get(REPORT_METADATA_KEY)
    elif isinstance(output, Mapping):
        value = output.get(report_key)
    if value is None:
        return None
    return value if isinstance(value, AnswerReport) else AnswerReport.model_validate(value)


def _public_settings(settings: Settings) -> dict[str, Any]:
    """The settings that differ from the defaults, as JSON, without a single secret."""
    python = settings.model_dump(exclude_defaults=True)
    secrets = {name for name, value in python.items() if isinstance(value, SecretStr)}
    return settings.model_dump(mode="json", exclude_defaults=True, exclude=secrets)


class CitationGuard(RunnableSerializable[Any, Any]):
    """Verifies the citations of an answer and applies a :class:`~guardrail.Policy` to it.

    Append it to a chain: ``prompt | model | StrOutputParser() | CitationGuard()`` or
    ``model | CitationGuard()``, or wrap a chain: ``CitationGuard().wrap(chain)``. The output has
    the input's type (``get_input_jsonschema()`` / ``get_output_jsonschema()`` show them):

    * ``str`` in, guarded ``str`` out.
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

    **The report**, whatever the type: the ``citation_report`` custom event (``astream_events``
    v2, a callback's ``on_custom_event``), and, when a tracer or other callback handler is
    attached, a ``citation_report`` child run whose outputs hold it, next to ``fetch`` and
    ``judge`` child runs for the verifier's stages (LangSmith shows them under the guard).

    **Configuration**: ``policy`` is a :class:`~guardrail.Policy`, a preset name (``"strict"``,
    ``"strip"``, ``"repair"``, ... see :meth:`Policy.preset <guardrail.Policy.preset>`) or a dict of
    its fields. A repairing policy (``"repair"``, ``Policy(repair=True)``) mends what it can first:
    a claim its citation does not back is checked against the other context documents and
    re-pointed to one that backs it (``[2]`` -> ``[1]``), and a dead link whose archived copy
    backs it (when the verifier looks dead links up: ``GUARDRAIL_ARCHIVE=wayback``) points at the
    copy; the report's ``suggested_citations`` say which.
    The verifier is ``verifier`` when given, else one built on first use from ``settings``
    (default: the environment) with ``judge`` and ``embedder`` when given (your own models:
    ``LangChainJudge(chat_model)``, ``LangChainEmbedder(embeddings)``); the default judge and
    embedder are the core's embedded ones (``pip install 'citation-guardrail[local]'``).

    **Serialisable**: ``dumpd``/``dumps`` keep the policy, the keys, the format and the settings
    that differ from the defaults, never a secret (keys are read from the environment again when
    loaded) and never the verifier, judge or embedder objects; load with
    ``loads(text, valid_namespaces=["langchain_citation_guardrail"], allowed_objects=[CitationGuard])``.

    **Copies and pickles**: ``copy.deepcopy`` and ``pickle`` work after use; the verifier the guard
    built is left out (built again on first use) and a deep copy shares the given verifier, judge
    and embedder.

    ``batch``/``abatch`` verify all inputs on one event loop with one page memo, so a URL cited
    by several answers is fetched once.

    **Streaming** (``stream``/``astream``/``transform``/``atransform``) emits the answer sentence
    by sentence, each as soon as its citations are verified, while later text is still arriving;
    what is held back, and why, is documented in :mod:`guardrail.streaming`. In short: a
    sentence waits for the next to begin; a ``[n]`` marker waits until it resolves (without
    context documents, until the reference list at the end, so such answers come out at the end);
    an uncited sentence waits for its paragraph's end. With ``block`` (e.g. ``policy="strict"``)
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
    policy: Policy = Field(default_factory=Policy, description="What to do with each verdict (or a preset name).")
    format: OutputFormat = Field(default="markdown", description="Badge format: markdown or html.")
    settings: Settings | None = Field(
        default=None, description="Settings of the verifier the guard builds (default: the environment)."
    )
    verifier: Verifier | None = Field(
        default=None, exclude=True, description="The Verifier to use; default: one built from the settings."
    )
    judge: Judge | None = Field(default=None, exclude=True, description="The judge of the verifier the guard builds.")
    embedder: Embedder | None = Field(
        default=None, exclude=True, description="The embedder of the verifier the guard builds."
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

    _built: Verifier | None = PrivateAttr(default=None)

    @field_validator("policy", mode="before")
    @classmethod
    def _policy_from_name(cls, value: Any) -> Any:
        return Policy.preset(value) if isinstance(value, str) else value

    @field_validator("settings", mode="before")
    @classmethod
    def _settings_from_dict(cls, value: Any) -> Any:
        # Settings(**fields) also reads the environment for the rest (the secrets a dump leaves out).
        return Settings(**value) if isinstance(value, Mapping) else value

    # -- copies and pickles -------------------------------------------------------------------

    def __getstate__(self) -> dict[Any, Any]:
        """The guard's state without the verifier it built (network clients, TLS contexts, weak
        references: a guard loaded from a pickle builds its own on first use)."""
        state: dict[Any, Any] = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private and private.get("_built") is not None:
            state["__pydantic_private__"] = {**private, "_built": None}
        return state

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> CitationGuard:
        """A copy of the configuration: the given verifier, judge and embedder are shared (services
        and models, not state), and the verifier this guard built is not copied (the copy builds
        its own on first use)."""
        memo = {} if memo is None else memo
        for shared in (self.verifier, self.judge, self.embedder):
            if shared is not None:
                memo[id(shared)] = shared
        if self._built is not None:
            memo[id(self._built)] = None
        return super().__deepcopy__(memo)

    # -- serialisation (dumpd / loads) and schemas ---------------------------------------------

    @classmethod
    def is_lc_serializable(cls) -> bool:
        """Yes: the policy, keys, format and settings (never secrets, never the verifier)."""
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        """``["langchain_citation_guardrail"]``: where ``loads`` finds the class."""
        return ["langchain_citation_guardrail"]

    @property
    def lc_attributes(self) -> dict[str, Any]:
        """The policy and the settings as JSON (the settings without secrets)."""
        attributes: dict[str, Any] = {"policy": self.policy.model_dump(mode="json")}
        if self.settings is not None:
            attributes["settings"] = _public_settings(self.settings)
        return attributes

    @property
    def _keys(self) -> Keys:
        return Keys(answer=self.answer_key, context=self.context_key, output=self.output_key, report=self.report_key)

    @property
    def InputType(self) -> Any:
        """A string, an AI message, or a dict with the answer and its context."""
        return input_type(self.get_name(), self._keys)

    @property
    def OutputType(self) -> Any:
        """The input's type; a dict gets the guarded answer and the report."""
        return output_type(self.get_name(), self._keys)

    def wrap(self, runnable: Runnable[Any, Any]) -> GuardedRunnable:
        """``runnable`` guarded by this guard: see :class:`~langchain_citation_guardrail.GuardedRunnable`."""
        return GuardedRunnable(runnable=runnable, guard=self)

    # -- helpers -------------------------------------------------------------------------------

    def _verifier(self) -> Verifier:
        """The given verifier, else one built on first use (the embedded models it may load are
        shared by the whole process, so a guard of its own costs nothing)."""
        if self.verifier is not None:
            return self.verifier
        if self._built is None:
            self._built = build_verifier(self.settings, judge=self.judge, embedder=self.embedder)
        return self._built

    def _policy(self) -> Policy:
        if self.raise_on_block and not self.policy.raise_on_block:
            return self.policy.model_copy(update={"raise_on_block": True})
        return self.policy

    async def _verify(self, job: Job, memo: PageMemo | None, run_manager: RunManager | None) -> AnswerReport:
        with stage_runs(run_manager):
            report = await self._verifier().averify_answer(
                job.text,
                job.sources,
                memo=memo,
                url_key=self.url_key,
                cite_unmarked=self.cite_unmarked,
                suggest=True if self.policy.repair else None,  # a repairing policy needs the suggestions
            )
        await report_run(run_manager, job.text, report)
        return report

    def _finish(self, job: Job, report: AnswerReport) -> Any:
        return finish(job, apply_policy(report, self._policy(), self.format), report, self._keys)

    # -- invoke --------------------------------------------------------------------------------

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Guard one answer (``str``, message or dict); see the class docs for the output."""
        return self._call_with_config(self._invoke, input, config, **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Async :meth:`invoke`."""
        return await self._acall_with_config(self._ainvoke, input, config, **kwargs)

    def _invoke(self, value: Any, run_manager: CallbackManagerForChainRun, config: RunnableConfig) -> Any:
        job = prepare(value, self._keys)
        report = run_sync(lambda: self._verify(job, None, run_manager))
        dispatch_custom_event(CITATION_REPORT_EVENT, report, config=config)
        return self._finish(job, report)

    async def _ainvoke(self, value: Any, run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig) -> Any:
        job = prepare(value, self._keys)
        report = await self._verify(job, None, run_manager)
        await adispatch_custom_event(CITATION_REPORT_EVENT, report, config=config)
        return self._finish(job, report)

    # -- batch ---------------------------------------------------------------------------------

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
        self, jobs: Sequence[Job | Exception], configs: Sequence[RunnableConfig], runs: Sequence[RunManager]
    ) -> list[AnswerReport | BaseException]:
        memo = PageMemo()
        limit = configs[0].get("max_concurrency") if configs else None
        gate = asyncio.Semaphore(limit) if limit else None

        async def one(job: Job | Exception, run: RunManager) -> AnswerReport:
            if isinstance(job, Exception):
                raise job
            if gate is None:
                return await self._verify(job, memo, run)
            async with gate:
                return await self._verify(job, memo, run)

        return await asyncio.gather(
            *(one(job, run) for job, run in zip(jobs, runs, strict=True)), return_exceptions=True
        )

    def _prepare_all(self, inputs: Sequence[Any]) -> list[Job | Exception]:
        jobs: list[Job | Exception] = []
        for value in inputs:
            try:
                jobs.append(prepare(value, self._keys))
            except Exception as exc:
                jobs.append(exc)
        return jobs

    def _finish_or_error(self, job: Job | Exception, report: AnswerReport | BaseException) -> Any:
        if isinstance(report, BaseException):
            if not isinstance(report, Exception):
                raise report
            return report
        if isinstance(job, Exception):  # a job that failed has no report: not reached
            return job
        try:
            return self._finish(job, report)
        except Exception as exc:
            return exc

    def _batch(
        self, inputs: list[Any], run_manager: list[CallbackManagerForChainRun], config: list[RunnableConfig]
    ) -> list[Any]:
        jobs = self._prepare_all(inputs)
        reports = run_sync(lambda: self._verify_all(jobs, config, run_manager))
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
        reports = await self._verify_all(jobs, config, run_manager)
        outputs = []
        for job, report, cfg in zip(jobs, reports, config, strict=True):
            if isinstance(report, AnswerReport):
                await adispatch_custom_event(CITATION_REPORT_EVENT, report, config=cfg)
            outputs.append(self._finish_or_error(job, report))
        return outputs

    # -- streaming -----------------------------------------------------------------------------

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
        items = iterate_sync(lambda: self._guard_stream(aiter_from_sync(chunks), run_manager))
        try:
            for item in items:
                if isinstance(item, Final):
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
            async for item in self._guard_stream(chunks, run_manager):
                if isinstance(item, Final):
                    await adispatch_custom_event(CITATION_REPORT_EVENT, item.report, config=config)
                    if item.chunk is not None:
                        yield item.chunk
                else:
                    yield item
        except CitationBlocked as exc:
            await adispatch_custom_event(CITATION_REPORT_EVENT, exc.report, config=config)
            raise

    async def _guard_stream(self, chunks: AsyncIterator[Any], run_manager: RunManager) -> AsyncIterator[Any]:
        """The core's :class:`~guardrail.AnswerStream` over the input chunks, its stages traced;
        the report's child run when it ends (or stops at a block)."""
        stream = AnswerStream(
            self._verifier(),
            None,
            policy=self._policy(),
            fmt=self.format,
            url_key=self.url_key,
            cite_unmarked=self.cite_unmarked,
        )
        try:
            async for item in guard_stream(chunks, stream, self._keys, lambda: stage_runs(run_manager)):
                if isinstance(item, Final):
                    await report_run(run_manager, item.report.answer, item.report)
                yield item
        except CitationBlocked as exc:
            await report_run(run_manager, exc.report.answer, exc.report)
            raise
