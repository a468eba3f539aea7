"""CitationGuardPostprocessor: re-check retrieved nodes against the live pages they came from."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from guardrail import (
    Action,
    Embedder,
    Judge,
    Label,
    PageMemo,
    Policy,
    Settings,
    TextReport,
    VerdictKind,
    Verifier,
    run_sync,
)
from llama_index.postprocessor.citation_guardrail._events import dispatcher, emit_texts
from llama_index.postprocessor.citation_guardrail._guard import VerifierSource, verifier_source
from llama_index.postprocessor.citation_guardrail._nodes import node_text, node_url

log = logging.getLogger("guardrail.llamaindex")

VERDICT_KEY = "citation_verdict"
REASON_KEY = "citation_reason"
EVIDENCE_KEY = "citation_evidence"
CHECKED_AT_KEY = "citation_checked_at"
CHECKED_URL_KEY = "citation_checked_url"
SUPPORT_KEY = "citation_support"
UNVERIFIED_KEY = "citation_unverified"

VERDICT_KEYS: tuple[str, ...] = (
    VERDICT_KEY,
    REASON_KEY,
    EVIDENCE_KEY,
    CHECKED_AT_KEY,
    CHECKED_URL_KEY,
    SUPPORT_KEY,
    UNVERIFIED_KEY,
)
"""The metadata keys the postprocessor writes; all are excluded from embedding and LLM metadata."""


class CitationGuardPostprocessor(BaseNodePostprocessor):
    """Re-fetches the page each retrieved node was indexed from and checks it still supports the
    node's text; drops nodes whose page died or now says otherwise.

    A node is checked when its metadata names a URL (``url_key``; by default ``"url"``, else
    ``"source"`` when it looks like an http(s) URL). Its sentences are checked as claims against
    the live page (``Verifier.averify_texts``: at most ``max_sentences`` of them, and the node is
    ``supported`` when at least ``min_supported`` of them are). Each unique URL is fetched once per
    call. The verdict goes into a copy of the node's metadata (the index's own node objects are not
    changed) under :data:`VERDICT_KEYS`:

    * ``citation_verdict`` - ``supported`` / ``contradicted`` / ``not_found`` / ``unreachable``;
    * ``citation_reason`` - why, when the guard decided it (``http_404``, ``soft_404``...), or None;
    * ``citation_evidence`` - a quote from the page (the first contradiction, else a support);
    * ``citation_checked_at`` - when (ISO 8601, UTC); ``citation_checked_url`` - the URL fetched;
    * ``citation_support`` - ``"supported/checked"`` sentences, e.g. ``"3/4"``;
    * ``citation_unverified`` - True when the page could not be checked now (timeout, 429/5xx,
      access refused, our own egress down) or a failure of our own kept it from being checked.

    Those keys are added to the node's ``excluded_embed_metadata_keys`` and
    ``excluded_llm_metadata_keys`` so they never reach an embedding or a prompt. Nodes whose
    verdict is in ``drop_labels`` (default: unreachable, contradicted) are removed, each logged at
    INFO; the others keep their order. ``unreachable`` drops only dead pages (404, 410, no such
    host): **a node is never dropped because its page could not be checked now** (fail-open); it is
    kept, marked unverified, and when that happens to most of the checked nodes of a query one
    warning says so. ``policy=Policy(...)`` instead of ``drop_labels`` drops the verdicts that
    policy would strip or block (``Policy()``: unreachable; ``Policy.strict()``: unreachable and
    contradicted). **Nodes whose metadata names no URL pass through untouched** (same object, no
    verdict keys): there is no page to re-check.

    The verifier is ``verifier`` when given, else one built on first use from ``guard_settings``
    (a :class:`guardrail.Settings`; default the environment; ``settings=`` is its deprecated name,
    which shadowed ``llama_index.core.Settings``) with ``judge`` and ``embedder`` when given. Each
    call is a span of LlamaIndex's instrumentation, with a :class:`CitationVerdictEvent` per
    checked node and a :class:`CitationReportEvent` with the counts.
    """

    url_key: str | None = Field(
        default=None, description="Metadata key holding the page URL; None: 'url', else a URL-like 'source'."
    )
    drop_labels: list[Label] = Field(
        default=[Label.contradicted, Label.unreachable],
        description="Verdicts that remove a node from the results.",
    )
    min_supported: float = Field(default=0.5, gt=0.0, le=1.0, description="Share of sentences that must be supported.")
    max_sentences: int | None = Field(default=12, ge=1, description="Sentences checked per node (None: all).")

    _verifiers: VerifierSource = PrivateAttr()

    def __init__(
        self,
        verifier: Verifier | None = None,
        policy: Policy | None = None,
        *,
        guard_settings: Settings | None = None,
        settings: Settings | None = None,
        judge: Judge | None = None,
        embedder: Embedder | None = None,
        **data: Any,
    ) -> None:
        if policy is not None:
            if "drop_labels" in data:
                raise ValueError("give drop_labels or policy, not both")
            # A retrieved node has no citation to strip: what a policy strips or blocks, the node loses.
            data["drop_labels"] = [label for label in Label if {Action.strip, Action.block} & policy.actions_for(label)]
        options = {"guard_settings": guard_settings, "settings": settings, "judge": judge, "embedder": embedder}
        verifiers = verifier_source(type(self).__name__, verifier, options)
        super().__init__(**data)
        self._verifiers = verifiers

    @field_validator("drop_labels", mode="before")
    @classmethod
    def _labels(cls, value: Any) -> list[Label]:
        if isinstance(value, (str, Label)):
            value = [value]
        try:
            # A sorted list rather than a set, so that to_json()/from_dict() round-trip.
            return sorted({Label(v) for v in value}, key=lambda label: label.value)
        except ValueError as exc:
            raise ValueError(f"drop_labels: {exc}; choose from {', '.join(label.value for label in Label)}") from None

    @classmethod
    def class_name(cls) -> str:
        return "CitationGuardPostprocessor"

    @property
    def verifier(self) -> Verifier:
        """The verifier in use (built on first use when none was given: from ``guard_settings``,
        default the environment, with ``judge`` and ``embedder`` when given)."""
        return self._verifiers.get()

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return run_sync(lambda: self._check(nodes))

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return await self._check(nodes)

    @dispatcher.span
    async def _check(self, nodes: Sequence[NodeWithScore]) -> list[NodeWithScore]:
        items: list[tuple[str, str]] = []
        position: dict[int, int] = {}  # node index -> item index
        for i, item in enumerate(nodes):
            url = node_url(item.node, self.url_key)
            if url is not None:
                position[i] = len(items)
                items.append((node_text(item.node), url))
        if not items:
            return list(nodes)
        reports = await self.verifier.averify_texts(
            items, memo=PageMemo(), min_supported=self.min_supported, max_sentences=self.max_sentences
        )
        emit_texts([text for text, _ in items], reports)
        checked_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        unchecked = [r for r in reports if r.kind == VerdictKind.could_not_check]
        if unchecked and 2 * len(unchecked) > len(reports):
            reasons = ", ".join(sorted({r.reason or r.label.value for r in unchecked}))
            log.warning(
                "could not check %d of %d retrieved pages now (%s); their nodes are kept, marked %s",
                len(unchecked),
                len(reports),
                reasons,
                UNVERIFIED_KEY,
            )
        out: list[NodeWithScore] = []
        for i, item in enumerate(nodes):
            if i not in position:
                out.append(item)
                continue
            report = reports[position[i]]
            if report.kind != VerdictKind.could_not_check and report.label in self.drop_labels:
                log.info(
                    "dropped node %s: %s (%s) at %s",
                    item.node.node_id,
                    report.label,
                    report.reason or "judged",
                    report.source,
                )
                continue
            out.append(_with_verdict(item, report, checked_at))
        return out


def _with_verdict(item: NodeWithScore, report: TextReport, checked_at: str) -> NodeWithScore:
    """A copy of ``item`` whose node carries the verdict in its metadata (excluded from prompts)."""
    node = item.node.model_copy()
    node.metadata = {
        **item.node.metadata,
        VERDICT_KEY: report.label.value,
        REASON_KEY: report.reason,
        EVIDENCE_KEY: report.evidence_quote,
        CHECKED_AT_KEY: checked_at,
        CHECKED_URL_KEY: report.source,
        SUPPORT_KEY: f"{report.sentences_supported}/{report.sentences_checked}",
        UNVERIFIED_KEY: report.kind == VerdictKind.could_not_check,
    }
    node.excluded_embed_metadata_keys = _plus(item.node.excluded_embed_metadata_keys)
    node.excluded_llm_metadata_keys = _plus(item.node.excluded_llm_metadata_keys)
    return item.model_copy(update={"node": node})


def _plus(keys: list[str]) -> list[str]:
    return list(dict.fromkeys([*keys, *VERDICT_KEYS]))
