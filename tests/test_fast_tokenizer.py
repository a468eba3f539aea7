"""The embedded models' tokenizers read with ``tokenizers`` give the transformers tokenizer's ids."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from guardrail import _fast_tokenizer as fast_tokenizer
from guardrail.judges.local import MODEL_DIR
from guardrail.retrieval import offline_minilm_path

pytest.importorskip("transformers", reason="the [local] extra is not installed")
from transformers import AutoTokenizer

TEXTS = [
    "Water boils at 100 degrees Celsius at sea level.",
    "Zoë Saldaña starred in Avatar (2009); the café’s crème brûlée costs €4.50.",
    "東京は日本の首都です。 Straße, ÅNGSTRÖM and naïve façades.",
    "Emoji 🚀 and tabs\tand\u00a0no-break spaces, URLs https://example.org/a?b=c#d.",
    "word " * 400,  # longer than any limit: truncated
    "",
]


@pytest.mark.parametrize("model", ["judge", "embedder"])
def test_fast_ids_are_the_transformers_ids(model: str) -> None:
    path = MODEL_DIR if model == "judge" else Path(offline_minilm_path())
    reference = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    for limit in (256, 64):
        expected = reference(TEXTS, truncation=True, max_length=limit)["input_ids"]
        assert fast_tokenizer.encode_texts(path, TEXTS, limit) == expected
        firsts, seconds = TEXTS, TEXTS[::-1]
        pairs = reference(firsts, seconds, truncation="longest_first", max_length=limit)
        ids, types = fast_tokenizer.encode_pairs(path, firsts, seconds, limit)
        assert ids == pairs["input_ids"] and types == pairs["token_type_ids"]
        assert max(len(i) for i in ids) == limit  # the long texts were cut, longest first


def test_a_model_folder_without_tokenizer_json_falls_back_to_transformers(tmp_path: Path) -> None:
    source = Path(offline_minilm_path())
    folder = tmp_path / "model"  # a slow-tokenizer folder (vocab.txt, no tokenizer.json) of one's own
    folder.mkdir()
    for item in source.iterdir():
        if item.name != "tokenizer.json":
            (folder / item.name).symlink_to(item)
    assert not (folder / "tokenizer.json").exists() and (folder / "vocab.txt").is_file()
    assert fast_tokenizer.encode_texts(folder, TEXTS, 128) == fast_tokenizer.encode_texts(source, TEXTS, 128)
    assert fast_tokenizer._fast(folder, 128) is None  # it did fall back


def test_judging_with_onnx_imports_neither_torch_nor_transformers() -> None:
    pytest.importorskip("onnxruntime", reason="ONNX Runtime is not installed")
    code = (
        "import sys\n"
        "from guardrail import JudgeRequest\n"
        "from guardrail.judges.local import LocalJudge, LocalJudgeConfig\n"
        "from guardrail.retrieval import MiniLMEmbedder\n"
        "judge = LocalJudge(config=LocalJudgeConfig(backend='onnx'))\n"
        "judge.load()\n"
        "print(judge.judge_sync([JudgeRequest(claim='Water boils at 100 degrees Celsius.',"
        " passages=['At sea level water boils at 100 degrees Celsius.'])])[0].label)\n"
        "MiniLMEmbedder(backend='onnx').embed(['water'])\n"
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.split("\n")[:2] == ["supported", "[]"], done.stdout + done.stderr
