"""The embedded offline judge: our NLI cross-encoder plus deterministic checks, no key, no hub.

For each request the claim is scored against every sentence of the passages shown, windows
of 2-3 consecutive sentences, the few most claim-like sentences joined (evidence that is spread
over a page) and each passage as a whole, all pairs of one ``judge()`` call in length-sorted
batches. The label comes from those probabilities and from checks that small NLI models miss
(``guardrail.judges.checks``): a number, unit or year of the claim that the evidence lacks, or
states differently; a negation flip; a name the evidence never mentions. The quote is always an
exact substring of a passage (a sentence, or a window of consecutive sentences), so the quote
guard holds by construction.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from guardrail.judges import checks
from guardrail.schema import JudgeRequest, JudgeVerdict, Reason
from guardrail.settings import Settings

log = logging.getLogger("guardrail.judges.local")

MODEL_DIR = Path(__file__).resolve().parent / "model"
"""Where the shipped weights live inside the package."""
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


@dataclass(frozen=True)
class LocalJudgeConfig:
    """Every threshold and switch of the local judge, in one place.

    The defaults were chosen on the **tune** part of the by-claim split of ``../shared/data``
    (``guardrail.judges.datasets``: buckets 45-61 of ``wice_claim_dev.jsonl``,
    ``climate_fever_dev.jsonl``, ``fever_symmetric_dev.jsonl`` and
    ``attributionbench_dev.jsonl``), through the full verifier path, with the shipped model, by
    ``bench/tune_judge.py``; never on the eval part that ``bench/judge_accuracy.py`` reports.
    The search maximised the mean of WiCE balanced accuracy, AttributionBench balanced accuracy,
    Climate-FEVER macro-F1 and FEVER-Symmetric accuracy (tune part: 0.883, 0.627, 0.482, 0.549).
    Three values were then set by hand, each within 0.004 of that objective there:
    ``require_entities`` with ``entity_min_words=80`` (+0.6 WiCE points), ``negation_check``
    (neutral) and ``contradict_min_shared=2``, which stops an unrelated page that shares one word
    with the claim being read as contradicting it (a case none of the four sets contains).
    On that tune part ``require_numbers`` is worth +24 points of WiCE balanced accuracy and the
    joined (non-adjacent) sentences +6.
    """

    support_threshold: float = 0.4
    """Least entailment probability of the best evidence for ``supported``."""
    contradict_threshold: float = 0.2
    """Least contradiction probability of a sentence or window for ``contradicted``."""
    contradict_min_overlap: float = 0.15
    """Share of the claim's content words a contradicting sentence must contain: NLI models call
    unrelated sentences 'contradiction' far too often."""
    contradict_min_shared: int = 2
    """...and at least this many of them (one shared word, "direct" in "direct sunlight", is chance)."""
    number_conflict_min_overlap: float = 0.7
    """Share of the claim's other content words a sentence must share before a different value for
    the same unit ("50 degrees" vs "100 degrees") makes the claim contradicted."""
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
    window_sizes: tuple[int, ...] = (2, 3)
    """Windows of consecutive sentences scored besides single sentences."""
    max_sentences: int = 24
    """Only this many sentences of a request, those with the most words in common with the claim,
    are scored alone (pages have dozens of menu lines and asides; this keeps a page near 60 pairs)."""
    window_seeds: int = 8
    """Windows are scored only around this many sentences with the most words in common with the claim."""
    combine_top: tuple[int, ...] = (2, 3)
    """Also score the top-n claim-like sentences (by word overlap) joined, for spread-out evidence."""
    rescore_top: int = 3
    """Second pass: also score the this-many most entailing sentences joined (0 or 1: off)."""
    use_combined: bool = True
    """Let joined, non-adjacent sentences support a claim (both kinds of combination)."""
    score_passages: bool = True
    """Also score each passage as a whole (truncated to ``max_length`` tokens)."""
    min_sentence_words: int = 3
    """Shorter sentences (menu items, headings) are not scored on their own."""
    max_length: int = 256
    """Token limit of one (evidence, claim) pair."""
    batch_tokens: int = 8192
    """Batch size x longest pair cap for one forward pass."""


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


@dataclass
class Scored:
    """A request with every candidate scored: the input of :func:`decide`."""

    claim: str
    passages: list[str]
    candidates: list[Candidate]


# -- model -------------------------------------------------------------------

_LOCK = threading.Lock()
_MODELS: dict[tuple[str, bool], tuple[Any, Any, dict[str, int]]] = {}


def _load(path: Path, quantize: bool) -> tuple[Any, Any, dict[str, int]]:
    """Load (once per process) tokenizer and model from ``path``, never touching the network."""
    key = (str(path), quantize)
    with _LOCK:
        hit = _MODELS.get(key)
        if hit is not None:
            return hit
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(
            str(path), local_files_only=True, dtype=torch.float32
        )
        model.eval()
        if quantize:
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        id2label = {int(k): str(v).lower() for k, v in model.config.id2label.items()}
        index = {name: i for i, name in id2label.items()}
        if not {"entailment", "neutral", "contradiction"} <= set(index):
            raise RuntimeError(f"model at {path} lacks entailment/neutral/contradiction labels: {id2label}")
        _MODELS[key] = (tokenizer, model, index)
        return _MODELS[key]


class LocalJudge:
    """The embedded NLI judge: offline, no key; loads its weights lazily, once per process."""

    name = "local"

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

    def load(self) -> None:
        """Load the weights now (otherwise the first ``judge`` call does)."""
        _load(self.path, self.quantize)

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
                log.exception("local judge could not decide a request")
                verdicts.append(JudgeVerdict(label="not_found", confidence=0.0, reason=Reason.judge_error.value))
        return verdicts

    def score(self, requests: Sequence[JudgeRequest]) -> list[Scored]:
        """Build every request's candidates and score them all in length-sorted batches."""
        scored = [
            Scored(claim=r.claim, passages=list(r.passages), candidates=build_candidates(r, self.config))
            for r in requests
        ]
        self._predict_into([(s.claim, c) for s in scored for c in s.candidates])
        if self.config.rescore_top > 1:
            # Second pass: the sentences the model found most entailing, joined in page order, so
            # evidence spread over a page (gold sets are often several sentences apart) is read together.
            extra = [(s, c) for s in scored if (c := entailing_combination(s, self.config)) is not None]
            self._predict_into([(s.claim, c) for s, c in extra])
            for s, c in extra:
                s.candidates.append(c)
        return scored

    def _predict_into(self, flat: list[tuple[str, Candidate]]) -> None:
        if flat:
            probs = self.predict([c.text for _, c in flat], [claim for claim, _ in flat])
            for (_, cand), row in zip(flat, probs, strict=True):
                cand.probs = row

    def predict(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """Probabilities ``[entailment, neutral, contradiction]`` per (premise, hypothesis) pair."""
        import torch

        tokenizer, model, index = _load(self.path, self.quantize)
        enc = tokenizer(list(premises), list(hypotheses), truncation="longest_first", max_length=self.config.max_length)
        ids: list[list[int]] = enc["input_ids"]
        types: list[list[int]] = enc["token_type_ids"]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.zeros((len(ids), 3), dtype=np.float32)
        cols = [index["entailment"], index["neutral"], index["contradiction"]]
        start = 0
        with torch.inference_mode():
            while start < len(order):
                stop = start + 1
                while stop < len(order) and len(ids[order[stop]]) * (stop - start + 1) <= self.config.batch_tokens:
                    stop += 1
                batch = order[start:stop]
                width = len(ids[batch[-1]])
                input_ids = torch.zeros((len(batch), width), dtype=torch.long)
                token_types = torch.zeros((len(batch), width), dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, i in enumerate(batch):
                    n = len(ids[i])
                    input_ids[row, :n] = torch.tensor(ids[i])
                    token_types[row, :n] = torch.tensor(types[i])
                    mask[row, :n] = 1
                logits = model(input_ids=input_ids, attention_mask=mask, token_type_ids=token_types).logits
                probs = torch.softmax(logits.float(), dim=-1)[:, cols].numpy()
                out[batch] = probs
                start = stop
        return out


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


def build_candidates(request: JudgeRequest, config: LocalJudgeConfig) -> list[Candidate]:
    """Every piece of evidence to score for one request (see the module docstring)."""
    claim = request.claim
    out: list[Candidate] = []
    units: list[tuple[int, int, tuple[int, int], float]] = []  # (passage, position, span, overlap)
    per_passage: list[list[tuple[int, int]]] = []
    for p, passage in enumerate(request.passages):
        spans = [
            span
            for span in checks.sentence_spans(passage)
            if len(passage[span[0] : span[1]].split()) >= config.min_sentence_words
        ]
        per_passage.append(spans)
        for i, span in enumerate(spans):
            units.append((p, i, span, checks.overlap(claim, passage[span[0] : span[1]])))
    # Rank every sentence of the request by word overlap with the claim; stable, so ties keep
    # page order. Only the best are scored alone and seed windows.
    ranked = sorted(units, key=lambda u: -u[3])
    for p, _, (s, e), _ in sorted(ranked[: config.max_sentences], key=lambda u: (u[0], u[1])):
        text = request.passages[p][s:e]
        out.append(Candidate("sentence", text, p, [(s, e)], text))
    seeds = {(u[0], u[1]) for u in ranked[: config.window_seeds]}
    for p, spans in enumerate(per_passage):
        passage = request.passages[p]
        for size in config.window_sizes:
            for i in range(len(spans) - size + 1):
                if not any((p, j) in seeds for j in range(i, i + size)):
                    continue
                s, e = spans[i][0], spans[i + size - 1][1]
                out.append(Candidate("window", passage[s:e], p, spans[i : i + size], passage[s:e]))
        if config.score_passages and len(spans) > 1:
            out.append(Candidate("passage", passage, p, spans, None))
    for n in config.combine_top:
        top = [u for u in ranked[:n] if u[3] > 0]
        if len(top) < 2:
            continue
        top.sort(key=lambda u: (u[0], u[1]))
        positions = [u[1] for u in top]
        if len({u[0] for u in top}) == 1 and max(positions) - min(positions) == len(top) - 1:
            continue  # consecutive: a window already covers it
        text = " ".join(request.passages[u[0]][u[2][0] : u[2][1]] for u in top)
        out.append(Candidate("combined", text, -1, [u[2] for u in top], None, parts=[(u[0], u[2]) for u in top]))
    return out


def _top_entailing(scored: Scored, config: LocalJudgeConfig) -> list[Candidate]:
    sentences = [c for c in scored.candidates if c.kind == "sentence"]
    sentences.sort(key=lambda c: -float(c.probs[ENT]))
    return sorted(sentences[: config.rescore_top], key=lambda c: (c.passage, c.sentences[0][0]))


def entailing_combination(scored: Scored, config: LocalJudgeConfig) -> Candidate | None:
    """The ``rescore_top`` most entailing sentences of a scored request joined in page order."""
    top = _top_entailing(scored, config)
    if len(top) < 2:
        return None
    text = " ".join(c.text for c in top)
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


def _support_problem(scored: Scored, cand: Candidate, config: LocalJudgeConfig) -> str | None:
    """Why this candidate cannot support the claim despite the model, or None when it can."""
    claim = scored.claim
    if config.require_numbers and checks.missing_numbers(claim, cand.text):
        return "number"
    if (
        config.negation_check
        and cand.kind == "sentence"
        and checks.overlap(claim, cand.text) >= config.negation_min_overlap
        and checks.negation_flip(claim, cand.text)
    ):
        return "negation"
    if config.require_entities:
        scope = " ".join(scored.passages) if cand.kind == "combined" else scored.passages[cand.passage]
        if len(scope.split()) >= config.entity_min_words and checks.missing_entities(claim, scope):
            return "entity"
    return None


def _related(scored: Scored, cand: Candidate, config: LocalJudgeConfig) -> bool:
    """Whether a candidate is about the claim at all: enough shared content words, and on a page
    (not a lone sentence) at least one of the claim's names mentioned in the passage."""
    claim_words = checks.content_words(scored.claim)
    shared = len(claim_words & checks.content_words(cand.text))
    if shared < min(config.contradict_min_shared, len(claim_words)):
        return False
    if claim_words and shared / len(claim_words) < config.contradict_min_overlap:
        return False
    if config.require_entities and cand.passage >= 0:
        passage = scored.passages[cand.passage]
        names = checks.entities(scored.claim)
        page_like = len(passage.split()) >= config.entity_min_words
        if names and page_like and len(checks.missing_entities(scored.claim, passage)) == len(names):
            return False
    return True


def decide(scored: Scored, config: LocalJudgeConfig) -> JudgeVerdict:
    """The verdict for one scored request: supported, contradicted or not_found, with the quote."""
    cands = scored.candidates
    if not config.use_combined:
        cands = [c for c in cands if c.kind != "combined"]
    if not cands:
        return JudgeVerdict(label="not_found", confidence=1.0)
    claim = scored.claim
    # Support: the most entailing candidate that the checks do not veto.
    support: tuple[float, Candidate] | None = None
    for cand in sorted(cands, key=lambda c: -float(c.probs[ENT])):
        p = float(cand.probs[ENT])
        if p < config.support_threshold:
            break
        if _support_problem(scored, cand, config) is None:
            support = (p, cand)
            break
    # Contradiction: a related sentence or window the model reads as contradicting the claim.
    contra: tuple[float, Candidate] | None = None
    for cand in sorted(cands, key=lambda c: -float(c.probs[CON])):
        p = float(cand.probs[CON])
        if p < config.contradict_threshold:
            break
        if cand.kind not in ("sentence", "window"):
            continue
        if p <= float(cand.probs[ENT]) or not _related(scored, cand, config):
            continue
        contra = (p, cand)
        break
    # The same quantity stated with another value in a closely related sentence ("50 degrees"
    # vs "100 degrees"); the most closely worded such sentence is the one to quote.
    conflicts: list[Candidate] = []
    for cand in cands:
        if cand.kind != "sentence":
            continue
        hit = checks.conflicting_quantity(claim, cand.text)
        if hit is None:
            continue
        rest = " ".join(claim.replace(hit[0].raw, " ").split())
        if checks.overlap(rest, cand.text) >= config.number_conflict_min_overlap:
            conflicts.append(cand)
    conflict = (
        max(conflicts, key=lambda c: (checks.bigram_overlap(claim, c.text), float(c.probs[CON]))) if conflicts else None
    )
    if contra is not None and (
        support is None or contra[0] - config.contradict_threshold > support[0] - config.support_threshold
    ):
        quote = conflict.text if conflict is not None else _quote(scored, contra[1], CON)
        return JudgeVerdict(label="contradicted", evidence_quote=quote, confidence=round(contra[0], 4))
    if support is not None:
        return JudgeVerdict(
            label="supported",
            evidence_quote=_support_quote(scored, support[1], config),
            confidence=round(support[0], 4),
        )
    if conflict is not None:
        return JudgeVerdict(
            label="contradicted",
            evidence_quote=conflict.text,
            confidence=round(max(float(conflict.probs[CON]), 0.5), 4),
        )
    best = max(float(max(c.probs[ENT], c.probs[CON])) for c in cands)
    return JudgeVerdict(label="not_found", confidence=round(1.0 - best, 4))


__all__ = ["MODEL_DIR", "LocalJudge", "LocalJudgeConfig", "build_candidates", "decide"]
