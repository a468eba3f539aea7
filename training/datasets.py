"""Readers and the deterministic by-claim split for the labelled claim/evidence sets.

Used by the judge's training script (``training.train``) and the accuracy bench
(``bench/judge_accuracy.py``); nothing at run time imports it. The data lives outside the
repository (``../shared/data`` by default, see that folder's README).

**Split rule** (the same for every set): ``bucket = int(sha256(normalised claim)[:8], 16) % 100``
where the claim is lower-cased with whitespace collapsed. Buckets ``[0, 45)`` are ``eval``
(never trained on, never used to pick a threshold), ``[45, 62)`` are ``tune`` (never trained
on; thresholds are chosen here) and ``[62, 100)`` are ``train``. Every row of one claim lands
in the same part, so no claim is seen on both sides.

The train part has two sub-parts (:func:`in_part`): ``nli`` (buckets ``[75, 100)``), what the
judge's model is trained on, and ``fit`` (buckets ``[62, 75)``), never shown to the model, on which
the judge's decision (a classifier over the model's scores and the lexical checks) is fitted: a
model's scores on its own training pairs are overconfident, so a decision fitted on them would
trust the model too much.
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
Part = Literal["eval", "tune", "train", "fit", "nli"]
EVAL_BUCKETS = range(0, 45)
TUNE_BUCKETS = range(45, 62)
FIT_BUCKETS = range(62, 75)
NLI_BUCKETS = range(75, 100)

_WS = re.compile(r"\s+")


def labelled_data_present(data: Path) -> bool:
    """Whether ``data`` holds the shared labelled sets; where it does not, says so on stdout (the
    benches that read them then skip, as on a machine without ``../shared/data``)."""
    if (data / "climate_fever_dev.jsonl").is_file():
        return True
    print(f"skipped: no labelled data in {data} (see ../shared/data/README.md)")
    return False


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


def in_part(claim: str, part: Part) -> bool:
    """Whether a claim belongs to ``part``: a part of the split, or a sub-part of train (``fit``,
    ``nli``)."""
    if part == "fit":
        return claim_bucket(claim) in FIT_BUCKETS
    if part == "nli":
        return claim_bucket(claim) in NLI_BUCKETS
    return split_of(claim) == part


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


def _keep(claim: str, split: Part | None) -> bool:
    return split is None or in_part(claim, split)


def read_wice(data: Path, split: Part | None = None) -> list[WiceClaim]:
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


@dataclass(frozen=True)
class ClimateEvidence:
    """One Climate-FEVER evidence sentence, its Wikipedia article and its pair label."""

    evidence: str
    article: str
    label: str


@dataclass(frozen=True)
class ClimateRow:
    """A Climate-FEVER claim with its five evidence sentences."""

    claim: str
    evidences: list[ClimateEvidence]


def read_climate_fever_rows(data: Path, split: Part | None = None) -> list[ClimateRow]:
    """``climate_fever_dev.jsonl`` by claim, each evidence with its article title."""
    out = []
    for r in _rows(data / "climate_fever_dev.jsonl"):
        if _keep(r["claim"], split):
            evs = [
                ClimateEvidence(ev["evidence"], str(ev.get("article") or ""), _CF_LABELS[ev["evidence_label"]])
                for ev in r["evidences"]
            ]
            out.append(ClimateRow(r["claim"], evs))
    return out


def read_climate_fever(data: Path, split: Part | None = None) -> list[Pair]:
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


def read_fever_symmetric(data: Path, split: Part | None = None) -> list[Pair]:
    """``fever_symmetric_dev.jsonl`` pairs (supported / contradicted), text de-tokenised."""
    out = []
    for r in _rows(data / "fever_symmetric_dev.jsonl"):
        if _keep(r["claim"], split):
            label = _FEVER_LABELS[str(r.get("gold_label") or r["label"])]
            out.append(Pair(clean_fever_text(r["claim"]), clean_fever_text(r["evidence"]), label))
    return out


def read_attributionbench(data: Path, split: Part | None = None) -> list[AttributionRow]:
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


# -- the benches' tasks ------------------------------------------------------------

_META_TITLE = re.compile(r"^\(meta data\)\s*TITLE:\s*(.+)$", re.IGNORECASE)
_REF_TITLE = re.compile(r"^\s*Title:\s*(.+?)\s*\n", re.IGNORECASE)


@dataclass(frozen=True)
class Task:
    """One claim, the evidence text(s) it cites, the gold label and the evidence's title, if any.

    ``gold``: supported | contradicted | not_found, or, on the binary sets (WiCE, AttributionBench),
    supported | not_supported."""

    claim: str
    evidence: list[str]
    gold: str
    title: str | None = None


def wice_title(claim: WiceClaim) -> str | None:
    """The page title WiCE keeps as the page's first line ("(meta data) TITLE: ...")."""
    for s in claim.sentences[:3]:
        m = _META_TITLE.match(s.strip())
        if m:
            return m.group(1).strip()
    return None


def _unrelated_claims(a: str, b: str) -> bool:
    """Whether two claims are about different things: no name and few words in common."""
    from guardrail.judges import _checks as checks

    if set(checks.entities(a)) & set(checks.entities(b)):
        return False
    return checks.overlap(a, b) < 0.2 and checks.overlap(b, a) < 0.2


def cross_claim_tasks(wice: list[Task], climate: list[Task], fever: list[Task]) -> list[Task]:
    """Claims paired with another claim's page or evidence (gold ``not_found``): each WiCE claim with
    the page of the next WiCE claim about something else (no shared name, under 20 % shared words),
    each Climate-FEVER claim with the first evidence of the next such claim, each FEVER-Symmetric
    claim with the next such claim's evidence (sets in file order, the same part of the split, so
    nothing outside that part is used)."""
    out: list[Task] = []
    for items, per_claim in ((wice, False), (climate, True), (fever, False)):
        firsts: list[Task] = []
        for t in items:
            if not per_claim or not firsts or firsts[-1].claim != t.claim:
                firsts.append(t)
        for i, t in enumerate(firsts):
            for k in range(1, len(firsts)):
                other = firsts[(i + k) % len(firsts)]
                if other.evidence != t.evidence and _unrelated_claims(t.claim, other.claim):
                    out.append(Task(t.claim, other.evidence, "not_found", other.title))
                    break
    return out


def bench_tasks(data: Path, part: Part) -> dict[str, list[Task]]:
    """The four sets and the cross-claim pairs as bench tasks for one part, each with its evidence's
    title where the set gives one (Climate-FEVER's article, WiCE's page title, AttributionBench's
    reference title; FEVER-Symmetric gives none)."""
    wice = [
        Task(c.claim, [wice_page_text(c)], "supported" if c.supported else "not_supported", wice_title(c))
        for c in read_wice(data, part)
    ]
    climate = [
        Task(row.claim, [ev.evidence], ev.label, ev.article or None)
        for row in read_climate_fever_rows(data, part)
        for ev in row.evidences
    ]
    fever = [Task(p.claim, [p.evidence], p.label) for p in read_fever_symmetric(data, part)]
    attribution = []
    for r in read_attributionbench(data, part):
        if not r.references:
            continue
        m = _REF_TITLE.match(r.references[0])
        text = "\n\n".join(_REF_TITLE.sub("", ref, count=1) for ref in r.references)
        attribution.append(Task(r.claim, [text], "supported" if r.attributable else "not_supported", m and m.group(1)))
    return {
        "wice": wice,
        "climate_fever": climate,
        "fever_symmetric": fever,
        "attributionbench": attribution,
        "cross_claim": cross_claim_tasks(wice, climate, fever),
    }
