"""Readers and the deterministic by-claim split for the labelled claim/evidence sets.

Used by the judge's training script (``training.train``) and the accuracy bench
(``bench/judge_accuracy.py``); nothing at run time imports it. The data lives outside the
repository (``../shared/data`` by default, see that folder's README).

**Split rule** (the same for every set): ``bucket = int(sha256(normalised claim)[:8], 16) % 100``
where the claim is lower-cased with whitespace collapsed. Buckets ``[0, 45)`` are ``eval``
(never trained on, never used to pick a threshold), ``[45, 62)`` are ``tune`` (never trained
on; thresholds are chosen here) and ``[62, 100)`` are ``train``. Every row of one claim lands
in the same part, so no claim is seen on both sides.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Split = Literal["eval", "tune", "train"]
EVAL_BUCKETS = range(0, 45)
TUNE_BUCKETS = range(45, 62)

_WS = re.compile(r"\s+")


def claim_bucket(claim: str) -> int:
    """The stable 0-99 bucket of a claim (sha256 of the lower-cased, whitespace-collapsed text)."""
    key = _WS.sub(" ", claim.strip().lower())
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % 100


def split_of(claim: str) -> Split:
    """Which part of the by-claim split a claim belongs to: eval (45 %), tune (17 %), train (38 %)."""
    bucket = claim_bucket(claim)
    if bucket in EVAL_BUCKETS:
        return "eval"
    if bucket in TUNE_BUCKETS:
        return "tune"
    return "train"


def _field(value: Any) -> Any:
    """Fields are sometimes stringified Python literals; decode those, pass anything else through."""
    if isinstance(value, str) and value[:1] in "[{(":
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    return value


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield {k: _field(v) for k, v in json.loads(line).items()}


@dataclass(frozen=True)
class WiceClaim:
    """A WiCE claim with the sentences of the whole page it cites."""

    claim: str
    label: str  # supported | partially_supported | not_supported
    sentences: list[str]
    supporting: list[list[int]]  # gold evidence sets (indices into sentences)

    @property
    def supported(self) -> bool:
        return self.label == "supported"


@dataclass(frozen=True)
class Pair:
    """One claim and one piece of evidence with a gold label (supported/contradicted/not_found)."""

    claim: str
    evidence: str
    label: str


@dataclass(frozen=True)
class AttributionRow:
    """An AttributionBench claim and the reference passages it cited."""

    claim: str
    references: list[str]
    attributable: bool
    source: str


def _keep(claim: str, split: Split | None) -> bool:
    return split is None or split_of(claim) == split


def read_wice(data: Path, split: Split | None = None) -> list[WiceClaim]:
    """``wice_claim_dev.jsonl``: claim, label, page sentences and gold supporting sets."""
    out = []
    for r in _rows(data / "wice_claim_dev.jsonl"):
        if _keep(r["claim"], split):
            out.append(
                WiceClaim(
                    claim=r["claim"],
                    label=r["label"],
                    sentences=[str(s) for s in r["evidence"]],
                    supporting=[[int(i) for i in group] for group in (r.get("supporting_sentences") or [])],
                )
            )
    return out


_CF_LABELS = {"SUPPORTS": "supported", "REFUTES": "contradicted", "NOT_ENOUGH_INFO": "not_found"}


def read_climate_fever(data: Path, split: Split | None = None) -> list[Pair]:
    """``climate_fever_dev.jsonl`` as (claim, evidence sentence, pair label) pairs."""
    out = []
    for r in _rows(data / "climate_fever_dev.jsonl"):
        if not _keep(r["claim"], split):
            continue
        for ev in r["evidences"]:
            out.append(Pair(r["claim"], ev["evidence"], _CF_LABELS[ev["evidence_label"]]))
    return out


_FEVER_LABELS = {"SUPPORTS": "supported", "REFUTES": "contradicted", "NOT ENOUGH INFO": "not_found"}


def clean_fever_text(text: str) -> str:
    """FEVER sentences are tokenised (``word , word -LRB- x -RRB-``); undo the common cases."""
    text = text.replace("-LRB-", "(").replace("-RRB-", ")").replace("-LSB-", "[").replace("-RSB-", "]")
    text = text.replace(" -- ", " – ").replace("``", '"').replace("''", '"')
    text = re.sub(r"\s+([.,;:!?)\]%])", r"\1", text)
    text = re.sub(r"([(\[])\s+", r"\1", text)
    text = re.sub(r"\s+'s\b", "'s", text)
    return _WS.sub(" ", text).strip()


def read_fever_symmetric(data: Path, split: Split | None = None) -> list[Pair]:
    """``fever_symmetric_dev.jsonl`` pairs (supported / contradicted), text de-tokenised."""
    out = []
    for r in _rows(data / "fever_symmetric_dev.jsonl"):
        if _keep(r["claim"], split):
            label = _FEVER_LABELS[str(r.get("gold_label") or r["label"])]
            out.append(Pair(clean_fever_text(r["claim"]), clean_fever_text(r["evidence"]), label))
    return out


def read_attributionbench(data: Path, split: Split | None = None) -> list[AttributionRow]:
    """``attributionbench_dev.jsonl``: claim, cited reference passages, attributable or not."""
    out = []
    for r in _rows(data / "attributionbench_dev.jsonl"):
        if _keep(r["claim"], split):
            refs = r.get("references") or []
            if isinstance(refs, str):
                refs = [refs]
            out.append(
                AttributionRow(
                    claim=r["claim"],
                    references=[str(x) for x in refs if str(x).strip()],
                    attributable=r["attribution_label"] == "attributable",
                    source=str(r.get("src_dataset", "")),
                )
            )
    return out


def wice_page_text(claim: WiceClaim) -> str:
    """The cited page as text: one sentence per paragraph, so the passage splitter packs them."""
    return "\n\n".join(s.strip() for s in claim.sentences if s.strip())
