"""The grounding check, Vertex AI shaped: an answer candidate against given facts.

This is the verifier's road entered lower down: each fact is a :class:`~guardrail.verifier.Fact`
(a passage that was never fetched), each sentence of the answer a claim, and every (claim, fact)
pair goes through the same :meth:`Verifier.averify_many <guardrail.verifier.Verifier.averify_many>`
call (passages, retrieval, judge, quote guard, aggregation) that checks cited URLs. What is
specific to this module is only the shape in and out (Vertex AI's ``check grounding`` JSON field
names, see https://cloud.google.com/generative-ai-app-builder/docs/check-grounding) and how the
judge's verdicts become Vertex's scores:

* **citation**: a fact is cited for a claim when the judge found it ``supported`` (with a quote
  the quote guard found in the fact) with a confidence of at least ``citationThreshold``
  (default 0.6); the judge's confidence for a ``supported`` verdict is its support probability.
  The thresholds only read the verdicts: the judge is asked exactly what :meth:`Verifier.verify`
  asks of it for the same claim and page, so both routes take one decision.
* **anti-citation** (``enableAntiCitations``): a fact the judge found ``contradicted`` with a
  confidence of at least ``antiCitationThreshold`` (default 0.8).
* **claim score** (``enableClaimLevelScore``): the highest support probability over the facts,
  0 when no fact supports the claim (a ``not_found`` or ``contradicted`` verdict carries no
  support probability, so it adds none).
* **supportScore**: the mean claim score over the claims that need grounding, so roughly the
  share of those claims that are supported (1.0 when no claim needs grounding: nothing is
  asserted, so nothing is ungrounded). **contradictionScore**: likewise with the highest
  contradiction probability per claim.

One sentence is one claim (:func:`guardrail.core.extract.extract_claims`); sentences that assert
nothing ("Here is what I found.") are returned with ``groundingCheckRequired: false`` and are not
checked. Claim positions are UTF-8 byte offsets, end exclusive; a claim's span is the sentence
without the whitespace around it.

A fact longer than the judge's passage size (200 words) is split into passages; the claim is
checked against its most relevant passages (``GUARDRAIL_TOP_K``), and ``citedChunks`` holds the
passage that holds the evidence (the whole fact when it is one passage), with ``source`` set to
the fact's index. ``citationIndices`` index ``citedChunks``, as in Vertex's API. With more than
``max_facts_per_claim`` facts, each claim is judged against the facts whose passages the
embedder ranks closest to it (one embedding batch for the whole request); the others are not
cited for it.

Limits are Vertex's (:data:`MAX_ANSWER_TOKENS`, :data:`MAX_FACTS`, :data:`MAX_FACT_CHARS`,
thresholds in [0, 1]); a request over one raises :class:`GroundingLimitError` naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from guardrail._bridges import run_sync
from guardrail.core.extract import extract_claims
from guardrail.core.passages import split_passages
from guardrail.core.quote_guard import normalize_for_match
from guardrail.core.schema import AnswerClaim, ClaimReport, Label, Number, UrlVerdict, is_our_failure
from guardrail.extras import install_command
from guardrail.limits import check_count, check_text, check_texts
from guardrail.retrieval import best_indices, similarities
from guardrail.runtime import build_verifier
from guardrail.settings import ConfigurationError
from guardrail.verifier import ClaimTask, Fact, Verifier

__all__ = [
    "DEFAULT_ANTI_CITATION_THRESHOLD",
    "DEFAULT_CITATION_THRESHOLD",
    "MAX_ANSWER_TOKENS",
    "MAX_FACTS",
    "MAX_FACT_CHARS",
    "CheckGroundingRequest",
    "CheckGroundingResponse",
    "FactChunk",
    "GroundingClaim",
    "GroundingFact",
    "GroundingJudgeError",
    "GroundingLimitError",
    "GroundingSpec",
    "acheck_grounding",
    "acheck_grounding_request",
    "check_grounding",
    "count_tokens",
    "validate_request",
]

DEFAULT_CITATION_THRESHOLD = 0.6
DEFAULT_ANTI_CITATION_THRESHOLD = 0.8
MAX_ANSWER_TOKENS = 4096
"""Vertex's limit on the answer candidate, in tokens as :func:`count_tokens` counts them."""
MAX_FACTS = 200
MAX_FACT_CHARS = 10_000
DEFAULT_MAX_FACTS_PER_CLAIM = 16
"""With more facts than this, each claim is judged only against the facts ranked closest to it."""


class _VertexModel(BaseModel):
    """camelCase on the wire (Vertex's JSON names), snake_case in Python; both accepted."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class GroundingFact(_VertexModel):
    """One fact: a piece of reference text, and optional attributes (author, title, url...)."""

    fact_text: str = Field(description="The reference text.")
    attributes: dict[str, str] = Field(default_factory=dict, description="Metadata echoed back as sourceMetadata.")


class GroundingSpec(_VertexModel):
    """How to check: Vertex's ``groundingSpec``."""

    citation_threshold: Number = Field(
        default=DEFAULT_CITATION_THRESHOLD,
        description="Least support probability (0-1) for a fact to be cited for a claim.",
    )
    enable_claim_level_score: bool = Field(default=False, description="Return a score for each claim.")
    enable_anti_citations: bool = Field(
        default=False, description="Return contradicting facts per claim and a contradictionScore."
    )
    anti_citation_threshold: Number = Field(
        default=DEFAULT_ANTI_CITATION_THRESHOLD,
        description="Least contradiction probability (0-1) for a fact to be anti-cited.",
    )


class CheckGroundingRequest(_VertexModel):
    """The body of ``POST /v1/check-grounding`` (Vertex's ``CheckGroundingRequest``)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        json_schema_extra={
            "examples": [
                {
                    "answerCandidate": "Titanic was directed by James Cameron. It was released in 1997.",
                    "facts": [
                        {
                            "factText": "Titanic is a 1997 American epic romantic disaster movie. It was "
                            "directed, written, and co-produced by James Cameron.",
                            "attributes": {"author": "Simple Wikipedia"},
                        }
                    ],
                    "groundingSpec": {"citationThreshold": 0.6},
                }
            ]
        },
    )

    answer_candidate: str = Field(description="The text to check (at most 4096 tokens).")
    facts: list[GroundingFact] = Field(description="The reference texts (at most 200, 10,000 characters each).")
    grounding_spec: GroundingSpec = Field(default_factory=GroundingSpec)


class FactChunk(_VertexModel):
    """A cited piece of a fact: the fact itself, or the passage of a long fact holding the evidence."""

    chunk_text: str
    source: str = Field(description="The index of the fact in the request, as a string.")
    source_metadata: dict[str, str] | None = Field(default=None, description="The fact's attributes.")


class GroundingClaim(_VertexModel):
    """One claim (sentence) of the answer candidate with its citations."""

    start_pos: int = Field(description="UTF-8 byte offset of the claim in the answer candidate.")
    end_pos: int = Field(description="UTF-8 byte offset just past the claim.")
    claim_text: str
    citation_indices: list[int] = Field(
        default_factory=list, description="Indices into citedChunks of the facts supporting the claim."
    )
    anti_citation_indices: list[int] | None = Field(
        default=None, description="Indices into citedChunks of the facts contradicting it (anti-citations on)."
    )
    grounding_check_required: bool = True
    score: float | None = Field(default=None, description="The claim's support score (claim-level score on).")


class CheckGroundingResponse(_VertexModel):
    """Vertex's ``CheckGroundingResponse``; serialise with ``by_alias=True, exclude_none=True``."""

    support_score: float
    cited_chunks: list[FactChunk] = Field(default_factory=list)
    claims: list[GroundingClaim] = Field(default_factory=list)
    contradiction_score: float | None = Field(
        default=None, description="Mean contradiction score of the claims (anti-citations on)."
    )

    def to_vertex(self) -> dict[str, Any]:
        """The JSON object Vertex would return (camelCase names, unset fields left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class GroundingJudgeError(RuntimeError):
    """The judge failed on some (claim, fact) pairs (after its retries): a score computed without
    those verdicts would understate the support, so none is returned."""


class GroundingLimitError(ValueError):
    """The request is over one of Vertex's limits; ``limit`` names it, the message says by how much."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


_WORD_END = re.compile(r"[.!?]+$")


def count_tokens(text: str) -> int:
    """Tokens as Vertex's check-grounding limit defines them: a word, or the punctuation ending a
    sentence. "They wore off-the-rack clothes in 2024." is 7 tokens (6 words and a period).

    Words are whitespace-separated; a word ending in ``.``, ``!`` or ``?`` counts one more ("2024."
    is two tokens, "U.S." too); punctuation standing alone counts one.
    """
    return sum(2 if _WORD_END.search(w) and not _WORD_END.fullmatch(w) else 1 for w in text.split())


def _check_threshold(name: str, value: float) -> None:
    if not (0.0 <= value <= 1.0):  # also refuses NaN
        # Named, never echoed: an error body does not repeat what the client sent.
        raise GroundingLimitError(name, f"groundingSpec.{name} must be a number in [0, 1]")


def validate_request(request: CheckGroundingRequest) -> None:
    """Raise :class:`GroundingLimitError` naming the first limit the request is over, or
    ``ValueError`` naming a field whose text is not valid Unicode (a lone surrogate)."""
    check_text("answerCandidate", request.answer_candidate)
    for i, fact in enumerate(request.facts):
        check_text(f"facts[{i}].factText", fact.fact_text)
        check_texts(f"facts[{i}].attributes", fact.attributes)
    if not request.answer_candidate.strip():
        raise GroundingLimitError("answerCandidate", "answerCandidate must not be empty")
    tokens = count_tokens(request.answer_candidate)
    if tokens > MAX_ANSWER_TOKENS:
        raise GroundingLimitError(
            "answerCandidate",
            f"answerCandidate has {tokens} tokens; the limit is {MAX_ANSWER_TOKENS} "
            "(a token is a word or a sentence-ending punctuation mark)",
        )
    if not request.facts:
        raise GroundingLimitError("facts", "facts must hold at least one fact")
    if len(request.facts) > MAX_FACTS:
        raise GroundingLimitError("facts", f"{len(request.facts)} facts given; the limit is {MAX_FACTS}")
    for i, fact in enumerate(request.facts):
        if len(fact.fact_text) > MAX_FACT_CHARS:
            raise GroundingLimitError(
                "factText",
                f"facts[{i}].factText has {len(fact.fact_text)} characters; the limit is {MAX_FACT_CHARS}",
            )
        if not fact.fact_text.strip():
            raise GroundingLimitError("factText", f"facts[{i}].factText must not be empty")
    spec = request.grounding_spec
    _check_threshold("citationThreshold", spec.citation_threshold)
    _check_threshold("antiCitationThreshold", spec.anti_citation_threshold)


def _fact_source(index: int) -> str:
    return f"fact:{index}"


async def _shortlist(
    verifier: Verifier, claims: Sequence[str], facts: Sequence[GroundingFact], limit: int
) -> list[list[int]]:
    """For each claim, the indices (in order) of the ``limit`` facts whose best passage the
    embedder ranks closest to it; every fact when there are no more than ``limit``."""
    if len(facts) <= limit:
        return [list(range(len(facts))) for _ in claims]
    passages = await verifier.run_cpu(_split_facts, facts)
    scores = await similarities(verifier.embedder, claims, passages)
    out: list[list[int]] = []
    for n in range(len(claims)):
        best = [float(m[n].max()) if m.shape[1] else float("-inf") for m in scores]
        out.append(sorted(best_indices(best, limit)))
    return out


def _split_facts(facts: Sequence[GroundingFact]) -> list[list[str]]:
    return [split_passages(f.fact_text) for f in facts]


def _chunk_of(fact_text: str, quote: str | None) -> tuple[int, str]:
    """(position, text) of the passage of a fact that holds ``quote``: the whole fact when it is
    a single passage (so short facts come back exactly as given)."""
    passages = split_passages(fact_text)
    if len(passages) <= 1 or not quote:
        return 0, fact_text
    needle = normalize_for_match(quote)
    for n, passage in enumerate(passages):
        if needle and needle in normalize_for_match(passage):
            return n, passage
    return 0, fact_text


def _support(verdict: UrlVerdict) -> float:
    return verdict.confidence if verdict.label == Label.supported else 0.0


def _contradiction(verdict: UrlVerdict) -> float:
    return verdict.confidence if verdict.label == Label.contradicted else 0.0


async def acheck_grounding_request(
    request: CheckGroundingRequest,
    verifier: Verifier,
    *,
    max_facts_per_claim: int = DEFAULT_MAX_FACTS_PER_CLAIM,
) -> CheckGroundingResponse:
    """Check ``request`` with ``verifier`` (see the module docstring for the scores).

    Raises :class:`GroundingLimitError` for a request over Vertex's limits,
    :class:`~guardrail.limits.RequestLimitError` over the verifier's work limits (more claims than
    ``GUARDRAIL_MAX_CLAIMS``), ``ValueError`` naming a field that is not valid Unicode,
    :class:`~guardrail.settings.ConfigurationError` when the verifier has no judge (a check
    without one could only say "unsupported" for every claim), and :class:`GroundingJudgeError`
    when the judge failed on some pair.
    """
    validate_request(request)
    if max_facts_per_claim < 1:
        raise ValueError("max_facts_per_claim must be at least 1")
    if verifier.judge is None:
        raise ConfigurationError(
            f"no judge is available for the grounding check: {install_command('local')} (the embedded judge) or set "
            "GUARDRAIL_JUDGE"
        )
    extracted = await verifier.run_cpu(extract_claims, request.answer_candidate)
    checked = [i for i, c in enumerate(extracted.claims) if c.grounding_check_required]
    check_count(verifier.settings, "max_claims", "claims", len(checked))
    claim_texts = [extracted.claims[i].plain_text or extracted.claims[i].text for i in checked]
    shortlist = await _shortlist(verifier, claim_texts, request.facts, max_facts_per_claim)
    fact_objs = [
        Fact(text=f.fact_text, source=_fact_source(i), title=f.attributes.get("title") or None)
        for i, f in enumerate(request.facts)
    ]
    tasks = [
        ClaimTask(claim=text, evidence=[fact_objs[i] for i in chosen])
        for text, chosen in zip(claim_texts, shortlist, strict=True)
    ]
    reports = await verifier.averify_many(tasks) if tasks else []
    failed = sum(1 for r in reports for v in r.citations if is_our_failure(v.reason))
    if failed:
        total = sum(len(r.citations) for r in reports)
        raise GroundingJudgeError(
            f"{failed} of {total} (claim, fact) pairs could not be checked (the judge failed, or "
            "GUARDRAIL_DEADLINE passed); try again"
        )
    scored = {
        claim_index: _score_claim(request, chosen, report)
        for claim_index, chosen, report in zip(checked, shortlist, reports, strict=True)
    }
    return _response(request, extracted.claims, scored)


@dataclass
class _ClaimScore:
    """One checked claim: the fact chunks it cites and anti-cites (fact index, passage position)
    with their texts, and its best support and contradiction."""

    cites: list[tuple[int, int]]
    anti: list[tuple[int, int]]
    chunks: dict[tuple[int, int], str]
    support: float
    contradiction: float


def _score_claim(request: CheckGroundingRequest, chosen: Sequence[int], report: ClaimReport) -> _ClaimScore:
    spec = request.grounding_spec
    score = _ClaimScore(cites=[], anti=[], chunks={}, support=0.0, contradiction=0.0)
    # The verifier answers one verdict per unique evidence, in order: facts are unique by index.
    for fact_index, verdict in zip(chosen, report.citations, strict=True):
        support, contra = _support(verdict), _contradiction(verdict)
        score.support, score.contradiction = max(score.support, support), max(score.contradiction, contra)
        cited = verdict.label == Label.supported and support >= spec.citation_threshold
        contradicted = verdict.label == Label.contradicted and contra >= spec.anti_citation_threshold
        anti_cited = spec.enable_anti_citations and contradicted
        if cited or anti_cited:
            pos, text = _chunk_of(request.facts[fact_index].fact_text, verdict.evidence_quote)
            score.chunks[(fact_index, pos)] = text
            (score.cites if cited else score.anti).append((fact_index, pos))
    return score


def _response(
    request: CheckGroundingRequest, claims: Sequence[AnswerClaim], scored: Mapping[int, _ClaimScore]
) -> CheckGroundingResponse:
    """The Vertex-shaped answer: every chunk cited or anti-cited once, in (fact, position) order,
    and every claim with its indices into them; the scores averaged over the checked claims."""
    spec = request.grounding_spec
    chunks = {key: text for score in scored.values() for key, text in score.chunks.items()}
    order = sorted(chunks)
    index_of = {key: i for i, key in enumerate(order)}
    cited_chunks = [
        FactChunk(
            chunk_text=chunks[key], source=str(key[0]), source_metadata=dict(request.facts[key[0]].attributes) or None
        )
        for key in order
    ]
    out: list[GroundingClaim] = []
    for i, claim in enumerate(claims):
        score = scored.get(i)
        out.append(
            GroundingClaim(
                start_pos=claim.start,
                end_pos=claim.end,
                claim_text=claim.text,
                grounding_check_required=score is not None,
                citation_indices=[index_of[k] for k in score.cites] if score else [],
                anti_citation_indices=[index_of[k] for k in score.anti]
                if score and spec.enable_anti_citations
                else None,
                score=round(score.support, 6) if score and spec.enable_claim_level_score else None,
            )
        )
    support = [s.support for s in scored.values()]
    contradiction = [s.contradiction for s in scored.values()]
    return CheckGroundingResponse(
        support_score=round(sum(support) / len(support), 6) if support else 1.0,
        cited_chunks=cited_chunks,
        claims=out,
        contradiction_score=round(sum(contradiction) / len(contradiction) if contradiction else 0.0, 6)
        if spec.enable_anti_citations
        else None,
    )


FactLike = str | GroundingFact | Mapping[str, Any]
"""A fact for :func:`check_grounding`: its text, a :class:`GroundingFact`, or a ``{"factText",
"attributes"}`` dict (snake_case keys accepted too)."""


def _request(
    answer_candidate: str, facts: Sequence[FactLike], spec: GroundingSpec | Mapping[str, Any] | None
) -> CheckGroundingRequest:
    if isinstance(facts, (str, bytes)):
        raise TypeError("facts must be a list of facts, not a single string")
    items: list[GroundingFact] = []
    for i, fact in enumerate(facts):
        if isinstance(fact, GroundingFact):
            items.append(fact)
        elif isinstance(fact, str):
            items.append(GroundingFact(fact_text=fact))
        elif isinstance(fact, Mapping):
            items.append(GroundingFact.model_validate(fact))
        else:
            raise TypeError(f"facts[{i}] must be a string, a GroundingFact or a dict, not {type(fact).__name__}")
    if spec is None:
        grounding_spec = GroundingSpec()
    elif isinstance(spec, GroundingSpec):
        grounding_spec = spec
    else:
        grounding_spec = GroundingSpec.model_validate(spec)
    return CheckGroundingRequest(answer_candidate=answer_candidate, facts=items, grounding_spec=grounding_spec)


async def acheck_grounding(
    answer_candidate: str,
    facts: Sequence[FactLike],
    spec: GroundingSpec | Mapping[str, Any] | None = None,
    *,
    verifier: Verifier | None = None,
    max_facts_per_claim: int = DEFAULT_MAX_FACTS_PER_CLAIM,
) -> CheckGroundingResponse:
    """How well ``facts`` ground ``answer_candidate``, as Vertex AI's check-grounding method answers.

    ``spec`` is a :class:`GroundingSpec` or its dict (``{"citationThreshold": 0.6, ...}``).
    ``verifier`` defaults to one from :func:`guardrail.runtime.build_verifier` (the settings'
    judge and embedder, and their stores), closed after the call. Raises
    :class:`GroundingLimitError` over a limit, ``ConfigurationError`` without a judge.
    """
    request = _request(answer_candidate, facts, spec)
    if verifier is not None:
        return await acheck_grounding_request(request, verifier, max_facts_per_claim=max_facts_per_claim)
    with build_verifier() as built:
        return await acheck_grounding_request(request, built, max_facts_per_claim=max_facts_per_claim)


def check_grounding(
    answer_candidate: str,
    facts: Sequence[FactLike],
    spec: GroundingSpec | Mapping[str, Any] | None = None,
    *,
    verifier: Verifier | None = None,
    max_facts_per_claim: int = DEFAULT_MAX_FACTS_PER_CLAIM,
) -> CheckGroundingResponse:
    """Synchronous :func:`acheck_grounding` (safe to call from inside a running event loop)."""
    return run_sync(
        lambda: acheck_grounding(
            answer_candidate, facts, spec, verifier=verifier, max_facts_per_claim=max_facts_per_claim
        )
    )
