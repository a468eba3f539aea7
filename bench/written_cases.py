"""The embedded judge on 90 claim/page pairs a helper wrote without reading it, beside word overlap.

Study abstracts (a finding, a null result, the opposite direction, another value, only the aim,
another outcome or population), health-information and encyclopedia pages, 30 pairs per gold
label (``bench/written_cases.json``). Written on 4 December 2026 as a hold-out for issue 21's
failure kinds; changes made after it was written were checked on it, so it is a probe, not a data
set (``bench/judge_accuracy.py`` says how often on real pages).

    python bench/written_cases.py [--out bench/results/written_cases] [--model FOLDER] [--cases FILE]

Prints, for the shipped judge (``LocalJudge()``; ``--model``: another folder's weights and
decision) and the plain rule "70 % of the claim's content words are on the page", wrong citations
caught, wrong ones passed as ``supported``, right ones confirmed and right ones flagged
``contradicted``, overall and per kind. ``--cases`` reads another file of such pairs instead (a JSON
list of ``{"claim", "title", "page", "gold", "kind"}``, or an object holding it as ``"cases"``): a
fresh probe, written apart from the judge.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from hand_cases import judged, overlap_label, tally, written  # noqa: E402

_DATA = json.loads((ROOT / "bench" / "written_cases.json").read_text(encoding="utf-8"))
CASES: list[dict[str, str]] = _DATA["cases"]
KINDS: list[str] = _DATA["kinds"]


def _row(name: str, t: dict[str, Any], flagged: int) -> str:
    return (
        f"| {name} | {t['wrong_caught']} / {t['wrong_cited']} | {t['wrong_passed']} / {t['wrong']} | "
        f"{t['right_confirmed']} / {t['right']} | {flagged} / {t['right']} | {t['exact']} / {t['cases']} |"
    )


def read_cases(path: Path) -> tuple[list[dict[str, str]], list[str]]:
    """The pairs of a written probe file (``training.fit_decision.read_written_pairs``, which names a
    malformed one) and its kinds in order of appearance."""
    from training.fit_decision import read_written_pairs

    cases = read_written_pairs(path)
    for c in cases:
        c.setdefault("kind", "")
        c.setdefault("title", "")
    return cases, list(dict.fromkeys(c["kind"] for c in cases))


def _flagged(gold: Sequence[str], labels: Sequence[str]) -> int:
    return sum(g == "supported" and x == "contradicted" for g, x in zip(gold, labels, strict=True))


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python bench/written_cases.py", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=None, help="default bench/results/written_cases[_<cases file>]")
    p.add_argument("--model", type=Path, default=None, help="model folder (default: the package's)")
    p.add_argument("--cases", type=Path, default=None, help="another file of written pairs (default: the committed)")
    args = p.parse_args(argv)
    cases, kinds = (CASES, KINDS) if args.cases is None else read_cases(args.cases)
    stem = "written_cases" if args.cases is None else f"written_cases_{args.cases.stem}"
    out = args.out or ROOT / "bench" / "results" / stem
    name, verdicts = judged([(c["claim"], c["page"], c["title"]) for c in cases], args.model)
    gold = [c["gold"] for c in cases]
    local = [v.label for v in verdicts]
    overlap = [overlap_label(c["claim"], c["page"], c["title"]) for c in cases]
    head = (
        "| judge | wrong caught | wrong passed as supported | right confirmed | right flagged contradicted "
        "| label right |"
    )
    lines = [head, "| --- | --- | --- | --- | --- | --- |"]
    lines.append(_row("local", tally(gold, local), _flagged(gold, local)))
    lines.append(_row("word_overlap", tally(gold, overlap), _flagged(gold, overlap)))
    lines += ["", "Per kind, local judge:", "", head.replace("| judge |", "| kind |"), lines[1]]
    for kind in kinds:
        picked = [i for i, c in enumerate(cases) if c["kind"] == kind]
        g, x = [gold[i] for i in picked], [local[i] for i in picked]
        lines.append(_row(kind, tally(g, x), _flagged(g, x)))
    lines += ["", "| gold | kind | local judge | word overlap | claim |", "| --- | --- | --- | --- | --- |"]
    for c, v, o in zip(cases, verdicts, overlap, strict=True):
        lines.append(f"| {c['gold']} | {c['kind']} | {v.label} ({v.confidence:.2f}) | {o} | {c['claim']} |")
    result: dict[str, Any] = {
        "command": "python bench/written_cases.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "judge": name,
        "local": tally(gold, local) | {"right_flagged": _flagged(gold, local)},
        "word_overlap": tally(gold, overlap) | {"right_flagged": _flagged(gold, overlap)},
        "cases": [
            {"gold": c["gold"], "kind": c["kind"], "claim": c["claim"], "local": v.label, "reason": v.reason,
             "confidence": v.confidence, "word_overlap": o}
            for c, v, o in zip(cases, verdicts, overlap, strict=True)
        ],
    }  # fmt: skip
    text = "# Claim/page pairs written without reading the judge (a probe)\n\n" + "\n".join(lines) + "\n"
    return written(out, result, text)


if __name__ == "__main__":
    raise SystemExit(main())
