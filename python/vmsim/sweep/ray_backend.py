"""Runs a sweep's runs as Ray tasks, on a cluster or on a local Ray instance.

Ray schedules the tasks (one CPU each, and the memory the capacity guard
estimates, so a node takes only as many as fit), retries a task whose worker
died (``max_retries``), and hands each row back as soon as its task is done;
the driver makes it durable at once. Every node needs the same vmsim
installed: a row made by another version is recorded as failed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from vmsim import api
from vmsim.sweep.capacity import gib
from vmsim.sweep.grid import Run, SweepError
from vmsim.sweep.local import MAX_RETRIES
from vmsim.sweep.worker import error_row, execute

#: How long the driver waits for finished tasks before it looks again [s].
POLL_SECONDS = 0.1

OnRow = Callable[[dict[str, Any]], None]


def import_ray() -> Any:
    """The ray module, or a SweepError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise SweepError("--ray needs Ray: pip install 'vmsim[ray]'") from None
    return ray


def start(ray: Any, address: str | None, jobs: int) -> bool:
    """Connects to the cluster at ``address``, or starts a local instance of ``jobs`` CPUs.

    Returns whether this call started Ray (and so must shut it down).
    """
    if ray.is_initialized():
        return False
    opts: dict[str, Any] = {
        "logging_level": logging.ERROR,
        "log_to_driver": False,
        "include_dashboard": False,
    }
    try:
        if address:
            ray.init(address=address, **opts)
        else:
            ray.init(num_cpus=jobs, **opts)
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = (str(e).strip().splitlines() or [""])[0]
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise SweepError(f"--ray: cannot start or reach {where}: {first}") from None
    return True


def check_capacity(ray: Any, need: int) -> None:
    """Refuses (one line) a run that needs more memory than any node of the cluster has."""
    if need <= 0:
        return
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    most = max((n.get("Resources", {}).get("memory", 0) for n in nodes), default=0)
    if most and need > most:
        raise SweepError(
            f"a run needs about {gib(need)}; the largest Ray node offers {gib(most)} of memory"
        )


def _ray_execute(run: Run) -> dict[str, Any]:
    """The Ray task: the same work as a local worker's, with this node's vmsim version."""
    return execute(run)


def _version_checked(row: dict[str, Any], run: Run) -> dict[str, Any]:
    """A row from a node with another vmsim is recorded as failed: its key would lie."""
    mine = api.version()
    if row.get("vmsim_version") != mine:
        return error_row(run, f"node has vmsim {row.get('vmsim_version')}, driver {mine}")
    return row


def run_on_ray(
    runs: Sequence[Run],
    on_row: OnRow,
    *,
    address: str | None,
    jobs: int,
    need: int,
) -> None:
    """Runs every run as a Ray task, calling ``on_row(row)`` as each finishes."""
    ray = import_ray()
    started = start(ray, address, jobs)
    try:
        check_capacity(ray, need)
        task = ray.remote(_ray_execute).options(
            num_cpus=1, max_retries=MAX_RETRIES, memory=max(need, 1)
        )
        pending = {task.remote(r): r for r in runs}
        while pending:
            # Whatever finished within the poll interval, at least every 0.1 s.
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=POLL_SECONDS)
            for ref in ready:
                run = pending.pop(ref)
                try:
                    row = _version_checked(ray.get(ref), run)
                except ray.exceptions.RayError as e:
                    first = (str(e).strip().splitlines() or [""])[0]
                    row = error_row(run, f"Ray: {type(e).__name__}: {first}")
                on_row(row)
    finally:
        if started:
            ray.shutdown()
