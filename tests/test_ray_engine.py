"""The Ray engine of ``guardrail batch``: a local Ray (2 CPUs, no dashboard) started by the tests,
the loopback fixture pages, the test judge and embedder in every actor (through ``RayOptions.stages``).

Same labels as the local engine for the same input; a rerun skips finished rows; an actor killed
mid-run is replaced and every row is in the output exactly once; without Ray, ``--engine ray``
exits 2 with the install command.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardrail._bridges import run_sync
from guardrail.apps.batch import arun_batch_file
from guardrail.apps.batch.checkpoint import BatchLockedError, checkpoint_path, lock_path
from guardrail.apps.batch.ray_engine import RAY_INSTALL_HINT, RayOptions, run_ray_batch_file, verify_dataset
from guardrail.runtime import build_runtime
from guardrail.settings import Settings
from guardrail.testing import HashEmbedder, LoopbackSite, OverlapJudge
from tests.fakes import fake_stages

ray = pytest.importorskip("ray", reason="the Ray engine tests need the [ray] extra (installed by [dev])")

ROOT = Path(__file__).resolve().parents[1]
CLAIM = "Pure water boils at 100 degrees Celsius at sea level."


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},  # the actors import tests.fakes
    )
    try:
        yield
    finally:
        ray.shutdown()


def settings() -> Settings:
    return Settings(allow_private_hosts=True, cache_path="off", audit_path="off")  # type: ignore[arg-type]


def write_rows(path: Path, pages: LoopbackSite, n: int = 12) -> Path:
    u = pages.url
    rows: list[dict[str, Any]] = []
    for i in range(n):
        if i % 3 == 0:
            rows.append({"id": f"c{i}", "claim": CLAIM, "urls": [u("/boiling"), u("/gone-404")]})
        elif i % 3 == 1:
            rows.append({"id": f"o{i}", "claim": CLAIM, "urls": [u("/old-report")]})  # the page says 50
        else:
            rows.append({"id": f"a{i}", "answer": f"{CLAIM} [1]\n\n[1]: {u('/boiling')}\n"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def labels(results: list[Any]) -> list[tuple[str, list[str]]]:
    return [(r.id, [v.label.value for _, _, v in r.verdicts()]) for r in results]


def options(**kw: Any) -> RayOptions:
    return RayOptions(workers=2, batch_size=2, rows_at_once=2, stages=fake_stages, cache=False, **kw)


def test_ray_and_local_engines_give_the_same_labels(local_ray: None, pages: LoopbackSite, tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "in.jsonl", pages)
    with build_runtime(settings(), judge=OverlapJudge(), embedder=HashEmbedder()) as runtime:
        local = run_sync(lambda: arun_batch_file(rows, tmp_path / "local.csv", verifier=runtime.verifier))
    on_ray = run_ray_batch_file(rows, tmp_path / "ray.csv", settings=settings(), options=options())
    assert labels(on_ray.results) == labels(local.results)
    assert {label for _, ls in labels(on_ray.results) for label in ls} == {"supported", "contradicted", "unreachable"}
    assert on_ray.summary.lines() == local.summary.lines()
    assert (tmp_path / "ray.csv").read_text() == (tmp_path / "local.csv").read_text()  # the same report
    assert [r.id for r in on_ray.results] == [r.id for r in local.results]  # input order kept


def test_a_rerun_skips_the_rows_already_done(local_ray: None, pages: LoopbackSite, tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "in.jsonl", pages, n=6)
    first = run_ray_batch_file(rows, tmp_path / "out.csv", settings=settings(), options=options())
    before = dict(pages.hits)
    starts: list[tuple[int, int]] = []
    second = run_ray_batch_file(
        rows, tmp_path / "out.csv", settings=settings(), options=options(), on_start=lambda t, d: starts.append((t, d))
    )
    assert starts == [(6, 6)] and second.summary.rows_resumed == 6
    assert pages.hits == before  # nothing fetched again
    assert labels(second.results) == labels(first.results)


def _kill_one_actor() -> int:
    """SIGKILL the process of one live actor of the pool (what a crash or ``ray.kill`` does)."""
    import ray._private.state as state  # no dashboard, so the private GCS view

    actors = [
        a for a in state.actors().values() if "RowVerifier" in a.get("ActorClassName", "") and a.get("State") == "ALIVE"
    ]
    pid = int(actors[0]["Pid"])
    os.kill(pid, signal.SIGKILL)
    return pid


def test_an_actor_killed_mid_run_is_replaced_and_no_row_is_lost_or_doubled(
    local_ray: None, pages: LoopbackSite, tmp_path: Path
) -> None:
    rows = write_rows(tmp_path / "in.jsonl", pages, n=24)
    killed: list[int] = []

    def on_row(result: Any) -> None:
        if not killed:
            killed.append(_kill_one_actor())

    done = run_ray_batch_file(rows, tmp_path / "out.csv", settings=settings(), options=options(), on_row=on_row)
    assert killed
    ids = [json.loads(line)["id"] for line in (tmp_path / "out.csv.checkpoint.jsonl").read_text().splitlines()]
    assert Counter(ids) == Counter(r.id for r in done.results) and len(ids) == 24 == len(set(ids))
    assert done.summary.rows_failed == 0


def test_the_actor_pool_is_set_up_without_ray_deprecation_warnings(local_ray: None) -> None:
    from ray.util.annotations import RayDeprecationWarning

    rows = ray.data.from_items([{"id": "r1", "claim": CLAIM, "urls": ["http://127.0.0.1:9/x"]}])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        verify_dataset(rows, settings(), options())
    assert not [str(w.message) for w in caught if issubclass(w.category, RayDeprecationWarning)]


def test_without_ray_the_engine_says_how_to_install_it(tmp_path: Path, pages: LoopbackSite) -> None:
    rows = write_rows(tmp_path / "in.jsonl", pages, n=1)
    code = (
        "import sys; sys.modules['ray'] = None; sys.modules['ray.data'] = None\n"  # as if Ray were not installed
        "from guardrail.apps.cli import main; sys.argv[0] = 'guardrail'; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "batch", str(rows), "--out", str(tmp_path / "o.csv"), "--engine", "ray"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )
    assert result.returncode == 2, result.stderr
    assert RAY_INSTALL_HINT in result.stderr
    assert not (tmp_path / "o.csv").exists()


def test_a_ray_run_on_an_out_another_run_writes_stops_before_any_work(tmp_path: Path, pages: LoopbackSite) -> None:
    rows = write_rows(tmp_path / "in.jsonl", pages, n=2)
    out = tmp_path / "out.csv"
    hold = (  # another run, as far as the lock goes
        "import filelock, sys, time\n"
        "lock = filelock.FileLock(sys.argv[1])\nlock.acquire()\n"
        "print('held', flush=True)\n"
        "time.sleep(99)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", hold, str(lock_path(out))], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(BatchLockedError, match="another batch run"):
            run_ray_batch_file(rows, out, settings=settings(), options=options())
    finally:
        holder.kill()
        holder.wait()
    checkpoint = checkpoint_path(out)  # the writability check may have created it, empty
    assert not out.exists() and (not checkpoint.exists() or checkpoint.read_text() == "")


@pytest.mark.parametrize("field", ["blocks_at_once", "batch_size", "rows_at_once", "cpus_per_worker"])
def test_ray_options_refuse_a_count_below_one(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        RayOptions(**{field: 0})


def test_an_actor_verifies_its_blocks_on_one_event_loop() -> None:
    import inspect

    from guardrail.apps.batch.ray_engine import RowVerifier

    # Async: Ray Data then runs ``blocks_at_once`` blocks of an actor together on its loop.
    assert inspect.iscoroutinefunction(RowVerifier.__call__)
    assert RayOptions().blocks_at_once == 2
