"""Test doubles that implement the public protocols (Judge, Embedder) without loading models.

They replace a stage the way a user would swap one; they never patch the code under test.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from guardrail.schema import JudgeRequest, JudgeVerdict

_WORD = re.compile(r"[A-Za-z]+|\d+(?:\.\d+)?")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_STOP = {"the", "a", "an", "at", "of", "in", "is", "and", "to", "it", "by", "was", "on", "as", "for"}


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - _STOP


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


class OverlapJudge:
    """Supported when a sentence covers the claim's words and numbers; contradicted when it covers
    the words but states other numbers; else not_found. The quote is that sentence, verbatim."""

    name = "overlap"
    model = "overlap-test-judge"

    def __init__(self, threshold: float = 0.6) -> None:
        self.threshold = threshold
        self.calls: list[list[JudgeRequest]] = []

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        self.calls.append(list(requests))
        return [self._one(r) for r in requests]

    def _one(self, request: JudgeRequest) -> JudgeVerdict:
        claim_words = _words(request.claim) - set(_NUMBER.findall(request.claim))
        claim_numbers = set(_NUMBER.findall(request.claim))
        best, best_score = None, 0.0
        for passage in request.passages:
            for sentence in _sentences(passage):
                score = len(claim_words & _words(sentence)) / max(1, len(claim_words))
                if score > best_score:
                    best, best_score = sentence, score
        if best is None or best_score < self.threshold:
            return JudgeVerdict(label="not_found", confidence=1 - best_score)
        numbers = set(_NUMBER.findall(best))
        if claim_numbers and not claim_numbers <= numbers:
            return JudgeVerdict(label="contradicted", evidence_quote=best, confidence=best_score)
        return JudgeVerdict(label="supported", evidence_quote=best, confidence=best_score)


class FixedJudge:
    """Always answers the same verdict (for testing the quote guard and aggregation)."""

    name = "fixed"
    model = "fixed-test-judge"

    def __init__(self, verdict: JudgeVerdict) -> None:
        self.verdict = verdict
        self.calls: list[list[JudgeRequest]] = []

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        self.calls.append(list(requests))
        return [self.verdict for _ in requests]


class HashEmbedder:
    """Bag-of-words vectors by hashing: cheap, deterministic, good enough to rank passages by overlap."""

    name = "hash-embedder"

    def __init__(self, dims: int = 512) -> None:
        self.dims = dims
        self.batches: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(len(texts))
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _words(text):
                h = int(hashlib.md5(word.encode()).hexdigest(), 16)
                out[row, h % self.dims] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms
