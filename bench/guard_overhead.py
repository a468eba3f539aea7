"""What CitationGuard adds to a LangChain chain: latency per answer and time to the first sentence.

The same fake chain runs with and without the guard at its end,

    base   = FakeListChatModel | StrOutputParser()
    guard  = FakeListChatModel | StrOutputParser() | CitationGuard(verifier=verifier)

over answers of 1, 5 and 20 cited sentences (each cites one of ten ~1,000-word article pages
served on 127.0.0.1: six passages each, so retrieval picks the top 3). Pages are warm: the
verifier's fetcher is a FetchOnce over a SQLite page cache filled by a warm-up pass (as a
service with GUARDRAIL_CACHE runs), so no page is downloaded while measuring, and the embedder is
the default's cache over MiniLM, so a page's passages were embedded once, in the warm-up. Every
answer is new: each claim is a wording of a page's fact not used before in the run (``ClaimWriter``),
so claim embedding, extraction, retrieval, the judge and the policy run for real on every answer.
Models are loaded before measuring.

Printed and written to bench/results/guard_overhead.json:

* invoke: p50/p95 latency of the chain with and without the guard, and of the added latency
  (paired runs, guarded minus plain), with the share spent in the judge and the embedder;
* astream: time to the first streamed sentence with and without the guard, and their ratio, with
  the model writing at ``--chars-per-second`` (default 250, about 60 tokens/s);
* the same invoke figures with no judge at all ("plumbing": everything but the judge).

Judge: the embedded local judge when its weights are installed (or ``--judge-model DIR``). When
they are not, the local judge's code runs with a *stand-in* model of the same architecture and
size (all-MiniLM-L6-v2 with an untrained 3-label head, built in a temporary folder): its latency
is what the shipped judge costs, its verdicts mean nothing. The JSON says which judge ran.

With ``--repair`` it measures instead what the repair policy adds (issue 22), written to
bench/results/repair_overhead.json: a RAG-shaped input (``{"answer", "context"}``, five claims
citing their context documents by ``[n]``) guarded with ``policy="default"`` and with
``policy="repair"``, each run one fresh answer guarded by both (warm, in alternating order), in two shapes:
every citation right (repair must verify nothing more: target under 5 % added), and one claim of
the five citing the wrong document (the suggestion round: that claim judged against the other
documents, then re-pointed). Medians over the runs, the baseline in the same run.

Usage: python bench/guard_overhead.py [--runs 15] [--stream-runs 5] [--chars-per-second 250]
       [--judge-model DIR] [--no-stand-in] [--repair] [--rounds 1] [--backend torch] [--threads 1]
       [--out PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from judge_accuracy import add_precision_options, quantize_choice  # bench/, this script's folder
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser

from guardrail import JudgeRequest, JudgeVerdict, Settings, Verifier
from guardrail.apps.demo import LoopbackSite, Route, article, site_fetcher
from guardrail.fetch.once import FetchOnce
from guardrail.judges.local import LocalJudge, LocalJudgeConfig
from guardrail.retrieval import CachingEmbedder, MiniLMEmbedder, offline_minilm_path
from guardrail.store.cache import PageCache
from langchain_citation_guardrail import CitationGuard

SIZES = (1, 5, 20)
TARGET_MS = 100.0
RESULTS = Path(__file__).resolve().parent / "results" / "guard_overhead.json"
REPAIR_RESULTS = Path(__file__).resolve().parent / "results" / "repair_overhead.json"
REPAIR_TARGET_PCT = 5.0

RIVERS = ["Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Ginkgo", "Hazel", "Ivy", "Juniper"]
RANGES = ["Grey Mountains", "Iron Hills", "Blue Ridge", "Stone Peaks", "Misty Range"]
SEAS = ["Northern Sea", "Bay of Orm", "Western Ocean", "Gulf of Tarn", "Lake Vessa"]


def river_page(i: int) -> tuple[str, list[str]]:
    """A ~1,000-word article about a fictional river, and two claims it supports."""
    name = f"{RIVERS[i % len(RIVERS)]} River"
    length = 180 + 37 * i
    source, mouth = RANGES[i % len(RANGES)], SEAS[i % len(SEAS)]
    towns = [f"{RIVERS[(i + k) % len(RIVERS)]}ford" for k in (1, 2, 3)]
    facts = [
        f"The {name} is a river in the northern provinces, about {length} kilometres long from its "
        f"source in the {source} to its mouth in the {mouth}.",
        f"Its basin covers some {length * 31} square kilometres and is home to roughly "
        f"{length * 2_100:,} people, most of them in the towns of {', '.join(towns)}.",
    ]
    filler = [
        f"The valley of the {name} has been farmed since the Bronze Age, and traces of early "
        "field systems can still be seen on the terraces above the flood plain. Later settlers "
        "built water mills along the faster stretches, several of which were converted to small "
        "hydroelectric stations in the twentieth century and still supply the nearby villages.",
        "Spring floods are common when the snow melts in the mountains, and the river can rise by "
        "several metres in a few days. Embankments were raised along the lower course after a "
        "severe flood, and a network of gauging stations now gives the towns downstream a warning "
        "of a day or more before the water reaches them.",
        "The river supports a rich community of fish, including trout in the upper reaches and "
        "bream and pike in the slower water near the mouth. Otters returned to the banks in the "
        "last few decades after the worst sources of pollution were closed, and herons nest in the "
        "willow woods of the delta.",
        "Navigation was once important: flat-bottomed barges carried timber, grain and stone down "
        "to the coast until the railway arrived. Today the river is used mostly for leisure, with "
        "canoe routes, riverside footpaths and a long-distance cycle trail that follows the old "
        "towpath for much of its length.",
        "Water quality is monitored monthly by the regional environment agency, which publishes "
        "nitrate, phosphate and oxygen readings for each monitoring point. Most stretches meet "
        "the good-status standard, although agricultural run-off still affects some tributaries "
        "during wet summers.",
        "Several bridges cross the river, the oldest a narrow stone bridge of seven arches that "
        "dates from the fourteenth century and is still open to pedestrians. A modern suspension "
        "bridge carries the main road across the estuary and opened after six years of works.",
        "The climate of the basin is temperate, with cool winters and mild summers; rainfall is "
        "highest on the western slopes of the mountains and falls off steadily towards the coast, "
        "where the river meanders through a wide plain of meadows and reed beds.",
        "Local legends tell of a water spirit that guards the deepest pool below the gorge, and a "
        "festival held every midsummer still ends with a procession of lanterns floated down the "
        "current from the old market square.",
        "Conservation groups have restored several kilometres of gravel beds where salmon once "
        "spawned, and a fish pass was built around the largest weir. Early counts suggest that "
        "migratory fish are using it in growing numbers each autumn.",
        "Geologists describe the upper valley as a classic glacial trough with hanging tributary "
        "valleys and waterfalls, while the middle course cuts through softer sandstone in a series "
        "of wooded meanders that attract walkers throughout the year.",
    ]
    towns_text = [
        f"{town} grew up around a ford on the {name} where an old trade road crossed the river. Its "
        "market square, guild hall and narrow lanes of timber-framed houses survive from that time, and "
        "a small museum in the former customs house tells the story of the river trade and the floods "
        "that shaped the town. The weekly market still draws farmers from the surrounding villages."
        for town in towns
    ]
    paragraphs = [filler[0], facts[0], *filler[1:6], *towns_text, facts[1], *filler[6:]]
    paragraphs += [f"{p} Records kept in {towns[k % 3]} describe this in detail." for k, p in enumerate(filler[:6])]
    claims = [
        [t.format(name=name, length=length) for t in LENGTH_WORDINGS],
        [t.format(name=name, source=source, mouth=mouth) for t in COURSE_WORDINGS],
    ]
    return article(f"The {name}", paragraphs), claims


LENGTH_WORDINGS = [
    "The {name} is about {length} kilometres long",
    "The {name} measures about {length} kilometres from source to mouth",
    "The {name} has a length of around {length} kilometres",
    "At roughly {length} kilometres, the {name} is a river of the northern provinces",
]
COURSE_WORDINGS = [
    "The {name} flows from the {source} to the {mouth}",
    "The {name} rises in the {source} and reaches the sea at the {mouth}",
    "From its source in the {source}, the {name} runs to the {mouth}",
    "The {name} begins in the {source} and ends in the {mouth}",
]
LEAD_INS = [
    "",
    "In short, ",
    "Notably, ",
    "As it happens, ",
    "Indeed, ",
    "In fact, ",
    "For the record, ",
    "Also, ",
    "Briefly, ",
    "Put simply, ",
    "As a matter of fact, ",
    "Incidentally, ",
]


class ClaimWriter:
    """Hands out a claim about a page's fact in a wording not used before in this run of the bench
    (wording x lead-in: 48 per fact), so no claim's vector or verdict can come from an earlier answer."""

    def __init__(self, pages: Sequence[tuple[str, list[list[str]]]]) -> None:
        self.pages = pages
        self.used: dict[tuple[int, int], int] = {}

    def claim(self, page: int, fact: int) -> str:
        n = self.used.get((page, fact), 0)
        self.used[(page, fact)] = n + 1
        wordings = self.pages[page][1][fact]
        if n >= len(wordings) * len(LEAD_INS):
            raise RuntimeError("the bench ran out of fresh claim wordings; add some")
        text = wordings[n % len(wordings)]
        lead = LEAD_INS[n // len(wordings)]
        return lead + (text[0].lower() + text[1:] if lead else text)


def build_answer(site: LoopbackSite, n: int, writer: ClaimWriter, first_page: int = 0) -> str:
    """An answer of ``n`` cited sentences, two per page from ``first_page`` on, each a fresh wording,
    each citing its page with a markdown link."""
    sentences = []
    pages = len(writer.pages)
    for k in range(n):
        p = (first_page + k // 2) % pages
        sentences.append(f"{writer.claim(p, k % 2)} ([source]({site.url(f'/river-{p}')})).")
    return " ".join(sentences) + "\n"


# -- timing wrappers (swapped in through the Judge/Embedder protocols) ---------------------------


class TimedJudge:
    """Wraps a judge and adds up the seconds spent in it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = getattr(inner, "model", None)
        self.cpu_bound = inner.cpu_bound
        self.load = inner.load
        self.seconds = 0.0
        self.pairs = 0

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        start = time.perf_counter()
        try:
            return list(await self.inner.judge(requests))
        finally:
            self.seconds += time.perf_counter() - start
            self.pairs += len(requests)


class TimedEmbedder:
    """Wraps an embedder and adds up the seconds spent in it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> Any:
        start = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - start
            self.texts += len(texts)


class NoJudge:
    """A judge that decides nothing at no cost: the "plumbing" runs measure everything else."""

    name = "none"
    model = None
    cpu_bound = False

    def load(self) -> None:
        """Nothing to load."""

    async def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        return [JudgeVerdict(label="not_found", confidence=0.0) for _ in requests]


def stand_in_model(folder: Path) -> Path:
    """all-MiniLM-L6-v2 with a freshly initialised 3-label head: the shipped judge's architecture."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(0)
    base = offline_minilm_path()
    labels = {0: "entailment", 1: "neutral", 2: "contradiction"}
    model = AutoModelForSequenceClassification.from_pretrained(
        base, num_labels=3, id2label=labels, label2id={v: k for k, v in labels.items()}, local_files_only=True
    )
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(base, local_files_only=True).save_pretrained(folder)
    return folder


def pick_judge(args: argparse.Namespace, tmp: Path) -> tuple[Any | None, str]:
    config = LocalJudgeConfig(
        threads=args.threads,
        rounds=args.rounds or LocalJudgeConfig.rounds,
        backend=args.backend or LocalJudgeConfig.backend,
    )
    quantize = quantize_choice(args)
    if args.judge_model:
        if not LocalJudge.available(args.judge_model):
            sys.exit(f"--judge-model {args.judge_model}: no config.json and weights there")
        judge = LocalJudge(model_path=args.judge_model, config=config, quantize=quantize)
        return judge, f"local judge, weights from {args.judge_model}{', int8' if judge.quantize else ''}"
    if LocalJudge.available():
        judge = LocalJudge(config=config, quantize=quantize)
        return judge, f"local judge, shipped weights{', int8' if judge.quantize else ''}"
    if args.no_stand_in:
        return None, "none (the shipped judge weights are not installed; --no-stand-in)"
    return (
        LocalJudge(model_path=stand_in_model(tmp / "stand-in"), config=config, quantize=quantize),
        "local judge code with an untrained stand-in model of the shipped architecture "
        "(all-MiniLM-L6-v2 + 3-label head): the shipped weights are not installed yet, so the "
        "latency is representative and the verdicts are not",
    )


# -- measurements -------------------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def ms(seconds: float) -> float:
    return round(seconds * 1000.0, 1)


def measure_invoke(
    answers: Sequence[str], verifier: Verifier, judge: TimedJudge | None, embedder: TimedEmbedder
) -> dict[str, Any]:
    """Paired runs, one fresh answer each (the first only warms code paths and is not counted)."""
    plain_t, guard_t, added, judge_s, embed_s = [], [], [], [], []
    for n, answer in enumerate(answers):
        base = FakeListChatModel(responses=[answer]) | StrOutputParser()
        guarded = FakeListChatModel(responses=[answer]) | StrOutputParser() | CitationGuard(verifier=verifier)
        if n == 0:
            guarded.invoke("q")
            continue
        start = time.perf_counter()
        base.invoke("q")
        plain_t.append(time.perf_counter() - start)
        j0 = judge.seconds if judge else 0.0
        e0 = embedder.seconds
        start = time.perf_counter()
        guarded.invoke("q")
        guard_t.append(time.perf_counter() - start)
        judge_s.append((judge.seconds if judge else 0.0) - j0)
        embed_s.append(embedder.seconds - e0)
        added.append(guard_t[-1] - plain_t[-1])
    return {
        "runs": len(answers) - 1,
        "plain_p50_ms": ms(pct(plain_t, 0.5)),
        "plain_p95_ms": ms(pct(plain_t, 0.95)),
        "guarded_p50_ms": ms(pct(guard_t, 0.5)),
        "guarded_p95_ms": ms(pct(guard_t, 0.95)),
        "added_p50_ms": ms(pct(added, 0.5)),
        "added_p95_ms": ms(pct(added, 0.95)),
        "judge_p50_ms": ms(pct(judge_s, 0.5)),
        "embed_p50_ms": ms(pct(embed_s, 0.5)),
        "rest_p50_ms": ms(pct([a - j - e for a, j, e in zip(added, judge_s, embed_s, strict=True)], 0.5)),
    }


async def first_sentence_time(chain: Any, first: str) -> float:
    """Seconds until ``chain.astream`` has delivered the whole first sentence; stops there."""
    start = time.perf_counter()
    got = ""
    async for chunk in chain.astream("q"):
        got += chunk
        if len(got.strip()) >= len(first):
            break
    return time.perf_counter() - start


def measure_stream(answers: Sequence[str], verifier: Verifier, cps: float) -> dict[str, Any]:
    """Time to the first sentence, one fresh answer per run (the first only warms code paths)."""
    sleep = 1.0 / cps if cps > 0 else None

    def first_of(answer: str) -> str:
        return answer.split(")). ")[0] + "))."

    def chains(answer: str) -> tuple[Any, Any]:
        base = FakeListChatModel(responses=[answer], sleep=sleep) | StrOutputParser()
        return base, base | CitationGuard(verifier=verifier)

    async def go() -> tuple[list[float], list[float]]:
        plain, guarded = [], []
        for n, answer in enumerate(answers):
            base, guard = chains(answer)
            if n == 0:
                await first_sentence_time(guard, first_of(answer))
                continue
            plain.append(await first_sentence_time(base, first_of(answer)))
            guarded.append(await first_sentence_time(guard, first_of(answer)))
        return plain, guarded

    plain, guarded = asyncio.run(go())
    p50_plain, p50_guard = pct(plain, 0.5), pct(guarded, 0.5)
    return {
        "runs": len(answers) - 1,
        "chars_per_second": cps,
        "first_sentence_chars": round(sum(len(first_of(a)) for a in answers[1:]) / max(1, len(answers) - 1)),
        "plain_first_sentence_p50_ms": ms(p50_plain),
        "guarded_first_sentence_p50_ms": ms(p50_guard),
        "guarded_first_sentence_p95_ms": ms(pct(guarded, 0.95)),
        "ratio_p50": round(p50_guard / p50_plain, 2) if p50_plain > 0 else None,
    }


def rag_input(site: LoopbackSite, writer: ClaimWriter, first_page: int, wrong: bool) -> dict[str, Any]:
    """Five claims about three pages, each citing its page's context document by ``[n]``; with
    ``wrong``, the last claim cites the first document instead of its own (misattributed)."""
    from langchain_core.documents import Document

    pages = len(writer.pages)
    used = [(first_page + k // 2) % pages for k in range(5)]
    order = list(dict.fromkeys(used))
    sentences = []
    for k, p in enumerate(used):
        n = order.index(p) + 1
        if wrong and k == 4:
            n = 1
        sentences.append(f"{writer.claim(p, k % 2)} [{n}].")
    docs = [Document(page_content="(page)", metadata={"url": site.url(f"/river-{p}")}) for p in order]
    return {"answer": " ".join(sentences), "context": docs}


def measure_repair(
    site: LoopbackSite, writer: ClaimWriter, verifier: Verifier, judge: TimedJudge | None, runs: int, wrong: bool
) -> dict[str, Any]:
    """Each run: one fresh input, guarded once by each policy untimed (so both timed passes find
    the same warm caches: the claims' vectors, the judge's memoised text helpers), then by each
    policy timed, in alternating order; the added time is the median of the paired differences."""
    guards = {"default": CitationGuard(verifier=verifier), "repair": CitationGuard(verifier=verifier, policy="repair")}
    times: dict[str, list[float]] = {"default": [], "repair": []}
    cpu: dict[str, list[float]] = {"default": [], "repair": []}
    pairs: dict[str, list[int]] = {"default": [], "repair": []}
    repaired: list[int] = []
    for n in range(runs + 1):
        order = ["default", "repair"] if n % 2 else ["repair", "default"]
        value = rag_input(site, writer, first_page=n, wrong=wrong)
        for name in order:
            guards[name].invoke(value)
        for name in order:
            p0 = judge.pairs if judge else 0
            start, cpu0 = time.perf_counter(), time.process_time()
            out = guards[name].invoke(value)
            elapsed, used = time.perf_counter() - start, time.process_time() - cpu0
            if n == 0:
                continue  # warms code paths only
            times[name].append(elapsed)
            cpu[name].append(used)
            pairs[name].append((judge.pairs if judge else 0) - p0)
            if name == "repair":
                repaired.append(out["answer"].count("↪ citation corrected"))
    base, fixed = pct(times["default"], 0.5), pct(times["repair"], 0.5)
    # Paired: the same input under both policies, so a run's own difficulty cancels out.
    added = pct([r - d for r, d in zip(times["repair"], times["default"], strict=True)], 0.5)
    cpu_base = pct(cpu["default"], 0.5)
    cpu_added = pct([r - d for r, d in zip(cpu["repair"], cpu["default"], strict=True)], 0.5)
    return {
        "runs": runs,
        "default_p50_ms": ms(base),
        "repair_p50_ms": ms(fixed),
        "added_p50_ms": ms(added),
        "added_pct": round(100.0 * added / base, 2) if base > 0 else None,
        "default_cpu_p50_ms": ms(cpu_base),
        "added_cpu_p50_ms": ms(cpu_added),
        "added_cpu_pct": round(100.0 * cpu_added / cpu_base, 2) if cpu_base > 0 else None,
        "judged_pairs_default_p50": pct(pairs["default"], 0.5),
        "judged_pairs_repair_p50": pct(pairs["repair"], 0.5),
        "runs_with_a_repair": sum(1 for r in repaired if r),
    }


class Bench(NamedTuple):
    """What every measurement shares: the verifier over the warm river pages, its timed stages."""

    verifier: Verifier
    settings: Settings
    fetcher: FetchOnce
    raw_judge: Any | None
    judge: TimedJudge | None
    judge_desc: str
    embedder: TimedEmbedder
    pages: list[tuple[str, list[list[str]]]]


def set_up(args: argparse.Namespace, site: LoopbackSite, tmp: Path) -> Bench:
    """The river pages served by ``site``, the models loaded, a verifier over a page cache in ``tmp``."""
    pages = [river_page(i) for i in range(10)]
    for i, (html, _) in enumerate(pages):
        site.routes[f"/river-{i}"] = Route(body=html)
    settings = Settings.from_env().model_copy(update={"cache_path": None, "audit_path": None})
    fetcher = FetchOnce(site_fetcher(site, settings), store=PageCache(tmp / "pages.sqlite"))
    raw_judge, judge_desc = pick_judge(args, tmp)
    judge = TimedJudge(raw_judge) if raw_judge is not None else None
    # As Verifier's default (guardrail.runtime.build_embedder): MiniLM behind an LRU of vectors,
    # so a warm page's passages are not embedded again; the timer sits outside the cache.
    embedder = TimedEmbedder(CachingEmbedder(MiniLMEmbedder(threads=args.threads)))
    print(f"judge: {judge_desc}", file=sys.stderr)
    print("loading models and warming the pages (fetched, converted, passages embedded)...", file=sys.stderr)
    embedder.embed(["warm up"])
    if raw_judge is not None:
        raw_judge.load()
    verifier = Verifier(settings=settings, fetcher=fetcher, embedder=embedder, judge=judge)
    return Bench(verifier, settings, fetcher, raw_judge, judge, judge_desc, embedder, pages)


def main_repair(args: argparse.Namespace) -> None:
    """``--repair``: what the repair policy adds (see the module docs)."""
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmpdir, LoopbackSite() as site:
        verifier, _, _, _, judge, judge_desc, _, pages = set_up(args, site, Path(tmpdir))
        writer = ClaimWriter(pages)
        verifier.verify_answer(build_answer(site, 2 * len(pages), writer))  # every page, once
        results: dict[str, Any] = {}
        for shape, wrong in (("nothing_fails", False), ("one_misattributed_of_five", True)):
            print(f"{shape}: x{args.runs} per policy...", file=sys.stderr)
            results[shape] = measure_repair(site, writer, verifier, judge, args.runs, wrong)
    load_after = os.getloadavg()
    clean = results["nothing_fails"]["added_pct"]
    results.update(
        {
            "judge": judge_desc,
            "target": f"repair adds < {REPAIR_TARGET_PCT:.0f} % when nothing fails (nothing more verified)",
            "target_met": clean is not None and clean < REPAIR_TARGET_PCT,
            "machine": machine(load_before, load_after),
            "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\njudge: {judge_desc}; load average {load_before[0]:.2f} -> {load_after[0]:.2f}")
    for shape in ("nothing_fails", "one_misattributed_of_five"):
        r = results[shape]
        print(
            f"{shape:>26}: default p50 {r['default_p50_ms']:.0f} ms, repair p50 {r['repair_p50_ms']:.0f} ms, "
            f"added {r['added_p50_ms']:+.0f} ms ({r['added_pct']:+.1f} %; CPU {r['added_cpu_pct']:+.1f} %); "
            "judged pairs "
            f"{r['judged_pairs_default_p50']:.0f} -> {r['judged_pairs_repair_p50']:.0f}; "
            f"runs with a repair {r['runs_with_a_repair']}/{r['runs']}"
        )
    verdict = "met" if results["target_met"] else "NOT met"
    print(f"target (< {REPAIR_TARGET_PCT:.0f} % added when nothing fails): {verdict}")
    print(f"wrote {args.out}")


def machine(load_before: Sequence[float], load_after: Sequence[float], **extra: object) -> dict[str, object]:
    """What the results say of the machine they were measured on: cores, load before and after."""
    return {
        "cpus": os.cpu_count(),
        **extra,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "note": "a model-training job may be sharing these CPUs; see loadavg",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="paired invoke runs per size (20-claim: half)")
    parser.add_argument("--stream-runs", type=int, default=5, help="astream runs per size (at least 1)")
    parser.add_argument("--chars-per-second", type=float, default=250.0, help="the fake model's writing pace")
    parser.add_argument("--judge-model", help="a local judge model folder (config.json + weights)")
    add_precision_options(parser)
    parser.add_argument("--no-stand-in", action="store_true", help="without shipped weights, run with no judge")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument(
        "--threads", type=int, default=None, help="model threads (judge and embedder; default: one per core)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"default {RESULTS.name}, with --repair {REPAIR_RESULTS.name} (bench/results)",
    )
    parser.add_argument("--repair", action="store_true", help="measure what the repair policy adds instead")
    parser.add_argument(
        "--rounds",
        type=int,
        choices=(1, 2),
        default=None,
        help="the local judge's LocalJudgeConfig.rounds (default: its default)",
    )
    parser.add_argument(
        "--backend", choices=("onnx", "torch"), default=None, help="the local judge's backend (default: auto)"
    )
    args = parser.parse_args()
    if args.stream_runs < 1:
        parser.error("--stream-runs must be at least 1 (the table reports the first sentence's time)")
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    if args.repair:
        args.out = args.out or REPAIR_RESULTS
        main_repair(args)
        return
    args.out = args.out or RESULTS
    sizes = [int(s) for s in args.sizes.split(",")]

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmpdir, LoopbackSite() as site:
        verifier, settings, fetcher, raw_judge, judge, judge_desc, embedder, pages = set_up(args, site, Path(tmpdir))
        plumbing = Verifier(settings=settings, fetcher=fetcher, embedder=embedder, judge=NoJudge())
        writer = ClaimWriter(pages)
        verifier.verify_answer(build_answer(site, 2 * len(pages), writer))  # every page, once
        hits_after_warmup = dict(site.hits)

        def fresh(n: int, count: int) -> list[str]:
            return [build_answer(site, n, writer, first_page=r) for r in range(count)]

        results: dict[str, Any] = {"sizes": {}}
        for n in sizes:
            runs = max(3, args.runs // 2) if n >= 20 else args.runs
            print(f"{n} cited sentences: invoke x{runs}...", file=sys.stderr)
            row: dict[str, Any] = {"invoke": measure_invoke(fresh(n, runs + 1), verifier, judge, embedder)}
            print(f"{n} cited sentences: invoke without a judge x{runs}...", file=sys.stderr)
            row["invoke_no_judge"] = measure_invoke(fresh(n, runs + 1), plumbing, None, embedder)
            print(f"{n} cited sentences: astream x{args.stream_runs}...", file=sys.stderr)
            row["stream"] = measure_stream(fresh(n, args.stream_runs + 1), verifier, args.chars_per_second)
            results["sizes"][str(n)] = row
        fetched_while_measuring = {p: c - hits_after_warmup.get(p, 0) for p, c in site.hits.items()}
    load_after = os.getloadavg()

    import torch

    results.update(
        {
            "judge": judge_desc,
            "judge_name": raw_judge.name if raw_judge is not None else None,
            "judge_rounds": raw_judge.config.rounds if isinstance(raw_judge, LocalJudge) else None,
            "judge_backend": raw_judge.backend if isinstance(raw_judge, LocalJudge) else None,
            "judge_int8": raw_judge.quantize if isinstance(raw_judge, LocalJudge) else None,
            "embedder": embedder.name,
            "target": f"guard adds < {TARGET_MS:.0f} ms p50 to a 5-claim answer on warm pages",
            "target_met": (
                results["sizes"]["5"]["invoke"]["added_p50_ms"] < TARGET_MS if "5" in results["sizes"] else None
            ),
            "five_to_one_claim_ratio": (
                round(
                    results["sizes"]["5"]["invoke"]["added_p50_ms"]
                    / max(1e-9, results["sizes"]["1"]["invoke"]["added_p50_ms"]),
                    2,
                )
                if {"1", "5"} <= set(results["sizes"])
                else None
            ),
            "pages_fetched_while_measuring": sum(fetched_while_measuring.values()),
            "machine": machine(
                load_before,
                load_after,
                torch_threads=torch.get_num_threads(),
                model_threads=args.threads or "one per core",
                python=platform.python_version(),
                platform=platform.platform(),
            ),
            "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")

    print(f"\njudge: {judge_desc}")
    print(
        f"embedder: {embedder.name}; cpus: {os.cpu_count()}; load average {load_before[0]:.2f} -> {load_after[0]:.2f}"
    )
    header = (
        f"{'claims':>6} | {'plain p50':>9} | {'guarded p50/p95':>15} | {'added p50/p95':>15} | "
        f"{'judge':>7} | {'embed':>7} | {'rest':>6} | {'no-judge added':>14} | "
        f"{'1st sentence plain/guarded':>26} | {'ratio':>5}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        row = results["sizes"][str(n)]
        inv, nj, st = row["invoke"], row["invoke_no_judge"], row["stream"]
        print(
            f"{n:>6} | {inv['plain_p50_ms']:>7.1f}ms | {inv['guarded_p50_ms']:>6.0f}/{inv['guarded_p95_ms']:>6.0f}ms | "
            f"{inv['added_p50_ms']:>6.0f}/{inv['added_p95_ms']:>6.0f}ms | {inv['judge_p50_ms']:>5.0f}ms | "
            f"{inv['embed_p50_ms']:>5.0f}ms | {inv['rest_p50_ms']:>4.0f}ms | "
            f"{nj['added_p50_ms']:>5.0f}/{nj['added_p95_ms']:>5.0f}ms | "
            f"{st['plain_first_sentence_p50_ms']:>11.0f}/{st['guarded_first_sentence_p50_ms']:>8.0f}ms | "
            f"{st['ratio_p50']:>5}"
        )
    if results["target_met"] is not None:
        verdict = "met" if results["target_met"] else "NOT met"
        print(f"target (< {TARGET_MS:.0f} ms p50 added, 5 claims, warm pages): {verdict}")
    print(f"pages fetched from the origin while measuring: {results['pages_fetched_while_measuring']}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
