"""The embedded offline judge: our NLI cross-encoder and a learned decision, no key, no hub.

Each sentence of the passages shown is read as a reader of its page reads it, with the page's topic
(``"Titanic (1997 film): It was directed by James Cameron."``; :mod:`guardrail.judges._context`),
and also alone and in windows with its neighbours. What is read, and in which of at most two
rounds, is the budget of :class:`LocalJudgeConfig` (:mod:`guardrail.judges._candidates`); the first
round of every request of one ``judge()`` call is one batched forward pass, and calls made at the
same time on one event loop are judged together (:class:`LocalJudge.judge`). What the model's
probabilities and the lexical agreement of the words mean together is decided by a calibrated
classifier fitted on held-out data (:mod:`guardrail.judges._features`,
:mod:`guardrail.judges._decision`). The quote is always an exact substring of a passage (a sentence
or a window of consecutive sentences), so the quote guard holds by construction.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from guardrail._fast_tokenizer import encode_pairs
from guardrail._onnx_backend import available as onnx_available
from guardrail._onnx_backend import run as onnx_run
from guardrail._onnx_backend import session_for
from guardrail.core.schema import JudgeRequest, JudgeVerdict, Reason
from guardrail.judges import _checks as checks
from guardrail.judges._batching import CallQueue
from guardrail.judges._candidates import ENT, Candidate, Scored, build_candidates, part_candidates, restatements
from guardrail.judges._decision import DecisionModel, decide, load_decision, probabilities, settled
from guardrail.judges._lexicon import is_english
from guardrail.judges._parts import claim_parts
from guardrail.judges.local_config import LocalJudgeConfig
from guardrail.settings import Settings

log = logging.getLogger("guardrail.judges.local")

MODEL_DIR = Path(__file__).resolve().parent / "model"
"""Where the shipped weights (and their fitted decision) live inside the package."""
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


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
    """The embedded NLI judge: offline, no key; loads its weights lazily, once per process.

    ``quantize=True`` reads pairs with int8 weights (on ONNX one scale per output channel, on torch
    its dynamic int8), ``False`` with the float32 (or native bfloat16) model; ``None`` (the default)
    is int8 for the fast path on ONNX (``config.rounds == 1``) and float32 otherwise.
    """

    name = "local"
    cpu_bound = True  # judging runs on this machine's cores

    def __init__(
        self,
        model_path: str | Path | None = None,
        config: LocalJudgeConfig | None = None,
        *,
        quantize: bool | None = None,
    ) -> None:
        self.path = Path(model_path) if model_path is not None else MODEL_DIR
        if not (self.path / "config.json").is_file():
            # Said here, not at the first judged claim: transformers would read a missing folder
            # as a hub repository name and fail with a message about repo ids.
            raise ValueError(f"LocalJudge model folder {str(self.path)!r} holds no config.json (no model there)")
        self.config = config or LocalJudgeConfig()
        if quantize is None:
            # The fast path exists for speed: its int8 graph reads about 4x faster with the same labels
            # on 98.8 % of the eval part and the same figures (README, "The embedded judge").
            quantize = self.config.rounds == 1 and self.backend == "onnx"
        self.quantize = quantize
        self.model = _model_name(self.path) + ("-int8" if quantize else "")
        self._dtype: str | None = None
        self._decision: DecisionModel | None = None
        self._calls = CallQueue(self._judge_in_thread)

    def __getstate__(self) -> dict[str, Any]:
        """The judge's configuration, without its queue of calls (tied to running event loops)."""
        return {k: v for k, v in self.__dict__.items() if k != "_calls"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._calls = CallQueue(self._judge_in_thread)

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
        """The shipped model, or the model folder named by ``GUARDRAIL_JUDGE_MODEL`` when it is one,
        reading in ``GUARDRAIL_JUDGE_ROUNDS`` rounds (:attr:`LocalJudgeConfig.rounds`) at
        ``GUARDRAIL_JUDGE_PRECISION`` (``auto``: int8 for one round on ONNX, else float32)."""
        path = None
        if settings.judge_model and Path(settings.judge_model).is_dir():
            path = Path(settings.judge_model)
        precision = settings.judge_precision
        quantize = None if precision == "auto" else precision == "int8"
        return cls(model_path=path, config=LocalJudgeConfig(rounds=settings.judge_rounds), quantize=quantize)

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
            encode_pairs(self.path, ["load"], ["load"], self.config.max_length)
            session_for(self.path, "classifier", "int8" if self.quantize else "float32", self.config.threads)
        else:
            _load(self.path, self.quantize, self.dtype)

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """Judge every request in one batched scoring pass, off the event loop.

        Calls that arrive while another runs (rows of a batch, a LangChain ``abatch``, a server's
        requests) wait, and are then judged together in one pass: one pass at a time uses the cores
        fully, and pads and reads repeated pairs once (:class:`~guardrail.judges._batching.CallQueue`).
        A lone call is judged at once; a call that arrives while a pass runs waits for it. Eight
        concurrent batch rows of unique claims on 2 cores: 10.2 against 9.0 claims/s, 70 against 88
        CPU-s (``bench/judge_calls.py``)."""
        if not requests:
            return []
        return await self._calls.judge(requests)

    async def _judge_in_thread(self, requests: list[JudgeRequest]) -> list[JudgeVerdict]:
        return await asyncio.to_thread(self.judge_sync, requests)

    @property
    def decision(self) -> DecisionModel:
        """The classifier fitted for these weights and ``config.rounds`` (``decision.json``, or
        ``decision_one_round.json`` for one round, beside them; the package's when a model folder
        has none), read once per process."""
        if self._decision is None:
            folder = self.path if (self.path / "decision.json").is_file() else MODEL_DIR
            self._decision = load_decision(folder, self.config.rounds)
        return self._decision

    def judge_sync(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """Blocking :meth:`judge`. A model failure raises (the verifier turns it into
        ``judge_error`` for the call); a failure deciding one request is that request's ``internal_error``."""
        verdicts: list[JudgeVerdict] = []
        model = self.decision
        for scored in self.score(requests):
            try:
                verdicts.append(decide(scored, self.config, model))
            except Exception:
                log.exception("internal error: the local judge could not decide a request")
                verdicts.append(JudgeVerdict(label="not_found", confidence=0.0, reason=Reason.internal_error.value))
        return verdicts

    def score(
        self, requests: Sequence[JudgeRequest], *, rounds: int | None = None, settle: bool = True
    ) -> list[Scored]:
        """Build every request's candidates and read them in at most ``rounds`` rounds (default
        ``LocalJudgeConfig.rounds``): the first round of every request in one batch, the second
        only for the requests it left undecided, then the parts of split claims still not decided.
        ``settle=False`` with ``rounds=2`` reads the whole budget of every request and no parts (the
        decision's fitting records what every round would show)."""
        config = self.config
        rounds = config.rounds if rounds is None else rounds
        plans: list[Scored] = []
        for r in requests:
            reason = _refusal(r, config)
            if reason is not None or _unrelated(r, config):
                plans.append(Scored(r.claim, list(r.passages), [], [], title=r.title, reason=reason))
            else:
                plans.append(build_candidates(r, config))
        self._predict_into([(s.claim, c) for s in plans for c in s.candidates[: s.round_one]])
        self.restate(plans)
        if rounds < 2:
            if settle:
                self._score_parts(plans, self.decision)
            return plans
        if not settle:
            self._predict_into([(s.claim, c) for s in plans for c in s.candidates[s.round_one :]])
            self.restate(plans)
            return plans
        model = self.decision
        later = [
            s
            for s, r in zip(plans, requests, strict=True)
            if s.candidates and not settled(s, model, config, r.settle_at)
        ]
        self._predict_into([(s.claim, c) for s in later for c in s.candidates[s.round_one :]])
        self.restate(later)
        self._score_parts(plans, model)
        return plans

    def restate(self, plans: Sequence[Scored]) -> None:
        """Read every pending restatement (:func:`~guardrail.judges._candidates.restatements`) of
        ``plans`` in one batch: a handful of pairs, only where a sentence names another thing."""
        pending = [(s, k, claim, cand) for s in plans for k, claim, cand in restatements(s)]
        if not pending:
            return
        probs = self.predict([cand.model_text for *_, cand in pending], [claim for _, _, claim, _ in pending])
        for (s, k, _, _), row in zip(pending, probs, strict=True):
            s.restated[k] = float(row[ENT])

    def _score_parts(self, plans: list[Scored], model: DecisionModel) -> None:
        """Read each part of every split claim that is still not supported against its own few
        sentences, all in one batch (the verdict then names the parts backed and missing)."""
        if not self.config.split_parts:
            return
        flat: list[tuple[str, Candidate]] = []
        for s in plans:
            if not s.candidates:
                continue
            parts = claim_parts(s.claim)
            if len(parts) < 2:
                continue
            p, _, _ = probabilities(s, model)
            if p.argmax() != 2 and max(p[0], p[1]) >= min(model.support_threshold, model.contradict_threshold):
                continue  # decided supported or contradicted: its parts change nothing
            for part in parts:
                cands = part_candidates(s, part, self.config.part_candidates)
                s.parts.append((part, cands))
                flat.extend((part, c) for c in cands)
        self._predict_into(flat)

    def _predict_into(self, flat: list[tuple[str, Candidate]]) -> None:
        if not flat:
            return
        unique = list(dict.fromkeys((c.model_text, claim) for claim, c in flat))
        probs = self.predict([text for text, _ in unique], [claim for _, claim in unique])
        by_pair = dict(zip(unique, probs, strict=True))
        for claim, cand in flat:
            cand.probs = by_pair[(cand.model_text, claim)]
            cand.scored = True

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
        return encode_pairs(self.path, premises, hypotheses, self.config.max_length)

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


def _refusal(request: JudgeRequest, config: LocalJudgeConfig) -> str | None:
    """``unsupported_language`` when the claim or its passages are not English (the model reads English only)."""
    if not config.check_language:
        return None
    if not is_english(request.claim) or not is_english("\n".join(request.passages)[:4000]):
        return Reason.unsupported_language.value
    return None


def _unrelated(request: JudgeRequest, config: LocalJudgeConfig) -> bool:
    """Whether the passages (and title) share none of the claim's content words, so nothing there
    can bear on it (``LocalJudgeConfig.skip_unrelated``)."""
    if not config.skip_unrelated:
        return False
    words = checks.content_words(request.claim)
    if not words:
        return False
    texts = [*request.passages, request.title or ""]
    return not any(words & checks.content_words(p) for p in texts)


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


__all__ = [
    "MODEL_DIR",
    "Candidate",
    "LocalJudge",
    "LocalJudgeConfig",
    "Scored",
    "build_candidates",
    "decide",
    "native_bfloat16",
]
