"""The capacity guard: host memory one run needs, and how many runs fit at once.

The engine computes what a run needs (``vmsim_core::capacity::need``, exposed
as ``_vmsim.capacity_need``): a 16-byte record per 4 KiB frame of the
simulated machine (``vmsim bench``: ``bytes_per_frame``), a use count, a
swap-cache entry, an owner and a memcg per swap slot (1 + 3 × 4 bytes), a
page-table slot per mapped page (8 bytes; at most every frame and every swap
slot is mapped), a record per task and per memory cgroup, and every sample of
the time series. A worker process adds its interpreter, vmsim and the result,
about 16–35 MiB (measured with ``ru_maxrss``; 64 MiB is allowed). A 1 TiB
machine without swap thus needs at most 1 TiB / 4 KiB × 24 B + 64 MiB ≈ 6.06
GiB, if its run uses every frame; it writes much less when it starts
(``at_start``: the frames boot writes, the swap map, tasks, cgroups and
samples) and grows with the memory it uses. Workers run side by side when
each one's whole need fits; a grid whose largest run does not fit that way
runs one worker at a time if that run's start fits, the run itself stopping
with one line if it outgrows the host.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from vmsim import _vmsim
from vmsim.sweep.grid import Run, SweepError

#: The frame record of the engine [bytes per 4 KiB frame] (the engine's BYTES_PER_FRAME).
BYTES_PER_FRAME = 16
#: The worker process besides the engine: interpreter, vmsim, the run's result [bytes].
WORKER_BASE_BYTES = 64 << 20
#: Left to the driver and the rest of the host when counting what fits [bytes].
HOST_RESERVE_BYTES = 512 << 20


def _need(text: str, part: str) -> int:
    """A part of what one run of the scenario ``text`` (a valid scenario) needs, with its
    worker process [bytes]."""
    need: dict[str, int] = json.loads(_vmsim.capacity_need(text))
    return need[part] + WORKER_BASE_BYTES


def run_bytes(text: str) -> int:
    """Host memory one run of the scenario ``text`` (a valid scenario) needs at most [bytes]."""
    return _need(text, "total")


def start_bytes(text: str) -> int:
    """Host memory one run of the scenario ``text`` writes before its first event [bytes]."""
    return _need(text, "at_start")


def available_bytes() -> int:
    """Memory the host can give without swapping: MemAvailable of /proc/meminfo [bytes]."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import os

    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def gib(b: float) -> str:
    """Bytes as GiB with one decimal, for messages."""
    return f"{b / (1 << 30):.1f} GiB"


def largest(runs: Sequence[Run]) -> tuple[int, Run | None]:
    """The most memory any run needs, and that run (invalid runs need none)."""
    best, which = 0, None
    for r in runs:
        if r.error is None:
            need = run_bytes(r.text)
            if need > best:
                best, which = need, r
    return best, which


def fit_jobs(runs: Sequence[Run], jobs: int, available: int) -> tuple[int, int]:
    """How many of ``jobs`` workers fit in ``available`` bytes, and the need per worker.

    Raises SweepError (one line) when not even one worker fits.
    """
    need, which = largest(runs)
    if which is None:
        return jobs, 0
    room = max(available - HOST_RESERVE_BYTES, 0)
    fit = min(jobs, room // need)
    if fit < 1:
        start, which = max(
            ((start_bytes(r.text), r) for r in runs if r.error is None), key=lambda p: p[0]
        )
        if start <= room:
            return 1, need
        knobs = ", ".join(f"{k}={v}" for k, v in which.knobs.items()) or "the scenario"
        raise SweepError(
            f"{knobs} needs about {gib(start)} per worker to start; this host has "
            f"{gib(available)} available: the grid cannot run here"
        )
    return fit, need
