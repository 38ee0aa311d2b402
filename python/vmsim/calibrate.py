"""`vmsim calibrate`: measures this machine's per-operation costs on its running kernel.

Each figure comes from a microbenchmark of one operation (crates/vmsim-calibrate, run in
this process through the extension, or in a child it forks), repeated; the knob's value is
the median over the repetitions and its spread the lowest and highest. A knob derived from
two figures (a page fault less a touch, a round trip less its system calls) is derived
repetition by repetition. No experiment of ``vmsim fidelity`` and no seed figure is used:
calibration measures, it does not fit. Knobs no microbenchmark here can isolate keep the
values of the profile given as ``base`` and are listed as estimates. docs/cost-model.md
gives the method of each figure.
"""

from __future__ import annotations

import datetime
import itertools
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from vmsim import _vmsim, api, kprofile
from vmsim.fidelity import host

MEMCG_ROOT = Path("/sys/fs/cgroup/memory")


class CalibrateError(RuntimeError):
    """A calibration that cannot run here; the message is one line."""


@dataclass(frozen=True)
class Sizes:
    """How much each microbenchmark does in one repetition."""

    repeat: int
    mem: int  # bytes touched, cleared, copied, faulted
    syscalls: int
    round_trips: int
    messages: int
    forks_extra: int  # bytes of anonymous memory for the fork regression
    fork_vmas: int
    cache_bytes: int
    dio: int
    reclaim_file: int
    reclaim_limit: int
    walk_groups: int  # empty child groups for the memcg walk figure
    charge_pairs: int  # root/child alternations for the charge figure
    swap_anon: int  # anonymous memory pushed through a limited group to swap
    swap_limit: int
    compact_layout: int  # the least anonymous memory the compaction layout may write
    recycle_rounds: int  # map, fault and unmap 32 pages this many times (kernel paths)
    pcp_cycle: int  # bytes faulted and unmapped at once: past the per-CPU lists' reach
    pcp_cycles: int  # how many times
    slab_files: int  # empty files created and unlinked (slab objects)


QUICK = Sizes(
    repeat=5,
    mem=256 << 20,  # as full: a smaller buffer stays in the caches (copy_page 10 % lower)
    syscalls=200_000,
    round_trips=20_000,
    messages=100_000,
    forks_extra=32 << 20,
    fork_vmas=1000,
    cache_bytes=16 << 20,
    dio=500,
    reclaim_file=48 << 20,
    reclaim_limit=16 << 20,
    walk_groups=500,
    charge_pairs=9,
    swap_anon=48 << 20,
    swap_limit=16 << 20,
    compact_layout=1 << 30,
    recycle_rounds=15_000,
    pcp_cycle=2 << 30,
    pcp_cycles=1,
    slab_files=30_000,
)
FULL = Sizes(
    repeat=7,
    mem=256 << 20,
    syscalls=2_000_000,
    round_trips=100_000,
    messages=1_000_000,
    forks_extra=128 << 20,
    fork_vmas=4000,
    cache_bytes=128 << 20,
    dio=4000,
    reclaim_file=256 << 20,
    reclaim_limit=64 << 20,
    walk_groups=2000,
    charge_pairs=21,
    swap_anon=192 << 20,
    swap_limit=64 << 20,
    compact_layout=1 << 30,
    recycle_rounds=60_000,
    pcp_cycle=2 << 30,
    pcp_cycles=3,
    slab_files=100_000,
)


@dataclass
class Figure:
    """One measured figure: a value per repetition [ns]."""

    name: str
    values: list[float]
    method: str

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> tuple[float, float]:
        return (min(self.values), max(self.values))


@dataclass
class Calibration:
    """What a calibration measured and the profile it makes."""

    figures: dict[str, Figure] = field(default_factory=dict)
    knobs: dict[str, Figure] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    machine: dict[str, str] = field(default_factory=dict)
    # read_ahead_kb of the device the readahead check ran on (None: not run).
    readahead_kb: int | None = None


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_facts() -> dict[str, str]:
    """CPU, CPUs, memory and kernel of the machine measured."""
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    return {
        "machine": f"{cpu_model()}, {os.cpu_count()} CPUs, {mem_kb // 1024} MiB",
        "kernel": platform.release(),
        "date": datetime.date.today().isoformat(),
    }


def _bench(name: str, size: int, path: str | None = None, cpu: int = 0) -> dict[str, float]:
    try:
        return dict(_vmsim.calibrate_bench(name, size, path, cpu))
    except OSError as e:
        raise CalibrateError(f"calibrate {name}: {e}") from None


_TAGS = itertools.count()


def _tag() -> str:
    """A fresh name for a memory cgroup and a tracefs instance of this calibration: a
    repetition never waits for the kernel to let go of the previous one's."""
    return f"vmsim-calibrate-{os.getpid()}-{next(_TAGS)}"


@contextmanager
def memcg(name: str, limit: int | None) -> Iterator[Path]:
    """A cgroup-v1 memory cgroup made for the measurement and always removed (its pages
    are dropped first with memory.force_empty)."""
    path = MEMCG_ROOT / name
    path.mkdir()
    try:
        if limit is not None:
            (path / "memory.limit_in_bytes").write_text(str(limit))
        yield path
    finally:
        try:
            (path / "memory.force_empty").write_text("0")
        except OSError:
            pass
        _rmdir_retrying(path)


def _rmdir_retrying(path: Path, tries: int = 50) -> None:
    """Removes a cgroup or tracefs directory, retrying while the kernel still holds it
    (a group's last pages being freed, a tracefs instance still open)."""
    for _ in range(tries):
        try:
            path.rmdir()
            return
        except OSError:
            time.sleep(0.1)


def _memcg_stat(path: Path) -> dict[str, int]:
    out = {}
    for line in (path / "memory.stat").read_text().splitlines():
        k, _, v = line.partition(" ")
        if v.strip().isdigit():
            out[k] = int(v)
    return out


def _drop_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


TRACEFS = Path("/sys/kernel/tracing")
_TRACE_LINE = re.compile(
    r"^\s*\S.*?-(\d+)\s+\[\d+\].*?\s(\d+\.\d+): "
    r"mm_vmscan_(memcg_reclaim_begin|memcg_reclaim_end|lru_shrink_inactive):(.*)$"
)
RECLAIM_EVENTS = [
    "vmscan:mm_vmscan_memcg_reclaim_begin",
    "vmscan:mm_vmscan_memcg_reclaim_end",
    "vmscan:mm_vmscan_lru_shrink_inactive",
]
DEF_PRIORITY = 12


def reclaim_available() -> str | None:
    """Why the reclaim measurements cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "needs root (it makes a memory cgroup and a tracefs instance)"
    if not (MEMCG_ROOT / "memory.limit_in_bytes").exists():
        return f"needs the cgroup-v1 memory controller at {MEMCG_ROOT}"
    return None


def swap_available() -> str | None:
    """Why the swap-out measurement cannot run here, or None when it can."""
    why = reclaim_available()
    if why is not None:
        return why
    missing = [c for c in ("mkswap", "swapon", "swapoff") if shutil.which(c) is None]
    if missing:
        return f"needs {', '.join(missing)} (util-linux) to make a swap file"
    return None


@contextmanager
def trace_instance(name: str, events: list[str]) -> Iterator[Path]:
    """A private tracefs instance (``instances/NAME``) with ``events`` enabled, removed
    afterwards; tracefs is mounted for it, and unmounted after, if it was not."""
    mounted = False
    if not (TRACEFS / "instances").is_dir():
        TRACEFS.mkdir(parents=True, exist_ok=True)
        if (
            subprocess.run(
                ["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True
            ).returncode
            != 0
        ):
            raise CalibrateError(f"calibrate reclaim: tracefs cannot be mounted at {TRACEFS}")
        mounted = True
    inst = TRACEFS / "instances" / name
    try:
        inst.mkdir()
        try:
            (inst / "buffer_size_kb").write_text("8192\n")
            for ev in events:
                enable = inst / "events" / ev.replace(":", "/") / "enable"
                if not enable.exists():
                    raise CalibrateError(f"calibrate reclaim: this kernel has no tracepoint {ev}")
                enable.write_text("1\n")
            yield inst
        finally:
            with suppress(OSError):
                (inst / "events" / "enable").write_text("0\n")
            _rmdir_retrying(inst, 20)
    finally:
        if mounted:
            subprocess.run(["umount", str(TRACEFS)], capture_output=True)


@dataclass(frozen=True)
class ReclaimTrace:
    """What the memory cgroup limit reclaims of one run did, from their tracepoints."""

    ns: float  # time inside them, mm_vmscan_memcg_reclaim_begin to _end
    pages: int  # pages they reclaimed (nr_reclaimed of _end)
    calls: int
    scanned: int  # pages their shrink_inactive_list calls scanned
    # Priority passes before the last, summed over the calls that scanned: a call whose
    # last shrink_inactive_list ran at priority p made DEF_PRIORITY - p passes over the
    # group's subtree before the one that reached its goal (shrink_node_memcgs).
    passes: int

    @property
    def ns_per_call(self) -> float:
        return self.ns / self.calls if self.calls else 0.0

    def shape(self) -> str:
        """How the reclaim went, for a figure's method: calls, pages a call, scans a page."""
        return (
            f"{self.calls} reclaims of {self.pages / max(1, self.calls):.0f} pages, "
            f"{self.scanned / max(1, self.pages):.1f} pages scanned per page reclaimed"
        )


def memcg_reclaim_calls(trace: str) -> ReclaimTrace:
    """Memory cgroup limit reclaim of each task in an ftrace text: the time between
    mm_vmscan_memcg_reclaim_begin and _end, the pages reclaimed, and what its
    mm_vmscan_lru_shrink_inactive events scanned and at which priority."""
    begun: dict[str, tuple[float, int]] = {}
    spent, pages, calls, scanned, passes = 0.0, 0, 0, 0, 0
    for line in trace.splitlines():
        m = _TRACE_LINE.match(line)
        if not m:
            continue
        pid, ts, what, rest = m.group(1), float(m.group(2)), m.group(3), m.group(4)
        if what == "memcg_reclaim_begin":
            begun[pid] = (ts, DEF_PRIORITY + 1)
        elif what == "lru_shrink_inactive":
            if pid in begun:
                prio = re.search(r"priority=(\d+)", rest)
                nr = re.search(r"nr_scanned=(\d+)", rest)
                if prio:
                    begun[pid] = (begun[pid][0], min(begun[pid][1], int(prio.group(1))))
                if nr:
                    scanned += int(nr.group(1))
        elif pid in begun:
            nr = re.search(r"nr_reclaimed=(\d+)", rest)
            if nr:
                start, lowest = begun.pop(pid)
                spent += (ts - start) * 1e9
                pages += int(nr.group(1))
                calls += 1
                if lowest <= DEF_PRIORITY:
                    passes += DEF_PRIORITY - lowest
    return ReclaimTrace(spent, pages, calls, scanned, passes)


@contextmanager
def child_groups(parent: Path, n: int) -> Iterator[list[Path]]:
    """``n`` empty memory cgroups below ``parent``, always removed."""
    kids: list[Path] = []
    try:
        for i in range(n):
            kid = parent / f"empty{i}"
            kid.mkdir()
            kids.append(kid)
        yield kids
    finally:
        for kid in reversed(kids):
            _rmdir_retrying(kid)


def _reclaim_file(path: Path, size: int) -> Path:
    if not path.exists():
        with open(path, "wb") as f:
            block = b"\x5a" * (1 << 20)
            for _ in range(size >> 20):
                f.write(block)
    return path


def reclaim_clean_file(workdir: Path, sizes: Sizes, children: int = 0) -> ReclaimTrace:
    """One repetition of the clean page-cache reclaim measurement: a file read 4 KiB a
    pread (readahead off, so one order-0 folio a read) by a process in a memory cgroup
    whose room for it is a third of the file; the limit reclaims, from their tracepoints.
    With ``children``, that many empty groups are made below the group first and its
    limit is raised by what they charge to it (their mem_cgroup structures, the
    group's memory.kmem.usage_in_bytes), so the file gets the same room."""
    tag = _tag()
    file = _reclaim_file(workdir / "reclaim.dat", sizes.reclaim_file)
    _drop_file(file)
    with (
        trace_instance(tag, RECLAIM_EVENTS) as inst,
        memcg(tag, None) as group,
        child_groups(group, children),
    ):
        kmem = int((group / "memory.kmem.usage_in_bytes").read_text())
        (group / "memory.limit_in_bytes").write_text(str(sizes.reclaim_limit + kmem))
        try:
            _, nbytes = _vmsim.calibrate_read_in_cgroup(str(file), str(group / "cgroup.procs"))
        except OSError as e:
            raise CalibrateError(f"calibrate reclaim: {e}") from None
        (inst / "tracing_on").write_text("0\n")
        trace = (inst / "trace").read_text(errors="replace")
        _drop_file(file)
    if nbytes != sizes.reclaim_file:
        raise CalibrateError(f"calibrate reclaim: read {nbytes} bytes of {file}")
    return memcg_reclaim_calls(trace)


# The folio sizes of the large-folio reclaim measurement: one write(2) of each length
# makes one page-cache folio of that size (ext4 on 6.18), orders 4, 6 and 8.
LARGE_FOLIO_KIB = (64, 256, 1024)

# A child that joins a memory cgroup and writes a file in calls of a given length, then
# fdatasync()s it, so that its pages are clean, charged to the group, one folio a call.
_WRITE_IN_GROUP = r"""
import os, sys
procs, path, size, bs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(procs, "w") as f:
    f.write(str(os.getpid()))
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
block = b"\x5a" * bs
for _ in range(size // bs):
    os.write(fd, block)
os.fdatasync(fd)
os.close(fd)
"""


def reclaim_large_folios(workdir: Path, sizes: Sizes, kib: int) -> ReclaimTrace:
    """One repetition of the large-folio reclaim measurement: a process in a memory cgroup
    writes a ``reclaim_file`` file ``kib`` KiB a write(2) (one folio of that size each) and
    fdatasync()s it; the group's limit is then lowered to ``reclaim_limit``, and the
    write to memory.limit_in_bytes reclaims the clean folios down to it
    (mem_cgroup_resize_max: one-page limit reclaims, each freeing at least one folio);
    those limit reclaims, from their tracepoints."""
    tag = _tag()
    file = workdir / f"large-folios-{kib}k.dat"
    try:
        with memcg(tag, None) as group:
            r = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    _WRITE_IN_GROUP,
                    str(group / "cgroup.procs"),
                    str(file),
                    str(sizes.reclaim_file),
                    str(kib << 10),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if r.returncode != 0:
                last = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
                raise CalibrateError(f"calibrate large-folio reclaim: {last}")
            with trace_instance(tag, RECLAIM_EVENTS) as inst:
                kmem = int((group / "memory.kmem.usage_in_bytes").read_text())
                try:
                    (group / "memory.limit_in_bytes").write_text(str(sizes.reclaim_limit + kmem))
                except OSError as e:
                    raise CalibrateError(
                        f"calibrate large-folio reclaim: lowering the limit: {e}"
                    ) from None
                (inst / "tracing_on").write_text("0\n")
                trace = (inst / "trace").read_text(errors="replace")
    finally:
        file.unlink(missing_ok=True)
    return memcg_reclaim_calls(trace)


def _vmsim_reclaims(sc: dict[str, Any]) -> ReclaimTrace:
    """vmsim's limit reclaims in a run of scenario ``sc``, from the tracepoints a real
    measurement reads (mm_vmscan_memcg_reclaim_begin/_end, lru_shrink_inactive)."""
    with tempfile.TemporaryDirectory(prefix="vmsim-calibrate-") as tmp:
        trace = Path(tmp) / "trace.txt"
        api.run(sc, trace=trace, events=RECLAIM_EVENTS)
        return memcg_reclaim_calls(trace.read_text())


def _vmsim_reclaim_large(cost: dict[str, float], sizes: Sizes, kib: int) -> ReclaimTrace:
    """vmsim's own limit reclaims in the large-folio measurement's shape (a file written
    ``kib`` KiB a call in a group, left to the flushers until clean, then the group's
    limit lowered with a cgroup_write), from the same tracepoints of its trace."""
    sc = {
        "name": "calibrate-check",
        "duration": "200s",
        "machine": {"memory": "4GiB", "cpus": 2},
        "cost": {n: int(round(v)) for n, v in cost.items()},
        "cgroup": [{"path": "g"}],
        "task": [
            {
                "name": "t",
                "cgroup": "g",
                "program": [
                    {
                        "op": "write",
                        "file": "f",
                        "size": f"{sizes.reclaim_file >> 20}MiB",
                        "bs": f"{kib}KiB",
                    },
                    {"op": "sleep", "time": "100s"},
                    {
                        "op": "cgroup_write",
                        "cgroup": "g",
                        "file": "memory.limit_in_bytes",
                        "value": f"{sizes.reclaim_limit >> 20}MiB",
                    },
                ],
            }
        ],
    }
    return _vmsim_reclaims(sc)


def _large_folio_parts(
    real: dict[int, ReclaimTrace], own: dict[int, ReclaimTrace]
) -> tuple[float, float]:
    """(per folio, per page) [ns] the kernel spends on a large folio in reclaim beyond
    vmsim's own charge: each folio size's time per limit reclaim less vmsim's, fitted by
    least squares as folios x A + pages x B over the sizes (the folios and pages of one
    reclaim are the kernel's own: pages reclaimed per call, over the folio size)."""
    rows = []
    for kib, r in real.items():
        o = own[kib]
        if r.calls <= 0 or o.calls <= 0:
            raise CalibrateError(
                f"calibrate large-folio reclaim: no limit reclaim with {kib} KiB folios"
            )
        pages = r.pages / r.calls
        rows.append((pages / (kib // 4), pages, r.ns_per_call - o.ns_per_call))
    sff = sum(f * f for f, _, _ in rows)
    sfp = sum(f * p for f, p, _ in rows)
    spp = sum(p * p for _, p, _ in rows)
    sfd = sum(f * d for f, _, d in rows)
    spd = sum(p * d for _, p, d in rows)
    det = sff * spp - sfp * sfp
    if det <= 0:
        raise CalibrateError(
            "calibrate large-folio reclaim: the folio sizes do not separate "
            "a per-folio from a per-page cost"
        )
    return (sfd * spp - spd * sfp) / det, (sff * spd - sfp * sfd) / det


def _large_folio_knobs(
    cal: Calibration, large: list[dict[int, ReclaimTrace]], cost: dict[str, float], sizes: Sizes
) -> None:
    """The two large-folio knobs (and a figure per folio size) from the kernel's limit
    reclaims of each repetition, less vmsim's own for the same shapes under ``cost`` with
    the two knobs at 0."""
    cost = {**cost, "shrink_large_folio": 0, "free_buffer_head": 0}
    own = {kib: _vmsim_reclaim_large(cost, sizes, kib) for kib in LARGE_FOLIO_KIB}
    parts = [_large_folio_parts(rep, own) for rep in large]
    for kib in LARGE_FOLIO_KIB:
        first = large[0][kib]
        cal.figures[f"reclaim_{kib}k"] = Figure(
            f"reclaim_{kib}k",
            [rep[kib].ns / max(1, rep[kib].pages) for rep in large],
            f"time inside memory cgroup limit reclaim per page it reclaimed: a "
            f"{sizes.reclaim_file >> 20} MiB file written {kib} KiB a write(2) (one folio "
            f"each) and fdatasync()ed in a group, whose limit is then lowered to "
            f"{sizes.reclaim_limit >> 20} MiB; {first.shape()}; vmsim's own with the two "
            f"large-folio knobs at 0: {own[kib].ns / max(1, own[kib].pages):.0f} ns",
        )
    cal.knobs["shrink_large_folio"] = Figure(
        "shrink_large_folio",
        [a for a, _ in parts],
        "reclaim_64k, reclaim_256k and reclaim_1024k per limit reclaim less vmsim's own "
        "for the same (with these two knobs at 0), fitted by least squares as folios x "
        "shrink_large_folio + buffer heads x free_buffer_head (a written file has one a "
        "4 KiB block, as many as its pages): the per-folio part",
    )
    cal.knobs["free_buffer_head"] = Figure(
        "free_buffer_head",
        [b for _, b in parts],
        "the per-buffer-head part of the same fit (try_to_free_buffers)",
    )


def _readahead_figure(cal: Calibration, runs: list[tuple[ReclaimTrace, int]], sizes: Sizes) -> None:
    """The readahead shape's time per page reclaimed, a figure for the checks only."""
    first, ra_kb = runs[0]
    cal.readahead_kb = ra_kb
    cal.figures["reclaim_readahead"] = Figure(
        "reclaim_readahead",
        [r.ns / max(1, r.pages) for r, _ in runs],
        f"time inside memory cgroup limit reclaim per page it reclaimed: a "
        f"{sizes.reclaim_file >> 20} MiB file read with cat in a group (readahead's large "
        f"folios, no buffer heads; read_ahead_kb {ra_kb}), whose limit is then lowered to "
        f"{sizes.reclaim_limit >> 20} MiB; {first.shape()}; a check, not a knob",
    )


# The kernel functions each kernel-path knob is timed in (6.18's names; kprofile.py).
KERNEL_PATH_KNOBS = (
    "pcp_alloc",
    "pcp_free",
    "buddy_alloc",
    "buddy_free",
    "lru_add",
    "lru_lock_page",
    "slab_object",
)
# Why a buddy knob has no figure (None in every repetition of kernel_paths).
_NO_BUDDY = "no repetition moved pages through the buddy lists (the per-CPU lists held them all)"
# A repetition whose large cycle moved fewer pages than this share through the buddy
# lists (the per-CPU lists held them all) gives no buddy figure.
_BUDDY_SHARE = 0.05
_SLAB_EVENTS = ["kmem:kmem_cache_alloc", "kmem:kmem_cache_free"]
# Where create_unlink makes its files: a tmpfs. On ext4, creating files costs 850 us a
# file instead of 15 for minutes after many files were deleted in the same block group
# (__ext4_new_inode's find_inode_bit skips every recently_deleted() inode), which the
# shrinker's figure and earlier runs do; the slab objects' own cost is the same.
SLAB_DIR = Path("/dev/shm")


@contextmanager
def _pinned(cpu: int) -> Iterator[None]:
    """Runs the calling thread on ``cpu`` alone, its affinity restored on return."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def sizes_for(quick: bool, mem_available: int | None = None) -> Sizes:
    """The sizes of a calibration: QUICK or FULL, with ``pcp_cycle`` at most a quarter of
    MemAvailable (a small machine, a 2 GiB guest: its per-CPU lists are smaller too, and
    a quarter of its memory still far past their reach)."""
    sizes = QUICK if quick else FULL
    if mem_available is None:
        from vmsim.fidelity import host

        mem_available = host.read_meminfo().get("MemAvailable", 0) * 1024
    cap = mem_available // 4 >> 20 << 20
    return replace(sizes, pcp_cycle=min(sizes.pcp_cycle, max(cap, 64 << 20)))


def _pcp_cycles(sizes: Sizes) -> dict[str, float]:
    """``sizes.pcp_cycles`` pcp_cycle runs: pages faulted, and of them the pages the faults
    took from the buddy lists and the unmaps gave back to them."""
    out = {"pages": 0.0, "refilled": 0.0, "drained": 0.0}
    for _ in range(sizes.pcp_cycles):
        c = _bench("pcp_cycle", sizes.pcp_cycle)
        out["pages"] += c["pages"]
        out["refilled"] += c["pages"] + c["pcp_faulted"] - c["pcp_before"]
        out["drained"] += c["pages"] - (c["pcp_after"] - c["pcp_faulted"])
    return out


# A child process that joins a memory cgroup and creates (or looks up) files there: their
# dentries and inodes are charged to the group.
_FILES_IN_GROUP = r"""
import os, sys
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
for i in range(int(sys.argv[4])):
    path = os.path.join(sys.argv[2], f"f{i}")
    if sys.argv[3] == "create":
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    else:
        os.stat(path)
"""


def _fs_objects() -> int:
    """Dentries and inodes in memory (/proc/sys/fs/dentry-state, inode-nr: the first
    field of each)."""
    return sum(
        int(Path(f).read_text().split()[0])
        for f in ("/proc/sys/fs/dentry-state", "/proc/sys/fs/inode-nr")
    )


def _files_in_group(group: Path, where: str, how: str, files: int) -> None:
    """Runs _FILES_IN_GROUP (``how``: create or stat) in a child that joins ``group``."""
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            _FILES_IN_GROUP,
            str(group / "cgroup.procs"),
            where,
            how,
            str(files),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise CalibrateError(f"calibrate shrinker: {last}")


def _shrink_group(group: Path) -> None:
    """Lowers ``group``'s limit to 1 MiB: its reclaim shrinks what it can (EBUSY when it
    cannot reach the limit; the old limit stays)."""
    with suppress(OSError):
        (group / "memory.limit_in_bytes").write_text(str(1 << 20))


def shrink_dentries_inodes(
    workdir: Path, files: int, cpu: int, repeat: int
) -> list[tuple[float, int] | None]:
    """``files`` empty files are created once (by a child in a memory cgroup, whose limit
    is then lowered so that their dentries and inodes leave memory, unmeasured). Each
    repetition: a child in a fresh group looks every file up (stat: a dentry and an inode
    each, charged to the group, read from the cached inode table) and exits; this thread
    (on ``cpu``) lowers the group's limit to 1 MiB, whose reclaim (mem_cgroup_resize_max,
    shrink_slab) frees them through super_cache_scan. Per repetition: its sampled time per
    object freed (the fall of the dentry and inode counts) and the objects, or None when
    the reclaim freed under one object a file."""
    out: list[tuple[float, int] | None] = []
    with tempfile.TemporaryDirectory(prefix="vmsim-calibrate-", dir=workdir) as tmp:
        with memcg(_tag(), None) as group:
            _files_in_group(group, tmp, "create", files)
            _shrink_group(group)
        freed: list[int] = []
        with kprofile.Recording(cpu) as rec:
            for i in range(repeat):
                with memcg(_tag(), None) as group:
                    _files_in_group(group, tmp, "stat", files)
                    before = _fs_objects()
                    rec.window(str(i), partial(_shrink_group, group))
                    freed.append(before - _fs_objects())
    for i, n in enumerate(freed):
        if n >= files:
            _require_functions(rec.samples(str(i)), ["super_cache_scan"], "the shrinker")
        # A dentry and an inode a file.
        out.append((rec.samples(str(i)).ns("super_cache_scan") / n, n) if n >= files else None)
    return out


def kernel_paths(workdir: Path, sizes: Sizes, buddy_split: float) -> list[dict[str, float | None]]:
    """``sizes.repeat`` repetitions of the kernel-path knobs: the kernel's own time in the
    allocator's, the LRU's and the slab allocator's functions, sampled by perf (one
    recording, a window of it per microbenchmark) on the CPU the microbenchmarks run on,
    per page or object they handled (None: not exercised)."""
    cpu = max(os.sched_getaffinity(0))
    files, rounds = sizes.slab_files, sizes.recycle_rounds
    raw: list[tuple[dict[str, float], dict[str, int]]] = []
    with (
        _pinned(cpu),
        kprofile.Recording(cpu) as rec,
        tempfile.TemporaryDirectory(
            prefix="vmsim-calibrate-", dir=SLAB_DIR if SLAB_DIR.is_dir() else workdir
        ) as d,
    ):
        for i in range(sizes.repeat):
            rec.window(f"{i} small", lambda: _bench("fault_cycles", 32 * 4096, cpu=rounds))
            big = rec.window(f"{i} large", lambda: _pcp_cycles(sizes))
            _, counts = kprofile.tracepoint_counts(
                lambda: _bench("create_unlink", files, path=d), cpu, _SLAB_EVENTS
            )
            rec.window(f"{i} slab", lambda: _bench("create_unlink", files, path=d))
            raw.append((big, counts))
    return [
        _kernel_path_rep(
            rec.samples(f"{i} small"),
            rec.samples(f"{i} large"),
            rec.samples(f"{i} slab"),
            big,
            counts,
            sizes,
            buddy_split,
        )
        for i, (big, counts) in enumerate(raw)
    ]


#: The kernel functions the kernel-path figures time, by role: 6.18's name first, then
#: 6.1's where it differs (mm/page_alloc.c, mm/swap.c, mm/slub.c of each). A role's
#: function is the name of it perf saw.
KERNEL_PATH_FUNCTIONS: dict[str, tuple[str, ...]] = {
    # The allocation entry: __alloc_frozen_pages_noprof (6.18), __alloc_pages (6.1).
    "alloc": ("__alloc_frozen_pages_noprof", "__alloc_pages"),
    # Freeing a batch of folios to the per-CPU lists: free_unref_folios (6.18),
    # free_unref_page_list (6.1), both from the folio batch's release.
    "free_batch": ("free_unref_folios", "free_unref_page_list"),
    "move_lru": ("folio_batch_move_lru",),
    # folio_batch_move_lru's release of the batch's references: folios_put_refs (6.18),
    # release_pages (6.1).
    "put_refs": ("folios_put_refs", "release_pages"),
    "pcplist": ("__rmqueue_pcplist",),
    # A page onto the per-CPU list, and free_pcppages_bulk past its high mark.
    "commit": ("free_frozen_page_commit", "free_unref_page_commit"),
    # A folio into the per-CPU LRU batch: __folio_batch_add_and_move (6.18), folio_add_lru (6.1).
    "batch_add": ("__folio_batch_add_and_move", "folio_add_lru"),
    "slab_alloc_lru": ("kmem_cache_alloc_lru_noprof", "kmem_cache_alloc_lru"),
    "slab_alloc": ("kmem_cache_alloc_noprof", "kmem_cache_alloc"),
    "clear": ("clear_page_erms", "clear_page_rep", "clear_page_orig"),
    # The superblock shrinker's scan of dentries and inodes (fs/super.c, both).
    "super_cache_scan": ("super_cache_scan",),
}


def _fn(samples: kprofile.Samples, role: str) -> str:
    """The kernel's function of a role: the one of its names perf saw most (the first when
    it saw none)."""
    names = KERNEL_PATH_FUNCTIONS[role]
    return max(names, key=lambda n: (samples.count(n), -names.index(n)))


def _require_functions(samples: kprofile.Samples, roles: list[str], bench: str) -> None:
    """A figure timed in a function perf never saw would be 0, not a measurement: the
    kernel's symbols are hidden (kptr_restrict) or its functions have other names (6.18's
    and 6.1's are known) or are inlined."""
    missing = [
        " or ".join(KERNEL_PATH_FUNCTIONS[r])
        for r in roles
        if not any(samples.count(n) for n in KERNEL_PATH_FUNCTIONS[r])
    ]
    if missing:
        raise CalibrateError(
            f"calibrate kernel paths: perf saw no sample in {', '.join(missing)} during "
            f"{bench} ({len(samples.stacks)} samples): kernel symbols hidden "
            f"(/proc/sys/kernel/kptr_restrict) or a kernel whose functions are named "
            f"otherwise (vmsim times 6.18's and 6.1's)"
        )


def _kernel_path_rep(
    small: kprofile.Samples,
    large: kprofile.Samples,
    slab: kprofile.Samples,
    big: dict[str, float],
    counts: dict[str, int],
    sizes: Sizes,
    buddy_split: float,
) -> dict[str, float | None]:
    """One repetition's kernel-path figures from its three windows' samples."""
    _require_functions(small, ["alloc", "free_batch"], "fault_cycles")
    _require_functions(large, ["move_lru", "pcplist"], "pcp_cycle")
    _require_functions(slab, ["slab_alloc_lru"], "create_unlink")
    n_small = 32 * sizes.recycle_rounds
    n, refilled, drained = big["pages"], big["refilled"], big["drained"]
    clear = KERNEL_PATH_FUNCTIONS["clear"]
    # What the per-CPU lists' own side costs a page, from the shape that never leaves them.
    pcp_pop = small.ns(_fn(small, "pcplist")) / n_small
    pcp_push = small.ns(_fn(small, "commit")) / n_small
    out: dict[str, float | None] = {
        # Allocation entry, zonelist walk, watermark check, the per-CPU list's pop,
        # prep_new_page: all of __alloc_frozen_pages but the zeroing (clear_page's knob).
        "pcp_alloc": small.ns(_fn(small, "alloc"), clear) / n_small,
        "pcp_free": small.ns(_fn(small, "free_batch")) / n_small,
        "buddy_alloc": None,
        "buddy_free": None,
        # Under lru_lock: lru_add and the LRU size counters, a folio at a time.
        "lru_lock_page": large.ns(_fn(large, "move_lru"), KERNEL_PATH_FUNCTIONS["put_refs"]) / n,
        "lru_add": large.ns(_fn(large, "batch_add"), ["folio_batch_move_lru"]) / n,
        "pages_refilled": refilled,
        "pages_drained": drained,
    }
    if refilled >= _BUDDY_SHARE * n:
        # rmqueue_bulk (inlined in __rmqueue_pcplist) under zone->lock, a __rmqueue a
        # page: splitting a block of 2^k pages down to single pages takes 2^k - 1
        # expand() steps, one a page (buddy_split's).
        out["buddy_alloc"] = (
            large.ns(_fn(large, "pcplist")) - pcp_pop * n
        ) / refilled - buddy_split
    if drained >= _BUDDY_SHARE * n:
        # free_pcppages_bulk (inlined in free_frozen_page_commit): __free_one_page a page,
        # merging back up (a merge a page).
        out["buddy_free"] = (large.ns(_fn(large, "commit")) - pcp_push * n) / drained - buddy_split
    no_pages = ["allocate_slab", "free_slab", "__free_slab"]
    slab_ns = sum(
        slab.ns(fn, no_pages)
        for fn in (_fn(slab, "slab_alloc"), _fn(slab, "slab_alloc_lru"), "kmem_cache_free")
    )
    objects = counts["kmem_cache_alloc"] + counts["kmem_cache_free"]
    out["slab_object"] = slab_ns / max(1, objects)
    out["slab_objects_per_file"] = objects / sizes.slab_files
    return out


def _measure_kernel_paths(
    cal: Calibration, workdir: Path, sizes: Sizes, base: dict[str, Any]
) -> None:
    """The kernel-path knobs, ``sizes.repeat`` repetitions."""
    _kernel_path_knobs(cal, kernel_paths(workdir, sizes, base["buddy_split"]), sizes)


def _measure_shrinker(cal: Calibration, workdir: Path, sizes: Sizes) -> None:
    """shrink_object from ``sizes.repeat`` limit reclaims of a group's dentries and inodes
    (perf samples of super_cache_scan), and the objects each freed as a figure."""
    cpu = max(os.sched_getaffinity(0))
    with _pinned(cpu):
        runs = shrink_dentries_inodes(workdir, sizes.slab_files, cpu, sizes.repeat)
    done = [r for r in runs if r is not None]
    if not done:
        cal.skipped["shrink_object"] = (
            "shrinker: no limit reclaim freed the group's dentries and inodes"
        )
        return
    period = kprofile.PERIOD_NS // 1000
    shown = f"; {len(done)} of {len(runs)} repetitions" if len(done) < len(runs) else ""
    cal.knobs["shrink_object"] = Figure(
        "shrink_object",
        [ns for ns, _ in done],
        f"super_cache_scan's time (prune_dcache_sb, prune_icache_sb and ext4's eviction) per "
        f"dentry or inode freed (the fall of /proc/sys/fs/dentry-state and inode-nr; the "
        f"objects' own kmem_cache_free comes later, from RCU: slab_object's), perf samples "
        f"(cpu-clock, one per {period} us, kernel call chains) on the CPU of the reclaim: a "
        f"process in a memory cgroup looks up {sizes.slab_files} empty files (stat) and "
        f"exits, then the group's limit is lowered to 1 MiB{shown}",
    )
    cal.figures["shrunk_objects"] = Figure(
        "shrunk_objects",
        [float(n) for _, n in done],
        "dentries and inodes the shrinker's limit reclaim freed; a count, not ns",
    )


#: Files deleted before the second batch of creates in the recently-deleted measurement,
#: and created in each batch: small enough that five repetitions stay in one block group
#: of 8,192 inodes (each leaves 2 x RD_CREATES files and RD_DELETED free inodes).
RD_DELETED = 1000
RD_CREATES = 100


def recently_deleted_unavailable(workdir: Path) -> str | None:
    """Why the recently-deleted measurement cannot run on ``workdir``'s filesystem."""
    has = host.ext4_journal(workdir)
    if has is None:
        fstype = host.mount_of(workdir)[2] or "unknown"
        return f"{workdir} is on {fstype}, not ext4"
    if has:
        return (
            f"the ext4 filesystem of {workdir} has a journal: find_inode_bit looks for "
            "recently deleted inodes only without one"
        )
    return None


#: Empty files a repetition of the create measurement makes.
CREATES = 2000

#: The scratch ext4 filesystem the create measurements run on: its size (a sparse file
#: in /dev/shm, so only what ext4 writes takes memory) and inodes (every repetition's
#: files fit: FULL makes 7 x (CREATES + RD_DELETED + 2 x RD_CREATES)).
SCRATCH_BYTES = 256 << 20
SCRATCH_INODES = 65536
SCRATCH_IMAGES = Path("/dev/shm")
#: Inode tables and journal zeroed by mkfs, not by ext4lazyinit's thread after the mount
#: (which would write and take the inode-table blocks' locks while the creates run).
LAZY_OFF = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]


def scratch_unavailable() -> str | None:
    """Why a scratch ext4 filesystem cannot be made and mounted here (None: it can)."""
    if os.geteuid() != 0:
        return "mounting a scratch ext4 filesystem needs root"
    for tool in ("mkfs.ext4", "mount", "umount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (e2fsprogs, mount)"
    if not SCRATCH_IMAGES.is_dir():
        return f"{SCRATCH_IMAGES} does not exist"
    return None


@contextmanager
def scratch_ext4(workdir: Path, journal: bool) -> Iterator[Path]:
    """A new ext4 filesystem, with a journal or without one as ``journal`` says, made by
    mkfs.ext4 in a file of /dev/shm and loop-mounted on a directory of ``workdir``: its
    block groups hold no inode deleted by anyone else, so a create meets none of the
    recently deleted inodes that other work leaves for minutes on a filesystem without a
    journal (find_inode_bit → recently_deleted). Unmounted and removed on return."""
    fd, image = tempfile.mkstemp(prefix="vmsim-calibrate-", suffix=".ext4", dir=SCRATCH_IMAGES)
    os.close(fd)
    mnt = Path(tempfile.mkdtemp(prefix="scratch-", dir=workdir))
    mounted = False
    try:
        os.truncate(image, SCRATCH_BYTES)
        features = [] if journal else ["-O", "^has_journal"]
        for cmd in (
            ["mkfs.ext4", "-q", "-F", "-N", str(SCRATCH_INODES), *features, *LAZY_OFF, image],
            ["mount", "-o", "loop", image, str(mnt)],
        ):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
                raise CalibrateError(f"a scratch ext4 filesystem: {' '.join(cmd[:2])}: {why}")
            mounted = mounted or cmd[0] == "mount"
        yield mnt
    finally:
        if mounted and subprocess.run(["umount", str(mnt)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        with suppress(OSError):
            mnt.rmdir()
        with suppress(OSError):
            os.unlink(image)


def create_figure(workdir: Path, sizes: Sizes, journal: bool) -> Figure:
    """An empty file's open(O_CREAT|O_EXCL) and close on a scratch ext4 filesystem (thread
    CPU time, CREATES files a repetition in a new directory, left in place so that no
    repetition meets another's deleted inodes)."""
    real = []
    with scratch_ext4(workdir, journal) as fs:
        for i in range(sizes.repeat):
            d = fs / f"creates-{i}"
            d.mkdir()
            real.append(_bench("create_close", CREATES, path=str(d))["ns"])
    return Figure(
        "create_close",
        real,
        f"an empty file's open(O_CREAT|O_EXCL) and close, thread CPU time, {CREATES} files "
        "a repetition in a new directory of a new ext4 filesystem (loop-mounted, with a "
        "journal as the --dir filesystem has one or not)",
    )


def create_knob(cal: Calibration, cost: dict[str, float]) -> None:
    """create_call from the create_close figure, less vmsim's own charge for a create: its
    4 KiB file made whole less a 4 KiB write to a file that exists, with create_call at 0
    and every other knob from ``cost``."""
    own_cost = dict(cost, create_call=0)
    made = _vmsim_sys_per_page(
        own_cost,
        [{"op": "fio_write", "files": CHECK_FILES, "file_size": "4KiB", "bs": "4KiB"}],
        CHECK_FILES,
    )
    written = _vmsim_sys_per_page(own_cost, _write(4), CHECK_PAGES)
    own = made - written
    cal.knobs["create_call"] = Figure(
        "create_call",
        [r - own for r in cal.figures["create_close"].values],
        f"create_close less vmsim's own charge for a create ({own:.0f} ns: a 4 KiB file "
        f"made whole, {made:.0f} ns, less a 4 KiB write to a file that exists, "
        f"{written:.0f} ns; the dentry, the inode, the metadata blocks)",
    )


def _measure_creates(cal: Calibration, workdir: Path, sizes: Sizes, say: Callable) -> None:
    """create_close and ext4_recently_deleted on a scratch ext4 filesystem made like
    ``workdir``'s (journal or not), or the reason each is skipped."""
    why = f"{workdir} is not on ext4" if host.mount_of(workdir)[2] != "ext4" else None
    why = why or scratch_unavailable()
    why_rd = recently_deleted_unavailable(workdir) or scratch_unavailable()
    if why is not None:
        cal.skipped["create_call"] = why
        cal.skipped["ext4_recently_deleted"] = why_rd or why
        return
    say("file creates")
    journal = host.ext4_journal(workdir) is not False
    try:
        cal.figures["create_close"] = create_figure(workdir, sizes, journal=journal)
    except CalibrateError as e:  # no loop device, a mount refused
        cal.skipped["create_call"] = str(e).removeprefix("calibrate ")
        cal.skipped["ext4_recently_deleted"] = why_rd or cal.skipped["create_call"]
        return
    if why_rd is None:
        say("ext4 without a journal: creates past recently deleted inodes")
        _measure_recently_deleted(cal, workdir, sizes)
    else:
        cal.skipped["ext4_recently_deleted"] = why_rd


def _measure_recently_deleted(cal: Calibration, workdir: Path, sizes: Sizes) -> None:
    """ext4_recently_deleted: each repetition, on a new scratch ext4 filesystem without a
    journal (so that it meets no inode an earlier one deleted), creates RD_DELETED
    files, times RD_CREATES creates, unlinks the first files, waits 1.1 s and times
    RD_CREATES creates again; the second batch's extra time per create over the inodes
    it passed over (RD_DELETED each) is the figure. vmsim charges nothing else that
    differs between the two batches, so the knob is the figure itself."""
    values, before, after = [], [], []
    for _ in range(sizes.repeat):
        with scratch_ext4(workdir, journal=False) as fs:
            d = fs / "recently-deleted"
            d.mkdir()
            r = _bench("recently_deleted", RD_DELETED, path=str(d))
        before.append(r["before_ns"])
        after.append(r["after_ns"])
        values.append((r["after_ns"] - r["before_ns"]) / r["deleted"])
    cal.figures["create_before_deletes"] = Figure(
        "create_before_deletes",
        before,
        f"an empty file's open(O_CREAT|O_EXCL) and close, thread CPU time, {RD_CREATES} "
        "creates in a directory whose inodes are all in use",
    )
    cal.figures["create_after_deletes"] = Figure(
        "create_after_deletes",
        after,
        f"the same {RD_CREATES} creates 1.1 s after {RD_DELETED} files of the directory "
        "were unlinked",
    )
    cal.knobs["ext4_recently_deleted"] = Figure(
        "ext4_recently_deleted",
        values,
        f"create_after_deletes less create_before_deletes over the {RD_DELETED} free inodes "
        "each create of the second batch passes over as recently deleted (ext4 without a "
        "journal: find_inode_bit → recently_deleted, sb_find_get_block and brelse of the "
        "inode-table block)",
    )


def _kernel_path_knobs(cal: Calibration, runs: list[dict[str, float | None]], sizes: Sizes) -> None:
    """The kernel-path knobs from their repetitions (those that exercised them)."""
    period = kprofile.PERIOD_NS // 1000
    where = (
        f"perf samples (cpu-clock, one per {period} us, kernel call chains) on the CPU "
        f"the microbenchmark ran on"
    )
    small = (
        f"{where}; map, write-fault and unmap 32 pages {sizes.recycle_rounds} times "
        f"(fault_cycles: the pages go round the per-CPU lists, never the buddy lists)"
    )
    large = (
        f"{where}; {sizes.pcp_cycles} x write-fault {sizes.pcp_cycle >> 20} MiB and "
        f"unmap it (pcp_cycle), the per-CPU list's count from /proc/zoneinfo before, "
        f"between and after"
    )
    methods = {
        "pcp_alloc": f"__alloc_frozen_pages_noprof's time less clear_page_erms below it, per "
        f"page: {small}",
        "pcp_free": f"free_unref_folios' time per page: {small}",
        "buddy_alloc": f"__rmqueue_pcplist's time less its per-CPU list pops (as measured by "
        f"fault_cycles), per page it refilled from the buddy lists "
        f"(rmqueue_bulk), less a buddy_split step a page: {large}",
        "buddy_free": f"free_frozen_page_commit's time less its per-CPU list pushes (as "
        f"measured by fault_cycles), per page it drained to the buddy lists "
        f"(free_pcppages_bulk), less a buddy_split merge a page: {large}",
        "lru_lock_page": f"folio_batch_move_lru's time (under lru_lock: lru_add and the LRU "
        f"counters) less the folios_put_refs it ends with, per page: {large}",
        "lru_add": f"__folio_batch_add_and_move's time less folio_batch_move_lru, per page: "
        f"{large}",
        "slab_object": f"kmem_cache_alloc_noprof's, kmem_cache_alloc_lru_noprof's and "
        f"kmem_cache_free's time less new and freed slab pages (allocate_slab, "
        f"free_slab), per object allocated or freed, counted by the "
        f"kmem:kmem_cache_alloc and kmem_cache_free tracepoints in a run of "
        f"its own: {where}; create, close and unlink {sizes.slab_files} "
        f"empty files in a tmpfs directory (create_unlink in /dev/shm)",
    }
    for name in KERNEL_PATH_KNOBS:
        values = [float(v) for r in runs if (v := r[name]) is not None]
        if not values:
            # Only the buddy knobs can be None (kernel_paths).
            cal.skipped[name] = f"kernel paths: {_NO_BUDDY}"
            continue
        shown = f"; {len(values)} of {len(runs)} repetitions" if len(values) < len(runs) else ""
        if min(values) < 0:
            # A difference of two sampled times: below 0 when the part is within the noise.
            shown += "; a repetition below 0 counts as 0"
        cal.knobs[name] = Figure(name, [max(0.0, v) for v in values], methods[name] + shown)
    for name, method in (
        (
            "pages_refilled",
            "pages pcp_cycle's faults took from the buddy "
            "lists (their count plus the per-CPU list's growth)",
        ),
        (
            "pages_drained",
            "pages pcp_cycle's unmap gave back to the buddy "
            "lists (their count less the per-CPU list's growth)",
        ),
        ("slab_objects_per_file", "slab objects allocated or freed per file of create_unlink"),
    ):
        cal.figures[name] = Figure(
            name, [float(r[name] or 0) for r in runs], f"{method}; a count, not ns"
        )


# The anonymous fault figures (benchmark, method): the fault checks' measured side.
FAULT_FIGURES = {
    "touch_sequential": (
        "touch_seq",
        "the same reads in address order (what a first-touch loop adds to each of its faults)",
    ),
    "fault_read": (
        "fault_read",
        "first read of each page of a fresh MADV_NOHUGEPAGE "
        "anonymous mapping (do_anonymous_page maps the zero page: no allocation, "
        "no zeroing)",
    ),
    "fault_write": (
        "fault_write",
        "first write of each page of a fresh anonymous mapping "
        "(allocation, clear_page, memcg charge, LRU add, rmap)",
    ),
}


def _fault_checks(
    f: dict[str, Figure], cost: dict[str, float]
) -> list[tuple[str, float, float, str]]:
    """The anonymous fault checks' rows: (operation, measured, vmsim, kernel function)."""
    n = CHECK_PAGES
    return [
        (
            "anonymous write fault",
            f["fault_write"].median - f["touch_sequential"].median,
            _vmsim_sys_per_page(cost, [{"op": "touch", "size": "16MiB"}], n),
            "do_anonymous_page",
        ),
        (
            "anonymous read fault",
            f["fault_read"].median - f["touch_sequential"].median,
            _vmsim_sys_per_page(cost, [{"op": "touch", "size": "16MiB", "write": False}], n),
            "do_anonymous_page (the zero page)",
        ),
    ]


def _check_rows(rows: list[tuple[str, float, float, str]]) -> list[dict[str, Any]]:
    """Check rows as the report and --json give them."""
    return [
        {
            "operation": what,
            "measured_ns": round(measured, 1),
            "vmsim_ns": round(modelled, 1),
            "ratio": round(modelled / measured, 2) if measured > 0 else None,
            "kernel_function": fn,
        }
        for what, measured, modelled, fn in rows
    ]


# What `vmsim calibrate --only FAMILY` can measure alone, against the rest of a base
# profile: the family's knobs.
FAMILIES = {
    "large-folio-reclaim": ("shrink_large_folio", "free_buffer_head"),
    "kernel-paths": KERNEL_PATH_KNOBS,
    "shrinker": ("shrink_object",),
    "ext4": ("create_call", "ext4_recently_deleted"),
}


def measure_family(
    family: str,
    quick: bool = False,
    workdir: Path | None = None,
    base_cost: dict[str, int] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Calibration:
    """Measures one family's knobs alone, vmsim's own share of their paths charged with
    ``base_cost`` for every other knob (the profile they will join)."""
    if family not in FAMILIES:
        raise CalibrateError(
            f"calibrate --only: no family {family!r} (one of {', '.join(FAMILIES)})"
        )
    sizes = sizes_for(quick)
    base = dict(base_cost or api.cost_profile("seed-era")["cost"])
    cal = Calibration(machine=machine_facts())
    say = progress or (lambda _s: None)
    with tempfile.TemporaryDirectory(prefix="vmsim-calibrate-", dir=workdir) as tmp:
        if family == "shrinker":
            why = kprofile.unavailable() or reclaim_available()
            if why is not None:
                raise CalibrateError(f"calibrate --only {family}: {why}")
            say("the superblock shrinker (perf samples of a limit reclaim of dentries and inodes)")
            _measure_shrinker(cal, Path(tmp), sizes)
            return cal
        if family == "ext4":
            why = recently_deleted_unavailable(Path(tmp)) or scratch_unavailable()
            if why is not None:
                raise CalibrateError(f"calibrate --only {family}: {why}")
            say("file creates")
            cal.figures["create_close"] = create_figure(Path(tmp), sizes, journal=False)
            create_knob(cal, {n: float(v) for n, v in base.items()})
            say("ext4 without a journal: creates past recently deleted inodes")
            _measure_recently_deleted(cal, Path(tmp), sizes)
            return cal
        if family == "kernel-paths":
            why = kprofile.unavailable()
            if why is not None:
                raise CalibrateError(f"calibrate --only {family}: {why}")
            say("kernel paths (perf samples of the allocator, the LRU, the slab allocator)")
            _measure_kernel_paths(cal, Path(tmp), sizes, base)
            say("anonymous faults (the checks)")
            for name, (bench, method) in FAULT_FIGURES.items():
                cal.figures[name] = Figure(
                    name, [_bench(bench, sizes.mem)["ns"] for _ in range(sizes.repeat)], method
                )
            cost = {**base, **{n: f.median for n, f in cal.knobs.items()}}
            cal.checks = _check_rows(_fault_checks(cal.figures, cost))
            return cal
        why = reclaim_available()
        if why is not None:
            raise CalibrateError(f"calibrate --only {family}: reclaim of clean large folios: {why}")
        say("reclaim of clean large folios (64 KiB, 256 KiB, 1 MiB)")
        large = [
            {kib: reclaim_large_folios(Path(tmp), sizes, kib) for kib in LARGE_FOLIO_KIB}
            for _ in range(sizes.repeat)
        ]
        say("reclaim of readahead folios (the check)")
        _readahead_figure(
            cal, [reclaim_readahead_folios(Path(tmp), sizes) for _ in range(sizes.repeat)], sizes
        )
    say("vmsim's own charge for large-folio reclaim")
    _large_folio_knobs(cal, large, {n: float(v) for n, v in base.items()}, sizes)
    for name in FAMILIES[family]:
        fig = cal.knobs[name]
        if min(fig.values) < 0:
            note = (
                f"; vmsim's own part exceeds the kernel's by {-fig.median:.0f} ns, so 0"
                if fig.median < 0
                else "; a repetition below 0 counts as 0"
            )
            cal.knobs[name] = Figure(name, [max(0.0, x) for x in fig.values], fig.method + note)
    cal.checks = _large_folio_checks(
        cal, {**base, **{n: f.median for n, f in cal.knobs.items()}}, sizes
    )
    return cal


# A child process that joins a memory cgroup (or several in turn) and runs benchmarks
# there: this process stays where it is.
_IN_GROUP = r"""
import json, os, sys
from vmsim import _vmsim
spec = json.loads(sys.argv[1])
me = str(os.getpid())
out = []
for procs, name, size in spec:
    with open(procs, "w") as f:
        f.write(me)
    out.append(dict(_vmsim.calibrate_bench(name, size, None, 0))["ns"])
print(json.dumps(out))
"""


def _bench_in_groups(spec: list[tuple[str, str, int]]) -> list[float]:
    """Runs (cgroup.procs, benchmark, size) in turn in one child process, which joins each
    group before its benchmark; their figures [ns]."""
    r = subprocess.run(
        [sys.executable, "-c", _IN_GROUP, json.dumps(spec)],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise CalibrateError(f"calibrate in a memory cgroup: {last}")
    return [float(x) for x in json.loads(r.stdout)]


def reclaim_anon_swap(workdir: Path, sizes: Sizes) -> tuple[ReclaimTrace, float]:
    """One repetition of the anonymous reclaim measurement: a process in a memory cgroup
    limited to ``swap_limit`` writes ``swap_anon`` of fresh anonymous memory, so limit
    reclaim pushes the rest to a swap file made for it (mkswap, swapon; swapoff and
    removed after); the limit reclaims, from their tracepoints, and the writer's thread
    CPU time per page written [ns] (its faults and the reclaim they entered, not its
    waits for the disk)."""
    tag = _tag()
    from vmsim.fidelity import host
    from vmsim.fidelity.experiment import FidelityError

    with ExitStack() as stack:
        try:
            host.make_swapfile(stack, workdir / "swap.img", sizes.swap_anon + (16 << 20))
        except (FidelityError, OSError) as e:
            raise CalibrateError(f"calibrate swap: {e}") from None
        with trace_instance(tag, RECLAIM_EVENTS) as inst, memcg(tag, sizes.swap_limit) as group:
            ns = _bench_in_groups([(str(group / "cgroup.procs"), "fault_write", sizes.swap_anon)])[
                0
            ]
            (inst / "tracing_on").write_text("0\n")
            trace = (inst / "trace").read_text(errors="replace")
    return memcg_reclaim_calls(trace), ns


def memcg_charge_pairs(sizes: Sizes) -> float:
    """One repetition of the charge measurement: a write fault and munmap of 16 MiB of
    anonymous memory by one process alternately in the root memory cgroup (never charged:
    try_charge returns at once for it) and in a group of its own, ``charge_pairs`` times;
    the median over the pairs of the difference per page [ns]."""
    tag = _tag()
    size = 16 << 20
    root = str(MEMCG_ROOT / "cgroup.procs")
    with memcg(tag, None) as group:
        mine = str(group / "cgroup.procs")
        spec: list[tuple[str, str, int]] = []
        for i in range(sizes.charge_pairs):
            for where in (root, mine) if i % 2 else (mine, root):
                spec += [(where, "fault_write", size), (where, "unmap", size)]
        ns = _bench_in_groups(spec)
    diffs = []
    for i in range(sizes.charge_pairs):
        a = ns[4 * i] + ns[4 * i + 1]
        b = ns[4 * i + 2] + ns[4 * i + 3]
        diffs.append(b - a if i % 2 else a - b)
    return statistics.median(diffs)


# The layout compaction works on: a child that writes anonymous memory (no THP) in chunks
# of 256 MiB until the pages that landed in the low quarter of their zone are twice
# TARGET, or until it holds CAP bytes, then keeps every other one of those and frees the
# rest (MADV_DONTNEED); says "ready" with the pages kept and holds them until its stdin
# closes. compact_memory (compact_zone with order -1) moves pages from a zone's start up
# to where its migration scanner meets the free scanner, which with much memory free lies
# anywhere: the low quarter is what it surely crosses. Where a page landed is read from
# /proc/self/pagemap (root); without PFNs every other page of one chunk is kept.
_LAYOUT = r"""
import ctypes, mmap, re, sys
from array import array
target, cap = int(sys.argv[1]), int(sys.argv[2])
chunk = 256 << 20
low = []
for block in open("/proc/zoneinfo").read().split("Node ")[1:]:
    f = re.search(r"spanned\s+(\d+)", block), re.search(r"start_pfn:\s+(\d+)", block)
    if f[0] and f[1] and int(f[0].group(1)) > 0:
        start, spanned = int(f[1].group(1)), int(f[0].group(1))
        low.append((start, start + spanned // 4))
maps, found = [], 0
pm = open("/proc/self/pagemap", "rb")
while len(maps) * chunk < cap:
    m = mmap.mmap(-1, chunk, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m.madvise(mmap.MADV_NOHUGEPAGE)
    for off in range(0, chunk, 4096):
        m[off] = 1
    pm.seek(ctypes.addressof(ctypes.c_char.from_buffer(m)) // 4096 * 8)
    entries = array("Q")
    entries.frombytes(pm.read(chunk // 4096 * 8))
    pfns = [e & ((1 << 55) - 1) if e >> 63 else 0 for e in entries]
    in_low = [p > 0 and any(a <= p < b for a, b in low) for p in pfns]
    maps.append((m, in_low, any(pfns)))
    found += sum(in_low)
    if not any(pfns) or found >= 2 * target:
        break
kept = seen = 0
for m, in_low, known in maps:
    for i, is_low in enumerate(in_low):
        keep = (is_low and seen % 2 == 0) if known else i % 2 == 0
        seen += is_low
        kept += keep
        if not keep:
            m.madvise(mmap.MADV_DONTNEED, i * 4096, 4096)
print("ready", kept, flush=True)
sys.stdin.read()
"""
COMPACT_MEMORY = Path("/proc/sys/vm/compact_memory")
#: Pages the compaction layout aims to hold in the low quarter of the zones (64 MiB).
COMPACT_KEEP = 16384


def compaction_available() -> str | None:
    """Why the compaction measurement cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root (it writes /proc/sys/vm/compact_memory)"
    if not COMPACT_MEMORY.exists():
        return "this kernel has no /proc/sys/vm/compact_memory (CONFIG_COMPACTION off)"
    return None


def _vmstat() -> dict[str, int]:
    out = {}
    for line in Path("/proc/vmstat").read_text().splitlines():
        k, _, v = line.partition(" ")
        out[k] = int(v)
    return out


def compact_memory_pass() -> tuple[float, int, int]:
    """``echo 1 > /proc/sys/vm/compact_memory``: compact_nodes() runs in the writer, so
    this thread's CPU time is the whole pass [ns]; with the pages it migrated
    (pgmigrate_success) and the pages its two scanners went over
    (compact_migrate_scanned + compact_free_scanned)."""
    v0 = _vmstat()
    t0 = time.thread_time_ns()
    COMPACT_MEMORY.write_text("1\n")
    t1 = time.thread_time_ns()
    v1 = _vmstat()
    scanned = sum(v1[k] - v0[k] for k in ("compact_migrate_scanned", "compact_free_scanned"))
    return float(t1 - t0), v1["pgmigrate_success"] - v0["pgmigrate_success"], scanned


def compaction_costs(sizes: Sizes) -> tuple[float, float, int]:
    """One repetition of the compaction measurement: passes of compact_memory with nothing
    prepared until one finds little or nothing to move (at most four), then
    one with the layout held, which migrates most of it; solved for the CPU time per page
    migrated and per page scanned [ns] (a pass costs migrated x the one + scanned x the
    other), and the pages the second pass migrated."""
    # Until a pass finds (almost) nothing to move: what the machine's own recent work left.
    for _ in range(4):
        cb, mb, sb = compact_memory_pass()
        if mb < 1000:
            break
    from vmsim.fidelity import host

    available = host.read_meminfo().get("MemAvailable", 0) * 1024
    cap = max(sizes.compact_layout, min(4 << 30, available // 4))
    p = subprocess.Popen(
        [sys.executable, "-c", _LAYOUT, str(COMPACT_KEEP), str(cap)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout is not None
        said = p.stdout.readline().split()
        if len(said) != 2 or said[0] != "ready":
            raise CalibrateError("calibrate compaction: the layout's process did not start")
        kept = int(said[1])
        ca, ma, sa = compact_memory_pass()
    finally:
        if p.stdin is not None:
            with suppress(OSError):
                p.stdin.close()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    det = ma * sb - mb * sa
    if ma < 1000 or ma < 4 * mb or det <= 0:
        raise CalibrateError(
            f"calibrate compaction: the passes migrated {mb} pages and, with the layout of "
            f"{kept} pages held, {ma} (scanning {sb} and {sa} pages); too little to tell "
            "migration from scanning (is something else compacting?)"
        )
    return (ca * sb - cb * sa) / det, (ma * cb - mb * ca) / det, ma


def _cost_now(base: dict[str, int], knobs: dict[str, Figure]) -> dict[str, float]:
    """The costs so far: ``base`` with each knob measured yet at its median (a part that
    came out below 0 counts as 0 until it is clamped)."""
    return {**base, **{n: max(0.0, f.median) for n, f in knobs.items()}}


def _compaction_costs_retrying(sizes: Sizes, attempts: int = 5) -> tuple[float, float, int]:
    """compaction_costs, tried again when the machine's own work (another process's pages
    moving, kcompactd) left the two passes too alike to solve; the last error if every
    attempt does."""
    for attempt in range(attempts):
        try:
            return compaction_costs(sizes)
        except CalibrateError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def _measure_compaction(
    cal: Calibration, sizes: Sizes, say: Callable[[str], None]
) -> list[tuple[float, float, int]]:
    """The compaction repetitions of a whole calibration; where the machine cannot give
    them, its two knobs are named in ``cal.skipped`` with the reason and the run goes on."""
    why_compact = compaction_available()
    if why_compact is None:
        say("compaction (compact_memory, the whole machine)")
        try:
            return [_compaction_costs_retrying(sizes) for _ in range(sizes.repeat)]
        except CalibrateError as e:
            # The machine's memory left compact_memory too little to move: the two
            # knobs keep the base profile's figures, named as not measured here.
            why_compact = str(e).removeprefix("calibrate compaction: ")
    cal.skipped["migrate_page"] = f"compaction: {why_compact}"
    cal.skipped["compact_scan_page"] = f"compaction: {why_compact}"
    return []


def _per_rep(
    a: Figure, b: Figure, f: Callable[[float, float], float], name: str, method: str
) -> Figure:
    return Figure(name, [f(x, y) for x, y in zip(a.values, b.values, strict=True)], method)


def measure(
    quick: bool = False,
    workdir: Path | None = None,
    base_cost: dict[str, int] | None = None,
    progress: Callable[[str], None] | None = None,
    base_profile_name: str | None = None,
) -> Calibration:
    """Runs every microbenchmark and derives the knobs they measure."""
    sizes = sizes_for(quick)
    base = dict(base_cost or api.cost_profile("seed-era")["cost"])
    base_name = base_profile_name or "seed-era"
    cal = Calibration(machine=machine_facts())
    say = progress or (lambda _s: None)

    def rep(name: str, method: str, fn: Callable[[], float]) -> Figure:
        say(name)
        fig = Figure(name, [fn() for _ in range(sizes.repeat)], method)
        cal.figures[name] = fig
        return fig

    def rep_many(names: dict[str, tuple[str, str]], fn: Callable[[], dict[str, float]]) -> None:
        say(", ".join(names))
        runs = [fn() for _ in range(sizes.repeat)]
        for key, (name, method) in names.items():
            cal.figures[name] = Figure(name, [r[key] for r in runs], method)

    mem = sizes.mem
    syscall = rep(
        "syscall",
        "syscall(SYS_getppid) in a loop, thread CPU time per call",
        lambda: _bench("syscall", sizes.syscalls)["ns"],
    )
    touch_rand = rep(
        "touch_random",
        f"one read per page of a populated {mem >> 20} MiB anonymous buffer, "
        "pages in shuffled order (independent loads overlap, as in a workload's loop)",
        lambda: _bench("touch_random", mem)["ns"],
    )
    touch_seq = rep(
        "touch_sequential",
        FAULT_FIGURES["touch_sequential"][1],
        lambda: _bench("touch_seq", mem)["ns"],
    )
    clear = rep(
        "clear_page",
        f"memset of each 4 KiB page of a populated {mem >> 20} MiB buffer "
        "(rep stosb, as clear_page_erms)",
        lambda: _bench("clear", mem)["ns"],
    )
    copy = rep(
        "copy_page",
        f"memcpy of each 4 KiB page between two populated {mem >> 20} MiB buffers",
        lambda: _bench("copy", mem)["ns"],
    )
    fault_read = rep(
        "fault_read", FAULT_FIGURES["fault_read"][1], lambda: _bench("fault_read", mem)["ns"]
    )
    rep("fault_write", FAULT_FIGURES["fault_write"][1], lambda: _bench("fault_write", mem)["ns"])
    rep(
        "munmap",
        "munmap of a populated anonymous mapping, per page",
        lambda: _bench("unmap", mem)["ns"],
    )
    pair = rep(
        "pipe_pair",
        "write(2) of one byte to a pipe and its read(2) back in one task",
        lambda: _bench("pipe_pair", sizes.round_trips)["ns"],
    )
    rtt = rep(
        "ping_pong",
        "round trip of one byte between two processes pinned to CPU 0 through "
        "two pipes (wall time)",
        lambda: _bench("ping_pong", sizes.round_trips, cpu=0)["ns"],
    )
    rep_many(
        {
            "send": (
                "unix_send",
                "write(2) of a 100-byte message to an AF_UNIX stream socket, "
                "batches of 32 with no reader asleep, thread CPU time",
            ),
            "recv": ("unix_recv", "read(2) of a 100-byte message from it"),
            "user": (
                "unix_user",
                "user share (getrusage RUSAGE_THREAD) of the same calls' CPU time, per call",
            ),
        },
        lambda: _bench("unix", sizes.messages),
    )
    forks = sizes.forks_extra
    clone = rep(
        "clone_vm",
        "parent's side of clone(CLONE_VM|SIGCHLD), the child exiting at once: "
        "copy_process and wake_up_new_task without dup_mmap, median of 201",
        lambda: _bench("clone_vm", 201)["ns"],
    )
    fork0 = rep(
        "fork_self",
        "parent's side of fork() of this process, the child _exiting at once, median of 9",
        lambda: _bench("fork", 0, cpu=1)["ns"],
    )
    fork_mem = rep(
        "fork_anon",
        f"the same with {forks >> 20} MiB more populated anonymous memory in one mapping",
        lambda: _bench("fork", forks, cpu=1)["ns"],
    )
    vmas = sizes.fork_vmas
    fork_vma = rep(
        "fork_vmas",
        f"the same with {vmas} one-page anonymous mappings more",
        lambda: _bench("fork", vmas * 4096, cpu=vmas)["ns"],
    )
    with tempfile.TemporaryDirectory(prefix="vmsim-calibrate-", dir=workdir) as tmp:
        rep_many(
            {
                "write": (
                    "pagecache_write",
                    f"buffered pwrite(2) of 4 KiB pages appending to a "
                    f"new {sizes.cache_bytes >> 20} MiB file (ext4 here), thread CPU time "
                    "per page",
                ),
                "read": ("pagecache_read", "pread(2) of the same pages, cached, 4 KiB a call"),
            },
            lambda: _bench("page_cache", sizes.cache_bytes, path=tmp, cpu=1),
        )
        rep_many(
            {
                "write": ("pagecache_write_64k", "the same writes 64 KiB a call, per page"),
                "read": ("pagecache_read_64k", "the same reads 64 KiB a call, per page"),
            },
            lambda: _bench("page_cache", sizes.cache_bytes, path=tmp, cpu=16),
        )
        rep_many(
            {
                "write": ("pagecache_write_1m", "the same writes 1 MiB a call, per page"),
                "read": ("pagecache_read_1m", "the same reads 1 MiB a call, per page"),
            },
            lambda: _bench("page_cache", sizes.cache_bytes, path=tmp, cpu=256),
        )
        dio = rep(
            "direct_write",
            "pwrite(2) of 4 KiB with O_DIRECT over allocated blocks: thread CPU "
            "time per write (the iomap path, submit_bio, sleep and wake-up, completion)",
            lambda: _bench("direct_write", sizes.dio, path=tmp)["ns"],
        )
        why = reclaim_available()
        reclaim: list[ReclaimTrace] | None = None
        large: list[dict[int, ReclaimTrace]] = []
        walk: list[ReclaimTrace] = []
        charge: list[float] = []
        if why is None:
            say(f"reclaim of clean page cache, alone and beside {sizes.walk_groups} empty groups")
            reclaim = []
            for _ in range(sizes.repeat):
                reclaim.append(reclaim_clean_file(Path(tmp), sizes))
                walk.append(reclaim_clean_file(Path(tmp), sizes, sizes.walk_groups))
            say("memcg charge")
            charge = [memcg_charge_pairs(sizes) for _ in range(sizes.repeat)]
            say("reclaim of clean large folios (64 KiB, 256 KiB, 1 MiB)")
            large = [
                {kib: reclaim_large_folios(Path(tmp), sizes, kib) for kib in LARGE_FOLIO_KIB}
                for _ in range(sizes.repeat)
            ]
            _readahead_figure(
                cal,
                [reclaim_readahead_folios(Path(tmp), sizes) for _ in range(sizes.repeat)],
                sizes,
            )
        else:
            cal.skipped["shrink_page"] = f"reclaim of clean page cache: {why}"
            cal.skipped["shrink_large_folio"] = f"reclaim of clean large folios: {why}"
            cal.skipped["free_buffer_head"] = f"reclaim of clean large folios: {why}"
            cal.skipped["memcg_iter"] = f"reclaim beside empty groups: {why}"
            cal.skipped["memcg_shrink_lruvec"] = f"reclaim beside empty groups: {why}"
            cal.skipped["memcg_charge"] = f"faults in a memory cgroup: {why}"
        compact = _measure_compaction(cal, sizes, say)
        why_swap = swap_available()
        anon: list[tuple[ReclaimTrace, float]] = []
        if why_swap is None:
            say("reclaim of anonymous memory to swap")
            anon = [reclaim_anon_swap(Path(tmp), sizes) for _ in range(sizes.repeat)]
        else:
            cal.skipped["unmap_page"] = f"reclaim of anonymous memory to swap: {why_swap}"
        why_paths = kprofile.unavailable()
        if why_paths is None:
            say("kernel paths (perf samples of the allocator, the LRU, the slab allocator)")
            try:
                _measure_kernel_paths(cal, Path(tmp), sizes, base)
            except CalibrateError as e:  # a kernel whose functions perf cannot time
                for name in KERNEL_PATH_KNOBS:
                    cal.skipped[name] = str(e).removeprefix("calibrate ")
            why_shrink = reclaim_available()
            if why_shrink is None:
                say("the superblock shrinker (perf samples of a limit reclaim)")
                try:
                    _measure_shrinker(cal, Path(tmp), sizes)
                except CalibrateError as e:  # as above
                    cal.skipped["shrink_object"] = str(e).removeprefix("calibrate ")
            else:
                cal.skipped["shrink_object"] = f"shrinker: {why_shrink}"
        else:
            for name in (*KERNEL_PATH_KNOBS, "shrink_object"):
                cal.skipped[name] = f"kernel paths: {why_paths}"
        _measure_creates(cal, Path(tmp), sizes, say)

    # The knobs, each from its figures, repetition by repetition.
    k = cal.knobs
    k["syscall"] = Figure("syscall", syscall.values, syscall.method)
    k["touch_page"] = Figure("touch_page", touch_rand.values, touch_rand.method)
    k["clear_page"] = Figure("clear_page", clear.values, clear.method)
    k["copy_page"] = Figure("copy_page", copy.values, copy.method)
    k["page_fault"] = _per_rep(
        fault_read,
        touch_seq,
        lambda a, b: a - b,
        "page_fault",
        "read fault of a fresh anonymous page (fault_read) less the sequential touch of a "
        "mapped one (touch_sequential): exception entry, handle_mm_fault, the PTE, return",
    )
    k["context_switch"] = _per_rep(
        rtt,
        pair,
        lambda a, b: a / 2 - b,
        "context_switch",
        "half a ping-pong round trip between two processes on one CPU less one write/read "
        "pair: try_to_wake_up, schedule, switch_mm",
    )
    k["unix_sendmsg"] = Figure(
        "unix_sendmsg", cal.figures["unix_send"].values, cal.figures["unix_send"].method
    )
    k["unix_recvmsg"] = Figure(
        "unix_recvmsg", cal.figures["unix_recv"].values, cal.figures["unix_recv"].method
    )
    k["msg_user"] = Figure(
        "msg_user", cal.figures["unix_user"].values, cal.figures["unix_user"].method
    )
    k["fork"] = Figure("fork", clone.values, clone.method)
    # What dup_mmap adds to a fork, which vmsim does not model: per anonymous page and
    # per mapping, from fork() of this process with more of each.
    cal.figures["fork_per_page"] = _per_rep(
        fork_mem,
        fork0,
        lambda m, z: (m - z) / (forks // 4096),
        "fork_per_page",
        "(fork_anon - fork_self) per anonymous page added: the page-table copy",
    )
    cal.figures["fork_per_mapping"] = Figure(
        "fork_per_mapping",
        [
            (v - z - p * vmas) / vmas
            for v, z, p in zip(
                fork_vma.values, fork0.values, cal.figures["fork_per_page"].values, strict=True
            )
        ],
        "(fork_vmas - fork_self) per mapping added, less its page's copy: vm_area_dup, "
        "anon_vma_fork",
    )
    ctx = k["context_switch"]
    k["submit_bio"] = Figure(
        "submit_bio",
        [d - s - c for d, s, c in zip(dio.values, syscall.values, ctx.values, strict=True)],
        "an O_DIRECT 4 KiB write's CPU time (direct_write) less a system call and the "
        "context switch of its wait",
    )
    if charge:
        units = _vmsim_charge_units(_cost_now(base, k))
        cal.figures["memcg_charge_page"] = Figure(
            "memcg_charge_page",
            charge,
            "a write fault and munmap of 16 MiB of anonymous memory in a memory cgroup of its "
            "own less the same in the root group (which is never charged), per page: median "
            f"over {sizes.charge_pairs} alternations",
        )
        k["memcg_charge"] = Figure(
            "memcg_charge",
            [max(0.0, c / units) for c in charge],
            f"memcg_charge_page over what vmsim charges for the same difference ({units:g} x "
            "memcg_charge a page: the charge and the uncharge, one level more each)",
        )
    if reclaim is not None:
        now = _cost_now(base, k)
        others = now["lru_lock_page"] + now["pcp_free"] + now["memcg_charge"]
        for run in reclaim + walk:
            if run.pages <= 0:
                raise CalibrateError("calibrate reclaim: the limited group reclaimed nothing")
        per_page = [r.ns / r.pages for r in reclaim]
        first = reclaim[0]
        cal.figures["reclaim_clean"] = Figure(
            "reclaim_clean",
            per_page,
            f"time inside memory cgroup limit reclaim (mm_vmscan_memcg_reclaim_begin to _end) "
            f"per page it reclaimed, reading a {sizes.reclaim_file >> 20} MiB file 4 KiB a "
            f"pread (readahead off: order-0 folios) in a group limited to "
            f"{sizes.reclaim_limit >> 20} MiB; {first.shape()}, "
            f"{first.passes / max(1, first.calls):.1f} passes a reclaim",
        )
        k["shrink_page"] = Figure(
            "shrink_page",
            [p - others for p in per_page],
            "reclaim_clean less what vmsim charges besides shrink_page for a clean order-0 "
            f"file page on that path (lru_lock_page + pcp_free + memcg_charge = {others:.0f} "
            "ns)",
        )
        n = sizes.walk_groups
        visit = []
        for alone, beside in zip(reclaim, walk, strict=True):
            if beside.passes <= 0:
                raise CalibrateError(
                    "calibrate reclaim: no pass of the walk beside empty groups "
                    "scanned (no mm_vmscan_lru_shrink_inactive events)"
                )
            visit.append((beside.ns - alone.ns_per_call * beside.calls) / (n * beside.passes))
        cal.figures["memcg_visit"] = Figure(
            "memcg_visit",
            visit,
            f"the same reclaim with {n} empty groups below the group (its limit raised by "
            "what they charge to it): the time it adds per call, over the empty groups each "
            "call visits. 6.18's limit reclaim walks the subtree from where the last walk "
            "stopped (shrink_node_memcgs' partial walk) and stops at the group once it has "
            "enough, so a call whose last shrink_inactive_list ran at priority p visits every "
            "empty group 12 - p times",
        )
        iter_share = base["memcg_iter"] / (base["memcg_iter"] + base["memcg_shrink_lruvec"])
        split = (
            f"; an empty group's visit costs memcg_iter + memcg_shrink_lruvec in vmsim, "
            f"and no microbenchmark here separates the two: split as in profile "
            f"{base_name} ({iter_share:.2f} of it the iteration step)"
        )
        k["memcg_iter"] = Figure(
            "memcg_iter",
            [v * iter_share for v in visit],
            "memcg_visit's iteration step (mem_cgroup_iter)" + split,
        )
        k["memcg_shrink_lruvec"] = Figure(
            "memcg_shrink_lruvec",
            [v * (1 - iter_share) for v in visit],
            "memcg_visit's shrink_lruvec and shrink_slab of an empty group" + split,
        )
    if large:
        say("vmsim's own charge for large-folio reclaim")
        _large_folio_knobs(cal, large, _cost_now(base, k), sizes)
    if compact:
        cal.figures["compact_migrated"] = Figure(
            "compact_migrated",
            [c[0] for c in compact],
            "CPU time of compact_memory per page migrated: a process writes anonymous "
            "memory 256 MiB at a time until twice 16,384 of its pages lie in the low quarter "
            "of their zone (/proc/self/pagemap; at most a quarter of MemAvailable) and keeps "
            "every other one of those; two passes "
            "of compact_memory (the writer's thread CPU time, "
            "pgmigrate_success, compact_migrate_scanned + compact_free_scanned), one before "
            f"the layout, finding little to move, one with it, migrating {compact[0][2]} "
            "pages; solved for a cost per page migrated and one per page scanned",
        )
        k["compact_scan_page"] = Figure(
            "compact_scan_page",
            [c[1] for c in compact],
            "the per-page-scanned part of the same two passes (the scanners step over free "
            "blocks a page at a time in the counters, as vmsim charges them)",
        )
        buddy_free = _cost_now(base, k)["buddy_free"]
        k["migrate_page"] = Figure(
            "migrate_page",
            [c[0] - buddy_free for c in compact],
            "compact_migrated less what vmsim charges besides migrate_page for an order-0 "
            f"page it migrates (buddy_free of the old page, {buddy_free:.0f} ns)",
        )
    if anon:
        cost_now = {**_cost_now(base, k), "unmap_page": 0}
        own_run, own = _vmsim_reclaim_anon(cost_now, sizes)
        touched = sizes.swap_anon // 4096
        fault = cal.figures["fault_write"].median
        if any(r.pages <= 0 for r, _ in anon):
            raise CalibrateError("calibrate swap: the limited group reclaimed nothing")
        real = [(ns - fault) * touched / r.pages for r, ns in anon]
        a0 = anon[0][0]
        cal.figures["reclaim_anon"] = Figure(
            "reclaim_anon",
            real,
            f"CPU time of reclaim per page it reclaimed: a process writes "
            f"{sizes.swap_anon >> 20} MiB of fresh anonymous memory in a group limited to "
            f"{sizes.swap_limit >> 20} MiB with a swap file; its thread CPU time per page "
            "less fault_write's, times the pages written, over the pages its limit reclaims "
            f"reclaimed (mm_vmscan_memcg_reclaim_end); {a0.shape()}",
        )
        cal.figures["reclaim_anon_vmsim"] = Figure(
            "reclaim_anon_vmsim",
            [own],
            "vmsim's own system time per page reclaimed in the same shape (its run less the "
            "same run without the limit) with unmap_page = 0 and every other figure as "
            f"measured; {own_run.shape()}",
        )
        k["unmap_page"] = Figure(
            "unmap_page",
            [r - own for r in real],
            "reclaim_anon less vmsim's own time for it (reclaim_anon_vmsim): what the kernel "
            "spends on an anonymous page beyond what vmsim charges for the rest of that path "
            "(add_to_swap, try_to_unmap, swap_writepage)",
        )
    # write_call/write_page and read_call/read_page: a call of n pages costs call + n·page.
    # Two lengths (4 KiB and 64 KiB a call) give both parts, for the real kernel and for
    # vmsim with these four at 0 and every other figure as measured; each knob is the
    # real part less vmsim's own.
    cost = _cost_now(base, k)
    cost.update(write_call=0, write_page=0, read_call=0, read_page=0)
    say("vmsim's own charge for writes and reads")
    v = {
        ("write", 1): _vmsim_sys_per_page(cost, _write(4), CHECK_PAGES),
        ("write", 16): _vmsim_sys_per_page(cost, _write(64), CHECK_PAGES),
        ("read", 1): _vmsim_sys_per_page(cost, _read(4), CHECK_PAGES, _write(4)),
        ("read", 16): _vmsim_sys_per_page(cost, _read(64), CHECK_PAGES, _write(64)),
    }
    for op in ("write", "read"):
        f1, f16 = cal.figures[f"pagecache_{op}"], cal.figures[f"pagecache_{op}_64k"]
        v_call, v_page = _split(v[(op, 1)], v[(op, 16)])
        parts = [_split(a, b) for a, b in zip(f1.values, f16.values, strict=True)]
        k[f"{op}_call"] = Figure(
            f"{op}_call",
            [c - v_call for c, _ in parts],
            f"the per-call part of pagecache_{op} and pagecache_{op}_64k (a call of n pages "
            f"costs call + n x page) less vmsim's own per-call part ({v_call:.0f} ns)",
        )
        k[f"{op}_page"] = Figure(
            f"{op}_page",
            [p - v_page for _, p in parts],
            f"the per-page part of the same less vmsim's own ({v_page:.0f} ns a page: "
            + (
                "allocation, copy, buffer_head, LRU add, charge)"
                if op == "write"
                else "the copy, the accessed marking)"
            ),
        )
    if "create_close" in cal.figures:
        create_knob(cal, _cost_now(base, k))
    for name in (
        "write_call",
        "write_page",
        "read_call",
        "read_page",
        "create_call",
        "unmap_page",
        "shrink_large_folio",
        "free_buffer_head",
    ):
        if name not in k or min(k[name].values) >= 0:
            continue
        # Where vmsim's own charge for the rest of the path already exceeds the kernel's,
        # there is nothing to add: a repetition's figure is 0 then.
        fig = k[name]
        note = (
            f"; vmsim's own part exceeds the kernel's by {-fig.median:.0f} ns, so 0"
            if fig.median < 0
            else "; a repetition below 0 counts as 0"
        )
        k[name] = Figure(name, [max(0.0, x) for x in fig.values], fig.method + note)
    for name in (
        "page_fault",
        "context_switch",
        "submit_bio",
        "shrink_page",
        "migrate_page",
        "compact_scan_page",
        "memcg_iter",
    ):
        if name in k and k[name].median <= 0:
            raise CalibrateError(
                f"calibrate: {name} came out at {k[name].median:.0f} ns, not a cost; the "
                "machine is too busy or the method does not hold here"
            )
    cal.checks = _checks(cal, base, sizes)
    return cal


def _vmsim_sys_per_page(
    cost: dict[str, float],
    program: list[dict[str, Any]],
    pages: int,
    before: list[dict[str, Any]] | None = None,
) -> float:
    """System time per page [ns] vmsim charges a task for ``program`` (less what
    ``before`` alone costs), on a 4 GiB machine with nothing else to do."""

    def sys_ns(prog: list[dict[str, Any]]) -> float:
        sc = {
            "name": "calibrate-check",
            "duration": "60s",
            "machine": {"memory": "4GiB", "cpus": 2},
            "cost": {k: int(round(v)) for k, v in cost.items()},
            "task": [{"name": "t", "program": prog}],
        }
        return float(api.run(sc).data["tasks"]["t"]["sys_seconds"]) * 1e9

    base = sys_ns(before) if before else 0.0
    return (sys_ns((before or []) + program) - base) / pages


CHECK_PAGES = 16 * 256
#: Files vmsim makes for its own charge of a create.
CHECK_FILES = 2000


def _vmsim_charge_units(cost: dict[str, float]) -> float:
    """How many memcg_charge vmsim charges a page for a write fault and munmap in a group
    of its own beyond the same in the root group: from four runs, with memcg_charge at
    0 and at 1000 ns."""

    def sys_ns(c: int, group: bool) -> float:
        # Both runs have the group (memcg on); the task joins it or stays in the root one.
        task: dict[str, Any] = {
            "name": "t",
            "program": [{"op": "touch", "size": "16MiB"}, {"op": "unmap", "size": "16MiB"}],
        }
        sc: dict[str, Any] = {
            "name": "calibrate-check",
            "duration": "60s",
            "machine": {"memory": "4GiB", "cpus": 2},
            "cost": {**{n: int(round(v)) for n, v in cost.items()}, "memcg_charge": c},
            "task": [task],
            "cgroup": [{"path": "g"}],
        }
        if group:
            task["cgroup"] = "g"
        return float(api.run(sc).data["tasks"]["t"]["sys_seconds"]) * 1e9

    d0 = sys_ns(0, True) - sys_ns(0, False)
    d1 = sys_ns(1000, True) - sys_ns(1000, False)
    units = (d1 - d0) / 1000 / CHECK_PAGES
    if units <= 0:
        raise CalibrateError(
            "calibrate: vmsim charges nothing more for a page charged to a "
            "group than to the root one"
        )
    return round(units, 3)


def _vmsim_reclaim_anon(cost: dict[str, float], sizes: Sizes) -> tuple[ReclaimTrace, float]:
    """vmsim's own limit reclaims in the anonymous reclaim measurement's shape, from the
    same tracepoints of its trace, and the system time they add per page reclaimed [ns]
    (the run's less the same run without the limit)."""

    def sc(limit: bool) -> dict[str, Any]:
        group: dict[str, Any] = {"path": "g"}
        if limit:
            group["limit_in_bytes"] = f"{sizes.swap_limit >> 20}MiB"
        return {
            "name": "calibrate-check",
            "duration": "120s",
            "machine": {"memory": "4GiB", "cpus": 2, "swap": f"{(sizes.swap_anon >> 20) + 16}MiB"},
            "cost": {n: int(round(v)) for n, v in cost.items()},
            "cgroup": [group],
            "task": [
                {
                    "name": "t",
                    "cgroup": "g",
                    "program": [{"op": "touch", "size": f"{sizes.swap_anon >> 20}MiB"}],
                }
            ],
        }

    with tempfile.TemporaryDirectory(prefix="vmsim-calibrate-") as tmp:
        trace = Path(tmp) / "trace.txt"
        limited = api.run(sc(True), trace=trace, events=RECLAIM_EVENTS)
        run = memcg_reclaim_calls(trace.read_text())
    if run.pages <= 0:
        raise CalibrateError("calibrate swap: vmsim's group reclaimed nothing")
    free = api.run(sc(False))
    extra = (
        float(limited.data["tasks"]["t"]["sys_seconds"])
        - float(free.data["tasks"]["t"]["sys_seconds"])
    ) * 1e9
    return run, extra / run.pages


def _write(kib: int) -> list[dict[str, Any]]:
    return [{"op": "write", "file": "f", "size": "16MiB", "bs": f"{kib}KiB"}]


def _read(kib: int) -> list[dict[str, Any]]:
    return [{"op": "read", "file": "f", "bs": f"{kib}KiB"}]


def _split(per_page_4k: float, per_page_64k: float) -> tuple[float, float]:
    """(per call, per page) of an operation costing call + n·page for a call of n pages,
    from its cost per page at 1 and at 16 pages a call."""
    call = (per_page_4k - per_page_64k) * 16 / 15
    return call, per_page_4k - call


def _vmsim_reclaim_clean(cost: dict[str, float], sizes: Sizes) -> ReclaimTrace:
    """vmsim's own limit reclaims in the clean page-cache measurement's shape (readahead
    off, 4 KiB reads), from the same tracepoints of its trace."""
    sc = {
        "name": "calibrate-check",
        "duration": "120s",
        "machine": {"memory": "4GiB", "cpus": 2},
        "disk": {"read_ahead_kb": 0},
        "cost": {n: int(round(v)) for n, v in cost.items()},
        "file": [{"name": "f", "size": f"{sizes.reclaim_file >> 20}MiB"}],
        "cgroup": [{"path": "g", "limit_in_bytes": f"{sizes.reclaim_limit >> 20}MiB"}],
        "task": [
            {"name": "t", "cgroup": "g", "program": [{"op": "read", "file": "f", "bs": "4KiB"}]}
        ],
    }
    return _vmsim_reclaims(sc)


def _checks(cal: Calibration, base: dict[str, int], sizes: Sizes) -> list[dict[str, Any]]:
    """Whole operations measured here against what vmsim charges for the same operation
    with the new profile (a run of it): none of them sets a figure; printed so that a
    reader sees what the model leaves out."""
    cost: dict[str, float] = {**base, **{n: f.median for n, f in cal.knobs.items()}}
    f = cal.figures
    n = CHECK_PAGES
    rows = _fault_checks(f, cost) + [
        (
            "buffered write, 1 MiB a call",
            f["pagecache_write_1m"].median,
            _vmsim_sys_per_page(cost, _write(1024), n),
            "generic_perform_write",
        ),
        (
            "cached read, 1 MiB a call",
            f["pagecache_read_1m"].median,
            _vmsim_sys_per_page(cost, _read(1024), n, _write(1024)),
            "filemap_read",
        ),
    ]
    out = _check_rows(rows)
    if "reclaim_clean" in f:
        # The same reclaim in vmsim: its time per page, and how the reclaims went.
        run = _vmsim_reclaim_clean(cost, sizes)
        measured = f["reclaim_clean"].median
        modelled = run.ns / max(1, run.pages)
        out.append(
            {
                "operation": "limit reclaim, clean file",
                "measured_ns": round(measured, 1),
                "vmsim_ns": round(modelled, 1),
                "ratio": round(modelled / measured, 2) if measured > 0 else None,
                "kernel_function": "try_to_free_mem_cgroup_pages",
                "note": f"vmsim: {run.shape()}, {run.passes / max(1, run.calls):.1f} passes a "
                "reclaim",
            }
        )
    return out + _large_folio_checks(cal, cost, sizes)


def reclaim_readahead_folios(workdir: Path, sizes: Sizes) -> tuple[ReclaimTrace, int]:
    """The check's shape without buffer heads: a process in a memory cgroup reads a
    ``reclaim_file`` file (written and dropped first) with `cat`, so readahead caches it in
    large folios that carry no buffer heads (ext4_mpage_readpages), then the group's limit
    is lowered to ``reclaim_limit``; the limit reclaims, and the device's read_ahead_kb."""
    tag = _tag()
    file = _reclaim_file(workdir / "readahead.dat", sizes.reclaim_file)
    try:
        _drop_file(file)
        with memcg(tag, None) as group:
            r = subprocess.run(
                ["sh", "-c", f'echo $$ > "{group / "cgroup.procs"}" && exec cat "{file}"'],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                check=False,
            )
            if r.returncode != 0:
                raise CalibrateError(f"calibrate readahead reclaim: {r.stderr.strip()}")
            with trace_instance(tag, RECLAIM_EVENTS) as inst:
                kmem = int((group / "memory.kmem.usage_in_bytes").read_text())
                (group / "memory.limit_in_bytes").write_text(str(sizes.reclaim_limit + kmem))
                (inst / "tracing_on").write_text("0\n")
                trace = (inst / "trace").read_text(errors="replace")
    finally:
        file.unlink(missing_ok=True)
    return memcg_reclaim_calls(trace), _read_ahead_kb(workdir)


def _read_ahead_kb(path: Path) -> int:
    """read_ahead_kb of the block device holding ``path`` (128, the default, if unknown)."""
    try:
        dev = os.stat(path).st_dev
        sysdev = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
        queue = sysdev / "queue" if (sysdev / "queue").exists() else sysdev / ".." / "queue"
        return int((queue / "read_ahead_kb").read_text())
    except (OSError, ValueError):
        return 128


def _vmsim_reclaim_readahead(cost: dict[str, float], sizes: Sizes, ra_kb: int) -> ReclaimTrace:
    """vmsim's own limit reclaims in the readahead shape (a file on the disk read 128 KiB a
    call, as `cat` does, with the device's read_ahead_kb, then the limit lowered)."""
    sc = {
        "name": "calibrate-check",
        "duration": "120s",
        "machine": {"memory": "4GiB", "cpus": 2},
        "disk": {"read_ahead_kb": ra_kb},
        "cost": {n: int(round(v)) for n, v in cost.items()},
        "file": [{"name": "f", "size": f"{sizes.reclaim_file >> 20}MiB"}],
        "cgroup": [{"path": "g"}],
        "task": [
            {
                "name": "t",
                "cgroup": "g",
                "program": [
                    {"op": "read", "file": "f", "bs": "128KiB"},
                    {
                        "op": "cgroup_write",
                        "cgroup": "g",
                        "file": "memory.limit_in_bytes",
                        "value": f"{sizes.reclaim_limit >> 20}MiB",
                    },
                ],
            }
        ],
    }
    return _vmsim_reclaims(sc)


def _large_folio_checks(
    cal: Calibration, cost: dict[str, float], sizes: Sizes
) -> list[dict[str, Any]]:
    """The large-folio limit reclaims measured against vmsim's with ``cost``, one row a
    folio size, and the readahead shape's (folios without buffer heads) when measured."""
    out = []
    ra = cal.figures.get("reclaim_readahead")
    if ra is not None:
        run = _vmsim_reclaim_readahead(cost, sizes, cal.readahead_kb or 128)
        modelled = run.ns / max(1, run.pages)
        out.append(
            {
                "operation": "limit reclaim, readahead folios",
                "measured_ns": round(ra.median, 1),
                "vmsim_ns": round(modelled, 1),
                "ratio": round(modelled / ra.median, 2) if ra.median > 0 else None,
                "kernel_function": "mem_cgroup_resize_max",
                "note": f"vmsim: {run.shape()}; no buffer heads",
            }
        )
    for kib in LARGE_FOLIO_KIB:
        if f"reclaim_{kib}k" not in cal.figures:
            continue
        run = _vmsim_reclaim_large(cost, sizes, kib)
        measured = cal.figures[f"reclaim_{kib}k"].median
        modelled = run.ns / max(1, run.pages)
        out.append(
            {
                "operation": f"limit reclaim, clean {kib} KiB folios",
                "measured_ns": round(measured, 1),
                "vmsim_ns": round(modelled, 1),
                "ratio": round(modelled / measured, 2) if measured > 0 else None,
                "kernel_function": "mem_cgroup_resize_max",
                "note": f"vmsim: {run.shape()}",
            }
        )
    return out


def profile(
    cal: Calibration, base: dict[str, Any], name: str, only: str | None = None
) -> dict[str, Any]:
    """The cost profile a calibration makes, as the TOML tables of a profile file: measured
    knobs from it, the rest from ``base`` (a profile as api.cost_profile gives it) and
    labelled as estimates; with ``only`` (a family measured alone) the rest keep ``base``'s
    figures, spreads, methods and date, and the new knobs' methods say when they were
    measured."""
    cost = dict(base["cost"])
    spread: dict[str, list[float]] = {}
    method: dict[str, str] = {}
    if only is not None:
        spread = {k: list(v) for k, v in base.get("spread", {}).items()}
        method = dict(base.get("method", {}))
    for knob, fig in cal.knobs.items():
        cost[knob] = max(1 if knob == "msg_user" else 0, round(fig.median))
        # A cost is never below zero, as the knob is clamped: a repetition that a
        # difference of two measurements puts below it is noise, and the spread starts at 0.
        lo, hi = (max(0.0, v) for v in fig.spread)
        spread[knob] = [round(lo, 1), round(hi, 1)]
        method[knob] = f"measured: {fig.method}; median of {len(fig.values)}"
        negative = sum(v < 0 for v in fig.values)
        if negative:
            method[knob] += (
                f" ({negative} of {len(fig.values)} below zero, the noise of a difference: "
                "the spread starts at 0)"
            )
        if fig.median < 1 and knob == "msg_user":
            method[knob] += " (below what the measurement resolves: 1 ns)"
        if only is not None:
            method[knob] += (
                f" (measured on {cal.machine['date']} by vmsim calibrate --only "
                f"{only} against the rest of profile {base['name']})"
            )
    if only is not None:
        spread = {k: spread[k] for k in cost if k in spread}
        method = {k: method[k] for k in cost if k in method}
        return {
            "profile": {
                "name": name,
                "machine": base.get("machine", cal.machine["machine"]),
                "kernel": base.get("kernel", cal.machine["kernel"]),
                "date": base.get("date", cal.machine["date"]),
                "source": f"vmsim calibrate {_vmsim.version()}",
            },
            "cost": cost,
            "spread": spread,
            "method": method,
        }
    for knob in cost:
        if knob not in cal.knobs:
            why = cal.skipped.get(knob, "no microbenchmark of vmsim calibrate isolates it")
            from_base = base.get("method", {}).get(knob, "")
            method[knob] = f"estimate ({why}), from profile {base['name']}: {from_base}"
    return {
        "profile": {
            "name": name,
            "machine": cal.machine["machine"],
            "kernel": cal.machine["kernel"],
            "date": cal.machine["date"],
            "source": f"vmsim calibrate {_vmsim.version()}",
        },
        "cost": cost,
        "spread": spread,
        "method": method,
    }


_AGAIN = re.compile(r"\(measured on (\S+) by vmsim calibrate --only (\S+) against")


def profile_toml(prof: dict[str, Any]) -> str:
    """The profile file's text: a comment saying what made it (and which families were
    measured again later, alone: their knobs' methods say so), then its tables."""
    import tomli_w

    again: dict[tuple[str, str], list[str]] = {}
    for knob, text in prof["method"].items():
        # An estimate quotes its base profile's method, which may say the same of the base.
        m = _AGAIN.search(text) if text.startswith("measured") else None
        if m is not None:
            again.setdefault((m.group(2), m.group(1)), []).append(knob)
    later = "".join(
        f"; its {', '.join(knobs)} measured again on {date} (--only {family})"
        for (family, date), knobs in again.items()
    )
    head = (
        f"# Cost profile {prof['profile']['name']}: made by `vmsim calibrate` on "
        f"{prof['profile']['date']}{later}.\n# Every figure is in ns; docs/cost-model.md "
        "gives each method. Use it with vmsim run --costs FILE.\n\n"
    )
    return head + tomli_w.dumps(prof)


def as_json(cal: Calibration, prof: dict[str, Any]) -> dict[str, Any]:
    """Everything a calibration measured, and the profile it made, as one JSON object."""
    return {
        "machine": cal.machine,
        "knobs": {
            n: {
                "ns": prof["cost"][n],
                "spread": prof["spread"][n],
                "values": f.values,
                "method": f.method,
            }
            for n, f in cal.knobs.items()
        },
        "figures": {
            n: {
                "median": f.median,
                "spread": list(f.spread),
                "values": f.values,
                "method": f.method,
            }
            for n, f in cal.figures.items()
        },
        "estimates": _estimates(cal, prof),
        "overlaps_default": agreement(cal, api.cost_profile(api.default_cost_profile())),
        "skipped": cal.skipped,
        "checks": cal.checks,
        "profile": prof,
    }


def from_json(d: dict[str, Any]) -> tuple[Calibration, dict[str, Any]]:
    """The calibration and profile an :func:`as_json` object holds (a guest's, read back
    on the host)."""
    cal = Calibration(machine=dict(d["machine"]))
    for n, f in d["figures"].items():
        cal.figures[n] = Figure(n, list(f["values"]), f["method"])
    for n, f in d["knobs"].items():
        cal.knobs[n] = Figure(n, list(f["values"]), f["method"])
    cal.skipped = dict(d.get("skipped", {}))
    cal.checks = list(d.get("checks", []))
    return cal, d["profile"]


def _estimates(cal: Calibration, prof: dict[str, Any]) -> list[str]:
    """The profile's knobs that no microbenchmark measured, here or in its base profile."""
    return sorted(
        n
        for n in set(prof["cost"]) - set(cal.knobs)
        if not prof["method"].get(n, "").startswith("measured")
    )


def agreement(cal: Calibration, default: dict[str, Any]) -> dict[str, bool | None]:
    """Per measured knob, whether this calibration's spread overlaps the one ``default``
    (a profile as api.cost_profile gives it) was measured with; None where ``default`` has
    no spread for it (an estimate there)."""
    out: dict[str, bool | None] = {}
    for n, f in cal.knobs.items():
        theirs = default.get("spread", {}).get(n)
        if theirs is None:
            out[n] = None
            continue
        lo, hi = f.spread
        out[n] = max(lo, theirs[0]) <= min(hi, theirs[1])
    return out


def report_text(cal: Calibration, prof: dict[str, Any], default: dict[str, Any]) -> str:
    """The calibration as text: the knobs measured against the default profile's (and
    whether the spreads overlap), the figures behind them, the checks and the estimates
    left."""
    m = cal.machine
    out = [f"{m['machine']}; Linux {m['kernel']}; {m['date']}", ""]
    agree = agreement(cal, default)
    out.append(
        f"{'knob':<16s} {'measured':>9s} {'spread':>17s} {default['name']:>14s} "
        f"{'its spread':>17s}  overlap"
    )
    for n, f in cal.knobs.items():
        lo, hi = f.spread
        theirs = default.get("spread", {}).get(n)
        their_text = f"{theirs[0]:.0f}..{theirs[1]:.0f}" if theirs else "estimate"
        mark = {True: "yes", False: "no", None: "-"}[agree[n]]
        out.append(
            f"{n:<16s} {prof['cost'][n]:>9d} {f'{lo:.0f}..{hi:.0f}':>17s} "
            f"{default['cost'][n]:>14d} {their_text:>17s}  {mark}"
        )
    compared = [v for v in agree.values() if v is not None]
    out.append(
        f"{sum(compared)} of {len(compared)} knobs measured in both overlap "
        f"{default['name']}'s spread"
    )
    out += ["", "figures [ns, median and spread]:"]
    for n, f in cal.figures.items():
        lo, hi = f.spread
        out.append(f"  {n:<18s} {f.median:>11.1f}  {lo:.1f}..{hi:.1f}")
    if cal.checks:
        out += [
            "",
            "checks: whole operations, measured and as vmsim charges them with this "
            "profile (system time per page of a run; not used to set anything):",
        ]
    for c in cal.checks:
        out.append(
            f"  {c['operation']:<30s} measured {c['measured_ns']:>7.0f}  vmsim "
            f"{c['vmsim_ns']:>7.0f}  ratio {c['ratio']}"
        )
        if c.get("note"):
            out.append(f"    {c['note']}")
    est = _estimates(cal, prof)
    out += [
        "",
        f"estimates kept from the base profile (no microbenchmark isolates them): {', '.join(est)}",
    ]
    kept = sorted(set(prof["cost"]) - set(cal.knobs) - set(est))
    if kept:
        out.append(f"measured knobs kept from the base profile as they were: {len(kept)}")
    for k, why in cal.skipped.items():
        out.append(f"not measured: {k}: {why}")
    return "\n".join(out)
