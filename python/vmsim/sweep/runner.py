"""The driver of a sweep: plans the runs, skips the finished ones, runs the rest, saves rows."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from vmsim import api
from vmsim.sweep import capacity
from vmsim.sweep.grid import Run, SweepError, cartesian, plan
from vmsim.sweep.store import ResultStore, rows_frame

Grid = Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]]
#: ``progress(done, total, failed)`` after every finished run of this call.
Progress = Callable[[int, int, int], None]


@dataclass
class SweepReport:
    """What a sweep did: counts, failures by error, and the table of its runs."""

    total: int
    already: int = 0
    ran: int = 0
    failed: int = 0
    retried: int = 0
    jobs: int = 1
    interrupted: bool = False
    wall_seconds: float = 0.0
    failures: dict[str, int] = field(default_factory=dict)
    table: pl.DataFrame = field(default_factory=pl.DataFrame)


def default_jobs() -> int:
    """One worker per core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def points_of(grid: Grid) -> list[dict[str, Any]]:
    """The grid's points: the cartesian product of a mapping, or the given list."""
    if isinstance(grid, Mapping):
        return cartesian(grid)
    points = [dict(p) for p in grid]
    return points or [{}]


def _todo(runs: Sequence[Run], done: Mapping[str, str | None], retry_failed: bool) -> list[Run]:
    """The runs not yet finished (and, with ``retry_failed``, those that failed)."""
    return [r for r in runs if r.key not in done or (retry_failed and done[r.key] is not None)]


def sweep(
    scenario: api.ScenarioLike,
    grid: Grid,
    *,
    seeds: Sequence[int] | None = None,
    jobs: int | None = None,
    ray: bool | str = False,
    output: str | Path | None = None,
    retry_failed: bool = False,
    progress: Progress | None = None,
    note: Callable[[str], None] | None = None,
) -> SweepReport:
    """Runs the grid and returns a SweepReport; Ctrl-C stops it with what finished saved.

    ``note(text)`` receives one-line remarks (parallelism lowered to fit memory).
    Raises SweepError or ScenarioError (one line) for bad input.
    """
    t0 = time.monotonic()
    if jobs is not None and jobs < 1:
        raise SweepError(f"-j {jobs}: at least one worker")
    runs = plan(scenario, points_of(grid), seeds)
    if all(r.error is not None for r in runs):
        raise SweepError(f"no point of the grid is a valid scenario: {runs[0].error}")
    jobs = jobs or default_jobs()
    store = ResultStore(Path(output)).open() if output is not None else None
    rows: list[dict[str, Any]] = []
    try:
        done = store.done() if store else {}
        todo = _todo(runs, done, retry_failed)
        report = SweepReport(total=len(runs), already=len(runs) - len(todo))
        need = capacity.largest(todo)[0]
        if not ray:
            fit, need = capacity.fit_jobs(todo, jobs, capacity.available_bytes())
            if fit < min(jobs, len(todo)) and note:
                note(
                    f"{fit} worker(s) instead of {jobs}: each needs about {capacity.gib(need)} "
                    f"and {capacity.gib(capacity.available_bytes())} is available"
                )
            jobs = fit
        report.jobs = jobs

        failed_now = 0

        def on_row(row: dict[str, Any]) -> None:
            nonlocal failed_now
            if store:
                store.add(row)
            else:
                rows.append(row)
            report.ran += 1
            failed_now += row.get("error") is not None
            if progress:
                progress(report.ran, len(todo), failed_now)

        def on_retry(run: Run, how: str) -> None:
            report.retried += 1
            if note:
                note(f"run {run.key[:12]} again: its worker was {how}")

        if progress and todo:
            progress(0, len(todo), 0)
        try:
            _execute(todo, on_row, on_retry, jobs=jobs, ray=ray, need=need)
        except KeyboardInterrupt:
            report.interrupted = True
        order = [r.key for r in runs]
        if store:
            table = store.merge(order)
        else:
            table = rows_frame(rows)
        mine = set(order)
        table = _in_order(table.filter(pl.col("run_key").is_in(mine)), order)
    finally:
        if store:
            store.close()
    errors = table["error"].drop_nulls().to_list() if "error" in table.columns else []
    report.failed = len(errors)
    report.failures = dict(Counter(errors).most_common())
    report.table = table
    report.wall_seconds = time.monotonic() - t0
    return report


def _in_order(table: pl.DataFrame, order: Sequence[str]) -> pl.DataFrame:
    rank = {k: i for i, k in enumerate(order)}
    ranks = table["run_key"].replace_strict(rank, return_dtype=pl.Int64)
    return table.with_columns(ranks.alias("_rank")).sort("_rank").drop("_rank")


def _execute(
    todo: Sequence[Run],
    on_row: Callable[[dict[str, Any]], None],
    on_retry: Callable[[Run, str], None],
    *,
    jobs: int,
    ray: bool | str,
    need: int,
) -> None:
    """Records the invalid runs at once and sends the others to the workers or to Ray."""
    from vmsim.sweep.worker import error_row

    valid = []
    for r in todo:
        if r.error is not None:
            on_row(error_row(r, r.error))
        else:
            valid.append(r)
    if not valid:
        return
    if ray:
        from vmsim.sweep.ray_backend import run_on_ray

        address = ray if isinstance(ray, str) else None
        run_on_ray(valid, on_row, address=address, jobs=jobs, need=need)
    else:
        from vmsim.sweep.local import LocalPool

        LocalPool(jobs).run(valid, on_row, on_retry)


def run_grid(
    scenario: api.ScenarioLike,
    grid: Grid,
    *,
    seeds: Sequence[int] | None = None,
    jobs: int | None = None,
    ray: bool | str = False,
    output: str | Path | None = None,
    retry_failed: bool = False,
    progress: Progress | None = None,
) -> pl.DataFrame:
    """Runs ``scenario`` at every point of ``grid`` with every seed; one row per run.

    ``grid``: ``{"kernel.reclaim_limit": [1, 2, 4]}`` (every combination of the
    keys' values) or ``[{"kernel.reclaim_limit": 0, "kernel.reclaim_throttle": "off"}, …]``
    (points given one by one). ``seeds`` None runs each point with its scenario's
    seed. ``jobs`` workers (default: one per core), or Ray with ``ray=True``
    (a local instance) or ``ray="ADDRESS"``. With ``output`` (a .parquet path)
    the rows are kept there and runs already in it are not run again. A run
    that fails is a row whose ``error`` says why. Ctrl-C raises
    KeyboardInterrupt after the finished rows are saved.
    """
    report = sweep(
        scenario,
        grid,
        seeds=seeds,
        jobs=jobs,
        ray=ray,
        output=output,
        retry_failed=retry_failed,
        progress=progress,
    )
    if report.interrupted:
        raise KeyboardInterrupt
    return report.table
