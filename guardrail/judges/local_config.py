"""The local judge's settings: every threshold, switch and budget, in one frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LocalJudgeConfig:
    """Every threshold, switch and budget of the local judge, in one place.

    The decision thresholds and the calibration were chosen by ``python bench/tune_judge.py --cache
    artifacts/tune/tune_v4.pkl --floor 0.88`` (results in ``bench/results/tune_judge.json``) on the
    *tune* part of the by-claim split of WiCE, Climate-FEVER, FEVER-Symmetric, AttributionBench and
    claims paired with another claim's page (the eval part is never looked at): support thresholds
    for the mean of WiCE and AttributionBench balanced accuracy with at most 2 % support on another
    claim's page; contradiction thresholds for the highest recall with ``contradicted`` precision
    at least 0.88 on Climate-FEVER and FEVER-Symmetric together (precision first: a false
    contradiction costs more than a miss; the issue's floor of 0.85 plus a margin, as the tune part
    holds only about 20 contradicted verdicts, and a point chosen at 0.85 there came out at 0.57 on
    the eval part). The candidate budget is v2's (``bench/results/tune_shipped.json``).
    """

    support_threshold: float = 0.5
    """Least entailment probability of the best evidence for ``supported`` (it must also beat the
    contradiction probability, and the number, name, negation and antonym checks can still veto it)."""
    support_min_overlap: float = 0.3
    """Share of the claim's content words the supporting evidence must contain: a sentence sharing
    none of them ("It was directed by James Cameron" for "It starred Brad Pitt") supports nothing,
    however the model reads it."""
    contradict_threshold: float = 0.9
    """Least contradiction probability of a sentence for a negation flip to make the claim
    ``contradicted``, and of a sentence or window when no check finds a conflict (the model alone,
    only with ``model_contradicts``)."""
    contradict_min_overlap: float = 0.5
    """Share of the claim's content words a contradicting sentence must contain: NLI models call
    unrelated sentences 'contradiction' far too often."""
    contradict_min_shared: int = 1
    """...and at least this many of them (the overlap share above already filters chance matches)."""
    number_conflict_min_overlap: float = 0.5
    """Share of the claim's other content words a sentence must share before a different value for
    the same unit ("50 degrees" vs "100 degrees"), or another year ("released in 1998" vs "released
    on December 19, 1997"), makes the claim contradicted."""
    year_conflict: bool = True
    """Read another year for the same event as a contradiction (see ``checks.conflicting_year``)."""
    entity_substitution: bool = True
    """Read another name in the place of one of the claim's ("starred Brad Pitt" vs "stars Leonardo
    DiCaprio") as a contradiction (see ``checks.substituted_entity``)..."""
    substitution_min_overlap: float = 0.6
    """...when the rest of the claim shares at least this share of its content words with the sentence."""
    check_confidence: float = 0.85
    """Confidence of a contradiction that a deterministic check (number, year, name) found, when the
    model's own contradiction probability is lower: about the precision of those checks on the
    train and tune parts of FEVER-Symmetric and Climate-FEVER."""
    require_numbers: bool = True
    """A number, unit or year of the claim must appear in the supporting evidence."""
    require_entities: bool = True
    """Every name in the claim must be mentioned in the passage holding the supporting evidence."""
    entity_min_words: int = 80
    """...when that passage has at least this many words: a lone sentence given as evidence often
    names its subject only by a pronoun, so a missing name there says nothing."""
    negation_check: bool = True
    """A supporting sentence whose negation parity differs from the claim's does not support it..."""
    negation_min_overlap: float = 0.6
    """...when it shares at least this share of the claim's content words (the "X is not Y" vs
    "X is Y" flip); a loosely related sentence's "no" or "not" is about something else."""
    use_combined: bool = True
    """Let joined, non-adjacent sentences support a claim (both kinds of combination)."""
    context_override: bool = True
    """A sentence the model reads as contradicting the claim does not count when a window holding
    it supports the claim (the sentence alone names its subject by a pronoun, say)."""
    # -- the candidate budget (what is scored, so what a request costs) --
    max_sentences: int = 8
    """Only this many sentences of a request, those covering the claim's rarer content words best
    (``checks.rank_sentences``), are scored alone."""
    window_seeds: int = 3
    """Windows of consecutive sentences are scored only around this many best-ranked sentences."""
    window_sizes: tuple[int, ...] = (2, 3)
    """Sizes of those windows (2: a sentence and its neighbour, which resolves "It ..." openings)."""
    combine_top: tuple[int, ...] = (2, 3)
    """Also score the top-n ranked sentences joined, for evidence spread over a page."""
    rescore_top: int = 3
    """Second pass, for requests nothing supports yet: the this-many most entailing sentences
    joined (0 or 1: off)."""
    score_passages: bool = False
    """Also score each passage longer than a window as a whole (truncated to ``max_length``
    tokens): the costliest candidate by far, for little gain."""
    early_exit: float = 0.5
    """Candidates are scored in rounds (see :func:`plan_rounds`: the ``first_round`` best-ranked
    sentences first, joined sentences and passages last); a request that a scored candidate
    supports with at least this probability, no check vetoing it, is decided without the later
    rounds (>= 1: everything in one round). The label is provably the one scoring everything would
    give when ``early_exit - support_threshold + contradict_threshold >= 1`` (0.85 and above with
    the default thresholds): no contradiction can then outweigh the support found, and later rounds
    only add candidates; the confidence and quote may come from a less entailing candidate than
    scoring everything would find. Below that bound it is a budget choice: on the tune part,
    ``python bench/tune_judge.py --rounds bench/results/tune_rounds.json`` finds no label differing
    from scoring everything at 0.4 and above (2 of 1,398 differ at 0.3); 0.5 keeps a step of
    margin. Callers that threshold the confidence pass a higher ``JudgeRequest.settle_at``."""
    first_round: int = 1
    """How many best-ranked sentences of each request the first round scores (0: all sentences in
    one round). A claim that restates one sentence of its page, the common case, is settled there."""
    skip_unrelated: bool = True
    """Score only what could decide. Whether a candidate could support or contradict the claim is
    known before the model reads it (the checks are lexical), so only those candidates are scored
    (:func:`~guardrail.judges.decision.could_decide`; parts only against evidence that could back
    them); a request whose passages share none of the claim's content words, or pages that never
    name the claim's subject, is ``not_found`` unscored; a contradiction ends the scoring when
    nothing left could support the claim; a contradicted claim's parts are not scored. The label is
    the one scoring everything gives, but for the sentences the second pass joins (``rescore_top``:
    only sentences that could decide). Off: everything in the budget is scored (the tuner's recording)."""
    min_sentence_words: int = 3
    """Shorter sentences (menu items, headings) are not scored on their own."""
    max_length: int = 256
    """Token limit of one (evidence, claim) pair."""
    batch_tokens: int = 8192
    """Batch size x longest pair cap for one forward pass (pairs are sorted by length first)."""
    dtype: str = "auto"
    """``float32``, ``bfloat16``, or ``auto``: bfloat16 where the CPU multiplies it natively (AMX or
    AVX512-BF16; 3-4x faster there, the same labels on 1,396 of the 1,398 tune-part requests),
    float32 elsewhere (bfloat16 is emulated, so slow, on other CPUs)."""
    threads: int | None = None
    """Threads for scoring: ONNX Runtime's intra-op threads, or ``torch.set_num_threads`` (process-wide)
    on the torch backend; None: one per core."""
    backend: str = "auto"
    """``onnx`` (ONNX Runtime, the graph exported from the shipped weights once per machine: see
    :mod:`guardrail.onnx_backend`), ``torch``, or ``auto``: onnx where ONNX Runtime is installed."""
    # -- precision first (issue 10) --
    model_contradicts: bool = False
    """Whether the model alone may make a claim ``contradicted``: a sentence about the claim's subject,
    sharing most of its words (``contradict_min_overlap``), read as a contradiction with high
    probability (``contradict_threshold``, ``contradict_margin``) while stating no conflicting value,
    year, name, negation or antonym. Off: precision first, ``contradicted`` only where the page
    states something incompatible in the claim's own terms (issue 10); the model's contradiction
    probability on real pages is a weak signal (``shared/JUDGE-NOTES.md``)."""
    contradict_margin: float = 0.5
    """A contradiction the model alone finds must beat the sentence's entailment probability by this much."""
    conflict_min_contradiction: float = 0.3
    """Least contradiction probability of a sentence that states a conflicting value, year, name,
    negation or antonym (see :func:`conflict_kind`): the model must agree with the check."""
    conflict_margin: float = 0.05
    """...and read it as contradicting more than entailing by at least this much."""
    antonym_check: bool = True
    """A sentence matching the claim but for one word turned into its opposite ("increased" vs
    "decreased", "legal" vs "illegal"; :mod:`guardrail.judges.lexicon`) never supports it."""
    check_language: bool = True
    """A claim or passages not in English get ``not_found`` / ``unsupported_language`` unscored."""
    split_parts: bool = True
    """Split the claim into atomic parts (:func:`guardrail.judges.parts.claim_parts`); supported only
    when every part is backed; some backed: ``not_found`` / ``partially_supported``."""
    part_candidates: int = 3
    """Candidates (sentences and windows, those sharing most of the part's words) scored per part."""
    part_threshold: float = 0.02
    """Least entailment probability of a part's best evidence for the part to count as backed."""
    parts_cap_support: bool = True
    """A split claim's support confidence is its weakest part's (or the whole claim's, if lower)."""
    calibration: tuple[tuple[str, float, float], ...] = (
        ("supported", 0.76, 0.16),
        ("contradicted", 0.0, 2.1401),  # 19 on the tune part, too few to rank: their hit rate, 0.895
        ("not_found", 0.1, 0.38),
        ("not_found_nothing_related", 0.0, 1.1823),  # one raw score for all: their hit rate, 0.765
    )
    """Platt scaling per label, ``(label, a, b)``: confidence = sigmoid(a * logit(raw) + b), where raw
    is the support probability (supported), the contradiction probability (contradicted) or one
    minus the best of both (not_found); ``not_found_nothing_related`` is a ``not_found`` where no
    candidate could decide (a constant: its hit rate). Fitted on the tune part by ``bench/tune_judge.py``."""


__all__ = ["LocalJudgeConfig"]
