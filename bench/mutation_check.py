"""Mutation check of the guards: break each one on purpose and see whether its tests notice.

Each mutation is one hand-written source edit (a text found once, replaced; runs of whitespace in
it match any whitespace, so reformatting the source does not lose it) in a temporary copy of the
repository, followed by the tests that guard that behaviour (``pytest -x``, slow tests
left out). A mutation is *killed* when the tests fail, *survived* when they pass: a survivor is a
guard that no test holds. Covered: the quote guard, the SSRF guard, the fetch caps and codings,
charsets and home-page redirects, aggregation, the policy (unsafe links included), the service's
bearer token, the settings' parsing, and the text normalisation.

    .venv/bin/python bench/mutation_check.py            # all mutations, writes bench/results/mutation_check.json
    .venv/bin/python bench/mutation_check.py --only ssrf-translated-form quote-case-insensitive

The unmutated copy must pass every selected test first (else the check says so and stops).
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("guardrail", "tests", "integrations", "pyproject.toml", "README.md")


@dataclass(frozen=True)
class Mutation:
    """One deliberate bug: in ``file``, ``find`` (found exactly once by :func:`locate`) becomes ``replace``."""

    id: str
    area: str
    file: str
    find: str
    replace: str
    tests: tuple[str, ...]
    what: str


QUOTE_TESTS = ("tests/test_core_stages.py", "tests/test_verifier.py", "tests/test_text_normalisation.py")
SSRF_TESTS = ("tests/test_ssrf.py", "tests/test_ssrf_registries.py")
STATUS_TESTS = ("tests/test_status_promises.py",)
POLICY_TESTS = ("tests/test_policy.py", "tests/test_unsafe_links.py")
AUTH_TESTS = ("tests/test_server.py", "-k", "bearer or token")
SETTINGS_TESTS = ("tests/test_core_stages.py", "tests/test_ssrf.py", "-k", "Settings or opening or opt_in")
FETCH_TESTS = ("tests/test_fetch_bombs.py",)
AGGREGATE_TESTS = ("tests/test_core_stages.py", "tests/test_verify_texts.py", "tests/test_verifier.py")

QG = "guardrail/core/quote_guard.py"
SSRF = "guardrail/fetch/ssrf.py"
POLICY = "guardrail/core/policy.py"
AGG = "guardrail/core/aggregate.py"

MUTATIONS: tuple[Mutation, ...] = (
    # -- the quote guard ------------------------------------------------------------------------
    Mutation(
        "quote-first-five-words", "quote guard", QG,
        "return any(needle in normalize_for_match(p) for p in passages)",
        'return any(" ".join(needle.split()[:5]) in normalize_for_match(p) for p in passages)',
        QUOTE_TESTS, "a quote whose first five words are on the page is accepted (the rest invented)",
    ),
    Mutation(
        "quote-case-insensitive", "quote guard", QG,
        "return any(needle in normalize_for_match(p) for p in passages)",
        "return any(needle.lower() in normalize_for_match(p).lower() for p in passages)",
        QUOTE_TESTS, "the quote is matched case-insensitively",
    ),
    Mutation(
        "quote-empty-accepted", "quote guard", QG,
        "    if not needle:\n        return False", "    if not needle:\n        return True",
        QUOTE_TESTS, "an empty quote counts as found",
    ),
    Mutation(
        "quote-not-checked", "quote guard", QG,
        "if verdict.evidence_quote and quote_in_passages(verdict.evidence_quote, passages):",
        "if verdict.evidence_quote:",
        QUOTE_TESTS, "any non-empty quote is accepted",
    ),
    Mutation(
        "quote-confidence-kept", "quote guard", QG,
        "        confidence=0.0,", "        confidence=verdict.confidence,",
        QUOTE_TESTS, "a demoted verdict keeps the judge's confidence",
    ),
    Mutation(
        "quote-whole-page", "quote guard", "guardrail/verifier.py",
        "guarded = apply_quote_guard(verdicts[n], shown[n])",
        "guarded = apply_quote_guard(verdicts[n], source_passages[pairs[n][1]])",
        QUOTE_TESTS, "the quote is checked against the whole page, not the passages the judge was shown",
    ),
    # -- text normalisation ---------------------------------------------------------------------
    Mutation(
        "text-format-characters-kept", "normalisation", "guardrail/core/text.py",
        'unicodedata.normalize("NFKC", FORMAT_CHARACTERS.sub("", text))', 'unicodedata.normalize("NFKC", text)',
        QUOTE_TESTS, "zero-width spaces, soft hyphens, joiners stay in claims and passages",
    ),
    Mutation(
        "text-claims-not-normalised", "normalisation", "guardrail/verifier.py",
        "seen = [ClaimTask(normalize_text(t.claim), t.evidence, t.settle_at) for t in tasks]", "seen = list(tasks)",
        QUOTE_TESTS, "the judge sees the claim with its invisible characters",
    ),
    Mutation(
        "text-pages-not-normalised", "normalisation", "guardrail/verifier.py",
        "passages = split_passages(normalize_text(page.text)) if assessment.usable else []",
        "passages = split_passages(page.text) if assessment.usable else []",
        QUOTE_TESTS, "page passages keep their invisible characters",
    ),
    # -- the SSRF guard -------------------------------------------------------------------------
    Mutation(
        "ssrf-translated-form", "ssrf", SSRF,
        '    (_V6("::ffff:0:0:0/96"), "IPv4-translated"),\n    (_V6("64:ff9b:1::/48"), "local NAT64"),',
        '    (_V6("64:ff9b:1::/48"), "local NAT64"),',
        SSRF_TESTS, "the IPv4-translated form ::ffff:0:a.b.c.d is not read for the address it carries",
    ),
    Mutation(
        "ssrf-azure-host-endpoint", "ssrf", SSRF,
        '    _range("168.63.129.16/32", f"{_METADATA} (Azure host endpoint, WireServer)", always=True),\n', "",
        SSRF_TESTS, "Azure's host endpoint 168.63.129.16 is allowed",
    ),
    Mutation(
        "ssrf-eks-pod-identity-openable", "ssrf", SSRF,
        '"169.254.170.23/32", f"{_METADATA} (AWS EKS Pod Identity agent)", always=True',
        '"169.254.170.23/32", f"{_METADATA} (AWS EKS Pod Identity agent)", always=False',
        SSRF_TESTS, "allow_private opens the EKS Pod Identity agent",
    ),
    Mutation(
        "ssrf-metadata-after-opening", "ssrf", SSRF,
        "        if is_metadata(ip):\n",
        "        if self.allow_private:\n            return\n        if is_metadata(ip):\n",
        SSRF_TESTS, "allow_private skips the metadata check too",
    ),
    Mutation(
        "ssrf-any-embedding-routed", "ssrf", SSRF,
        "            if form in _ROUTED:\n                return None", "            return None",
        SSRF_TESTS, "Teredo, translated and local NAT64 forms around a public address pass",
    ),
    Mutation(
        "ssrf-teredo-unread", "ssrf", SSRF,
        "    if ip.teredo is not None:", "    if False:",
        SSRF_TESTS, "the addresses inside a Teredo address are not read",
    ),
    Mutation(
        "ssrf-cgnat-open", "ssrf", SSRF, '    _range("100.64.0.0/10", "shared (CGNAT)"),\n', "",
        SSRF_TESTS, "the shared (CGNAT) range 100.64.0.0/10 is public",
    ),
    Mutation(
        "ssrf-octal-as-decimal", "ssrf", SSRF,
        'return int(part, 8) if re.fullmatch(r"[0-7]+", part) else None',
        "return int(part) if part.isdigit() else None",
        SSRF_TESTS, "0177.0.0.1 is read as decimal",
    ),
    Mutation(
        "ssrf-resolved-unchecked", "ssrf", SSRF,
        "            if not self.is_allowed_host(host, port):\n                self._check_ip(address, host)",
        "            pass",
        SSRF_TESTS, "the addresses a name resolves to are not checked",
    ),
    Mutation(
        "ssrf-localhost-subdomains", "ssrf", SSRF,
        '(host == "localhost" or host.endswith(".localhost"))', '(host == "localhost")',
        SSRF_TESTS, "api.localhost is not refused by name",
    ),
    Mutation(
        "ssrf-allowed-host-any-port", "ssrf", SSRF,
        "return (host, port) in self.allowed_hosts or (host, None) in self.allowed_hosts",
        "return any(h == host for h, _ in self.allowed_hosts)",
        SSRF_TESTS, "an allowed host:port opens every port of that host",
    ),
    Mutation(
        "ssrf-ietf-assignments-open", "ssrf", SSRF,
        '    _range("192.0.0.0/24", "reserved (IETF protocol assignments)"),\n', "",
        SSRF_TESTS, "192.0.0.0/24 (IETF protocol assignments, 192.0.0.8 the dummy address) is public",
    ),
    Mutation(
        "ssrf-ipv6-not-global-fetched", "ssrf", SSRF,
        '    if isinstance(ip, ipaddress.IPv6Address) and not ip.is_global:\n        return "reserved"\n', "",
        SSRF_TESTS, "an IPv6 address in no listed range but not global (2001:100::1) is fetched",
    ),
    # -- statuses that are not the page's fault ---------------------------------------------------
    Mutation(
        "status-403-dead", "status", "guardrail/core/schema.py",
        "ACCESS_DENIED_STATUSES = frozenset({401, 403, 407, 451})",
        "ACCESS_DENIED_STATUSES = frozenset({401, 407, 451})",
        STATUS_TESTS, "a 403 (a bot wall) reads as a dead link",
    ),
    Mutation(
        "status-500-dead", "status", "guardrail/core/schema.py",
        "return status >= 500 or status in RETRYABLE_STATUSES", "return status > 500 or status in RETRYABLE_STATUSES",
        STATUS_TESTS, "a 500 (and 501, 599 ...) reads as a dead link",
    ),
    # -- fetch caps, codings, charsets, home pages ------------------------------------------------
    Mutation(
        "fetch-cap-off-by-one", "fetch", "guardrail/fetch/_http.py",
        "            if total > max_bytes:", "            if total >= max_bytes:",
        FETCH_TESTS, "a body of exactly max_bytes is too large",
    ),
    Mutation(
        "fetch-decode-unbounded", "fetch", "guardrail/fetch/_http.py",
        "piece = self._zlib.decompress(data, DECODE_STEP)", "piece = self._zlib.decompress(data)",
        FETCH_TESTS, "a network chunk is inflated whole before the cap is checked",
    ),
    Mutation(
        "fetch-stacked-codings-read", "fetch", "guardrail/fetch/_http.py",
        "if len(codings) > 1 or codings[0] not in _GZIP | _DEFLATE:", "if codings[-1] not in _GZIP | _DEFLATE:",
        FETCH_TESTS, "stacked codings (gzip, gzip) are read one layer deep",
    ),
    Mutation(
        "fetch-zstd-accepted", "fetch", "guardrail/fetch/_http.py",
        '_GZIP = frozenset({"gzip", "x-gzip"})', '_GZIP = frozenset({"gzip", "x-gzip", "zstd", "br"})',
        FETCH_TESTS, "zstd and br are taken for gzip",
    ),
    Mutation(
        "charset-any-python-codec", "fetch", "guardrail/fetch/convert.py",
        "    if encoding not in WEB_ENCODINGS:\n        return None", "",
        ("tests/test_fetch_direct.py", "-k", "charset or bogus"), "a declared rot13/zlib/idna charset is used",
    ),
    Mutation(
        "soft-404-threshold-300", "interpret", "guardrail/core/interpret.py",
        "SOFT_404_MAX_CHARS = 800", "SOFT_404_MAX_CHARS = 300",
        ("tests/test_interpret.py",), "the soft-404 size threshold moves from 800 to 300",
    ),
    Mutation(
        "homepage-any-two-letters", "interpret", "guardrail/core/interpret.py",
        'match.group("lang") is None or match.group("lang").lower() in LANGUAGE_CODES', "True",
        ("tests/test_interpret.py",), "any two letters and a slash is a locale root",
    ),
    # -- aggregation ----------------------------------------------------------------------------
    Mutation(
        "aggregate-supported-wins", "aggregation", AGG,
        "    seen = list(labels)\n    if Label.contradicted in seen:\n"
        "        return Label.contradicted\n    if Label.supported",
        "    seen = list(labels)\n    if Label.supported",
        AGGREGATE_TESTS, "a supported citation outweighs a contradicting one",
    ),
    Mutation(
        "aggregate-any-unreachable", "aggregation", AGG,
        "    if seen and all(label == Label.unreachable for label in seen):\n        return Label.unreachable\n"
        "    return Label.not_found\n",
        "    if Label.unreachable in seen:\n        return Label.unreachable\n    return Label.not_found\n",
        AGGREGATE_TESTS, "one unreachable citation makes the claim unreachable",
    ),
    Mutation(
        "aggregate-text-one-sentence", "aggregation", AGG,
        "if supported and supported >= min_supported * len(seen):", "if supported:",
        AGGREGATE_TESTS, "one supported sentence makes a whole text supported",
    ),
    # -- the policy -----------------------------------------------------------------------------
    Mutation(
        "policy-block-ignored", "policy", POLICY,
        "                blocked = blocked or Action.block in use.actions", "                blocked = blocked",
        POLICY_TESTS, "a citation whose action is block does not block",
    ),
    Mutation(
        "policy-strict-is-default", "policy", POLICY,
        'return cls(**{"contradicted": Action.block, "unsafe_link": Action.block, **overrides})',
        "return cls(**overrides)",
        POLICY_TESTS, "Policy.strict() blocks nothing",
    ),
    Mutation(
        "policy-dead-links-kept", "policy", POLICY,
        "        unreachable: ActionsLike = (Action.strip, Action.annotate),",
        "        unreachable: ActionsLike = Action.annotate,",
        POLICY_TESTS, "the default policy leaves dead links in",
    ),
    Mutation(
        "policy-unsafe-links-unseen", "policy", POLICY,
        "self.unsafe = find_unsafe_links(report.answer)", "self.unsafe: list[UnsafeLink] = []",
        POLICY_TESTS, "javascript:/data:/file: links are not looked for",
    ),
    Mutation(
        "policy-unsafe-never-stripped", "policy", POLICY,
        "            if Action.strip in actions:\n                text =",
        "            if False:\n                text =",
        POLICY_TESTS, "an unsafe link is badged but left live",
    ),
    Mutation(
        "unsafe-references-undecoded", "policy", "guardrail/core/unsafe_links.py",
        'head = html.unescape(_MD_ESCAPE.sub(r"\\1", target[:_PREFIX]))', "head = target[:_PREFIX]",
        POLICY_TESTS, "&#106;avascript: and javascript\\: hide the scheme",
    ),
    Mutation(
        "unsafe-code-not-skipped", "policy", "guardrail/core/unsafe_links.py",
        "        if _inside(code, link.start):\n            continue\n", "",
        POLICY_TESTS, "links inside code are stripped too",
    ),
    # -- the service's bearer token -----------------------------------------------------------------
    Mutation(
        "auth-prefix-match", "auth", "guardrail/apps/server/middleware.py",
        "hmac.compare_digest(token.strip(), api_key)",
        "bool(token.strip()) and api_key.startswith(token.strip())",
        AUTH_TESTS, "a prefix of the token is accepted",
    ),
    Mutation(
        "auth-token-contained", "auth", "guardrail/apps/server/middleware.py",
        "hmac.compare_digest(token.strip(), api_key)", "api_key in token",
        AUTH_TESTS, "any header value holding the token is accepted",
    ),
    Mutation(
        "auth-any-scheme", "auth", "guardrail/apps/server/middleware.py",
        'return scheme.lower() == b"bearer" and', "return",
        AUTH_TESTS, "Basic <token> or a bare token is accepted",
    ),
    Mutation(
        "auth-docs-public", "auth", "guardrail/apps/server/middleware.py",
        'PUBLIC_PATHS = frozenset({"/v1/health", "/health"})',
        'PUBLIC_PATHS = frozenset({"/v1/health", "/health", "/docs", "/openapi.json"})',
        AUTH_TESTS, "the API docs are served without the token",
    ),
    # -- settings parsing -----------------------------------------------------------------------
    Mutation(
        "settings-zero-is-on", "settings", "guardrail/settings.py",
        '    @field_validator("judge", mode="before")',
        '    @field_validator("allow_private_hosts", mode="before")\n    @classmethod\n'
        "    def _any_text_is_on(cls, value: Any) -> Any:\n        return bool(value)\n\n"
        '    @field_validator("judge", mode="before")',
        SETTINGS_TESTS, "GUARDRAIL_ALLOW_PRIVATE_HOSTS=0 or false reads as on",
    ),
    Mutation(
        "settings-blank-is-a-value", "settings", "guardrail/settings.py",
        "items() if value.strip() or name in _BLANK_REFUSED",
        "items() if True",
        SETTINGS_TESTS, "a blank variable is read as a value instead of unset",
    ),
    Mutation(
        "settings-max-bytes-unchecked", "settings", "guardrail/settings.py",
        'max_bytes: int = _env("GUARDRAIL_MAX_BYTES", default=DEFAULT_MAX_BYTES, gt=0)',
        'max_bytes: int = _env("GUARDRAIL_MAX_BYTES", default=DEFAULT_MAX_BYTES)',
        SETTINGS_TESTS, "GUARDRAIL_MAX_BYTES=0 or a negative cap is accepted",
    ),
)  # fmt: skip


def locate(source: str, find: str) -> list[tuple[int, int]]:
    """The spans of ``source`` that ``find`` matches, each run of whitespace in ``find`` matching any
    run of whitespace (a rewrapped line or a changed indent is the same code), and whitespace
    before or after a bracket, comma or dot optional (a formatter adds or drops it). Whitespace
    that starts or ends ``find`` must be there as given: the replacement keeps it."""
    pieces = [piece for piece in re.split(r"(\s+)", find) if piece]
    inner = range(1, len(pieces) - 1)  # leading and trailing whitespace (an indent, a newline) as given
    pattern = "".join(r"\s*" if n in inner and p.isspace() else re.escape(p) for n, p in enumerate(pieces))
    pattern = re.sub(r"(\\[(\[{,.])", r"\1\\s*", pattern)  # "f(" may be followed by a line break
    pattern = re.sub(r"(\\[)\]}])", r"\\s*\1", pattern)
    return [m.span() for m in re.finditer(pattern, source)]


def mutated(source: str, mutation: Mutation) -> str:
    """``source`` with ``mutation`` applied; ``ValueError`` unless its text is found exactly once."""
    spans = locate(source, mutation.find)
    if len(spans) != 1:
        raise ValueError(f"{mutation.id}: the text to mutate is found {len(spans)} times in {mutation.file}, not once")
    start, end = spans[0]
    return source[:start] + mutation.replace + source[end:]


def apply(tree: Path, mutation: Mutation) -> str:
    """Edit ``tree`` with ``mutation``; returns the file's original text (to put back)."""
    path = tree / mutation.file
    original = path.read_text(encoding="utf-8")
    path.write_text(mutated(original, mutation), encoding="utf-8")
    return original


def run_tests(tree: Path, tests: tuple[str, ...], timeout: float) -> tuple[bool, float, str]:
    """Run ``tests`` in ``tree``: (passed, seconds, the last lines of output)."""
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-m", "not slow", "-p", "no:cacheprovider", *tests]
    started = time.monotonic()
    try:
        out = subprocess.run(command, cwd=tree, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return False, timeout, "timed out (counted as killed: the tests did not pass)"
    tail = "\n".join((out.stdout + out.stderr).strip().splitlines()[-3:])
    return out.returncode == 0, time.monotonic() - started, tail


def copy_tree(destination: Path) -> Path:
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, destination / name)
    check = [sys.executable, "-c", "import guardrail; print(guardrail.__file__)"]
    where = subprocess.run(check, cwd=destination, capture_output=True, text=True, check=True).stdout.strip()
    if not Path(where).resolve().is_relative_to(destination.resolve()):
        raise RuntimeError(f"the copy imports guardrail from {where}, not from itself")
    return destination


def check(mutations: list[Mutation], timeout: float) -> dict[str, Any]:
    """Run each mutation's tests on a copy of the repository (after the unmutated copy passes them)."""
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mutation-check-") as tmp:
        tree = copy_tree(Path(tmp))
        for tests in dict.fromkeys(m.tests for m in mutations):
            passed, _, tail = run_tests(tree, tests, timeout)
            if not passed:
                raise SystemExit(f"the unmutated code fails {' '.join(tests)}:\n{tail}")
        for mutation in mutations:
            original = apply(tree, mutation)
            try:
                passed, seconds, tail = run_tests(tree, mutation.tests, timeout)
            finally:
                (tree / mutation.file).write_text(original, encoding="utf-8")
            outcome = "survived" if passed else "killed"
            print(f"{outcome:8} {mutation.id} ({seconds:.0f} s)", flush=True)
            results.append({**asdict(mutation), "result": outcome, "seconds": round(seconds, 1), "output": tail})
    killed = sum(1 for r in results if r["result"] == "killed")
    return {
        "bench": "mutation_check",
        "command": "python bench/mutation_check.py " + " ".join(sys.argv[1:]),
        "python": platform.python_version(),
        "mutations": len(results),
        "killed": killed,
        "survived": [r["id"] for r in results if r["result"] == "survived"],
        "score": round(killed / len(results), 3) if results else None,
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="mutation ids to run (default: all)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per test run")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "mutation_check.json")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or m.id in args.only]
    report = check(chosen, args.timeout)
    print(
        f"score {report['score']}: {report['killed']} of {report['mutations']} killed; survived: {report['survived']}"
    )
    if not args.only:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
