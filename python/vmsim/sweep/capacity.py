"""The capacity guard: host memory one run needs, and how many runs fit at once.

A run's engine keeps a 16-byte record per 4 KiB frame of the simulated machine
(``vmsim bench``: ``bytes_per_frame``), a use count and a swap-cache entry per
swap slot (``SwapInfo`` in mm/swapfile.rs: 1 + 4 bytes), and a page-table slot
per mapped page of each task (4 bytes; at most every frame and every swap slot
is mapped), in a worker process whose interpreter, vmsim and result take
about 16–35 MiB (measured with ``ru_maxrss``; 64 MiB is allowed). A 1 TiB
machine without swap thus needs 1 TiB / 4 KiB × 20 B + 64 MiB ≈ 5.06 GiB.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from typing import Any

from vmsim import api
from vmsim.sweep.grid import Run, SweepError

PAGE_SIZE = 4096
#: The frame record of the engine [bytes per 4 KiB frame].
BYTES_PER_FRAME = 16
#: swap_map use count (1) and swap cache entry (4) [bytes per swap slot].
BYTES_PER_SWAP_SLOT = 5
#: A task's page-table slot [bytes per mapped page].
BYTES_PER_MAPPED_PAGE = 4
#: The worker process besides the engine: interpreter, vmsim, the run's result [bytes].
WORKER_BASE_BYTES = 64 << 20
#: Left to the driver and the rest of the host when counting what fits [bytes].
HOST_RESERVE_BYTES = 512 << 20

_SIZE_UNITS = {
    "": 1,
    "B": 1,
    "K": 1 << 10,
    "KiB": 1 << 10,
    "k": 1 << 10,
    "M": 1 << 20,
    "MiB": 1 << 20,
    "G": 1 << 30,
    "GiB": 1 << 30,
    "T": 1 << 40,
    "TiB": 1 << 40,
    "KB": 1000,
    "kB": 1000,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
}


def parse_size(value: Any) -> int:
    """Bytes of a size as the engine reads it (mirrors ``units::parse_size``): ``"8GiB"``, 4096."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    i = len(text)
    while i and not (text[i - 1].isdigit() or text[i - 1] in "._"):
        i -= 1
    num, unit = text[:i].replace("_", ""), text[i:].strip()
    return round(float(num) * _SIZE_UNITS[unit])


def _machine_default(name: str) -> Any:
    return next(k["default"] for k in api.knobs() if (k["section"], k["name"]) == ("machine", name))


def run_bytes(text: str) -> int:
    """Host memory one run of the scenario ``text`` (valid TOML) needs at most [bytes]."""
    machine = tomllib.loads(text).get("machine", {})
    frames = parse_size(machine.get("memory", _machine_default("memory"))) // PAGE_SIZE
    slots = parse_size(machine.get("swap", _machine_default("swap"))) // PAGE_SIZE
    engine = frames * BYTES_PER_FRAME + slots * BYTES_PER_SWAP_SLOT
    return engine + (frames + slots) * BYTES_PER_MAPPED_PAGE + WORKER_BASE_BYTES


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
        knobs = ", ".join(f"{k}={v}" for k, v in which.knobs.items()) or "the scenario"
        raise SweepError(
            f"{knobs} needs about {gib(need)} per worker; this host has {gib(available)} "
            "available: the grid cannot run here"
        )
    return fit, need
