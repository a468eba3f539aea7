"""Do the embedded judge's labels stay the same with its int8-quantised ONNX graph?

    python bench/int8_agreement.py [--data ../shared/data] [--limit N] [--rounds 1|2]

Every claim of the **eval** part (the same tasks as ``bench/judge_accuracy.py``; ``--limit`` takes
the first N per set) goes through the full verifier path twice, with the judge's float32 ONNX graph
(the default, labels as torch) and with its int8 graph (``LocalJudge(quantize=True)``), and the
final claim labels are compared: agreement per set and overall, the label changes counted, and the
eval figures of each (balanced accuracy on WiCE and AttributionBench, 3-way accuracy on
Climate-FEVER, FEVER-Symmetric accuracy). Also the judge's time for the whole run with each.
Written to ``bench/results/int8_agreement.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from judge_accuracy import binary_metrics, load_tasks, make_verifier, run_tasks, three_way_metrics  # noqa: E402

from guardrail.judges.local import LocalJudge, LocalJudgeConfig  # noqa: E402


def figure(dataset: str, gold: list[str], pred: list[str]) -> float:
    """The set's headline figure: balanced accuracy for the binary sets, accuracy otherwise."""
    if dataset in ("wice", "attributionbench"):
        return float(binary_metrics(gold, pred)["balanced_accuracy"])
    if dataset == "climate_fever":
        return float(three_way_metrics(gold, pred)["accuracy"])
    return sum(g == p for g, p in zip(gold, pred, strict=True)) / max(1, len(gold))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--limit", type=int, default=None, help="first N tasks per set")
    parser.add_argument(
        "--rounds", type=int, choices=(1, 2), default=None, help="LocalJudgeConfig.rounds (default: its default)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "int8_agreement.json")
    args = parser.parse_args()
    if not args.data.is_dir():
        print(f"no data at {args.data}; nothing measured")
        return 0
    tasks = load_tasks(args.data, "eval")
    if args.limit:
        tasks = {name: items[: args.limit] for name, items in tasks.items()}
    labels: dict[str, dict[str, list[str]]] = {}
    seconds: dict[str, float] = {}
    for precision, quantize in (("float32", False), ("int8", True)):
        config = LocalJudgeConfig(backend="onnx", rounds=args.rounds or LocalJudgeConfig.rounds)
        judge = LocalJudge(config=config, quantize=quantize)
        judge.load()
        verifier = make_verifier(judge)
        started = time.perf_counter()
        labels[precision] = {name: run_tasks(verifier, items) for name, items in tasks.items()}
        seconds[precision] = time.perf_counter() - started
        print(f"{precision}: {seconds[precision]:.1f} s", flush=True)
    result: dict[str, object] = {
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "tasks": {name: len(items) for name, items in tasks.items()},
        "seconds": seconds,
        "cpus": os.cpu_count(),
    }
    per_set: dict[str, dict[str, object]] = {}
    same = total = 0
    for name, items in tasks.items():
        full, small = labels["float32"][name], labels["int8"][name]
        agree = sum(a == b for a, b in zip(full, small, strict=True))
        same, total = same + agree, total + len(items)
        gold = [t.gold for t in items]
        changes = Counter(f"{a}->{b}" for a, b in zip(full, small, strict=True) if a != b)
        per_set[name] = {
            "agreement": round(agree / max(1, len(items)), 4),
            "changes": dict(changes.most_common()),
            "figure_float32": round(figure(name, gold, full), 4),
            "figure_int8": round(figure(name, gold, small), 4),
        }
        print(f"{name:18} agreement {agree}/{len(items)}  changes {dict(changes)}  {per_set[name]}", flush=True)
    result["per_set"] = per_set
    result["agreement"] = round(same / max(1, total), 4)
    print(f"overall agreement {same}/{total} = {same / max(1, total):.4f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
