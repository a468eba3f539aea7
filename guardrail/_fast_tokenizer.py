"""The embedded models' tokenizers, read straight from their ``tokenizer.json`` with ``tokenizers``.

The same ids as the transformers tokenizer of the same folder (``tests/test_fast_tokenizer.py``
compares them), without importing transformers or torch: a process that only runs the ONNX graphs
(a Ray actor, a CLI call, a service worker) starts about three seconds sooner on 2 cores. A model
folder without a ``tokenizer.json`` (a user's own model) falls back to transformers.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["encode_pairs", "encode_texts"]

_LOCK = threading.Lock()
_TOKENIZERS: dict[tuple[str, int], Any] = {}


def _fast(model_dir: Path, max_length: int) -> Any:
    """The folder's ``tokenizers.Tokenizer``, truncating to ``max_length`` (longest first), never
    padding; None without a ``tokenizer.json``. Loaded once per process and length."""
    key = (str(model_dir), max_length)
    with _LOCK:
        if key not in _TOKENIZERS:
            path = model_dir / "tokenizer.json"
            tokenizer = None
            if path.is_file():
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(path))
                # The file's own settings (MiniLM's pads to 128) are not what the models were run with.
                tokenizer.no_padding()
                tokenizer.enable_truncation(max_length, strategy="longest_first")
            _TOKENIZERS[key] = tokenizer
        return _TOKENIZERS[key]


def _transformers(model_dir: Path) -> Any:
    with _LOCK:
        key = (str(model_dir), -1)
        if key not in _TOKENIZERS:
            from transformers import AutoTokenizer

            _TOKENIZERS[key] = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        return _TOKENIZERS[key]


def encode_pairs(
    model_dir: Path, firsts: Sequence[str], seconds: Sequence[str], max_length: int
) -> tuple[list[list[int]], list[list[int]]]:
    """``input_ids`` and ``token_type_ids`` of each (first, second) pair, truncated longest first to
    ``max_length`` tokens, unpadded."""
    fast = _fast(model_dir, max_length)
    if fast is None:
        enc = _transformers(model_dir)(list(firsts), list(seconds), truncation="longest_first", max_length=max_length)
        return enc["input_ids"], enc["token_type_ids"]
    encodings = fast.encode_batch(list(zip(firsts, seconds, strict=True)))
    return [e.ids for e in encodings], [e.type_ids for e in encodings]


def encode_texts(model_dir: Path, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """``input_ids`` of each text, truncated to ``max_length`` tokens, unpadded."""
    fast = _fast(model_dir, max_length)
    if fast is None:
        return _transformers(model_dir)(list(texts), truncation=True, max_length=max_length)["input_ids"]
    return [e.ids for e in fast.encode_batch(list(texts))]
