"""The sweep's figures of ``vmsim bench``: parallel efficiency and Ray's cost per task."""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from vmsim.sweep.runner import sweep

#: The default scenario cut to about one second of wall time per run.
SECOND_RUN = {"duration": "4500ms"}
#: A run of a few milliseconds: what is left of a Ray task's time is Ray's and the driver's.
TINY = {
    "name": "tiny",
    "duration": "20ms",
    "machine": {"memory": "128MiB", "cpus": 1},
    "task": [{"name": "t", "program": [{"op": "touch", "size": "1MiB"}]}],
}


def _default_with(overrides: dict[str, Any]) -> str:
    from vmsim import api

    return api.load_scenario(None, overrides)


def sweep_parallel_efficiency(runs: int = 4, scenario: Any = None) -> tuple[float, float]:
    """Runs per wall second of a sweep with 2 workers ÷ with 1, halved (1.0: perfect),
    and the share of the 2-worker sweep's wall time its workers spent in runs.

    ``runs`` runs of about a second each (the default scenario, seeds 1..runs,
    unless ``scenario`` is given), rows written to a Parquet file as in
    ``vmsim sweep``; the wall time is the whole sweep's, worker start-up
    included. The second figure tells the sweep's own cost (1 - busy) from the
    host's: on a host busy with other work, runs slow down with -j 2 while
    the workers stay busy.
    """
    scenario = scenario if scenario is not None else _default_with(SECOND_RUN)
    rate, busy = {}, 0.0
    for jobs in (1, 2):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            report = sweep(scenario, {}, seeds=range(1, runs + 1), jobs=jobs, output=Path(d) / "b")
            wall = time.perf_counter() - t0
        if report.failed:
            raise RuntimeError(f"bench sweep failed: {report.failures}")
        rate[jobs] = runs / wall
        busy = float(report.table["wall_seconds"].sum()) / (jobs * wall)
    return rate[2] / rate[1] / 2, busy


def ray_overhead_ms_per_task(tasks: int = 60) -> float | None:
    """Wall time of a sweep of ``tasks`` tiny runs on a one-CPU local Ray instance, less
    the runs' own time, per task [ms]; None without Ray.

    Counts what Ray adds (submission, scheduling, the result's transfer) and the
    driver's durable row; not Ray's start-up (a warm-up sweep starts the worker).
    """
    try:
        import ray
    except ImportError:
        return None
    ray.init(num_cpus=1, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        sweep(TINY, {"kernel.swappiness": [100, 101]}, ray=True)
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            grid = {"kernel.swappiness": list(range(tasks))}
            report = sweep(TINY, grid, ray=True, output=Path(d) / "b")
            wall = time.perf_counter() - t0
        if report.failed:
            raise RuntimeError(f"bench sweep failed: {report.failures}")
        busy = float(report.table["wall_seconds"].sum())
        return (wall - busy) / tasks * 1000
    finally:
        ray.shutdown()
