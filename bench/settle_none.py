"""What deciding ``not_found`` after the first round costs: the labels the two-round judge gives
with ``LocalJudgeConfig.settle_none`` at several values, against never settling that way (0), and
how many requests still read the second round.

    python bench/settle_none.py [--model guardrail/judges/model] [--data ../shared/data]
                                [--cache artifacts/fit] [--values 0.1,0.15,0.2,0.3]

A request whose first round gives support and contradiction each less probable than
``settle_none`` skips the second round (:func:`guardrail.judges._decision.settled`). Every claim of
the tune and eval parts goes through the verifier as the accuracy bench runs it, the judge reading
its whole budget (``training.fit_decision.recorded_rows``, cached per weights in ``--cache``); each
request's first-round and both-round features then give its label as the judge would decide it
(``training.fit_decision.runtime_probabilities``) under each value, with the shipped decision and
thresholds. Printed and written to ``bench/results/settle_none.{json,md}``: per part and value, the
labels that differ from ``settle_none=0``, the share of requests that read the second round, and
the figures of ``training.fit_decision.figures`` (the issue's targets).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from hand_cases import written  # noqa: E402

SHOWN = (
    "wice_balanced_accuracy",
    "mean_balanced_accuracy",
    "contradicted_precision",
    "contradicted_recall",
    "supported_read_contradicted",
    "refuted_read_supported",
    "cross_claim_supported",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python bench/settle_none.py", description=__doc__.split("\n")[0])
    p.add_argument("--model", type=Path, default=ROOT / "guardrail" / "judges" / "model")
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--cache", type=Path, default=ROOT / "artifacts" / "fit")
    p.add_argument("--values", default="0.1,0.15,0.2,0.3", help="settle_none values to try, comma-separated")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "settle_none")
    args = p.parse_args(argv)
    values = [float(v) for v in args.values.split(",")]
    if any(not 0.0 < v <= 1.0 for v in values):
        p.error(f"--values must lie in (0, 1], not {args.values}")
    from training import fit_decision as fd

    judge = fd.offline_judge_for_data(args.model, args.data)
    if judge is None:
        return 0
    from guardrail.judges._decision import load_decision

    t0 = time.time()
    config = judge.config
    digest = fd.weights_digest(args.model)
    decision = load_decision(args.model, 2)
    t_con, t_sup, t_conflict = decision.contradict_threshold, decision.support_threshold, decision.conflict_threshold
    result: dict[str, Any] = {"command": "python bench/settle_none.py " + " ".join(argv or sys.argv[1:]), "parts": {}}
    for part in ("tune", "eval"):
        rows = fd.recorded_rows(judge, args.data, part, args.cache, digest, synthetic=False)
        first = decision.probabilities(np.vstack([r.first for r in rows]))
        full = decision.probabilities(np.vstack([r.full for r in rows]))
        bars = fd._bar(rows, t_con, t_conflict)

        decided = []
        for none in [0.0, *values]:
            p_read = fd.runtime_probabilities(first, full, config.settle, t_con, t_sup, rows, t_conflict, none)
            settled, _ = fd.settled_rows(first, config.settle, t_con, t_sup, rows, t_conflict, none)
            decided.append((none, fd.labels(p_read, bars, t_sup), settled))
        base = decided[0][1]  # never settling as not_found: what the others are compared with
        runs = []
        for none, labels, settled in decided:
            run = {
                "settle_none": none,
                "labels_changed": int((labels != base).sum()),
                "second_round_share": round(float(1.0 - settled.mean()), 4),
            }
            run.update({k: fd.figures(rows, labels).get(k) for k in SHOWN})
            runs.append(run)
        result["parts"][part] = {"requests": len(rows), "runs": runs}
    result["seconds"] = round(time.time() - t0, 1)
    lines = [
        "# Deciding not_found after the first round (`LocalJudgeConfig.settle_none`)",
        "",
        f"Command: `{result['command'].strip()}`; shipped decision, settle {config.settle}.",
        "",
    ]
    for part, got in result["parts"].items():
        lines += [f"## {part} part ({got['requests']} requests)", ""]
        lines.append("| settle_none | labels changed | read a second round | " + " | ".join(SHOWN) + " |")
        lines.append("| --- " * (3 + len(SHOWN)) + "|")
        for run in got["runs"]:
            cells = [run["settle_none"], run["labels_changed"], f"{run['second_round_share']:.1%}"]
            lines.append("| " + " | ".join(str(c) for c in [*cells, *(run[k] for k in SHOWN)]) + " |")
        lines.append("")
    return written(args.out, result, "\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
