"""What a sweep's worker does with one run: run it and flatten the result into a row.

A row is a flat dict: the run's identity (``run_key``, ``scenario_sha256``,
``vmsim_version``, ``scenario``, ``kernel``, ``seed``), every swept knob under
its dotted name, ``error`` (None when the run succeeded), ``wall_seconds``,
``host``, and the figures of the result (docs/output.md) as columns
``summary.NAME``, ``workload.NAME``, ``vmstat.NAME`` (all 192 items at the end)
and ``vmstat_delta.NAME`` (end minus boot, 0 for an item that did not change).
The same function runs in a local worker process and in a Ray task.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any

from vmsim import api
from vmsim.sweep.grid import Run

#: The columns every row has, in this order, before the knobs and the figures.
ID_COLUMNS = ("run_key", "scenario_sha256", "vmsim_version", "scenario", "kernel", "seed")
#: The columns after the knobs, before the figures.
RUN_COLUMNS = ("error", "wall_seconds", "host")
#: Prefixes of the result's figures.
RESULT_PREFIXES = ("summary.", "workload.", "vmstat.", "vmstat_delta.")


def identity(run: Run) -> dict[str, Any]:
    """The columns that name a run, its knobs included."""
    return {
        "run_key": run.key,
        "scenario_sha256": run.scenario_sha256,
        "vmsim_version": api.version(),
        "scenario": run.name,
        "kernel": None,
        "seed": run.seed,
        **run.knobs,
    }


def error_row(run: Run, error: str, wall_seconds: float | None = None) -> dict[str, Any]:
    """The row of a run that failed: its identity and the error, no figures."""
    host = socket.gethostname() if wall_seconds is not None else None
    return identity(run) | {"error": error, "wall_seconds": wall_seconds, "host": host}


def result_columns(data: dict[str, Any]) -> dict[str, Any]:
    """The figures of one result (the parsed JSON of ``vmsim run --json``) as columns."""
    cols: dict[str, Any] = {}
    for k, v in data["summary"].items():
        cols[f"summary.{k}"] = v
    for k, v in (data.get("workload") or {}).items():
        cols[f"workload.{k}"] = v
    delta = data.get("vmstat_delta") or {}
    for k, v in data["vmstat"].items():
        cols[f"vmstat.{k}"] = v
    for k in data["vmstat"]:
        cols[f"vmstat_delta.{k}"] = delta.get(k, 0)
    return cols


def execute(run: Run) -> dict[str, Any]:
    """Runs one run and returns its row; a run that fails gives a row with its error."""
    if run.error is not None:
        return error_row(run, run.error)
    t0 = time.perf_counter()
    try:
        r = api.run(run.text, seed=run.seed)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - a Rust panic is a BaseException
        first = (str(e).strip().splitlines() or [""])[0]
        return error_row(run, f"{type(e).__name__}: {first}", time.perf_counter() - t0)
    wall = time.perf_counter() - t0
    row = identity(run)
    row["scenario"] = r.data["scenario"]
    row["kernel"] = r.kernel
    row["seed"] = r.data["seed"]
    row |= {"error": None, "wall_seconds": wall, "host": socket.gethostname()}
    row |= result_columns(r.data)
    return row


def row_json(row: dict[str, Any]) -> str:
    """A row as one line of JSON (what a part file holds)."""
    return json.dumps(row)
