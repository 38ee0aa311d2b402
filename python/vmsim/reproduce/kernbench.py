"""Kernel builds as task programs: the tree untarred, then compile jobs that read
their sources, fault in anonymous memory, compute and write an object file. The
seed 001 (kernbench, stress-highalloc's builds) and seed 002 (the kernel build)
reproductions share them; each job's size and CPU time is drawn from the run's
seed, so runs differ as repeated real builds do and the same seed gives the same
bytes.
"""

from __future__ import annotations

import random
from typing import Any

from vmsim.reproduce.common import scaled_bytes
from vmsim.units import fmt_bytes, fmt_ms, parse_duration, parse_size

__all__ = ["Jobs", "compile_job", "kernbench_tasks", "untar"]


class Jobs:
    """Draws compile jobs (anonymous size [bytes], CPU time [s]) from a run's seed."""

    def __init__(self, wl: dict[str, Any], scale: float, rng: random.Random) -> None:
        self.amin = parse_size(wl["anon_min"])
        self.amax = parse_size(wl["anon_max"])
        self.cpu = parse_duration(wl["cpu_time"])
        self.scale = scale
        self.rng = rng

    def draw(self) -> tuple[int, float]:
        """The next job: its anonymous memory [bytes] and CPU time [s], both scaled."""
        anon = scaled_bytes(self.rng.uniform(self.amin, self.amax), self.scale)
        cpu = self.cpu * self.scale * self.rng.uniform(0.8, 1.2)
        return anon, cpu


def untar(prefix: str, jobs: int, file_size: int, inodes: int) -> list[dict[str, Any]]:
    """tar: the tree's files (one per job), and the inodes and dentries they create."""
    ops: list[dict[str, Any]] = []
    per, extra = divmod(inodes, jobs)
    for j in range(jobs):
        n = per + (1 if j < extra else 0)
        ops.append({"op": "write", "file": f"{prefix}src{j}", "size": fmt_bytes(file_size)})
        if n:
            ops.append({"op": "slab", "cache": "xfs_inode", "objects": n})
            ops.append({"op": "slab", "cache": "dentry", "objects": n})
    return ops


def compile_job(prefix: str, j: int, anon: int, cpu: float, obj: int) -> list[dict[str, Any]]:
    """One compile job: read sources, fault in anon memory, compute, write the object, exit."""
    return [
        {"op": "read", "file": f"{prefix}src{j}"},
        {"op": "touch", "size": fmt_bytes(anon)},
        {"op": "compute", "time": fmt_ms(cpu)},
        {"op": "unlink", "file": f"{prefix}obj{j}"},
        {"op": "write", "file": f"{prefix}obj{j}", "size": fmt_bytes(obj)},
        {"op": "unmap", "size": fmt_bytes(anon)},
    ]


def kernbench_tasks(
    wl: dict[str, Any], scale: float, rng: random.Random
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """kernbench: tar the tree, then ``parallel`` cc1 tasks (make -jN) compile its
    ``jobs`` files ``iterations`` times; each job's size and CPU time drawn from ``rng``."""
    jobs = int(wl["jobs"])
    par = int(wl["parallel"])
    tree = scaled_bytes(parse_size(wl["tree"]) / jobs, scale)
    obj = scaled_bytes(wl["object"], scale)
    inodes = max(0, round(int(wl["inodes"]) * scale))
    draw = Jobs(wl, scale, rng)
    job_list = [draw.draw() for _ in range(jobs)]
    tasks: list[dict[str, Any]] = [{"name": "tar", "program": untar("", jobs, tree, inodes)}]
    start = fmt_ms(parse_duration(wl["start"]) * scale)
    for i in range(par):
        prog: list[dict[str, Any]] = []
        for j in range(i, jobs, par):
            anon, cpu = job_list[j]
            prog += compile_job("", j, anon, cpu, obj)
        tasks.append(
            {"name": "cc1", "start": start, "repeat": int(wl["iterations"]), "program": prog}
        )
    return tasks, {}
