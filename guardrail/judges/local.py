"""The embedded offline judge: our NLI cross-encoder plus deterministic checks, no key, no hub.

For each request the claim is scored against the sentences of the passages shown, windows of
2-3 consecutive sentences, the few most claim-like sentences joined (evidence that is spread
over a page) and optionally each passage as a whole, within a budget, in rounds (the sentence
most like the claim first, so a claim that restates its page is decided after one pair; see
``LocalJudgeConfig.early_exit``), each round one length-sorted batch over all requests of the
``judge()`` call. The label comes from those probabilities and from checks that small NLI models
miss (``guardrail.judges.checks``): a number, unit or year of the claim that the evidence lacks, or
states differently; a negation flip; a name the evidence never mentions. The quote is always an
exact substring of a passage (a sentence, or a window of consecutive sentences), so the quote
guard holds by construction.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from guardrail.core.schema import JudgeRequest, JudgeVerdict, Reason
from guardrail.judges import checks
from guardrail.judges.lexicon import is_english
from guardrail.judges.parts import claim_parts, subject_of
from guardrail.onnx_backend import available as onnx_available
from guardrail.onnx_backend import run as onnx_run
from guardrail.onnx_backend import session_for
from guardrail.settings import Settings

log = logging.getLogger("guardrail.judges.local")

MODEL_DIR = Path(__file__).resolve().parent / "model"
"""Where the shipped weights live inside the package."""
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


@dataclass(frozen=True)
class LocalJudgeConfig:
    """Every threshold, switch and budget of the local judge, in one place.

    The decision thresholds and the calibration were chosen by ``python bench/tune_judge.py --cache
    artifacts/tune/tune_v3.pkl --floor 0.85`` (results in ``bench/results/tune_judge.json``) on the
    *tune* part of the by-claim split of WiCE, Climate-FEVER, FEVER-Symmetric, AttributionBench and
    claims paired with another claim's page (the eval part is never looked at): support thresholds
    for the mean of WiCE and AttributionBench balanced accuracy with at most 2 % support on another
    claim's page; contradiction thresholds for the highest recall with ``contradicted`` precision
    at least 0.85 on Climate-FEVER and FEVER-Symmetric together (precision first: a false
    contradiction costs more than a miss). The candidate budget is v2's (``bench/results/tune_shipped.json``).
    """

    support_threshold: float = 0.5
    """Least entailment probability of the best evidence for ``supported`` (it must also beat the
    contradiction probability, and the number, name, negation and antonym checks can still veto it)."""
    support_min_overlap: float = 0.3
    """Share of the claim's content words the supporting evidence must contain: a sentence sharing
    none of them ("It was directed by James Cameron" for "It starred Brad Pitt") supports nothing,
    however the model reads it."""
    contradict_threshold: float = 0.9
    """Least contradiction probability of a sentence or window for ``contradicted`` when no check finds
    a conflicting value, name, negation or antonym (the model alone)."""
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
    """Score only what could decide: a request whose passages share none of the claim's content
    words is ``not_found`` without scoring anything, and of the others only the candidates that
    could pass ``support_min_overlap`` or the contradiction and conflict checks' overlap minimums
    are scored (:func:`could_decide`; parts likewise against their own words). The verdict is the
    one scoring everything gives, but for the sentences the second pass joins (``rescore_top``:
    now only sentences that could decide) and a ``not_found`` confidence read from fewer scores."""
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
        ("supported", 0.7331, 0.2295),
        ("contradicted", 0.0, 1.7047),  # few on the tune part, not ranked by probability: their hit rate, 0.846
        ("not_found", 0.3279, 0.68),
    )
    """Platt scaling per label, ``(label, a, b)``: confidence = sigmoid(a * logit(raw) + b), where raw
    is the support probability (supported), the contradiction probability (contradicted) or one
    minus the best of both (not_found); fitted on the tune part by ``bench/tune_judge.py``."""


ENT, NEU, CON = 0, 1, 2
"""Columns of the probability rows: entailment, neutral, contradiction."""


@dataclass
class Candidate:
    """One piece of evidence scored against the claim."""

    kind: str  # sentence | window | combined | passage
    text: str
    passage: int
    sentences: list[tuple[int, int]]  # spans (within the passage) of the sentences it holds
    quote: str | None  # the exact substring to quote (None: pick its best sentence)
    parts: list[tuple[int, tuple[int, int]]] = field(default_factory=list)  # combined: (passage, span)
    probs: np.ndarray = field(default_factory=lambda: np.zeros(3, dtype=np.float32))
    rank: int = 0  # sentence: its place in the claim-likeness ranking (0 best); window: its best seed's


@dataclass
class Scored:
    """A request with every candidate scored: the input of :func:`decide`."""

    claim: str
    passages: list[str]
    candidates: list[Candidate]
    parts: list[tuple[str, list[Candidate]]] = field(default_factory=list)  # each part and its scored candidates
    reason: str | None = None  # decided without scoring (unsupported_language)


# -- model -------------------------------------------------------------------

_LOCK = threading.Lock()
_MODELS: dict[tuple[str, bool, str], tuple[Any, Any, dict[str, int]]] = {}


def native_bfloat16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AMX tiles or AVX512-BF16)."""
    import torch.cpu

    for probe in ("_is_amx_tile_supported", "_is_avx512_bf16_supported"):
        fn = getattr(torch.cpu, probe, None)
        if fn is not None:
            try:
                if fn():
                    return True
            except Exception:  # a probe missing on this build says nothing
                continue
    return False


def resolve_dtype(name: str) -> str:
    """``float32`` or ``bfloat16`` for a configured ``dtype`` (``auto`` asks the CPU)."""
    if name == "auto":
        return "bfloat16" if native_bfloat16() else "float32"
    if name not in ("float32", "bfloat16"):
        raise ValueError(f"LocalJudgeConfig.dtype must be auto, float32 or bfloat16, not {name!r}")
    return name


def _labels_index(path: Path) -> dict[str, int]:
    """The output column of each label, from the model's config (no weights loaded)."""
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    index = {str(v).lower(): int(k) for k, v in config.get("id2label", {}).items()}
    if not {"entailment", "neutral", "contradiction"} <= set(index):
        raise RuntimeError(f"model at {path} lacks entailment/neutral/contradiction labels: {index}")
    return index


def _tokenizer(path: Path) -> Any:
    """The model's tokenizer, loaded once per process, never touching the network."""
    with _LOCK:
        key = (str(path), "tokenizer")
        if key not in _TOKENIZERS:
            from transformers import AutoTokenizer

            _TOKENIZERS[key] = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        return _TOKENIZERS[key]


_TOKENIZERS: dict[tuple[str, str], Any] = {}


def _load(path: Path, quantize: bool, dtype: str = "float32") -> tuple[Any, Any, dict[str, int]]:
    """Load (once per process) tokenizer and model from ``path``, never touching the network."""
    key = (str(path), quantize, dtype)
    with _LOCK:
        hit = _MODELS.get(key)
        if hit is not None:
            return hit
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(
            str(path), local_files_only=True, dtype=torch.float32
        )
        model.eval()
        if quantize:
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        elif dtype == "bfloat16":
            model = model.to(torch.bfloat16)
        id2label = {int(k): str(v).lower() for k, v in model.config.id2label.items()}
        index = {name: i for i, name in id2label.items()}
        if not {"entailment", "neutral", "contradiction"} <= set(index):
            raise RuntimeError(f"model at {path} lacks entailment/neutral/contradiction labels: {id2label}")
        _MODELS[key] = (tokenizer, model, index)
        return _MODELS[key]


class LocalJudge:
    """The embedded NLI judge: offline, no key; loads its weights lazily, once per process."""

    name = "local"
    cpu_bound = True  # judging runs on this machine's cores

    def __init__(
        self,
        model_path: str | Path | None = None,
        config: LocalJudgeConfig | None = None,
        *,
        quantize: bool = False,
    ) -> None:
        self.path = Path(model_path) if model_path is not None else MODEL_DIR
        self.config = config or LocalJudgeConfig()
        self.quantize = quantize
        self.model = _model_name(self.path) + ("-int8" if quantize else "")
        self._dtype: str | None = None

    @property
    def dtype(self) -> str:
        """The dtype the model computes in (``float32`` or ``bfloat16``; see ``LocalJudgeConfig.dtype``)."""
        if self._dtype is None:
            self._dtype = "float32" if self.quantize else resolve_dtype(self.config.dtype)
        return self._dtype

    @staticmethod
    def available(model_path: str | Path | None = None) -> bool:
        """True when the weights (config and a weights file) are installed."""
        path = Path(model_path) if model_path is not None else MODEL_DIR
        return (path / "config.json").is_file() and any((path / f).is_file() for f in _WEIGHT_FILES)

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalJudge:
        """The shipped model, or the model folder named by ``GUARDRAIL_JUDGE_MODEL`` when it is one."""
        path = None
        if settings.judge_model and Path(settings.judge_model).is_dir():
            path = Path(settings.judge_model)
        return cls(model_path=path)

    @property
    def backend(self) -> str:
        """``onnx`` or ``torch``: what scores the pairs (see ``LocalJudgeConfig.backend``)."""
        if self.config.backend == "auto":
            return "onnx" if onnx_available() else "torch"
        if self.config.backend not in ("onnx", "torch"):
            raise ValueError(f"LocalJudgeConfig.backend must be auto, onnx or torch, not {self.config.backend!r}")
        return self.config.backend

    def load(self) -> None:
        """Load the weights now (otherwise the first ``judge`` call does)."""
        if self.backend == "onnx":
            _tokenizer(self.path)
            session_for(self.path, "classifier", "int8" if self.quantize else "float32", self.config.threads)
        else:
            _load(self.path, self.quantize, self.dtype)

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """Judge every request in one batched scoring pass, off the event loop."""
        if not requests:
            return []
        return await asyncio.to_thread(self.judge_sync, requests)

    def judge_sync(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """Blocking :meth:`judge`. A model failure raises (the verifier turns it into
        ``judge_error`` for the call); a failure deciding one request is that request's ``judge_error``."""
        verdicts: list[JudgeVerdict] = []
        for scored in self.score(requests):
            try:
                verdicts.append(decide(scored, self.config))
            except Exception:
                log.exception("internal error: the local judge could not decide a request")
                verdicts.append(JudgeVerdict(label="not_found", confidence=0.0, reason=Reason.internal_error.value))
        return verdicts

    def score(self, requests: Sequence[JudgeRequest]) -> list[Scored]:
        """Build every request's candidates and score them, all requests together, round by
        round (see ``LocalJudgeConfig.early_exit``): each round is one batched pass over the
        requests still unsettled; then, for requests nothing supports yet, the most entailing
        sentences joined. Candidates end in the order :func:`build_candidates` gave them."""
        config = self.config
        reasons = [_refusal(r, config) for r in requests]
        plans = [
            [] if reasons[i] or _unrelated(r, config) else build_candidates(r, config) for i, r in enumerate(requests)
        ]
        scored = [
            Scored(claim=r.claim, passages=list(r.passages), candidates=[], reason=reasons[i])
            for i, r in enumerate(requests)
        ]
        # Only candidates whose score could change the verdict are scored; parts draw on the whole plan.
        rounds = [
            plan_rounds([c for c in plan if could_decide(r.claim, c, config)], config)
            for r, plan in zip(requests, plans, strict=True)
        ]
        exits = [max(config.early_exit, r.settle_at or 0.0) for r in requests]
        done: list[set[int]] = [set() for _ in requests]  # ids of the candidates scored
        active = [i for i in range(len(requests)) if rounds[i]]
        step = 0
        while active:
            batch = [(i, cand) for i in active for cand in rounds[i][step]]
            self._predict_into([(scored[i].claim, cand) for i, cand in batch])
            for i, cand in batch:
                done[i].add(id(cand))
            for i in active:
                scored[i].candidates = [c for c in plans[i] if id(c) in done[i]]
            step += 1
            active = [i for i in active if step < len(rounds[i]) and not _settled(scored[i], config, exits[i])]
        if config.rescore_top > 1:
            # The sentences the model found most entailing, joined in page order, so evidence
            # spread over a page (gold sets are often several sentences apart) is read together;
            # only where nothing supports the claim yet.
            extra = [
                (s, c)
                for s in scored
                if decide(s, config).label != "supported" and (c := entailing_combination(s, config)) is not None
            ]
            self._predict_into([(s.claim, c) for s, c in extra])
            for s, c in extra:
                s.candidates.append(c)
        self._score_parts(scored, plans)
        return scored

    def _score_parts(self, scored: list[Scored], plans: list[list[Candidate]]) -> None:
        """Score each part of every split claim against its own few candidates, all in one batch."""
        if not self.config.split_parts:
            return
        flat: list[tuple[str, Candidate]] = []
        for s, plan in zip(scored, plans, strict=True):
            parts = claim_parts(s.claim) if plan else []
            if len(parts) < 2:
                continue
            for part in parts:
                floor = self.config.support_min_overlap if self.config.skip_unrelated else 0.0
                cands = part_candidates(part, plan, self.config.part_candidates, floor)
                s.parts.append((part, cands))
                flat.extend((part, c) for c in cands)
        self._predict_into(flat)

    def _predict_into(self, flat: list[tuple[str, Candidate]]) -> None:
        if not flat:
            return
        unique = list(dict.fromkeys((c.text, claim) for claim, c in flat))
        probs = self.predict([text for text, _ in unique], [claim for _, claim in unique])
        by_pair = dict(zip(unique, probs, strict=True))
        for claim, cand in flat:
            cand.probs = by_pair[(cand.text, claim)]

    def predict(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """Probabilities ``[entailment, neutral, contradiction]`` per (premise, hypothesis) pair,
        in length-sorted batches (padding is most of the cost of a mixed batch on a CPU)."""
        if self.backend == "onnx":
            return self._predict_onnx(premises, hypotheses)
        return self._predict_torch(premises, hypotheses)

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices grouped into length-sorted batches of at most ``batch_tokens`` padded tokens."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        batches: list[list[int]] = []
        start = 0
        while start < len(order):
            stop = start + 1
            while stop < len(order) and lengths[order[stop]] * (stop - start + 1) <= self.config.batch_tokens:
                stop += 1
            batches.append(order[start:stop])
            start = stop
        return batches

    def _encode(self, premises: Sequence[str], hypotheses: Sequence[str]) -> tuple[list[list[int]], list[list[int]]]:
        enc = _tokenizer(self.path)(
            list(premises), list(hypotheses), truncation="longest_first", max_length=self.config.max_length
        )
        return enc["input_ids"], enc["token_type_ids"]

    def _padded(
        self, ids: list[list[int]], types: list[list[int]]
    ) -> Iterator[tuple[list[int], dict[str, np.ndarray]]]:
        """Each length-sorted batch: its indices and its padded ``input_ids``, ``token_type_ids``
        and ``attention_mask``."""
        for batch in self._batches([len(i) for i in ids]):
            width = len(ids[batch[-1]])
            feeds = {name: np.zeros((len(batch), width), dtype=np.int64) for name in _FEEDS}
            for row, i in enumerate(batch):
                n = len(ids[i])
                feeds["input_ids"][row, :n] = ids[i]
                feeds["token_type_ids"][row, :n] = types[i]
                feeds["attention_mask"][row, :n] = 1
            yield batch, feeds

    def _predict_onnx(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        session = session_for(self.path, "classifier", "int8" if self.quantize else "float32", self.config.threads)
        index = _labels_index(self.path)
        cols = [index["entailment"], index["neutral"], index["contradiction"]]
        ids, types = self._encode(premises, hypotheses)
        out = np.zeros((len(ids), 3), dtype=np.float32)
        for batch, feeds in self._padded(ids, types):
            logits = onnx_run(session, feeds).astype(np.float32)
            exp = np.exp(logits - logits.max(axis=1, keepdims=True))
            out[batch] = (exp / exp.sum(axis=1, keepdims=True))[:, cols]
        return out

    def _predict_torch(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        import torch

        _, model, index = _load(self.path, self.quantize, self.dtype)
        if self.config.threads is not None and torch.get_num_threads() != self.config.threads:
            torch.set_num_threads(self.config.threads)
        cols = [index["entailment"], index["neutral"], index["contradiction"]]
        ids, types = self._encode(premises, hypotheses)
        out = np.zeros((len(ids), 3), dtype=np.float32)
        with torch.inference_mode():
            for batch, feeds in self._padded(ids, types):
                logits = model(**{name: torch.from_numpy(value) for name, value in feeds.items()}).logits
                out[batch] = torch.softmax(logits.float(), dim=-1)[:, cols].numpy()
        return out


_FEEDS = ("input_ids", "token_type_ids", "attention_mask")


def plan_rounds(plan: Sequence[Candidate], config: LocalJudgeConfig) -> list[list[Candidate]]:
    """A request's candidates grouped into scoring rounds, cheapest and likeliest to settle the
    request first (empty rounds left out): the ``first_round`` best-ranked sentences; the windows
    around those (a sentence that names its subject by a pronoun reads as support with its
    neighbour); the other sentences; then everything else. One round when ``early_exit`` is off."""
    if config.early_exit >= 1.0:
        return [list(plan)] if plan else []
    first_n = config.first_round if config.first_round > 0 else config.max_sentences
    rounds: list[list[Candidate]] = [[], [], [], []]
    for cand in plan:
        if cand.kind == "sentence":
            rounds[0 if cand.rank < first_n else 2].append(cand)
        elif cand.kind == "window" and cand.rank < first_n:
            rounds[1].append(cand)
        else:
            rounds[3].append(cand)
    return [r for r in rounds if r]


def part_candidates(part: str, plan: Sequence[Candidate], n: int, min_overlap: float = 0.0) -> list[Candidate]:
    """Copies of the ``n`` sentences and windows of a request sharing most of ``part``'s words (best
    ranked first on ties), to be scored against the part; those sharing less than ``min_overlap``
    of them are left out (they could not back the part whatever the model says)."""
    pool = [c for c in plan if c.kind in ("sentence", "window")]
    pool.sort(key=lambda c: (-checks.overlap(part, c.text), c.kind != "sentence", c.rank))
    return [
        dataclasses.replace(c, probs=np.zeros(3, dtype=np.float32))
        for c in pool[:n]
        if min_overlap <= 0 or checks.overlap(part, c.text) >= min_overlap
    ]


def could_decide(claim: str, cand: Candidate, config: LocalJudgeConfig) -> bool:
    """Whether the model's score of this candidate could change the verdict: it shares enough of
    the claim's content words to support it (``support_min_overlap``) or to contradict it on the
    model's word (``contradict_min_overlap``), or it is a sentence stating a conflicting value,
    year, name, antonym or negation in the claim's terms (:func:`conflict_kind`). Any other
    candidate is vetoed as unrelated whatever the model says, so scoring it is wasted work
    (``LocalJudgeConfig.skip_unrelated``; off: every candidate may decide)."""
    floor = min(config.support_min_overlap, config.contradict_min_overlap)
    if not config.skip_unrelated or floor <= 0 or checks.overlap(claim, cand.text) >= floor:
        return True
    return cand.kind == "sentence" and conflict_kind(claim, cand.text, config) is not None


def _refusal(request: JudgeRequest, config: LocalJudgeConfig) -> str | None:
    """``unsupported_language`` when the claim or its passages are not English (the model reads English only)."""
    if not config.check_language:
        return None
    if not is_english(request.claim) or not is_english("\n".join(request.passages)[:4000]):
        return Reason.unsupported_language.value
    return None


def _unrelated(request: JudgeRequest, config: LocalJudgeConfig) -> bool:
    """Whether no candidate of this request could matter (``LocalJudgeConfig.skip_unrelated``)."""
    if not config.skip_unrelated or config.support_min_overlap <= 0:
        return False
    if config.contradict_min_shared < 1 or config.number_conflict_min_overlap <= 0:
        return False
    if config.entity_substitution and config.substitution_min_overlap <= 0:
        return False
    words = checks.content_words(request.claim)
    if not words:
        return False
    return not any(words & checks.content_words(p) for p in request.passages)


def _settled(scored: Scored, config: LocalJudgeConfig, early_exit: float) -> bool:
    """Whether the candidates scored so far support the claim clearly enough (``early_exit``, or
    the request's higher ``settle_at``) to stop scoring (see ``LocalJudgeConfig.early_exit``)."""
    cands = scored.candidates if config.use_combined else [c for c in scored.candidates if c.kind != "combined"]
    support = _best_support(scored, cands, config)
    return support is not None and support[0] >= early_exit and _contradiction(scored, cands, config) is None


def _model_name(path: Path) -> str:
    info = path / "training.json"
    if info.is_file():
        try:
            name = json.loads(info.read_text()).get("name")
            if name:
                return str(name)
        except (OSError, ValueError):
            pass
    return "guardrail-nli-minilm-l6" if path == MODEL_DIR else path.name


# -- candidates ----------------------------------------------------------------


_Unit = tuple[int, int, tuple[int, int], str]
"""One evidence sentence: (passage index, position in the passage, character span, text)."""


def _sentence_units(request: JudgeRequest, config: LocalJudgeConfig) -> tuple[list[_Unit], list[list[tuple[int, int]]]]:
    """The sentences of every passage long enough to judge, and each passage's sentence spans."""
    units: list[_Unit] = []
    per_passage: list[list[tuple[int, int]]] = []
    for p, passage in enumerate(request.passages):
        spans = [
            span
            for span in checks.sentence_spans(passage)
            if len(passage[span[0] : span[1]].split()) >= config.min_sentence_words
        ]
        per_passage.append(spans)
        units.extend((p, i, span, passage[span[0] : span[1]]) for i, span in enumerate(spans))
    return units, per_passage


def build_candidates(request: JudgeRequest, config: LocalJudgeConfig) -> list[Candidate]:
    """The evidence to score for one request, within the budget of ``config``: the sentences that
    cover the claim's rarer words best, windows of consecutive sentences around the best few,
    the best few joined when they are not adjacent, and (optionally) each passage whole. Every
    text is listed once: a one-sentence passage is not also scored as a passage."""
    units, per_passage = _sentence_units(request, config)
    scores = checks.rank_sentences(request.claim, [u[3] for u in units])
    # Best first; stable, so ties keep page order. A sentence sharing no word with the claim still
    # fills a free place: a lone evidence sentence often names its subject by a pronoun only and
    # says the rest in other words ("He is the lead vocalist..." for "X is a musician").
    ranked: list[int] = []
    seen: set[str] = set()
    for k in sorted(range(len(units)), key=lambda k: -scores[k]):
        if units[k][3] not in seen:
            seen.add(units[k][3])
            ranked.append(k)
    out: list[Candidate] = []
    texts: set[str] = set()

    def add(cand: Candidate) -> None:
        if cand.text not in texts:
            texts.add(cand.text)
            out.append(cand)

    rank_of = {k: r for r, k in enumerate(ranked)}
    for k in sorted(ranked[: config.max_sentences], key=lambda k: (units[k][0], units[k][1])):
        p, _, span, text = units[k]
        add(Candidate("sentence", text, p, [span], text, rank=rank_of[k]))
    seeds = {(units[k][0], units[k][1]): rank_of[k] for k in ranked[: config.window_seeds]}
    for p, spans in enumerate(per_passage):
        passage = request.passages[p]
        for size in config.window_sizes:
            for i in range(len(spans) - size + 1):
                inside = [seeds[(p, j)] for j in range(i, i + size) if (p, j) in seeds]
                if inside:
                    s, e = spans[i][0], spans[i + size - 1][1]
                    add(Candidate("window", passage[s:e], p, spans[i : i + size], passage[s:e], rank=min(inside)))
        # A passage no longer than the longest window is already scored as a window or sentence.
        if config.score_passages and seeds and len(spans) > max(config.window_sizes, default=1):
            add(Candidate("passage", passage, p, spans, None))
    for n in config.combine_top:
        top = sorted(ranked[:n], key=lambda k: (units[k][0], units[k][1]))
        if len(top) < 2:
            continue
        positions = [units[k][1] for k in top]
        if len({units[k][0] for k in top}) == 1 and max(positions) - min(positions) == len(top) - 1:
            continue  # consecutive: a window already covers it
        text = " ".join(units[k][3] for k in top)
        parts = [(units[k][0], units[k][2]) for k in top]
        add(Candidate("combined", text, -1, [units[k][2] for k in top], None, parts=parts))
    return out


def _top_entailing(scored: Scored, config: LocalJudgeConfig) -> list[Candidate]:
    sentences = [c for c in scored.candidates if c.kind == "sentence"]
    sentences.sort(key=lambda c: -float(c.probs[ENT]))
    return sorted(sentences[: config.rescore_top], key=lambda c: (c.passage, c.sentences[0][0]))


def entailing_combination(scored: Scored, config: LocalJudgeConfig) -> Candidate | None:
    """The ``rescore_top`` most entailing sentences of a scored request joined in page order
    (None when they are fewer than two, or already scored together)."""
    top = _top_entailing(scored, config)
    if len(top) < 2:
        return None
    text = " ".join(c.text for c in top)
    if any(c.text == text for c in scored.candidates):
        return None
    return Candidate(
        "combined",
        text,
        -1,
        [c.sentences[0] for c in top],
        None,
        parts=[(c.passage, c.sentences[0]) for c in top],
    )


# -- decision ----------------------------------------------------------------


def _sentence_texts(scored: Scored, cand: Candidate) -> list[str]:
    if cand.kind == "combined":
        return [scored.passages[p][s:e] for p, (s, e) in cand.parts]
    passage = scored.passages[cand.passage]
    return [passage[s:e] for s, e in cand.sentences]


def _best_sentence(scored: Scored, cand: Candidate, column: int) -> str:
    """The sentence of a multi-sentence candidate whose own score in ``column`` is highest."""
    texts = _sentence_texts(scored, cand)
    by_text = {c.text: float(c.probs[column]) for c in scored.candidates if c.kind == "sentence"}
    return max(texts, key=lambda t: (by_text.get(t, 0.0), checks.overlap(scored.claim, t)))


def _quote(scored: Scored, cand: Candidate, column: int) -> str:
    return cand.quote if cand.quote is not None else _best_sentence(scored, cand, column)


def _support_quote(scored: Scored, cand: Candidate, config: LocalJudgeConfig) -> str:
    """A single sentence when one alone of a window supports the claim; else the window itself."""
    if cand.kind == "window":
        inside = {scored.passages[cand.passage][s:e] for s, e in cand.sentences}
        alone = [
            c
            for c in scored.candidates
            if c.kind == "sentence"
            and c.passage == cand.passage
            and c.text in inside
            and float(c.probs[ENT]) >= config.support_threshold
            and _support_problem(scored, c, config) is None
        ]
        if alone:
            return max(alone, key=lambda c: float(c.probs[ENT])).text
    return _quote(scored, cand, ENT)


def _support_problem(scored: Scored, cand: Candidate, config: LocalJudgeConfig, claim: str | None = None) -> str | None:
    """Why this candidate cannot support the claim (or one part of it, ``claim``) despite the
    model, or None when it can."""
    claim = claim or scored.claim
    if config.support_min_overlap > 0 and checks.overlap(claim, cand.text) < config.support_min_overlap:
        return "unrelated"
    if config.require_numbers and checks.missing_numbers(claim, cand.text):
        return "number"
    close = checks.overlap(claim, cand.text) >= config.negation_min_overlap
    if config.negation_check and close and cand.kind == "sentence" and checks.negation_flip(claim, cand.text):
        return "negation"
    if config.antonym_check and checks.antonym_flip(claim, cand.text, config.negation_min_overlap) is not None:
        return "antonym"
    if config.require_entities:
        scope = " ".join(scored.passages) if cand.kind == "combined" else scored.passages[cand.passage]
        if len(scope.split()) >= config.entity_min_words and checks.missing_entities(claim, scope):
            return "entity"
    if config.entity_substitution and _substitution(claim, cand.text, config):
        return "substitution"
    if config.year_conflict and _year_conflict(claim, cand.text, config):
        return "year"
    return None


def _rest_overlap(claim: str, removed: str, evidence: str) -> float:
    """Overlap of the claim, less one of its phrases, with the evidence."""
    return checks.overlap(" ".join(claim.replace(removed, " ").split()), evidence)


def _substitution(claim: str, text: str, config: LocalJudgeConfig) -> bool:
    hit = checks.substituted_entity(claim, text)
    return hit is not None and _rest_overlap(claim, hit[0], text) >= config.substitution_min_overlap


def _year_conflict(claim: str, text: str, config: LocalJudgeConfig) -> bool:
    hit = checks.conflicting_year(claim, text)
    return hit is not None and _rest_overlap(claim, hit[0].raw, text) >= config.number_conflict_min_overlap


def conflict_kind(claim: str, text: str, config: LocalJudgeConfig) -> str | None:
    """What a sentence states differently in the claim's own terms, when the rest of the claim
    matches it closely: another value for the same quantity (``number``), another year for the same
    event (``year``), another name in the claim's place (``name``), the claim's predicate negated
    (``negation``) or turned into its opposite (``antonym``); None otherwise."""
    hit = checks.conflicting_quantity(claim, text)
    if hit is not None and _rest_overlap(claim, hit[0].raw, text) >= config.number_conflict_min_overlap:
        return "number"
    if config.year_conflict and _year_conflict(claim, text, config):
        return "year"
    if config.entity_substitution and _substitution(claim, text, config):
        return "name"
    if config.antonym_check and checks.antonym_flip(claim, text, config.negation_min_overlap) is not None:
        return "antonym"
    close = checks.overlap(claim, text) >= config.negation_min_overlap
    if config.negation_check and close and checks.negation_flip(claim, text):
        return "negation"
    return None


def conflicts(scored: Scored, config: LocalJudgeConfig) -> list[Candidate]:
    """Sentences that state something else in the claim's own terms (see :func:`conflict_kind`)."""
    return [
        c for c in scored.candidates if c.kind == "sentence" and conflict_kind(scored.claim, c.text, config) is not None
    ]


def _supported_in_context(scored: Scored, sentence: Candidate, config: LocalJudgeConfig) -> bool:
    """Whether a window holding this sentence supports the claim (the model reads it as entailing
    more than contradicting, and no check vetoes it): a sentence opening with "It was directed by
    James Cameron" reads as a contradiction of "Titanic was directed by James Cameron" alone, and
    as support next to the sentence that says what "it" is."""
    span = sentence.sentences[0]
    for cand in scored.candidates:
        if cand.kind != "window" or cand.passage != sentence.passage or span not in cand.sentences:
            continue
        ent = float(cand.probs[ENT])
        supports = ent >= config.support_threshold and ent > float(cand.probs[CON])
        if supports and _support_problem(scored, cand, config) is None:
            return True
    return False


_PRONOUN_OPENING = re.compile(r"^\W*(?:it|he|she|they|his|her|its|their)\b", re.IGNORECASE)


def same_subject(scored: Scored, cand: Candidate, config: LocalJudgeConfig) -> bool:
    """Whether a candidate is about the claim's subject: it opens with a pronoun (a sentence on the
    subject's own page often names it so), or names the claim's subject (the name opening the claim;
    else any of its names); for a claim without names, it shares a word of the claim's opening."""
    if _PRONOUN_OPENING.match(cand.text):
        return True
    claim = scored.claim
    names = checks.entities(claim)
    lead = checks.entities(subject_of(claim))[-1:]
    if lead:  # the claim's subject is a name: that name must be there
        return not checks.missing_entities(lead[0], cand.text)
    if names:
        return len(checks.missing_entities(claim, cand.text)) < len(names)
    opening = checks.content_words(" ".join(claim.split()[:4]))
    return bool(opening & checks.content_words(cand.text))


def _contradiction(
    scored: Scored, cands: Sequence[Candidate], config: LocalJudgeConfig
) -> tuple[float, Candidate, str] | None:
    """Precision first: a sentence or window about the claim's subject that the model reads as
    contradicting it with margin, and either states a conflicting value, year, name, negation or
    antonym in the claim's terms, or is read as a contradiction with high probability while sharing
    most of the claim's words. Of several, the one worded most like the claim. Returns
    (probability, candidate, kind)."""
    found: list[tuple[float, Candidate, str]] = []
    for cand in cands:
        con, ent = float(cand.probs[CON]), float(cand.probs[ENT])
        if con < config.conflict_min_contradiction or cand.kind not in ("sentence", "window"):
            continue
        if con - ent < config.conflict_margin or not same_subject(scored, cand, config):
            continue
        if config.context_override and cand.kind == "sentence" and _supported_in_context(scored, cand, config):
            continue
        # A window joins sentences on several topics: only a lone sentence is read for a conflict.
        kind = conflict_kind(scored.claim, cand.text, config) if cand.kind == "sentence" else None
        # A negation flip is a weaker cue than another value, year, name or antonym (a negated
        # sentence is often about something else): it needs the model-alone threshold.
        if kind is not None and (kind != "negation" or con >= config.contradict_threshold):
            found.append((con, cand, kind))
            continue
        aligned = checks.overlap(scored.claim, cand.text) >= config.contradict_min_overlap
        if aligned and con >= config.contradict_threshold and con - ent >= config.contradict_margin:
            found.append((con, cand, "model"))
    if not found:
        return None
    return max(found, key=lambda f: (f[1].kind == "sentence", checks.bigram_overlap(scored.claim, f[1].text), f[0]))


def _best_support(
    scored: Scored,
    cands: Sequence[Candidate],
    config: LocalJudgeConfig,
    claim: str | None = None,
    threshold: float | None = None,
) -> tuple[float, Candidate] | None:
    """The most entailing candidate that the checks do not veto, with its entailment probability."""
    floor = config.support_threshold if threshold is None else threshold
    for cand in sorted(cands, key=lambda c: -float(c.probs[ENT])):
        p = float(cand.probs[ENT])
        if p < floor:
            break
        if claim is not None:
            # A part is backed on the model's entailment alone (a short fragment against a page
            # sentence often also reads as contradiction): contradictions are the whole claim's.
            if _part_problem(scored, claim, cand, config) is None:
                return p, cand
        elif p > float(cand.probs[CON]) and _support_problem(scored, cand, config) is None:
            return p, cand
    return None


def _part_problem(scored: Scored, part: str, cand: Candidate, config: LocalJudgeConfig) -> str | None:
    """Why this candidate cannot back one part of a split claim: too few of the part's words, a
    number of the part it lacks, a name of the part its page never mentions, or the part's
    predicate turned into its opposite. Lighter than :func:`_support_problem` (no negation, year or
    substitution checks): parts are short fragments that the whole claim's checks already cover."""
    if config.support_min_overlap > 0 and checks.overlap(part, cand.text) < config.support_min_overlap:
        return "unrelated"
    if config.require_numbers and checks.missing_numbers(part, cand.text):
        return "number"
    scope = scored.passages[cand.passage]
    page_like = len(scope.split()) >= config.entity_min_words
    if config.require_entities and page_like and checks.missing_entities(part, scope):
        return "entity"
    if config.antonym_check and checks.antonym_flip(part, cand.text, config.negation_min_overlap) is not None:
        return "antonym"
    return None


def _parts(scored: Scored, config: LocalJudgeConfig) -> list[tuple[str, tuple[float, Candidate] | None]]:
    """Each part of a split claim with its best support (None: nothing backs it)."""
    return [(part, _best_support(scored, cands, config, part, config.part_threshold)) for part, cands in scored.parts]


def _calibrated(config: LocalJudgeConfig, label: str, raw: float) -> float:
    """The probability that ``label`` is right, from its raw score (Platt scaling fitted on the tune
    part: ``LocalJudgeConfig.calibration``)."""
    a, b = next(((a, b) for name, a, b in config.calibration if name == label), (1.0, 0.0))
    x = math.log(max(raw, 1e-4) / max(1.0 - raw, 1e-4))
    return round(1.0 / (1.0 + math.exp(-(a * x + b))), 4)


def decide(scored: Scored, config: LocalJudgeConfig) -> JudgeVerdict:
    """The verdict for one scored request: supported, contradicted or not_found, with the quote,
    the parts backed and missing (for a split claim) and a calibrated confidence."""
    if scored.reason is not None:
        return JudgeVerdict(label="not_found", confidence=1.0, reason=scored.reason)
    cands = scored.candidates if config.use_combined else [c for c in scored.candidates if c.kind != "combined"]
    if not cands:
        return JudgeVerdict(label="not_found", confidence=_calibrated(config, "not_found", 0.99))
    support = _best_support(scored, cands, config)
    contra = _contradiction(scored, cands, config)
    if contra is not None and (
        support is None or contra[0] - config.contradict_threshold > support[0] - config.support_threshold
    ):
        quote = _quote(scored, contra[1], CON)
        return JudgeVerdict(
            label="contradicted", evidence_quote=quote, confidence=_calibrated(config, "contradicted", contra[0])
        )
    parts = _parts(scored, config) if len(scored.parts) > 1 else []
    backed = [p for p, s in parts if s is not None]
    missing = [p for p, s in parts if s is None]
    if support is not None and parts and not missing:
        raw = min(s[0] for _, s in parts if s is not None)
        raw = min(raw, support[0]) if config.parts_cap_support else support[0]
        quote = _support_quote(scored, support[1], config)
        return JudgeVerdict(
            label="supported",
            evidence_quote=quote,
            confidence=_calibrated(config, "supported", raw),
            supported_parts=backed,
            missing_parts=[],
        )
    if support is not None and not parts:
        return JudgeVerdict(
            label="supported",
            evidence_quote=_support_quote(scored, support[1], config),
            confidence=_calibrated(config, "supported", support[0]),
        )
    top = max(float(max(c.probs[ENT], c.probs[CON])) for c in cands)
    verdict = JudgeVerdict(label="not_found", confidence=_calibrated(config, "not_found", 1.0 - top))
    if parts:
        first = next((s for _, s in parts if s is not None), None)
        verdict = verdict.model_copy(
            update={
                "supported_parts": backed,
                "missing_parts": missing,
                "reason": Reason.partially_supported.value if backed else None,
                "evidence_quote": _quote(scored, first[1], ENT) if first else None,
            }
        )
    return verdict


__all__ = [
    "MODEL_DIR",
    "LocalJudge",
    "LocalJudgeConfig",
    "build_candidates",
    "conflict_kind",
    "conflicts",
    "could_decide",
    "decide",
    "native_bfloat16",
    "plan_rounds",
]
