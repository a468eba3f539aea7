"""Where the embedded judge loses WiCE's supported claims: scored and missed, or never scored.

    python bench/wice_gate.py [--data ../shared/data] [--parts tune,train]

Every WiCE claim of the given parts of the by-claim split (never ``eval``: this is for choosing
what to build) goes through the full verifier path (``bench/judge_accuracy.py``'s tasks). For each
gold label and verdict it counts whether the judge scored any candidate, and if it did, the best
entailment probability among them (below 0.3, below 0.5, 0.5 and above). For claims nothing was
scored for, it lists which lexical veto (``guardrail.judges.decision._support_problem``) turned
away each candidate the judge built: ``unrelated`` (too few of the claim's words), ``number``,
``entity``, ... A supported claim whose every candidate is vetoed is a miss no threshold can undo.
Written to ``bench/results/wice_gate.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from judge_accuracy import RecordingJudge, load_tasks, make_verifier, run_reports  # noqa: E402

from guardrail.core.schema import JudgeRequest  # noqa: E402
from guardrail.judges.candidates import Scored, build_candidates  # noqa: E402
from guardrail.judges.decision import _support_problem  # noqa: E402
from guardrail.judges.local import LocalJudge  # noqa: E402


def bucket(scored: Scored | None) -> str:
    """``unscored``, or the best entailment probability of the scored candidates, bucketed."""
    best = max((float(c.probs[0]) for c in scored.candidates), default=None) if scored else None
    if best is None:
        return "unscored"
    return "<0.3" if best < 0.3 else "<0.5" if best < 0.5 else ">=0.5"


def vetoes(scored: Scored, judge: LocalJudge) -> dict[str, int]:
    """How many of the candidates the judge builds for this request each veto turns away."""
    plan = build_candidates(JudgeRequest(claim=scored.claim, passages=scored.passages), judge.config)
    bare = Scored(claim=scored.claim, passages=list(scored.passages), candidates=[])
    return dict(Counter(str(_support_problem(bare, c, judge.config)) for c in plan))


def measure(data: Path, part: str) -> dict[str, Any]:
    tasks = load_tasks(data, part)["wice"]
    judge = LocalJudge()
    recorder = RecordingJudge(judge)
    recorder.load()
    reports = run_reports(make_verifier(recorder), tasks, 64)
    by_claim = {s.claim: s for s in recorder.sequence}
    table: Counter[str] = Counter()
    unscored_supported: list[dict[str, Any]] = []
    for task, report in zip(tasks, reports, strict=True):
        scored = by_claim.get(task.claim.strip())
        where = bucket(scored)
        table[f"{task.gold} -> {report.overall} ({where})"] += 1
        if task.gold == "supported" and report.overall != "supported" and where == "unscored" and scored:
            unscored_supported.append({"claim": task.claim[:160], "vetoes": vetoes(scored, judge)})
    supported = sum(1 for t in tasks if t.gold == "supported")
    found = sum(1 for t, r in zip(tasks, reports, strict=True) if t.gold == "supported" and r.overall == "supported")
    rejected = sum(1 for t, r in zip(tasks, reports, strict=True) if t.gold != "supported" and r.overall != "supported")
    return {
        "claims": len(tasks),
        "supported_recall": round(found / max(1, supported), 4),
        "not_supported_recall": round(rejected / max(1, len(tasks) - supported), 4),
        "by_gold_verdict_and_scoring": dict(sorted(table.items())),
        "supported_never_scored": unscored_supported,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--parts", default="tune,train", help="comma-separated parts (eval is refused)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "wice_gate.json")
    args = parser.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    if "eval" in parts:
        parser.error("the eval part is for measuring, not for choosing what to build: use tune or train")
    if not args.data.is_dir():
        print(f"no data at {args.data}; nothing measured")
        return 0
    result: dict[str, Any] = {"command": "python bench/wice_gate.py --parts " + ",".join(parts)}
    for part in parts:
        figures = measure(args.data, part)
        result[part] = figures
        print(
            f"{part}: {figures['claims']} WiCE claims, supported recall {figures['supported_recall']}, "
            f"not-supported recall {figures['not_supported_recall']}"
        )
        for key, count in figures["by_gold_verdict_and_scoring"].items():
            print(f"  {count:4d}  {key}")
        print(f"  supported claims never scored (every candidate vetoed): {len(figures['supported_never_scored'])}")
        for item in figures["supported_never_scored"]:
            print(f"    {item['vetoes']}  {item['claim']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
