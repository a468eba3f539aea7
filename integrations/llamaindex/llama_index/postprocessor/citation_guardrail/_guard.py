"""What the guards share: the options, the verifier, one answer's check, and the events they emit."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, TypedDict

from llama_index.core.schema import NodeWithScore

from guardrail import (
    AnswerReport,
    AnswerStream,
    CitationBlocked,
    Embedder,
    GuardedAnswer,
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
)
from llama_index.postprocessor.citation_guardrail._events import dispatcher, emit_report
from llama_index.postprocessor.citation_guardrail._nodes import Chunk, as_source

REPORT_KEY = "citation_report"
BLOCKED_KEY = "citation_blocked"


class VerifierOptions(TypedDict, total=False):
    """How a guard gets its verifier when none is given: ``guard_settings`` (a
    :class:`guardrail.Settings`; default the environment), ``judge`` and ``embedder``.
    ``settings`` is the deprecated name of ``guard_settings`` (it shadowed ``llama_index.core.Settings``)."""

    guard_settings: Settings | None
    settings: Settings | None
    judge: Judge | None
    embedder: Embedder | None


class GuardOptions(VerifierOptions, total=False):
    """The options of the guarded query and chat engines, besides the verifier."""

    policy: Policy | None
    fmt: OutputFormat
    url_key: str | None
    cite_unmarked: bool | None
    raise_on_block: bool | None


def verifier_source(
    owner: str, verifier: Verifier | None, options: Mapping[str, Any], *, stacklevel: int = 3
) -> VerifierSource:
    """The :class:`VerifierSource` of ``owner``'s (a class name) ``verifier`` and options; a
    ``DeprecationWarning`` for ``settings=`` (pointing ``stacklevel`` frames up: the caller's
    call of the constructor), a ``TypeError`` for both names or an unknown option."""
    unknown = sorted(set(options) - set(GuardOptions.__annotations__))
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    guard_settings, settings = options.get("guard_settings"), options.get("settings")
    if settings is not None:
        if guard_settings is not None:
            raise TypeError(f"{owner}(): give guard_settings=, not also the deprecated settings=")
        warnings.warn(
            f"{owner}(settings=...) is deprecated: the name is llama_index.core.Settings'; pass guard_settings=",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        guard_settings = settings
    return VerifierSource(
        verifier, settings=guard_settings, judge=options.get("judge"), embedder=options.get("embedder")
    )


class VerifierSource:
    """The verifier given, else one built on first use from ``settings`` (a guard's
    ``guard_settings``; default: the environment) with ``judge`` and ``embedder`` when given (``LlamaIndexJudge(llm)``,
    ``LlamaIndexEmbedder(embed_model)``)."""

    def __init__(
        self,
        verifier: Verifier | None = None,
        *,
        settings: Settings | None = None,
        judge: Judge | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self._verifier = verifier
        self._settings = settings
        self._judge = judge
        self._embedder = embedder

    def get(self) -> Verifier:
        """The verifier (built on first use)."""
        if self._verifier is None:
            self._verifier = build_verifier(self._settings, judge=self._judge, embedder=self._embedder)
        return self._verifier


class AnswerGuard:
    """Checks an answer against its source nodes and applies the policy: one :class:`Verifier`
    call (``[n]`` markers resolve to ``nodes[n - 1]``), or an :class:`~guardrail.AnswerStream`."""

    def __init__(
        self,
        verifiers: VerifierSource,
        policy: Policy | None,
        fmt: OutputFormat,
        url_key: str | None,
        cite_unmarked: bool | None,
        raise_on_block: bool | None,
    ) -> None:
        if fmt not in ("markdown", "html"):
            raise ValueError(f"unknown format {fmt!r}; choose markdown or html")
        policy = policy or Policy()
        if raise_on_block is not None:
            policy = policy.model_copy(update={"raise_on_block": raise_on_block})
        self.verifiers = verifiers
        self.policy = policy
        self.fmt: OutputFormat = fmt
        self.url_key = url_key
        self.cite_unmarked = cite_unmarked

    @property
    def _suggest(self) -> bool | None:
        """A repairing policy needs the claims that fail checked against the other source nodes."""
        return True if self.policy.repair else None

    @staticmethod
    def sources(nodes: Sequence[NodeWithScore]) -> list[Chunk]:
        """The nodes as the core's sources (text and metadata)."""
        return [as_source(node) for node in nodes]

    @dispatcher.span
    def check(self, text: str, nodes: Sequence[NodeWithScore]) -> GuardedAnswer:
        """The guarded answer (policy applied; :class:`~guardrail.CitationBlocked` when it raises),
        in a span of its own with an event per verdict and one for the report."""
        report = self.verifiers.get().verify_answer(
            text, self.sources(nodes), url_key=self.url_key, cite_unmarked=self.cite_unmarked, suggest=self._suggest
        )
        return self._apply(report)

    @dispatcher.span
    async def acheck(self, text: str, nodes: Sequence[NodeWithScore]) -> GuardedAnswer:
        """Async :meth:`check`."""
        report = await self.verifiers.get().averify_answer(
            text, self.sources(nodes), url_key=self.url_key, cite_unmarked=self.cite_unmarked, suggest=self._suggest
        )
        return self._apply(report)

    def _apply(self, report: AnswerReport) -> GuardedAnswer:
        try:
            guarded = apply_policy(report, self.policy, self.fmt)
        except CitationBlocked:
            emit_report(report, blocked=True)
            raise
        emit_report(report, blocked=guarded.blocked)
        return guarded

    @dispatcher.span
    def finished(self, stream: AnswerStream) -> AnswerReport:
        """The report of a guarded stream that has ended (or stopped), in a span of its own with
        its events, as :meth:`check` emits them."""
        report = stream.report()
        emit_report(report, blocked=stream.blocked)
        return report

    def stream(self, nodes: Sequence[NodeWithScore]) -> AnswerStream:
        """A guarded stream of an answer citing ``nodes`` (pages fetched once per stream)."""
        return AnswerStream(
            self.verifiers.get(),
            self.sources(nodes),
            policy=self.policy,
            fmt=self.fmt,
            url_key=self.url_key,
            cite_unmarked=self.cite_unmarked,
            memo=PageMemo(),
        )


class GuardedEngine:
    """What the guarded query and chat engines share: the options they take besides the engine
    they wrap (:class:`GuardOptions`), the verifier and the policy."""

    _verifiers: VerifierSource
    _guard: AnswerGuard

    def _set_guard(self, verifier: Verifier | None, options: Mapping[str, Any]) -> None:
        # Four frames up from the warning: verifier_source, here, the engine's __init__, its caller.
        self._verifiers = verifier_source(type(self).__name__, verifier, options, stacklevel=4)
        self._guard = AnswerGuard(
            self._verifiers,
            options.get("policy"),
            options.get("fmt", "markdown"),
            options.get("url_key"),
            options.get("cite_unmarked"),
            options.get("raise_on_block"),
        )

    @property
    def verifier(self) -> Verifier:
        """The verifier in use (built on first use when none was given)."""
        return self._verifiers.get()

    @property
    def policy(self) -> Policy:
        """The policy applied to the answer."""
        return self._guard.policy


def guarded_pieces(stream: AnswerStream, tokens: Iterator[str]) -> Iterator[str]:
    """The guarded text of ``tokens``, piece by piece, as each piece is verified (from sync code)."""
    for piece in iterate_sync(lambda: stream.pieces(aiter_from_sync(tokens))):
        if piece.text:
            yield piece.text


async def aguarded_pieces(stream: AnswerStream, tokens: AsyncIterator[str]) -> AsyncIterator[str]:
    """Async :func:`guarded_pieces`."""
    async for piece in stream.pieces(tokens):
        if piece.text:
            yield piece.text
