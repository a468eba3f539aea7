"""The embedded models on ONNX Runtime: the same probabilities and vectors as torch, an export made
once per weights and reused, and torch when ONNX Runtime is missing."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from guardrail import _onnx_backend as onnx_backend
from guardrail.judges.local import MODEL_DIR, LocalJudge, LocalJudgeConfig
from guardrail.retrieval import MiniLMEmbedder

ROOT = Path(__file__).resolve().parents[1]
PREMISES = [
    "At sea level, pure water boils at 100 degrees Celsius (212 degrees Fahrenheit).",
    "Kate Winslet and Leonardo DiCaprio star as members of different social classes.",
    "The Alder River is 121 kilometres long and flows into the Grey Sea.",
]
CLAIMS = ["Water boils at 100 degrees Celsius at sea level.", "Brad Pitt starred in it.", "The river is 300 km long."]


@pytest.mark.slow
def test_the_judge_on_onnx_gives_torchs_probabilities() -> None:
    onnx = LocalJudge(config=LocalJudgeConfig(backend="onnx")).predict(PREMISES, CLAIMS)
    # float32 on both: where the CPU multiplies bfloat16 natively, the torch default is bfloat16 (1e-3 apart)
    torch = LocalJudge(config=LocalJudgeConfig(backend="torch", dtype="float32")).predict(PREMISES, CLAIMS)
    assert onnx.shape == (3, 3) and np.allclose(onnx, torch, atol=1e-4)
    assert list(onnx.argmax(axis=1)) == list(torch.argmax(axis=1))


@pytest.mark.slow
def test_the_embedder_on_onnx_gives_torchs_vectors() -> None:
    texts = [*PREMISES, "a", "Water " * 400]  # a one-token text and one longer than the 256-token cut
    onnx = MiniLMEmbedder(backend="onnx").embed(texts)
    torch = MiniLMEmbedder(backend="torch").embed(texts)
    assert onnx.shape == (5, 384)
    assert float((onnx * torch).sum(axis=1).min()) > 0.9999
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_an_export_is_made_once_per_weights_and_reused() -> None:
    onnx_backend.session_for(MODEL_DIR, "classifier")
    exported = list(
        (onnx_backend.user_cache_dir() / "onnx").glob(f"model-{onnx_backend.weights_digest(MODEL_DIR)}-*.onnx")
    )
    assert exported
    stamps = {p: p.stat().st_mtime_ns for p in exported}
    onnx_backend._SESSIONS.clear()  # a new process would find the file: the session is rebuilt from it
    onnx_backend.session_for(MODEL_DIR, "classifier")
    assert {p: p.stat().st_mtime_ns for p in exported} == stamps


def tiny_judge(folder: Path) -> Path:
    """A one-layer BERT cross-encoder with the judge's tokenizer and labels: exported in seconds."""
    import shutil

    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, num_labels=3)
    BertForSequenceClassification(config).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(MODEL_DIR / name, folder / name)
    return folder


@pytest.mark.slow
def test_the_first_runs_export_says_so_and_how_long_it_took(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # a machine that never exported it
    model = tiny_judge(tmp_path / "tiny")
    caplog.set_level(logging.INFO, logger="guardrail.onnx")
    onnx_backend.session_for(model, "classifier")
    said = [r.getMessage() for r in caplog.records if r.name == "guardrail.onnx" and r.levelno == logging.INFO]
    assert said[0] == f"preparing the judge model (first run only, {onnx_backend.PREPARE_ESTIMATE})"
    assert re.fullmatch(r"the judge model is ready \(\d+\.\d s; kept in .+\)", said[1]), said
    caplog.clear()
    onnx_backend._SESSIONS.clear()  # a new process: the export is found on disk, nothing to say
    onnx_backend.session_for(model, "classifier")
    assert [r for r in caplog.records if r.name == "guardrail.onnx"] == []


@pytest.mark.slow
def test_an_idle_model_leaves_the_cores_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its threads sleep between runs: spinning ones took the cores from the next model's run."""
    import time

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    session = onnx_backend.session_for(tiny_judge(tmp_path / "tiny"), "classifier", threads=2)
    feeds = {name: np.ones((8, 48), dtype=np.int64) for name in ("input_ids", "attention_mask", "token_type_ids")}
    idle = []
    for _ in range(3):
        onnx_backend.run(session, feeds)
        started = time.process_time()
        time.sleep(0.1)
        idle.append(time.process_time() - started)
    assert min(idle) < 0.01, idle  # spinning workers burn about 35 ms of CPU in these 100 ms


@pytest.mark.slow
def test_the_int8_graph_scales_each_output_channel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One scale per weight column: a single scale per matrix moved the judge's probabilities three
    times as far from float32's and raised its entailment across the board (bench figures)."""
    import onnx
    from onnx import numpy_helper

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model = tiny_judge(tmp_path / "tiny")
    float32 = onnx_backend.session_for(model, "classifier")
    int8 = onnx_backend.session_for(model, "classifier", "int8")
    exported = list((tmp_path / "cache").rglob("*.int8pc.onnx"))
    assert len(exported) == 1
    graph = onnx.load(str(exported[0])).graph
    weights = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    # a MatMulInteger's fourth input is its weight's zero point: one per column, or one in all
    zero_points = [weights[n.input[3]] for n in graph.node if n.op_type == "MatMulInteger"]
    assert zero_points, "no int8 matrix products in the graph"
    assert all(point.size > 1 for point in zero_points), [point.shape for point in zero_points]
    feeds = {name: np.ones((2, 12), dtype=np.int64) for name in ("input_ids", "attention_mask", "token_type_ids")}
    assert np.allclose(onnx_backend.run(int8, feeds), onnx_backend.run(float32, feeds), atol=0.05)


def test_the_digest_follows_the_weights(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"weights one")
    first = onnx_backend.weights_digest(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"weights two")
    assert onnx_backend.weights_digest(tmp_path) != first


def test_without_onnx_runtime_the_models_run_on_torch() -> None:
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"  # as if ONNX Runtime were not installed
        "from guardrail.judges.local import LocalJudge\n"
        "from guardrail.retrieval import MiniLMEmbedder\n"
        "print(LocalJudge().backend, MiniLMEmbedder().backend)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.stdout.split() == ["torch", "torch"], result.stderr
    assert LocalJudge().backend == "onnx" and MiniLMEmbedder().backend == "onnx"  # here it is installed


def test_a_bad_backend_name_is_refused() -> None:
    with pytest.raises(ValueError, match="backend"):
        MiniLMEmbedder(backend="tensorflow")
    with pytest.raises(ValueError, match="backend"):
        _ = LocalJudge(config=LocalJudgeConfig(backend="tensorflow")).backend
