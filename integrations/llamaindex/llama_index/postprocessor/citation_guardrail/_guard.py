"""What the guarded query and chat engines share: the options, the verifier, and one answer's check."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence

from llama_index.core.schema import NodeWithScore

from guardrail import (
    AnswerStream,
    Embedder,
    GuardedAnswer,
    Judge,
    OutputFormat,
    PageMemo,
    Policy,
    Settings,
    Verifier,
    apply_policy,
    build_verifier,
)
from guardrail.bridges import aiter_from_sync, iterate_sync
from llama_index.postprocessor.citation_guardrail._nodes import Chunk, as_source

REPORT_KEY = "citation_report"
BLOCKED_KEY = "citation_blocked"


class VerifierSource:
    """The verifier given, else one built on first use from ``settings`` (default: the
    environment) with ``judge`` and ``embedder`` when given (``LlamaIndexJudge(llm)``,
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

    def check(self, text: str, nodes: Sequence[NodeWithScore]) -> GuardedAnswer:
        """The guarded answer (policy applied; :class:`~guardrail.CitationBlocked` when it raises)."""
        report = self.verifiers.get().verify_answer(
            text, self.sources(nodes), url_key=self.url_key, cite_unmarked=self.cite_unmarked, suggest=self._suggest
        )
        return apply_policy(report, self.policy, self.fmt)

    async def acheck(self, text: str, nodes: Sequence[NodeWithScore]) -> GuardedAnswer:
        """Async :meth:`check`."""
        report = await self.verifiers.get().averify_answer(
            text, self.sources(nodes), url_key=self.url_key, cite_unmarked=self.cite_unmarked, suggest=self._suggest
        )
        return apply_policy(report, self.policy, self.fmt)

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
