"""Extraction time before and after the linear-time rewrite, per answer shape and size.

Shapes are those of ``tests/hostile.py`` (answers that made the old extractor quadratic) plus an
ordinary answer and a list of tiny items (markdown-it-py's slowest ordinary structure). "Before"
is ``guardrail/core/extract.py`` as of ``--before`` (default ``7db8082``, the last commit with the
single-module extractor), written to a temporary folder and run in a subprocess with a timeout
(once a shape times out, its larger sizes are not run). "After" is the working tree's
``guardrail.core.extract``, the best of ``--runs``. Times are wall-clock seconds of one
``extract_claims`` call, with the CPU seconds beside them (the machine may be shared).

Printed as a table and written to bench/results/extract_speed.json.

Usage: python bench/extract_speed.py [--sizes 16,32,64,200] [--runs 3] [--timeout 60]
       [--before 7db8082] [--no-before]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from guardrail.core.extract import extract_claims  # noqa: E402
from tests.hostile import HOSTILE, ordinary  # noqa: E402

SHAPES: dict[str, Callable[[int], str]] = {
    **HOSTILE,
    "ordinary": ordinary,
    "tiny_list_items": lambda size: "- x\n" * (size // 4),
}

# Runs one shape through the old module; prints its wall and CPU seconds as JSON.
_BEFORE_RUNNER = """
import json, sys, time
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import extract_before
from tests.hostile import HOSTILE, ordinary
shapes = dict(HOSTILE, ordinary=ordinary, tiny_list_items=lambda size: "- x\\n" * (size // 4))
text = shapes[sys.argv[3]](int(sys.argv[4]))
wall, cpu = time.perf_counter(), time.process_time()
extract_before.extract_claims(text)
print(json.dumps({"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}))
"""


def measure_after(text: str, runs: int) -> dict[str, float]:
    best: dict[str, float] = {"wall_s": float("inf"), "cpu_s": float("inf")}
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        extract_claims(text)
        best = {
            "wall_s": min(best["wall_s"], time.perf_counter() - wall),
            "cpu_s": min(best["cpu_s"], time.process_time() - cpu),
        }
    return best


def measure_before(module_dir: str, shape: str, size: int, timeout: float) -> dict[str, Any]:
    command = [sys.executable, "-c", _BEFORE_RUNNER, module_dir, str(ROOT), shape, str(size)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return {"timed_out": True, "over_s": timeout}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def old_module(rev: str, folder: str) -> str:
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:guardrail/core/extract.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    Path(folder, "extract_before.py").write_text(source, encoding="utf-8")
    return folder


def cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return "-"
    if result.get("timed_out"):
        return f"> {result['over_s']:.0f} s" + ("" if result.get("ran", True) else " (not run)")
    return f"{result['wall_s']:.3f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="16,32,64,200", help="answer sizes in KB (1 KB = 1024 characters)")
    parser.add_argument("--runs", type=int, default=3, help="after: best of this many runs")
    parser.add_argument("--timeout", type=float, default=60.0, help="before: seconds allowed per run")
    parser.add_argument("--before", default="7db8082", help="the commit holding the old guardrail/core/extract.py")
    parser.add_argument("--no-before", action="store_true", help="measure the working tree only")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        module_dir = None if args.no_before else old_module(args.before, folder)
        for shape, make in SHAPES.items():
            timed_out = False
            for kb in sizes:
                text = make(kb * 1024)
                before: dict[str, Any] | None = None
                if module_dir is not None:
                    if timed_out:
                        before = {"timed_out": True, "over_s": args.timeout, "ran": False}
                    else:
                        before = measure_before(module_dir, shape, kb * 1024, args.timeout)
                        timed_out = bool(before.get("timed_out"))
                after = measure_after(text, args.runs)
                rows.append({"shape": shape, "kb": kb, "chars": len(text), "before": before, "after": after})
                print(f"{shape:16} {kb:4} KB  before {cell(before):>18}  after {cell(after):>9}", flush=True)

    print()
    print("| shape | " + " | ".join(f"{kb} KB before / after" for kb in sizes) + " |")
    print("|---" * (len(sizes) + 1) + "|")
    for shape in SHAPES:
        cells = [f"{cell(r['before'])} / {cell(r['after'])}" for r in rows if r["shape"] == shape]
        print(f"| {shape} | " + " | ".join(cells) + " |")

    out = ROOT / "bench" / "results" / "extract_speed.json"
    out.write_text(
        json.dumps(
            {
                "command": " ".join(["python bench/extract_speed.py", *sys.argv[1:]]),
                "before": None if args.no_before else args.before,
                "python": platform.python_version(),
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                "load_average": list(os.getloadavg()),
                "note": "seconds of one extract_claims call; after: best of --runs",
                "rows": rows,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"\nwritten: {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
