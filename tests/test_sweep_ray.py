"""Tests of sweeps on Ray: the same rows as on the local cores, a killed worker retried.

Ray (the ``ray`` extra, installed by ``make install``) runs here as a local
instance started by ``ray.init(num_cpus=2)`` in this process, as a cluster's
driver would find it; ``vmsim sweep --ray`` starting and stopping its own is
the example of docs/sweeps.md (tests/test_docs_examples.py).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from pathlib import Path

import polars as pl
import pytest
import ray  # the test extra installs it: a missing Ray fails here rather than skips
from vmsim import sweep as sw

DATA = Path(__file__).resolve().parent / "data" / "scenarios"
SMALL = DATA / "small.toml"
SLOW = DATA / "sweep_slow.toml"
GRID = {"kernel.min_free_kbytes": [4096, 8192], "machine.memory": ["256MiB", "512MiB"]}
WALL = ["wall_seconds", "host"]


def _values(df: pl.DataFrame) -> pl.DataFrame:
    return df.drop(WALL).sort("run_key")


@pytest.fixture(scope="module")
def local_rows() -> pl.DataFrame:
    """The 2 × 2 × 2 grid on the local cores."""
    return sw.run_grid(SMALL, GRID, seeds=[1, 2], jobs=2)


@pytest.fixture(scope="module")
def ray_instance():
    """A local Ray instance of two CPUs that the sweeps find already running."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    yield
    ray.shutdown()


def test_grid_on_ray_gives_the_same_rows(ray_instance, local_rows, tmp_path):
    out = tmp_path / "g.parquet"
    df = sw.run_grid(SMALL, GRID, seeds=[1, 2], ray=True, output=out)
    assert df.height == 8 and df["error"].null_count() == 8
    assert _values(df).equals(_values(local_rows))
    assert _values(pl.read_parquet(out)).equals(_values(local_rows))
    assert ray.is_initialized()  # found running, left running


def _ray_task_pids() -> list[int]:
    """Ray worker processes running a sweep task (Ray titles them ray::_ray_execute)."""
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if (p / "cmdline").read_bytes().startswith(b"ray::_ray_execute"):
                    pids.append(int(p.name))
            except OSError:
                pass
    return pids


def test_killed_ray_worker_is_retried(ray_instance, tmp_path):
    killed: list[int] = []

    def kill_one() -> None:
        end = time.monotonic() + 30
        while not killed and time.monotonic() < end:
            pids = _ray_task_pids()
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one)
    killer.start()
    df = sw.run_grid(SLOW, {}, seeds=[1, 2, 3], ray=True, output=tmp_path / "k.parquet")
    killer.join()
    assert killed, "no Ray task was seen running"
    assert df.height == 3 and df["error"].null_count() == 3, df["error"].to_list()
