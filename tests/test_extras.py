"""The core without its extras: it imports and works, and each missing extra is an error naming the
command that installs it, where the extra is used.

Absence is simulated in a fresh interpreter by ``sys.modules[name] = None`` (an import of it then
fails as if it were not installed), before anything of ours is imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from guardrail.extras import EXTRAS, MissingExtraError, install_command, require_extra
from guardrail.settings import ConfigurationError

ROOT = Path(__file__).resolve().parents[1]
HEAVY = [module for extra in ("local", "llm", "server", "cli", "ray") for module in EXTRAS[extra]]

PROBE = textwrap.dedent(
    """
    import json, sys
    for name in json.loads(sys.argv[1]):
        sys.modules[name] = None
    out = {}

    def attempt(key, call):
        try:
            out[key] = {"ok": repr(call())}
        except SystemExit as exc:
            out[key] = {"exit": exc.code}
        except Exception as exc:
            out[key] = {"error": type(exc).__name__, "message": str(exc),
                        "import_error": isinstance(exc, ImportError)}

    import guardrail
    from guardrail import Policy, Settings, Verifier, apply_policy, extract_claims
    from guardrail.runtime import build_judge

    out["extract"] = len(extract_claims("Water boils at 100 degrees Celsius [1].\\n\\n[1]: https://x.org/a").claims)
    out["policy"] = Policy.preset("strict").model_dump(mode="json")["contradicted"]
    attempt("build_verifier", lambda: guardrail.build_verifier())
    attempt("verifier_with_stages", lambda: type(Verifier(judge=None, embedder=guardrail.FunctionEmbedder(
        lambda texts: [[1.0, 0.0]] * len(texts), "two-d"))).__name__)
    attempt("default_judge", lambda: build_judge(Settings()))
    attempt("required_judge", lambda: build_judge(Settings(), required=True))
    attempt("local_judge", lambda: build_judge(Settings(judge="local")))
    attempt("openai_judge", lambda: build_judge(Settings(judge="openai", openai_api_key="k")))
    attempt("ollama_judge", lambda: build_judge(Settings(judge="ollama")))
    attempt("anthropic_judge", lambda: build_judge(Settings(judge="anthropic", anthropic_api_key="k")))
    attempt("import_openai_judge", lambda: __import__("guardrail.judges", fromlist=["OpenAIJudge"]).OpenAIJudge)
    attempt("embedder", lambda: __import__("guardrail.retrieval", fromlist=["x"]).MiniLMEmbedder())
    attempt("server", lambda: __import__("guardrail.apps.server"))
    attempt("batch", lambda: __import__("guardrail.apps.batch", fromlist=["x"]).arun_batch.__name__)
    from guardrail.apps.cli import main
    sys.argv[1:] = sys.argv[2:]
    attempt("cli", main)
    print(json.dumps(out))
    """
)


def probe(blocked: list[str], *cli_args: str) -> dict[str, Any]:
    """Run the probe in a fresh interpreter with ``blocked`` modules missing; its findings."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(blocked), *cli_args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["stderr"] = done.stderr
    return result


@pytest.fixture(scope="module")
def bare() -> dict[str, Any]:
    """The core alone: every extra missing."""
    return probe(HEAVY)


@pytest.fixture(scope="module")
def cli_without_server() -> dict[str, Any]:
    """The [cli] extra without [server], running ``guardrail serve``."""
    return probe([*EXTRAS["server"], *EXTRAS["local"]], "serve", "--port", "8000")


def names(result: dict[str, Any], extra: str) -> None:
    assert result.get("import_error") is True, result
    assert install_command(extra) in result["message"], result


def test_the_core_imports_and_works_without_any_extra(bare: dict[str, Any]) -> None:
    assert bare["extract"] == 1
    assert bare["policy"] == ["block"]
    assert bare["verifier_with_stages"] == {"ok": "'Verifier'"}  # stages of one's own need no extra
    assert bare["batch"] == {"ok": "'arun_batch'"}  # the engine; only the HTML report needs Jinja2


def test_the_default_embedder_names_the_local_extra(bare: dict[str, Any]) -> None:
    names(bare["build_verifier"], "local")
    assert "embedder" in bare["build_verifier"]["message"]
    names(bare["embedder"], "local")


def test_judges_name_their_extra_where_one_is_required(bare: dict[str, Any]) -> None:
    assert bare["default_judge"] == {"ok": "None"}  # the verifier copes: no_judge_configured
    names(bare["required_judge"], "local")
    names(bare["local_judge"], "local")
    for key in ("openai_judge", "ollama_judge", "anthropic_judge", "import_openai_judge"):
        names(bare[key], "llm")
    assert "anthropic" in bare["anthropic_judge"]["message"]


def test_the_server_names_the_server_extra(bare: dict[str, Any]) -> None:
    names(bare["server"], "server")


def test_the_command_line_names_the_cli_extra(bare: dict[str, Any]) -> None:
    assert bare["cli"] == {"exit": 2}
    assert install_command("cli") in bare["stderr"]
    assert "Traceback" not in bare["stderr"]


def test_guardrail_serve_names_the_server_extra(cli_without_server: dict[str, Any]) -> None:
    assert cli_without_server["cli"] == {"exit": 2}
    assert install_command("server") in cli_without_server["stderr"]
    assert "Traceback" not in cli_without_server["stderr"]


def test_the_error_is_a_configuration_error_and_an_import_error() -> None:
    with pytest.raises(MissingExtraError) as info:
        require_extra("ray", "a test", ("guardrail_no_such_module",), alternative="or do without")
    assert isinstance(info.value, ImportError) and isinstance(info.value, ConfigurationError)
    assert str(info.value) == (
        "a test needs the [ray] extra (guardrail_no_such_module is not installed): "
        "pip install 'citation-guardrail[ray]'; or do without"
    )
    require_extra("cli", "a test")  # installed here: no error
