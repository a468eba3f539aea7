"""The embedded judge on hand-written study and encyclopedia citations, beside the word-overlap rule.

Twenty-five short cases written for issue 21's failure kinds that the labelled sets hold few of:
a finding turned the other way ("increased" against "lowered"), a quantity moved one way in the
claim and the other on the page while something else moves the claim's way ("higher coffee
consumption ... lower risk"), a bounded or rounded number ("more than 200 million", "about 120
million"), a study's aim, question or background quoted as its finding, a negated finding or a
null result inside a structured abstract ("Results: ... did not reduce ...", "was no greater than
with sham"), a swapped place, year or noun ("in mice" for "in humans", "gold" for "silver").
A probe, not a data set: it was written by the developer who changed the judge, so its figures
say which mechanisms work, not how often on real pages (``bench/judge_accuracy.py`` says that).

    python bench/hand_cases.py [--out bench/results/hand_cases] [--model FOLDER]

Prints each case's label from the shipped judge (``LocalJudge()``, two rounds; ``--model``: the
weights and decision of another folder) and from the plain
rule "70 % of the claim's content words are on the page", then per judge: wrong citations caught
(gold ``contradicted`` read ``contradicted``), wrong ones passed (gold ``contradicted`` or
``not_found`` read ``supported``), right ones confirmed (gold ``supported`` read ``supported``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VITAMIN_D = "Vitamin D and fractures"
MINDFULNESS = "Mindfulness in schools"
CASES: tuple[tuple[str, str, str, str], ...] = (
    # (gold, claim, page text, page title)
    (
        "contradicted",
        "Vitamin D supplementation reduces the risk of fractures in older adults.",
        "Background: Fractures are common in older adults. Methods: We randomised 2,000 adults aged over 70 to "
        "vitamin D or placebo. Results: Vitamin D supplementation did not reduce the risk of fractures compared "
        "with placebo (hazard ratio 1.02). Conclusion: Routine supplementation is not supported.",
        VITAMIN_D,
    ),
    (
        "not_found",
        "Vitamin D supplementation reduces the risk of fractures in older adults.",
        "Background: Fractures are common in older adults. This study examined whether vitamin D supplementation "
        "reduces the risk of fractures in older adults. Methods: We randomised 2,000 adults aged over 70.",
        VITAMIN_D,
    ),
    (
        "supported",
        "Vitamin D supplementation reduces the risk of fractures in older adults.",
        "Methods: We randomised 2,000 adults aged over 70 to vitamin D or placebo. Results: Fracture risk was 23% "
        "lower in the vitamin D group than in the placebo group.",
        VITAMIN_D,
    ),
    (
        "contradicted",
        "Coffee consumption increases the risk of type 2 diabetes.",
        "In this cohort of 80,000 women, higher coffee consumption was associated with a lower risk of type 2 "
        "diabetes.",
        "Coffee and diabetes",
    ),
    (
        "supported",
        "Coffee consumption is associated with a lower risk of type 2 diabetes.",
        "In this cohort of 80,000 women, higher coffee consumption was associated with a lower risk of type 2 "
        "diabetes.",
        "Coffee and diabetes",
    ),
    (
        "contradicted",
        "The Eiffel Tower is located in Lyon.",
        "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
        "Eiffel Tower",
    ),
    (
        "contradicted",
        "Brazil has a population of about 120 million people.",
        "Brazil is the largest country in South America, with a population of over 203 million people.",
        "Brazil",
    ),
    (
        "supported",
        "Brazil has more than 200 million inhabitants.",
        "Brazil is the largest country in South America, with a population of over 203 million people.",
        "Brazil",
    ),
    (
        "contradicted",
        "The film grossed less than $100 million worldwide.",
        "The film was a box-office success, grossing $412 million worldwide against a budget of $90 million.",
        "Inception (film)",
    ),
    (
        "contradicted",
        "She was born in Canada.",
        "Smith was born in Melbourne, Australia, and moved to London at the age of twelve.",
        "Jane Smith",
    ),
    (
        "contradicted",
        "Tesla was founded in 2010.",
        "Tesla, Inc. was incorporated in July 2003 by Martin Eberhard and Marc Tarpenning.",
        "Tesla, Inc.",
    ),
    (
        "supported",
        "Tesla was founded in 2003.",
        "Tesla, Inc. was incorporated in July 2003 by Martin Eberhard and Marc Tarpenning.",
        "Tesla, Inc.",
    ),
    (
        "contradicted",
        "The drug increased blood pressure in patients.",
        "Compared with placebo, the drug lowered systolic blood pressure by 12 mmHg in patients with hypertension.",
        "Trial",
    ),
    (
        "contradicted",
        "Exercise has no effect on depression symptoms.",
        "The meta-analysis found that exercise significantly reduced symptoms of depression compared with control "
        "conditions.",
        "Exercise and depression",
    ),
    (
        "not_found",
        "Exercise reduces symptoms of anxiety.",
        "The meta-analysis found that exercise significantly reduced symptoms of depression compared with control "
        "conditions.",
        "Exercise and depression",
    ),
    (
        "not_found",
        "Mindfulness training improves working memory in adolescents.",
        "Does mindfulness training improve working memory in adolescents? We conducted a randomised trial in 12 "
        "schools.",
        MINDFULNESS,
    ),
    (
        "contradicted",
        "Mindfulness training improves working memory in adolescents.",
        "Previous studies have suggested that mindfulness training improves working memory in adolescents. We "
        "tested this in a randomised trial of 12 schools. Working memory scores did not differ between groups.",
        MINDFULNESS,
    ),
    (
        "contradicted",
        "Acupuncture relieves chronic back pain better than sham acupuncture.",
        "Background: Chronic back pain is common. Methods: We randomly assigned 640 participants to acupuncture or "
        "sham and followed them for two years. Results: Pain relief with real acupuncture was no greater than with "
        "sham acupuncture. Conclusions: Acupuncture was not superior to sham.",
        "Acupuncture for back pain",
    ),
    (
        "contradicted",
        "Hydroxychloroquine reduces 28-day mortality in patients hospitalised with COVID-19.",
        "Background: Hydroxychloroquine has been proposed as a treatment for COVID-19. Methods: In this randomised, "
        "controlled, open-label trial, 1561 patients were assigned to receive hydroxychloroquine and 3155 to usual "
        "care. Results: Hydroxychloroquine did not reduce 28-day mortality (27.0% vs 25.0%). Conclusions: In "
        "patients hospitalised with COVID-19, those who received hydroxychloroquine did not have a lower incidence "
        "of death at 28 days than those who received usual care.",
        "Hydroxychloroquine in COVID-19",
    ),
    (
        "not_found",
        "High salt intake raises blood pressure.",
        "This review evaluates the evidence that high salt intake raises blood pressure.",
        "Salt and blood pressure",
    ),
    (
        "not_found",
        "The drug lowered tumour growth in humans.",
        "In mice, the drug lowered tumour growth by 40 percent.",
        "Drug X in mice",
    ),
    (
        "not_found",
        "She won a silver medal at the 2008 Olympics.",
        "At the 2008 Olympics in Beijing she won the gold medal in the 200 metres.",
        "Jane Doe (athlete)",
    ),
    (
        "contradicted",
        "The company has fewer than 1,000 employees.",
        "As of 2023, the company employed about 12,500 people in 40 countries.",
        "Acme Corp",
    ),
    (
        "contradicted",
        "The river flows into the Pacific Ocean.",
        "The river rises in the Andes and flows east for 1,200 km before emptying into the Atlantic Ocean.",
        "Rio Example",
    ),
    (
        "contradicted",
        "The album was a commercial failure.",
        "The album was a commercial success, reaching number one in eleven countries and selling over five "
        "million copies.",
        "Album",
    ),
)


def overlap_label(claim: str, page: str, title: str) -> str:
    """The word-overlap rule of ``bench/judge_accuracy.py``: supported at 70 % of the claim's words."""
    from guardrail.judges import _checks as checks

    return "supported" if checks.overlap(claim, f"{title} {page}") >= 0.7 else "not_found"


def tally(gold: Sequence[str], labels: Sequence[str]) -> dict[str, Any]:
    """Caught, passed and confirmed, as counts and out of how many."""
    wrong = [g != "supported" for g in gold]
    return {
        "wrong_caught": sum(g == "contradicted" and x == "contradicted" for g, x in zip(gold, labels, strict=True)),
        "wrong_cited": sum(g == "contradicted" for g in gold),
        "wrong_passed": sum(w and x == "supported" for w, x in zip(wrong, labels, strict=True)),
        "wrong": sum(wrong),
        "right_confirmed": sum(g == "supported" and x == "supported" for g, x in zip(gold, labels, strict=True)),
        "right": sum(g == "supported" for g in gold),
        "exact": sum(g == x for g, x in zip(gold, labels, strict=True)),
        "cases": len(gold),
    }


def judged(cases: Sequence[tuple[str, str, str]], model: Path | None = None) -> tuple[str, list[Any]]:
    """The local judge's name and its verdicts on (claim, page, title) cases: the shipped one, or
    the one whose folder (weights and decision) ``model`` names."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are local; never ask a hub
    from guardrail.core.schema import JudgeRequest
    from guardrail.judges.local import LocalJudge

    judge = LocalJudge(model)
    requests = [JudgeRequest(claim=c, passages=[page], title=t) for c, page, t in cases]
    return judge.name, asyncio.run(judge.judge(requests))


def written(out: Path, result: dict[str, Any], text: str) -> int:
    """Print ``text`` and write it beside ``result`` (``out`` with .md and .json)."""
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    out.with_suffix(".md").write_text(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python bench/hand_cases.py", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "hand_cases")
    p.add_argument("--model", type=Path, default=None, help="model folder (default: the package's)")
    args = p.parse_args(argv)
    name, verdicts = judged([(c, page, t) for _, c, page, t in CASES], args.model)
    gold = [g for g, *_ in CASES]
    local = [v.label for v in verdicts]
    overlap = [overlap_label(c, page, t) for _, c, page, t in CASES]
    lines = ["| gold | local judge | word overlap | claim |", "| --- | --- | --- | --- |"]
    for (g, claim, *_), v, o in zip(CASES, verdicts, overlap, strict=True):
        lines.append(f"| {g} | {v.label} ({v.confidence:.2f}) | {o} | {claim} |")
    result: dict[str, Any] = {
        "command": "python bench/hand_cases.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "judge": name,
        "local": tally(gold, local),
        "word_overlap": tally(gold, overlap),
        "cases": [
            {"gold": g, "claim": c, "local": v.label, "confidence": v.confidence, "word_overlap": o}
            for (g, c, *_), v, o in zip(CASES, verdicts, overlap, strict=True)
        ],
    }
    lines += ["", "| judge | wrong caught | wrong passed as supported | right confirmed | label right |"]
    lines.append("| --- | --- | --- | --- | --- |")
    for name in ("local", "word_overlap"):
        t = result[name]
        lines.append(
            f"| {name} | {t['wrong_caught']} / {t['wrong_cited']} | {t['wrong_passed']} / {t['wrong']} | "
            f"{t['right_confirmed']} / {t['right']} | {t['exact']} / {t['cases']} |"
        )
    return written(args.out, result, "# Hand-written citations (a probe, not a data set)\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
