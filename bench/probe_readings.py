"""Whether the embedded judge's model tells right citations from wrong ones on written probes, before
any decision: per gold label, what the model reads of the claim and how close the embedder puts it.

    python bench/probe_readings.py [--cases FILE ...] [--model FOLDER] [--out bench/results/probe_readings]

For each probe file (default: the four committed ones, ``bench/written_cases.json``,
``fresh_cases.json``, ``probe4_cases.json`` and ``probe5_cases.json``) and each gold label
(supported, contradicted, not_found), over its pairs:

* ``max_entailment``: the model's highest entailment probability among everything it reads for the
  claim on its page in both rounds (sentences with their topic, alone, in windows): median, and how
  many pairs reach 0.5 and 0.8;
* ``max_contradiction``: the same for contradiction;
* ``cosine``: the embedder's (all-MiniLM-L6-v2) highest cosine similarity between the claim and a
  sentence of the page, the similarity retrieval ranks by.

A reader that separates right citations from wrong ones reads the supported pairs' entailment
higher than the contradicted pairs'. Written to ``--out`` as ``.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from written_cases import read_cases  # noqa: E402

PROBES = ("written_cases.json", "fresh_cases.json", "probe4_cases.json", "probe5_cases.json")
GOLD = ("supported", "contradicted", "not_found")
RESULTS = ROOT / "bench" / "results" / "probe_readings"


def _summary(values: list[float]) -> dict[str, Any]:
    return {
        "median": round(statistics.median(values), 3) if values else None,
        "at_least_0.5": sum(v >= 0.5 for v in values),
        "at_least_0.8": sum(v >= 0.8 for v in values),
    }


def readings(cases: list[dict[str, str]], model: Path | None = None) -> dict[str, dict[str, Any]]:
    """Per gold label: the model's highest entailment and contradiction (the shipped weights, or
    ``model``'s), and the embedder's highest cosine, summarised over the pairs (see the module
    docstring)."""
    from guardrail import JudgeRequest
    from guardrail.core.extract.sentences import split_sentences
    from guardrail.judges.local import LocalJudge
    from guardrail.retrieval import MiniLMEmbedder

    judge = LocalJudge(model_path=model) if model is not None else LocalJudge()
    embedder = MiniLMEmbedder()
    requests = [JudgeRequest(claim=c["claim"], passages=[c["page"]], title=c.get("title") or None) for c in cases]
    scored = judge.score(requests, rounds=2, settle=False)
    per_gold: dict[str, dict[str, list[float]]] = {g: {"ent": [], "con": [], "cos": []} for g in GOLD}
    for case, s in zip(cases, scored, strict=True):
        read = [c.probs for c in s.candidates if c.scored]
        sentences = split_sentences(case["page"])
        vectors = embedder.embed([case["claim"], *sentences])
        row = per_gold[case["gold"]]
        row["ent"].append(max((float(p[0]) for p in read), default=0.0))
        row["con"].append(max((float(p[2]) for p in read), default=0.0))
        row["cos"].append(float((vectors[1:] @ vectors[0]).max()) if sentences else 0.0)
    return {
        gold: {
            "pairs": len(v["ent"]),
            "max_entailment": _summary(v["ent"]),
            "max_contradiction": _summary(v["con"]),
            "cosine_median": round(statistics.median(v["cos"]), 3) if v["cos"] else None,
        }
        for gold, v in per_gold.items()
    }


def markdown(results: dict[str, dict[str, dict[str, Any]]], command: str = "python bench/probe_readings.py") -> str:
    lines = [
        "# What the model reads of written probes, per gold label",
        "",
        "Highest entailment and contradiction over everything read for the claim (both rounds), and the",
        f"embedder's highest claim/sentence cosine. `{command}`",
        "",
        "| probe | gold | pairs | entailment median | >= 0.5 | >= 0.8 | contradiction median | >= 0.5 | >= 0.8 "
        "| cosine median |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for probe, per_gold in results.items():
        for gold, r in per_gold.items():
            e, c = r["max_entailment"], r["max_contradiction"]
            lines.append(
                f"| {probe} | {gold} | {r['pairs']} | {e['median']} | {e['at_least_0.5']} | {e['at_least_0.8']} "
                f"| {c['median']} | {c['at_least_0.5']} | {c['at_least_0.8']} | {r['cosine_median']} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, nargs="*", help="probe files (default: the four committed)")
    parser.add_argument("--model", type=Path, default=None, help="model folder (default: the package's)")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"default {RESULTS.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    files = args.cases or [ROOT / "bench" / name for name in PROBES]
    results = {path.name: readings(read_cases(path)[0], args.model) for path in files}
    text = markdown(
        results, " ".join(["python bench/probe_readings.py", *(argv if argv is not None else sys.argv[1:])])
    )
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
