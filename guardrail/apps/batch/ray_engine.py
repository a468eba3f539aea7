"""Batch runs on Ray: the rows of a batch verified by a pool of actors across a cluster.

The driver reads and validates the input, skips the rows the checkpoint already holds, orders the
rest so that rows citing the same page sit next to each other (a page's rows then land in one
block, on one actor: fetched once), and hands them to Ray Data as a dataset. ``map_batches`` runs
them through an actor pool: each actor builds its verifier once (:func:`guardrail.runtime.
build_runtime`; the models load once per actor; the page cache is the node's SQLite file, shared by
the actors of a machine) and verifies each block of rows with the async core, several rows at a
time. Results stream back to the driver as they finish and are appended to the checkpoint (the
same JSONL as the local engine), so a rerun skips them; an actor that dies is replaced by Ray and
its block is verified again, and the driver keeps the first result of a row, so no row is lost or
written twice. The CSV, the HTML report and the figures are then computed from the results exactly
as by the local engine.

``ray`` is an optional extra: ``pip install 'citation-guardrail[ray]'``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from guardrail._onnx_backend import available as onnx_available
from guardrail._onnx_backend import set_default_threads
from guardrail.apps.batch.checkpoint import Checkpoint, checkpoint_path
from guardrail.apps.batch.engine import MEMO_PAGES, BatchResult, arun_batch, finish_run, is_done
from guardrail.apps.batch.results import RowResult
from guardrail.apps.batch.rows import BatchRow, page_order, read_rows, row_from_data
from guardrail.fetch.once import PageMemo
from guardrail.runtime import build_runtime
from guardrail.settings import ConfigurationError, Settings

if TYPE_CHECKING:
    import ray.data

__all__ = ["RAY_INSTALL_HINT", "RayOptions", "RowVerifier", "run_ray_batch_file", "verify_dataset"]

RAY_INSTALL_HINT = "the Ray engine needs Ray: pip install 'citation-guardrail[ray]'"
"""What to do when ``ray`` is missing."""


def require_ray() -> None:
    """Raise :class:`ConfigurationError` with the install command when Ray cannot be imported."""
    try:
        import ray.data  # noqa: F401
    except ImportError:
        raise ConfigurationError(RAY_INSTALL_HINT) from None


@dataclass(frozen=True)
class RayOptions:
    """How to run on Ray. ``address``: ``None`` starts a local Ray on this machine, ``"auto"``
    joins the cluster this machine belongs to, ``"ray://host:10001"`` a remote one. ``workers``:
    actors in the pool (default: one per ``cpus_per_worker`` CPUs of the cluster); each reserves
    ``cpus_per_worker`` CPUs and sets its model threads to that; ``rows_at_once`` rows are verified
    concurrently inside an actor (fetches overlap); ``batch_size`` rows per block;
    ``blocks_at_once``: blocks an actor verifies together on its event loop (one block's fetches
    overlap another's judging); ``local_cpus``:
    the CPUs of a Ray started here (default: all of them); ``stages``: a picklable function
    returning :func:`~guardrail.runtime.build_runtime` stage arguments (``judge``, ``embedder``,
    ``fetcher``) for each actor, to run other stages than the settings' (default: the settings');
    ``cache``: whether actors use their node's page cache (shared by the actors of a machine). The
    actors keep no audit store."""

    address: str | None = None
    workers: int | None = None
    cpus_per_worker: int = 1
    rows_at_once: int = 8
    batch_size: int = 16
    blocks_at_once: int = 2
    local_cpus: int | None = None
    stages: Callable[[], Mapping[str, Any]] | None = None
    cache: bool = True

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise ValueError("workers must be at least 1")
        if min(self.cpus_per_worker, self.rows_at_once, self.batch_size, self.blocks_at_once) < 1:
            raise ValueError("cpus_per_worker, rows_at_once, batch_size and blocks_at_once must be at least 1")


class RowVerifier:
    """A Ray Data actor: builds its verifier once, then verifies blocks of rows.

    Each input row is a :class:`~guardrail.apps.batch.rows.BatchRow` as a dict; each output row
    holds ``id``, ``error`` and ``result``: the :class:`~guardrail.apps.batch.results.RowResult`
    as JSON (the same shape as a line of the checkpoint).
    """

    def __init__(
        self,
        settings: Settings,
        cpus: int = 1,
        rows_at_once: int = 8,
        stages: Callable[[], Mapping[str, Any]] | None = None,
        cache: bool = True,
    ) -> None:
        _use_threads(cpus)
        self.rows_at_once = rows_at_once
        # The rows of a block share judge calls: one batched model pass instead of one per row.
        self.runtime = build_runtime(
            settings, cache=cache, audit=False, batch_judge_calls=True, **(stages() if stages else {})
        )
        judge = self.runtime.verifier.judge
        if judge is not None:
            judge.load()  # once per actor, not on the first block
        # One memo for all of the actor's blocks: rows are sharded by page, so a page's rows
        # (on this actor, in this and the neighbouring blocks) fetch and read it once.
        self.pages = PageMemo(limit=MEMO_PAGES)

    async def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        # Async, so the actor's event loop runs ``blocks_at_once`` blocks together: one block's
        # fetches wait while another's claims are judged, instead of the CPU idling in between.
        rows = [_row(data) for data in _records(batch)]
        results = await self._verify(rows)
        return {
            "id": [r.id for r in results],
            "error": [r.error or "" for r in results],
            "result": [r.model_dump_json() for r in results],
        }

    async def _verify(self, rows: list[BatchRow]) -> list[RowResult]:
        results, _ = await arun_batch(rows, self.runtime.verifier, concurrency=self.rows_at_once, memo=self.pages)
        return results


def _use_threads(cpus: int) -> None:
    """Model threads equal to the actor's CPUs (this is the actor's own process). Torch is set too
    only where the models run on it (no ONNX Runtime): importing it costs seconds per actor."""
    set_default_threads(cpus)
    if onnx_available():
        return
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(cpus)


def _records(batch: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The rows of a column batch (``{"id": [...], "claim": [...], ...}``) as dicts, without the
    columns a row does not have (Arrow fills them with nulls)."""
    columns = list(batch)
    size = len(batch[columns[0]]) if columns else 0
    for i in range(size):
        values = {name: _plain(batch[name][i]) for name in columns}
        yield {name: value for name, value in values.items() if value is not None}


def _plain(value: Any) -> Any:
    """A column value as plain Python: numpy arrays and scalars become lists and numbers, a null
    (None, or NaN in a column of numbers) becomes None."""
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _row(data: dict[str, Any]) -> BatchRow:
    """A validated row (from the driver: it carries its digest), or one of the input schema."""
    if "digest" in data and "kind" in data:
        return BatchRow.model_validate(data)
    return row_from_data(int(data.get("line", 0)), data)


def verify_dataset(
    rows: ray.data.Dataset,
    settings: Settings | None = None,
    options: RayOptions | None = None,
) -> ray.data.Dataset:
    """Verify a dataset of batch rows (the JSONL schema of ``guardrail batch``, validated) with an
    actor pool; returns a dataset with one row per input row: ``id``, ``error`` (empty when none)
    and ``result`` (the row's :class:`~guardrail.apps.batch.results.RowResult` as JSON). Lazy, as
    Ray datasets are: it runs when iterated or written (``write_parquet``, ``write_json``)."""
    require_ray()
    import ray.data

    options = options or RayOptions()
    settings = settings or Settings.from_env()
    return rows.map_batches(
        RowVerifier,
        fn_constructor_kwargs={
            "settings": settings,
            "cpus": options.cpus_per_worker,
            "rows_at_once": options.rows_at_once,
            "stages": options.stages,
            "cache": options.cache,
        },
        compute=ray.data.ActorPoolStrategy(size=options.workers, max_concurrent_calls_per_actor=options.blocks_at_once)
        if options.workers
        else ray.data.ActorPoolStrategy(max_concurrent_calls_per_actor=options.blocks_at_once),
        batch_size=options.batch_size,
        # Named remote parameters only: anything passed as **ray_remote_args (max_restarts...) makes
        # Ray warn that they are deprecated. An actor that dies is still replaced and its block
        # verified again: Ray Data's actor pools default to max_restarts=-1, max_task_retries=-1
        # (test_an_actor_killed_mid_run_is_replaced_and_no_row_is_lost_or_doubled holds it).
        num_cpus=options.cpus_per_worker,
    )


def _dataset_of(rows: Sequence[BatchRow], options: RayOptions) -> ray.data.Dataset:
    import ray.data

    items = [row.model_dump(mode="json") for row in page_order(rows)]
    blocks = max(1, -(-len(items) // options.batch_size))
    return ray.data.from_items(items, override_num_blocks=blocks)


def _connect(options: RayOptions) -> bool:
    """Join or start Ray; True when this call started it (and should shut it down)."""
    import ray

    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if options.address is None:
        kwargs["num_cpus"] = options.local_cpus or os.cpu_count() or 1
    ray.init(address=options.address, **kwargs)
    return True


def run_ray_batch_file(
    input_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    settings: Settings,
    options: RayOptions | None = None,
    html_path: str | os.PathLike[str] | None = None,
    fresh: bool = False,
    on_start: Callable[[int, int], None] | None = None,
    on_row: Callable[[RowResult], None] | None = None,
) -> BatchResult:
    """``guardrail batch --engine ray``: like :func:`~guardrail.apps.batch.engine.arun_batch_file`
    (same checkpoint, lock, CSV, HTML and figures), the rows verified by a Ray actor pool."""
    require_ray()
    options = options or RayOptions()
    rows = read_rows(input_path)
    checkpoint = Checkpoint(checkpoint_path(out))
    with checkpoint.locked(out):  # one run per --out, whatever the engine
        if fresh:
            checkpoint.reset()
        done = checkpoint.load()
        pending = [row for row in rows if not is_done(row, done)]
        if on_start is not None:
            on_start(len(rows), len(rows) - len(pending))
        fresh_results = _verify_pending(pending, checkpoint, settings, options, on_row) if pending else {}
    by_id = {**{r.id: r for r in done.values()}, **fresh_results}
    ordered = [by_id[row.id].model_copy(update={"line": row.line}) for row in rows]
    return finish_run(input_path, out, ordered, resumed=len(rows) - len(pending), html_path=html_path)


def _verify_pending(
    pending: Sequence[BatchRow],
    checkpoint: Checkpoint,
    settings: Settings,
    options: RayOptions,
    on_row: Callable[[RowResult], None] | None,
) -> dict[str, RowResult]:
    """Verify ``pending`` on the actor pool, each result appended to ``checkpoint`` as it comes."""
    import ray

    fresh_results: dict[str, RowResult] = {}
    started = _connect(options)
    try:
        results = verify_dataset(_dataset_of(pending, options), settings, options)
        for record in results.iter_rows():
            result = RowResult.model_validate_json(record["result"])
            if result.id in fresh_results:  # a block verified again after its actor died
                continue
            checkpoint.append(result)
            fresh_results[result.id] = result
            if on_row is not None:
                on_row(result)
    finally:
        if started:
            ray.shutdown()
    return fresh_results
