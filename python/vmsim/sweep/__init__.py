"""Sweeps: a scenario run over a grid of knob values and seeds, in parallel.

>>> from vmsim.sweep import run_grid
>>> df = run_grid("scenarios/thpfioscale.toml",
...               {"kernel.watermark_boost_factor": [0, 15000], "machine.memory": ["4GiB"]},
...               seeds=[1, 2, 3], output="boost.parquet")
>>> df.group_by("kernel.watermark_boost_factor").agg(pl.col("summary.extfrag_events").mean())

``grid`` is a mapping key → values (every combination is run) or a list of
override dicts (points whose knobs move together). Runs go to worker
processes on the local cores, or to Ray (``ray=True`` for a local instance,
``ray="ADDRESS"`` for a cluster). With ``output``, every finished run is on
disk at once and a later call with the same output runs only what is
missing (:mod:`vmsim.sweep.store`). The table has one row per run
(:mod:`vmsim.sweep.worker` lists the columns).
"""

from typing import Any

from vmsim.sweep.grid import (
    Run,
    SweepError,
    cartesian,
    parse_seed_list,
    parse_set,
    parse_sets,
    plan,
)

__all__ = [
    "Run",
    "SweepError",
    "SweepReport",
    "cartesian",
    "parse_seed_list",
    "parse_set",
    "parse_sets",
    "plan",
    "run_grid",
    "sweep",
]

_RUNNER = ("SweepReport", "run_grid", "sweep")


def __getattr__(name: str) -> Any:
    """The driver's names, imported on first use (it brings polars, which the CLI's
    other commands do not need)."""
    if name in _RUNNER:
        from vmsim.sweep import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'vmsim.sweep' has no attribute '{name}'")
