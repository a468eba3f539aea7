"""The precision/recall curve of ``contradicted`` on a part of the split, for publication.

    python bench/contradiction_curve.py [--split eval] [--data ../shared/data] [--out FILE]

Climate-FEVER and FEVER-Symmetric pairs of the part (default: eval) go once through the full
verifier path with the embedded judge (its default budget), then are re-decided under every
contradiction setting of ``tune_judge.CONTRA_GRID`` (the shipped support settings kept). Each point
gives ``contradicted`` precision and recall on both sets together. The thresholds are chosen on the
tune part only (``bench/tune_judge.py``, whose JSON holds the tune-part curve); this curve shows
where the chosen point lands on data it was not chosen on. Writes
``bench/results/contradiction_pr_eval.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_accuracy import ROOT, contradiction_figures, load_tasks
from tune_judge import CONTRA_GRID, record, verdicts

from guardrail.judges.local import LocalJudge, LocalJudgeConfig


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--split", default="eval", choices=["eval", "tune"])
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "contradiction_pr_eval.json")
    args = p.parse_args(argv)
    if not (args.data / "wice_claim_dev.jsonl").is_file():
        print(f"skipped: no labelled data at {args.data}")
        return 0
    tasks = load_tasks(args.data, args.split)
    pairs = {name: tasks[name] for name in ("climate_fever", "fever_symmetric")}
    recorded = record(LocalJudge(), pairs)
    gold = [t.gold for name in pairs for t in pairs[name]]
    base = LocalJudgeConfig()
    shipped = {k: getattr(base, k) for k in CONTRA_GRID}
    curve = []
    for values in itertools.product(*CONTRA_GRID.values()):
        setting = dict(zip(CONTRA_GRID, values, strict=True))
        config = dataclasses.replace(base, **setting)
        pred = [v.label for name in pairs for v in verdicts(recorded[name], config)]
        curve.append({"setting": setting, "shipped": setting == shipped, **contradiction_figures(gold, pred)})
    curve.sort(key=lambda p: (p["contradicted_recall"] or 0.0, p["contradicted_precision"] or 0.0))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]),
                "split": args.split,
                "sizes": {k: len(v) for k, v in pairs.items()},
                "shipped_setting": shipped,
                "curve": curve,
            },
            indent=2,
        )
        + "\n"
    )
    chosen = next(p for p in curve if p["shipped"])
    print("shipped setting on", args.split, json.dumps(chosen))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
