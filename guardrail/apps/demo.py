"""Offline demo: a loopback site with a few real-looking pages and an answer that cites them.

Used by ``guardrail demo``, the examples and the benchmarks, so that each runs on a fresh
machine with no network: the pages are served on 127.0.0.1 and only that origin is
allowed through the SSRF guard (:func:`site_fetcher`, :func:`demo_verifier`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from guardrail.core.report import support_summary
from guardrail.core.schema import AnswerReport
from guardrail.extras import install_command
from guardrail.judges.base import Judge
from guardrail.runtime import build_direct_fetcher, build_verifier
from guardrail.settings import Settings
from guardrail.testing import LoopbackSite, Route
from guardrail.verifier import Verifier

if TYPE_CHECKING:
    from guardrail.fetch.direct import DirectFetcher

# -- the demo pages -----------------------------------------------------------------

NAV = """<nav><ul><li><a href="/">Home</a></li><li><a href="/science">Science</a></li>
<li><a href="/about">About us</a></li><li><a href="/contact">Contact</a></li></ul></nav>"""
FOOTER = """<footer><p>Copyright 2024 Example Science Weekly. All rights reserved.</p>
<p><a href="/privacy">Privacy policy</a> | <a href="/terms">Terms of use</a></p></footer>
<div class="cookie-banner">We use cookies to improve your experience. Accept all cookies?</div>"""


def article(title: str, paragraphs: list[str]) -> str:
    """A full HTML article page with navigation, footer and cookie banner around the content."""
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>
<body>{NAV}<main><article><h1>{title}</h1>
{body}
</article></main>{FOOTER}</body></html>"""


BOILING = article(
    "The boiling point of water",
    [
        "Water is one of the most studied substances in chemistry, and its phase changes are "
        "taught in every introductory course around the world.",
        "At standard atmospheric pressure, which is the pressure at sea level, pure water boils "
        "at 100 degrees Celsius (212 degrees Fahrenheit).",
        "At higher altitudes the air pressure is lower, so water boils at a lower temperature. "
        "In Denver, about 1,600 metres above sea level, water boils at roughly 95 degrees Celsius.",
        "Dissolved salts raise the boiling point slightly, an effect known as boiling point "
        "elevation, which is why salted pasta water boils a fraction of a degree hotter.",
        "Pressure cookers exploit the opposite effect: by raising the pressure inside the pot, "
        "they let water reach about 120 degrees Celsius before it boils, cooking food faster.",
    ],
)

OLD_REPORT = article(
    "An old report on water",
    [
        "This historical report summarises early measurements of the properties of water made "
        "by amateur experimenters in the nineteenth century, many of which were later corrected.",
        "According to the report, water boils at 50 degrees Celsius at sea level, a figure that "
        "the author attributed to careful measurements with a mercury thermometer.",
        "The author also claimed that ice melts at 10 degrees Celsius, and that sea water freezes "
        "at the same temperature as fresh water, neither of which is accepted today.",
        "Modern readers should treat these figures with caution: instruments of the period were "
        "poorly calibrated and the experiments were rarely repeated by independent observers.",
    ],
)

TITANIC = article(
    "Titanic (1997 film)",
    [
        "Titanic is a 1997 American epic romance and disaster film directed, written, produced, "
        "and co-edited by James Cameron.",
        "Incorporating both historical and fictionalized aspects, it is based on accounts of the "
        "sinking of RMS Titanic in 1912.",
        "Kate Winslet and Leonardo DiCaprio star as members of different social classes who fall "
        "in love during the ship's maiden voyage.",
        "The film was released on December 19, 1997, and grossed over $1.84 billion worldwide "
        "during its initial theatrical run, becoming the highest-grossing film at that time.",
    ],
)

UNRELATED = article(  # a page that says nothing of the demo answer's claims
    "Growing tomatoes at home",
    [
        "Tomatoes need at least six hours of direct sunlight a day and well-drained soil rich in "
        "organic matter to produce a good crop.",
        "Water the plants deeply twice a week rather than a little every day, so that the roots "
        "grow down into the soil instead of staying near the surface.",
        "Pinch out the side shoots of cordon varieties as they appear, and support the main stem "
        "with a cane or a string tied to a frame above the plant.",
    ],
)


DEMO_ANSWER = """Water boils at 100 degrees Celsius at sea level [1]. In Denver it boils at about 95 degrees \
Celsius [1]. A pressure cooker lets water reach 150 degrees Celsius before it boils [1].

*Titanic* (1997) was directed by [James Cameron]({base}/titanic). It starred Brad Pitt and Kate \
Winslet ([film notes]({base}/titanic)). Titanic was released in 1998 ({base}/titanic). Its first cut \
ran for more than four hours ({base}/titanic-first-cut).

[1]: {base}/boiling
"""
"""A model's answer with one citation of each kind of verdict: supported (the first two
sentences, James Cameron), contradicted (released in 1998, against the page's 1997), not_found
(Brad Pitt is not in the page; the embedded judge does not read the pressure cooker's 150 degrees
against the page's 120 as a contradiction either) and unreachable (the first-cut page does not exist)."""


def demo_routes() -> dict[str, Route]:
    """The pages the demo answer cites (the first-cut page is deliberately missing: a dead link)."""
    return {
        "/boiling": Route(body=BOILING),
        "/old-report": Route(body=OLD_REPORT),
        "/titanic": Route(body=TITANIC),
    }


def demo_answer(site: LoopbackSite) -> str:
    """The demo answer with its citations pointing at ``site``."""
    return DEMO_ANSWER.format(base=site.base)


# -- verifying against the demo site ---------------------------------------------------------


def site_fetcher(site: LoopbackSite, settings: Settings) -> DirectFetcher:
    """A DirectFetcher configured from ``settings`` that lets ``site``'s own origin through the
    SSRF guard, and no other loopback or private address."""
    return build_direct_fetcher(settings, allowed_hosts=[f"127.0.0.1:{site.port}"])


def demo_verifier(site: LoopbackSite, settings: Settings | None = None) -> Verifier:
    """A Verifier for answers citing ``site`` (:func:`guardrail.runtime.build_verifier` with no
    stores and :func:`site_fetcher`); the embedder and judge come from ``settings`` (default: the
    environment), so the judge is the embedded one unless GUARDRAIL_JUDGE names another, and None
    when neither is available."""
    if settings is None:
        settings = Settings.from_env()
    return build_verifier(settings, cache=False, audit=False, fetcher=site_fetcher(site, settings))


def describe_judge(judge: Judge | None) -> str:
    """``name / model`` of ``judge``, or ``none``."""
    return judge.name + " / " + judge.model if judge else "none"


def note_if_no_judge(verifier: Verifier) -> None:
    """Say on stderr when ``verifier`` has no judge: reachable citations then read 'unverified'."""
    if verifier.judge is None:
        print(
            "note: no judge is available (the embedded judge model is not installed and GUARDRAIL_JUDGE "
            "names none), so every reachable citation will read 'unverified'; dead links are still "
            f"caught. {install_command('local')} or set GUARDRAIL_JUDGE=openai|anthropic|ollama for real verdicts.\n",
            file=sys.stderr,
        )


def print_report(report: AnswerReport, site: LoopbackSite) -> None:
    """One line per citation (how it is cited, its label, the path on ``site``, the evidence quote
    or the reason), then the overall label with the count of each label."""
    rows = [
        (f"[{ref.ref}]" if ref.ref else (ref.link_text or "link"), verdict)
        for claim in report.claims
        for ref, verdict in zip(claim.citations, claim.verdicts, strict=True)
    ]
    width = max((len(cited) for cited, _ in rows), default=0)
    for cited, verdict in rows:
        where = verdict.url.replace(site.base, "")
        why = " ".join((verdict.evidence_quote or verdict.reason or "").split())
        print(f"{cited:>{width}} {verdict.label.value:<13} {where:<24} {why[:72]}")
    counts = ", ".join(f"{n} {label}" for label, n in sorted(report.label_counts.items()))
    print(f"overall: {report.overall.value} - {support_summary(report)}; citations: {counts}")
